import { type ClientPool, firstTokenMs, redactor, timeoutMs } from "@loopwright/client";
import { type RunEvent, type RunMetrics, runMetrics, type TurnMetrics } from "@loopwright/events";
import type { Calibration, LedgerEntry } from "@loopwright/ledger";
import { buildBody, type CapabilityStore, ContextOverflow } from "@loopwright/negotiate";
import type { ChatClientLike, Turn } from "@loopwright/stream";
import { recoverToolCalls } from "@loopwright/tool-calls";
import {
  type ChatMessage,
  DEFAULT_MAX_TOOL_ITERATIONS,
  type LoopConfig,
  type ToolDefinition,
} from "./config.js";
import { continueTurn, isContinuable } from "./continue-turn.js";
import {
  AgentLoopError,
  AgentLoopOverflow,
  type RunState,
  type RunUsage,
  ToolIterationLimit,
} from "./errors.js";
import { RunMeasure } from "./measure-turn.js";
import {
  type CallResult,
  type DedupePolicy,
  type Dispatch,
  type DispatchRequest,
  NOT_RUN,
  replayable,
  runCalls,
} from "./run-calls.js";
import { type BuildRequest, type RunTurnOptions, runTurn } from "./run-turn.js";
import { tell } from "./tell.js";

const NOT_RUN_AT_LIMIT = "Not run: the run reached its tool-step limit (maxToolIterations).";
const PREVIEW_CHARS = 2000;

/** What `runAgentLoop` reads. */
export interface AgentLoopOptions {
  /** Endpoint, model parameters, tool and retry policy. */
  config: LoopConfig;
  /** Sent as the first message when given. */
  system?: string;
  /** The transcript so far, ending in the question. Not written to. */
  messages: ReadonlyArray<ChatMessage>;
  /** Every tool the run may call. */
  tools?: ReadonlyArray<ToolDefinition>;
  /** Runs a tool call; what it returns or throws is what the model reads. */
  dispatch: Dispatch;
  /** Stops the run: the stream is closed and every pending call answered. */
  signal?: AbortSignal;
  /** Told of every step as it happens (forward it to `emit`). Not awaited; what it throws is ignored. */
  onEvent?: (event: RunEvent) => void;
  /**
   * Told once a step, before the request goes out, of the messages and tools as the client is about
   * to be sent them — the request as first built: a retry sends it again, while a refusal's lesser
   * body and a continuation are not reported. For reading (`beforeStep` is where the transcript is
   * changed). Not awaited; what it throws is ignored.
   */
  onRequest?: (request: LoopRequest, step: number) => void;
  /** The client to send with; `getClient(config)` when absent. */
  client?: ChatClientLike;
  /** The token ledger a previous run handed back, to continue it (indexes into `messages`). */
  ledger?: readonly LedgerEntry[];
  /** Run a step's tool calls together rather than one after another (default false). */
  parallel?: boolean;
  /** Share one answer between identical calls of a step: true (default), false, or asked per call. */
  dedupeToolCalls?: DedupePolicy;
  /**
   * Look for tool calls the server's parser left in the reply as text (Hermes, Qwen, Mistral,
   * Llama 3 …) when a turn has none; default true. Found calls are run, with a notice.
   */
  recoverToolCalls?: boolean;
  /** Told of every call the model made, before it runs (the step limit's unrun calls too). Not awaited; what it throws is ignored. */
  onToolCall?: (request: DispatchRequest) => void;
  /** Told of every call's whole result as it lands. Not awaited; what it throws is ignored. */
  onToolResult?: (result: CallResult) => void;
  /**
   * Told of each message as the loop appends it — the assistant message as it will be replayed
   * (recovered calls folded in, arguments repaired) with its turn, then each tool result — and
   * awaited, so a host's row is written before the tools run and before the next request. What it
   * throws ends the run (every call still answered).
   */
  onMessage?: (message: ChatMessage, step: number, turn?: Turn) => unknown;
  /**
   * Handed the transcript before each request, with `{ used, limit, ledger }` — the prompt the
   * run's last request reported (absent before the first and where nothing was reported), the
   * window (`config.contextLength`), and the token ledger so far — and may return a replacement:
   * where a host prunes or compacts mid-run. The ledger is moved onto the new transcript
   * (`rebaseLedger`). A replacement must leave every tool call answered. What it throws ends the run.
   */
  beforeStep?: (
    messages: readonly ChatMessage[],
    step: number,
    context: BeforeStepContext,
  ) => readonly ChatMessage[] | undefined | Promise<readonly ChatMessage[] | undefined>;
}

/** A step's request as `onRequest` is handed it: what the client is about to be sent. */
export interface LoopRequest {
  /** The messages, the system prompt first when there is one. */
  messages: readonly ChatMessage[];
  /** The tools as declared (ordered, strict or relaxed as this endpoint takes them); empty for none. */
  tools: readonly ToolDefinition[];
}

/** What `beforeStep` is told besides the transcript. */
export interface BeforeStepContext {
  /** The prompt tokens the run's last request reported; absent before the first step or where none was reported. */
  used?: number;
  /** The context window, where `config.contextLength` gives one. */
  limit?: number;
  /** The token ledger so far. */
  ledger: readonly LedgerEntry[];
}

/** The ids of tool calls in a transcript that no later tool message answers. */
function unansweredCalls(messages: readonly ChatMessage[]): string[] {
  const missing: string[] = [];
  messages.forEach((message, at) => {
    if (message.role !== "assistant" || !message.tool_calls?.length) return;
    let end = messages.findIndex((m, i) => i > at && m.role === "assistant");
    if (end < 0) end = messages.length;
    const answered = new Set(messages.slice(at + 1, end).map((m) => m.tool_call_id));
    for (const call of message.tool_calls) if (!answered.has(call.id)) missing.push(call.id);
  });
  return missing;
}

/** The caches a run reads and writes: one runtime's client pool, capability latches and calibration. */
export interface LoopServices {
  clients: Pick<ClientPool, "getClient">;
  capabilities: Pick<CapabilityStore, "capabilitiesFor">;
  calibration: Pick<Calibration, "calibrate" | "charsPerTokenFor">;
}

/** What a finished run hands back. */
export interface AgentLoopResult extends RunState {
  /** The last turn: the answer. */
  turn: Turn;
  /** How many turns (requests answered) the run took. */
  steps: number;
  /** The token ledger: one `{ through, prompt, epoch }` per request whose prompt was reported. */
  ledger: LedgerEntry[];
  /** The run added up from the events it emitted (`runMetrics`, against `config.contextLength`). */
  metrics: RunMetrics;
}

/** Cuts a long argument or result for a watcher; the model always reads the whole text. */
export function preview(text: string, max = PREVIEW_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}… [${text.length - max} more characters]` : text;
}

function addUsage(total: RunUsage, usage: Turn["usage"]): RunUsage {
  return {
    prompt: total.prompt + usage.prompt,
    completion: total.completion + usage.completion,
    total: total.total + usage.total,
    cached: total.cached + usage.cached,
  };
}

/**
 * `runAgentLoop` against the given caches; what `createRuntime().runAgentLoop` and the top-level
 * `runAgentLoop` (the default runtime) both call.
 *
 * Runs an agent: one turn per step (`runTurn`: retries, refusals answered, the stream read back),
 * the model's tool calls dispatched and answered in the transcript between steps, until a turn asks
 * for no tools. Every turn ends in a `usage` event.
 *
 * Throws `ToolIterationLimit` when the model still asks after `maxToolIterations` tool steps,
 * `AgentLoopOverflow` (a `ContextOverflow`) for a request too big for the window, and
 * `AgentLoopError` (the cause on `cause`) for anything else. Each carries the run, whose transcript
 * always has every tool call answered, so it can be stored or sent again as it is.
 */
export async function runLoop(services: LoopServices, options: AgentLoopOptions): Promise<AgentLoopResult> {
  try {
    checkOptions(options);
  } catch (error) {
    const messages = Array.isArray(options?.messages) ? [...options.messages] : [];
    throw new AgentLoopError(error, {
      messages,
      usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
      toolCalls: 0,
    });
  }
  const { config, signal } = options;
  // The endpoint's own key, header values and URL credentials never reach a notice or an error.
  const redact = redactor(config);
  // Watchers are not awaited, and what they throw (or reject with) is theirs, never the run's.
  // What runMetrics reads is kept for the result; the output and thinking deltas are not.
  const kept: RunEvent[] = [];
  const onEvent = (event: RunEvent) => {
    if (event.kind !== "output" && event.kind !== "thinking") kept.push(event);
    tell(options.onEvent, event);
  };
  const limit = config.maxToolIterations ?? DEFAULT_MAX_TOOL_ITERATIONS;
  const messages: ChatMessage[] = [...options.messages];
  const tools = options.tools ?? [];
  let usage: RunUsage = { prompt: 0, completion: 0, total: 0, cached: 0 };
  let toolCalls = 0;
  let toolSteps = 0;
  const state = (): RunState => ({ messages: [...messages], usage, toolCalls });
  const finished = (turn: Turn, steps: number): AgentLoopResult => ({
    turn,
    steps,
    ledger: measure.ledger,
    metrics: runMetrics([...kept, { kind: "done" }], {
      ...(config.contextLength ? { contextLength: config.contextLength } : {}),
    }),
    ...state(),
  });
  const fail = (error: unknown): never => {
    redact(error);
    if (ContextOverflow.isInstance(error)) throw new AgentLoopOverflow(error, state());
    throw new AgentLoopError(error, state());
  };

  let client: ChatClientLike;
  try {
    client = options.client ?? services.clients.getClient(config);
  } catch (error) {
    return fail(error);
  }
  const supports = services.capabilities.capabilitiesFor(config.baseUrl, config.apiKey);
  const notice = (text: string) => onEvent({ kind: "notice", text: redact(text) });
  const measure = new RunMeasure(
    options.ledger ?? [],
    services.calibration,
    supports,
    config.model,
    options.system ?? "",
  );

  let used: number | undefined;
  for (let step = 1; ; step++) {
    if (options.beforeStep) {
      try {
        const replaced = await options.beforeStep([...messages], step, {
          ...(used !== undefined ? { used } : {}),
          ...(config.contextLength ? { limit: config.contextLength } : {}),
          ledger: [...measure.ledger],
        });
        if (replaced !== undefined && replaced !== null) {
          if (!Array.isArray(replaced)) {
            throw new TypeError(
              "beforeStep must return an array of messages, or nothing to keep the transcript.",
            );
          }
          const missing = unansweredCalls(replaced);
          if (missing.length > 0) {
            throw new TypeError(
              `beforeStep returned a transcript with tool calls no tool message answers (${missing.join(", ")}); ` +
                "an endpoint refuses that. Keep or drop each call together with its result.",
            );
          }
          measure.rebase(messages, replaced);
          messages.splice(0, messages.length, ...replaced);
        }
      } catch (error) {
        return fail(error);
      }
    }
    onEvent({ kind: "turn", step });
    const sent = options.system ? [{ role: "system", content: options.system }, ...messages] : [...messages];
    const charsPerToken = services.calibration.charsPerTokenFor(supports, config.model);
    const started = Date.now();
    let firstAt: number | undefined;
    const mark = () => {
      firstAt ??= Date.now();
    };
    let firstBody: ReturnType<typeof buildBody> | undefined;
    // The body the endpoint answered: after a refusal it is a lesser one than the first, and the
    // prompt it reported counts that body's tool block, not the refused one's.
    let lastBody: ReturnType<typeof buildBody> | undefined;
    let answeredBody: ReturnType<typeof buildBody> | undefined;
    let turn: Turn;
    // What the first request reported: a continuation's pieces sum their prompts, each of which
    // re-read the same transcript, so the ledger, calibration, cache check and context are
    // measured on this one (the turn's own usage stays the sum, which is what was billed).
    let firstUsage: Turn["usage"] | undefined;
    const build: BuildRequest = (supports, model) => {
      const body = buildBody(config, supports, model, sent, tools, config.toolOrder);
      lastBody = body;
      if (!firstBody) {
        firstBody = body;
        // Copies: a watcher that pushes onto what it was handed does not change what is sent.
        tell(
          options.onRequest,
          { messages: [...(body.messages as ChatMessage[])], tools: [...(body.tools ?? [])] },
          step,
        );
      }
      return body;
    };
    const turnOptions: RunTurnOptions = {
      model: config.model,
      droppable: Object.keys(config.extraBody ?? {}),
      signal,
      idleMs: timeoutMs(config),
      firstChunkMs: firstTokenMs(config),
      maxRetries: config.maxRetries,
      loadingTimeoutMs:
        config.loadingTimeoutSeconds === undefined ? undefined : config.loadingTimeoutSeconds * 1000,
      contextLimit: config.contextLength,
      charsPerToken,
      onNotice: notice,
      onOutput: (text) => {
        mark();
        onEvent({ kind: "output", text });
      },
      onThinking: (text) => {
        mark();
        onEvent({ kind: "thinking", text });
      },
      onToolCallDelta: mark,
    };
    try {
      turn = await runTurn(client, supports, build, turnOptions);
      firstUsage = turn.usage;
      answeredBody = lastBody;
      const continuations = config.maxContinuations ?? 0;
      if (continuations > 0 && isContinuable(turn)) {
        notice("The reply was cut off at the token ceiling (maxTokens); carrying it on.");
        turn = await continueTurn(client, supports, build, turn, {
          ...turnOptions,
          contextLimit: undefined, // the size guard spoke for the first request; the server weighs the rest
          maxContinuations: continuations,
        });
      }
    } catch (error) {
      return fail(error);
    }
    usage = addUsage(usage, turn.usage);
    const measuredUsage = firstUsage ?? turn.usage;
    // The last request's prompt, or nothing where it reported none (never an older request's).
    used = measuredUsage.prompt > 0 ? measuredUsage.prompt : undefined;
    const metrics: TurnMetrics = {
      usage: turn.usage,
      finishReason: turn.finishReason,
      timings: {
        ...turn.timings, // what the server measured (llama.cpp: prefill, decode, draft acceptance)
        totalMs: Date.now() - started,
        ...(firstAt ? { firstTokenMs: firstAt - started } : {}),
      },
    };
    if (firstBody) {
      measure.measure(
        {
          turn,
          firstUsage: measuredUsage,
          firstBody,
          answeredBody: answeredBody ?? firstBody,
          transcript: messages,
          charsPerToken,
        },
        metrics,
      );
    }
    onEvent({ kind: "usage", usage, turn: metrics, ledger: [...measure.ledger] });
    if (turn.finishReason === "length") notice("The reply was cut off at the token ceiling (maxTokens).");

    if (options.recoverToolCalls !== false) {
      const recovered = recoverFromText(turn, tools);
      if (recovered.found > 0) {
        turn = recovered.turn;
        notice(
          `Recovered ${recovered.found} tool call${recovered.found === 1 ? "" : "s"} written into the reply as text ` +
            "(the server's tool-call parser missed them).",
        );
      }
    }

    const append = async (message: ChatMessage, withTurn?: Turn) => {
      messages.push(message);
      if (options.onMessage) await options.onMessage(message, step, withTurn);
    };

    if (turn.toolCalls.length === 0) {
      try {
        await append({ role: "assistant", content: turn.content }, turn);
      } catch (error) {
        return fail(error);
      }
      return finished(turn, step);
    }

    // An id is distinct within a step: some servers (DeepSeek, GLM) repeat one across parallel calls,
    // and a transcript whose results cannot be told apart is refused on the next request.
    turn = { ...turn, toolCalls: distinctIds(turn.toolCalls) };
    toolCalls += turn.toolCalls.length;
    const calls = replayable(turn.toolCalls, turn.finishReason);
    const answerAll = async (content: string) => {
      for (const call of calls) await append({ role: "tool", tool_call_id: call.id, content });
    };
    if (toolSteps >= limit) {
      // Answer the calls without running them, so the transcript the error carries can be sent again;
      // watchers are told of them as of any call the model made.
      calls.forEach((call, at) => {
        const request: DispatchRequest = {
          id: call.id,
          name: call.function.name,
          args: JSON.parse(call.function.arguments) as Record<string, unknown>,
          raw: turn.toolCalls[at]?.function.arguments ?? call.function.arguments,
        };
        onEvent({
          kind: "tool-call",
          id: request.id,
          name: request.name,
          args: preview(JSON.stringify(request.args)),
        });
        tell(options.onToolCall, request);
      });
      for (const call of calls) {
        const result: CallResult = {
          id: call.id,
          name: call.function.name,
          ok: false,
          content: NOT_RUN_AT_LIMIT,
        };
        onEvent({ kind: "tool-result", ...result });
        tell(options.onToolResult, result);
      }
      try {
        await append({ role: "assistant", content: turn.content || null, tool_calls: calls }, turn);
        await answerAll(NOT_RUN_AT_LIMIT);
      } catch (error) {
        answerMissing(messages, calls, NOT_RUN_AT_LIMIT);
        return fail(error);
      }
      throw new ToolIterationLimit(limit, state());
    }
    toolSteps++;
    try {
      await append({ role: "assistant", content: turn.content || null, tool_calls: calls }, turn);
    } catch (error) {
      answerMissing(messages, calls, NOT_RUN);
      return fail(error);
    }
    const ran = await runCalls(turn.toolCalls, {
      dispatch: options.dispatch,
      signal,
      finishReason: turn.finishReason,
      parallel: options.parallel,
      dedupe: options.dedupeToolCalls,
      onToolCall: (r: DispatchRequest) => {
        onEvent({ kind: "tool-call", id: r.id, name: r.name, args: preview(JSON.stringify(r.args)) });
        tell(options.onToolCall, r);
      },
      onToolResult: (r: CallResult) => {
        onEvent({ kind: "tool-result", ...r, content: preview(r.content) });
        tell(options.onToolResult, r);
      },
    });
    let appended = 0;
    try {
      for (const result of ran.results) {
        appended++;
        await append(result);
      }
    } catch (error) {
      // The calls ran: the transcript keeps what they returned, not a "not run" they would be retried on.
      messages.push(...ran.results.slice(appended));
      return fail(error);
    }
    if (ran.stopped !== undefined) return fail(ran.stopped);
  }
}

/**
 * A turn with no calls, some text and tools to call, with the calls a server's parser left in the
 * text taken out of it and made real (`recoverToolCalls`); any other turn as it was.
 */
function recoverFromText(turn: Turn, tools: readonly ToolDefinition[]): { turn: Turn; found: number } {
  if (turn.toolCalls.length > 0 || tools.length === 0 || !turn.content.trim()) return { turn, found: 0 };
  const { calls, text } = recoverToolCalls(turn.content, tools);
  if (calls.length === 0) return { turn, found: 0 };
  const toolCalls = calls.map((c) => ({
    id: c.id,
    type: "function" as const,
    function: { name: c.name, arguments: JSON.stringify(c.args) },
  }));
  return { turn: { ...turn, content: text, toolCalls }, found: calls.length };
}

/** Appends an answer for every call that has none yet, so a failing host callback leaves a sendable transcript. */
function answerMissing(messages: ChatMessage[], calls: ReadonlyArray<{ id: string }>, content: string): void {
  // Only this step's answers count: a server may use an id again in a later step.
  const from = messages.findLastIndex((m) => m.role === "assistant");
  const answered = new Set(messages.slice(from + 1).map((m) => m.tool_call_id));
  for (const call of calls) {
    if (!answered.has(call.id)) messages.push({ role: "tool", tool_call_id: call.id, content });
  }
}

/** The calls with every id distinct: a repeat gets `<id>_2`, `<id>_3` … (the first keeps its own). */
function distinctIds<T extends { id: string }>(calls: readonly T[]): T[] {
  const taken = new Set(calls.map((call) => call.id));
  const seen = new Set<string>();
  return calls.map((call) => {
    if (!seen.has(call.id)) {
      seen.add(call.id);
      return call;
    }
    let n = 2;
    while (taken.has(`${call.id}_${n}`)) n++;
    const id = `${call.id}_${n}`;
    taken.add(id);
    seen.add(id);
    return { ...call, id };
  });
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
  if (typeof options.dispatch !== "function") {
    throw new TypeError(
      "runAgentLoop: dispatch must be a function (request, signal) => result that runs a tool call.",
    );
  }
  if (options.tools !== undefined && !Array.isArray(options.tools)) {
    throw new TypeError("runAgentLoop: tools must be an array of tool definitions.");
  }
  const { config } = options;
  for (const name of ["maxToolIterations", "maxContinuations", "maxRetries"] as const) {
    const value = config[name];
    if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
      throw new RangeError(`config.${name} must be a whole number from 0, got ${String(value)}.`);
    }
  }
  const loading = config.loadingTimeoutSeconds;
  if (loading !== undefined && !(typeof loading === "number" && loading >= 0)) {
    throw new RangeError(`config.loadingTimeoutSeconds must be a number from 0, got ${String(loading)}.`);
  }
}
