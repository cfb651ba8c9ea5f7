/**
 * What the server does with requests a well-behaved client never sends: other methods, broken
 * bodies and URLs, aborted uploads, many requests at once, and close() while streams are running.
 * Each gets a defined HTTP answer, and the server keeps serving afterwards.
 */
import { connect } from "node:net";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const ask = { model: "sim", messages: [{ role: "user" as const, content: "hi" }] };
const client = (s: TestServer) => new OpenAI({ baseURL: s.baseUrl, apiKey: "k", maxRetries: 0 });

/** Writes `text` on a raw socket, then closes it after `ms`; resolves with what came back. */
function rawExchange(port: number, text: string, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(text));
    let got = "";
    socket.on("data", (d) => {
      got += d.toString();
    });
    socket.on("error", () => undefined);
    socket.on("close", () => resolve(got));
    setTimeout(() => socket.destroy(), ms);
  });
}

describe("requests outside the happy path", () => {
  it("answers HEAD like GET without a body, and records it as HEAD", async () => {
    server = await startServer({ models: [{ id: "m" }] });
    const res = await fetch(`${server.baseUrl}/models`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe("");
    expect(server.requests[0]?.method).toBe("HEAD");
    expect((await fetch(`${server.baseUrl}/models/m`, { method: "HEAD" })).status).toBe(200);
  });

  it("answers an OPTIONS preflight with 204, the allowed methods and CORS headers", async () => {
    server = await startServer({ replies: [{ content: "unused" }] });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "OPTIONS",
      headers: { origin: "http://example.test" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("allow")).toBe("POST, OPTIONS");
    expect(res.headers.get("access-control-allow-origin")).toBe("http://example.test");
    expect(res.headers.get("access-control-allow-headers")).toBe("*");
    expect(server.pending).toBe(1);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("answers a wrong method on a known route with 405 and an allow header", async () => {
    server = await startServer();
    const get = await fetch(`${server.baseUrl}/chat/completions`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect(((await get.json()) as { error: { message: string } }).error.message).toContain("use POST");
    const post = await fetch(`${server.baseUrl}/models`, { method: "POST", body: "{}" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("answers an unknown path with 404 whatever the method", async () => {
    server = await startServer();
    for (const method of ["GET", "POST", "DELETE", "PUT"]) {
      const res = await fetch(`${server.origin}/v2/nothing`, { method });
      expect(res.status).toBe(404);
    }
    expect(server.requests.map((r) => r.method)).toEqual(["GET", "POST", "DELETE", "PUT"]);
  });

  it("answers a model id with broken percent-encoding with 400, not 500", async () => {
    server = await startServer();
    const res = await fetch(`${server.baseUrl}/models/%E0%A4%A`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      "percent-encoding",
    );
  });

  it("answers a chat body that is empty, JSON null or an array with 400, consuming no reply", async () => {
    server = await startServer({ replies: [{ content: "kept" }] });
    for (const body of ["", "null", "[]", '"text"']) {
      const res = await fetch(`${server.baseUrl}/chat/completions`, { method: "POST", body });
      expect(res.status).toBe(400);
    }
    expect(server.pending).toBe(1);
    expect((await client(server).chat.completions.create(ask)).choices[0]?.message.content).toBe("kept");
  });

  it("survives an upload cut off mid-body and bytes that are not HTTP, and keeps serving", async () => {
    server = await startServer({ replies: [{ content: "still here" }] });
    const cut = await rawExchange(
      server.port,
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"model":',
      50,
    );
    expect(cut).toBe("");
    const garbage = await rawExchange(server.port, "NOT HTTP AT ALL\r\n\r\n", 200);
    expect(garbage).toMatch(/^HTTP\/1\.1 400/);
    expect((await client(server).chat.completions.create(ask)).choices[0]?.message.content).toBe(
      "still here",
    );
    expect(server.pending).toBe(0);
  });
});

describe("concurrency", () => {
  it("serves many simultaneous requests each exactly one queued reply, recording all of them", async () => {
    const n = 24;
    server = await startServer({
      replies: Array.from({ length: n }, (_, i) => ({
        content: `reply ${i}`,
        chunkChars: 2,
        chunkDelayMs: 1,
      })),
    });
    const c = client(server);
    const answers = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        if (i % 2 === 0) return (await c.chat.completions.create(ask)).choices[0]?.message.content;
        const stream = c.chat.completions.stream({ ...ask, stream: true });
        return (await stream.finalChatCompletion()).choices[0]?.message.content;
      }),
    );
    expect(new Set(answers).size).toBe(n);
    expect([...answers].sort()).toEqual(Array.from({ length: n }, (_, i) => `reply ${i}`).sort());
    expect(server.chatRequests).toHaveLength(n);
    expect(server.pending).toBe(0);
  });

  it("runs 15 paced streams at once without a MaxListenersExceededWarning", async () => {
    // Each paced stream waits on the server-wide close signal between its chunks: one abort
    // listener per open stream, which Node warns about past 10 on one signal unless told otherwise.
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const n = 15;
      server = await startServer({
        replies: Array.from({ length: n }, (_, i) => ({
          content: `stream ${i}`,
          chunkChars: 2,
          chunkDelayMs: 40,
        })),
      });
      const c = client(server);
      const answers = await Promise.all(
        Array.from({ length: n }, async () => {
          const stream = c.chat.completions.stream({ ...ask, stream: true });
          return (await stream.finalChatCompletion()).choices[0]?.message.content;
        }),
      );
      expect([...answers].sort()).toEqual(Array.from({ length: n }, (_, i) => `stream ${i}`).sort());
      // process.emitWarning emits on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      process.off("warning", onWarning);
    }
    const leakWarnings = warnings.filter((w) => w.name === "MaxListenersExceededWarning");
    expect(leakWarnings.map((w) => w.message)).toEqual([]);
  });

  it("gives simultaneous requests distinct completion and tool-call ids", async () => {
    server = await startServer({ replies: () => ({ toolCalls: [{ name: "f", arguments: "{}" }] }) });
    const c = client(server);
    const done = await Promise.all(Array.from({ length: 8 }, () => c.chat.completions.create(ask)));
    expect(new Set(done.map((d) => d.id)).size).toBe(8);
    expect(new Set(done.map((d) => d.choices[0]?.message.tool_calls?.[0]?.id)).size).toBe(8);
  });
});

describe("close() with work in flight", () => {
  // Each stream would run for 18 minutes (a chunk a minute): streams that all failed, and a close()
  // that returned within the test's timeout, show close() cut them rather than waited, with no
  // bound in ms to fail on a loaded machine.
  it("ends every running stream at once: each client sees an error and close() resolves", {
    timeout: 30_000,
  }, async () => {
    server = await startServer({
      replies: () => ({ content: "a long slow answer", chunkChars: 1, chunkDelayMs: 60_000 }),
    });
    const c = client(server);
    const running = Array.from({ length: 4 }, async () => {
      const stream = await c.chat.completions.create({ ...ask, stream: true });
      const seen: string[] = [];
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "");
      return seen;
    });
    const outcomes = running.map((p) =>
      p.then(
        () => "finished",
        () => "failed",
      ),
    );
    // Wait until every stream is open on the server.
    while (server.chatRequests.length < 4) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 30));
    await server.close();
    expect(await Promise.all(outcomes)).toEqual(["failed", "failed", "failed", "failed"]);
    // The process is fine: a new server answers.
    server = await startServer({ replies: [{ content: "again" }] });
    expect((await client(server).chat.completions.create(ask)).choices[0]?.message.content).toBe("again");
  });

  it("refuses new connections once closed", async () => {
    server = await startServer();
    const url = `${server.baseUrl}/models`;
    await server.close();
    await expect(fetch(url)).rejects.toThrow();
  });
});
