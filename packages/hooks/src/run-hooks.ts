import { vetoedBy, vetoNote } from "@loopwright/ledger";
import {
  assembleInto,
  failed,
  heldPlaces,
  nonBooleanFlags,
  noteLabel,
  outcomeField,
  ratioOf,
  snapshotOutcome,
} from "./assemble-context.js";
import { arrayOrRevoked, describe, errorText, HooksError } from "./errors.js";
import { heldNotes, type NoteTaker, noteList } from "./notes.js";
import { aboveZero, type HookSettings } from "./settings.js";
import { ownCopy, wellFormed, wellFormedDeep } from "./text.js";
import type {
  Consulted,
  ConsultOptions,
  Gathered,
  GatherOptions,
  HookEvent,
  HookInput,
  HookOutcome,
  HookReport,
  HookRunner,
  InjectingHookEvent,
  NotifyingHookEvent,
  NotifyOptions,
} from "./types.js";

/** The longest delay `setTimeout` honours; past it, the timer fires almost at once. */
const MAX_TIMER_MS = 2_147_483_647;

const INJECTING: readonly string[] = ["sessionStart", "beforeTurn"];
const NOTIFYING: readonly string[] = ["afterTurn", "beforeCompact", "sessionEnd", "sessionDelete"];

/** What one call of a runner came to: what it answered, or why it answered nothing. */
type Called = { answered: true; raw: unknown } | { answered: false; why: string };

function checkRunner(run: unknown, where: string): void {
  if (typeof run !== "function") {
    throw new HooksError(
      "invalid-runner",
      `${where} needs a hook runner, a function (event, input, context, signal) => outcomes, and was given ${describe(run)}.`,
    );
  }
}

/**
 * The caller's options read once into a plain copy (`null` and `undefined` read as none): a getter that
 * throws, or a revoked Proxy, is `HooksError` `invalid-option` rather than a bare error from inside, and
 * a getter is read a single time, so the signal checked is the signal used.
 */
function readOptions<Options extends object>(
  given: Options | null | undefined,
  fields: readonly (keyof Options & string)[],
  where: string,
): Options {
  // No prototype: a field left out reads as undefined, not as one a polluted Object.prototype holds.
  const copy: Partial<Options> = Object.create(null);
  if (given === undefined || given === null) return copy as Options;
  try {
    // Own fields only: one inherited from a polluted Object.prototype is not the caller's option.
    for (const field of fields) if (Object.hasOwn(given, field)) copy[field] = given[field];
  } catch (error) {
    throw new HooksError(
      "invalid-option",
      `${where}: the options could not be read (${errorText(error)}); pass a plain object.`,
      { cause: error },
    );
  }
  return copy as Options;
}

/**
 * Throws `invalid-option` unless `signal` is absent (`undefined` or `null`) or shaped like an
 * `AbortSignal` (a boolean `aborted` and the two listener methods): the AbortController itself or a
 * request passed where its signal was meant would otherwise fail inside, as a bare TypeError.
 */
function checkSignal(signal: unknown, where: string): void {
  if (signal === undefined || signal === null) return;
  const like = signal as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  let shaped = false;
  try {
    shaped =
      typeof signal === "object" &&
      typeof like.aborted === "boolean" &&
      typeof like.addEventListener === "function" &&
      typeof like.removeEventListener === "function";
  } catch {
    // A revoked Proxy, a throwing getter: not a signal this package can listen to.
  }
  if (shaped) return;
  throw new HooksError(
    "invalid-option",
    `${where}: signal must be an AbortSignal (the run's, or controller.signal), or left out, and was ${describe(signal)}.`,
  );
}

/**
 * Calls the runner once, never rejecting for the runner's sake (only with `HooksError`
 * `invalid-option` for a `signal` whose `addEventListener` throws, before the runner is called): a throw, a rejection, no answer within `timeoutMs`, or the
 * caller's `signal` aborting each settle it as unanswered. The runner's own signal aborts in the last
 * two cases, so a runner that can cancel its hooks does. `input` is handed on with each lone surrogate
 * in its text written U+FFFD (a copy where it held one): a runner relays it to hook servers and
 * models, and a strict JSON reader (llama.cpp's, serde_json) refuses a request carrying one.
 */
function callRunner<Context>(
  run: HookRunner<Context>,
  event: HookEvent,
  input: HookInput,
  context: Context,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  where: string,
): Promise<Called> {
  if (signal?.aborted)
    return Promise.resolve({ answered: false, why: "the run was stopped before they ran" });
  const controller = new AbortController();
  return new Promise<Called>((resolve, reject) => {
    let settled = false;
    const onAbort = (): void => {
      controller.abort(signal?.reason);
      finish({ answered: false, why: "the run was stopped while they ran" });
    };
    const timer = setTimeout(
      () => {
        controller.abort(new Error(`The ${event} hooks did not answer within ${timeoutMs} ms.`));
        finish({ answered: false, why: `they did not answer within ${timeoutMs} ms` });
      },
      // A timer longer than this fires after 1 ms instead: a "wait as long as it takes" of 2^32 ms
      // would otherwise drop every hook's context at once. 2^31 - 1 ms is 24.8 days.
      Math.min(timeoutMs, MAX_TIMER_MS),
    );
    function finish(called: Called): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(called);
    }
    try {
      signal?.addEventListener("abort", onAbort, { once: true });
    } catch (error) {
      // A signal-like that cannot be listened to: the caller's mistake, said before the runner is
      // called, and no timer left behind to hold the process.
      settled = true;
      clearTimeout(timer);
      reject(
        new HooksError(
          "invalid-option",
          `${where}: could not listen on signal, its addEventListener threw (${errorText(error)}); pass an AbortSignal (the run's, or controller.signal).`,
          { cause: error },
        ),
      );
      return;
    }
    try {
      Promise.resolve(run(event, wellFormedDeep(input), context, controller.signal)).then(
        (raw) => {
          // An answer after the timeout or the stop is never read: its promises are handled here,
          // or one that rejects would end the process as an unhandled rejection.
          if (settled) handleLate(raw);
          else finish({ answered: true, raw });
        },
        (error: unknown) => finish({ answered: false, why: `the runner failed: ${errorText(error)}` }),
      );
    } catch (error) {
      finish({ answered: false, why: `the runner threw: ${errorText(error)}` });
    }
  });
}

/**
 * Whether `entry` is a promise (anything with a callable `then`): a runner that mapped its hooks with
 * an async function and did not wait for them. Its failure is handled here, where it is ignored, so a
 * hook that rejects cannot end the process as an unhandled rejection. False where reading `then`
 * throws: not a field this package reads, so the outcome is read as any other.
 */
function isThenable(entry: object): boolean {
  let then: unknown;
  try {
    then = (entry as { then?: unknown }).then;
  } catch {
    return false;
  }
  if (typeof then !== "function") return false;
  try {
    then.call(entry, undefined, () => {});
  } catch {
    // A thenable whose `then` throws: nothing to handle, and still no outcome.
  }
  return true;
}

/**
 * A runner's answer that came too late to be read (after the timeout, or once the run was stopped):
 * each entry that is a promise gets a handler, as `readOutcomes` gives one, so a runner that mapped
 * its hooks with an async function and answered late cannot end the process with their rejections.
 * Never throws: a list that throws while walked is left where it threw.
 */
function handleLate(raw: unknown): void {
  try {
    if (!Array.isArray(raw)) return;
    const length = raw.length;
    const held = heldPlaces(raw, length);
    const count = held === undefined ? length : held.length;
    for (let at = 0; at < count; at++) {
      const entry: unknown = raw[held === undefined ? at : (held[at] as number)];
      if (typeof entry === "object" && entry !== null && !isThenable(entry)) handleContext(entry);
    }
  } catch {
    // Nothing of a late answer is read; what could not be walked is the runner's own.
  }
}

/**
 * Gives the `context` of a late answer's outcome a handler where it is a promise (a hook's `await`
 * forgotten), as `readOutcome` gives one to an answer read in time. Never throws.
 */
function handleContext(entry: object): void {
  try {
    const context: unknown = (entry as { context?: unknown }).context;
    if (typeof context === "object" && context !== null) isThenable(context);
  } catch {
    // A getter that throws: nothing to handle.
  }
}

/**
 * The outcome objects of one runner's answer, with a note for everything else: an answer that is not
 * a list, an entry that is not an object or throws when read, a hook that failed or timed out, context
 * that is not text.
 */
function readOutcomes(event: HookEvent, called: Called, notes: NoteTaker): HookOutcome[] {
  if (!called.answered) {
    notes.always(`The ${event} hooks could not be run: ${called.why}.`);
    return [];
  }
  const raw = called.raw;
  if (raw === undefined || raw === null) return [];
  // arrayOrRevoked: a Proxy revoked once its answer was taken (a runner that revokes its list in a
  // microtask) throws from Array.isArray, and the call rejected; it is an answer that is no list.
  if (arrayOrRevoked(raw) !== true || !Array.isArray(raw)) {
    notes.always(
      `The ${event} hook runner answered ${describe(raw)} instead of a list of outcomes; it was ignored.`,
    );
    return [];
  }
  const outcomes: HookOutcome[] = [];
  // The list itself is the runner's too: its length or an entry may throw when read (a Proxy, a
  // getter), and it may be long. Walked by index, each outcome appended on its own (spreading a list
  // of 130 000 overflows the stack), and a throw while walking is one note, keeping what was read.
  // A sparse list (`list[n - 1] = outcome`, `list.length = n`) is walked by the places it holds: its
  // holes are no outcomes, counted in one note, so a length of millions costs what its entries do.
  let place = 0;
  try {
    const length = raw.length;
    const held = heldPlaces(raw, length);
    if (held === undefined) {
      for (; place < length; place++) readOutcome(event, raw[place], place, outcomes, notes);
    } else {
      for (const at of held) {
        place = at;
        readOutcome(event, raw[at], at, outcomes, notes);
      }
      place = length;
      const holes = length - held.length;
      notes.always(
        `The ${event} hook runner's list has ${holes === 1 ? "1 hole" : `${holes} holes`} (places with no entry at all); ${holes === 1 ? "it was" : "they were"} ignored.`,
      );
    }
  } catch (error) {
    notes.always(
      `The ${event} hook runner's answer could not be read past outcome ${place} (${errorText(error)}); the rest was ignored.`,
    );
  }
  return outcomes;
}

/** Reads one entry of a runner's list into `outcomes`, with a note where it is not a usable outcome. */
function readOutcome(
  event: HookEvent,
  entry: unknown,
  place: number,
  outcomes: HookOutcome[],
  notes: NoteTaker,
): void {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    notes.push(
      `Outcome ${place + 1} of the ${event} hooks is ${describe(entry)}, not an outcome; it was ignored.`,
    );
    return;
  }
  if (isThenable(entry)) {
    notes.push(
      `Outcome ${place + 1} of the ${event} hooks is a promise, not an outcome (the runner should wait for its hooks, with Promise.all, and answer what they gave); it was ignored.`,
    );
    return;
  }
  // Read once and kept: a getter that answered here may throw (or answer otherwise) on a later read.
  const read = snapshotOutcome(entry);
  if (!("outcome" in read)) {
    notes.push(
      `Outcome ${place + 1} of the ${event} hooks could not be read (${errorText(read.unreadable)}); it was ignored.`,
    );
    return;
  }
  const outcome = read.outcome;
  outcomes.push(outcome);
  const label = noteLabel(outcome, place);
  const error = outcomeField(outcome, "error");
  const context = outcomeField(outcome, "context");
  // Handled whether or not the hook failed: `{ ok: false, context: recall(prompt) }` adds nothing,
  // but a rejection of that promise with no handler would still end a Node host.
  const pending = typeof context === "object" && context !== null && isThenable(context);
  if (failed(outcome)) {
    const reason = error ? errorText(error).trim() : "";
    const why =
      outcomeField(outcome, "timedOut") === true
        ? "it timed out"
        : reason !== ""
          ? `it failed: ${reason}`
          : "it failed";
    // A beforeCompact hook adds nothing when it works either: what a failed one loses is its veto.
    const lost = event === "beforeCompact" ? "vetoes nothing" : "added nothing";
    notes.push(`Hook ${label} (${event}) ${lost}: ${why}.`);
  } else if (pending) {
    // `context: recall(prompt)` without its await: handled here (a rejection nobody waits on ends a
    // Node host), and named for what it is, since "an object" did not say what to fix.
    notes.push(
      `Hook ${label} (${event}) answered context that is a promise, not text (the hook should await its context before answering); it was ignored.`,
    );
  } else if (context !== undefined && context !== null && typeof context !== "string") {
    notes.push(
      `Hook ${label} (${event}) answered context that is not text (${describe(context)}); it was ignored.`,
    );
  }
  if (event !== "beforeCompact" && outcomeField(outcome, "veto") === true && !failed(outcome)) {
    // A guard that vetoes a turn from beforeTurn stops nothing: only a compaction is vetoed.
    notes.push(
      `Hook ${label} (${event}) answered veto: true, which only a beforeCompact hook's answer is read for; nothing was stopped.`,
    );
  }
  for (const field of nonBooleanFlags(outcome)) {
    notes.push(
      `Hook ${label} (${event}) answered ${field} ${describe(outcomeField(outcome, field))}, not true or false; it was read as left out.`,
    );
  }
}

/** The timeout a call waits: the caller's, where it is a number above zero (`Infinity` too), else the configured one. */
function timeoutOf(
  options: { timeoutMs?: number | null | undefined } | undefined,
  settings: HookSettings,
): number {
  return aboveZero(options?.timeoutMs) ? options.timeoutMs : settings.timeoutMs;
}

/** `gather` against one instance's settings. */
export async function gatherWith<Context>(
  settings: HookSettings,
  run: HookRunner<Context>,
  event: InjectingHookEvent | readonly InjectingHookEvent[],
  input: HookInput,
  context: Context,
  given?: GatherOptions | null,
): Promise<Gathered> {
  checkRunner(run, "gather");
  // null reads as no options, as `notify` reads it, rather than a TypeError from inside.
  const options = readOptions(
    given,
    ["maxTokens", "preface", "signal", "timeoutMs", "charsPerToken"],
    "gather",
  );
  checkSignal(options.signal, "gather");
  // Each event once: a list naming one twice (`["beforeTurn", "beforeTurn"]`, a host's own lists
  // joined) would call its hooks twice and put every block on the question twice.
  let events: readonly unknown[];
  try {
    events = Array.isArray(event) ? [...new Set<unknown>(event)] : [event];
  } catch (error) {
    throw new HooksError(
      "invalid-event",
      `gather: the events could not be read (${errorText(error)}); pass "sessionStart", "beforeTurn" or a list of them.`,
      { cause: error },
    );
  }
  for (const name of events) {
    if (typeof name !== "string" || !INJECTING.includes(name)) {
      throw new HooksError(
        "invalid-event",
        `gather runs the hooks that add context (sessionStart, beforeTurn), and was given ${describe(name)}; use notify for the others.`,
      );
    }
  }
  // Handed back well-formed, as withContext writes it on the question: it is what this request says,
  // and the host stores it beside the question, where half a surrogate pair would be refused by a
  // strict JSON reader (serde_json's, a jsonb column) reading the stored session back.
  const preface = wellFormed(typeof options.preface === "string" ? options.preface : settings.preface);
  const maxTokens = aboveZero(options.maxTokens)
    ? Math.max(1, Math.floor(options.maxTokens))
    : settings.maxTokens;
  const timeoutMs = timeoutOf(options, settings);
  // Each runner's answer is read the moment it comes, not once every event's has: an outcome that
  // is a promise gets its handler then. Left until a slower event answered, one that rejects would
  // be an unhandled rejection meanwhile, which ends a Node process. Its notes are held, and told in
  // the order of the events, so they read the same however the runners raced.
  // Each event its own copy of the input when there are two, all made before any runner is called:
  // a hook is told about the moment and answers with outcomes, so a runner that changes what it was
  // handed (drops messages it has read, rewrites the prompt) must not change what the other event's
  // hooks are told, nor the host's own object. One event is handed the input as `callRunner` hands it.
  const inputs = events.length > 1 ? events.map(() => ownCopy(input)) : [input];
  const calls = await Promise.all(
    events.map((name, at) =>
      callRunner(
        run,
        name as HookEvent,
        inputs[at] as HookInput,
        context,
        timeoutMs,
        options.signal ?? undefined,
        "gather",
      ).then((called) => {
        const held = heldNotes();
        return { outcomes: readOutcomes(name as HookEvent, called, held), held };
      }),
    ),
  );
  // One cap for the call: a note about each hook the runners answered, then each block cut or left out.
  const { notes, sink } = noteList();
  const outcomes: HookOutcome[] = [];
  for (const call of calls) {
    call.held.tell(sink);
    for (const outcome of call.outcomes) outcomes.push(outcome);
  }
  if (options.signal?.aborted) {
    sink.finish();
    return { context: "", preface, outcomes, notes };
  }
  const text = assembleInto(outcomes, maxTokens, ratioOf(options.charsPerToken), sink);
  sink.finish();
  return { context: text, preface, outcomes, notes };
}

/** `notify` against one instance's settings. */
export async function notifyWith<Context>(
  settings: HookSettings,
  run: HookRunner<Context>,
  event: NotifyingHookEvent,
  input: HookInput,
  context: Context,
  given?: NotifyOptions | null,
): Promise<HookReport> {
  checkRunner(run, "notify");
  const options = readOptions<NotifyOptions>(given, ["timeoutMs"], "notify");
  if (typeof event !== "string" || !NOTIFYING.includes(event)) {
    throw new HooksError(
      "invalid-event",
      `notify runs the hooks that only read (afterTurn, beforeCompact, sessionEnd, sessionDelete), and was given ${describe(event)}; use gather for sessionStart and beforeTurn.`,
    );
  }
  const called = await callRunner(
    run,
    event,
    input,
    context,
    timeoutOf(options, settings),
    undefined,
    "notify",
  );
  const { notes, sink } = noteList();
  const outcomes = readOutcomes(event, called, sink);
  sink.finish();
  return { outcomes, notes };
}

/** `consult` against one instance's settings. */
export async function consultWith<Context>(
  settings: HookSettings,
  run: HookRunner<Context>,
  input: HookInput,
  context: Context,
  given?: ConsultOptions | null,
): Promise<Consulted> {
  checkRunner(run, "consult");
  const options = readOptions<ConsultOptions>(given, ["forced", "signal", "timeoutMs"], "consult");
  checkSignal(options.signal, "consult");
  const called = await callRunner(
    run,
    "beforeCompact",
    input,
    context,
    timeoutOf(options, settings),
    options.signal ?? undefined,
    "consult",
  );
  const { notes, sink } = noteList();
  const outcomes = readOutcomes("beforeCompact", called, sink);
  sink.finish();
  const by = vetoedBy(outcomes);
  // A stopped run folds nothing, forced or not: the compaction it was for is not going ahead.
  if (options.signal?.aborted) {
    notes.push("The run was stopped, so the compaction does not go ahead.");
    return { proceed: false, stopped: true, ...(by !== undefined ? { vetoedBy: by } : {}), outcomes, notes };
  }
  if (by === undefined) return { proceed: true, outcomes, notes };
  if (options.forced === true) {
    notes.push(vetoNote(by, true));
    return { proceed: true, vetoedBy: by, outcomes, notes };
  }
  notes.push(vetoNote(by));
  return { proceed: false, vetoedBy: by, outcomes, notes };
}
