import { describe, expect, it } from "vitest";
import { StreamError } from "./errors.js";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";

// A choice that finishes "error" says the server (or the provider behind a router) failed the
// turn, whether or not it put an error object beside it. Read as a finished turn, its tool call cut
// mid-arguments was closed up and run by the loop, and its half answer kept as the reply.
const chunk = (choices: unknown[]) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices })}\n\n`;

describe('a choice that finishes "error" with no error object', () => {
  it("is the server's error, with what came before it as the partial turn", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [
          chunk([
            {
              index: 0,
              delta: {
                role: "assistant",
                tool_calls: [
                  {
                    index: 0,
                    id: "call_1",
                    type: "function",
                    function: { name: "write", arguments: '{"path":"a.txt","text":"hel' },
                  },
                ],
              },
              finish_reason: null,
            },
          ]),
          chunk([{ index: 0, delta: {}, finish_reason: "error" }]),
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const error = await streamTurn(client, body()).catch((e: unknown) => e);
    expect(StreamError.isInstance(error)).toBe(true);
    expect((error as StreamError).code).toBe("server-error");
    expect((error as StreamError).message).toContain('finish_reason "error"');
    expect((error as StreamError).partial?.toolCalls[0]?.function.arguments).toBe(
      '{"path":"a.txt","text":"hel',
    );
  });

  it('leaves another choice\'s "error" to that choice (n: 2)', async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [
          chunk([{ index: 0, delta: { role: "assistant", content: "Fine." }, finish_reason: null }]),
          chunk([{ index: 1, delta: {}, finish_reason: "error" }]),
          chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.content).toBe("Fine.");
    expect(turn.finishReason).toBe("stop");
  });
});
