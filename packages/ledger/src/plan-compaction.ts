import { checkMessages, checkNumber, describe, LedgerError, readSettings, setting } from "./errors.js";
import type { MessageEstimate } from "./ledger.js";
import { contentText, isSystem, type MessageLike, messageEstimate } from "./messages.js";
import { checkedCharsPerToken } from "./tokens.js";

/**
 * The first line of the system message a fold's summary is written as. `planCompaction` reads an
 * earlier summary back from the leading system message that starts with it.
 */
export const SUMMARY_LEAD = "[Summary of the earlier part of this conversation, folded to save room]";

/** Where compaction starts, as a share of the window `used` has to be past. */
const FIRE_AT = 0.75;

/** Options for {@link planCompaction}. */
export interface PlanCompactionOptions {
  /** The context window, in tokens. Required, above zero. */
  limit: number;
  /**
   * The tokens the request is using: the last prompt reported. Absent, or under 1 (what a turn's
   * usage reads where the server counted nothing), means not reported: the estimate is used.
   */
  used?: number | undefined;
  /** The most of the window the kept tail may fill. 0.35 unless given. */
  keepRatio?: number | undefined;
  /** The share of the window the whole request should come down to; absent for no target. */
  target?: number | undefined;
  /** The summary's ceiling, counted against `target`. 1024 unless given. */
  summaryTokens?: number | undefined;
  /** The index folding starts at. Absent: after the leading system messages. */
  from?: number | undefined;
  /** The earlier summary to continue. Absent: read from a leading `SUMMARY_LEAD` message. */
  previous?: string | undefined;
  /** Characters per token for the default estimate: 4 unless given, 0.01 or more. */
  charsPerToken?: number | undefined;
  /**
   * How much a message costs, a finite number of tokens 0 or more (anything else throws);
   * `estimateFrom(ledger, messages)` measures it. Default: its characters over `charsPerToken`.
   */
  estimate?: MessageEstimate | undefined;
}

/** The fields of {@link PlanCompactionOptions}. */
const OPTION_FIELDS = [
  "limit",
  "used",
  "keepRatio",
  "target",
  "summaryTokens",
  "from",
  "previous",
  "charsPerToken",
  "estimate",
];

/** Where to fold: `messages.slice(from, through)` goes into a summary, from `through` on is kept. */
export interface CompactionPlan {
  /** The first folded index. */
  from: number;
  /** The first kept index, always a user message. */
  through: number;
  /** The earlier summary the new one continues, where there is one. */
  previous?: string | undefined;
  /** The window the plan was made for. */
  limit: number;
  /** The tokens in use when it was made. */
  used: number;
  /** The estimated tokens folded. */
  folded: number;
  /** The estimated tokens of the kept tail. */
  kept: number;
  /** What the request comes to after the fold: `used` less `folded` plus the summary's ceiling. */
  after: number;
  /** The summary's ceiling counted in `after`. */
  summaryTokens: number;
}

/** How many system messages lead the transcript. */
function leadingCount(messages: readonly MessageLike[]): number {
  let count = 0;
  while (count < messages.length && isSystem(messages[count] as MessageLike)) count++;
  return count;
}

/** The leading system messages, and the earlier summary among them where there is one. */
function leadingSystem(messages: readonly MessageLike[]): { count: number; previous: string | undefined } {
  let count = 0;
  let previous: string | undefined;
  while (count < messages.length && isSystem(messages[count] as MessageLike)) {
    const text = contentText(setting(messages[count], "content") as MessageLike["content"]);
    if (text.startsWith(SUMMARY_LEAD)) previous = text.slice(SUMMARY_LEAD.length).trim();
    count++;
  }
  // `previous` always set: left out, it would read as one a polluted Object.prototype holds.
  return { count, previous };
}

/**
 * For each index, whether a cut there would split a call from its answer: some tool message at or
 * after it answers a call made before it. A tool message answers the call with its `tool_call_id`,
 * or — without one, or with one no call made — the latest assistant message with tool calls before
 * it. Linear.
 */
export function splitsAGroup(messages: readonly MessageLike[]): Uint8Array {
  const n = messages.length;
  const open = new Int32Array(n + 2);
  const callAt = new Map<string, number>();
  let lastCaller = -1;
  for (let j = 0; j < n; j++) {
    // Each field the message's own (or its class's), never a polluted Object.prototype's: an
    // inherited `tool_calls` made every message a caller, so no tool message answered a call and a
    // cut could fall between a call and its answer.
    const message = messages[j] as MessageLike;
    const calls = setting(message, "tool_calls");
    if (Array.isArray(calls) && calls.length > 0) {
      lastCaller = j;
      for (const call of calls as readonly unknown[]) {
        const id = setting(call, "id");
        if (typeof id === "string") callAt.set(id, j);
      }
    } else if (setting(message, "role") === "tool") {
      const id = setting(message, "tool_call_id");
      const i = (typeof id === "string" ? callAt.get(id) : undefined) ?? lastCaller;
      if (i >= 0 && i < j) {
        (open[i + 1] as number)++;
        (open[j + 1] as number)--;
      }
    }
  }
  const blocked = new Uint8Array(n);
  let depth = 0;
  for (let c = 0; c < n; c++) {
    depth += open[c] as number;
    blocked[c] = depth > 0 ? 1 : 0;
  }
  return blocked;
}

/**
 * Says where to fold the oldest stretch of a transcript into a summary, or `undefined` when it is
 * not time or there is nothing to fold.
 *
 * Fires once `used` (or, absent or 0 — not reported — the estimate of every message) is past three
 * quarters of `limit`.
 * The cut is the earliest user message after `from` whose kept tail fills at most `keepRatio` of the
 * window, so a transcript never resumes mid-exchange (nor on a user message that sits between a tool
 * call and its answer); the leading system messages are never folded
 * (a `from` given inside them moves past them), and an earlier summary is continued (`previous`).
 * Given a `target`, the cut also has to bring `used`, less what is folded, plus `summaryTokens`, to
 * `target` of the window or under; where no user message does, the plan folds as far as the last
 * user message and `after` says how far short it fell. Without a `target`, where no kept tail fits
 * `keepRatio` (every message huge) and `used` has reached `limit` (the request does not fit at all),
 * the plan folds as far as the last user message too, when that folds more than `summaryTokens`. One long tool run under a single question has no cut, so no plan: pruning is what keeps
 * that going. Linear in the transcript. Throws `LedgerError` for a malformed transcript, an option
 * out of range, or an `estimate` that answers anything but a finite number of tokens, 0 or more.
 */
export function planCompaction(
  messages: readonly MessageLike[],
  given: PlanCompactionOptions,
): CompactionPlan | undefined {
  checkMessages(messages, "planCompaction");
  if (typeof given !== "object" || given === null) {
    throw new LedgerError(
      "invalid-option",
      "planCompaction needs options with at least { limit }, the window in tokens.",
    );
  }
  const where = "planCompaction";
  // Read once, and never from a polluted Object.prototype: an inherited `previous` put its text into
  // every plan, and so into every summary.
  const options = readSettings(given, OPTION_FIELDS, "planCompaction: the options");
  const limit = checkNumber(options.limit, "limit", where, { exclusiveMin: true });
  const keepRatio = checkNumber(options.keepRatio ?? 0.35, "keepRatio", where, {
    exclusiveMin: true,
    max: 1,
  });
  const target =
    options.target === undefined
      ? undefined
      : checkNumber(options.target, "target", where, { exclusiveMin: true, max: 1 });
  const summaryTokens = checkNumber(options.summaryTokens ?? 1024, "summaryTokens", where);
  const perToken = checkedCharsPerToken(options.charsPerToken, where);
  if (options.estimate !== undefined && typeof options.estimate !== "function") {
    throw new LedgerError(
      "invalid-option",
      "planCompaction: estimate must be a function (message, index) => tokens.",
    );
  }
  const estimate: MessageEstimate = options.estimate ?? ((message) => messageEstimate(message, perToken));
  // The summary to continue is text: a number or an object went into the plan and on to the
  // summariser's prompt. `null` (a plan option stored as a row) is none.
  const givenPrevious = options.previous ?? undefined;
  if (givenPrevious !== undefined && typeof givenPrevious !== "string") {
    throw new LedgerError(
      "invalid-option",
      `planCompaction: previous must be the earlier summary as text, or left out, and was ${describe(givenPrevious)}.`,
    );
  }

  const lead =
    options.from === undefined || givenPrevious === undefined ? leadingSystem(messages) : undefined;
  // A `from` the host gives is where its last fold ended; the leading system messages are never
  // folded whatever it says, so a `from` inside them moves past them.
  const from =
    options.from === undefined
      ? (lead?.count ?? 0)
      : Math.max(
          checkNumber(options.from, "from", where, { integer: true, max: messages.length }),
          lead?.count ?? leadingCount(messages),
        );
  // A summary already in the array is continued whether or not `from` was given: `applyCompaction`
  // drops it for the new one, so not reading it here would lose its notes.
  const previous = givenPrevious ?? lead?.previous;

  // suffix[i]: the estimated tokens of messages[i..].
  const n = messages.length;
  const suffix = new Float64Array(n + 1);
  for (let i = n - 1; i >= 0; i--) {
    const cost: unknown = estimate(messages[i] as MessageLike, i);
    // Read as 0, a NaN from a broken estimator made every message free and the plan never fired;
    // past 2^53 - 1 (1e308), the sums reached Infinity and the plan's counts NaN.
    if (typeof cost !== "number" || !(cost >= 0 && cost <= Number.MAX_SAFE_INTEGER)) {
      throw new LedgerError(
        "invalid-option",
        `planCompaction: estimate answered ${describe(cost)} for message ${i}; it must answer a number of tokens from 0 to 2^53 - 1.`,
      );
    }
    suffix[i] = (suffix[i + 1] as number) + cost;
  }
  // Under one token is no report (a turn's usage.prompt is 0 where the server sent none), the way
  // contextTokens and recordRequest read it: estimated, never taken for an empty window.
  const reported = options.used === undefined ? 0 : checkNumber(options.used, "used", where);
  const used = reported >= 1 ? reported : (suffix[0] as number);
  if (!(used > FIRE_AT * limit)) return undefined;

  const keepBudget = keepRatio * limit;
  const targetTokens = target === undefined ? undefined : target * limit;
  let keepCut: number | undefined;
  let targetCut: number | undefined;
  let lastUser: number | undefined;
  // A user message between a call and its answer (a host that delivers an interjection mid-run) is
  // no cut: the kept part would open on a tool result whose call was folded away.
  const blocked = splitsAGroup(messages);
  for (let c = from + 1; c < n; c++) {
    if (setting(messages[c], "role") !== "user" || blocked[c] === 1) continue;
    lastUser = c;
    if (keepCut === undefined && (suffix[c] as number) <= keepBudget) keepCut = c;
    if (targetTokens !== undefined && targetCut === undefined) {
      const folded = (suffix[from] as number) - (suffix[c] as number);
      if (used - folded + summaryTokens <= targetTokens) targetCut = c;
    }
  }
  if (lastUser === undefined) return undefined;
  let through: number;
  if (targetTokens === undefined) {
    if (keepCut !== undefined) through = keepCut;
    else {
      // No kept tail fits keepRatio (the last question, or what followed it, is huge). While the
      // request still fits the window that is no plan, as the keepRatio rule says; once it does not
      // (`used` at or past `limit`), the request is refused as it stands, so fold as far as the last
      // question where that saves more than the summary costs. Without this the run went on to a
      // request the server refused before a forced fold brought it down.
      const folded = (suffix[from] as number) - (suffix[lastUser] as number);
      if (used < limit || !(folded > summaryTokens)) return undefined;
      through = lastUser;
    }
  } else {
    through = Math.max(keepCut ?? lastUser, targetCut ?? lastUser);
  }
  const folded = (suffix[from] as number) - (suffix[through] as number);
  const kept = suffix[through] as number;
  return {
    from,
    through,
    ...(previous !== undefined ? { previous } : {}),
    limit,
    used,
    folded,
    kept,
    after: used - folded + summaryTokens,
    summaryTokens,
  };
}
