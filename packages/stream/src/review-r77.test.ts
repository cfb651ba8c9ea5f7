import { describe, expect, it } from "vitest";
import type { ChunkLike } from "./chunk.js";
import { StreamError } from "./errors.js";
import { type ChatClientLike, streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";

// Review r77: what real servers send that the reader got wrong, each over real HTTP to the testkit.

const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices, ...extra })}\n\n`;

/**
 * A host's own client (not the openai SDK): posts the request with fetch and hands on every `data:`
 * line's JSON as a chunk, as a hand-written SSE loop does.
 */
function hostClient(baseUrl: string): ChatClientLike {
  return {
    chat: {
      completions: {
        create: async (request, options) => {
          const response = await fetch(`${baseUrl}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(request),
            signal: options?.signal ?? null,
          });
          const text = await response.text();
          const chunks: ChunkLike[] = [];
          for (const line of text.split("\n")) {
            const data = line.startsWith("data:") ? line.slice(5).trim() : "";
            if (data === "" || data === "[DONE]") continue;
            chunks.push(JSON.parse(data) as ChunkLike);
          }
          return (async function* () {
            yield* chunks;
          })();
        },
      },
    },
  };
}

describe('R77-1: OpenRouter\'s mid-stream error (an error member beside choices finishing with "error")', () => {
  // openrouter.ai/docs/api-reference/streaming, "Handling Errors During Streaming": errors after the
  // stream began arrive as a regular data event with an `error` field, its choice finishing "error".
  const stream = [
    chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: "The tallest" }, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: "" }, finish_reason: "error" }], {
      provider: "openai",
      error: { code: "server_error", message: "Provider disconnected unexpectedly" },
    }),
    "data: [DONE]\n\n",
  ];

  it("is the server's error through a host's own client, not a turn that finished with \"error\"", async () => {
    const { server } = await harness([
      { type: "raw", headers: { "content-type": "text/event-stream" }, chunks: stream },
    ]);
    const failure = await streamTurn(hostClient(server.baseUrl), body()).then(
      (turn) => turn,
      (error: unknown) => error,
    );
    expect(StreamError.isInstance(failure)).toBe(true);
    const error = failure as StreamError;
    expect(error.code).toBe("server-error");
    expect(error.message).toContain("Provider disconnected unexpectedly");
    expect(error.serverError).toEqual({
      code: "server_error",
      message: "Provider disconnected unexpectedly",
    });
    expect(error.partial?.content).toBe("The tallest");
  });

  it("is the same error through the openai SDK (as it was)", async () => {
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "text/event-stream" }, chunks: stream },
    ]);
    const error = await streamTurn(client, body()).catch((e: unknown) => e);
    expect(StreamError.isInstance(error)).toBe(true);
    expect((error as StreamError).code).toBe("server-error");
    expect((error as StreamError).message).toContain("Provider disconnected unexpectedly");
  });
});
