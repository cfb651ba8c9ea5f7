import type { Endpoint } from "@loopwright/client";
import { parseJson } from "@loopwright/tool-calls";
import { expandNames } from "@loopwright/tool-loading";
import { askJsonReading } from "./ask.js";
import type { SideTaskOptions } from "./call.js";
import {
  type CatalogEntry,
  type CatalogServerLike,
  checkCap,
  PRESELECT_MAX,
  type ReadCatalog,
  readCatalog,
} from "./catalog.js";
import { describeValue, errorText, isPlainObject, SideTaskError } from "./errors.js";
import { type KeywordOptions, preselectByKeywords } from "./keywords.js";
import { ownField, ownView } from "./own.js";
import { headOf, quotedText } from "./text.js";

/** The shape a preselection answer is held to: `{ "tools": ["name", …] }`. */
export const PRESELECT_SCHEMA: Readonly<Record<string, unknown>> = Object.freeze({
  type: "object",
  properties: Object.freeze({
    tools: Object.freeze({
      type: "array",
      items: Object.freeze({ type: "string" }),
      description: "Names of the tools the request needs, exactly as the catalogue spells them.",
    }),
  }),
  required: Object.freeze(["tools"]),
  additionalProperties: false,
});

/**
 * The most catalogue names a preselection's schema lists as an `enum` (256). A server that builds a
 * grammar from the schema (llama.cpp, vLLM) then holds the model to real names and to the cap; the
 * schema also rides on the system prompt, so a longer list would repeat a long catalogue there and
 * make a grammar of that many alternatives. A bigger catalogue is asked with {@link PRESELECT_SCHEMA}'s
 * free strings, read against the catalogue as before.
 */
export const PRESELECT_ENUM_MAX = 256;

/**
 * The schema one preselection is asked with: {@link PRESELECT_SCHEMA} with the list held to the
 * catalogue's tool names (`items.enum`, in code-unit order, each once) and to `max` of them
 * (`maxItems`), where the catalogue holds at most {@link PRESELECT_ENUM_MAX} tools; `PRESELECT_SCHEMA`
 * itself above that. Built per call from the catalogue, so the same catalogue is the same schema.
 * Throws `SideTaskError` (`invalid-input`) for a catalogue that is not a list of servers or a bad cap.
 */
export function preselectSchema(
  catalog: readonly CatalogServerLike[],
  max: number = PRESELECT_MAX,
): Readonly<Record<string, unknown>> {
  const { entries } = readCatalog(catalog, "preselectSchema");
  const cap = checkCap(max, "preselectSchema");
  return schemaFor(entries, cap);
}

function schemaFor(entries: readonly CatalogEntry[], cap: number): Readonly<Record<string, unknown>> {
  if (entries.length === 0 || entries.length > PRESELECT_ENUM_MAX) return PRESELECT_SCHEMA;
  const names = entries.map((entry) => entry.name).sort(codeUnitOrder);
  return {
    type: "object",
    properties: {
      tools: {
        type: "array",
        items: { type: "string", enum: names },
        maxItems: cap,
        description: "Names of the tools the request needs, exactly as the catalogue spells them.",
      },
    },
    required: ["tools"],
    additionalProperties: false,
  };
}

/** What a run says before its first turn about the tools it opened with; the names follow, comma-separated. */
export const PRESELECTED_NOTICE = "Preselected tools: ";

/** The preselection's reply ceiling when none is given: a list of names is short. */
export const PRESELECT_MAX_TOKENS = 256;

/** Options of `preselect`: those of every side task, plus keyword matching. */
export interface PreselectOptions extends SideTaskOptions {
  /**
   * Match the request's words first (`preselectByKeywords`) and spend the model only where they
   * do not settle it. `true` for the default bar, or `{ minScore, dropoff }` to move it.
   */
  keywords?: boolean | KeywordOptions | null | undefined;
}

/** Code-unit order, the same in every locale. */
function codeUnitOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The system prompt of a preselection: the catalogue and the rule.
 *
 * The catalogue, one tool a line under its server's label (servers and tools in code-unit order, so
 * the same tools are the same prompt however the catalogue was assembled),
 * and the rule — answer `{"tools": [...]}` with at most `max` names, `[]` when none is needed.
 * Throws `SideTaskError` (`invalid-input`) for a catalogue that is not a list of servers or a bad cap.
 */
export function preselectSystem(catalog: readonly CatalogServerLike[], max: number = PRESELECT_MAX): string {
  const { entries } = readCatalog(catalog, "preselectSystem");
  const cap = checkCap(max, "preselectSystem");
  // Servers and their tools in code-unit order: the same tools are the same prompt whatever order
  // the servers connected in, so the small model's prompt cache holds from one run to the next.
  const byServer = new Map<string, CatalogEntry[]>();
  for (const entry of entries) {
    const listed = byServer.get(entry.server);
    if (listed) listed.push(entry);
    else byServer.set(entry.server, [entry]);
  }
  const lines: string[] = [];
  for (const server of [...byServer.keys()].sort(codeUnitOrder)) {
    lines.push(`${lines.length ? "\n" : ""}${server}:`);
    for (const entry of (byServer.get(server) ?? []).sort((a, b) => codeUnitOrder(a.name, b.name))) {
      lines.push(`- ${entry.name}${entry.description ? `: ${entry.description}` : ""}`);
    }
  }
  return [
    "You choose which tools an assistant will need for a request, before it starts.",
    `Pick at most ${cap} tools from the catalogue below, and only tools the request will actually use.`,
    'Answer with JSON only: {"tools": ["tool_name", ...]}, names spelled exactly as listed.',
    'Answer {"tools": []} when the request needs no tool.',
    "",
    "Catalogue:",
    ...lines,
  ].join("\n");
}

/**
 * The user turn of a preselection: the request, quoted, and the question.
 *
 * Throws `SideTaskError`
 * (`invalid-input`) for a request that is not a string or a bad cap.
 */
export function preselectInput(prompt: string, max: number = PRESELECT_MAX): string {
  if (typeof prompt !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `preselectInput: the request must be a string, and was ${describeValue(prompt)}.`,
    );
  }
  const cap = checkCap(max, "preselectInput");
  return `The request:\n"""\n${prompt}\n"""\n\nWhich tools (at most ${cap}) will it need?`;
}

/** A preselection reply read: the names kept, and those left out (outside the catalogue, past the cap). */
interface Reading {
  names: string[];
  unknown: string[];
  overCap: string[];
  /** The kinds of the list's entries that are neither a name nor `{ name }` ("an object", "number 1"…). */
  unreadable: string[];
}

/**
 * The catalogued tools a reply names, read as `load_tools` reads names (`expandNames`): exact,
 * trimmed, `functions.tool`, `server.tool` (or `/`, `:`, `__`), a server's name for its tools, a
 * `*` pattern, or a name differing only in case from exactly one tool — so a preselection and a
 * load never disagree on which tool a name means. Each once, at most `cap`.
 */
function readReply(reply: unknown, catalog: ReadCatalog, cap: number): Reading {
  let value = reply;
  if (typeof value === "string") value = parseJson(value);
  // The reply's own fields: never a list or a name only a polluted Object.prototype holds.
  const list = Array.isArray(value) ? value : ownField(value, "tools");
  if (!Array.isArray(list)) return { names: [], unknown: [], overCap: [], unreadable: [] };
  const written: string[] = [];
  const unreadable: string[] = [];
  for (const item of list) {
    // A model shown tool declarations often writes { "name": … } for a tool: read as its name.
    const name = isPlainObject(item) ? ownField(item, "name") : item;
    if (typeof name === "string") written.push(name);
    else unreadable.push(describeValue(item));
  }
  const { names, unknown, overCap } = expandNames(written, catalog.servers, cap);
  return { names, unknown, overCap, unreadable };
}

/**
 * How many left-out names a notice echoes, and how much of each: the model made them up. Each is
 * written as a JSON string with its line separators and bidirectional controls escaped too (see
 * `quotedText`): a notice goes to a host's log or terminal, where a raw U+2028 breaks the line and a
 * U+202E turns the rest of it around.
 */
const ECHOED = 12;
const ECHO_CHARS = 60;

function echo(names: readonly string[]): string {
  const shown = names
    .slice(0, ECHOED)
    .map((name) => quotedText(name.length <= ECHO_CHARS ? name : `${headOf(name, ECHO_CHARS)}…`));
  if (names.length > ECHOED) shown.push(`and ${names.length - ECHOED} more`);
  return shown.join(", ");
}

/**
 * Reads a preselection reply into catalogued tool names.
 *
 * Takes `{ tools: [...] }` or the bare array an older prompt
 * produced, as a parsed value or as the reply text (read with `parseJson`); an entry `{ name }` is
 * read as its name, and any other entry that is not a string is left out. Keeps only names the
 * catalogue has — spelled exactly, or as `functions.<name>`, or differing only in case from one
 * tool — each once, in the order given, at most `max`. Anything else reads as `[]`; never
 * throws for a reply. Throws `SideTaskError` (`invalid-input`) for a bad catalogue or cap.
 */
export function preselection(
  reply: unknown,
  catalog: readonly CatalogServerLike[],
  max: number = PRESELECT_MAX,
): string[] {
  const read = readCatalog(catalog, "preselection");
  return readReply(reply, read, checkCap(max, "preselection")).names;
}

/**
 * Chooses a run's tools before it starts, with a small model (and the request's words first, if asked).
 *
 * Asks `model` at `endpoint` which tools of `catalog` the
 * request `prompt` needs (`askJson` with `preselectSchema(catalog, max)`: the catalogue's names as an
 * `enum` and `maxItems` the cap, up to `PRESELECT_ENUM_MAX` tools; ceiling `PRESELECT_MAX_TOKENS`,
 * temperature 0 unless given), and answers the names (`preselection`), at most `max`.
 *
 * With `keywords`, the request's words are matched first and their shortlist is the answer when
 * `confident`, with no request at all. An empty or absent `model` means no preselection, words
 * included: `[]`. An empty catalogue or an empty request is `[]` with nothing sent. Names the reply
 * holds outside the catalogue, or past the cap, are left out with a notice naming them (each cut to
 * 60 characters, at most 12 named); so are entries that are not names (a number, an object without a
 * string `name`), with a notice counting them. Never throws for
 * a failed side task: a refusal, a timeout, or a reply with no JSON or with JSON holding no list of
 * names is `[]` with a notice saying why (an `onNotice` that throws changes nothing). Throws `SideTaskError` (`invalid-input`) for a catalogue that is not a list of servers, a
 * request that is not a string, or a bad cap.
 */
export async function preselect(
  endpoint: Endpoint,
  model: string | undefined,
  catalog: readonly CatalogServerLike[],
  prompt: string,
  options: PreselectOptions = {},
  max: number = PRESELECT_MAX,
): Promise<string[]> {
  const read = readCatalog(catalog, "preselect");
  if (typeof prompt !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `preselect: the request must be a string, and was ${describeValue(prompt)}.`,
    );
  }
  const cap = checkCap(max, "preselect");
  if (typeof model !== "string" || model.trim() === "") return [];
  // Read as the host wrote them: never a field only a polluted Object.prototype holds.
  const own = ownView(options ?? {});
  // A host's sink that throws changes nothing: the names read are still the answer, and a failed
  // side task is still [] (it rejected with the sink's error, and the preselection was lost).
  const notice = (text: string) => {
    try {
      if (typeof own.onNotice === "function") own.onNotice(text);
    } catch {
      // The notice is only told; the preselection stands.
    }
  };
  if (read.nameless > 0) {
    // Said before anything is sent: a catalogue of only such tools is [] with no request, and
    // without this the host could not tell it from a model that picked nothing.
    // At most 12 named, and how many more: cut silently, the list read as every server holding one.
    const more = read.namelessIn.length - 12;
    const servers =
      read.namelessIn
        .slice(0, 12)
        .map((name) => headOf(name, 60))
        .join(", ") + (more > 0 ? `, and ${more} more server${more === 1 ? "" : "s"}` : "");
    notice(
      `preselect: ${read.nameless === 1 ? "1 tool of the catalogue has" : `${read.nameless} tools of the catalogue have`} no name (server ${servers}) and ${read.nameless === 1 ? "was" : "were"} left out of the preselection.`,
    );
  }
  if (read.entries.length === 0 || prompt.trim() === "") return [];
  const { keywords, ...rest } = own;
  if (keywords != null && typeof keywords !== "boolean" && !isPlainObject(keywords)) {
    throw new SideTaskError(
      "invalid-input",
      `preselect: keywords must be true, false or { minScore?, dropoff? } (or absent), and was ${typeof keywords === "string" ? JSON.stringify((keywords as string).slice(0, 40)) : describeValue(keywords)}.`,
    );
  }
  if (keywords) {
    const bar = typeof keywords === "object" ? keywords : {};
    const words = preselectByKeywords(catalog, prompt, bar, cap);
    if (words.confident) return words.tools;
  }
  try {
    // Only names are read, so a number JS cannot hold changes nothing here: read as JSON.parse reads it.
    const reply = await askJsonReading(
      endpoint,
      model,
      preselectSystem(catalog, cap),
      preselectInput(prompt, cap),
      schemaFor(read.entries, cap),
      {
        ...rest,
        // Wrapped only where it is a function: anything else is askJson's to refuse by name.
        ...(typeof own.onNotice === "function" ? { onNotice: notice } : {}),
        maxTokens: own.maxTokens ?? PRESELECT_MAX_TOKENS,
        temperature: own.temperature ?? 0,
        name: "preselection",
      },
      false,
      "preselect",
    );
    const list = Array.isArray(reply) ? reply : isPlainObject(reply) ? ownField(reply, "tools") : undefined;
    if (!Array.isArray(list)) {
      // No JSON, or JSON without a list (a bare name, null, the schema echoed): no answer, said so.
      notice(`${model} gave no list of tools for the preselection; the run starts without one.`);
      return [];
    }
    const reading = readReply(reply, read, cap);
    if (reading.unreadable.length > 0) {
      const kinds = [...new Set(reading.unreadable.map((kind) => headOf(kind, ECHO_CHARS)))];
      notice(
        `${model}'s list held ${reading.unreadable.length} ${reading.unreadable.length === 1 ? "entry that is" : "entries that are"} not a tool name (${kinds.slice(0, ECHOED).join(", ")}${kinds.length > ECHOED ? ", …" : ""}); left out of the preselection.`,
      );
    }
    if (reading.unknown.length > 0) {
      notice(
        `${model} named tools the catalogue does not have, left out of the preselection: ${echo(reading.unknown)}.`,
      );
    }
    if (reading.overCap.length > 0) {
      notice(
        `${model} named more than ${cap} tools; the preselection is held to ${cap}, so left out: ${echo(reading.overCap)}.`,
      );
    }
    return reading.names;
  } catch (error) {
    if (SideTaskError.isInstance(error) && error.code === "invalid-input") throw error;
    notice(`The preselection could not be made, so the run starts without one: ${errorText(error)}`);
    return [];
  }
}
