import { DEFAULT_CHARS_PER_TOKEN } from "@loopwright/ledger";
import { positive } from "./settings.js";
import type { AssembleOptions, HookOutcome } from "./types.js";

/**
 * Whether an outcome reports a failure: `ok: false`, `timedOut: true`, or an `error` that says
 * something — a non-empty string, an `Error` or other object, `true`, a number other than 0 (any
 * truthy value). An `error` of `""`, `false`, `0`, `null` or none is no error: runners relaying
 * outcomes as JSON write those for "no error" (a Go struct without omitempty writes `"error": ""`).
 * A failed outcome's context is never used. The same rule as the ledger's `vetoedBy` reads.
 */
export function failed(outcome: HookOutcome): boolean {
  return outcome.ok === false || Boolean(outcome.error) || outcome.timedOut === true;
}

/** The status fields read only as `true`/`false`, in the order a note names them. */
const FLAG_FIELDS = ["ok", "timedOut", "veto"] as const;

/**
 * The status fields of `outcome` (`ok`, `timedOut`, `veto`) that hold something other than a boolean,
 * `null` or nothing: each is read as absent, so a `veto: "true"` vetoes nothing and a `timedOut: 1`
 * does not fail the hook. The caller says so in a note rather than letting it pass unseen.
 */
export function nonBooleanFlags(outcome: HookOutcome): (typeof FLAG_FIELDS)[number][] {
  return FLAG_FIELDS.filter((field) => {
    const value: unknown = outcome[field];
    return value !== undefined && value !== null && typeof value !== "boolean";
  });
}

/** The fields of an outcome this package reads. */
const READ_FIELDS = ["id", "name", "ok", "error", "timedOut", "context", "maxTokens", "veto", "ms"] as const;

/** An outcome as read once ({@link snapshotOutcome}): its copy, or why it could not be read. */
export type OutcomeSnapshot = { readonly outcome: HookOutcome } | { readonly unreadable: unknown };

/** The own enumerable keys of `entry` not in `READ_FIELDS`; none where even listing them throws. */
function otherKeys(entry: object): (string | symbol)[] {
  try {
    return Reflect.ownKeys(entry).filter(
      (key) =>
        !(READ_FIELDS as readonly (string | symbol)[]).includes(key) &&
        Object.prototype.propertyIsEnumerable.call(entry, key),
    );
  } catch {
    return [];
  }
}

/**
 * An outcome copied once, so each getter is read a single time and every later read sees the same
 * values: every field this package reads wherever it lives (a getter on a prototype), then the
 * outcome's other own enumerable fields. A read field that throws (a revoked Proxy, a throwing
 * getter) makes the whole outcome unreadable, the reason kept; another field that throws is left
 * out of the copy and costs nothing else. The answer is tagged by its wrapper, never by the
 * outcome's own fields, so an outcome holding a field named `unreadable` is read like any other.
 */
export function snapshotOutcome(entry: object): OutcomeSnapshot {
  const copy: Record<string | symbol, unknown> = {};
  try {
    for (const field of READ_FIELDS) {
      if (field in entry) copy[field] = (entry as HookOutcome)[field];
    }
  } catch (error) {
    return { unreadable: error };
  }
  for (const key of otherKeys(entry)) {
    try {
      copy[key] = (entry as Record<string | symbol, unknown>)[key];
    } catch {
      // Not a field this package reads: the outcome stands without it.
    }
  }
  return { outcome: copy as HookOutcome };
}

/** An entry's snapshot, or `undefined` for an entry that is not an object or throws when read. */
function readable(entry: unknown): HookOutcome | undefined {
  if (typeof entry !== "object" || entry === null) return undefined;
  const read = snapshotOutcome(entry);
  return "outcome" in read ? read.outcome : undefined;
}

/** A count of tokens as a note says it. */
function tokens(count: unknown): string {
  return count === 1 ? "1 token" : `${String(count)} tokens`;
}

/** Ends a block that was cut to fit, inside the limit it was cut to. */
const CUT_MARK = " […]";

/** A hook's label for its `<context hook="…">` block: its id, else its name, else its place. */
export function hookLabel(outcome: HookOutcome, place: number): string {
  if (typeof outcome.id === "string" && outcome.id !== "") return outcome.id;
  if (typeof outcome.name === "string" && outcome.name !== "") return outcome.name;
  return `hook ${place + 1}`;
}

/** The most characters of a hook's name or id a note quotes; a longer one ends in `…`. */
const NOTE_LABEL_CHARS = 60;

/**
 * `label` as a note quotes it: on one line, cut to {@link NOTE_LABEL_CHARS} with `…` (never inside
 * a character), so a hook with a megabyte of id costs a line, as a megabyte of error does.
 */
function noteName(label: string): string {
  const flat = wellFormed(label).replace(/[\p{Cc}\u2028\u2029]+/gu, " ");
  return flat.length <= NOTE_LABEL_CHARS ? flat : `${cutTo(flat, NOTE_LABEL_CHARS - 1)}…`;
}

/**
 * A hook's label for a note: its name (a display name, preferred in notes), else its id, else its
 * place, as `noteName` quotes it.
 */
export function noteLabel(outcome: HookOutcome, place: number): string {
  if (typeof outcome.name === "string" && outcome.name !== "") return noteName(outcome.name);
  if (typeof outcome.id === "string" && outcome.id !== "") return noteName(outcome.id);
  return `hook ${place + 1}`;
}

/** A surrogate without its other half: JSON.stringify writes it as an escape that strict JSON readers refuse. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `text` with each lone surrogate written U+FFFD. A request carrying one is refused by llama.cpp's
 * JSON reader (and serde_json's), and hook context stored beside its question would fail every turn.
 */
function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, "\uFFFD");
}

/** An attribute value that cannot end its quotes or its tag, and stays on one line. */
function attribute(value: string): string {
  return wellFormed(value).replace(/[&"<>\p{Cc}\u2028\u2029]/gu, (char) => {
    if (char === "&") return "&amp;";
    if (char === '"') return "&quot;";
    if (char === "<") return "&lt;";
    if (char === ">") return "&gt;";
    return " ";
  });
}

/** A hook's text with any `<context` or `</context` tag in it disarmed, so it cannot close its block. */
function disarm(text: string): string {
  // One run of spaces can be read only one way here (`\s*(?:\/\s*)?` rather than `\s*\/?\s*`, which
  // tries every split of it): linear, where the other is quadratic in a long run after a `<`.
  return text.replace(/<(?=\s*(?:\/\s*)?context)/gi, "&lt;");
}

/** `text` cut to at most `chars` UTF-16 units, never between the two halves of a surrogate pair. */
function cutTo(text: string, chars: number): string {
  if (text.length <= chars) return text;
  let end = Math.max(0, chars);
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

/**
 * The outcomes' context as `<context hook="id">` blocks, in order (failed ones skipped), held to `maxTokens` in all and
 * each to its own `maxTokens`. Sizes are characters over `charsPerToken`, the way the ledger's
 * `estimateTokens` counts, so `estimateTokens(result) <= maxTokens` always holds; a block that does
 * not fit is cut (ending in " […]") or left out, and `onNote` is told which.
 */
export function assembleBlocks(
  outcomes: readonly HookOutcome[],
  maxTokens: number,
  given?: AssembleOptions | null,
): string {
  const options: AssembleOptions = given ?? {};
  const charsPerToken = positive(options.charsPerToken) ? options.charsPerToken : DEFAULT_CHARS_PER_TOKEN;
  const note = (text: string): void => {
    if (typeof options.onNote === "function") options.onNote(text);
  };
  const budget = Math.floor(maxTokens * charsPerToken);
  let out = "";
  outcomes.forEach((entry, place) => {
    const outcome = readable(entry);
    if (outcome === undefined) {
      if (typeof entry === "object" && entry !== null) {
        note(`Hook ${place + 1}'s outcome could not be read (it threw when read); it was left out.`);
      }
      return;
    }
    if (typeof outcome.context !== "string" || failed(outcome)) return;
    const text = disarm(wellFormed(outcome.context.trim()));
    if (text === "") return;
    const open = `<context hook="${attribute(hookLabel(outcome, place))}">\n`;
    const label = noteLabel(outcome, place);
    const close = "\n</context>";
    const separator = out === "" ? "" : "\n\n";
    const own = positive(outcome.maxTokens)
      ? Math.floor(outcome.maxTokens * charsPerToken)
      : Number.POSITIVE_INFINITY;
    const room = budget - out.length - separator.length - open.length - close.length;
    const limit = Math.min(own, room);
    let body = text;
    if (text.length > limit) {
      body = cutTo(text, limit - CUT_MARK.length);
      const why =
        limit === own
          ? `its own limit of ${tokens(outcome.maxTokens)}`
          : `the ${maxTokens}-token hook budget`;
      if (body.trim() === "") {
        note(`Hook ${label}'s context was left out: ${why} had no room for it.`);
        return;
      }
      body += CUT_MARK;
      note(`Hook ${label}'s context was cut from ${text.length} to ${body.length} characters to fit ${why}.`);
    }
    out += separator + open + body + close;
  });
  return out;
}
