import { parseToolArguments, ToolArgumentsError } from "@loopwright/tool-calls";
import type { AssistantToolCall, ChatMessage } from "./config.js";
import { errorMessage } from "./errors.js";

/** A tool call as `dispatch` is handed it: arguments repaired and parsed, the model's own text as `raw`. */
export interface DispatchRequest {
  id: string;
  name: string;
  args: Record<string, unknown>;
  raw: string;
}

/** Runs one tool call; what it returns (a string, or anything JSON can hold) is what the model reads. */
export type Dispatch = (request: DispatchRequest, signal?: AbortSignal) => unknown;

/** One call's outcome as the transcript and a watcher see it. */
export interface CallResult {
  id: string;
  name: string;
  ok: boolean;
  content: string;
  /** How long the tool ran, in milliseconds; absent for a call that was not dispatched. */
  ms?: number;
}

/** What `runCalls` reads. */
export interface RunCallsOptions {
  dispatch: Dispatch;
  signal?: AbortSignal;
  /** The turn's finish reason: arguments cut off at the ceiling are reported as truncated. */
  finishReason?: string;
  /** Told of every call the model made, before it runs (empty args where they could not be read). */
  onToolCall?: (request: DispatchRequest) => void;
  /** Told of every call's result, in transcript order. */
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

function asContent(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Runs one step's tool calls in order and answers every one of them, whatever happens: arguments
 * that cannot be read are answered with the reason (and replayed as `{}`), a throwing tool with its
 * message, a call the signal interrupted with `STOPPED_DURING`, and the calls after it with
 * `NOT_RUN`. An identical call (same name, same repaired arguments) is dispatched once per step and
 * its answer handed to the repeat. Never throws; a stop is reported on `stopped`.
 */
export async function runCalls(
  toolCalls: ReadonlyArray<AssistantToolCall>,
  options: RunCallsOptions,
): Promise<RunCallsResult> {
  const calls: AssistantToolCall[] = [];
  const outcomes: CallResult[] = [];
  const seen = new Map<string, Promise<{ ok: boolean; content: string; ms: number }>>();
  let stopped: unknown;

  for (const call of toolCalls) {
    const name = call.function.name;
    const raw = call.function.arguments ?? "";
    let args: Record<string, unknown> = {};
    let json = "{}";
    let unreadable: string | undefined;
    try {
      const parsed = parseToolArguments(raw, { finishReason: options.finishReason, name });
      args = parsed.value;
      json = parsed.json;
    } catch (error) {
      if (!ToolArgumentsError.isInstance(error)) throw error;
      unreadable = error.message;
    }
    calls.push({ id: call.id, type: "function", function: { name, arguments: json } });
    const request: DispatchRequest = { id: call.id, name, args, raw };
    options.onToolCall?.(request);

    let outcome: { ok: boolean; content: string; ms?: number };
    if (stopped !== undefined || options.signal?.aborted) {
      stopped ??= options.signal?.reason;
      outcome = { ok: false, content: NOT_RUN };
    } else if (unreadable !== undefined) {
      outcome = { ok: false, content: unreadable };
    } else {
      const key = `${name}\u0000${json}`;
      let pending = seen.get(key);
      if (!pending) {
        pending = runOne(options.dispatch, request, options.signal);
        seen.set(key, pending);
      }
      outcome = await pending;
      if (!outcome.ok) seen.delete(key);
      if (options.signal?.aborted) {
        stopped = options.signal.reason;
        if (!outcome.ok) outcome = { ok: false, content: STOPPED_DURING };
      }
    }
    const result: CallResult = { id: call.id, name, ...outcome };
    outcomes.push(result);
    options.onToolResult?.(result);
  }
  const results: ChatMessage[] = outcomes.map((o) => ({
    role: "tool",
    tool_call_id: o.id,
    content: o.content,
  }));
  return { calls, results, outcomes, ...(stopped !== undefined ? { stopped } : {}) };
}

async function runOne(
  dispatch: Dispatch,
  request: DispatchRequest,
  signal: AbortSignal | undefined,
): Promise<{ ok: boolean; content: string; ms: number }> {
  const started = Date.now();
  try {
    const value = await raceSignal(Promise.resolve(dispatch(request, signal)), signal);
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
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
