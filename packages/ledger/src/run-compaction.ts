import { checkMessages, describe, LedgerError, readSettings, setting } from "./errors.js";
import { contentText, isSystem, type KeptMessage, type MessageLike } from "./messages.js";
import { type CompactionPlan, SUMMARY_LEAD, splitsAGroup } from "./plan-compaction.js";

/** A stored fold: the summary, the stored index the kept messages start at, and when it was made (ms since the epoch). */
export interface Fold {
  summary: string;
  through: number;
  at: number;
}

/** The narrow shape of an `AbortSignal` the summariser is handed. */
export interface AbortSignalLike {
  readonly aborted: boolean;
}

/**
 * Writes the summary of a stretch of transcript: handed the folded messages and the earlier
 * summary to continue (if any), it answers the new summary. An empty or absent answer means no
 * fold. The side-task package's `summariser` makes one.
 */
export type Summarise = (
  messages: readonly MessageLike[],
  previous: string | undefined,
  signal?: AbortSignalLike,
) => Promise<string | undefined> | string | undefined;

/** What the `beforeCompact` hooks are told: what is going, by stored index. */
export interface BeforeCompactInput {
  /** The messages being folded. */
  messages: readonly MessageLike[];
  /** The first folded index. */
  from: number;
  /** The first kept index. */
  through: number;
  /** The summary being continued, if any (`undefined`: none, so a plan's `previous` forwards as it reads). */
  previous?: string | undefined;
}

/**
 * One hook's outcome as a hook runner reports it. A hook that ran and set `veto` asks for the
 * compaction not to happen; one that failed (`ok: false`, or an `error` that says something: see
 * {@link vetoedBy}) vetoes nothing.
 */
export interface HookOutcomeLike {
  /** The hook's name, for the note a veto leaves. */
  name?: string | undefined;
  /** Its id, used where it has no name. */
  id?: string | undefined;
  ok?: boolean | undefined;
  /** Why it failed: any truthy value; `""`, `false`, `0` and `null` (JSON runners' "no error") are none. */
  error?: unknown | undefined;
  veto?: boolean | undefined;
}

/**
 * Runs a host's hooks for an event and reports each hook's outcome. Structural, so the hooks
 * package's runner (or a host's own) fits without this package importing either. `Context` is
 * whatever the host hands its runner (`{ session: { id } }`, say), passed through untouched.
 */
export type CompactionHookRunner<Context = unknown> = (
  event: "beforeCompact",
  input: BeforeCompactInput,
  context: Context,
) => PromiseLike<readonly HookOutcomeLike[] | undefined> | readonly HookOutcomeLike[] | undefined;

/** The hooks a compaction tells, and whether it waits on them. */
export interface CompactionHooks<Context = unknown> {
  run: CompactionHookRunner<Context>;
  /** Handed to the runner as it is. */
  context?: Context | undefined;
  /** Told about a veto, a failed runner, or an empty summary. */
  onNote?: ((note: string) => void) | undefined;
  /**
   * Run the hooks first and wait on them, and let a veto from any hook that ran stop the fold. By
   * default the hooks run beside the summary, nobody waits, and a veto is not read.
   */
  honourVeto?: boolean | undefined;
}

/** Options for {@link runCompaction} and {@link compactTranscript}. */
export interface RunCompactionOptions<Context = unknown> {
  hooks?: CompactionHooks<Context> | undefined;
  /** The fold is needed (a request was already refused as too big): a veto is noted and not honoured. */
  forced?: boolean | undefined;
  /**
   * Handed to the summariser. Once aborted, no hook or summariser is started; an `AbortSignal`
   * firing while the honoured hooks or the summariser are awaited rejects at once (`aborted`).
   */
  signal?: AbortSignalLike | undefined;
}

/** The most characters of a thrown value's text a note or an error message quotes. */
const ERROR_CHARS = 300;

/**
 * A thrown value as text for a note or message, cut to `ERROR_CHARS` (ending in `…`) and with each
 * lone surrogate written U+FFFD: a runner or summariser that throws a megabyte of text (a server's
 * error page) costs a line in a note. Never throws (a message getter that throws, no prototype).
 */
function errorText(error: unknown): string {
  try {
    // On one line, as the hooks package's notes are (a stack or an error page's lines a space).
    const text = (error instanceof Error ? String(error.message) : String(error))
      .toWellFormed()
      .replace(/[\p{Cc}\u2028\u2029]+/gu, " ");
    if (text.length <= ERROR_CHARS) return text;
    const end = ERROR_CHARS - 1;
    const last = text.charCodeAt(end - 1);
    return `${text.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end)}…`;
  } catch {
    return "an error that could not be read";
  }
}

/**
 * Throws `LedgerError` `aborted` (the signal's `reason` on `cause`) when `signal` is aborted: a
 * compaction its caller abandoned runs no hook and no summariser. A signal whose `aborted` throws
 * when read is an option it cannot use (`invalid-option`).
 */
function stopIfAborted(signal: AbortSignalLike | undefined, when: string): void {
  if (signal === undefined || signal === null) return;
  let aborted: unknown;
  let reason: unknown;
  try {
    aborted = signal.aborted;
    if (aborted === true) reason = (signal as { reason?: unknown }).reason;
  } catch (cause) {
    throw new LedgerError("invalid-option", "runCompaction: signal could not be read (it threw when read).", {
      cause,
    });
  }
  if (aborted !== true) return;
  throw abortedError(reason, when);
}

/** The `aborted` error for a signal that fired `when`, its reason on `cause`. */
function abortedError(reason: unknown, when: string): LedgerError {
  return new LedgerError(
    "aborted",
    `runCompaction: the signal was aborted ${when}; ${when.startsWith("while the summary") ? "no fold was made" : "no summariser was called"} and the transcript was left as it was.`,
    reason === undefined ? undefined : { cause: reason },
  );
}

/** The part of an `AbortSignal` `untilAborted` listens with (no DOM or Node types here). */
interface ListenedSignal {
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * `work`, or a rejection with `LedgerError` `aborted` as soon as `signal` fires, for a signal that
 * can be listened to (an `AbortSignal`; a bare `{ aborted }` is read before and after instead): a
 * hook runner or summariser that never settles must not hold a stopped compaction. `work` is left
 * to settle, and a late rejection of it is handled.
 */
function untilAborted<T>(
  work: PromiseLike<T> | T,
  signal: AbortSignalLike | undefined,
  when: string,
): Promise<T> {
  const pending = Promise.resolve(work);
  const target = signal as Partial<ListenedSignal> | undefined;
  let listens = false;
  try {
    listens =
      typeof target?.addEventListener === "function" && typeof target.removeEventListener === "function";
  } catch {
    // A signal whose fields throw when read: read before and after, as a bare one is.
  }
  if (!listens) return pending;
  const events = target as ListenedSignal;
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      pending.catch(() => undefined);
      reject(abortedError(events.reason, when));
    };
    events.addEventListener("abort", stop, { once: true });
    // Fired already, while `work` was being started (a summariser that stops its own signal): its
    // event has come and gone.
    if ((signal as { aborted?: unknown }).aborted === true) {
      events.removeEventListener("abort", stop);
      stop();
      return;
    }
    pending.then(
      (value) => {
        events.removeEventListener("abort", stop);
        resolve(value);
      },
      (error: unknown) => {
        events.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

function checkPlan(
  plan: unknown,
  messages: readonly MessageLike[],
  where: string,
): asserts plan is CompactionPlan {
  const p = plan as Partial<CompactionPlan> | null;
  if (
    typeof p !== "object" ||
    p === null ||
    !Number.isInteger(p.from) ||
    !Number.isInteger(p.through) ||
    (p.from as number) < 0 ||
    (p.through as number) <= (p.from as number) ||
    (p.through as number) > messages.length
  ) {
    throw new LedgerError(
      "invalid-option",
      `${where} needs the plan planCompaction made for these messages ({ from, through, ... } with 0 <= from < through <= ${messages.length}), and was given ${describe(plan)}.`,
    );
  }
  const previous = (p as { previous?: unknown }).previous;
  if (previous !== undefined && previous !== null && typeof previous !== "string") {
    // It was handed to the summariser (and the hooks) as it was: a number or an object in its prompt.
    throw new LedgerError(
      "invalid-option",
      `${where}: the plan's previous must be the earlier summary as text, or absent, and was ${describe(previous)}.`,
    );
  }
  checkKeptStart(messages, p.through as number, `${where}: the plan`);
}

/**
 * Throws unless what a fold keeps starts on a question (or nothing is kept yet): kept from an
 * answer, a tool result would lose the call it answers, and an endpoint refuses that transcript.
 */
function checkKeptStart(messages: readonly MessageLike[], through: number, what: string): void {
  const first = messages[through];
  if (first === undefined) return;
  const role = setting(first, "role");
  if (role !== "user") {
    throw new LedgerError(
      "invalid-option",
      `${what} keeps messages from index ${through}, a ${JSON.stringify(role)} message; the kept part has to start on a user message (as planCompaction cuts), or a tool result could be sent without its call.`,
    );
  }
  // A user message between a call and its answer (a host's interjection mid-run) is no cut either,
  // by the rule planCompaction cuts by: the kept part would hold a tool result whose call was folded.
  if (splitsAGroup(messages)[through] === 1) {
    throw new LedgerError(
      "invalid-option",
      `${what} keeps messages from index ${through}, a user message between a tool call and its answer; the kept part would hold a tool result whose call was folded away, and an endpoint refuses that. Cut at a user message after the answer (as planCompaction cuts).`,
    );
  }
}

/**
 * The hook that vetoed a compaction, by its outcomes: the first that ran (neither `ok: false` nor an
 * `error` that says something — a non-empty string, an object, `true`, a non-zero number: any truthy
 * value; `""`, `false`, `0`, `null` and none are no error, as JSON runners write them) and set
 * `veto: true`, named by its `name`, else its `id`, else "a beforeCompact hook". Each field is read
 * where the outcome or a prototype of its own (a class's getter) holds it, never from
 * `Object.prototype`, so a polluted `Object.prototype.veto` vetoes nothing.
 * `undefined` when none did, and for anything that is not an array (a revoked Proxy among them); an outcome that throws when read
 * is skipped, a list that throws while walked is read up to there, and a sparse list is walked by the
 * places it holds (its holes veto nothing). The one rule both this package and the hooks package's
 * `consult` read a veto by. Never throws.
 */
export function vetoedBy(outcomes: unknown): string | undefined {
  try {
    // A Proxy revoked once the runner's answer was taken throws from Array.isArray: no list.
    if (!Array.isArray(outcomes)) return undefined;
  } catch {
    return undefined;
  }
  const list = outcomes as readonly (HookOutcomeLike | null | undefined)[];
  try {
    // By index, its length read once: a list whose length or an entry throws when read is read up
    // to there, as the hooks package's `consult` reads it.
    const length = list.length;
    // A sparse list (`list.length = 4e6`) is walked by the places it holds, in order.
    const held: number[] = [];
    for (const key of Object.keys(list)) {
      if (!/^(?:0|[1-9][0-9]*)$/.test(key)) continue;
      const at = Number(key);
      if (at < length) held.push(at);
    }
    if (held.length < length) {
      for (const place of held) {
        const by = vetoOf(list[place]);
        if (by !== undefined) return by;
      }
      return undefined;
    }
    for (let place = 0; place < length; place++) {
      const by = vetoOf(list[place]);
      if (by !== undefined) return by;
    }
  } catch {
    // The rest of the list could not be read: it vetoes nothing.
  }
  return undefined;
}

/** How deep a prototype chain {@link field} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * A field of an outcome where the outcome holds it itself, or a prototype of its own does (a class's
 * getter); `undefined` where only `Object.prototype` does: `Object.prototype.veto = true`, set by some
 * polluting code, is no hook's veto, and read through it would refuse every compaction. Throws what
 * the outcome throws.
 */
function field(outcome: object, name: string): unknown {
  let at: object | null = outcome;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, name)) return (outcome as Record<string, unknown>)[name];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/** One outcome's veto, by name; `undefined` for none, and for junk or an outcome that throws when read. */
function vetoOf(outcome: HookOutcomeLike | null | undefined): string | undefined {
  try {
    if (typeof outcome !== "object" || outcome === null) return undefined;
    // `error: null`, `""`, `false` or `0` is a JSON runner's "no error" (a Go struct writes `""`).
    const failed = field(outcome, "ok") === false || Boolean(field(outcome, "error"));
    if (field(outcome, "veto") !== true || failed) return undefined;
    const name = field(outcome, "name");
    if (typeof name === "string" && name !== "") return name;
    const id = field(outcome, "id");
    if (typeof id === "string" && id !== "") return id;
    return "a beforeCompact hook";
  } catch {
    // A revoked Proxy or a throwing getter: junk from the runner, which vetoes nothing.
    return undefined;
  }
}

/** The most characters of a vetoing hook's name a note quotes; a longer one ends in `…`. */
const VETO_NAME_CHARS = 60;

/**
 * The note a veto makes (`by` as {@link vetoedBy} names the hook), the same here and in
 * `@loopwright/hooks`' `consult`: "Compaction skipped: Guard vetoed it.", or, where the fold was
 * `forced`, that the veto was overridden. The name is quoted on one line (line breaks and control
 * characters a space, a lone surrogate U+FFFD) and cut to 60 characters ending in `…`, so a hook
 * with a megabyte of name costs a line. Never throws.
 */
export function vetoNote(by: string, forced = false): string {
  let text: string;
  try {
    text = String(by);
  } catch {
    // No prototype, or a toString that throws: a name that cannot be written is no name to quote.
    text = "a beforeCompact hook";
  }
  const flat = text.toWellFormed().replace(/[\p{Cc}\u2028\u2029]+/gu, " ");
  let name = flat;
  if (flat.length > VETO_NAME_CHARS) {
    const end = VETO_NAME_CHARS - 1;
    const last = flat.charCodeAt(end - 1);
    name = `${flat.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end)}…`;
  }
  return forced
    ? `${name} vetoed the compaction, but it was forced: the request had already been refused as too big.`
    : `Compaction skipped: ${name} vetoed it.`;
}

/** Tells `hooks.onNote`, if any: a note sink that throws fails nothing (as a log sink must not). */
function note(hooks: { onNote?: ((note: string) => void) | undefined } | undefined, text: string): void {
  try {
    hooks?.onNote?.(text);
  } catch {
    // The host's own callback: its failure is not the fold's.
  }
}

/** The fields of a `CompactionPlan`, as `runCompaction` reads a plan (one stored as a row included). */
const PLAN_FIELDS = [
  "from",
  "through",
  "previous",
  "limit",
  "used",
  "folded",
  "kept",
  "after",
  "summaryTokens",
];

/**
 * Throws `invalid-option` unless `hooks` is left out or is `{ run, context?, onNote?, honourVeto? }`
 * with `run` a function and `onNote` one or absent: hooks with no runner (`{ runner, honourVeto:
 * true }`, a misspelling) were passed over, and the fold they were to be asked about went ahead.
 */
function checkHooks<Context>(hooks: unknown): CompactionHooks<Context> | undefined {
  if (hooks === undefined || hooks === null) return undefined;
  let problem: string | undefined;
  let read: CompactionHooks<Context> | undefined;
  try {
    // Each field read once, and never from a polluted Object.prototype (`honourVeto`, an `onNote`).
    const given = readSettings(
      hooks as { run?: unknown; onNote?: unknown; context?: unknown; honourVeto?: unknown },
      ["run", "onNote", "context", "honourVeto"],
      "runCompaction: hooks",
    );
    if (typeof hooks !== "object" || Array.isArray(hooks)) problem = `was ${describe(hooks)}`;
    else if (typeof given.run !== "function") problem = `has a run that is ${describe(given.run)}`;
    else if (given.onNote !== undefined && typeof given.onNote !== "function") {
      problem = `has an onNote that is ${describe(given.onNote)}`;
    } else {
      // Called on the host's own object, as `hooks.run(…)` would be: a runner that is a method keeps its `this`.
      const run = given.run as (...args: unknown[]) => unknown;
      const onNote = given.onNote as ((text: string) => void) | undefined;
      // No prototype, every field set: none of them can read as one a polluted Object.prototype holds.
      read = Object.assign(Object.create(null) as CompactionHooks<Context>, {
        run: ((...args: unknown[]) => run.apply(hooks, args)) as CompactionHooks<Context>["run"],
        context: given.context as Context,
        onNote: onNote === undefined ? undefined : (text: string) => onNote.call(hooks, text),
        honourVeto: Boolean(given.honourVeto),
      });
    }
  } catch (cause) {
    if (LedgerError.isInstance(cause)) throw cause;
    throw new LedgerError("invalid-option", "runCompaction: hooks could not be read (it threw when read).", {
      cause,
    });
  }
  if (problem !== undefined) {
    throw new LedgerError(
      "invalid-option",
      `runCompaction: hooks must be { run, context?, onNote?, honourVeto? } with run the hook runner (a function), or left out; it ${problem}, and no hook would have been asked.`,
    );
  }
  return read;
}

/** Runs the hooks, answering the name of a hook that vetoed (one that ran), if any. */
async function consultHooks<Context>(
  hooks: CompactionHooks<Context>,
  input: BeforeCompactInput,
): Promise<string | undefined> {
  let outcomes: readonly HookOutcomeLike[] | undefined;
  try {
    outcomes = await hooks.run("beforeCompact", input, hooks.context as Context);
  } catch (error) {
    note(hooks, `The beforeCompact hooks could not be run: ${errorText(error)}`);
    return undefined;
  }
  return vetoedBy(outcomes);
}

/**
 * Folds `messages.slice(plan.from, plan.through)` into a summary without touching the messages:
 * answers `{ summary, through, at }` for a host to store, or `undefined` when a hook vetoed or the
 * summary came back empty.
 *
 * The `beforeCompact` hooks are told what is going. By default they run beside the summary and
 * nothing waits on them; with `hooks.honourVeto` they run first, and a veto from any hook that ran
 * (one that failed vetoes nothing) leaves everything as it was, with a note naming the hook —
 * unless `forced`, where the veto is noted and the fold goes ahead. A runner that throws is noted
 * and costs nothing else, as does an `onNote` that throws. The summary is trimmed, a lone surrogate
 * in it written U+FFFD (a server reading UTF-8 refuses the request whole). Throws `LedgerError`
 * (`summary-failed`, with the cause) when the summariser throws, (`aborted`, the signal's reason on
 * `cause`) when `signal` is aborted before the hooks, while honoured hooks run, or while the summary
 * is written (no fold is made; an `AbortSignal` rejects the moment it fires, whether or not the hook
 * runner or summariser ever settles), and (`invalid-option`, before anything runs) for options that are not an
 * object, hooks given with no `run` function (or an `onNote` that is not one), or a plan that does not fit the messages — one whose `through` is not a user message, or is
 * a user message between a tool call and its answer, since the kept part would then start
 * mid-exchange, holding a tool result whose call was folded away.
 */
export async function runCompaction<Context = unknown>(
  messages: readonly MessageLike[],
  givenPlan: CompactionPlan,
  summarise: Summarise,
  given: RunCompactionOptions<Context> = {},
): Promise<Fold | undefined> {
  checkMessages(messages, "runCompaction");
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new LedgerError(
      "invalid-option",
      `runCompaction: options must be an object ({ hooks?, forced?, signal? }) or left out, and was ${describe(given)}.`,
    );
  }
  // The options' and the plan's fields read once, and never from a polluted Object.prototype: an
  // inherited `forced` overrode every veto, and an inherited `previous` went into every summary.
  const options = readSettings(given, ["hooks", "forced", "signal"], "runCompaction: the options");
  const plan =
    typeof givenPlan === "object" && givenPlan !== null
      ? readSettings(givenPlan, PLAN_FIELDS, "runCompaction: the plan")
      : givenPlan;
  checkPlan(plan, messages, "runCompaction");
  if (typeof summarise !== "function") {
    throw new LedgerError(
      "invalid-option",
      "runCompaction needs a summarise function (messages, previous) => summary.",
    );
  }
  const hooks = checkHooks<Context>(options.hooks);
  const signal = options.signal;
  stopIfAborted(signal, "before anything ran");
  const stretch = messages.slice(plan.from, plan.through);
  // `null` (a plan stored as a row) is no summary to continue.
  const previous = plan.previous ?? undefined;
  const input: BeforeCompactInput = {
    messages: stretch,
    from: plan.from,
    through: plan.through,
    ...(previous !== undefined ? { previous } : {}),
  };
  if (hooks && typeof hooks.run === "function") {
    if (hooks.honourVeto) {
      const vetoedBy = await untilAborted(
        consultHooks(hooks, input),
        signal,
        "while the beforeCompact hooks ran",
      );
      if (vetoedBy !== undefined && !options.forced) {
        note(hooks, vetoNote(vetoedBy));
        return undefined;
      }
      if (vetoedBy !== undefined) note(hooks, vetoNote(vetoedBy, true));
      stopIfAborted(signal, "while the beforeCompact hooks ran");
    } else {
      // Beside the summary: nobody waits, and nothing it does can fail the fold (nor surface as an
      // unhandled rejection).
      consultHooks(hooks, input).catch(() => undefined);
    }
  }
  let summary: string | undefined;
  try {
    summary = await untilAborted(
      summarise(stretch, previous, signal),
      signal,
      "while the summary was written",
    );
  } catch (error) {
    if (LedgerError.isInstance(error) && error.code === "aborted") throw error;
    // A summariser that gave up because the signal fired was stopped, not failed.
    stopIfAborted(signal, "while the summary was written");
    throw new LedgerError(
      "summary-failed",
      `The summariser failed while folding messages ${plan.from} to ${plan.through - 1}: ${errorText(error)}. The transcript was left as it was.`,
      { cause: error },
    );
  }
  // A caller that stopped while the summary was written is not handed a fold to apply.
  stopIfAborted(signal, "while the summary was written");
  if (typeof summary !== "string" || summary.trim() === "") {
    note(hooks, "Compaction skipped: the summary came back empty.");
    return undefined;
  }
  // A lone surrogate (a summariser's cut inside an emoji) would ride on every later request, and a
  // server reading UTF-8 (llama.cpp) refuses the request whole: written U+FFFD.
  return { summary: summary.trim().toWellFormed(), through: plan.through, at: Date.now() };
}

/**
 * The one message `applyCompaction` adds: the summary as a system message whose text starts with
 * `SUMMARY_LEAD`. The `openai` SDK's `ChatCompletionSystemMessageParam` takes it as it is.
 */
export interface SummaryMessage {
  role: "system";
  content: string;
}

/**
 * A transcript with a fold applied: the leading system messages (an earlier summary among them
 * dropped, since the new one continues it), the summary as a system message starting with
 * `SUMMARY_LEAD` (a lone surrogate in a stored summary written U+FFFD), then everything from
 * `fold.through`. No fold hands back `messages` itself. Throws `LedgerError` for a fold that is not one, or that does not fit `messages`: a `through` past their
 * end, or on a message other than a user one, or on a user message between a tool call and its
 * answer (the kept part would start mid-exchange, a tool result without its call). Generic in
 * the message type: the caller's messages come back as the type they were given (an `openai` SDK
 * `ChatCompletionMessageParam[]` stays one), beside the one `SummaryMessage` it adds; each is still
 * a `MessageLike`, whose fields read on any of them. A type that cannot hold a tool message (a
 * `role: string`, roles without `"tool"`) comes back as `MessageLike` (`KeptMessage`).
 */
export function applyCompaction<M extends MessageLike>(
  messages: readonly M[],
  given: Fold | undefined,
): ((KeptMessage<M> | SummaryMessage) & MessageLike)[] {
  checkMessages(messages, "applyCompaction");
  // `KeptMessage<M>` is `M` or `MessageLike`, and the messages are `M`s either way.
  if (given === undefined) return messages as (KeptMessage<M> & MessageLike)[];
  // Each field read once, and never from a polluted Object.prototype: an inherited `through` or
  // `summary` made a fold of an object that holds neither.
  const fold =
    typeof given === "object" && given !== null
      ? readSettings(given, ["summary", "through", "at"], "applyCompaction: the fold")
      : given;
  if (
    typeof fold !== "object" ||
    fold === null ||
    typeof fold.summary !== "string" ||
    !Number.isInteger(fold.through) ||
    fold.through < 0 ||
    fold.through > messages.length
  ) {
    throw new LedgerError(
      "invalid-option",
      `applyCompaction needs a fold ({ summary, through, at }) as runCompaction answers it for these ${messages.length} messages (through at most ${messages.length}), and was given ${describe(given)}${typeof fold === "object" && fold !== null && Number.isInteger(fold.through) ? ` with through ${fold.through}` : ""}.`,
    );
  }
  checkKeptStart(messages, fold.through, "applyCompaction: the fold");
  const lead: M[] = [];
  for (let i = 0; i < Math.min(fold.through, messages.length); i++) {
    const message = messages[i] as M;
    if (!isSystem(message)) break;
    if (!contentText(setting(message, "content") as MessageLike["content"]).startsWith(SUMMARY_LEAD)) {
      lead.push(message);
    }
  }
  const summary: SummaryMessage = {
    role: "system",
    content: `${SUMMARY_LEAD}\n\n${fold.summary.toWellFormed()}`,
  };
  return [...lead, summary, ...messages.slice(fold.through)] as ((KeptMessage<M> | SummaryMessage) &
    MessageLike)[];
}

/**
 * Where a stored message sits in the request a fold made: `index` itself with no fold, `undefined`
 * for a message the fold took out, and otherwise its place after the summary. `lead` is how many
 * leading system messages the request keeps ahead of the summary (0 for a host whose system prompt
 * is not in the stored array). Throws `LedgerError` for an index or `lead` that is not a whole number
 * 0 or more, or a fold that is not one.
 */
export function requestIndex(
  index: number,
  fold: Pick<Fold, "through"> | undefined,
  lead = 0,
): number | undefined {
  if (!Number.isInteger(index) || index < 0) {
    throw new LedgerError(
      "invalid-range",
      `requestIndex needs a message index (a whole number, 0 or more), and was given ${describe(index)}.`,
    );
  }
  if (!Number.isInteger(lead) || lead < 0) {
    throw new LedgerError(
      "invalid-range",
      `requestIndex: lead must be how many leading system messages the request keeps (a whole number, 0 or more), and was ${describe(lead)}.`,
    );
  }
  if (fold === undefined || fold === null) return index;
  // Its own `through` (or its class's), never one a polluted Object.prototype holds.
  let through: unknown;
  try {
    through = setting(fold, "through");
  } catch (cause) {
    throw new LedgerError(
      "invalid-option",
      "requestIndex: the fold could not be read (it threw when read).",
      {
        cause,
      },
    );
  }
  if (typeof fold !== "object" || !Number.isInteger(through) || (through as number) < 0) {
    throw new LedgerError(
      "invalid-option",
      `requestIndex needs a fold ({ through, ... }) as runCompaction answers it, or undefined for none, and was given ${describe(fold)}.`,
    );
  }
  if (index < lead) return index;
  if (index < (through as number)) return undefined;
  return lead + 1 + (index - (through as number));
}

/**
 * `runCompaction`, then the fold applied: a new array with the summary in place of the folded
 * stretch, or `messages` itself where nothing was folded (a veto, an empty summary). Throws as
 * `runCompaction` does. Generic in the message type as `applyCompaction` is.
 */
export async function compactTranscript<Context = unknown, M extends MessageLike = MessageLike>(
  messages: readonly M[],
  plan: CompactionPlan,
  summarise: Summarise,
  options: RunCompactionOptions<Context> = {},
): Promise<((KeptMessage<M> | SummaryMessage) & MessageLike)[]> {
  const fold = await runCompaction(messages, plan, summarise, options);
  return applyCompaction(messages, fold);
}
