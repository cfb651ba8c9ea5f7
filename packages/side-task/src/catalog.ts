import { describeValue, SideTaskError } from "./errors.js";

/** One tool as the catalogue lists it: a name and what it does. */
export interface CatalogToolLike {
  name: string;
  description?: string;
}

/**
 * One connected server as a catalogue: a name, a label and its tools.
 *
 * Its name, a label to show, and its tools by name and
 * description. Structurally the `CatalogServer` of `@loopwright/tool-loading`, declared here so
 * this package reads it without importing that one.
 */
export interface CatalogServerLike {
  name: string;
  /** A human label for the server; its `name` where absent. */
  label?: string;
  tools: readonly CatalogToolLike[];
}

/** One tool of a catalogue with its server, flattened. */
export interface CatalogEntry {
  name: string;
  description: string;
  server: string;
}

/** Whatever starts a new line somewhere: CR, LF, VT, FF, NEL, and the Unicode line and paragraph separators. */
const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;

/**
 * A description's first line: what a catalogue shows of a tool; `""` for one that is not text.
 * Other control characters (a tab) read as a space, so a description cannot start a line of its own.
 */
export function oneLine(description: unknown): string {
  if (typeof description !== "string") return "";
  const first = description.trim().split(LINE_BREAK, 1)[0] ?? "";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: taking control characters out is the point
  return first.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
}

/**
 * Every tool of a catalogue once, in catalogue order (the first server naming a tool wins). A tool
 * without a name is passed over, and one whose description is not text is listed without one.
 * Throws `SideTaskError` (`invalid-input`) for a catalogue that is not an array of servers.
 */
export function catalogEntries(catalog: readonly CatalogServerLike[], where: string): CatalogEntry[] {
  if (!Array.isArray(catalog)) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: the catalogue must be an array of servers ({ name, label?, tools: [{ name, description }] }), and was ${describeValue(catalog)}.`,
    );
  }
  const seen = new Set<string>();
  const out: CatalogEntry[] = [];
  catalog.forEach((server, index) => {
    if (typeof server !== "object" || server === null || !Array.isArray(server.tools)) {
      throw new SideTaskError(
        "invalid-input",
        `${where}: catalogue entry ${index} must be a server { name, tools: [...] }, and was ${describeValue(server)}.`,
      );
    }
    const label =
      typeof server.label === "string" && server.label.trim() ? server.label : String(server.name ?? "");
    for (const tool of server.tools) {
      if (typeof tool?.name !== "string" || tool.name === "" || seen.has(tool.name)) continue;
      seen.add(tool.name);
      out.push({ name: tool.name, description: oneLine(tool.description), server: label });
    }
  });
  return out;
}

/** Checks a cap: a positive integer. */
export function checkCap(max: unknown, where: string): number {
  if (typeof max !== "number" || !Number.isInteger(max) || max < 1) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: the cap must be a whole number of 1 or more, and was ${describeValue(max)}.`,
    );
  }
  return max;
}

/** How many tools one preselection names at most unless told: the same cap as one load. */
export const PRESELECT_MAX = 12;
