import type { FunctionToolLike } from "@loopwright/schema-compat";
import { definitionsByName } from "./catalog.js";
import { definitionsOf } from "./catalog-readers.js";
import { checkCap, checkNameList, describe, echoNames, quotedText, ToolLoadingError } from "./errors.js";
import { LOAD_TOOLS_NAME } from "./meta-tools.js";
import { MAX_NAME_LENGTH, type NameResolution } from "./names.js";
import { descriptionOf } from "./own.js";

/** The narrowest message shape this package reads: a role, content, and a tool call's answer id. */
export interface MessageLike {
  role: string;
  content?: unknown | undefined;
  tool_call_id?: string | undefined;
  tool_calls?:
    | readonly {
        id?: string | undefined;
        type?: string | undefined;
        function?: { name?: string | undefined; arguments?: string | undefined } | undefined;
      }[]
    | null
    | undefined;
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
  // Each list is read as names (an entry that is not a string threw a TypeError deep in the echo),
  // and the cap is told to the model (NaN read "Held to NaN tools a load").
  for (const key of ["names", "unknown", "overCap"] as const) {
    checkNameList(r[key], `the resolution's ${key}`, where);
  }
  checkCap(r.cap, "the resolution's cap", where);
  // Its names and overCap are catalogued names, written raw into the answer (the model's own
  // `unknown` are echoed escaped): one holding a line break (a resolution built by hand) wrote a
  // line of its own there ("Loaded: a\nLoaded: rm_rf").
  for (const key of ["names", "overCap"] as const) {
    const bad = (r[key] as string[]).find((name) => LINE_BREAKING.test(name));
    if (bad === undefined) continue;
    throw new ToolLoadingError(
      "invalid-names",
      `${where}: the resolution's ${key} holds ${quotedText(bad)}, a name with a line break or control character, which no catalogued name holds.`,
    );
  }
}

/** C0 and C1 controls (line breaks among them) and the Unicode line and paragraph separators. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const LINE_BREAKING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function checkNames(names: Iterable<string>, where: string): Set<string> {
  if (names === null || typeof names !== "object" || !(Symbol.iterator in names)) {
    throw new ToolLoadingError(
      "invalid-names",
      `${where} needs the names already loaded as an array or a set, and was given ${describe(names)}.`,
    );
  }
  return new Set(names);
}

/**
 * A load's answer lines as the text the model is sent, half a surrogate pair alone read as U+FFFD:
 * a resolution built by hand (not by `expandNames` over a checked catalogue) can name one, and
 * llama.cpp, which takes only valid UTF-8, refuses a request holding it. Definition lines are JSON,
 * which escapes one, so they are unchanged.
 */
function answerText(lines: readonly string[]): string {
  return lines.join("\n").toWellFormed();
}

/** The last line of a proxied load that handed over definitions; part of what `holdsDefinitions` reads. */
const CALL_HINT = 'Run these with call_tool: { "name": "<tool>", "arguments": { ... } }.';

/** How many names the cap left out a load's answer lists before it only counts the rest. */
const OVER_CAP_NAMED = 24;

/** Names the model already has, as a load's answer lists them: the first 24, and a count of the rest. */
function listed(names: readonly string[]): string {
  if (names.length <= OVER_CAP_NAMED) return names.join(", ");
  return `${names.slice(0, OVER_CAP_NAMED).join(", ")} and ${names.length - OVER_CAP_NAMED} more`;
}

function tail(resolution: NameResolution, lines: string[]): void {
  if (resolution.unknown.length > 0) {
    // Made up by the model, so any number of any size: a few, cut short, and a count of the rest.
    lines.push(
      `Not in the catalogue: ${echoNames(resolution.unknown, OVER_CAP_NAMED)}. Use the names the catalogue lists.`,
    );
    if (resolution.unknown.some((name) => name.length > MAX_NAME_LENGTH)) {
      lines.push(`A name is read up to ${MAX_NAME_LENGTH} characters; a longer one matches nothing.`);
    }
  }
  const left = resolution.overCap;
  if (left.length > OVER_CAP_NAMED) {
    // A server's name or "*" can reach thousands: name a few, count the rest (the catalogue lists them).
    lines.push(
      `Held to ${resolution.cap} tools a load, so ${left.length} were not loaded: ${left.slice(0, OVER_CAP_NAMED).join(", ")} and ${left.length - OVER_CAP_NAMED} more. Load the ones you need by name in another call.`,
    );
  } else if (left.length > 0) {
    lines.push(
      `Held to ${resolution.cap} tools a load, so these were not loaded: ${left.join(", ")}. Load the ones you need in another call.`,
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
 * `ToolLoadingError` for arguments of the wrong shape: `invalid-names` for a resolution whose lists
 * are not arrays of strings or whose `names` or `overCap` hold a line break or control character, `invalid-cap` for a cap that is not a whole number of at least 1.
 * Never changes either. Half a surrogate pair alone in a name (a resolution built by hand) is
 * written as U+FFFD, so the answer is text a server reading UTF-8 takes.
 */
export function loadResult(resolution: NameResolution, alreadyLoaded: Iterable<string>): string {
  checkResolution(resolution, "loadResult");
  const before = checkNames(alreadyLoaded, "loadResult");
  const fresh = resolution.names.filter((name) => !before.has(name));
  const repeated = resolution.names.filter((name) => before.has(name));
  const lines: string[] = [];
  if (fresh.length > 0) lines.push(`Loaded: ${fresh.join(", ")}. Call them by name.`);
  if (repeated.length > 0)
    lines.push(`Already loaded: ${listed(repeated)}. Call them by name; no need to load them again.`);
  if (fresh.length === 0 && repeated.length === 0) lines.push("No tool was loaded.");
  tail(resolution, lines);
  return answerText(lines);
}

/**
 * One tool's definition as one line of JSON: its name, description and parameters, in that order.
 * Throws a `ToolLoadingError` (`invalid-tools`) for something that is not a named function tool.
 */
export function definitionLine(tool: FunctionToolLike): string {
  definitionsByName([tool], "definitionLine");
  const { name, parameters } = tool.function;
  // Its own description (or a class's): never a polluted `Object.prototype.description`.
  const description = descriptionOf(tool.function);
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
 * arguments of the wrong shape (as `loadResult` does for the resolution). The definition lines are what `holdsDefinitions` recognises.
 * Half a surrogate pair alone in a name is written as U+FFFD (a definition line escapes one, as JSON does).
 */
export function proxyLoadResult(
  resolution: NameResolution,
  tools: readonly FunctionToolLike[],
  inConversation: Iterable<string>,
): string {
  checkResolution(resolution, "proxyLoadResult");
  const byName = definitionsOf(tools, "proxyLoadResult");
  const held = checkNames(inConversation, "proxyLoadResult");
  return proxyAnswer(
    resolution,
    (name) => {
      const tool = byName.get(name);
      return tool ? definitionLine(tool) : undefined;
    },
    held,
  );
}

/**
 * {@link proxyLoadResult} over arguments already checked: `lineOf` gives a tool's definition line
 * (`undefined` for none), so a run that holds its lines builds none again for each load.
 */
export function proxyAnswer(
  resolution: NameResolution,
  lineOf: (name: string) => string | undefined,
  held: ReadonlySet<string>,
): string {
  const lines: string[] = [];
  const earlier: string[] = [];
  const missing: string[] = [];
  for (const name of resolution.names) {
    const line = held.has(name) ? undefined : lineOf(name);
    if (held.has(name)) earlier.push(name);
    else if (line !== undefined) lines.push(line);
    else missing.push(name);
  }
  const loaded = lines.length;
  if (earlier.length > 0) {
    lines.push(
      `Already in this conversation: ${listed(earlier)}. Their definitions are in an earlier load_tools result; call them with call_tool.`,
    );
  }
  if (missing.length > 0) lines.push(`No definition is available for: ${missing.join(", ")}.`);
  if (loaded === 0 && earlier.length === 0) lines.push("No tool was loaded.");
  tail(resolution, lines);
  if (loaded > 0) lines.push(CALL_HINT);
  return answerText(lines);
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return partTexts(content).join("");
  return "";
}

/** Each part's text (`""` for a part that holds none), in order: what `textOf` joins. */
function partTexts(content: readonly unknown[]): string[] {
  return Array.from(content, (part) =>
    typeof (part as { text?: unknown })?.text === "string" ? (part as { text: string }).text : "",
  );
}

/** The tool named by a line exactly as `definitionLine` writes one, else `undefined`. */
function definitionName(line: string): string | undefined {
  if (!line.startsWith('{"name":')) return undefined;
  try {
    const value = JSON.parse(line) as Record<string, unknown>;
    const keys = Object.keys(value);
    if (
      keys.length === 3 &&
      keys[0] === "name" &&
      keys[1] === "description" &&
      keys[2] === "parameters" &&
      typeof value.name === "string" &&
      typeof value.parameters === "object" &&
      value.parameters !== null &&
      JSON.stringify(value) === line
    ) {
      return value.name;
    }
  } catch {
    // Not a definition line.
  }
  return undefined;
}

/**
 * What a message's text was read as, by message: a transcript is read again on every proxied load,
 * and each earlier answer is parsed once rather than on every load. An entry counts only while the
 * message's text is the text it was read from (a message whose content was replaced is read again):
 * a string content the same string, an array of parts the same array holding as many parts, each
 * with the same text (`texts`: a part added, removed or given another text in place is read again).
 */
const readLines = new WeakMap<
  object,
  { content: unknown; texts?: readonly string[]; lines: ReadonlyMap<string, string> }
>();

/** Whether `content` is still what `read` was read from (see `readLines`). */
function sameContent(read: { content: unknown; texts?: readonly string[] }, content: unknown): boolean {
  if (read.content !== content) return false;
  if (read.texts === undefined) return typeof content === "string";
  const parts = content as readonly unknown[];
  if (parts.length !== read.texts.length) return false;
  for (let i = 0; i < parts.length; i += 1) {
    const text = (parts[i] as { text?: unknown } | null | undefined)?.text;
    if ((typeof text === "string" ? text : "") !== read.texts[i]) return false;
  }
  return true;
}

const NO_LINES: ReadonlyMap<string, string> = new Map();

/**
 * The definitions a proxied load result hands over, by tool name (each name's line as written):
 * its definition lines, with the hint that ends one. Empty for any other message.
 */
function definedLines(message: MessageLike): ReadonlyMap<string, string> {
  if (message?.role !== "tool") return NO_LINES;
  const content = message.content;
  const cached = typeof message === "object" ? readLines.get(message) : undefined;
  if (cached !== undefined && sameContent(cached, content)) return cached.lines;
  // An array of parts is read by its parts' texts, kept to tell a part changed in place (r82d: only
  // a string content was kept, so every proxied load parsed each earlier such answer again).
  const texts = Array.isArray(content) ? partTexts(content) : undefined;
  const lines = (texts ? texts.join("") : textOf(content)).split("\n");
  const found = new Map<string, string>();
  if (lines.at(-1)?.trim() === CALL_HINT) {
    for (const raw of lines) {
      const line = raw.trim();
      const name = definitionName(line);
      if (name !== undefined) found.set(name, line);
    }
  }
  const read = found.size > 0 ? found : NO_LINES;
  if (typeof message === "object" && message !== null && (typeof content === "string" || texts))
    readLines.set(message, { content, ...(texts ? { texts } : {}), lines: read });
  return read;
}

/**
 * Whether a message is a tool result that carries tool definitions — a proxied `load_tools`
 * result — and so must never be cleared by a prune: it is the model's only copy of those schemas.
 * Recognises exactly what `proxyLoadResult` writes (definition lines as `definitionLine` makes
 * them, ending in its `call_tool` hint), not any JSON naming a tool. Reads only the message; false
 * for anything that is not a `tool` message. Never throws.
 */
export function holdsDefinitions(message: MessageLike): boolean {
  return definedLines(message).size > 0;
}

/**
 * The names whose definitions the transcript holds in answers to `load_tools` calls (what proxied
 * loading counts as loaded: a definition a compaction folded away is no longer held, and so is
 * loadable again). Only a tool message answering a `load_tools` call the transcript holds counts,
 * so a tool's own result that looks like a definition never stands in for one. Given `tools` (the
 * run's definitions), a name counts only where the newest line the transcript holds for it is its
 * definition as it stands now (`definitionLine`): a tool whose definition changed since it was
 * loaded (or changed and changed back) is not held, and a load sends it again. Each answer is read once and remembered while its text stays the same.
 * Throws a `ToolLoadingError` (`invalid-names`) when `messages` is not an array, or `tools` is not
 * an array of named function tools. Never throws for a message it cannot read; it just holds nothing.
 */
export function heldDefinitions(
  messages: readonly MessageLike[],
  tools?: readonly FunctionToolLike[],
): Set<string> {
  if (!Array.isArray(messages)) {
    throw new ToolLoadingError(
      "invalid-names",
      `heldDefinitions needs the transcript as an array of messages, and was given ${describe(messages)}.`,
    );
  }
  if (tools === undefined) return heldWhere(messages, () => true);
  const byName = definitionsOf(tools, "heldDefinitions");
  return heldWhere(messages, (name, line) => {
    const tool = byName.get(name);
    return tool !== undefined && keptLine(tool) === line;
  });
}

/** Each tool's definition line, with the values it was written from (see `keptLine`). */
const linesByTool = new WeakMap<
  object,
  { fn: unknown; name: unknown; description: unknown; parameters: unknown; line: string }
>();

/**
 * `definitionLine(tool)` for a tool `definitionsOf` has checked, kept per tool object while it holds
 * the same function object with the same name, description and parameters object: `heldDefinitions`
 * wrote every held tool's definition as JSON on every call (r83d: 10^3 loads of 200 tools, 2.2 ms
 * a load). A tool renamed, or given another description, parameters or function, is written again.
 */
function keptLine(tool: FunctionToolLike): string {
  const fn = tool.function;
  const kept = linesByTool.get(tool);
  if (
    kept !== undefined &&
    kept.fn === fn &&
    kept.name === fn.name &&
    kept.description === descriptionOf(fn) &&
    kept.parameters === fn.parameters
  )
    return kept.line;
  const line = definitionLine(tool);
  linesByTool.set(tool, {
    fn,
    name: fn.name,
    description: descriptionOf(fn),
    parameters: fn.parameters,
    line,
  });
  return line;
}

/**
 * The names `heldDefinitions` reads off `messages` (an array), each kept where `current` says the
 * line the transcript holds for it is current. A name answered more than once is held only when its
 * newest line is: the model reads the latest definition it was given, so an older copy that matches
 * the tool again (a definition changed and changed back) does not count.
 */
export function heldWhere(
  messages: readonly MessageLike[],
  current: (name: string, line: string) => boolean,
): Set<string> {
  const loads = new Set<string>();
  for (const message of messages) {
    if (message?.role !== "assistant" || !Array.isArray(message.tool_calls)) continue;
    for (const call of message.tool_calls) {
      if (call?.function?.name === LOAD_TOOLS_NAME && typeof call.id === "string") loads.add(call.id);
    }
  }
  const held = new Set<string>();
  if (loads.size === 0) return held;
  const newest = new Map<string, string>();
  for (const message of messages) {
    if (typeof message?.tool_call_id !== "string" || !loads.has(message.tool_call_id)) continue;
    for (const [name, line] of definedLines(message)) newest.set(name, line);
  }
  for (const [name, line] of newest) if (current(name, line)) held.add(name);
  return held;
}
