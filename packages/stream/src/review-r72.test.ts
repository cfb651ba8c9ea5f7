import { describe, expect, it } from "vitest";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";

// Review r72: leftovers with repros, each over real HTTP to the testkit.

const chunk = (choices: unknown[]) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices })}\n\n`;

describe("R72-1: a choice index written as a string of digits (as some relays send it)", () => {
  for (const [first, second] of [
    ["0", "1"],
    [0, "1"],
    ["0", 1],
    [" 0 ", " 1 "],
  ] as const) {
    it(`reads only the first choice with indexes ${JSON.stringify(first)} and ${JSON.stringify(second)} (n: 2)`, async () => {
      const stream = [
        chunk([{ index: first, delta: { role: "assistant", content: "" } }]),
        chunk([{ index: second, delta: { role: "assistant", content: "" } }]),
        chunk([{ index: first, delta: { content: "Paris" } }]),
        chunk([{ index: second, delta: { content: "Lyon" } }]),
        chunk([
          { index: first, delta: { content: " it is." } },
          { index: second, delta: { content: " perhaps." } },
        ]),
        chunk([{ index: second, delta: {}, finish_reason: "length" }]),
        chunk([{ index: first, delta: {}, finish_reason: "stop" }]),
        "data: [DONE]\n\n",
      ];
      const { client } = await harness([
        { type: "raw", headers: { "content-type": "text/event-stream" }, chunks: stream },
      ]);
      const told: string[] = [];
      const turn = await streamTurn(client, body({ n: 2 }), { onOutput: (text) => told.push(text) });
      expect(turn.content).toBe("Paris it is.");
      expect(told.join("")).toBe("Paris it is.");
      expect(turn.finishReason).toBe("stop");
    });
  }

  it("keeps a later choice's tool calls out of the first choice's", async () => {
    const call = (name: string, args: string) => ({
      tool_calls: [{ index: 0, id: `call_${name}`, type: "function", function: { name, arguments: args } }],
    });
    const stream = [
      chunk([{ index: "0", delta: call("get_weather", '{"city":"Paris"}') }]),
      chunk([{ index: "1", delta: call("get_time", '{"tz":"UTC"}') }]),
      chunk([{ index: "1", delta: {}, finish_reason: "tool_calls" }]),
      chunk([{ index: "0", delta: {}, finish_reason: "tool_calls" }]),
      "data: [DONE]\n\n",
    ];
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "text/event-stream" }, chunks: stream },
    ]);
    const turn = await streamTurn(client, body({ n: 2 }));
    expect(turn.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ["call_get_weather", "get_weather", '{"city":"Paris"}'],
    ]);
  });

  it("reads only the first choice of a whole completion (a server that ignored stream: true) whose indexes are strings", async () => {
    const completion = {
      id: "c1",
      object: "chat.completion",
      choices: [
        { index: "0", message: { role: "assistant", content: "Paris" }, finish_reason: "stop" },
        { index: "1", message: { role: "assistant", content: "Lyon" }, finish_reason: "length" },
      ],
    };
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "application/json" }, chunks: [JSON.stringify(completion)] },
    ]);
    const turn = await streamTurn(client, body({ n: 2 }));
    expect(turn.content).toBe("Paris");
    expect(turn.finishReason).toBe("stop");
  });
});

describe("R72-2: usage counts no server reports", () => {
  const stream = (...usages: unknown[]) => [
    chunk([{ index: 0, delta: { role: "assistant", content: "Hi" } }]),
    chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
    ...usages.map(
      (usage) =>
        `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [], usage })}\n\n`,
    ),
    "data: [DONE]\n\n",
  ];

  it("a count past 2^53 - 1 is no count: the total is never Infinity (two 1e308s summed)", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: stream({ prompt_tokens: 1e308, completion_tokens: 1e308 }),
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(Number.isFinite(turn.usage.total)).toBe(true);
    expect(turn.usage).toEqual({ prompt: 0, completion: 0, total: 0, cached: 0 });
  });

  it("a count past 2^53 - 1 beside real ones is dropped and the real ones kept", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: stream({
          prompt_tokens: 12,
          completion_tokens: 2 ** 60,
          prompt_tokens_details: { cached_tokens: 1e300 },
        }),
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.usage).toEqual({ prompt: 12, completion: 0, total: 12, cached: 0 });
  });

  it("a __proto__ key in a later usage object (as JSON.parse keeps it) is data, never where counts are read from", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [
          chunk([{ index: 0, delta: { role: "assistant", content: "Hi" } }]),
          `data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"completion_tokens":1}}\n\n`,
          `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"__proto__":{"prompt_tokens":500},"completion_tokens":3}}\n\n`,
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.usage).toEqual({ prompt: 0, completion: 3, total: 3, cached: 0 });
  });
});

describe("R72-3: timings no server measures", () => {
  it("a time or draft count past 2^53 - 1 is not reported, as a usage count past it is not", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/event-stream" },
        chunks: [
          chunk([{ index: 0, delta: { role: "assistant", content: "Hi" } }]),
          `data: ${JSON.stringify({
            id: "c1",
            object: "chat.completion.chunk",
            choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
            timings: { prompt_ms: 1e308, predicted_ms: 42.5, draft_n: 2 ** 60, draft_n_accepted: 3 },
          })}\n\n`,
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.timings).toEqual({ decodeMs: 42.5, draftAccepted: 3 });
  });
});
