// Review r81 (client): the one listener a pooled client keeps on a caller's signal. Every case
// speaks HTTP to the testkit's loopback server.

import { getEventListeners } from "node:events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { APIUserAbortError } from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClientPool } from "./pool.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const chat = { model: "m", messages: [{ role: "user" as const, content: "hi" }] };
const listeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;

describe("R81C-1: a long-lived signal (a host's shutdown signal) between requests", () => {
  it("holds no listener once every request on it settled: answered, streamed to the end, a stream left early, a refusal", async () => {
    const client = createClientPool().getClient({ baseUrl: server.baseUrl });
    const host = new AbortController();
    for (let i = 0; i < 20; i++) server.enqueue({ type: "turn", content: "ok" });
    await Promise.all(
      Array.from({ length: 20 }, () => client.chat.completions.create(chat, { signal: host.signal })),
    );
    // Before: the one listener stayed on the signal until it aborted (for a host's signal, for good).
    expect(listeners(host.signal)).toBe(0);

    server.enqueue({ type: "turn", content: "streamed ".repeat(20) });
    const whole = await client.chat.completions.create({ ...chat, stream: true }, { signal: host.signal });
    expect(listeners(host.signal)).toBe(1);
    let text = "";
    for await (const chunk of whole) text += chunk.choices[0]?.delta?.content ?? "";
    expect(text).toBe("streamed ".repeat(20));
    expect(listeners(host.signal)).toBe(0);

    server.enqueue({ type: "turn", content: "a long streamed answer ".repeat(100), chunkDelayMs: 5 });
    const left = await client.chat.completions.create({ ...chat, stream: true }, { signal: host.signal });
    for await (const _ of left) break;
    expect(listeners(host.signal)).toBe(0);

    server.enqueue({ type: "error", status: 400, body: { error: { message: "bad request" } } });
    await expect(client.chat.completions.create(chat, { signal: host.signal })).rejects.toThrow(
      /bad request/,
    );
    expect(listeners(host.signal)).toBe(0);

    // The signal still stops what is under way when it aborts.
    server.enqueue({ type: "turn", content: "late", firstByteDelayMs: 5_000 });
    const waiting = client.chat.completions.create(chat, { signal: host.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(listeners(host.signal)).toBe(1);
    host.abort();
    await expect(waiting).rejects.toBeInstanceOf(APIUserAbortError);
    expect(listeners(host.signal)).toBe(0);
  });
});
