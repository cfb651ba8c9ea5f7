// Type tests: sanitizeTools and relaxTools take the `openai` SDK's tool types and hand back types
// that narrow and go back to the SDK. Checked by `pnpm type-check` (tsc includes src); nothing runs.
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { expectTypeOf } from "vitest";
import { type JsonSchema, relaxTools, sanitizeTools, type ToolLike } from "./index.js";

declare const sdkTools: ChatCompletionTool[];
declare const functionTools: ChatCompletionFunctionTool[];

// SDK tools in.
expectTypeOf<ChatCompletionTool>().toExtend<ToolLike>();
expectTypeOf<ChatCompletionFunctionTool>().toExtend<ToolLike>();

// A result that narrows on `type`, with the parameters a JSON Schema object.
const sanitized = sanitizeTools(sdkTools);
for (const tool of sanitized) {
  if (tool.type === "function") {
    expectTypeOf(tool.function.name).toEqualTypeOf<string>();
    expectTypeOf(tool.function.parameters).toEqualTypeOf<JsonSchema>();
  } else {
    expectTypeOf(tool.type).toEqualTypeOf<"custom">();
  }
}

// Results go back to the SDK as they are, sanitized or relaxed.
expectTypeOf(sanitized).toExtend<ChatCompletionCreateParamsNonStreaming["tools"]>();
expectTypeOf(relaxTools(functionTools)).toExtend<ChatCompletionFunctionTool[]>();
expectTypeOf(relaxTools(sanitized)).toExtend<ChatCompletionTool[]>();

// The README's line: a literal function tool's parameters are reachable without a cast.
const declared = sanitizeTools([
  { type: "function" as const, function: { name: "search_files", parameters: { type: "object" } } },
]);
expectTypeOf(declared[0]?.function.parameters).toEqualTypeOf<JsonSchema | undefined>();
