import { MAX_READING } from "./calibration.js";
import { checkMessages, describe, LedgerError, readSettings, setting } from "./errors.js";
import {
  canonicalJson,
  imageTokens,
  type MessageLike,
  messageChars,
  messageEstimate,
  messageJson,
  sameMessage,
  toolsChars,
} from "./messages.js";
import { checkedCharsPerToken, type EstimateOptions } from "./tokens.js";

/**
 * One request's entry: the index of its last message, the prompt tokens the endpoint reported for
 * it, and an epoch that changes whenever a request did more than append to the one before.
 */
export interface LedgerEntry {
  through: number;
  prompt: number;
  epoch: number;
}

/** A request as `recordRequest` compares it: the messages and tools it sent. */
export interface LedgerRequest {
  messages: readonly MessageLike[];
  tools?: readonly unknown[] | null | undefined;
}

/** The request being recorded, with what its endpoint reported. */
export interface RecordedLedgerRequest extends LedgerRequest {
  /**
   * Prompt tokens the endpoint reported; absent, `undefined` or zero where it reported none (the
   * request is then not recorded), so `completion.usage?.prompt_tokens` goes in as it is.
   */
  prompt?: number | undefined;
  /** Cached prompt tokens it reported, where it did (`undefined` where it did not). */
  cached?: number | undefined;
}

/** Estimates one message by its index: what `estimateFrom` answers and `planCompaction` takes. */
export type MessageEstimate = (message: MessageLike, index: number) => number;

function checkLedger(ledger: unknown, where: string): asserts ledger is readonly LedgerEntry[] {
  const fail = (detail: string): never => {
    throw new LedgerError(
      "invalid-ledger",
      `${where} needs a ledger: an array of { through, prompt, epoch } entries (the one the loop hands back, or []); ${detail}.`,
    );
  };
  if (!Array.isArray(ledger)) fail(`it was given ${describe(ledger)}`);
  // Index by index, a hole included: `forEach` passes over holes, so a ledger rebuilt by index
  // (`ledger[row] = entry`) with a row missing was taken, and its hole read as an entry later, a
  // TypeError (r101b). Refused at the first hole, so a list whose length is far past its entries
  // (`[]` with `[1e9]` set) costs a step, not a walk of its length.
  const list = ledger as unknown[];
  for (let i = 0; i < list.length; i++) {
    // Its own fields (or its class's): an entry whose fields only a polluted Object.prototype holds
    // (`{}` with Object.prototype.through = 0) is none.
    let entry: unknown;
    let e: Partial<LedgerEntry> | null = null;
    try {
      // Its own index: a hole a polluted Array.prototype fills is still a hole.
      if (!Object.hasOwn(list, i)) fail(`entry ${i} is missing (a hole in the array)`);
      entry = list[i];
      e = entry as Partial<LedgerEntry> | null;
      if (typeof entry === "object" && entry !== null) {
        e = {
          through: setting(entry, "through"),
          prompt: setting(entry, "prompt"),
          epoch: setting(entry, "epoch"),
        } as Partial<LedgerEntry>;
      }
    } catch (cause) {
      if (LedgerError.isInstance(cause)) throw cause;
      fail(`entry ${i} could not be read (it threw when read)`);
    }
    if (
      typeof e !== "object" ||
      e === null ||
      !Number.isInteger(e.through) ||
      (e.through as number) < 0 ||
      typeof e.prompt !== "number" ||
      !Number.isFinite(e.prompt) ||
      Math.abs(e.prompt) > Number.MAX_SAFE_INTEGER ||
      !Number.isSafeInteger(e.epoch)
    ) {
      fail(
        `entry ${i} is not one (through a whole number 0 or more, prompt a number within ±(2^53 - 1), epoch a whole number from -(2^53 - 1) to 2^53 - 1)`,
      );
    }
  }
}

const sameTools = (a: LedgerRequest["tools"], b: LedgerRequest["tools"]): boolean => {
  const empty = (t: LedgerRequest["tools"]) => !Array.isArray(t) || t.length === 0;
  if (empty(a) && empty(b)) return true;
  if (a === b) return true;
  try {
    // Keys in any order: tools read back from a store that sorts them are the same tools.
    return canonicalJson(a ?? []) === canonicalJson(b ?? []);
  } catch (cause) {
    throw new LedgerError("invalid-messages", "recordRequest: the tools could not be read as JSON.", {
      cause,
    });
  }
};

function onlyAppended(previous: LedgerRequest, next: LedgerRequest): boolean {
  if (next.messages.length < previous.messages.length) return false;
  if (!sameTools(previous.tools, next.tools)) return false;
  for (let i = 0; i < previous.messages.length; i++) {
    if (!sameMessage(previous.messages[i], next.messages[i])) return false;
  }
  return true;
}

/**
 * Hands out epochs no entry of `ledger` has: counting up from the one above the highest, or, for a
 * ledger whose epochs reach so near 2^53 that counting up would leave the whole numbers a double
 * holds exactly (where `epoch + 1` is `epoch` again), the lowest ones from 0 that it does not use.
 */
function epochSource(ledger: readonly LedgerEntry[]): () => number {
  let next = ledger.reduce((max, entry) => Math.max(max, entry.epoch + 1), 0);
  if (next + ledger.length <= Number.MAX_SAFE_INTEGER) return () => next++;
  const taken = new Set(ledger.map((entry) => entry.epoch));
  next = 0;
  return () => {
    while (taken.has(next)) next++;
    taken.add(next);
    return next;
  };
}

const nextEpoch = (ledger: readonly LedgerEntry[]): number => epochSource(ledger)();

/** The characters of a request's text: its messages' (media not counted) and its tools' JSON. */
function bodyChars(request: LedgerRequest): number {
  let chars = toolsChars(request.tools);
  for (const message of request.messages) chars += messageChars(message);
  return chars;
}

/**
 * Adds a request to a ledger, returning a new ledger (the one given is not changed).
 *
 * `previous` is the request the ledger's last entry was recorded from (`undefined` for the first).
 * The new entry stays in the last entry's epoch when `next` only appended to `previous` — the same
 * tools, every earlier message unchanged (the same object, or the same JSON with keys in any order and
 * a null field read as absent, as a row store hands it back) — and starts a new epoch otherwise. Nothing is recorded
 * where the prompt was not reported (absent or zero) or is past 2^53 - 1, or where it is smaller than its own cache
 * count, which is how a server counting prompts net of the cache would show, or fewer tokens than the
 * body's text over 8 (more characters a token than `calibrate` believes: no count of this body). A prompt that did not
 * grow over the last entry's, or a request that did not grow the transcript, is recorded in a new
 * epoch, so the difference is never used. Throws `LedgerError` for a malformed ledger or messages.
 */
export function recordRequest(
  ledger: readonly LedgerEntry[],
  givenPrevious: LedgerRequest | undefined,
  givenNext: RecordedLedgerRequest,
): LedgerEntry[] {
  let previous = givenPrevious;
  let next = givenNext;
  checkLedger(ledger, "recordRequest");
  // Each field read once, and never from a polluted Object.prototype: an inherited `prompt` recorded
  // a count no endpoint reported, an inherited `cached` above it recorded nothing ever again.
  const REQUEST_FIELDS = ["messages", "tools", "prompt", "cached"];
  if (typeof givenNext === "object" && givenNext !== null) {
    next = readSettings(givenNext, REQUEST_FIELDS, "recordRequest: next");
  }
  if (typeof givenPrevious === "object" && givenPrevious !== null) {
    previous = readSettings(givenPrevious, REQUEST_FIELDS, "recordRequest: previous");
  }
  checkMessages(next?.messages, "recordRequest", "next.messages");
  if (previous !== undefined) checkMessages(previous?.messages, "recordRequest", "previous.messages");
  const prompt = next.prompt;
  // A count past 2^53 is no count a server made; taken, it would make the ledger one checkLedger refuses.
  if (typeof prompt !== "number" || !(prompt > 0 && prompt <= Number.MAX_SAFE_INTEGER)) return [...ledger];
  if (typeof next.cached === "number" && next.cached > prompt) return [...ledger];
  if (next.messages.length === 0) return [...ledger];
  // Fewer tokens than the body's text over MAX_READING (more characters a token than any reading
  // `calibrate` believes) is no count of this body: a broken counter, or a server reporting prompts
  // net of its cache once most of it was cached. Recorded, the next honest reading was paired with
  // it, and the group between them charged with nearly the whole prompt: a 400-character answer cost
  // 3,101 tokens, and a plan folded more than `used`, its `after` below zero.
  let chars: number;
  try {
    chars = bodyChars(next);
  } catch (cause) {
    throw new LedgerError("invalid-messages", "recordRequest: the request could not be read as JSON.", {
      cause,
    });
  }
  if (prompt < chars / MAX_READING) return [...ledger];
  const through = next.messages.length - 1;
  const last = ledger[ledger.length - 1];
  const continues =
    last !== undefined &&
    previous !== undefined &&
    onlyAppended(previous, next) &&
    through > last.through &&
    prompt > last.prompt;
  return [...ledger, { through, prompt, epoch: continues ? last.epoch : nextEpoch(ledger) }];
}

/**
 * The cost of each message, measured where the ledger covers it and estimated where it does not.
 * A group is the messages between two consecutive entries of one epoch; it costs the difference
 * of their prompts, shared among its messages by characters.
 */
function messageCosts(
  ledger: readonly LedgerEntry[],
  messages: readonly MessageLike[],
  perToken: number,
): number[] {
  const n = messages.length;
  // A message's weight in a measured group: its characters, and its images as the characters their
  // estimate comes to, so a screenshot's share of a group is not nothing.
  const chars: number[] = [];
  const costs: number[] = [];
  for (const message of messages) {
    const text = messageChars(message);
    const images = imageTokens(message);
    chars.push(text + images * perToken);
    costs.push(Math.ceil(text / perToken) + images);
  }
  // before[i]: the characters of messages[0..i), so a group's characters are one subtraction.
  const before = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) before[i + 1] = (before[i] as number) + (chars[i] as number);
  // Where groups overlap (a ledger whose entries of one epoch go back and forth, read back from a
  // damaged store or made by hand) the later group's share stands. Walked from the last group with
  // each message given its share once, `next` skipping those already given one, so such a ledger
  // costs a walk of the messages, not one per entry.
  const next = new Int32Array(n + 1);
  for (let i = 0; i <= n; i++) next[i] = i;
  const open = (index: number): number => {
    let root = index;
    while (next[root] !== root) root = next[root] as number;
    for (let at = index; next[at] !== root; ) {
      const up = next[at] as number;
      next[at] = root;
      at = up;
    }
    return root;
  };
  for (let k = ledger.length - 1; k >= 1; k--) {
    const a = ledger[k - 1] as LedgerEntry;
    const b = ledger[k] as LedgerEntry;
    if (a.epoch !== b.epoch || b.through <= a.through || b.through >= n) continue;
    const difference = b.prompt - a.prompt;
    // Zero or less is how a server reporting prompts net of its cache shows up: not trusted.
    if (!(difference > 0)) continue;
    const group = (before[b.through + 1] as number) - (before[a.through + 1] as number);
    const size = b.through - a.through;
    for (let i = open(a.through + 1); i <= b.through; i = open(i + 1)) {
      costs[i] = group > 0 ? (difference * (chars[i] as number)) / group : difference / size;
      next[i] = i + 1;
    }
  }
  return costs;
}

function perTokenOf(options: EstimateOptions | undefined, where: string): number {
  // Never one a polluted Object.prototype holds.
  let given: unknown;
  try {
    given = setting(options, "charsPerToken");
  } catch (cause) {
    throw new LedgerError("invalid-option", `${where}: the options could not be read (it threw when read).`, {
      cause,
    });
  }
  return checkedCharsPerToken(given, where);
}

/**
 * The cost of `messages.slice(from, to)` in tokens, read off the ledger where it can be.
 *
 * Between two boundaries recorded in one epoch it is the difference of their reported prompts, and
 * exact — the chat template's tokens and the tool results' real density included. A stretch that
 * starts or ends inside a group gets that group's cost by character share. Whatever no pair of
 * entries covers (the messages before an epoch's first entry, what has not been sent yet) is
 * estimated with `charsPerToken`. Rounded to a whole number. Linear in the messages and the ledger,
 * whatever the ledger holds (where groups overlap, in one read back from a damaged store, the later
 * stands). Throws `LedgerError` for a malformed ledger or messages, or a range outside the transcript.
 */
export function tokensBetween(
  ledger: readonly LedgerEntry[],
  from: number,
  to: number,
  messages: readonly MessageLike[],
  options?: EstimateOptions,
): number {
  checkLedger(ledger, "tokensBetween");
  checkMessages(messages, "tokensBetween");
  if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || to > messages.length) {
    throw new LedgerError(
      "invalid-range",
      `tokensBetween: from and to must be whole numbers with 0 <= from <= to <= ${messages.length} (the transcript's length), and were ${describe(from)} and ${describe(to)}.`,
    );
  }
  const costs = messageCosts(ledger, messages, perTokenOf(options, "tokensBetween"));
  let total = 0;
  for (let i = from; i < to; i++) total += costs[i] as number;
  return Math.round(total);
}

/**
 * `tokensBetween` one message at a time: a function from a message's index to its cost — its share
 * of a measured group where the ledger covers it, its estimate otherwise. This is the function
 * `planCompaction` takes as `estimate`. The costs are worked out once, here. A message at its index
 * (the same object, or an equal one read back from storage: keys in any order, a null field as an
 * absent one) gets its measured cost; an index
 * outside `messages`, or a message that changed since (a pruned result), is estimated from the
 * message passed with it.
 */
export function estimateFrom(
  ledger: readonly LedgerEntry[],
  messages: readonly MessageLike[],
  options?: EstimateOptions,
): MessageEstimate {
  checkLedger(ledger, "estimateFrom");
  checkMessages(messages, "estimateFrom");
  const perToken = perTokenOf(options, "estimateFrom");
  const costs = messageCosts(ledger, messages, perToken);
  // The same message object, or the same message read back (a transcript stored as rows and
  // re-read is equal, not identical): either is the one the ledger measured.
  return (message, index) =>
    Number.isInteger(index) && index >= 0 && index < costs.length && sameMessage(messages[index], message)
      ? (costs[index] as number)
      : messageEstimate(message, perToken);
}

/** For each index of `before`, where the same message sits in `after` (in order), or -1. */
function mapIndexes(before: readonly MessageLike[], after: readonly MessageLike[]): number[] {
  const byObject = new Map<MessageLike, number[]>();
  after.forEach((message, index) => {
    const list = byObject.get(message) ?? [];
    list.push(index);
    byObject.set(message, list);
  });
  // By JSON only once a message is not found as itself (a transcript read back from storage): a
  // loop's rewrite keeps the objects, and writing every message out would be most of the work.
  let byJson: Map<string, number[]> | undefined;
  const sameJson = (message: MessageLike): number[] | undefined => {
    if (!byJson) {
      byJson = new Map();
      after.forEach((other, index) => {
        const key = messageJson(other);
        const same = (byJson as Map<string, number[]>).get(key) ?? [];
        same.push(index);
        (byJson as Map<string, number[]>).set(key, same);
      });
    }
    return byJson.get(messageJson(message));
  };
  const cursors = new Map<number[], number>();
  const firstAfter = (list: number[] | undefined, floor: number): number => {
    if (!list) return -1;
    let at = cursors.get(list) ?? 0;
    while (at < list.length && (list[at] as number) <= floor) at++;
    cursors.set(list, at);
    return at < list.length ? (list[at] as number) : -1;
  };
  const mapped: number[] = [];
  let floor = -1;
  for (const message of before) {
    let index = firstAfter(byObject.get(message), floor);
    if (index < 0) index = firstAfter(sameJson(message), floor);
    mapped.push(index);
    if (index >= 0) floor = index;
  }
  return mapped;
}

/**
 * Moves a ledger onto a rewritten transcript: each entry whose last message is still in `after`
 * (the same object, or the same JSON — keys in any order, a null field as an absent one — in
 * order) is kept at that message's new index; the others
 * are dropped. Two kept entries stay paired in one epoch only where the stretch between them
 * survived whole and in place; otherwise the later one starts a new epoch, so no difference is
 * taken across a change. Differences inside an old epoch stay exact, since the prefix they shared
 * cancels. With `after` equal to `before` the ledger comes back as it was. Returns a new ledger.
 */
export function rebaseLedger(
  ledger: readonly LedgerEntry[],
  before: readonly MessageLike[],
  after: readonly MessageLike[],
): LedgerEntry[] {
  checkLedger(ledger, "rebaseLedger");
  checkMessages(before, "rebaseLedger", "before");
  checkMessages(after, "rebaseLedger", "after");
  const mapped = mapIndexes(before, after);
  // breaks[i]: how many j in 1..i do not follow on from the message before them (mapped[j] is not
  // mapped[j - 1] + 1), so whether a stretch survived in place is one subtraction, not a walk of it.
  const breaks = new Int32Array(mapped.length);
  for (let j = 1; j < mapped.length; j++) {
    breaks[j] = (breaks[j - 1] as number) + (mapped[j] === (mapped[j - 1] as number) + 1 ? 0 : 1);
  }
  const out: LedgerEntry[] = [];
  const used = new Set<number>();
  const fresh = epochSource(ledger);
  // The previous entry of the original ledger, and what became of it.
  let prior: { entry: LedgerEntry; kept: LedgerEntry | undefined } | undefined;
  for (const entry of ledger) {
    const at = entry.through < mapped.length ? (mapped[entry.through] as number) : -1;
    if (at < 0) {
      prior = { entry, kept: undefined };
      continue;
    }
    let epoch: number | undefined;
    const p = prior;
    // Every message between the two survived unchanged and in place: each follows on from the one
    // before it, starting from the earlier entry's own (kept, so mapped to p.kept.through).
    if (
      p?.kept &&
      p.entry.epoch === entry.epoch &&
      entry.through > p.entry.through &&
      breaks[entry.through] === breaks[p.entry.through]
    ) {
      epoch = p.kept.epoch;
    }
    if (epoch === undefined) {
      epoch = used.has(entry.epoch) ? fresh() : entry.epoch;
      used.add(epoch);
    }
    const kept = { through: at, prompt: entry.prompt, epoch };
    out.push(kept);
    prior = { entry, kept };
  }
  return out;
}
