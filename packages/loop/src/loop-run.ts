import { credentialRedactor, redactor } from "@loopwright/client";
import type { RunEvent } from "@loopwright/events";
import { type LedgerEntry, type MessageLike, sameMessage, tokensBetween } from "@loopwright/ledger";
import { ContextOverflow, type EndpointCapabilities, type ModelParams } from "@loopwright/negotiate";
import {
  type ChatClientLike,
  EndpointSilent,
  listenForAbort,
  StreamError,
  type Turn,
} from "@loopwright/stream";
import type { ToolCallOutcome } from "@loopwright/tool-calls";
import type { CatalogServer } from "@loopwright/tool-loading";
import type { AgentLoopOptions, LoopServices } from "./agent-loop.js";
import { type RunCompaction, startCompaction } from "./compaction-phase.js";
import {
  type ChatMessage,
  DEFAULT_MAX_TOOL_ITERATIONS,
  type LoopConfig,
  type ToolDefinition,
} from "./config.js";
import {
  AgentLoopError,
  AgentLoopOverflow,
  errorMessage,
  LoopOptionError,
  type RunState,
  type RunUsage,
  type SideUsage,
} from "./errors.js";
import { type RunHooks, startHooks } from "./hooks-phase.js";
import {
  checkCatalogOption,
  checkExtraBodyOption,
  checkOptionTypes,
  checkToolEntries,
  foreignStepLimitNotice,
  refuseUnbuilt,
} from "./loop-options.js";
import { RunMeasure } from "./measure-turn.js";
import { namedTools, toolsNeedingDispatch } from "./no-dispatch.js";
import { ownOptions } from "./own.js";
import { NOT_RUN } from "./run-calls.js";
import { overflowBreakdown } from "./run-turn.js";
import { tell } from "./tell.js";
import { type Discovery, discoveryState, startDiscovery } from "./tool-discovery.js";
import { type DeclaredTools, declareTools } from "./tool-names.js";
import { checkMessages, startingTranscript } from "./transcript-check.js";

/**
 * Everything a run's phases read and write, in one place: what the caller passed, what the run
 * resolved from it at the start, and what it has added up so far. A phase takes the run (and the
 * step's own state) and changes only the fields it owns.
 */
export interface LoopRun {
  readonly options: AgentLoopOptions;
  readonly services: LoopServices;
  readonly config: LoopConfig;
  /**
   * The model settings this step's request is built with (`buildBody`'s config): the config's, with
   * this step's plan's `model` and `extraBody` over them (`prepareStep` sets them before each step;
   * the config itself where the plan gives neither). What the loop learns or latches per model — the
   * negotiate latches, the calibration, a window a refusal named, the ledger's epochs and the cache
   * expectation — goes by `params.model`, never `config.model`.
   */
  params: ModelParams;
  readonly client: ChatClientLike;
  readonly supports: EndpointCapabilities;
  /** The system prompt: `system`, or `config.prompt`'s entries joined; `""` for none. */
  readonly system: string;
  /**
   * The host's tools as given (the `tools` option, or what a step's plan gave since): what
   * dispatch is handed names of and argument schemas are read from.
   */
  hostTools: readonly ToolDefinition[];
  /** The host's catalogue (the `catalog` option, or what a step's plan gave since); absent or `null` for none. */
  catalog: readonly CatalogServer[] | null | undefined;
  /** The tools as every request declares them (sanitized, names legal); a step's plan may change them. */
  tools: readonly ToolDefinition[];
  /** The wire's names of renamed tools and back: the host's names everywhere but the request. */
  names: Pick<DeclaredTools, "toHost" | "toWire">;
  /** `maxToolIterations`, defaulted. */
  readonly limit: number;
  readonly measure: RunMeasure;
  /** Takes the endpoint's own key, header values and URL credentials out of a text or an error (in place). */
  readonly redact: <T>(value: T) => T;
  /**
   * Takes only the endpoint's credentials out of a text the model reads (a tool's error): a
   * routing header's value (`x-portkey-provider: openai`) stays, as it does in a reply.
   */
  readonly redactCredentials: (text: string) => string;
  /** The events `runMetrics` reads (every event but the output and thinking deltas). */
  readonly kept: RunEvent[];
  /** The tool notices `tellToolNotices` has told this run, so a step plan repeats none. */
  readonly toolNotices: Set<string>;
  /** The transcript: the caller's messages plus what the run appended. */
  messages: ChatMessage[];
  usage: RunUsage;
  /**
   * What the run's side tasks cost (`addSideUsage`), apart from `usage`; `NO_SIDE_USAGE` itself
   * until a side request was answered, so usage events carry it only from then on.
   */
  sideUsage: SideUsage;
  /** Every call the model made, as it was answered. */
  toolCalls: ToolCallOutcome[];
  /** Steps that ran tools so far. */
  toolSteps: number;
  /** The prompt the last request reported, for `beforeStep`; absent where none was reported. */
  used: number | undefined;
  /**
   * The last request's reported prompt, how many of the transcript's messages it carried and the
   * model it named (another model's tokenizer counts another number), so compaction can add what
   * was appended since to it for a request to that model; `undefined` where that request reported none,
   * and once the transcript is replaced by one that does not keep those messages in place.
   */
  reported: { prompt: number; length: number; model: string } | undefined;
  /**
   * The tool-call ids `messages` holds and how far it has been read for them, so a step reads only
   * what was appended since, and for each id made distinct the suffix to try next (every lower one
   * is taken); `undefined` until first read, and again once the transcript is replaced
   * (`replaceMessages`).
   */
  knownIds: { ids: Set<string>; read: number; next: Map<string, number> } | undefined;
  /** The `hooks` option, and what they added once gathered; absent without hooks. */
  readonly hooks: RunHooks | undefined;
  /** `config.compact`'s summariser and state; absent when the loop does not compact. */
  readonly compaction: RunCompaction | undefined;
  /** On-demand or proxied tool loading (`tool-discovery.ts`); `undefined` in eager mode. */
  readonly discovery: Discovery | undefined;
}

const NO_USAGE: RunUsage = { prompt: 0, completion: 0, total: 0, cached: 0 };

/** A run's side usage before any side request was answered (never changed: `addSideUsage` copies). */
export const NO_SIDE_USAGE: SideUsage = Object.freeze({
  ...NO_USAGE,
  summary: Object.freeze({ ...NO_USAGE }),
  preselect: Object.freeze({ ...NO_USAGE }),
});

/** The four counts of `a` and `b` added. */
function sum(a: RunUsage, b: RunUsage): RunUsage {
  return {
    prompt: a.prompt + b.prompt,
    completion: a.completion + b.completion,
    total: a.total + b.total,
    cached: a.cached + b.cached,
  };
}

/**
 * Adds what one side request cost (`onUsage`'s report) to the run's side usage, under its kind and
 * in the sum: a new object, so a `RunState` or event handed out earlier keeps what it said. The
 * counts are held as a turn's are (`runTurn`): rounded to whole numbers, the cached count to at most
 * the prompt, the total to at least prompt plus completion.
 */
export function addSideUsage(
  run: Pick<LoopRun, "sideUsage">,
  kind: "summary" | "preselect",
  usage: RunUsage,
): void {
  const prompt = Math.round(usage.prompt);
  const completion = Math.round(usage.completion);
  const counts: RunUsage = {
    prompt,
    completion,
    total: Math.max(Math.round(usage.total), prompt + completion),
    cached: Math.min(Math.round(usage.cached), prompt),
  };
  const side = run.sideUsage;
  run.sideUsage = {
    ...sum(side, counts),
    summary: kind === "summary" ? sum(side.summary, counts) : { ...side.summary },
    preselect: kind === "preselect" ? sum(side.preselect, counts) : { ...side.preselect },
  };
}

/** A copy of `side` a caller may keep (and change) without touching the run's. */
export function copySideUsage(side: SideUsage): SideUsage {
  return { ...side, summary: { ...side.summary }, preselect: { ...side.preselect } };
}

/** The run as the errors and the result carry it: a copy a caller may keep. */
export function runState(
  run: Pick<LoopRun, "messages" | "usage" | "toolCalls" | "names"> & {
    sideUsage?: SideUsage | undefined;
    discovery?: Discovery | undefined;
  },
): RunState {
  return {
    messages: [...run.messages],
    usage: run.usage,
    sideUsage: copySideUsage(run.sideUsage ?? NO_SIDE_USAGE),
    toolCalls: [...run.toolCalls],
    ...discoveryState(run),
    used: usedTools(run.toolCalls),
  };
}

/** The tools `calls` ran, each once, in the order of their first call (a shared repeat ran its tool too). */
export function usedTools(calls: readonly ToolCallOutcome[]): string[] {
  const used = new Set<string>();
  for (const call of calls) {
    if (call.source === "dispatched" || call.source === "repeat") used.add(call.name);
  }
  return [...used];
}

/** What the loop throws for options refused before the run began: the cause, with the caller's messages as the run. */
export function refusedAtStart(messages: unknown, error: unknown): AgentLoopError {
  return new AgentLoopError(error, {
    messages: givenMessages(messages),
    usage: NO_USAGE,
    sideUsage: copySideUsage(NO_SIDE_USAGE),
    toolCalls: [],
    loaded: [],
    preselected: [],
    used: [],
  });
}

/**
 * The transcript a run refused at its start was given, copied; `[]` where it is no array or cannot
 * be read (a revoked Proxy, whose `Array.isArray` throws): the refusal is still an `AgentLoopError`
 * carrying the run, never the engine's `TypeError` thrown raw.
 */
function givenMessages(messages: unknown): ChatMessage[] {
  try {
    return Array.isArray(messages) ? [...(messages as ChatMessage[])] : [];
  } catch {
    return [];
  }
}

/** `options.messages`, or `undefined` where reading it throws (a getter, a revoked Proxy). */
export function messagesOf(options: unknown): unknown {
  try {
    return (options as { messages?: unknown } | null | undefined)?.messages;
  } catch {
    return undefined;
  }
}

/**
 * What a run's start threw, with the option that cannot be read named: where `error` is none of the
 * loop's `LoopOptionError`s and reading an option throws — the option a revoked Proxy or a getter
 * that throws, or such a value one or two levels inside it (`config.model`, `tools[0]`) — a
 * `LoopOptionError` (`invalid-option`) whose `option` is that path and whose message says what the
 * reading said; `error` as it is otherwise. Before, the run's error was the engine's words alone
 * ("Cannot perform 'get' on a proxy that has been revoked") or the host's getter's, naming nothing.
 * Read only once the start has failed: every option is read again here, its getters asked again.
 */
export function namingUnreadable(options: unknown, error: unknown): unknown {
  if (marksOption(error)) return error;
  let names: string[];
  try {
    names = typeof options === "object" && options !== null ? Object.keys(options) : [];
  } catch {
    return error; // The options themselves: nothing of them can be named.
  }
  for (const name of names) {
    let found: Unreadable | undefined;
    try {
      found = unreadableIn((options as Record<string, unknown>)[name], name, 2);
    } catch (thrown) {
      found = { path: name, thrown };
    }
    if (found === undefined) continue;
    return unreadableOption(found.path, found.thrown);
  }
  return error;
}

/** The refusal of the option at `path`, whose reading threw `thrown`. */
function unreadableOption(path: string, thrown: unknown): LoopOptionError {
  return new LoopOptionError(
    "invalid-option",
    path,
    `runAgentLoop: ${path} could not be read (${errorMessage(thrown)}); give options the loop can read ` +
      "at the start of the run (no revoked Proxy, no getter that throws).",
  );
}

/**
 * Reads, at the start, what the loop would read of `signal` (whether it is `aborted`) and `client`
 * (the object itself) only as the first request is made: one that cannot be read (a revoked Proxy,
 * an `aborted` getter that throws) is refused here as a `LoopOptionError` naming it, before
 * anything is sent — not the first step's failure, in the engine's words or the getter's.
 */
function readLaterOptions(options: AgentLoopOptions): void {
  const { signal, client } = options;
  try {
    if (signal != null) void signal.aborted;
  } catch (thrown) {
    throw unreadableOption("signal", thrown);
  }
  try {
    if (typeof client === "object" && client !== null) Object.keys(client);
  } catch (thrown) {
    throw unreadableOption("client", thrown);
  }
}

/** Where reading an option threw, and what it threw. */
interface Unreadable {
  path: string;
  thrown: unknown;
}

/** Whether `error` is a `LoopOptionError` (false, too, for one whose reading throws). */
function marksOption(error: unknown): boolean {
  try {
    return LoopOptionError.isInstance(error);
  } catch {
    return false;
  }
}

/**
 * The first place in `value` (at `path`) whose reading throws: `value` itself (a revoked Proxy: its
 * `Array.isArray`, its prototype, its keys), or, `depth` levels down, one of its own enumerable
 * fields (a getter that throws) or what one holds.
 */
function unreadableIn(value: unknown, path: string, depth: number): Unreadable | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  let keys: string[];
  let list: boolean;
  try {
    list = Array.isArray(value);
    Object.getPrototypeOf(value);
    keys = Object.keys(value);
  } catch (thrown) {
    return { path, thrown };
  }
  if (depth === 0) return undefined;
  for (const key of keys) {
    const at = list ? `${path}[${key}]` : `${path}.${key}`;
    let field: unknown;
    try {
      field = (value as Record<string, unknown>)[key];
    } catch (thrown) {
      return { path: at, thrown };
    }
    const found = unreadableIn(field, at, depth - 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** What the loop did about an overflow before giving up on it (a forced fold), by the overflow. */
const overflowNotes = new WeakMap<object, string>();

/**
 * Notes on `overflow` what the loop did about it before giving up (a forced fold tried, or why not):
 * `failure` adds it to the `AgentLoopOverflow`'s message. Returns the overflow, to throw.
 */
export function noteOverflow(overflow: ContextOverflow, note: string): ContextOverflow {
  overflowNotes.set(overflow, note);
  return overflow;
}

/**
 * What the loop throws for a failure: the overflow as `AgentLoopOverflow` (its message ending in
 * what `noteOverflow` noted on it), anything else wrapped.
 */
export function failure(
  run: Pick<LoopRun, "messages" | "usage" | "toolCalls" | "names"> & {
    sideUsage?: SideUsage | undefined;
    redact?: LoopRun["redact"];
    discovery?: Discovery | undefined;
  },
  error: unknown,
): Error {
  // The endpoint's own credentials never reach the error a host logs or shows.
  run.redact?.(error);
  let wrapped: Error;
  if (error instanceof CallbackFault) {
    // The callback's own error stays the cause; the message says whose it was.
    wrapped = new AgentLoopError(error.error, runState(run));
    wrapped.message = `${error.callback} threw: ${wrapped.message}`;
  } else if (ContextOverflow.isInstance(error)) {
    const note = overflowNotes.get(error);
    wrapped = new AgentLoopOverflow(
      error,
      runState(run),
      note === undefined ? undefined : (run.redact?.(note) ?? note),
      overflowBreakdown(error),
    );
  } else {
    wrapped = new AgentLoopError(error, runState(run));
    if (StreamError.isInstance(error) || EndpointSilent.isInstance(error)) {
      // The stream's message leads the wrapper's, which may add its cause's code after it
      // (" (UND_ERR_SOCKET)"): its closing sentences are found at the end of the stream's own.
      const own = streamMessage(error);
      if (own !== undefined && wrapped.message.startsWith(own)) {
        wrapped.message = `${forTheRunsHost(own)}${wrapped.message.slice(own.length)}`;
      }
    }
  }
  // A cause the redactor could not write (a frozen error's message) lends the wrapper its text as
  // it was: the wrapper's own message is redacted as text.
  const message = run.redact?.(wrapped.message);
  if (typeof message === "string" && message !== wrapped.message) wrapped.message = message;
  const stack = wrapped.stack === undefined ? undefined : run.redact?.(wrapped.stack);
  if (typeof stack === "string" && stack !== wrapped.stack) wrapped.stack = stack;
  return wrapped;
}

/** The stream error's own message, or undefined where it is not text or reading it throws. */
function streamMessage(error: object): string | undefined {
  try {
    const message = (error as { message?: unknown }).message;
    return typeof message === "string" ? message : undefined;
  } catch {
    return undefined;
  }
}

const PARTIAL_SAID = "The reply so far is in `partial`;";
const PARTIAL_MEANT = "The reply so far is on this error's `cause.partial` and not in the run's transcript;";
/** The stream's last words, and the run's host's. */
const TAILS: readonly (readonly [string, string])[] = [
  ["; retry the request.", "; run again from `failedRun(error).messages`."],
  ["raise firstChunkMs for a slow server.", "raise `config.firstTokenSeconds` for a slow server."],
  ["raise idleMs for a slow server.", "raise `config.requestTimeoutSeconds` for a slow server."],
];

/**
 * A broken or silent stream's words as the host of a run reads them. The stream package speaks to
 * whoever called `streamTurn`, who holds the `StreamError` and set the stream's options: "the reply
 * so far is in `partial`; retry the request", "raise firstChunkMs". A run's host holds the
 * `AgentLoopError` instead (`error.partial` is undefined), its watchers only the text, the reply so
 * far is in no transcript, what it re-sends is the run, and its settings are `config`'s seconds
 * (`LoopConfig` has no `firstChunkMs` or `idleMs`).
 */
function forTheRunsHost(message: string): string {
  // Only the stream's own sentences, which end its message: the server's words it quotes come
  // before them (an error relayed mid-stream, a cut connection's detail) and are kept as written.
  let text = message;
  const at = text.lastIndexOf(PARTIAL_SAID);
  if (at !== -1) text = `${text.slice(0, at)}${PARTIAL_MEANT}${text.slice(at + PARTIAL_SAID.length)}`;
  for (const [said, meant] of TAILS) {
    if (text.endsWith(said)) return `${text.slice(0, -said.length)}${meant}`;
  }
  return text;
}

/**
 * Tells the watcher, keeping what `runMetrics` reads. Watchers are not awaited, and what they throw
 * is theirs. A kept event reaches the watcher as a copy (its ledger entries too, which are the
 * run's own), so a watcher adjusting what it shows cannot change the run's metrics or ledger.
 */
export function emitEvent(run: LoopRun, event: RunEvent): void {
  const delta =
    event.kind === "output" ||
    event.kind === "thinking" ||
    event.kind === "retract" ||
    event.kind === "thinking-retract";
  if (delta) {
    tell(run.options.onEvent, event);
    return;
  }
  run.kept.push(event);
  if (run.options.onEvent) tell(run.options.onEvent, structuredClone(event));
}

/**
 * Throws the run's stop — the signal's reason, as a stopped request does — once its signal has
 * aborted: a side task a stop cut short is not a failure to report and carry on from.
 */
export function throwIfStopped(run: Pick<LoopRun, "options">): void {
  const signal = run.options.signal;
  if (signal?.aborted) throw signal.reason;
}

/** A notice event. */
export function notice(run: LoopRun, text: string): void {
  emitEvent(run, { kind: "notice", text: run.redact(text) });
}

/**
 * Replaces the transcript (a `beforeStep` replacement, a fold): its ids are read again from the
 * start, and the last reported prompt stays the base compaction adds to only where the replacement
 * keeps the messages that request carried, in place.
 */
export function replaceMessages(run: LoopRun, messages: readonly ChatMessage[]): void {
  const reported = run.reported;
  if (reported && !keepsPrefix(run.messages, messages, reported.length)) run.reported = undefined;
  // Not splice(0, n, ...messages): a spread that long (some 125,000 messages) overflows the stack.
  const kept = Array.from(messages);
  run.messages.length = 0;
  for (const message of kept) run.messages.push(message);
  run.knownIds = undefined;
}

/** Whether `after` opens with the first `length` messages of `before` (the same, or equal ones). */
function keepsPrefix(before: readonly ChatMessage[], after: readonly ChatMessage[], length: number): boolean {
  if (after.length < length || before.length < length) return false;
  try {
    for (let i = 0; i < length; i++) {
      if (!sameMessage(before[i] as MessageLike, after[i] as MessageLike)) return false;
    }
  } catch {
    return false; // a message that cannot be read as JSON is not known to be the same
  }
  return true;
}

/**
 * Appends a message to the transcript and awaits the host's `onMessage` for it, raced with the run's
 * stop (`hostCallback`).
 */
export async function append(run: LoopRun, step: number, message: ChatMessage, turn?: Turn): Promise<void> {
  run.messages.push(message);
  const { onMessage } = run.options;
  if (onMessage) await hostCallback(run, "onMessage", () => onMessage(message, step, turn));
}

/**
 * What a host's callback whose failure ends the run threw, tagged with its name: `failure` names it
 * in the run's error. `beforeStep` and `onMessage` are awaited (`hostCallback`); a
 * `dedupeToolCalls` predicate is asked of a step's calls before any runs (`taggedDedupe`).
 */
class CallbackFault {
  constructor(
    readonly callback: "beforeStep" | "onMessage" | "dedupeToolCalls",
    readonly error: unknown,
  ) {}
}

/**
 * A `dedupeToolCalls` predicate whose throw is tagged with its name, so the run's error says the
 * predicate failed rather than carrying its words alone (a throw from a host's `readOnlyHint` lookup
 * read as the run's own failure); anything else as it was.
 */
export function taggedDedupe<D>(dedupe: D): D {
  if (typeof dedupe !== "function") return dedupe;
  const ask = dedupe as (...args: unknown[]) => unknown;
  return ((...args: unknown[]) => {
    try {
      return ask(...args);
    } catch (error) {
      throw new CallbackFault("dedupeToolCalls", error);
    }
  }) as D;
}

/** Whether `value` has a callable `then` (false where reading it throws). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  try {
    return typeof (value as { then?: unknown }).then === "function";
  } catch {
    return false;
  }
}

/**
 * Calls a host's awaited callback (`beforeStep`, `onMessage`) and waits for its answer, but never
 * past the run's stop: once the signal aborts, the wait ends with the stop (the signal's reason, as
 * a stopped request ends), and what the callback settles with later is ignored — its rejection
 * handled, never left to end the process. A callback called after the stop is not waited for at all
 * (so each message is still told, and the run ends at once). What it throws or rejects with is
 * tagged with its name (`CallbackFault`), for `failure` to put in the run's error. Resolves with the
 * answer boxed (`{ answer }`), so an answer whose `then` cannot even be read is the caller's to read
 * (`onMessage`'s is ignored).
 */
export function hostCallback<T>(
  run: Pick<LoopRun, "options">,
  callback: "beforeStep" | "onMessage",
  call: () => T,
): Promise<{ answer: Awaited<T> }> {
  const signal = run.options.signal;
  let answer: T;
  try {
    answer = call();
  } catch (error) {
    return Promise.reject(new CallbackFault(callback, error));
  }
  // Boxed: a promise resolved with the answer itself reads its `then`, and one that cannot be read
  // (a revoked Proxy) would reject with the engine's words — for `onMessage`, whose answer is
  // ignored, ending the run; for `beforeStep`, not saying whose value it was.
  if (!isThenable(answer)) return Promise.resolve({ answer: answer as Awaited<T> });
  return new Promise<{ answer: Awaited<T> }>((resolve, reject) => {
    let unlink: (() => void) | undefined;
    const stop = (): void => {
      unlink?.();
      reject(signal?.reason);
    };
    if (signal?.aborted) {
      // Told after the stop: not waited for, its failure handled.
      try {
        answer.then(undefined, () => {});
      } catch {
        // A `then` that throws: nothing to wait for either.
      }
      if (callback === "onMessage") resolve({ answer: undefined as Awaited<T> });
      else stop();
      return;
    }
    if (signal) unlink = listenForAbort(signal, stop);
    try {
      answer.then(
        (value) => {
          unlink?.();
          resolve({ answer: value as Awaited<T> });
        },
        (error: unknown) => {
          unlink?.();
          reject(new CallbackFault(callback, error));
        },
      );
    } catch (error) {
      unlink?.();
      reject(new CallbackFault(callback, error));
    }
  });
}

/**
 * The run's start: the options checked, the client and the capability latches looked up, the
 * measurements begun. Throws what the loop throws (the run as given on it) when any of that fails.
 * A call the given transcript leaves unanswered is answered as not run (`startingTranscript`), with
 * a notice naming it.
 */
export function startRun(services: LoopServices, options: AgentLoopOptions): LoopRun {
  let start: ReturnType<typeof startingTranscript>;
  let system: string;
  let declared: DeclaredTools;
  let hooks: RunHooks | undefined;
  let compaction: RunCompaction | undefined;
  let discovery: Discovery | undefined;
  try {
    checkOptions(options);
    start = startingTranscript(options.messages);
    system = systemOf(options);
    declared = declareTools(options.tools ?? []);
    hooks = startHooks(options.hooks);
    compaction = startCompaction(options.config);
    discovery = startDiscovery(options, declared);
    readLaterOptions(options);
  } catch (error) {
    throw refusedAtStart(messagesOf(options), namingUnreadable(options, error));
  }
  const { config } = options;
  const redact = redactor(config);
  const { messages } = start;
  let client: ChatClientLike;
  let supports: EndpointCapabilities;
  try {
    client = options.client ?? services.clients.getClient(config);
    // Keyed by baseUrl even when the host brings its own client: a config without one fails here, with the run.
    // The headers too: a tenant may authenticate by one (Azure's api-key), and is then its own tenant.
    supports = services.capabilities.capabilitiesFor(config.baseUrl, config.apiKey, config.headers);
  } catch (error) {
    throw failure(
      { messages, usage: NO_USAGE, toolCalls: [], names: declared, discovery, redact },
      namingUnreadable(options, error),
    );
  }
  const measure = new RunMeasure(options.ledger ?? [], system);
  if (start.answered.length > 0) measure.rebase(start.read, messages); // its indexes, past an answer, moved
  const run: LoopRun = {
    options,
    services,
    config,
    params: config,
    client,
    supports,
    system,
    hostTools: options.tools ?? [],
    catalog: options.catalog,
    tools: declared.tools,
    names: declared,
    limit: config.maxToolIterations ?? DEFAULT_MAX_TOOL_ITERATIONS,
    measure,
    redact,
    redactCredentials: credentialRedactor(config),
    kept: [],
    toolNotices: new Set(),
    messages,
    usage: NO_USAGE,
    sideUsage: NO_SIDE_USAGE,
    toolCalls: [],
    toolSteps: 0,
    used: undefined,
    reported: undefined,
    knownIds: undefined,
    // Written even when absent: a LoopRun leaving one out would read a polluted
    // `Object.prototype.hooks` or `.compaction` as the run's.
    hooks,
    compaction,
    discovery,
  };
  tellToolNotices(run, declared);
  // Another SDK's step limit left in config is the host's field, not refused; but told, once, as the
  // run would otherwise go on to the limit it keeps while the user believes theirs holds.
  const foreign = foreignStepLimitNotice(config, run.limit);
  if (foreign !== undefined) notice(run, foreign);
  if (start.answered.length > 0) {
    const ids = start.answered.map((id) => JSON.stringify(id)).join(", ");
    const one = start.answered.length === 1;
    notice(
      run,
      `The transcript given has ${one ? "a tool call" : "tool calls"} no tool message answers (${ids}), ` +
        `as a run stopped after storing the call leaves it. ${one ? "It is" : "Each is"} answered ` +
        `"${NOT_RUN}" right after the call and not run; the transcript this run hands back carries the answer.`,
    );
  }
  return run;
}

/**
 * Tells the watcher what sanitizing the run's tools changed that the host should hear of (a bound no
 * value meets, sent as words): once a run for each, however often a step plan declares the tools again.
 */
export function tellToolNotices(run: LoopRun, declared: DeclaredTools): void {
  for (const text of declared.notices) {
    if (run.toolNotices.has(text)) continue;
    run.toolNotices.add(text);
    notice(run, text);
  }
}

/** `system`, or the resolved agent config's prompt entries joined; both at once is refused. */
function systemOf(options: AgentLoopOptions): string {
  const prompt = options.config.prompt;
  const parts = Array.isArray(prompt)
    ? prompt.map((entry) => (typeof entry?.text === "string" ? entry.text : "")).filter((text) => text !== "")
    : [];
  if (parts.length === 0) return options.system ?? "";
  if (options.system != null) {
    throw new LoopOptionError(
      "conflicting-options",
      "config.prompt",
      "runAgentLoop was given both system and config.prompt; give the system prompt one way (config.prompt's " +
        "entries are joined with blank lines when system is absent).",
    );
  }
  return parts.join("\n\n");
}

/**
 * Refuses a `ledger` that is not one, by the ledger package's own rule (the check its functions
 * make): otherwise it is read only once the first request has been answered, and the answer is lost
 * with the run. Absent or `null` is no ledger: the run starts one.
 */
function checkLedgerOption(ledger: unknown): void {
  if (ledger === undefined || ledger === null) return;
  try {
    tokensBetween(ledger as readonly LedgerEntry[], 0, 0, []);
  } catch (error) {
    // The rule's own words say what is wrong ("entry 0 is not one"), after its function's name.
    const said = error instanceof Error ? error.message : String(error);
    const detail = said.includes("; ") ? said.slice(said.indexOf("; ") + 2) : said;
    throw new LoopOptionError(
      "invalid-option",
      "ledger",
      "runAgentLoop: ledger must be the ledger a previous run handed back (its result.ledger, an array of " +
        `{ through, prompt, epoch } entries, parsed if it was stored as JSON), [] or absent; ${detail}`,
    );
  }
}

/**
 * The options as the loop reads them (`ownOptions`: the options, their config and its side tasks,
 * never a field only a polluted `Object.prototype` holds). What reading them throws (a getter, a
 * revoked Proxy) is thrown as the loop throws a refusal at the start, with the transcript given.
 */
export function readOptions<T>(options: T): T {
  try {
    return ownOptions(options);
  } catch (error) {
    throw refusedAtStart(messagesOf(options), namingUnreadable(options, error));
  }
}

/** Refuses what would otherwise fail deep inside the run, or never end it (a NaN step limit). */
function checkOptions(options: AgentLoopOptions): void {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("runAgentLoop takes an options object: { config, messages, dispatch, … }.");
  }
  if (typeof options.config !== "object" || options.config === null) {
    throw new TypeError("runAgentLoop: config must be an object with at least baseUrl.");
  }
  if (!Array.isArray(options.messages)) {
    throw new TypeError("runAgentLoop: messages must be an array of chat messages ending in the question.");
  }
  checkMessages(options.messages);
  // Absent (or `undefined`) is fine for a run that declares no tools: checked below, once the tools
  // and the catalogue are known to be well-formed enough to name.
  if (options.dispatch !== undefined && typeof options.dispatch !== "function") {
    throw new TypeError(
      "runAgentLoop: dispatch must be a function (request, signal) => result that runs a tool call.",
    );
  }
  if (options.tools !== undefined && !Array.isArray(options.tools)) {
    // An object of tools by name is how the AI SDK takes them: say what the loop takes instead.
    throw new TypeError(
      typeof options.tools === "object" && options.tools !== null
        ? 'runAgentLoop: tools must be an array of tool definitions, not an object of tools by name: list them, each { type: "function", function: { name, description?, parameters? } }, and run them in dispatch.'
        : "runAgentLoop: tools must be an array of tool definitions.",
    );
  }
  refuseUnbuilt(options, options.config);
  if (options.tools) checkToolEntries(options.tools);
  checkCatalogOption(options.catalog);
  if (options.dispatch === undefined) {
    const needing = toolsNeedingDispatch(options.tools, options.catalog);
    if (needing.length > 0) {
      throw new TypeError(
        "runAgentLoop: dispatch must be a function (request, signal) => result that runs a tool call: the run " +
          `declares tools it would run (${namedTools(needing)}). Only a run with no tools may leave it out.`,
      );
    }
  }
  checkOptionTypes(options, options.config);
  checkExtraBodyOption(options.config.extraBody);
  checkLedgerOption(options.ledger);
  const { config } = options;
  for (const name of ["maxToolIterations", "maxContinuations", "maxRetries"] as const) {
    const value = config[name];
    if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
      throw new RangeError(`config.${name} must be a whole number from 0, got ${String(value)}.`);
    }
  }
  for (const name of ["loadingTimeoutSeconds", "maxRetryWaitSeconds", "toolTimeoutSeconds"] as const) {
    const value = config[name];
    if (value !== undefined && !(typeof value === "number" && value >= 0)) {
      throw new RangeError(`config.${name} must be a number from 0, got ${String(value)}.`);
    }
  }
}

/**
 * The run's context window for `model` (this step's, `params.model`, by default): `contextLength`,
 * or the smaller one an endpoint's refusal named for that model in this run (with compact on, where
 * the run goes on past such a refusal); `undefined` without a `contextLength`. What the folds are
 * planned against, and what `beforeStep` is told as `limit`, the size guard holds each request to
 * and a continuation stops at: the window the server has for that model. `contextLength` is the
 * run's whatever model a step's plan names.
 */
export function runWindow(run: LoopRun, model: string = run.params.model): number | undefined {
  const limit = run.config.contextLength ?? undefined;
  const named = run.compaction?.windows.get(model);
  return limit !== undefined && named !== undefined && named < limit ? named : limit;
}
