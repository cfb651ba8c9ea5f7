import type { FunctionToolLike } from "@loopwright/schema-compat";
import {
  checkCap,
  checkRecord,
  cutName,
  describe,
  escapeControls,
  headOf,
  quotedText,
  ToolLoadingError,
  thrownText,
} from "./errors.js";
import { descriptionOf, heldField, ownView } from "./own.js";

/** One tool as the catalogue lists it: its name, and a one-line description where there is one. */
export interface CatalogTool {
  /** The name the model loads and calls it by; the same name as its definition's `function.name`. */
  name: string;
  /** What it does, in a line. Read by `catalogText` with `descriptions: true` and by a preselection. */
  description?: string | undefined;
}

/**
 * The name-only shape a connected server is read as: its name (the label the catalogue groups its
 * tools under, and a name `load_tools` accepts for all of them) and its tools' names.
 */
export interface CatalogServer {
  /** The server's label, e.g. `"github"`. */
  name: string;
  /** The tools it offers. */
  tools: readonly CatalogTool[];
}

/** Where a catalogued tool lives: its server's name, and its own entry. */
export interface CatalogEntry {
  server: string;
  tool: CatalogTool;
}

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators. */
function breaksLine(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029) return true;
  }
  return false;
}

/** Throws `invalid-catalog` for a name that would break the catalogue's lines in the system prompt. */
function checkLine(name: string, what: string, where: string): void {
  if (!name.isWellFormed()) {
    // Listed in the system prompt (and echoed in load answers), it makes every request one a
    // server reading UTF-8 refuses: llama.cpp answers a 500, even for the escape JSON writes. The
    // half is shown as that escape (`\ud800`, text any server takes), which says where it is.
    throw new ToolLoadingError(
      "invalid-catalog",
      `${where}: ${what} holds half a surrogate pair alone (${escapeControls(JSON.stringify(cutName(name)))}), which no server reading UTF-8 takes in the system prompt it is listed in. Rename it.`,
    );
  }
  if (!breaksLine(name)) return;
  throw new ToolLoadingError(
    "invalid-catalog",
    `${where}: ${what} holds a line break or control character (${quotedText(name)}), which would rewrite the system prompt it is listed in. Rename it.`,
  );
}

/**
 * Throws `invalid-catalog` for a name a load can never reach or that takes a load meant for others:
 * blanks at its start or end (a name asked for is read trimmed), or nothing but `*` (a `*` load
 * reached that server or tool alone, not every tool).
 */
function checkReachable(name: string, what: string, where: string): void {
  const fault =
    name.trim() !== name
      ? "has spaces at its start or end, and a name asked for is read trimmed, so no load could reach it"
      : /^\*+$/.test(name)
        ? "is only '*', which a load asking for every tool (\"*\") would reach alone"
        : undefined;
  if (fault === undefined) return;
  throw new ToolLoadingError(
    "invalid-catalog",
    `${where}: ${what} (${quotedText(name)}) ${fault}. Rename it.`,
  );
}

/**
 * Checks a catalogue as every function here reads it, and answers it unchanged.
 *
 * Throws a `ToolLoadingError` (`invalid-catalog`), its message starting with `where` and naming the
 * entry, unless `catalog` is an array of `{ name, tools: [{ name, description? }] }` servers whose
 * names and tools' names are not empty, whose descriptions are text, and whose names hold no line
 * break or control character (a name is listed in the system prompt, where one would start a line
 * of its own), no blank at either end (a name asked for is read trimmed, so no load would reach it),
 * and are not only `*` (which would take a load of every tool). Never changes the catalogue.
 * A value that throws as it is read (a revoked Proxy, a getter that throws) is refused so too,
 * naming the entry or tool being read and what the reading said, its error the `cause`; a name is
 * quoted cut at 60 characters with its length said, its controls and bidirectional marks `\uXXXX`.
 */
export function checkCatalog(catalog: unknown, where: string): readonly CatalogServer[] {
  // What is being read, for the refusal of a host's value that throws when read.
  let reading = "the catalogue";
  try {
    if (!Array.isArray(catalog)) {
      throw new ToolLoadingError(
        "invalid-catalog",
        `${where} needs a catalogue (an array of { name, tools: [{ name }] } servers), and was given ${describe(catalog)}.`,
      );
    }
    // Every index, holes too: forEach skips a hole (an array built in code), which then crashed the
    // lookups with a TypeError.
    for (let i = 0; i < catalog.length; i++) {
      reading = `catalogue entry ${i}`;
      const server: unknown = catalog[i];
      const s = server as { name?: unknown; tools?: unknown } | null;
      if (typeof s !== "object" || s === null || typeof s.name !== "string" || !Array.isArray(s.tools)) {
        throw new ToolLoadingError(
          "invalid-catalog",
          `${where}: catalogue entry ${i} must be { name: string, tools: [...] }, and is ${describe(server)}.`,
        );
      }
      if (s.name === "") {
        // Listed as a line ": a, b" in the catalogue text, with no name a load could give for it.
        throw new ToolLoadingError(
          "invalid-catalog",
          `${where}: the name of catalogue entry ${i} is empty; a server needs a name to be listed and loaded by.`,
        );
      }
      checkLine(s.name, `the name of catalogue entry ${i}`, where);
      checkReachable(s.name, `the name of catalogue entry ${i}`, where);
      const serverName = quotedText(s.name);
      const tools: readonly unknown[] = s.tools;
      for (let j = 0; j < tools.length; j++) {
        reading = `tool ${j} of server ${serverName}`;
        const tool = tools[j];
        const t = tool as { name?: unknown; description?: unknown } | null;
        if (typeof t !== "object" || t === null || typeof t.name !== "string" || t.name === "") {
          throw new ToolLoadingError(
            "invalid-catalog",
            `${where}: tool ${j} of server ${serverName} must be { name: string }, and is ${describe(tool)}.`,
          );
        }
        checkLine(t.name, `the name of tool ${j} of server ${serverName}`, where);
        checkReachable(t.name, `the name of tool ${j} of server ${serverName}`, where);
        const description = heldField(t, "description");
        if (description !== undefined && typeof description !== "string") {
          throw new ToolLoadingError(
            "invalid-catalog",
            `${where}: the description of ${quotedText(t.name)} on server ${serverName} must be a string, and is ${describe(description)}.`,
          );
        }
      }
    }
  } catch (error) {
    if (isToolLoadingError(error)) throw error;
    throw new ToolLoadingError(
      "invalid-catalog",
      `${where}: ${reading} could not be read (${thrownText(error)}); give a catalogue of plain { name, tools: [{ name, description? }] } objects.`,
      { cause: error },
    );
  }
  return catalog as readonly CatalogServer[];
}

/** Every catalogued tool by name; the first server to list a name owns it. */
export function catalogIndex(catalog: readonly CatalogServer[]): Map<string, CatalogEntry> {
  const index = new Map<string, CatalogEntry>();
  for (const server of catalog) {
    for (const tool of server.tools) {
      if (!index.has(tool.name)) index.set(tool.name, { server: server.name, tool });
    }
  }
  return index;
}

/**
 * Throws `invalid-tools` unless `tools` is an array of function tools with names (and for one that
 * throws as it is read: a revoked Proxy, a getter that throws); returns them by name.
 */
export function definitionsByName(tools: unknown, where: string): Map<string, FunctionToolLike> {
  let reading = "the tool definitions";
  try {
    if (!Array.isArray(tools)) {
      throw new ToolLoadingError(
        "invalid-tools",
        `${where} needs the run's tool definitions as an array, and was given ${describe(tools)}.`,
      );
    }
    const byName = new Map<string, FunctionToolLike>();
    for (let i = 0; i < tools.length; i++) {
      reading = `tool ${i}`;
      const tool: unknown = tools[i];
      const fn = (tool as { function?: { name?: unknown } } | null)?.function;
      if (typeof fn !== "object" || fn === null || typeof fn.name !== "string" || fn.name === "") {
        throw new ToolLoadingError(
          "invalid-tools",
          `${where}: tool ${i} must be { type: "function", function: { name, ... } }, and is ${describe(tool)}.`,
        );
      }
      if (!byName.has(fn.name)) byName.set(fn.name, tool as FunctionToolLike);
    }
    return byName;
  } catch (error) {
    if (isToolLoadingError(error)) throw error;
    throw new ToolLoadingError(
      "invalid-tools",
      `${where}: ${reading} could not be read (${thrownText(error)}); give an array of plain { type: "function", function: { name, ... } } objects.`,
      { cause: error },
    );
  }
}

/**
 * Whether `error` is one of this package's refusals, thrown on as it is; false for anything else,
 * a revoked Proxy (whose reading throws) among them.
 */
function isToolLoadingError(error: unknown): boolean {
  try {
    return ToolLoadingError.isInstance(error);
  } catch {
    return false;
  }
}

/** Whatever starts a new line somewhere: CR, LF, VT, FF, NEL, and the Unicode line and paragraph separators. */
const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;

/**
 * A description as the catalogue text shows it beside its tool: its first line (ended by CR, LF, VT,
 * FF, NEL, U+2028 or U+2029), trimmed, any other control character (a tab) read as a space, half a
 * surrogate pair with no other half read as U+FFFD, and cut to `max` characters (120 unless given)
 * with `…` at the cut, never inside a character. `""` for no description. Throws a
 * `ToolLoadingError` (`invalid-cap`) for a `max` that is not a whole number of at least 1 (or
 * `Infinity`); never for a string or `undefined`; never starts a line of its own.
 */
export function descriptionLine(text: string | undefined, max = 120): string {
  if (!(max >= 1) || (Number.isFinite(max) && !Number.isInteger(max))) {
    // NaN kept every line whole, 0 and a negative cut from the end (`max` 0 gave all but one character).
    throw new ToolLoadingError(
      "invalid-cap",
      `descriptionLine needs max as a whole number of at least 1 (or Infinity), and was given ${describe(max)}.`,
    );
  }
  const first = (text ?? "").trim().split(LINE_BREAK, 1)[0] ?? "";
  const line = first
    // biome-ignore lint/suspicious/noControlCharactersInRegex: taking control characters out is the point
    .replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ")
    // Half a surrogate pair (a server that cut its own text inside an emoji) is no character: the
    // system prompt holding it would be refused by llama.cpp, which takes only valid UTF-8.
    .toWellFormed()
    .trim();
  return line.length > max ? `${headOf(line, max - 1).trimEnd()}…` : line;
}

/**
 * A catalogue with one server holding every given tool, for a host without servers of its own:
 * each tool's name and the first line of its description, in the order given.
 *
 * Throws a `ToolLoadingError` (`invalid-tools`) for a `tools` that is not an array of named
 * function tools. Never reads a schema.
 */
export function catalogFromTools(tools: readonly FunctionToolLike[], server = "tools"): CatalogServer {
  const byName = definitionsByName(tools, "catalogFromTools");
  return {
    name: server,
    tools: [...byName.values()].map(({ function: fn }) => {
      const description = descriptionLine(descriptionOf(fn));
      return description ? { name: fn.name, description } : { name: fn.name };
    }),
  };
}

/** Which of the two loading modes a catalogue text is written for. */
export type LoadingMode = "ondemand" | "proxy";

/** Options for {@link catalogText}. */
export interface CatalogTextOptions {
  /** `"ondemand"` (load, then call by name) or `"proxy"` (load, then `call_tool`). `"ondemand"` unless given. */
  mode?: LoadingMode | undefined;
  /** List each tool on its own line with the first line of its description. Off unless given. */
  descriptions?: boolean | undefined;
  /** The load cap the text tells the model. 12 unless given. */
  cap?: number | undefined;
}

/**
 * The catalogue as text for the end of the system prompt: how to load (and, proxied, how to call)
 * and every server's tool names, servers and tools in name order so the same set is the same text
 * however it was assembled.
 *
 * The text depends only on the catalogue and the options, never on what has been loaded, so it is
 * byte for byte the same on every step of a run (marking loads there would rewrite the head of the
 * prompt and lose the prompt cache). A name holding a comma, a colon and a blank, or a double quote
 * at its start — the line's own punctuation — is written as a JSON string. Throws a `ToolLoadingError` for a malformed catalogue
 * (`invalid-catalog`), a mode other than the two (`invalid-mode`) or a cap that is not a whole
 * number of at least 1 (`invalid-cap`). An empty catalogue gives an empty string.
 */
export function catalogText(catalog: readonly CatalogServer[], options: CatalogTextOptions = {}): string {
  // Read as the host wrote them: never a mode, cap or switch only a polluted Object.prototype holds.
  options = ownView(options);
  checkCatalog(catalog, "catalogText");
  checkRecord(options, "options ({ mode, descriptions, cap })", "catalogText");
  const { mode = "ondemand", descriptions = false, cap = 12 } = options;
  if (mode !== "ondemand" && mode !== "proxy") {
    throw new ToolLoadingError(
      "invalid-mode",
      `catalogText needs a mode of "ondemand" or "proxy", and was given ${describe(mode)}.`,
    );
  }
  checkCap(cap, "a cap", "catalogText");
  // One entry a server name, each tool once under it (a load by the server's name reaches them all),
  // so the same set of tools is the same text whichever entry listed which tool first.
  const byServer = new Map<string, Map<string, CatalogTool>>();
  for (const server of catalog) {
    const tools = byServer.get(server.name) ?? new Map<string, CatalogTool>();
    for (const tool of server.tools) {
      const seen = tools.get(tool.name);
      // A tool listed twice shows one description, whichever came first: a written one before none,
      // then the first in code-unit order.
      const line = descriptionLine(descriptionOf(tool));
      const held = seen ? descriptionLine(descriptionOf(seen)) : "";
      if (!seen || (line !== "" && (held === "" || compare(line, held) < 0))) tools.set(tool.name, tool);
    }
    byServer.set(server.name, tools);
  }
  const servers = [...byServer]
    .filter(([, tools]) => tools.size > 0)
    .map(([name, tools]) => ({ name, tools: [...tools.values()] }))
    .sort((a, b) => compare(a.name, b.name));
  if (servers.length === 0) return "";
  const how =
    mode === "proxy"
      ? `Call load_tools with the names you need (up to ${cap} a call; a server's name stands for all of its tools): each definition comes back in its result. Then run a tool with call_tool, giving its name and its arguments.`
      : `Call load_tools with the names you need (up to ${cap} a call; a server's name stands for all of its tools). Once loaded, call a tool by its own name.`;
  const lines = ["# Tools you can load", how, ""];
  for (const server of servers) {
    const tools = [...server.tools].sort((a, b) => compare(a.name, b.name));
    if (descriptions) {
      lines.push(`## ${written(server.name)}`);
      for (const tool of tools) {
        const line = descriptionLine(descriptionOf(tool));
        lines.push(line ? `- ${written(tool.name)}: ${line}` : `- ${written(tool.name)}`);
      }
    } else {
      lines.push(`${written(server.name)}: ${tools.map((tool) => written(tool.name)).join(", ")}`);
    }
  }
  return lines.join("\n");
}

/**
 * A name as the catalogue text writes it: as it is, unless it holds what the line it stands in reads
 * as punctuation — a comma (the name-only line's separator: `a,b` read as the tools `a` and `b`), a
 * colon and a blank (what ends a server's label, and a tool's name before its description), or a
 * double quote at its start (read as this quoting) — then as a JSON string, which a load takes with
 * its quotes or without.
 */
function written(name: string): string {
  return name.includes(",") || name.includes(": ") || name.startsWith('"') ? JSON.stringify(name) : name;
}

/** Code-unit order, the same in every locale. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
