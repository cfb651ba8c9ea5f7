// Type tests: the loop's messages and tools meet the `openai` SDK's, both directions, with no cast.
// Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import type OpenAI from "openai";
import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
  ChatCompletionNamedToolChoice,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from "openai/resources/chat/completions";
import { expectTypeOf } from "vitest";
import type {
  AgentLoopOptions,
  AgentLoopResult,
  ChatMessage,
  StepPlan,
  ToolChoice,
  ToolDefinition,
} from "./index.js";

// SDK messages in: a transcript typed for the SDK is a loop transcript.
expectTypeOf<ChatCompletionMessageParam[]>().toExtend<AgentLoopOptions["messages"]>();
expectTypeOf<ChatCompletionMessageParam>().toExtend<ChatMessage>();

// Loop messages out: what a run hands back is a transcript the SDK takes.
expectTypeOf<AgentLoopResult["messages"]>().toExtend<ChatCompletionMessageParam[]>();

// SDK tools in: a function tool (`strict: boolean | null`) is a loop tool.
expectTypeOf<ChatCompletionFunctionTool>().toExtend<ToolDefinition>();
expectTypeOf<ChatCompletionFunctionTool[]>().toExtend<NonNullable<AgentLoopOptions["tools"]>>();

// A step's tool_choice is one the SDK takes, and the SDK's named function choice is one a plan takes.
expectTypeOf<ToolChoice>().toExtend<ChatCompletionToolChoiceOption>();
expectTypeOf<ChatCompletionNamedToolChoice>().toExtend<NonNullable<StepPlan["toolChoice"]>>();
// beforeStep may still return a bare transcript, or a plan.
expectTypeOf<() => ChatMessage[]>().toExtend<NonNullable<AgentLoopOptions["beforeStep"]>>();
expectTypeOf<() => Promise<StepPlan>>().toExtend<NonNullable<AgentLoopOptions["beforeStep"]>>();

// The calls a user writes, spelled out: no cast anywhere.
export async function roundTrip(client: OpenAI, result: AgentLoopResult, tools: ChatCompletionTool[]) {
  const sdkMessages: ChatCompletionMessageParam[] = result.messages;
  const functionTools = tools.filter((tool): tool is ChatCompletionFunctionTool => tool.type === "function");
  const options: Pick<AgentLoopOptions, "messages" | "tools"> = {
    messages: sdkMessages,
    tools: functionTools,
  };
  const reply = await client.chat.completions.create({
    model: "m",
    messages: result.messages,
    tools: functionTools,
  });
  return { reply, options };
}
