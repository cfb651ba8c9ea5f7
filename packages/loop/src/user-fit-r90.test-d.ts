// Type test (compiled by `pnpm type-check`, never run): a loop of the user's own, composed from
// stream + negotiate + tool-calls + ledger with an `openai` v6 client and the SDK's own types in
// and out, and a watcher narrowing every run event by `kind` — no `as`, no `!`, no `any`.
import { getClient } from "@loopwright/client";
import { type RunEvent, type SequencedEvent, watch } from "@loopwright/events";
import { type LedgerEntry, recordRequest, tokensBetween } from "@loopwright/ledger";
import { buildBody, ContextOverflow, capabilitiesFor, negotiate } from "@loopwright/negotiate";
import { EndpointSilent, StreamError, type StreamErrorCode, streamTurn, type Turn } from "@loopwright/stream";
import { parseToolArguments, recoverToolCalls, ToolArgumentsError } from "@loopwright/tool-calls";
import type OpenAI from "openai";
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import {
  AgentLoopError,
  type DoneEvent,
  failedRun,
  LoopOptionError,
  type LoopOptionErrorCode,
  type RunEvent as LoopRunEvent,
  type NoticeEvent,
  type OutputEvent,
  type RetractEvent,
  type RunState,
  runAgentLoop,
  type SideUsageTotals,
  type ThinkingEvent,
  type ThinkingRetractEvent,
  type ToolCallEvent,
  ToolIterationLimit,
  type ToolResultEvent,
  type TurnEvent,
  type UsageEvent,
} from "./index.js";

export async function ownLoop(
  client: OpenAI,
  tools: ChatCompletionTool[],
): Promise<ChatCompletionMessageParam[]> {
  const config = { baseUrl: "http://127.0.0.1:8080/v1", model: "m", maxTokens: 512 };
  const messages: ChatCompletionMessageParam[] = [{ role: "user", content: "Say hello." }];
  const supports = capabilitiesFor(config.baseUrl);
  let ledger: LedgerEntry[] = [];
  const sent = { messages };
  const turn: Turn = await negotiate(
    supports,
    (supports, produced, model) =>
      streamTurn(client, buildBody(config, supports, model, messages, tools), { produced }),
    { model: config.model },
  );
  ledger = recordRequest(ledger, undefined, { ...sent, prompt: turn.usage.prompt ?? 0 });
  const between: number | undefined = tokensBetween(ledger, 0, 1, messages);
  const recovered = recoverToolCalls(turn.content, tools).calls.map((call) => call.name);
  const assistant: ChatCompletionAssistantMessageParam = {
    role: "assistant",
    content: turn.content,
    tool_calls: turn.toolCalls,
  };
  messages.push(assistant);
  for (const call of turn.toolCalls) {
    const { value } = parseToolArguments(call.function.arguments, { name: call.function.name });
    messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(value) });
  }
  // A second request through the SDK itself, with what the loop built.
  await client.chat.completions.create({ model: config.model, messages, tools });
  await getClient(config).chat.completions.create({ model: config.model, messages });
  return between === undefined || recovered.length > 0 ? messages : messages.slice();
}

/** Every kind a run emits, handled by name; `never` proves the switch covers them. */
export function describeEvent(event: SequencedEvent): string {
  switch (event.kind) {
    case "output":
    case "thinking":
      return event.text;
    case "retract":
    case "thinking-retract":
      return String(event.chars);
    case "turn":
      return String(event.step);
    case "tool-call":
      return `${event.id} ${event.name} ${event.args}`;
    case "tool-result":
      return `${event.id} ${event.ok} ${event.content} ${event.ms ?? 0}`;
    case "usage":
      return `${event.usage.total} ${event.turn.usage.prompt ?? 0}`;
    case "notice":
      return `${event.text} ${event.dropped ?? 0}`;
    case "error":
      return event.message;
    case "done":
      return String(event.stopped ?? false);
    default: {
      const unhandled: never = event;
      return unhandled;
    }
  }
}

export async function watcher(runId: string): Promise<string[]> {
  const seen: string[] = [];
  for await (const event of watch(runId)) {
    seen.push(`${event.seq} ${describeEvent(event)}`);
    const plain: RunEvent = event;
    seen.push(plain.kind);
  }
  return seen;
}

export async function handled(): Promise<string> {
  try {
    const result = await runAgentLoop({
      config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" },
      messages: [{ role: "user", content: "hi" }],
      runId: "r1",
      dispatch: async (call) => call.name,
    });
    return result.turn.content;
  } catch (e) {
    const run: RunState | undefined = failedRun(e);
    if (ToolIterationLimit.isInstance(e)) return String(e.run.toolCalls.length);
    if (AgentLoopError.isInstance(e)) return String(e.run.usage.total);
    if (LoopOptionError.isInstance(e)) {
      const code: LoopOptionErrorCode = e.code;
      return code;
    }
    if (ContextOverflow.isInstance(e)) return String(e.window ?? 0);
    if (StreamError.isInstance(e)) {
      const code: StreamErrorCode = e.code;
      return code;
    }
    if (EndpointSilent.isInstance(e)) return e.code;
    if (ToolArgumentsError.isInstance(e)) return e.code;
    return String(run?.messages.length ?? 0);
  }
}

// What the loop adds to a `usage` and an `error` event (its side tasks' cost) read by a watcher.
export async function sideCost(runId: string): Promise<number> {
  let side = 0;
  for await (const event of watch(runId)) {
    if (event.kind === "usage" || event.kind === "error") side = event.sideUsage?.total ?? side;
  }
  return side;
}

// Each kind's type by name from the loop alone (a host installed with only @loopwright/loop).
type Named =
  | OutputEvent
  | ThinkingEvent
  | RetractEvent
  | ThinkingRetractEvent
  | TurnEvent
  | ToolCallEvent
  | ToolResultEvent
  | UsageEvent
  | NoticeEvent
  | DoneEvent
  | Extract<LoopRunEvent, { kind: "error" }>;
export const sameUnion: [Named] extends [LoopRunEvent]
  ? [LoopRunEvent] extends [Named]
    ? true
    : false
  : false = true;
export const side: SideUsageTotals | undefined = undefined;
