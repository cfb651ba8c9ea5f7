// A streamed answer carrying a usage object as a server wrote it, and one run answered with it:
// review-r79's and review-r82's usage cases share them.
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import type { ChatMessage } from "../config.js";
import { createRuntime } from "../index.js";

/** The one user message each usage run asks. */
export const question: ChatMessage[] = [{ role: "user", content: "Hello?" }];

/** A streamed answer (`content`, ending `finish`) whose last chunk carries `usage` as the server wrote it. */
export function answerWithUsage(
  usage: object,
  content = "hi",
  finish = "stop",
): { type: "raw"; chunks: string[] } {
  const chunk = (body: object) =>
    `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", ...body })}\n\n`;
  return {
    type: "raw",
    chunks: [
      chunk({ choices: [{ index: 0, delta: { role: "assistant", content }, finish_reason: null }] }),
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: finish }] }),
      chunk({ choices: [], usage }),
      "data: [DONE]\n\n",
    ],
  };
}

/**
 * One run answered with `usage`: its result and the notices it told. `started` is handed the
 * server before the run, so the caller closes it after the test whatever the run did.
 */
export async function runWithUsage(usage: object, started: (server: TestServer) => void) {
  const server = await startServer({ replies: [answerWithUsage(usage)] });
  started(server);
  const notices: string[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", contextLength: 8000 },
    messages: question,
    dispatch: () => "",
    onEvent: (event: RunEvent) => {
      if (event.kind === "notice") notices.push(event.text);
    },
  });
  return { result, notices };
}
