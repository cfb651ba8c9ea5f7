// Review r82 (client): the one listener a pooled client keeps on a caller's signal, for a response
// whose body is never read. Speaks HTTP to the testkit's loopback server.

import { getEventListeners } from "node:events";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClientPool } from "./pool.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const chat = { model: "m", messages: [{ role: "user" as const, content: "hi" }] };
const listeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;

describe("R82C-1: a streamed response dropped with its body never read", () => {
  it("lets the signal's listener go once it is collected, while a stream still held keeps it", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const client = createClientPool().getClient({ baseUrl: server.baseUrl });
    const host = new AbortController();
    server.enqueue({ type: "turn", content: "never read" });
    server.enqueue({ type: "turn", content: "kept" });
    // Asked for and dropped: the caller decided not to show it.
    await (async () => {
      await client.chat.completions.create({ ...chat, stream: true }, { signal: host.signal });
    })();
    const kept = await client.chat.completions.create({ ...chat, stream: true }, { signal: host.signal });
    expect(listeners(host.signal)).toBe(1);
    for (let i = 0; i < 10; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The one held still holds the listener.
    expect(listeners(host.signal)).toBe(1);
    let text = "";
    for await (const chunk of kept) text += chunk.choices[0]?.delta?.content ?? "";
    expect(text).toBe("kept");
    // Before: 1 for good (the dropped one was never released; only the signal aborting took it off).
    expect(listeners(host.signal)).toBe(0);
  });
});
