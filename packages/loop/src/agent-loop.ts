import { getClient } from "@loopwright/client";
import { orderTools } from "@loopwright/schema-compat";
import { type ClientLike, streamTurn, type Turn } from "@loopwright/stream";
import {
  type ChatMessage,
  DEFAULT_MAX_TOOL_ITERATIONS,
  type LoopConfig,
  type ToolDefinition,
} from "./config.js";
import { AgentLoopError, type RunState, type RunUsage, ToolIterationLimit } from "./errors.js";
import { type CallResult, type Dispatch, type DispatchRequest, runCalls } from "./run-calls.js";

const NOT_RUN_AT_LIMIT = "Not run: the run reached its tool-step limit (maxToolIterations).";

/** What the loop tells a watcher, in order. */
export type LoopEvent =
  | { kind: "output"; text: string }
  | { kind: "thinking"; text: string }
  | { kind: "tool-call"; id: string; name: string; args: string }
  | { kind: "tool-result"; id: string; name: string; ok: boolean; content: string }
  | { kind: "usage"; usage: RunUsage; turn: { usage: Turn["usage"]; finishReason: string } }
  | { kind: "notice"; text: string };

/** What `runAgentLoop` reads. */
export interface AgentLoopOptions {
  /** Endpoint, model parameters and limits. */
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
  /** Told of every step as it happens. Not awaited. */
  onEvent?: (event: LoopEvent) => void;
  /** The client to send with; `getClient(config)` when absent. */
  client?: ClientLike;
}

/** What a finished run hands back. */
export interface AgentLoopResult extends RunState {
  /** The last turn: the answer. */
  turn: Turn;
  /** How many requests the run made. */
  steps: number;
}

function addUsage(total: RunUsage, usage: Turn["usage"]): RunUsage {
  return {
    prompt: total.prompt + usage.prompt,
    completion: total.completion + usage.completion,
    total: total.total + usage.total,
    cached: total.cached + usage.cached,
  };
}

function buildRequest(options: AgentLoopOptions, messages: ReadonlyArray<ChatMessage>) {
  const { config } = options;
  const tools = options.tools?.length
    ? orderTools(options.tools, config.toolOrder === undefined ? true : config.toolOrder)
    : undefined;
  return {
    ...(config.extraBody ?? {}),
    model: config.model,
    messages: options.system ? [{ role: "system", content: options.system }, ...messages] : [...messages],
    stream: true as const,
    stream_options: { include_usage: true },
    ...(tools ? { tools } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.maxTokens ? { max_tokens: config.maxTokens } : {}),
    ...(config.reasoningEffort && config.reasoningEffort !== "off"
      ? { reasoning_effort: config.reasoningEffort }
      : {}),
  };
}

/**
 * Runs an agent: one streamed turn per step, the model's tool calls dispatched and answered in the
 * transcript between steps, until a turn asks for no tools. Throws `ToolIterationLimit` when the
 * model still asks after `maxToolIterations` tool steps, and `AgentLoopError` (the cause on
 * `cause`) for anything else; both carry the run, whose transcript always has every call answered.
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
  const { config, signal, onEvent } = options;
  const limit = config.maxToolIterations ?? DEFAULT_MAX_TOOL_ITERATIONS;
  const messages: ChatMessage[] = [...options.messages];
  let usage: RunUsage = { prompt: 0, completion: 0, total: 0, cached: 0 };
  let toolCalls = 0;
  let toolSteps = 0;
  const state = (): RunState => ({ messages: [...messages], usage, toolCalls });

  let client: ClientLike;
  try {
    client = options.client ?? getClient(config);
  } catch (error) {
    throw new AgentLoopError(error, state());
  }

  for (let steps = 1; ; steps++) {
    let turn: Turn;
    try {
      const idle = config.requestTimeoutSeconds ? config.requestTimeoutSeconds * 1000 : undefined;
      turn = await streamTurn(client, buildRequest(options, messages), {
        signal,
        ...(idle ? { idleMs: idle, firstChunkMs: (config.firstTokenSeconds ?? idle / 200) * 1000 } : {}),
        onOutput: (text) => onEvent?.({ kind: "output", text }),
        onThinking: (text) => onEvent?.({ kind: "thinking", text }),
      });
    } catch (error) {
      throw new AgentLoopError(error, state());
    }
    usage = addUsage(usage, turn.usage);
    onEvent?.({ kind: "usage", usage, turn: { usage: turn.usage, finishReason: turn.finishReason } });
    if (turn.finishReason === "length") {
      onEvent?.({ kind: "notice", text: "The reply was cut off at the token ceiling (maxTokens)." });
    }

    if (turn.toolCalls.length === 0) {
      messages.push({ role: "assistant", content: turn.content });
      return { turn, steps, ...state() };
    }

    toolCalls += turn.toolCalls.length;
    const tell = {
      onToolCall: (r: DispatchRequest) =>
        onEvent?.({ kind: "tool-call", id: r.id, name: r.name, args: JSON.stringify(r.args) }),
      onToolResult: (r: CallResult) => onEvent?.({ kind: "tool-result", ...r }),
    };
    if (toolSteps >= limit) {
      // Answer the calls without running them, so the transcript the error carries can be sent again.
      messages.push({ role: "assistant", content: turn.content || null, tool_calls: turn.toolCalls });
      for (const call of turn.toolCalls) {
        messages.push({ role: "tool", tool_call_id: call.id, content: NOT_RUN_AT_LIMIT });
      }
      throw new ToolIterationLimit(limit, state());
    }
    toolSteps++;
    const ran = await runCalls(turn.toolCalls, {
      dispatch: options.dispatch,
      signal,
      finishReason: turn.finishReason,
      ...tell,
    });
    messages.push({ role: "assistant", content: turn.content || null, tool_calls: ran.calls }, ...ran.results);
    if (ran.stopped !== undefined) throw new AgentLoopError(ran.stopped, state());
  }
}
