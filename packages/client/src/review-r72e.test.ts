// Review r72e (client): the exported fetch helpers a host hands to a client of its own. Every case
// speaks HTTP to loopback servers of the test's own.

import { createServer } from "node:http";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { listenOnLoopback } from "../test/http.js";
import { keepErrorBodies } from "./error-bodies.js";
import { createClientPool } from "./pool.js";
import { secretsOf } from "./redact.js";
import { redactingFetch } from "./redact-fetch.js";

const KEY = "sk-r72e-key-4f9a1c7e2b8d6035aa11";
const HEADER = "azure-r72e-8c1d2e3f4a5b6c7d";

type Origin = { url: string; seen: { path: string; headers: Record<string, unknown> }[] };
const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

/** A plain server reached as `host` that records what it is sent and answers `answer(path)`. */
async function origin(host: string, answer: (path: string) => [number, Record<string, string>, string]) {
  const seen: Origin["seen"] = [];
  const http = createServer((req, res) => {
    seen.push({ path: req.url ?? "", headers: req.headers });
    const [status, headers, body] = answer(req.url ?? "");
    res.writeHead(status, headers);
    res.end(body);
  });
  const port = await listenOnLoopback(http, open);
  return { url: `http://${host}:${port}`, seen } satisfies Origin;
}

describe("R72E-1: redactingFetch and keepErrorBodies, as a client of the host's own uses them, follow no redirect to another origin", () => {
  const listing = JSON.stringify({ data: [{ id: "m", object: "model" }] });

  for (const [name, fetchFor] of [
    [
      "redactingFetch(secretsOf(endpoint))",
      (endpoint: { baseUrl: string }) =>
        redactingFetch(secretsOf({ ...endpoint, apiKey: KEY, headers: { "api-key": HEADER } })),
    ],
    ["keepErrorBodies()", () => keepErrorBodies()],
  ] as const) {
    it(`${name}: the endpoint's api-key header never reaches the server a 302 names; the 3xx is answered`, async () => {
      const other = await origin("localhost", () => [200, { "content-type": "application/json" }, listing]);
      const moved = await origin("127.0.0.1", (path) => [302, { location: `${other.url}${path}` }, "moved"]);
      const baseUrl = `${moved.url}/v1`;
      const client = new OpenAI({
        baseURL: baseUrl,
        apiKey: KEY,
        defaultHeaders: { "api-key": HEADER },
        maxRetries: 0,
        fetch: fetchFor({ baseUrl }),
      });
      const error = await client.models.list().catch((e: unknown) => e);
      // Before: fetch followed the 302, dropping Authorization and sending api-key to `other`.
      expect(other.seen.map((s) => s.headers["api-key"])).toEqual([]);
      expect((error as { status?: number }).status).toBe(302);
    });

    it(`${name}: a redirect within the same origin is still followed, with the headers`, async () => {
      const same = await origin("127.0.0.1", (path) =>
        path.startsWith("/v2/")
          ? [200, { "content-type": "application/json" }, listing]
          : [307, { location: path.replace("/v1/", "/v2/") }, ""],
      );
      const baseUrl = `${same.url}/v1`;
      const client = new OpenAI({
        baseURL: baseUrl,
        apiKey: KEY,
        defaultHeaders: { "api-key": HEADER },
        maxRetries: 0,
        fetch: fetchFor({ baseUrl }),
      });
      expect((await client.models.list()).data.map((m) => m.id)).toEqual(["m"]);
      expect(same.seen.map((s) => s.headers["api-key"])).toEqual([HEADER, HEADER]);
    });
  }
});

describe("R72E-3: an error body whose connection breaks part way keeps its status", () => {
  const words = "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens ";

  /** A server that answers 400, sends the start of its body, then `after` (breaks, or hangs). */
  async function breaking(after: "break" | "hang") {
    const http = createServer((_req, res) => {
      res.writeHead(400, { "content-type": "application/json", "content-length": "4000" });
      res.write(`{"error":{"message":"${words}`);
      if (after === "break") setTimeout(() => res.socket?.destroy(), 20);
    });
    const port = await listenOnLoopback(http, open);
    return `http://127.0.0.1:${port}/v1`;
  }

  const ask = async (client: OpenAI, signal?: AbortSignal): Promise<{ status?: number; message: string }> => {
    try {
      await client.chat.completions.create(
        { model: "m", messages: [{ role: "user", content: "hi" }] },
        signal ? { signal } : {},
      );
    } catch (error) {
      return error as { status?: number; message: string };
    }
    throw new Error("expected the request to fail");
  };

  it("keepErrorBodies(): the SDK reports the 400 with the words that arrived, not a status-less Connection error", async () => {
    const baseURL = await breaking("break");
    const error = await ask(new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0, fetch: keepErrorBodies() }));
    // Before: APIConnectionError "Connection error.", no status, retried as a network failure.
    expect(error.status).toBe(400);
    expect(error.message).toContain("maximum context length is 4096 tokens.");
    expect(error.message).toContain("the connection ended");
  });

  it("a pooled client the same", async () => {
    const baseUrl = await breaking("break");
    const error = await ask(createClientPool().getClient({ baseUrl, apiKey: KEY }));
    expect(error.status).toBe(400);
    expect(error.message).toContain("maximum context length is 4096 tokens.");
  });

  it("an abort while the body is read is still the abort", async () => {
    const baseURL = await breaking("hang");
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const error = await ask(
      new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0, fetch: keepErrorBodies() }),
      controller.signal,
    );
    expect(error).toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(error.status).toBeUndefined();
  });
});
