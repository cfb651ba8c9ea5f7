import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChunkLike } from "./chunk.js";
import { StreamError } from "./errors.js";
import { FenceSplitter, stripThinking } from "./fences.js";
import { type ChatClientLike, streamTurn } from "./stream-turn.js";
import { body, chunk, harness } from "./test-support/http.js";

// Review r77: what real servers send that the reader got wrong, each over real HTTP to the testkit.

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

describe("R77-2: a character outside the BMP cut between two deltas (\\ud83d, then \\ude00)", () => {
  // JSON.stringify writes a lone half as its escape, as a server that slices UTF-16 text does.
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const read = async (stream: string[], fences?: []) => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [...stream, "data: [DONE]\n\n"],
      },
    ]);
    const output: string[] = [];
    const thinking: string[] = [];
    const turn = await streamTurn(client, body(), {
      onOutput: (text) => output.push(text),
      onThinking: (text) => thinking.push(text),
      ...(fences ? { fences } : {}),
    });
    return { turn, output, thinking };
  };
  const whole = (pieces: string[]) => pieces.every((piece) => piece.isWellFormed());

  it("tells onOutput whole characters only, answer and fences [] alike", async () => {
    const stream = [delta({ content: "Done \ud83d" }), delta({ content: "\ude00 ok" }, "stop")];
    for (const fences of [undefined, [] as []]) {
      const { turn, output } = await read(stream, fences);
      expect(turn.content).toBe("Done 😀 ok");
      expect(output.join("")).toBe("Done 😀 ok");
      expect(whole(output)).toBe(true);
    }
  });

  it("tells onThinking whole characters only, from a reasoning field and from a fence", async () => {
    const field = await read([
      delta({ reasoning_content: "hmm \ud83e" }),
      delta({ reasoning_content: "\udd14 so" }),
      delta({ content: "A" }, "stop"),
    ]);
    expect(field.turn.reasoning).toBe("hmm 🤔 so");
    expect(field.thinking.join("")).toBe("hmm 🤔 so");
    expect(whole(field.thinking)).toBe(true);
    const fenced = await read([
      delta({ content: "<think>hmm \ud83e" }),
      delta({ content: "\udd14 so</think>A" }, "stop"),
    ]);
    expect(fenced.turn.reasoning).toBe("hmm 🤔 so");
    expect(fenced.thinking.join("")).toBe("hmm 🤔 so");
    expect(whole(fenced.thinking)).toBe(true);
  });

  it("still tells a half no second half completes, at the end (nothing is lost)", async () => {
    const { turn, output } = await read([delta({ content: "cut \ud83d" }, "length")]);
    expect(turn.content).toBe("cut \ud83d");
    expect(output.join("")).toBe("cut \ud83d");
  });
});

describe("R77-2: FenceSplitter over any cut of a text with astral characters (property)", () => {
  it("releases only whole characters wherever the text is cut, and the totals equal stripThinking", () => {
    const unit = fc.constantFrom("a", " ", "<think>", "</think>", "<", "😀", "🤔", "é");
    fc.assert(
      fc.property(
        fc.array(unit, { maxLength: 20 }).map((units) => units.join("")),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
        fc.boolean(),
        (text, at, startInReasoning) => {
          const cuts = [...new Set(at.map((f) => Math.floor(f * text.length)))].sort((x, y) => x - y);
          const splitter = new FenceSplitter({ startInReasoning });
          const content: string[] = [];
          const reasoning: string[] = [];
          let from = 0;
          for (const to of [...cuts, text.length]) {
            const split = splitter.push(text.slice(from, to));
            content.push(split.content);
            reasoning.push(split.reasoning);
            from = to;
          }
          const last = splitter.flush();
          content.push(last.content);
          reasoning.push(last.reasoning);
          for (const piece of [...content, ...reasoning]) expect(piece.isWellFormed()).toBe(true);
          const expected = stripThinking(text, { startInReasoning });
          expect(splitter.content).toBe(expected.content);
          expect(splitter.reasoning).toBe(expected.reasoning);
        },
      ),
    );
  });
});

describe("R77-3: an error on the choice (OpenRouter's StreamingChoice / NonStreamingChoice `error`)", () => {
  // OpenRouter's response schema: `StreamingChoice = { finish_reason, native_finish_reason, delta,
  // error?: ErrorResponse }`, finish_reason "error" when the model finishes the request with an error.
  const failed = { code: 502, message: "Upstream provider returned an invalid response" };

  it('is the server\'s error in a stream, not a turn that finished with "error"', async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [
          chunk([{ index: 0, delta: { role: "assistant", content: "Partial an" }, finish_reason: null }]),
          chunk([{ index: 0, delta: { content: "" }, finish_reason: "error", error: failed }]),
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const error = await streamTurn(client, body()).catch((e: unknown) => e);
    expect(StreamError.isInstance(error)).toBe(true);
    expect((error as StreamError).code).toBe("server-error");
    expect((error as StreamError).serverError).toEqual(failed);
    expect((error as StreamError).message).toContain(failed.message);
    expect((error as StreamError).partial?.content).toBe("Partial an");
  });

  it("is the server's error in a whole completion from a server that ignored stream: true", async () => {
    const completion = {
      id: "gen-1",
      object: "chat.completion",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "" },
          finish_reason: "error",
          error: failed,
        },
      ],
    };
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "application/json" }, chunks: [JSON.stringify(completion)] },
    ]);
    const error = await streamTurn(client, body()).catch((e: unknown) => e);
    expect(StreamError.isInstance(error)).toBe(true);
    expect((error as StreamError).code).toBe("server-error");
    expect((error as StreamError).serverError).toEqual(failed);
  });

  it("leaves another choice's error to that choice (n: 2), and an error of null is none", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [
          chunk([{ index: 0, delta: { content: "Paris" }, finish_reason: null, error: null }]),
          chunk([{ index: 1, delta: { content: "" }, finish_reason: "error", error: failed }]),
          chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const turn = await streamTurn(client, body({ n: 2 }));
    expect(turn.content).toBe("Paris");
    expect(turn.finishReason).toBe("stop");
  });
});

describe("R77-4: a server error whose message is not text", () => {
  for (const [what, serverError, shown] of [
    ["an object", { message: { detail: "quota exceeded" }, code: 429 }, "quota exceeded"],
    ["null", { message: null, code: 500, type: "server_error" }, "server_error"],
    ["empty", { message: "", code: 503, type: "overloaded" }, "overloaded"],
  ] as const) {
    it(`quotes the whole error when its message is ${what}, never "[object Object]" or "null"`, async () => {
      const { client } = await harness([
        {
          type: "raw",
          headers: { "content-type": "text/event-stream" },
          chunks: [
            chunk([{ index: 0, delta: { content: "a" }, finish_reason: null }]),
            `data: ${JSON.stringify({ error: serverError })}\n\n`,
          ],
        },
      ]);
      const error = await streamTurn(client, body()).catch((e: unknown) => e);
      expect(StreamError.isInstance(error)).toBe(true);
      expect((error as StreamError).code).toBe("server-error");
      expect((error as StreamError).message).toContain(shown);
      expect((error as StreamError).message).not.toMatch(/\[object Object\]|stream: null\./);
    });
  }
});

describe("R77-5: a call whose pieces come under a fresh id and a new index each (no name after the first)", () => {
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const piece = (index: number, id: string, fn: Record<string, unknown>) => ({
    tool_calls: [{ index, id, type: "function", function: fn }],
  });
  const read = async (stream: string[]) => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [...stream, "data: [DONE]\n\n"],
      },
    ]);
    const turn = await streamTurn(client, body());
    return turn.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments]);
  };

  it("reads one call, not a named call with no arguments and nameless ones holding its pieces", async () => {
    // The shape oracle/langchain-oracle#163 reports for gpt-oss on OCI: each fragment its own id and
    // index (whether the indexes were on the wire or added by that client is not known).
    const calls = await read([
      delta(piece(0, "call_9a15", { name: "sql_get_claim_details", arguments: "" })),
      delta(piece(1, "cc06dd74", { arguments: '{"claim' })),
      delta(piece(2, "92765246", { arguments: '_id":' })),
      delta(piece(3, "9dad210b", { arguments: '"103"}' }), "tool_calls"),
    ]);
    expect(calls).toEqual([["call_9a15", "sql_get_claim_details", '{"claim_id":"103"}']]);
  });

  it("still opens a call for a piece bringing only its id, the name coming in the next piece", async () => {
    const calls = await read([
      delta(piece(0, "call_a", { name: "get_weather", arguments: '{"city":"Paris"}' })),
      delta(piece(1, "call_b", {})),
      delta({ tool_calls: [{ index: 1, function: { name: "get_time" } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: '{"tz":"UTC"}' } }] }, "tool_calls"),
    ]);
    expect(calls).toEqual([
      ["call_a", "get_weather", '{"city":"Paris"}'],
      ["call_b", "get_time", '{"tz":"UTC"}'],
    ]);
  });

  it("never adds a nameless piece under a new id to a call that is already whole", async () => {
    const calls = await read([
      delta(piece(0, "call_a", { name: "f", arguments: '{"a":1}' })),
      delta(piece(1, "call_b", { arguments: '{"b":2}' }), "tool_calls"),
    ]);
    expect(calls[0]).toEqual(["call_a", "f", '{"a":1}']);
    expect(calls[1]?.[2]).toBe('{"b":2}');
  });
});
