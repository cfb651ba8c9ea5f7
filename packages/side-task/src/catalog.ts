import {
  type CatalogServer,
  checkCatalog,
  descriptionLine,
  ToolLoadingError,
} from "@loopwright/tool-loading";
import { describeValue, SideTaskError } from "./errors.js";
import { ownView } from "./own.js";
import { headOf } from "./text.js";

/** One tool as the catalogue lists it: a name and what it does. */
export interface CatalogToolLike {
  name: string;
  description?: string | undefined;
}

/**
 * One connected server as a catalogue: a name, a label and its tools.
 *
 * Its name, a label to show, and its tools by name and description. Structurally the
 * `CatalogServer` of `@loopwright/tool-loading` with a label beside it, so one catalogue serves
 * both: a preselection reads a name exactly as `load_tools` does (`expandNames`).
 */
export interface CatalogServerLike {
  name: string;
  /**
   * A human label for the server; its `name` where absent. Shown by its first line (cleaned as
   * `descriptionLine` cleans a description), cut to 120 characters.
   */
  label?: string | undefined;
  tools: readonly CatalogToolLike[];
}

/** The most characters of a server's label a preselection's prompt shows. */
const LABEL_CHARS = 120;

/** One tool of a catalogue with its server, flattened. */
export interface CatalogEntry {
  name: string;
  description: string;
  server: string;
}

/** A side task's catalogue read once: what its prompt lists, and what a name is resolved against. */
export interface ReadCatalog {
  /** Every tool once, in catalogue order, with its one-line description and its server's label. */
  entries: CatalogEntry[];
  /** The same tools as `@loopwright/tool-loading` reads a catalogue (checked by its `checkCatalog`). */
  servers: CatalogServer[];
  /** How many tools were passed over for having no name (not a string, or empty). */
  nameless: number;
  /** The servers holding those tools, each once. */
  namelessIn: string[];
}

/**
 * Reads a catalogue: every tool once, in catalogue order (the first server naming a tool wins), and
 * the catalogue as `load_tools` reads it. A tool without a name is passed over, and one whose
 * description is not text is listed without one. A server's label is shown by its first line, cut
 * to 120 characters (its name where that leaves nothing). Throws `SideTaskError` (`invalid-input`) for a
 * catalogue that is not an array of servers, a server whose name is not a string, and for a server or tool name holding a line break or
 * control character, which `load_tools` refuses too (it would start a line of its own in the prompt),
 * and for any other name `checkCatalog` refuses (empty, a blank at either end, only `*`).
 */
export function readCatalog(catalog: readonly CatalogServerLike[], where: string): ReadCatalog {
  if (!Array.isArray(catalog)) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: the catalogue must be an array of servers ({ name, label?, tools: [{ name, description }] }), and was ${describeValue(catalog)}.`,
    );
  }
  const seen = new Set<string>();
  const entries: CatalogEntry[] = [];
  const servers: CatalogServer[] = [];
  let nameless = 0;
  const namelessIn: string[] = [];
  // Beside the list, for the look-up: `includes` on it made a catalogue of many servers with a
  // nameless tool each quadratic (80,000 servers: 25 s against half a second).
  const namelessSeen = new Set<string>();
  catalog.forEach((given, index) => {
    // Read as the host wrote it: never a label, tool list or description only a polluted
    // Object.prototype holds.
    const server = ownView(given);
    if (typeof server === "object" && server !== null && !Array.isArray(server.tools)) {
      // The entry is a server; its tools are what is wrong, and "was an object" did not say so.
      const name =
        typeof server.name === "string" ? ` (server ${JSON.stringify(headOf(server.name, 60))})` : "";
      throw new SideTaskError(
        "invalid-input",
        `${where}: catalogue entry ${index}${name} must hold its tools as a list, { name, tools: [{ name, description }] }, and its tools was ${describeValue(server.tools)}.`,
      );
    }
    if (typeof server !== "object" || server === null) {
      throw new SideTaskError(
        "invalid-input",
        `${where}: catalogue entry ${index} must be a server { name, tools: [...] }, and was ${describeValue(server)}.`,
      );
    }
    if (typeof server.name !== "string") {
      // String() of an object without a prototype threw a TypeError here; a number or a symbol was
      // shown as a label no load_tools name reaches.
      throw new SideTaskError(
        "invalid-input",
        `${where}: the name of catalogue entry ${index} must be a string, and was ${describeValue(server.name)}.`,
      );
    }
    // Shown as a line of its own in the preselection's prompt: a label's first line only, cut, so a
    // server's title cannot write lines of the catalogue (a tool that is not there) or fill the prompt.
    const label =
      (typeof server.label === "string" ? descriptionLine(server.label, LABEL_CHARS) : "") || server.name;
    const listed = (server.tools as readonly unknown[]).map((tool) => ownView(tool));
    const named = listed.filter(
      (tool): tool is CatalogToolLike =>
        typeof (tool as CatalogToolLike | null)?.name === "string" && (tool as CatalogToolLike).name !== "",
    );
    // Passed over, and counted: a preselection tells the host, which would otherwise see only a
    // shortlist that never names them (or none at all).
    if (named.length < listed.length) {
      nameless += listed.length - named.length;
      if (!namelessSeen.has(server.name)) {
        namelessSeen.add(server.name);
        namelessIn.push(server.name);
      }
    }
    servers.push({
      name: server.name,
      tools: named.map((tool) => ({ name: tool.name })),
    });
    for (const tool of named) {
      if (seen.has(tool.name)) continue;
      seen.add(tool.name);
      const description = typeof tool.description === "string" ? tool.description : undefined;
      // Uncut: a preselection shows (and scores) the whole first line.
      entries.push({
        name: tool.name,
        description: descriptionLine(description, Number.POSITIVE_INFINITY),
        server: label,
      });
    }
  });
  try {
    checkCatalog(servers, where);
  } catch (error) {
    if (!ToolLoadingError.isInstance(error)) throw error;
    throw new SideTaskError("invalid-input", error.message, { cause: error });
  }
  return { entries, servers, nameless, namelessIn };
}

/** The entries of {@link readCatalog}. */
export function catalogEntries(catalog: readonly CatalogServerLike[], where: string): CatalogEntry[] {
  return readCatalog(catalog, where).entries;
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
