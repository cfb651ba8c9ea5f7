import { listenForAbort } from "@loopwright/stream";
import {
  parseToolArguments,
  ToolArgumentsError,
  type ToolCallRequest,
  type ToolCallResult,
} from "@loopwright/tool-calls";
import type { AssistantToolCall, ChatMessage } from "./config.js";
import { errorMessage } from "./errors.js";
import { tell } from "./tell.js";

/** A tool call as `dispatch` is handed it: arguments repaired and parsed, the model's own text as `raw`. */
export type DispatchRequest = ToolCallRequest;

/** Runs one tool call; what it returns (a string, or anything JSON can hold) is what the model reads. */
export type Dispatch = (request: DispatchRequest, signal?: AbortSignal) => unknown;

/** One call's outcome as the transcript and a watcher see it. */
export interface CallResult extends ToolCallResult {
  /** How long the tool ran, in milliseconds; absent for a call that was not dispatched. */
  ms?: number;
}

/**
 * Whether an identical call (same name, same repaired arguments) in one step is run once and its
 * answer shared: `true` (default) for every tool, `false` for none, or asked per call — a tool
 * whose second call is a second effect (`send_email`) answers `false`.
 */
export type DedupePolicy = boolean | ((request: DispatchRequest) => boolean);

/** What `runCalls` reads. */
export interface RunCallsOptions {
  dispatch: Dispatch;
  signal?: AbortSignal;
  /** The turn's finish reason: arguments cut off at the ceiling are reported as truncated. */
  finishReason?: string;
  /** Run the step's calls together rather than one after another (default false). */
  parallel?: boolean;
  /** Share one answer between identical calls of the step (default true). */
  dedupe?: DedupePolicy;
  /** Told of every call the model made, before it runs (empty args where they could not be read). What it throws is ignored. */
  onToolCall?: (request: DispatchRequest) => void;
  /** Told of every call's result as it lands: in transcript order, or in finishing order when parallel. What it throws is ignored. */
  onToolResult?: (result: CallResult) => void;
}

/** What a step's calls leave behind. */
export interface RunCallsResult {
  /** The assistant's calls with their arguments repaired, as the transcript should replay them. */
  calls: AssistantToolCall[];
  /** One tool message per call, in the calls' order. */
  results: ChatMessage[];
  /** The same, as outcomes. */
  outcomes: CallResult[];
  /** Set when the signal stopped the step; every call is still answered. */
  stopped?: unknown;
}

/** What a call the signal interrupted is answered with. */
export const STOPPED_DURING = "Stopped before this call finished.";
/** What a call the run never reached is answered with. */
export const NOT_RUN = "Not run: the run stopped first.";

type Outcome = { ok: boolean; content: string; ms?: number };

interface Prepared {
  call: AssistantToolCall;
  request: DispatchRequest;
  json: string;
  unreadable?: string;
}

function asContent(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function prepare(call: AssistantToolCall, finishReason: string | undefined): Prepared {
  const name = call.function.name;
  const raw = call.function.arguments ?? "";
  try {
    const parsed = parseToolArguments(raw, { finishReason, name });
    const request = { id: call.id, name, args: parsed.value, raw };
    return {
      call: { id: call.id, type: "function", function: { name, arguments: parsed.json } },
      request,
      json: parsed.json,
    };
  } catch (error) {
    if (!ToolArgumentsError.isInstance(error)) throw error;
    // Replayed as {}: a server that parses replayed arguments refuses the originals on every later request.
    return {
      call: { id: call.id, type: "function", function: { name, arguments: "{}" } },
      request: { id: call.id, name, args: {}, raw },
      json: "{}",
      unreadable: error.message,
    };
  }
}

/**
 * The calls as a transcript should replay them: arguments repaired into compact JSON, and `{}` for
 * arguments that could not be read (a server that parses replayed arguments refuses the originals
 * on every later request). What `runCalls` returns as `calls`, available before anything runs.
 */
export function replayable(
  toolCalls: ReadonlyArray<AssistantToolCall>,
  finishReason?: string,
): AssistantToolCall[] {
  return toolCalls.map((call) => prepare(call, finishReason).call);
}

/**
 * Runs one step's tool calls and answers every one of them, whatever happens: arguments that cannot
 * be read are answered with the reason (and replayed as `{}`), a throwing tool with its message, a
 * call the signal interrupted with `STOPPED_DURING`, and a call the run never reached with
 * `NOT_RUN`. An identical call (same name, same repaired arguments) is dispatched once per step and
 * its answer handed to the repeat under the repeat's own id, unless `dedupe` says otherwise; a call
 * that threw is forgotten, so asking again is a real retry. Calls run in order, or all at once with
 * `parallel`; the tool messages are in the calls' order either way. Never throws; a stop is
 * reported on `stopped`.
 */
export async function runCalls(
  toolCalls: ReadonlyArray<AssistantToolCall>,
  options: RunCallsOptions,
): Promise<RunCallsResult> {
  const { signal, dispatch } = options;
  const prepared = toolCalls.map((call) => prepare(call, options.finishReason));
  const inFlight = new Map<string, Promise<Outcome>>();
  let stopped: unknown;

  const start = (p: Prepared): Promise<Outcome> => {
    if (p.unreadable !== undefined) return Promise.resolve({ ok: false, content: p.unreadable });
    if (signal?.aborted) {
      stopped ??= signal.reason;
      return Promise.resolve({ ok: false, content: NOT_RUN });
    }
    const policy = options.dedupe ?? true;
    const shared = typeof policy === "function" ? policy(p.request) : policy;
    const key = `${p.request.name}\u0000${p.json}`;
    const existing = shared ? inFlight.get(key) : undefined;
    if (existing) return existing.then(({ ok, content }) => ({ ok, content }));
    const pending = runOne(dispatch, p.request, signal).then((outcome) => {
      if (!outcome.ok) inFlight.delete(key);
      return outcome;
    });
    if (shared) inFlight.set(key, pending);
    return pending;
  };
  const told = (p: Prepared, outcome: Outcome): CallResult => {
    const result: CallResult = { id: p.call.id, name: p.request.name, ...outcome };
    tell(options.onToolResult, result);
    return result;
  };

  for (const p of prepared) tell(options.onToolCall, p.request);
  let outcomes: CallResult[];
  if (options.parallel) {
    outcomes = await Promise.all(prepared.map((p) => start(p).then((outcome) => told(p, outcome))));
  } else {
    outcomes = [];
    for (const p of prepared) outcomes.push(told(p, await start(p)));
  }
  if (signal?.aborted) stopped ??= signal.reason;
  const results: ChatMessage[] = outcomes.map((o) => ({
    role: "tool",
    tool_call_id: o.id,
    content: o.content,
  }));
  return {
    calls: prepared.map((p) => p.call),
    results,
    outcomes,
    ...(stopped !== undefined ? { stopped } : {}),
  };
}

async function runOne(
  dispatch: Dispatch,
  request: DispatchRequest,
  signal: AbortSignal | undefined,
): Promise<Outcome> {
  const started = Date.now();
  try {
    const value = await raceSignal(
      Promise.resolve().then(() => dispatch(request, signal)),
      signal,
    );
    return { ok: true, content: asContent(value), ms: Date.now() - started };
  } catch (error) {
    if (signal?.aborted) return { ok: false, content: STOPPED_DURING, ms: Date.now() - started };
    return { ok: false, content: `Error: ${errorMessage(error)}`, ms: Date.now() - started };
  }
}

function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    // One listener per signal however many calls and runs share it (no MaxListenersExceededWarning).
    const stop = listenForAbort(signal, () => reject(signal.reason));
    promise.then(
      (value) => {
        stop();
        resolve(value);
      },
      (error: unknown) => {
        stop();
        reject(error);
      },
    );
  });
}
