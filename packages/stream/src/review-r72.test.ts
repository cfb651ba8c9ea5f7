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
