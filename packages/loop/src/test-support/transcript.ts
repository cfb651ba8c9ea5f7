// Shared by the loop's tests; not published (package.json `files` leaves src/test-support out).
import type { ChatMessage, ToolDefinition } from "../config.js";

/** A tool the model can call with two numbers. */
export const ADD_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "add",
    description: "Add two numbers",
    parameters: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
  },
};

/** The question most tests ask. */
export const QUESTION: ChatMessage[] = [{ role: "user", content: "What is 2 + 3?" }];

/** The ids of assistant tool calls in a transcript that no tool message answers. */
export function unanswered(messages: ReadonlyArray<ChatMessage>): string[] {
  const asked = messages.flatMap((m) =>
    m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [],
  );
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
  return asked.filter((id) => !answered.has(id));
}
