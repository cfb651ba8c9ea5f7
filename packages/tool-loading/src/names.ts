import { type CatalogServer, catalogIndex, checkCatalog, compare } from "./catalog.js";
import { catalogMemo } from "./catalog-readers.js";
import { checkCap, checkNameList, describe, ToolLoadingError } from "./errors.js";
import { ownView } from "./own.js";

/** Tools one `load_tools` call may load unless a cap is given. */
export const DEFAULT_LOAD_CAP = 12;
/** Loaded tools carried from one run into the next unless a cap is given. */
export const DEFAULT_CARRY_CAP = 16;

/**
 * What a `load_tools` request resolved to against the catalogue, with the cap it was held to so
 * the answer can tell the model the number it was measured against.
 */
export interface NameResolution {
  /** Catalogued tool names to load, in the order asked for, each once, at most `cap` of them. */
  names: string[];
  /** Names asked for that match nothing in the catalogue, as the model wrote them. */
  unknown: string[];
  /** Catalogued names the request reached but the cap left out, in order. */
  overCap: string[];
  /** The cap this resolution was held to. */
  cap: number;
}

function splitNames(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (Array.isArray(parsed))
        return parsed.flatMap((item) => (typeof item === "string" ? splitNames(item) : []));
    } catch {
      // Not JSON: read it as a list of words below.
    }
  }
  return trimmed
    .split(/[\s,;]+/)
    .map(unquoted)
    .filter((part) => part !== "");
}

/** Quotes and brackets a model wraps a name in: `"read_file"`, `'x'`, `` `x` ``, `[x]`. */
const WRAPPING = new Set(['"', "'", "`", "[", "]"]);

/**
 * `part` without the quotes and brackets around it, found by walking in from each end: a regex such
 * as /["'`[\]]+$/ tries the run at every place it starts and backtracks from its end at each, which
 * takes time quadratic in a long run of quotes inside a name.
 */
function unquoted(part: string): string {
  let start = 0;
  let end = part.length;
  while (start < end && WRAPPING.has(part[start] as string)) start++;
  while (end > start && WRAPPING.has(part[end - 1] as string)) end--;
  return part.slice(start, end);
}

/**
 * Reads the names out of a `load_tools` call's arguments, as models write them: `{ names: [...] }`,
 * `names` as one string (comma- or space-separated, or a JSON array in a string), or `name` /
 * `tools` in place of `names`. Each name once, in the order written.
 *
 * Given the run's `catalog`, an array entry that, taken whole, reaches a catalogued tool or server
 * (as `expandNames` reads a name, but for `*` patterns: exactly, `functions.`, `server.tool`, a
 * case-insensitive match) is read as that one name before any splitting, so a tool named
 * `read file` or `a,b`, or a server named `git hub`, loads from `{ "names": ["read file"] }`,
 * `["Read File"]` or `["git hub.list_pods"]`; an entry written as a JSON string (`"\"a,b\""`, as
 * the catalogue text quotes a name holding its punctuation) is read as the name it quotes where that
 * reaches one; a name written as one string (`"names": "a, b"`) is split as ever.
 *
 * Throws a `ToolLoadingError` (`invalid-names`) when the arguments hold no name at all, with a
 * message the model can act on, and `invalid-catalog` for a malformed `catalog`. Resolving the
 * names against a catalogue is `expandNames`.
 */
export function loadNames(args: unknown, catalog?: readonly CatalogServer[]): string[] {
  if (catalog === undefined) return namesIn(args);
  return namesIn(args, catalogMemo(catalog, "loadNames", "reader", nameReader).readsWhole);
}

/**
 * {@link loadNames} for a run whose catalogue is already checked and indexed: `whole` tells an
 * array entry that reaches a catalogued tool or server taken whole, read so before any splitting.
 */
export function namesIn(args: unknown, whole?: (name: string) => boolean): string[] {
  const record =
    typeof args === "object" && args !== null && !Array.isArray(args)
      ? // The keys the model wrote: never a `names` only a polluted Object.prototype holds.
        ownView(args as Record<string, unknown>)
      : Object.create(null);
  const given =
    Array.isArray(args) || typeof args === "string" ? args : (record.names ?? record.tools ?? record.name);
  const items = Array.isArray(given) ? given : [given];
  const seen = new Set<string>();
  for (const item of items) {
    if (typeof item !== "string") continue;
    // Only an entry of an array is a whole name: one string stands for a list as models write it.
    const trimmed = item.trim();
    const wholeName =
      items === given && whole ? (whole(trimmed) ? trimmed : quotedWhole(trimmed, whole)) : undefined;
    if (wholeName !== undefined) seen.add(wholeName);
    else for (const name of splitNames(item)) seen.add(name);
  }
  const names = [...seen];
  if (names.length === 0) {
    throw new ToolLoadingError(
      "invalid-names",
      `load_tools needs the names of the tools to load, as { "names": ["tool_name", ...] }, and was given ${describe(given)}.`,
    );
  }
  return names;
}

/**
 * The name a JSON string stands for (`"a,b"`, as the catalogue text writes a name holding its own
 * punctuation), where that name, read whole, reaches a catalogued tool or server; else `undefined`.
 */
function quotedWhole(entry: string, whole: (name: string) => boolean): string | undefined {
  if (entry.length < 2 || !entry.startsWith('"') || !entry.endsWith('"')) return undefined;
  try {
    const name: unknown = JSON.parse(entry);
    return typeof name === "string" && whole(name.trim()) ? name.trim() : undefined;
  } catch {
    return undefined;
  }
}

const SEPARATORS = [".", "/", ":", "__"];

/**
 * Every way `name` reads as a catalogued server's name, a separator and the rest, in the order
 * `SEPARATORS` and then the name's own order give: a server's name may hold a separator itself
 * ("mcp.notion", "io.github/fs"), so each place one stands is tried, not only the first. Places
 * past the longest server name are never tried, so a name full of separators costs its length.
 */
function serverSplits(
  name: string,
  servers: ReadonlyMap<string, unknown>,
  longest: number,
): [string, string][] {
  const splits: [string, string][] = [];
  for (const separator of SEPARATORS) {
    for (let at = name.indexOf(separator, 1); at > 0 && at <= longest; at = name.indexOf(separator, at + 1)) {
      const server = name.slice(0, at);
      if (servers.has(server)) splits.push([server, name.slice(at + separator.length)]);
    }
  }
  return splits;
}

/** The length of the longest server name: no `server.tool` split is tried past it. */
function longestName(servers: ReadonlyMap<string, unknown>): number {
  let longest = 0;
  for (const name of servers.keys()) longest = Math.max(longest, name.length);
  return longest;
}

/** The checks `expandNames` and `carryOver` share: names, a catalogue and a cap. */
function checkArguments(
  where: string,
  what: string,
  names: unknown,
  catalog: unknown,
  cap: unknown,
  capName: string,
) {
  checkCatalog(catalog, where);
  checkCap(cap, capName, where);
  checkNameList(names, what, where);
}

/**
 * The longest name a load, a call or a preselection is read up to: longer ones match nothing but a
 * catalogued tool's or server's own name, written exactly (a load's answer says so). A tool's name
 * on the wire is at most 64 characters; a server's name and a separator before it still fit.
 */
export const MAX_NAME_LENGTH = 256;

/**
 * A test of whether a text matches `pattern`, where `*` stands for any run of characters and
 * everything else for itself. Runs of `*` are one `*`; the literal parts between them are found
 * leftmost-first (which finds a match whenever there is one), so a test costs the text's length
 * times the pattern's at worst and usually the text's alone — never the backtracking of a regex
 * built from a model's pattern, nor a step back per star.
 */
function globMatcher(pattern: string): (text: string) => boolean {
  const parts = pattern.split("*");
  const first = parts[0] ?? "";
  const last = parts.length > 1 ? (parts[parts.length - 1] ?? "") : "";
  const middle = parts.slice(1, -1).filter((part) => part !== "");
  const least = first.length + last.length + middle.reduce((sum, part) => sum + part.length, 0);
  if (parts.length === 1) return (text) => text === pattern;
  return (text) => {
    if (text.length < least || !text.startsWith(first) || !text.endsWith(last)) return false;
    const end = text.length - last.length;
    let at = first.length;
    for (const part of middle) {
      const found = text.indexOf(part, at);
      if (found < 0 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}

/** The range of `sorted` (names in code-unit order) whose names start with `prefix`: [from, to). */
function rangeOf(sorted: readonly string[], prefix: string): [number, number] {
  // The first index where `before` stops holding (it holds for a run at the start, then never).
  const firstNot = (before: (name: string) => boolean) => {
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (before(sorted[mid] as string)) low = mid + 1;
      else high = mid;
    }
    return low;
  };
  // The names starting with `prefix` follow every name before it, one run (whatever code units
  // follow the prefix in them, U+FFFF included).
  return [firstNot((name) => name < prefix), firstNot((name) => name < prefix || name.startsWith(prefix))];
}

/** `text` with its code units in reverse order: a name's end, read as a start. */
const reversed = (text: string) => {
  let out = "";
  for (let i = text.length - 1; i >= 0; i--) out += text[i];
  return out;
};

/**
 * The catalogued names a `*` pattern matches, in name order, from `names` (every name once). A load
 * may hold thousands of distinct patterns (a looping model counting `a1*`, `a2*`, …), and testing
 * each against every tool cost patterns × tools. The names starting with the pattern's first part
 * and those ending with its last are ranges of two sorted lists, found by halving; a middle part
 * must stand somewhere in the names (joined between line breaks, which no name holds); only the
 * smaller range is then tested, so a pattern that matches nothing costs a few searches.
 */
function patternMatches(names: readonly string[]): (pattern: string) => string[] {
  const sorted = [...names].sort(compare);
  const ends = sorted.map((name) => [reversed(name), name] as const).sort((a, b) => compare(a[0], b[0]));
  const endKeys = ends.map(([key]) => key);
  const haystack = `\n${sorted.join("\n")}\n`;
  return (pattern) => {
    const parts = pattern.split("*");
    const [from, to] = rangeOf(sorted, parts[0] ?? "");
    if (from >= to) return [];
    const [endFrom, endTo] = rangeOf(endKeys, reversed(parts[parts.length - 1] ?? ""));
    if (endFrom >= endTo) return [];
    for (let i = 1; i < parts.length - 1; i++) if (!haystack.includes(parts[i] as string)) return [];
    const matches = globMatcher(pattern);
    if (to - from <= endTo - endFrom) return sorted.slice(from, to).filter(matches);
    return ends
      .slice(endFrom, endTo)
      .map(([, name]) => name)
      .filter(matches)
      .sort(compare);
  };
}

/**
 * Every tool name each server lists, by server name. A name two servers list is under both, as the
 * catalogue text shows it: definitions go by name, so loading it through either is the same load.
 */
function serverTools(catalog: readonly CatalogServer[]): Map<string, Set<string>> {
  const servers = new Map<string, Set<string>>();
  for (const server of catalog) {
    const names = servers.get(server.name) ?? new Set<string>();
    for (const tool of server.tools) names.add(tool.name);
    servers.set(server.name, names);
  }
  return servers;
}

/**
 * The one catalogued tool a name stands for, or `undefined`: its exact name, `functions.tool`,
 * `server.tool` (or `/`, `:`, `__`), the name with gpt-oss's Harmony markup after it
 * (`tool<|channel|>analysis`) or its `json` glued on (`tooljson`), or a name that differs only in
 * case from exactly one tool.
 * Never a server's name or a pattern, which stand for a set of tools rather than one.
 */
export type ToolResolver = (raw: string) => string | undefined;

/**
 * A {@link ToolResolver} for one catalogue, its lookups built once: a run holds one and resolves
 * every `call_tool` and every unloaded call through it, where each used to rebuild the catalogue's
 * index (and scan every name for a case match).
 */
export function toolResolver(catalog: readonly CatalogServer[]): ToolResolver {
  const servers = serverTools(catalog);
  return spellingResolver([...catalogIndex(catalog).keys()], servers, longestName(servers));
}

/**
 * The one tool of `names` a name a model wrote stands for, or `undefined` where it spells none or
 * two: its exact name, blank space around it, OpenAI's `functions.` namespace, gpt-oss's Harmony
 * markup after it (`tool<|channel|>analysis`) or its `json` glued on (`tooljson`, `tool json`), or a
 * name that differs only in case from exactly one tool. A name longer than `MAX_NAME_LENGTH` is
 * none, unless it is one of `names` exactly. The lookups are built once; for a plain list of tools
 * with no servers (a run's declared tools), as `toolResolver` is for a catalogue.
 */
export function toolNameResolver(names: Iterable<string>): ToolResolver {
  return spellingResolver([...names], new Map(), 0);
}

/** {@link toolNameResolver} with `server.tool` (or `/`, `:`, `__`) read against `servers` too. */
function spellingResolver(
  names: readonly string[],
  servers: ReadonlyMap<string, ReadonlySet<string>>,
  longest: number,
): ToolResolver {
  const index = new Set(names);
  // Lower-cased name → the one tool it folds from, or null where two tools differ only in case.
  const byCase = new Map<string, string | null>();
  for (const tool of index) {
    const lower = tool.toLowerCase();
    byCase.set(lower, byCase.has(lower) ? null : tool);
  }
  return (raw) => {
    const trimmed = raw.trim();
    // A tool whose own name starts "functions." is that tool, not the one the rest names. Its own
    // name, however long: one past the bound was listed and never reached.
    if (index.has(trimmed)) return trimmed;
    if (raw.length > MAX_NAME_LENGTH) return undefined;
    // gpt-oss's Harmony header leaking into the name (`create_event<|channel|>analysis`, Ollama).
    const markup = trimmed.indexOf("<|");
    const name = (markup > 0 ? trimmed.slice(0, markup).trimEnd() : trimmed).replace(/^functions\./, "");
    if (name === "") return undefined;
    if (index.has(name)) return name;
    for (const [server, tool] of serverSplits(name, servers, longest)) {
      if (servers.get(server)?.has(tool)) return tool;
    }
    // Harmony's `json` content type glued to the name (`shelljson`, `get_weather json`).
    const glued = /^(.+?)\s*json$/.exec(name)?.[1];
    if (glued !== undefined && index.has(glued)) return glued;
    return byCase.get(name.toLowerCase()) ?? undefined;
  };
}

/**
 * Resolves the names a model asked to load against the catalogue: a tool's exact name; a server's
 * name for all of its tools (in name order); `server.tool`, `server/tool`, `server:tool` or
 * `server__tool`; `functions.tool`; a pattern with `*` (`github_*`); and, failing those, a name that differs only in
 * case from exactly one tool or server. A name longer than `MAX_NAME_LENGTH` (256) matches
 * nothing but a catalogued tool's or server's own name. Each tool once, at most `cap` (12 unless given); the rest
 * are reported in `overCap`, and names that match nothing in `unknown`.
 *
 * Throws a `ToolLoadingError` for a malformed catalogue (`invalid-catalog`), a `requested` that is
 * not an array of strings (`invalid-names`) or a cap that is not a whole number ≥ 1
 * (`invalid-cap`). Pure: reads nothing but its arguments. The catalogue is checked and indexed on
 * the first call and kept while it lists the same servers, tools, names and descriptions.
 */
export function expandNames(
  requested: readonly string[],
  catalog: readonly CatalogServer[],
  cap: number = DEFAULT_LOAD_CAP,
): NameResolution {
  // Checked and indexed once per catalogue (again if it changes): a host calling this on its own
  // for every load paid for both on each call.
  const { expand } = catalogMemo(catalog, "expandNames", "reader", nameReader);
  checkCap(cap, "a load cap", "expandNames");
  checkNameList(requested, "the requested names", "expandNames");
  return expand(requested, cap);
}

/**
 * {@link expandNames} for one catalogue already checked, its lookups built once: a run holds one
 * and resolves every load through it, where each load used to check and index the catalogue again.
 */
export function nameExpander(
  catalog: readonly CatalogServer[],
): (requested: readonly string[], cap: number) => NameResolution {
  return nameReader(catalog).expand;
}

/** What {@link nameReader} answers: a load's expander, and whether an entry is read whole. */
export interface NameReader {
  expand: (requested: readonly string[], cap: number) => NameResolution;
  readsWhole: (name: string) => boolean;
}

/**
 * {@link nameExpander}'s expander, and beside it `readsWhole(name)`: whether a load's array entry,
 * taken whole, reaches a catalogued tool or server by any reading but a `*` pattern — its exact
 * name, `functions.`, `server.tool` (and `/`, `:`, `__`, `server.*`), or a case-insensitive match —
 * so that `git hub.list_pods` or `Read File` is read as one name before it is split at blanks.
 */
export function nameReader(catalog: readonly CatalogServer[]): NameReader {
  const index = catalogIndex(catalog);
  const servers = serverTools(catalog);
  const longest = longestName(servers);
  // Each server's tools in name order, sorted once when first loaded by the server's name: a run's
  // every load of a server by name sorted all of its tools again.
  const sortedTools = new Map<string, readonly string[]>();
  const toolsOf = (server: string): readonly string[] => {
    let sorted = sortedTools.get(server);
    if (sorted === undefined) {
      sorted = [...(servers.get(server) ?? [])].sort(compare);
      sortedTools.set(server, sorted);
    }
    return sorted;
  };
  // Lower-cased name → every tool (or server) it folds from, built once: a load of many names
  // written in capitals looked each one up by scanning the whole catalogue.
  const folded = (names: Iterable<string>) => {
    const map = new Map<string, string[]>();
    for (const name of names) {
      const lower = name.toLowerCase();
      const same = map.get(lower);
      if (same) same.push(name);
      else map.set(lower, [name]);
    }
    return map;
  };
  // The patterns' matcher over every catalogued name, built once, when a load first holds a pattern.
  let matchPattern: ((pattern: string) => string[]) | undefined;
  let toolsByCase: Map<string, string[]> | undefined;
  let serversByCase: Map<string, string[]> | undefined;

  const match = (raw: string, patterns = true): readonly string[] => {
    // "functions.read_file" is how OpenAI's own templates namespace a tool; models copy it.
    const trimmed = raw.trim();
    // A catalogued name that starts "functions." (a tool, or a server) is itself first, and a
    // catalogued name is itself however long: one past the bound was listed and never loaded.
    if (index.has(trimmed)) return [trimmed];
    if (servers.has(trimmed)) return toolsOf(trimmed);
    if (raw.length > MAX_NAME_LENGTH) return [];
    const name = trimmed.replace(/^functions\./, "");
    if (name === "") return [];
    if (index.has(name)) return [name];
    if (servers.has(name)) return toolsOf(name);
    for (const [server, tool] of serverSplits(name, servers, longest)) {
      if (servers.get(server)?.has(tool)) return [tool];
      if (tool === "*" || tool === "") return toolsOf(server);
    }
    if (name.includes("*")) {
      if (!patterns) return [];
      matchPattern ??= patternMatches([...index.keys()]);
      return matchPattern(name);
    }
    const lower = name.toLowerCase();
    toolsByCase ??= folded(index.keys());
    const tools = toolsByCase.get(lower) ?? [];
    if (tools.length === 1) return [...tools];
    serversByCase ??= folded(servers.keys());
    const named = serversByCase.get(lower) ?? [];
    if (named.length === 1 && named[0] !== undefined) return toolsOf(named[0]);
    return [];
  };

  const expand = (requested: readonly string[], cap: number): NameResolution => {
    const names: string[] = [];
    const unknown = new Set<string>();
    const overCap: string[] = [];
    // Sets beside the arrays: a server's name or "*" reaches every tool, so membership must not scan.
    const reached = new Set<string>();
    // A name written again reaches nothing new: a small model caught in a repetition loop writes
    // one pattern thousands of times, and each `*` pattern is matched against every tool.
    const read = new Set<string>();
    for (const raw of requested) {
      if (read.has(raw)) continue;
      read.add(raw);
      const found = match(raw);
      if (found.length === 0) {
        if (raw.trim() !== "") unknown.add(raw);
        continue;
      }
      for (const tool of found) {
        if (reached.has(tool)) continue;
        reached.add(tool);
        (names.length < cap ? names : overCap).push(tool);
      }
    }
    return { names, unknown: [...unknown], overCap, cap };
  };
  return { expand, readsWhole: (name) => match(name, false).length > 0 };
}

/**
 * The loaded tools worth carrying into the next run: those still in the catalogue, each once,
 * the most recently loaded `cap` of them (16 unless given), in the order they were loaded.
 *
 * Throws a `ToolLoadingError` for a malformed catalogue, a `loaded` that is not an array of
 * strings, or a bad cap. Never adds a name that was not in `loaded`.
 */
export function carryOver(
  loaded: readonly string[],
  catalog: readonly CatalogServer[],
  cap: number = DEFAULT_CARRY_CAP,
): string[] {
  checkArguments("carryOver", "the loaded names", loaded, catalog, cap, "a carry cap");
  const index = catalogIndex(catalog);
  const kept = new Set<string>();
  // Walk from the newest so a name loaded twice counts at its latest position.
  for (let i = loaded.length - 1; i >= 0 && kept.size < cap; i--) {
    const name = loaded[i] as string;
    if (index.has(name)) kept.add(name);
  }
  return [...kept].reverse();
}
