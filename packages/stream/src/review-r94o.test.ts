import { describe, expect, it } from "vitest";
import { StreamError } from "./errors.js";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";

// Review r94o: a server that sends tool calls without ids (some llama.cpp, Ollama and LM Studio
// builds) got `call_0` onward from streamTurn on every turn, so a host's own loop put `call_0` into
// its transcript once per step and one tool result answered two calls by one id.

/** One chunk holding a piece of the `index`-th call: its name and arguments, and an id only if given. */
const piece = (index: number, args: string, finish: string | null, id?: string) =>
  chunk([
    {
      index: 0,
      delta: {
        tool_calls: [
          { index, ...(id ? { id } : {}), type: "function", function: { name: "add", arguments: args } },
        ],
      },
      finish_reason: finish,
    },
  ]);

/** One turn of two calls, neither with an id, as those servers stream them. */
const idlessCalls = () => ({
  type: "raw" as const,
  headers: sse,
  chunks: [piece(0, '{"a":1}', null), piece(1, '{"a":2}', "tool_calls"), "data: [DONE]\n\n"],
});

/** A host's own two-step loop: each turn's calls and their results go into the next request. */
async function twoSteps(prefixFor?: (step: number) => string | null | undefined) {
  const { client, server } = await harness([idlessCalls(), idlessCalls(), { content: "done" }]);
  const messages: Record<string, unknown>[] = [{ role: "user", content: "add" }];
  for (let step = 1; step <= 2; step++) {
    const options = prefixFor ? { idPrefix: prefixFor(step) } : {};
    const turn = await streamTurn(client, body({ messages }), options);
    messages.push({ role: "assistant", content: null, tool_calls: turn.toolCalls });
    for (const call of turn.toolCalls) messages.push({ role: "tool", tool_call_id: call.id, content: "ok" });
  }
  await streamTurn(client, body({ messages }));
  // The ids as the server received them in the last request: what it matches results by.
  const sent = server.chatRequests.at(-1)?.body as { messages: { tool_calls?: { id: string }[] }[] };
  return sent.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id));
}

describe("R94o-1: idPrefix keeps apart the ids of id-less calls streamed at different steps", () => {
  it("with a per-step prefix the host's second request holds distinct ids", async () => {
    const ids = await twoSteps((step) => `call_${step}_`);
    expect(ids).toEqual(["call_1_0", "call_1_1", "call_2_0", "call_2_1"]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("the default is unchanged: call_0 onward on every turn, also for a null or absent idPrefix", async () => {
    for (const prefixFor of [undefined, () => null, () => undefined]) {
      expect(await twoSteps(prefixFor)).toEqual(["call_0", "call_1", "call_0", "call_1"]);
    }
  });

  it("an id the server sent is kept as sent, whatever the prefix", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: sse,
        chunks: [piece(0, "{}", null, "srv_9"), piece(1, "{}", "tool_calls")],
      },
    ]);
    const turn = await streamTurn(client, body(), { idPrefix: "s3_" });
    expect(turn.toolCalls.map((c) => c.id)).toEqual(["srv_9", "s3_1"]);
  });

  it("an idPrefix that is not a string is refused by name, before any request is sent", async () => {
    const { client, server } = await harness([idlessCalls()]);
    for (const bad of [3, {}, ["call_"], true]) {
      const refused = await streamTurn(client, body(), { idPrefix: bad as unknown as string }).catch(
        (e) => e,
      );
      expect(refused).toBeInstanceOf(StreamError);
      expect(refused.code).toBe("invalid-argument");
      expect(refused.message).toMatch(/streamTurn: idPrefix must be a string/);
    }
    expect(server.chatRequests).toHaveLength(0);
  });
});
