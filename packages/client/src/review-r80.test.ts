// Review r80 (client): a pooled client's requests sharing one caller's signal. Every case speaks
// HTTP to the testkit's loopback server.

import { getEventListeners } from "node:events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { APIUserAbortError } from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EndpointConfigError } from "./errors.js";
import { createClientPool } from "./pool.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const chat = { model: "m", messages: [{ role: "user" as const, content: "hi" }] };

describe("R80C-1: requests sharing one signal (a run's, a host's shutdown signal)", () => {
  it("12 concurrent requests and 20 more one after another leave at most one listener, and no warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      const client = createClientPool().getClient({ baseUrl: server.baseUrl });
      const run = new AbortController();
      for (let i = 0; i < 12; i++) server.enqueue({ type: "turn", content: "ok", firstByteDelayMs: 50 });
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => client.chat.completions.create(chat, { signal: run.signal })),
      );
      expect(answers.map((a) => a.choices[0]?.message.content)).toEqual(Array(12).fill("ok"));
      for (let i = 0; i < 20; i++) {
        server.enqueue({ type: "turn", content: "ok" });
        await client.chat.completions.create(chat, { signal: run.signal });
      }
      // Before: 32 listeners (one per request, none taken off), and Node's MaxListenersExceededWarning.
      expect(getEventListeners(run.signal, "abort").length).toBeLessThanOrEqual(1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  // The waiting requests' replies are held a minute: each settling as an abort error (not
  // "answered") shows the abort ended it before its reply, with no bound in ms to fail under load.
  it("aborting the shared signal still stops every request on it, waiting or streaming", {
    timeout: 30_000,
  }, async () => {
    const client = createClientPool().getClient({ baseUrl: server.baseUrl });
    const run = new AbortController();
    for (let i = 0; i < 12; i++) server.enqueue({ type: "turn", content: "late", firstByteDelayMs: 60_000 });
    server.enqueue({ type: "turn", content: "a long streamed answer ".repeat(200), chunkDelayMs: 50 });
    const waiting = Array.from({ length: 12 }, () =>
      client.chat.completions.create(chat, { signal: run.signal }).then(
        () => "answered",
        (error: unknown) => error,
      ),
    );
    // The streamed one is under way (its first chunk read) when the signal aborts.
    const stream = await client.chat.completions.create({ ...chat, stream: true }, { signal: run.signal });
    const read = (async () => {
      let chunks = 0;
      try {
        for await (const _ of stream) {
          chunks++;
          if (chunks === 1) run.abort();
        }
        return chunks;
      } catch (error) {
        return error;
      }
    })();
    const results = await Promise.all(waiting);
    // The SDK ends a stream whose signal aborted as a finished one: a chunk or two, not the answer's hundreds.
    expect(await read).toBeLessThan(5);
    for (const result of results) expect(result).toBeInstanceOf(APIUserAbortError);
  });

  it("a signal aborted before the request is honoured: nothing is sent", async () => {
    const client = createClientPool().getClient({ baseUrl: server.baseUrl });
    const before = server.requests.length;
    await expect(
      client.chat.completions.create(chat, { signal: AbortSignal.abort() }),
    ).rejects.toBeInstanceOf(APIUserAbortError);
    expect(server.requests.length).toBe(before);
  });
});

describe("R80C-2: an operator's context length that is NaN or past 2^53 - 1", () => {
  it("rejects NaN (Number('8k')), Infinity and 1e308 before asking anything; a negative is still none", async () => {
    const pool = createClientPool();
    for (const given of [Number("8k"), Number.POSITIVE_INFINITY, 1e308, Number.MAX_SAFE_INTEGER + 2]) {
      const error = await pool.contextLimitFor({ baseUrl: server.baseUrl }, given).catch((e: unknown) => e);
      // Before: passed over in silence, the server's listing read instead (a window the operator never chose).
      expect(EndpointConfigError.isInstance(error), String(given)).toBe(true);
      expect((error as EndpointConfigError).field).toBe("operatorNumber");
      expect((error as EndpointConfigError).message).toContain(String(given));
    }
    expect(server.requests).toHaveLength(0);
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl }, 32768)).toBe(32768);
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl }, Number.NEGATIVE_INFINITY)).toBeTypeOf(
      "number",
    );
  });
});

describe("R80C-3: a whole header line pasted as a header's name", () => {
  const KEY = "sk-r80c-live-4f9a2b7c1d8e3f60aa51";
  it("is refused naming its start and length, never the credential after it", () => {
    const pool = createClientPool();
    for (const headers of [
      { [`Authorization: Bearer ${KEY}`]: "" },
      { [`api-key:${KEY}`]: "" },
      { [`Authorization: Bearer ${KEY}`]: 1 },
    ]) {
      let error: unknown;
      try {
        pool.getClient({ baseUrl: server.baseUrl, headers: headers as never });
      } catch (e) {
        error = e;
      }
      expect(EndpointConfigError.isInstance(error)).toBe(true);
      const { message, field } = error as EndpointConfigError;
      expect(field).toBe("headers");
      // Before: 'The endpoint's header name "Authorization: Bearer sk-r80c-live-…" is not an HTTP token'.
      expect(message).not.toContain(KEY);
      expect(message).not.toContain(KEY.slice(0, 12));
      expect(message).toMatch(/starting "(Authorization|api-key)"/);
      expect(message).toContain(`${Object.keys(headers)[0]?.length} characters`);
    }
    // A name that is a token is still quoted whole.
    expect(() => pool.getClient({ baseUrl: server.baseUrl, headers: { "X-Team": 5 as never } })).toThrow(
      /header "X-Team" must be a string/,
    );
  });
});
