import type { Endpoint } from "@loopwright/client";
import { parseJson } from "@loopwright/tool-calls";
import { askJson } from "./ask.js";
import type { SideTaskOptions } from "./call.js";
import { type CatalogServerLike, catalogEntries, checkCap, PRESELECT_MAX } from "./catalog.js";
import { describeValue, errorText, isPlainObject, SideTaskError } from "./errors.js";
import { type KeywordOptions, preselectByKeywords } from "./keywords.js";

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
  keywords?: boolean | KeywordOptions;
}

/**
 * The system prompt of a preselection: the catalogue and the rule.
 *
 * The catalogue, one tool a line under its server's label,
 * and the rule — answer `{"tools": [...]}` with at most `max` names, `[]` when none is needed.
 * Throws `SideTaskError` (`invalid-input`) for a catalogue that is not a list of servers or a bad cap.
 */
export function preselectSystem(catalog: readonly CatalogServerLike[], max: number = PRESELECT_MAX): string {
  const entries = catalogEntries(catalog, "preselectSystem");
  const cap = checkCap(max, "preselectSystem");
  const lines: string[] = [];
  let server: string | undefined;
  for (const entry of entries) {
    if (entry.server !== server) {
      server = entry.server;
      lines.push(`${lines.length ? "\n" : ""}${server}:`);
    }
    lines.push(`- ${entry.name}${entry.description ? `: ${entry.description}` : ""}`);
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

/**
 * Reads a preselection reply into catalogued tool names.
 *
 * Takes `{ tools: [...] }` or the bare array an older prompt
 * produced, as a parsed value or as the reply text (read with `parseJson`). Keeps only names the
 * catalogue has, each once, in the order given, at most `max`. Anything else reads as `[]`; never
 * throws for a reply. Throws `SideTaskError` (`invalid-input`) for a bad catalogue or cap.
 */
export function preselection(
  reply: unknown,
  catalog: readonly CatalogServerLike[],
  max: number = PRESELECT_MAX,
): string[] {
  const known = new Set(catalogEntries(catalog, "preselection").map((entry) => entry.name));
  const cap = checkCap(max, "preselection");
  let value = reply;
  if (typeof value === "string") value = parseJson(value);
  const list = Array.isArray(value)
    ? value
    : typeof value === "object" && value !== null
      ? (value as { tools?: unknown }).tools
      : undefined;
  if (!Array.isArray(list)) return [];
  const out: string[] = [];
  for (const name of list) {
    if (typeof name !== "string") continue;
    const trimmed = name.trim();
    if (known.has(trimmed) && !out.includes(trimmed)) out.push(trimmed);
    if (out.length >= cap) break;
  }
  return out;
}

/**
 * Chooses a run's tools before it starts, with a small model (and the request's words first, if asked).
 *
 * Asks `model` at `endpoint` which tools of `catalog` the
 * request `prompt` needs (`askJson` with `PRESELECT_SCHEMA`, ceiling `PRESELECT_MAX_TOKENS`,
 * temperature 0 unless given), and answers the names (`preselection`), at most `max`.
 *
 * With `keywords`, the request's words are matched first and their shortlist is the answer when
 * `confident`, with no request at all. An empty or absent `model` means no preselection, words
 * included: `[]`. An empty catalogue or an empty request is `[]` with nothing sent. Never throws for
 * a failed side task: a refusal, a timeout, or a reply with no JSON or with JSON holding no list of
 * names is `[]` with a notice saying why. Throws `SideTaskError` (`invalid-input`) for a catalogue that is not a list of servers, a
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
  const entries = catalogEntries(catalog, "preselect");
  if (typeof prompt !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `preselect: the request must be a string, and was ${describeValue(prompt)}.`,
    );
  }
  const cap = checkCap(max, "preselect");
  if (typeof model !== "string" || model.trim() === "") return [];
  if (entries.length === 0 || prompt.trim() === "") return [];
  const { keywords, ...rest } = options ?? {};
  if (keywords) {
    const bar = typeof keywords === "object" ? keywords : {};
    const words = preselectByKeywords(catalog, prompt, bar, cap);
    if (words.confident) return words.tools;
  }
  const notice = rest.onNotice ?? (() => {});
  try {
    const reply = await askJson(
      endpoint,
      model,
      preselectSystem(catalog, cap),
      preselectInput(prompt, cap),
      PRESELECT_SCHEMA,
      {
        ...rest,
        maxTokens: rest.maxTokens ?? PRESELECT_MAX_TOKENS,
        temperature: rest.temperature ?? 0,
        name: "preselection",
      },
    );
    const list = Array.isArray(reply)
      ? reply
      : isPlainObject(reply)
        ? (reply as { tools?: unknown }).tools
        : undefined;
    if (!Array.isArray(list)) {
      // No JSON, or JSON without a list (a bare name, null, the schema echoed): no answer, said so.
      notice(`${model} gave no list of tools for the preselection; the run starts without one.`);
      return [];
    }
    return preselection(reply, catalog, cap);
  } catch (error) {
    if (SideTaskError.isInstance(error) && error.code === "invalid-input") throw error;
    notice(`The preselection could not be made, so the run starts without one: ${errorText(error)}`);
    return [];
  }
}
