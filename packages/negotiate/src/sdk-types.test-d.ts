// Type tests: a transcript typed with the `openai` SDK goes through negotiate and comes back typed so,
// and `buildBody`'s body goes to the SDK's `create` with no cast. Checked by `pnpm type-check` (tsc
// includes src); nothing here runs.
import type OpenAI from "openai";
import type {
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { expectTypeOf } from "vitest";
import {
  buildBody,
  type EndpointCapabilities,
  type ModelCapabilities,
  type ModelParams,
  type RequestBody,
  shortToolCallIds,
  type ToolDefinition,
} from "./index.js";

declare const supports: EndpointCapabilities;
declare const model: ModelCapabilities | undefined;
declare const messages: ChatCompletionMessageParam[];
declare const config: ModelParams;

// The SDK's messages come back as the SDK's messages.
expectTypeOf(shortToolCallIds(messages)).toEqualTypeOf<ChatCompletionMessageParam[]>();
expectTypeOf(buildBody({ model: "m" }, supports, model, messages).messages).toEqualTypeOf<
  ChatCompletionMessageParam[]
>();
// Untyped messages stay as they were.
expectTypeOf(shortToolCallIds([] as unknown[])).toEqualTypeOf<unknown[]>();

// A function tool is a `ToolDefinition`; the SDK's wider `ChatCompletionTool` (custom tools
// included) is not one, but `buildBody` takes it too (user-fit-r90.test-d.ts).
expectTypeOf<ChatCompletionFunctionTool>().toExtend<ToolDefinition>();
expectTypeOf<ChatCompletionTool>().not.toExtend<ToolDefinition>();

// The body is a streamed request (`stream: true`, a literal) the SDK's streaming overload takes:
// with no effort, with one of the SDK's, and whatever rung of the ladder it steps down to.
expectTypeOf(buildBody({ model: "m" }, supports, model, messages).stream).toEqualTypeOf<true>();
expectTypeOf(
  buildBody({ model: "m" }, supports, model, messages),
).toExtend<ChatCompletionCreateParamsStreaming>();
expectTypeOf(
  buildBody({ model: "m", reasoningEffort: "low" }, supports, model, messages),
).toExtend<ChatCompletionCreateParamsStreaming>();
// A config typed `ModelParams` may ask any effort string, which the SDK's types do not all take;
// its body is still a `RequestBody` of the SDK's messages.
expectTypeOf(buildBody(config, supports, model, messages)).toExtend<
  RequestBody<ChatCompletionMessageParam>
>();
expectTypeOf(
  buildBody(config, supports, model, messages),
).not.toExtend<ChatCompletionCreateParamsStreaming>();
// Every body is the unparameterised `RequestBody` a host may already store.
expectTypeOf(buildBody(config, supports, model, messages)).toExtend<RequestBody>();

// The calls a user writes, spelled out: no cast anywhere.
export async function send(client: OpenAI, tools: ChatCompletionTool[]) {
  const functionTools = tools.filter((tool): tool is ChatCompletionFunctionTool => tool.type === "function");
  const body = buildBody({ model: "m" }, supports, model, messages, functionTools);
  const stream = await client.chat.completions.create(body);
  const wire: ChatCompletionMessageParam[] = shortToolCallIds(messages);
  const sent = await client.chat.completions.create({ model: "m", messages: wire });
  return { stream, sent };
}

// Code that compiled before `buildBody` was generic still does. A body built from an object
// literal transcript (its `role` is any string) or from one whose roles leave out "tool" cannot
// say it holds a tool message, so its messages are `unknown[]`, as they were, and it takes one.
const literal = buildBody(config, supports, undefined, [{ role: "user", content: "hi" }]);
expectTypeOf(literal.messages).toEqualTypeOf<unknown[]>();
literal.messages.push({ role: "tool", tool_call_id: "c1", content: "42" });
literal.reasoning_effort = "xhigh";
declare const chat: { role: "user" | "assistant"; content: string }[];
expectTypeOf(buildBody(config, supports, model, chat).messages).toEqualTypeOf<unknown[]>();
buildBody(config, supports, model, chat).messages.push({ role: "tool", tool_call_id: "c1", content: "42" });
// A type whose roles name "tool" but that has no `tool_call_id` field cannot hold the loop's tool
// message either: its body's messages are `unknown[]`, and take one.
type Msg = { role: "system" | "user" | "assistant" | "tool"; content: string };
declare const msgs: Msg[];
expectTypeOf(buildBody(config, supports, undefined, msgs).messages).toEqualTypeOf<unknown[]>();
buildBody(config, supports, undefined, msgs).messages.push({
  role: "tool",
  tool_call_id: "c1",
  content: "42",
});
// With an optional `tool_call_id`, or one member per role, it can: the body keeps the type.
type Optional = { role: "system" | "user" | "assistant" | "tool"; content: string; tool_call_id?: string };
declare const optional: Optional[];
expectTypeOf(buildBody(config, supports, model, optional).messages).toEqualTypeOf<Optional[]>();
buildBody(config, supports, model, optional).messages.push({
  role: "tool",
  tool_call_id: "c1",
  content: "42",
});
// A host's own closed union with a tool role comes back as itself, as the SDK's does.
type HostMessage =
  | { role: "system" | "user" | "assistant"; content: string }
  | { role: "tool"; tool_call_id: string; content: string };
declare const host: HostMessage[];
expectTypeOf(buildBody(config, supports, model, host).messages).toEqualTypeOf<HostMessage[]>();
// The SDK-typed body takes only the SDK's messages; stored as the plain `RequestBody`, it takes any.
declare const other: { role: "tool"; content: string; extra: number };
// @ts-expect-error — not a `ChatCompletionMessageParam` (no tool_call_id).
buildBody(config, supports, model, messages).messages.push(other);
const stored: RequestBody = buildBody(config, supports, model, messages);
stored.messages.push(other);
