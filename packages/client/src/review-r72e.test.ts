// Review r72e (client): the exported fetch helpers a host hands to a client of its own. Every case
// speaks HTTP to loopback servers of the test's own.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { keepErrorBodies } from "./error-bodies.js";
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
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  open.push(
    () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  );
  return { url: `http://${host}:${(http.address() as AddressInfo).port}`, seen } satisfies Origin;
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
