import type { AssistantToolCall } from "../src/config.js";

/**
 * A message as a test reads it back: any role, every field a reply or the wire may carry. The
 * loop's `ChatMessage` is the SDK's union, which a test would otherwise narrow by role at each read.
 */
export type ReadMessage = {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: AssistantToolCall[];
  reasoning_content?: string;
  reasoning?: string;
};
