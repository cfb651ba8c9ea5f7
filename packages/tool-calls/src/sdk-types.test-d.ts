// Type tests: the tools `recoverToolCalls` takes include the `openai` SDK's and `sanitizeTools`'
// output, with no cast. Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import { sanitizeTools } from "@loopwright/schema-compat";
import type {
  ChatCompletionCustomTool,
  ChatCompletionFunctionTool,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { expectTypeOf } from "vitest";
import { recoverToolCalls, type ToolNameLike } from "./index.js";

expectTypeOf<ChatCompletionFunctionTool>().toExtend<ToolNameLike>();
expectTypeOf<ChatCompletionCustomTool>().toExtend<ToolNameLike>();
expectTypeOf<ChatCompletionTool[]>().toExtend<readonly ToolNameLike[]>();
expectTypeOf<ReturnType<typeof sanitizeTools<ChatCompletionTool>>>().toExtend<readonly ToolNameLike[]>();

declare const sdkTools: ChatCompletionTool[];
declare const functionTools: ChatCompletionFunctionTool[];
// As a host writes it: the SDK's arrays, and what sanitizeTools hands back for them.
export const fromSdk = () => recoverToolCalls("x", sdkTools);
export const fromFunctions = () => recoverToolCalls("x", functionTools);
export const fromSanitized = () => recoverToolCalls("x", sanitizeTools(sdkTools));
export const fromSanitizedFunctions = () => recoverToolCalls("x", sanitizeTools(functionTools));

// Names and MCP tools as before; a number is still no tool.
export const fromNames = () => recoverToolCalls("x", ["a", { name: "b", inputSchema: {} }]);
// @ts-expect-error a number is not a tool
export const fromNumber = () => recoverToolCalls("x", [1]);
