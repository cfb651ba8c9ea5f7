import { DEFAULT_CHARS_PER_TOKEN } from "@loopwright/ledger";
import { describe } from "./errors.js";
import { NoteSink } from "./notes.js";
import { protoless } from "./protoless.js";
import { positive } from "./settings.js";
import { cutTo, oneLine, wellFormed } from "./text.js";
import type { AssembleOptions, HookOutcome } from "./types.js";
import { ANGLE_LOOKALIKES } from "./untrusted.js";

/**
 * Whether an outcome reports a failure: `ok: false`, `timedOut: true`, or an `error` that says
 * something — a non-empty string, an `Error` or other object, `true`, a number other than 0 (any
 * truthy value). An `error` of `""`, `false`, `0`, `null` or none is no error: runners relaying
 * outcomes as JSON write those for "no error" (a Go struct without omitempty writes `"error": ""`).
 * A failed outcome's context is never used. The same rule as the ledger's `vetoedBy` reads.
 */
export function failed(outcome: HookOutcome): boolean {
  return (
    outcomeField(outcome, "ok") === false ||
    Boolean(outcomeField(outcome, "error")) ||
    outcomeField(outcome, "timedOut") === true
  );
}

/** How deep a prototype chain {@link snapshotOutcome} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * A field of an outcome as {@link snapshotOutcome} copied it, which holds every field it read as its
 * own: `undefined` where the copy does not hold it, never the value a polluted `Object.prototype`
 * holds (`Object.prototype.veto = true`, set by some other code, is no hook's answer: read through,
 * it would veto every compaction, or put the same context on every question).
 */
export function outcomeField(outcome: object, field: string): unknown {
  return Object.hasOwn(outcome, field) ? (outcome as Record<string, unknown>)[field] : undefined;
}

/**
 * The prototypes of `entry` a field is read from besides `entry` itself: its own class's (a getter),
 * up to but not including `Object.prototype`. Throws what the entry throws.
 */
function ownPrototypes(entry: object): object[] {
  const chain: object[] = [];
  let at = Object.getPrototypeOf(entry) as object | null;
  while (at !== null && at !== Object.prototype && chain.length < MAX_CHAIN) {
    chain.push(at);
    at = Object.getPrototypeOf(at) as object | null;
  }
  return chain;
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
    const value: unknown = outcomeField(outcome, field);
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
 * values: every field this package reads wherever it lives (a getter on a prototype) short of
 * `Object.prototype` (a polluted one holds no hook's answer), then the
 * outcome's other own enumerable fields. A read field that throws (a revoked Proxy, a throwing
 * getter) makes the whole outcome unreadable, the reason kept; another field that throws is left
 * out of the copy and costs nothing else. The answer is tagged by its wrapper, never by the
 * outcome's own fields, so an outcome holding a field named `unreadable` is read like any other.
 */
export function snapshotOutcome(entry: object): OutcomeSnapshot {
  const copy: Record<string | symbol, unknown> = {};
  try {
    // A plain outcome (JSON's) has no prototypes to read from, so each field costs one look.
    const chain = ownPrototypes(entry);
    for (const field of READ_FIELDS) {
      if (Object.hasOwn(entry, field) || chain.some((proto) => Object.hasOwn(proto, field))) {
        copy[field] = (entry as HookOutcome)[field];
      }
    }
  } catch (error) {
    return { unreadable: error };
  }
  for (const key of otherKeys(entry)) {
    try {
      // Defined, not assigned: `copy.__proto__ = …` would set the copy's prototype (a JSON outcome's
      // `"__proto__": { "veto": true }` then vetoing through it) and leave the field out.
      Object.defineProperty(
        copy,
        key,
        protoless({
          value: (entry as Record<string | symbol, unknown>)[key],
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
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
  const id = outcomeField(outcome, "id");
  if (typeof id === "string" && id !== "") return id;
  const name = outcomeField(outcome, "name");
  if (typeof name === "string" && name !== "") return name;
  return `hook ${place + 1}`;
}

/** The most characters of a hook's name or id a note quotes; a longer one ends in `…`. */
const NOTE_LABEL_CHARS = 60;

/**
 * `label` as a note quotes it: on one line, cut to {@link NOTE_LABEL_CHARS} with `…` (never inside
 * a character), so a hook with a megabyte of id costs a line, as a megabyte of error does.
 */
function noteName(label: string): string {
  const flat = oneLine(wellFormed(label));
  return flat.length <= NOTE_LABEL_CHARS ? flat : `${cutTo(flat, NOTE_LABEL_CHARS - 1)}…`;
}

/**
 * A hook's label for a note: its name (a display name, preferred in notes), else its id, else its
 * place, as `noteName` quotes it.
 */
export function noteLabel(outcome: HookOutcome, place: number): string {
  const name = outcomeField(outcome, "name");
  if (typeof name === "string" && name !== "") return noteName(name);
  const id = outcomeField(outcome, "id");
  if (typeof id === "string" && id !== "") return noteName(id);
  return `hook ${place + 1}`;
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

/**
 * Characters a reader may drop as drawing nothing: format characters (a zero-width space, a soft
 * hyphen, a bidirectional control: `\p{Cf}`) and the other default-ignorable ones (a combining
 * grapheme joiner, a variation selector, a Hangul filler), as a regex class body.
 */
const INVISIBLE = "\\p{Cf}\\p{Default_Ignorable_Code_Point}";

/**
 * A `<` that opens a `<context` or `</context` tag, in any case and spacing, and with invisible
 * characters ({@link INVISIBLE}) anywhere in it, which a reader that ignores them would read as the
 * tag. One run of spaces can be read only one way here (`G*(?:\/G*)?` rather than `G*\/?G*`, which
 * tries every split of it), and no letter of `context` is invisible: linear, where the other is
 * quadratic in a long run after a `<`.
 */
const CONTEXT_TAG = contextTag("<");

/** The same, opened by a character a reader may take for `<` (`ANGLE_LOOKALIKES`). */
const LOOKALIKE_CONTEXT_TAG = contextTag(`[${ANGLE_LOOKALIKES.join("")}]`);

/** Any look-alike at all: the text is searched for tags opened by one only where it holds one. */
const ANY_LOOKALIKE = new RegExp(`[${ANGLE_LOOKALIKES.join("")}]`, "u");

/** A pattern for the opener `opener` (a regex source) of a `<context` or `</context` tag. */
function contextTag(opener: string): RegExp {
  return new RegExp(
    `${opener}(?=[\\s${INVISIBLE}]*(?:\\/[\\s${INVISIBLE}]*)?${[..."context"].join(`[${INVISIBLE}]*`)})`,
    "giu",
  );
}

/**
 * A hook's text with any `<context` or `</context` tag in it disarmed, so it cannot close its block:
 * the `<` written `&lt;`, and a character a reader could take for it (`＜/context＞`, `‹context›`:
 * `ANGLE_LOOKALIKES`, as `untrusted` writes them) written as its `&#x…;` code. Two passes, the
 * second only over text that holds a look-alike: a pattern opening with a class of them scans every
 * hook's text twice as slowly as one opening with `<`.
 */
function disarm(text: string): string {
  const plain = text.replace(CONTEXT_TAG, "&lt;");
  if (!ANY_LOOKALIKE.test(plain)) return plain;
  return plain.replace(
    LOOKALIKE_CONTEXT_TAG,
    (opener) => `&#x${(opener.codePointAt(0) as number).toString(16).toUpperCase()};`,
  );
}

/**
 * The most characters that estimate at no more than `tokens` (`Math.ceil(chars / charsPerToken)`,
 * as the ledger's `estimateTokens` counts): `tokens × charsPerToken` rounded down, one less where
 * floating point rounded the product up (30 tokens at 0.7 characters each is 21 characters, which
 * the ledger counts as 31 tokens).
 */
export function charsWithin(tokens: number, charsPerToken: number): number {
  const chars = Math.floor(tokens * charsPerToken);
  if (!Number.isSafeInteger(chars)) return chars;
  // A step or two at most: the product is off by a rounding error, not by a character.
  for (let fit = chars, steps = 0; fit > 0 && steps < 64; fit--, steps++) {
    if (Math.ceil(fit / charsPerToken) <= tokens) return fit;
  }
  return 0;
}

/** How an `untrusted` fence is closed here (after the line break that ends its text), as `untrusted` closes one. */
const FENCE_CLOSE = "\n</untrusted>";

/** `word` as a lenient reader reads it: invisible characters ({@link INVISIBLE}) anywhere between its letters. */
function spelled(word: string): string {
  return [...word].join(`[${INVISIBLE}]*`);
}

/**
 * Where an `untrusted` fence opens and closes, to a reader as lenient as the one `<context` tags are
 * disarmed for: any case, spacing around the slash, invisible characters anywhere. A hook's
 * `<UNTRUSTED>` or `<un\u200btrusted>` opens a fence to that reader as surely as `untrusted`'s own does.
 */
const FENCE_OPENING = new RegExp(`<[\\s${INVISIBLE}]*${spelled("untrusted")}`, "giu");
const FENCE_CLOSING = new RegExp(
  `<[\\s${INVISIBLE}]*\\/[\\s${INVISIBLE}]*${spelled("untrusted")}[\\s${INVISIBLE}]*>`,
  "giu",
);

/** Where the last match of `pattern` (a global one) starts in `text`; -1 when none does. */
function lastMatch(text: string, pattern: RegExp): number {
  let at = -1;
  for (const match of text.matchAll(pattern)) at = match.index;
  return at;
}

/** Where the last `untrusted` fence of `text` opens when it is not closed after it; -1 when none is open. */
function openFence(text: string): number {
  const at = lastMatch(text, FENCE_OPENING);
  return at > lastMatch(text, FENCE_CLOSING) ? at : -1;
}

/** What may be the start of an escape (`&lt;`, `&amp;`, `&#x1F600;`) at the end of a cut. */
const PARTIAL_ESCAPE = /&#?[0-9A-Za-z]{0,8}$/;

/**
 * `text` cut to at most `chars` characters (see `cutTo`), and before an escape the cut would leave
 * unfinished: one the text goes on to end with `;` (`R&D` cut after its `D` is no escape, and stays).
 */
function cutWhole(text: string, chars: number): string {
  const body = cutTo(text, chars);
  const partial = PARTIAL_ESCAPE.exec(body);
  // Read as one with what the text goes on with: a cut right after the `&` of `&#xD800;` leaves
  // `&`, and the `#` is the rest's.
  const ending = partial === null ? "" : partial[0] + text.slice(body.length, body.length + 10);
  if (partial === null || !/^&#?[0-9A-Za-z]{1,8};/.test(ending)) return body;
  return body.slice(0, partial.index);
}

/**
 * `text` cut to at most `limit` characters, the cut mark included, or `""` where nothing of it fits.
 * Never inside a character or an escape (`&lt;` is whole or gone), and never inside an `untrusted`
 * fence left open: a fence the cut falls in is closed, the mark after it, and one whose opening tag the
 * cut falls in is left out whole. A fence left open would take in everything after the block — the
 * next hook's block and the user's question — as text nobody vouched for.
 */
function cutBlock(text: string, limit: number): string {
  let body = cutWhole(text, limit - CUT_MARK.length);
  let fence = openFence(body);
  if (fence === -1) return body.trim() === "" ? "" : body + CUT_MARK;
  body = cutWhole(text, limit - CUT_MARK.length - FENCE_CLOSE.length);
  fence = openFence(body);
  if (fence !== -1 && body.indexOf(">", fence) === -1) {
    // The opening tag itself was cut: the fence goes whole, the text before it stays.
    body = body.slice(0, fence).trimEnd();
    fence = openFence(body);
  }
  if (fence === -1) return body.trim() === "" ? "" : body + CUT_MARK;
  return closeFence(body) + CUT_MARK;
}

/** `body`, whose last `untrusted` fence is open, with the fence closed (a closing tag it ends halfway into finished). */
function closeFence(body: string): string {
  // Inside a fence every < is written &lt;, so a < near the end is the closing tag, cut.
  for (let part = FENCE_CLOSE.length - 1; part > 0; part--) {
    if (body.endsWith(FENCE_CLOSE.slice(0, part))) return body.slice(0, body.length - part) + FENCE_CLOSE;
  }
  return body + FENCE_CLOSE;
}

/**
 * A hook's whole text with no `untrusted` fence left open at its end: one it opens and never closes
 * is closed there (as a cut closes one), and an opening tag it never finishes (`<untrusted` with no
 * `>` after it) has its `<` written `&lt;`, since the block's own `</context>` would otherwise finish
 * that tag and leave the fence open. Either way the fence would otherwise take in the blocks and the
 * question after it as text nobody vouched for. `text` itself where no fence is left open.
 */
function sealFences(text: string): string {
  let fence = openFence(text);
  if (fence === -1) return text;
  if (text.indexOf(">", fence) === -1) {
    text = `${text.slice(0, fence)}&lt;${text.slice(fence + 1)}`;
    fence = openFence(text);
    if (fence === -1) return text;
  }
  return closeFence(text);
}

/**
 * The markdown code fence `body` leaves open at its end (its marker: three or more backticks or
 * tildes, as the opening line wrote them), or undefined. Read as CommonMark reads fences: a line of
 * up to three spaces, then the marker (a backtick one with no backtick after it); closed by a line
 * of the same character, at least as long, and nothing but spaces after it.
 */
function openCodeFence(body: string): string | undefined {
  let open: string | undefined;
  for (const line of body.split("\n")) {
    const match = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line.endsWith("\r") ? line.slice(0, -1) : line);
    if (match === null) continue;
    const marker = match[1] as string;
    const rest = match[2] as string;
    if (open === undefined) {
      if (marker[0] === "`" && rest.includes("`")) continue;
      open = marker;
    } else if (marker[0] === open[0] && marker.length >= open.length && rest.trim() === "") {
      open = undefined;
    }
  }
  return open;
}

/**
 * `body` with a markdown code fence it leaves open closed at its end, within `limit` characters:
 * `cut(room)` cuts the hook's text again to leave room for the closing line. Left open, the fence
 * takes in the block's own `</context>`, the next hook's block and the user's question as code (a
 * `git diff` or a log cut at the budget, a hook that forgot its closing fence). Undefined where the
 * closing line does not fit.
 */
function closeCodeFence(
  body: string,
  limit: number,
  cut: (room: number) => string,
): { body: string; recut: boolean } | undefined {
  let fence = openCodeFence(body);
  if (fence === undefined) return { body, recut: false };
  if (body.length + 1 + fence.length <= limit) return { body: `${body}\n${fence}`, recut: false };
  // Cut again to leave room for the closing line; a shorter text may leave another fence open
  // (a longer marker), so again while that one does not fit either.
  for (let room = limit - 1 - fence.length; room > 0; room = limit - 1 - fence.length) {
    body = cut(room);
    if (body === "") return undefined;
    const left = openCodeFence(body);
    if (left === undefined) return { body, recut: true };
    if (body.length + 1 + left.length <= limit) return { body: `${body}\n${left}`, recut: true };
    if (left.length <= fence.length) return undefined;
    fence = left;
  }
  return undefined;
}

/**
 * A hook's own `maxTokens` as read: a whole number above 0. `0`, `null` and none are no limit of its
 * own (what JSON writes for "no value"); anything else (`NaN`, `-1`, `1.5`, `"10"`, `Infinity`) is
 * read as left out too, and `note` is told so, naming the hook and the field.
 */
function ownLimit(value: unknown, label: string, note: (text: string) => void): number | undefined {
  if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  if (value !== undefined && value !== null && value !== 0) {
    note(
      `Hook ${label}'s maxTokens was ${describe(value)}, not a whole number of tokens above 0; it was read as left out.`,
    );
  }
  return undefined;
}

/**
 * The outcomes' context as `<context hook="id">` blocks, in order (failed ones skipped), held to `maxTokens` in all and
 * each to its own `maxTokens`. Sizes are characters over `charsPerToken`, the way the ledger's
 * `estimateTokens` counts, so `estimateTokens(result) <= maxTokens` always holds; a block that does
 * not fit is cut (ending in " […]") or left out, and `onNote` is told which: the first
 * `MAX_HOOK_NOTES` (40) such notes, then one saying how many more there were. A cut falls between
 * characters and escapes, and closes an `untrusted` fence it falls in, the mark after it (see `cutBlock`).
 */
export function assembleBlocks(
  outcomes: readonly HookOutcome[],
  maxTokens: number,
  given?: AssembleOptions | null,
): string {
  // Each option read once; options that throw when read (a getter, a revoked Proxy) are none given.
  let givenRatio: unknown;
  let onNote: unknown;
  try {
    // Own fields only: an `onNote` or `charsPerToken` on a polluted Object.prototype is no caller's.
    const own = given ?? undefined;
    givenRatio = own !== undefined && Object.hasOwn(own, "charsPerToken") ? own.charsPerToken : undefined;
    onNote = own !== undefined && Object.hasOwn(own, "onNote") ? own.onNote : undefined;
  } catch {
    givenRatio = undefined;
    onNote = undefined;
  }
  const sink = new NoteSink((text) => {
    if (typeof onNote === "function") onNote(text);
  });
  const text = assembleInto(outcomes, maxTokens, ratioOf(givenRatio), sink);
  sink.finish();
  return text;
}

/** The characters per token a call sizes blocks by: `given` where it is a number above zero, else the default. */
export function ratioOf(given: unknown): number {
  return positive(given) ? given : DEFAULT_CHARS_PER_TOKEN;
}

/**
 * {@link assembleBlocks} with its options read: each note about a hook goes to `notes`, the caller's
 * sink, which the caller finishes (so `gather` holds the notes of the runners' answers and of the
 * blocks to one cap).
 */
export function assembleInto(
  outcomes: readonly HookOutcome[],
  maxTokens: number,
  charsPerToken: number,
  notes: NoteSink,
): string {
  const note = (text: string): void => notes.push(text);
  const budget = charsWithin(maxTokens, charsPerToken);
  let out = "";
  const add = (entry: unknown, place: number): void => {
    const outcome = readable(entry);
    if (outcome === undefined) {
      if (typeof entry === "object" && entry !== null) {
        note(`Hook ${place + 1}'s outcome could not be read (it threw when read); it was left out.`);
      }
      return;
    }
    const context = outcomeField(outcome, "context");
    if (typeof context !== "string" || failed(outcome)) return;
    const text = disarm(wellFormed(context.trim()));
    if (text === "") return;
    const open = `<context hook="${attribute(hookLabel(outcome, place))}">\n`;
    const label = noteLabel(outcome, place);
    const close = "\n</context>";
    const separator = out === "" ? "" : "\n\n";
    const own = ownLimit(outcomeField(outcome, "maxTokens"), label, note);
    const ownChars = own === undefined ? Number.POSITIVE_INFINITY : charsWithin(own, charsPerToken);
    const room = budget - out.length - separator.length - open.length - close.length;
    const limit = Math.min(ownChars, room);
    const whole = sealFences(text);
    const cut = (room: number) => cutBlock(text, room);
    // A code fence left open is closed too, within the limit (the text cut again to make room).
    const first = whole.length > limit ? cut(limit) : whole;
    const closed = first === "" ? undefined : closeCodeFence(first, limit, cut);
    const why = limit === ownChars ? `its own limit of ${tokens(own)}` : `the ${maxTokens}-token hook budget`;
    if (closed === undefined) {
      note(`Hook ${label}'s context was left out: ${why} had no room for it.`);
      return;
    }
    const body = closed.body;
    if (first !== whole || closed.recut) {
      note(`Hook ${label}'s context was cut from ${text.length} to ${body.length} characters to fit ${why}.`);
    } else {
      if (whole !== text) {
        note(`Hook ${label}'s context left an untrusted fence open; it was closed at the end of its block.`);
      }
      if (body !== whole) {
        note(`Hook ${label}'s context left a code fence open; it was closed at the end of its block.`);
      }
    }
    out += separator + open + body + close;
  };
  // By the places the list holds (a sparse list of length 2^32 - 1 costs what its entries do, not
  // minutes of holes), each read on its own: an entry that throws when read is left out with a note.
  let held: readonly number[] | undefined;
  let length = 0;
  try {
    length = outcomes.length;
    held = heldPlaces(outcomes, length);
  } catch {
    notes.always("The outcomes could not be read (the list threw when read); they were left out.");
    return out;
  }
  const count = held === undefined ? length : held.length;
  for (let at = 0; at < count; at++) {
    const place = held === undefined ? at : (held[at] as number);
    let entry: unknown;
    try {
      entry = outcomes[place];
    } catch {
      note(`Hook ${place + 1}'s outcome could not be read (it threw when read); it was left out.`);
      continue;
    }
    add(entry, place);
  }
  return out;
}

/** A canonical array index, as `Object.keys` writes one. */
const INDEX = /^(?:0|[1-9][0-9]*)$/;

/**
 * The places a sparse `list` holds, in order, or `undefined` for a list with no holes (walk it by
 * index). Reads the list's own keys once; throws what the list throws.
 */
export function heldPlaces(list: readonly unknown[], length: number): number[] | undefined {
  const keys = Object.keys(list);
  const held: number[] = [];
  for (const key of keys) {
    if (!INDEX.test(key)) continue;
    const at = Number(key);
    if (at < length) held.push(at);
  }
  return held.length >= length ? undefined : held;
}
