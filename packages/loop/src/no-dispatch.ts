import type { CatalogServer } from "@loopwright/tool-loading";
import type { ToolDefinition } from "./config.js";
import type { Dispatch } from "./run-calls.js";

/** How many tool names a refusal lists before it says how many more there are. */
const NAMES_SHOWN = 8;

/**
 * The tools a run without `dispatch` could not run: the `tools` option's names, and a catalogue's
 * (either checked before this is asked). Empty for a run that declares none, which needs no dispatch.
 */
export function toolsNeedingDispatch(
  tools: readonly ToolDefinition[] | undefined,
  catalog: readonly CatalogServer[] | null | undefined,
): string[] {
  const names = (tools ?? []).map((tool) => tool.function.name);
  for (const server of catalog ?? []) for (const tool of server.tools) names.push(tool.name);
  return [...new Set(names)];
}

/** The names as a refusal lists them: quoted, at most {@link NAMES_SHOWN}, then how many more. */
export function namedTools(names: readonly string[]): string {
  const shown = names.slice(0, NAMES_SHOWN).map((name) => JSON.stringify(name));
  const more = names.length - shown.length;
  return more > 0 ? `${shown.join(", ")} and ${more} more` : shown.join(", ");
}

/**
 * What a run given no `dispatch` (one that declares no tools) answers a tool call with: a model may
 * still write one, naming a tool it imagines, and it reads that there is none rather than the run
 * failing or a host's dummy dispatch answering in its place.
 */
export const noDispatch: Dispatch = (request) => {
  throw new Error(`There is no tool "${request.name}": this run offers no tools. Answer without one.`);
};
