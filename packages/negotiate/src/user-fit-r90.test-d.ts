// Type test (compiled by `pnpm type-check`, never run): the `openai` SDK's own `ChatCompletionTool[]`
// — custom tools included — goes into `buildBody` and comes out in a body the SDK's `create` takes,
// with no cast and no filtering. Before r90 it was refused (TS2345: "Property 'function' is missing
// in type 'ChatCompletionCustomTool'").
import type OpenAI from "openai";
import type {
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { expectTypeOf } from "vitest";
import {
  type AnyToolDefinition,
  type BuildBodyOptions,
  buildBody,
  type CustomToolDefinition,
  type EndpointCapabilities,
  type ModelCapabilities,
  type ToolDefinition,
  type ToolOrder,
} from "./index.js";

declare const supports: EndpointCapabilities;
declare const model: ModelCapabilities | undefined;
declare const messages: ChatCompletionMessageParam[];
declare const sdkTools: ChatCompletionTool[];
declare const ownTools: readonly ToolDefinition[];

expectTypeOf<ChatCompletionTool>().toExtend<AnyToolDefinition>();
expectTypeOf<OpenAI.Chat.ChatCompletionCustomTool>().toExtend<CustomToolDefinition>();

// A body with no tools, handed straight to the SDK's `create`: its overloads once made `Effort`
// read as `string` (TS2769, "Type 'string' is not assignable to type 'ReasoningEffort'").
export async function inline(client: OpenAI) {
  return client.chat.completions.create(buildBody({ model: "m" }, supports, model, messages));
}

// The SDK's tools in, the SDK's tools out.
const body = buildBody({ model: "m" }, supports, model, messages, sdkTools);
expectTypeOf(body.tools).toEqualTypeOf<ChatCompletionTool[] | undefined>();
expectTypeOf(body).toExtend<ChatCompletionCreateParamsStreaming>();
export async function send(client: OpenAI) {
  return client.chat.completions.create(buildBody({ model: "m" }, supports, model, messages, sdkTools));
}

// A comparator over the SDK's tools is handed custom ones too, so it reads them by `type`.
buildBody({ model: "m" }, supports, model, messages, sdkTools, {
  order: (a, b) => {
    expectTypeOf(a).toEqualTypeOf<ChatCompletionTool>();
    const name = (t: ChatCompletionTool) => (t.type === "function" ? t.function.name : t.custom.name);
    return name(a).localeCompare(name(b));
  },
});

// Function tools alone stay function tools: `body.tools` still reads `.function` with no narrowing.
expectTypeOf(buildBody({ model: "m" }, supports, model, messages, ownTools).tools).toEqualTypeOf<
  ToolDefinition[] | undefined
>();
declare const functionTools: ChatCompletionFunctionTool[];
export const names = buildBody({ model: "m" }, supports, model, messages, functionTools).tools?.map(
  (t) => t.function.name,
);

// A comparator written for function tools is still an order (as `Parameters<typeof buildBody>[5]` reads it).
const byName: ToolOrder = (a: ToolDefinition, b: ToolDefinition) =>
  a.function.name.localeCompare(b.function.name);
export const options: BuildBodyOptions = { order: byName };

// What must still not type-check: a tool with neither shape.
// @ts-expect-error a tool is a function tool or a custom one.
buildBody({ model: "m" }, supports, model, messages, [{ type: "web_search" }]);
