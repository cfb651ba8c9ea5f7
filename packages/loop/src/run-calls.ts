import { dropOptionalNulls } from "@loopwright/schema-compat";
import { listenForAbort } from "@loopwright/stream";
import {
  parseToolArguments,
  ToolArgumentsError,
  type ToolCallRequest,
  type ToolCallResult,
  type ToolCallSource,
} from "@loopwright/tool-calls";
import type { AssistantToolCall, ChatMessage, DedupePolicy, ToolDefinition } from "./config.js";

export type { DedupePolicy };

import { errorMessage } from "./errors.js";
import { tell } from "./tell.js";

/** A tool call as `dispatch` is handed it: arguments repaired and parsed, the model's own text as `raw`. */
export type DispatchRequest = ToolCallRequest;

/** Runs one tool call; what it returns (a string, or anything JSON can hold) is what the model reads. */
export type Dispatch = (request: DispatchRequest, signal?: AbortSignal) => unknown;

/** One call's outcome as the transcript and a watcher see it. */
export interface CallResult extends ToolCallResult {
  /** How the answer came about: the tool ran, a repeat shared its answer, or the call was refused. */
  source: ToolCallSource;
  /** How long the tool ran, in milliseconds; absent for a call that was not dispatched. */
  ms?: number;
}

/** What `runCalls` reads. */
export interface RunCallsOptions {
  dispatch: Dispatch;
  signal?: AbortSignal;
  /**
   * The turn's finish reason: arguments cut off at the ceiling (`"length"`) are reported as
   * truncated, and `""` — the stream ended without one after the calls began — means every call
   * may be cut off: none is run, each is answered so.
   */
  finishReason?: string;
  /**
   * The tools as the host declared them (the names `dispatch` is handed): a `null` the model wrote
   * for a parameter a tool's own schema left optional is dropped before dispatch (strict schemas
   * make optional parameters required-but-nullable, and the tool would refuse the `null`).
   */
  tools?: readonly ToolDefinition[];
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

type Outcome = { ok: boolean; content: string; source: ToolCallSource; ms?: number };

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

function cutOff(name: string): string {
  return (
    `The turn ended before the server said it was finished (no finish reason), so the arguments for the ${name} ` +
    "call may be cut off, and the call was not run. Call it again if it is still needed."
  );
}

type Schemas = ReadonlyMap<string, unknown>;

function schemasOf(tools: readonly ToolDefinition[] | undefined): Schemas {
  const schemas = new Map<string, unknown>();
  for (const tool of tools ?? []) {
    if (tool?.function?.parameters !== undefined) schemas.set(tool.function.name, tool.function.parameters);
  }
  return schemas;
}

function prepare(call: AssistantToolCall, finishReason: string | undefined, schemas: Schemas): Prepared {
  const name = call.function.name;
  const raw = call.function.arguments ?? "";
  try {
    const parsed = parseToolArguments(raw, { finishReason, name });
    const schema = schemas.get(name);
    const args = schema === undefined ? parsed.value : dropOptionalNulls(parsed.value, schema);
    return {
      call: { id: call.id, type: "function", function: { name, arguments: parsed.json } },
      request: { id: call.id, name, args, raw },
      json: parsed.json,
      ...(finishReason === "" ? { unreadable: cutOff(name) } : {}),
    };
  } catch (error) {
    if (!ToolArgumentsError.isInstance(error)) throw error;
    // Replayed as {}: a server that parses replayed arguments refuses the originals on every later request.
    return {
      call: { id: call.id, type: "function", function: { name, arguments: "{}" } },
      request: { id: call.id, name, args: {}, raw },
      json: "{}",
      unreadable: finishReason === "" ? cutOff(name) : error.message,
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
  return toolCalls.map((call) => prepare(call, finishReason, new Map()).call);
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
  const schemas = schemasOf(options.tools);
  const prepared = toolCalls.map((call) => prepare(call, options.finishReason, schemas));
  const inFlight = new Map<string, Promise<Outcome>>();
  let stopped: unknown;

  const start = (p: Prepared): Promise<Outcome> => {
    if (p.unreadable !== undefined)
      return Promise.resolve({ ok: false, content: p.unreadable, source: "refused" });
    if (signal?.aborted) {
      stopped ??= signal.reason;
      return Promise.resolve({ ok: false, content: NOT_RUN, source: "refused" });
    }
    const policy = options.dedupe ?? true;
    const shared = typeof policy === "function" ? policy(p.request) : policy;
    const key = `${p.request.name}\u0000${p.json}`;
    const existing = shared ? inFlight.get(key) : undefined;
    if (existing) return existing.then(({ ok, content }) => ({ ok, content, source: "repeat" }));
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
    return { ok: true, content: asContent(value), source: "dispatched", ms: Date.now() - started };
  } catch (error) {
    const ms = Date.now() - started;
    if (signal?.aborted) return { ok: false, content: STOPPED_DURING, source: "dispatched", ms };
    return { ok: false, content: `Error: ${errorMessage(error)}`, source: "dispatched", ms };
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
