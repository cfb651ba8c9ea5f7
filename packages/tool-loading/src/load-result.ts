import type { FunctionToolLike } from "@loopwright/schema-compat";
import { definitionsByName } from "./catalog.js";
import { describe, ToolLoadingError } from "./errors.js";
import type { NameResolution } from "./names.js";

/** The narrowest message shape this package reads: a role, content, and a tool call's answer id. */
export interface MessageLike {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?:
    | readonly { id?: string; type?: string; function?: { name?: string; arguments?: string } }[]
    | null;
}

function checkResolution(resolution: NameResolution, where: string): void {
  const r = resolution as Partial<NameResolution> | null;
  if (
    typeof r !== "object" ||
    r === null ||
    !Array.isArray(r.names) ||
    !Array.isArray(r.unknown) ||
    !Array.isArray(r.overCap) ||
    typeof r.cap !== "number"
  ) {
    throw new ToolLoadingError(
      "invalid-names",
      `${where} needs a resolution from expandNames ({ names, unknown, overCap, cap }), and was given ${describe(resolution)}.`,
    );
  }
}

function checkNames(names: Iterable<string>, where: string): Set<string> {
  if (names === null || typeof names !== "object" || !(Symbol.iterator in names)) {
    throw new ToolLoadingError(
      "invalid-names",
      `${where} needs the names already loaded as an array or a set, and was given ${describe(names)}.`,
    );
  }
  return new Set(names);
}

function tail(resolution: NameResolution, lines: string[]): void {
  if (resolution.unknown.length > 0) {
    lines.push(`Not in the catalogue: ${resolution.unknown.join(", ")}. Use the names the catalogue lists.`);
  }
  if (resolution.overCap.length > 0) {
    lines.push(
      `Held to ${resolution.cap} tools a load, so these were not loaded: ${resolution.overCap.join(", ")}. Load the ones you need in another call.`,
    );
  }
}

/**
 * The text a `load_tools` call is answered with when the loaded tools join the request's tool
 * array (`toolDiscovery: "ondemand"`): what was loaded, what was already loaded (so a model that
 * asks twice learns it has the tool), what is not in the catalogue, and what the cap — the number
 * the resolution was held to — left out.
 *
 * Reads `resolution` (from `expandNames`) and the names loaded before this call. Throws a
 * `ToolLoadingError` (`invalid-names`) for arguments of the wrong shape. Never changes either.
 */
export function loadResult(resolution: NameResolution, alreadyLoaded: Iterable<string>): string {
  checkResolution(resolution, "loadResult");
  const before = checkNames(alreadyLoaded, "loadResult");
  const fresh = resolution.names.filter((name) => !before.has(name));
  const repeated = resolution.names.filter((name) => before.has(name));
  const lines: string[] = [];
  if (fresh.length > 0) lines.push(`Loaded: ${fresh.join(", ")}. Call them by name.`);
  if (repeated.length > 0)
    lines.push(`Already loaded: ${repeated.join(", ")}. Call them by name; no need to load them again.`);
  if (fresh.length === 0 && repeated.length === 0) lines.push("No tool was loaded.");
  tail(resolution, lines);
  return lines.join("\n");
}

/** One tool's definition as one line of JSON: its name, description and parameters, in that order. */
export function definitionLine(tool: FunctionToolLike): string {
  const { name, description, parameters } = tool.function;
  return JSON.stringify({
    name,
    description: description ?? "",
    parameters:
      typeof parameters === "object" && parameters !== null ? parameters : { type: "object", properties: {} },
  });
}

/**
 * The text a `load_tools` call is answered with when no request will ever declare the tools
 * (`toolDiscovery: "proxy"`): each newly loaded tool as one line of JSON with its name,
 * description and parameters, a pointer back for one whose definition is already in the
 * conversation, and what is not in the catalogue, has no definition, or was left out by the cap.
 *
 * Reads `resolution` (from `expandNames`), the run's tool definitions, and the names whose
 * definitions the conversation already holds (`heldDefinitions`). Throws a `ToolLoadingError` for
 * arguments of the wrong shape. The definition lines are what `holdsDefinitions` recognises.
 */
export function proxyLoadResult(
  resolution: NameResolution,
  tools: readonly FunctionToolLike[],
  inConversation: Iterable<string>,
): string {
  checkResolution(resolution, "proxyLoadResult");
  const byName = definitionsByName(tools, "proxyLoadResult");
  const held = checkNames(inConversation, "proxyLoadResult");
  const lines: string[] = [];
  const earlier: string[] = [];
  const missing: string[] = [];
  for (const name of resolution.names) {
    const tool = byName.get(name);
    if (held.has(name)) earlier.push(name);
    else if (tool) lines.push(definitionLine(tool));
    else missing.push(name);
  }
  const loaded = lines.length;
  if (earlier.length > 0) {
    lines.push(
      `Already in this conversation: ${earlier.join(", ")}. Their definitions are in an earlier load_tools result; call them with call_tool.`,
    );
  }
  if (missing.length > 0) lines.push(`No definition is available for: ${missing.join(", ")}.`);
  if (loaded === 0 && earlier.length === 0) lines.push("No tool was loaded.");
  tail(resolution, lines);
  if (loaded > 0) lines.push('Run these with call_tool: { "name": "<tool>", "arguments": { ... } }.');
  return lines.join("\n");
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        typeof (part as { text?: unknown })?.text === "string" ? (part as { text: string }).text : "",
      )
      .join("");
  }
  return "";
}

function definedNames(message: MessageLike): string[] {
  if (message?.role !== "tool") return [];
  const text = textOf(message.content);
  if (!text.includes('"parameters"')) return [];
  const names: string[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{")) continue;
    try {
      const value = JSON.parse(trimmed) as { name?: unknown; parameters?: unknown } | null;
      if (
        typeof value?.name === "string" &&
        typeof value.parameters === "object" &&
        value.parameters !== null
      ) {
        names.push(value.name);
      }
    } catch {
      // Not a definition line.
    }
  }
  return names;
}

/**
 * Whether a message is a tool result that carries tool definitions — a proxied `load_tools`
 * result — and so must never be cleared by a prune: it is the model's only copy of those schemas.
 * Reads only the message; false for anything that is not a `tool` message. Never throws.
 */
export function holdsDefinitions(message: MessageLike): boolean {
  return definedNames(message).length > 0;
}

/**
 * The names whose definitions the transcript holds in tool results (what proxied loading counts
 * as loaded: a definition a compaction folded away is no longer held, and so is loadable again).
 * Throws a `ToolLoadingError` (`invalid-names`) when `messages` is not an array. Never throws for
 * a message it cannot read; it just holds nothing.
 */
export function heldDefinitions(messages: readonly MessageLike[]): Set<string> {
  if (!Array.isArray(messages)) {
    throw new ToolLoadingError(
      "invalid-names",
      `heldDefinitions needs the transcript as an array of messages, and was given ${describe(messages)}.`,
    );
  }
  const held = new Set<string>();
  for (const message of messages) for (const name of definedNames(message)) held.add(name);
  return held;
}
