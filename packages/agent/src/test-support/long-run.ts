// A scripted run of many tool steps, used both in-process (the reference) and by the child the
// crash test kills. Deterministic: the same replies, the same tool results.
import type { Reply } from "@loopwright/testkit";
import type { AgentTool } from "../index.js";

export const LONG_RUN_STEPS = 12;

export function longRunReplies(chunkDelayMs = 0): Reply[] {
  const replies: Reply[] = [];
  for (let i = 1; i <= LONG_RUN_STEPS; i++) {
    replies.push({
      toolCalls: [
        { id: `s${i}a`, name: "note", arguments: `{"n":${i}}` },
        { id: `s${i}b`, name: "note", arguments: `{"n":${i + 100}}` },
      ],
      chunkDelayMs,
    });
  }
  replies.push({ content: "All noted.", chunkDelayMs });
  return replies;
}

export const NOTE_TOOL: AgentTool = {
  name: "note",
  description: "Writes a note",
  parameters: { type: "object", properties: { n: { type: "number" } } },
  execute: async ({ n }) => {
    await new Promise((resolve) => setTimeout(resolve, 3));
    return `noted ${String(n)}`;
  },
};
