import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { listenForAbort } from "./abort-listeners.js";
import type { ChunkLike } from "./chunk.js";
import { openReply } from "./reply-body.js";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";
import { splitAt } from "./test-support/rechunk.js";
import { TurnReader } from "./turn-reader.js";

// Review r67 (R67N-1, R67N-2): defects a host would notice, each over real HTTP to the testkit.

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

const call = (index: number, id: string | undefined, name: string, args: string) => ({
  tool_calls: [
    { index, ...(id === undefined ? {} : { id }), type: "function", function: { name, arguments: args } },
  ],
});

const completion = (content: string) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  model: "sim",
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  usage: { prompt_tokens: 9, completion_tokens: 3000, total_tokens: 3009 },
});

describe("R67N-1: a whole completion longer than 64 KiB from a server that ignored stream: true", () => {
  for (const type of ["application/json", "text/event-stream"]) {
    it(`is read as the turn (${type}), not refused as not-a-stream`, async () => {
      const answer = `${"0123456789abcdef".repeat(8192)}é🙂`; // 128 KiB of answer and more
      const text = JSON.stringify(completion(answer));
      const { client } = await harness([
        // In many network reads, as a long body arrives.
        { type: "raw", headers: { "content-type": type }, chunks: splitAt(text, [1, 5000, 70_000, 100_000]) },
      ]);
      let told = "";
      const turn = await streamTurn(client, body(), { onOutput: (t) => (told += t) });
      expect(turn.content).toBe(answer);
      expect(told).toBe(answer);
      expect(turn.finishReason).toBe("stop");
      expect(turn.usage).toMatchObject({ prompt: 9, completion: 3000, total: 3009 });
    });
  }

  it("still names a long HTML page after reading only its start", async () => {
    const page = `<html><head><title>Sign in</title></head><body>${"x".repeat(200_000)}</body></html>`;
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "text/html" }, chunks: [page] },
    ]);
    await expect(streamTurn(client, body())).rejects.toMatchObject({
      code: "not-a-stream",
      message: expect.stringContaining('titled "Sign in"'),
    });
  });

  it(
    "reads any completion back whole however its bytes are cut (property)",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.string({ unit: "binary", maxLength: 300 }),
          fc.integer({ min: 0, max: 70_000 }),
          fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 }),
          async (tail, pad, at) => {
            const content = "p".repeat(pad) + tail;
            const bytes = new TextEncoder().encode(JSON.stringify(completion(content)));
            const pieces = splitAt(
              bytes,
              at.map((f) => Math.floor(f * bytes.length)),
            );
            const response = new Response(
              new ReadableStream<Uint8Array>({
                start(controller) {
                  for (const piece of pieces) controller.enqueue(piece);
                  controller.close();
                },
              }),
              { headers: { "content-type": "application/json" } },
            );
            const chunks: ChunkLike[] = [];
            for await (const c of await openReply({
              withResponse: async () => ({ data: undefined, response }),
            })) {
              chunks.push(c);
            }
            const reader = new TurnReader({ fences: [] });
            for (const c of chunks) reader.read(c);
            // The decoder's view of the same bytes (a lone surrogate becomes U+FFFD on the wire).
            const sent = JSON.parse(new TextDecoder().decode(bytes)).choices[0].message.content;
            expect(reader.finish().content).toBe(sent);
          },
        ),
        propertyRuns(60),
      );
    },
    propertyTimeout(60_000),
  );
});

describe("R67N-2: tool-call ids in a turn are unique, as an endpoint requires them back", () => {
  it("keeps an id the server gave two calls on the first and makes the later one unique", async () => {
    const { client } = await harness([
      {
        type: "raw",
        chunks: [
          chunk(call(0, "call_abc", "read", '{"path":"a"}')),
          chunk(call(1, "call_abc", "read", '{"path":"b"}')),
          chunk(call(2, "call_abc", "write", '{"path":"c"}'), "tool_calls"),
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.toolCalls.map((c) => [c.id, c.function.arguments])).toEqual([
      ["call_abc", '{"path":"a"}'],
      ["call_abc_1", '{"path":"b"}'],
      ["call_abc_2", '{"path":"c"}'],
    ]);
  });

  it("never gives a call without an id one the server gave another call", async () => {
    const { client } = await harness([
      {
        type: "raw",
        chunks: [
          chunk(call(0, undefined, "f", "{}")),
          chunk(call(1, "call_0", "g", "{}")),
          chunk(call(2, "call_0_0", "h", "{}"), "tool_calls"),
        ],
      },
    ]);
    const turn = await streamTurn(client, body());
    const ids = turn.toolCalls.map((c) => c.id);
    expect(ids).toEqual(["call_0_0_", "call_0", "call_0_0"]);
  });

  it("gives every call a unique id, the server's own wherever it is the first to hold it (property)", () => {
    const pool = fc.constantFrom("", "a", "a_1", "a_2", "call_0", "call_1", "call_1_1", "x");
    fc.assert(
      fc.property(fc.array(pool, { minLength: 1, maxLength: 8 }), (ids) => {
        const reader = new TurnReader();
        ids.forEach((id, i) => {
          reader.read({ choices: [{ index: 0, delta: call(i, id, `t${i}`, `{"n":${i}}`) }] });
        });
        const calls = reader.finish().toolCalls;
        expect(calls.map((c) => c.function.name)).toEqual(ids.map((_, i) => `t${i}`));
        expect(new Set(calls.map((c) => c.id)).size).toBe(ids.length);
        // Where the server's id is the first of its kind, the call keeps it.
        const kept = ids.map((id, i) => (id !== "" && ids.indexOf(id) === i ? id : calls[i]?.id));
        expect(calls.map((c) => c.id)).toEqual(kept);
      }),
      propertyRuns(300),
    );
  });
});

describe("R67N-6: a body that ends in the middle of an event was cut short, not malformed", () => {
  it("rejects with connection-lost, keeping the turn so far, when the body ends inside an event's JSON", async () => {
    const { client } = await harness([
      {
        type: "raw",
        chunks: [
          chunk({ role: "assistant", content: "ok so far" }),
          'data: {"choices":[{"index":0,"delta":{"conte',
        ],
      },
    ]);
    await expect(streamTurn(client, body())).rejects.toMatchObject({
      name: "StreamError",
      code: "connection-lost",
      partial: { content: "ok so far" },
      message: expect.stringContaining("ended in the middle of an event"),
    });
  });

  it("still reads a whole last event left without its blank line, and still calls a terminated broken event malformed", async () => {
    const whole = await harness([
      { type: "raw", chunks: [chunk({ content: "hi" }), chunk({}, "stop").trimEnd()] },
    ]);
    expect(await streamTurn(whole.client, body())).toMatchObject({ content: "hi", finishReason: "stop" });
    const broken = await harness([
      { type: "raw", chunks: [chunk({ content: "hi" }), 'data: {"choices":\n\n', chunk({}, "stop")] },
    ]);
    await expect(streamTurn(broken.client, body())).rejects.toMatchObject({ code: "malformed-chunk" });
  });

  it(
    "reads any stream cut inside its last event as connection-lost with everything before it (property)",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }),
          fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
          fc.constantFrom("\n", "\r\n", "\r"),
          async (texts, where, end) => {
            const events = texts.map((text) => chunk({ content: text }).replace(/\n/g, end));
            const last = events.pop() as string;
            // Cut after "data: {" and before the JSON closes: never a whole value.
            const json = last.indexOf("{");
            const closes = last.lastIndexOf("}");
            const cut = json + 1 + Math.floor(where * (closes - json - 1));
            const { client } = await harness([{ type: "raw", chunks: [...events, last.slice(0, cut)] }]);
            const error = await streamTurn(client, body(), { fences: [] }).then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(error).toMatchObject({
              code: "connection-lost",
              partial: { content: texts.slice(0, -1).join("") },
            });
          },
        ),
        propertyRuns(40),
      );
    },
    propertyTimeout(60_000),
  );
});

/** An AbortSignal's shape whose abort the test dispatches itself, so a listener's exception is caught here. */
function handSignal() {
  const listeners = new Set<() => void>();
  const signal = {
    aborted: false,
    reason: undefined as unknown,
    addEventListener: (_type: string, listener: () => void) => listeners.add(listener),
    removeEventListener: (_type: string, listener: () => void) => listeners.delete(listener),
  };
  const abort = (reason: unknown) => {
    signal.aborted = true;
    signal.reason = reason;
    // Added { once: true }: taken off as it is called.
    for (const listener of [...listeners]) {
      listeners.delete(listener);
      listener();
    }
  };
  return { signal: signal as unknown as AbortSignal, abort, listeners };
}

describe("R67N-7: listenForAbort tells every caller, and a signal already aborted too", () => {
  it("stops a turn sharing the signal even when another caller's onAbort throws", async () => {
    const { client } = await harness([
      { content: "one two three four five six", chunkChars: 2, chunkDelayMs: 40 },
    ]);
    const { signal, abort, listeners } = handSignal();
    const host = listenForAbort(signal, () => {
      throw new Error("the host's own callback failed");
    });
    const turn = streamTurn(client, body(), { signal });
    const settled = turn.then(
      () => "finished",
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 60));
    const reason = new Error("shutting down");
    expect(() => abort(reason)).toThrow("the host's own callback failed");
    expect(await settled).toBe(reason);
    host();
    expect(listeners.size).toBe(0);
  });

  it("calls onAbort for a signal that was already aborted, unless the caller stopped listening first", async () => {
    const told: string[] = [];
    listenForAbort(AbortSignal.abort(), () => told.push("first"));
    const stop = listenForAbort(AbortSignal.abort(), () => told.push("stopped"));
    stop();
    expect(told).toEqual([]); // never before the caller holds its stop function
    await Promise.resolve();
    expect(told).toEqual(["first"]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(told).toEqual(["first"]);
  });
});

describe("R67N-6b: a body cut after the finish reason loses only what could follow it", () => {
  it("resolves with the turn when the cut takes the usage chunk or [DONE]", async () => {
    for (const tail of ['data: {"choices":[],"usage":{"prompt_tokens":5,"compl', "data: [DON"]) {
      const { client } = await harness([
        { type: "raw", chunks: [chunk({ content: "done" }), chunk({}, "stop"), tail] },
      ]);
      expect(await streamTurn(client, body())).toMatchObject({ content: "done", finishReason: "stop" });
    }
  });
});
