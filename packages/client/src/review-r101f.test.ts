import { createServer, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { listenOnLoopback } from "../test/http.js";
import { createClientPool } from "./pool.js";

// A server whose /props answers 200 without a window — a proxy or a server answering every path, LM
// Studio's 200 "Unexpected endpoint", a llama-server build without n_ctx — was asked /props (and,
// answering every path, /api/v0/models) again on every window lookup: the "neither route" latch
// was set only for 404/405/501. Each test counts the requests the loopback server saw.

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A loopback server: `answer` writes the reply; answers the base URL and the paths asked. */
async function serve(
  answer: (path: string, model: string | null, res: ServerResponse) => void,
): Promise<{ baseUrl: string; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? "/");
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    answer(url.pathname, url.searchParams.get("model"), res);
  });
  const port = await listenOnLoopback(server, closers);
  return { baseUrl: `http://127.0.0.1:${port}/v1`, paths };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
}

/** The paths asked by lookups after the first, of those not the listing. */
const nativeAfterFirst = (paths: string[], first: number): string[] =>
  paths.slice(first).filter((p) => p !== "/v1/models");

describe("r101f: a server whose /props answers 200 without a window", () => {
  it("is not asked /props or /api/v0/models again for listingMissMs when it answers every path with 200", async () => {
    // A proxy (or any server) answering every path 200 with a body that is no window and no listing.
    const server = await serve((_path, _model, res) =>
      json(res, 200, { error: "Unexpected endpoint or method." }),
    );
    let clock = 1_000_000;
    const pool = createClientPool({ listingMissMs: 60_000, now: () => clock });
    const settings = { baseUrl: server.baseUrl, model: "m" };

    for (let i = 0; i < 5; i++) expect(await pool.contextLimitFor(settings)).toBe(0);
    // Before: 15 requests, /props and /api/v0/models on every one of the five lookups.
    expect(server.paths).toEqual([
      "/v1/models",
      "/props?model=m",
      "/api/v0/models",
      ...Array(4).fill("/v1/models"),
    ]);
    for (let i = 0; i < 5; i++) expect(await pool.servedWindow(settings)).toBeUndefined();
    expect(server.paths).toHaveLength(7);

    // Left alone for listingMissMs, not for ever: asked once more after it.
    clock += 60_001;
    expect(await pool.servedWindow(settings)).toBeUndefined();
    expect(await pool.servedWindow(settings)).toBeUndefined();
    expect(server.paths.slice(7)).toEqual(["/props?model=m", "/api/v0/models"]);
  });

  it("on LM Studio (200 for /props it lacks) asks only /api/v0/models after the first lookup, and still reads the window", async () => {
    const server = await serve((path, _model, res) => {
      if (path === "/v1/models")
        return json(res, 200, { object: "list", data: [{ id: "m", object: "model" }] });
      if (path === "/api/v0/models") {
        return json(res, 200, {
          object: "list",
          data: [{ id: "m", state: "loaded", max_context_length: 131_072, loaded_context_length: 8192 }],
        });
      }
      return json(res, 200, { error: `Unexpected endpoint or method. (GET ${path})` });
    });
    const pool = createClientPool();
    const settings = { baseUrl: server.baseUrl, model: "m" };

    for (let i = 0; i < 4; i++) expect(await pool.contextLimitFor(settings)).toBe(8192);
    // Before: /props?model=m before every /api/v0/models, 12 requests for four lookups.
    expect(server.paths).toEqual([
      "/v1/models",
      "/props?model=m",
      "/api/v0/models",
      ...Array(3).fill(["/v1/models", "/api/v0/models"]).flat(),
    ]);
  });

  it("on a llama-server whose /props has no n_ctx and no /api/v0/models, asks only the listing after the first lookup", async () => {
    const server = await serve((path, _model, res) => {
      if (path === "/v1/models") {
        return json(res, 200, { object: "list", data: [{ id: "m", meta: { n_ctx_train: 32_768 } }] });
      }
      if (path === "/props") return json(res, 200, { default_generation_settings: { temperature: 0.8 } });
      return json(res, 404, { error: { code: 404, message: "File Not Found", type: "not_found_error" } });
    });
    const pool = createClientPool();
    const settings = { baseUrl: server.baseUrl, model: "m" };

    for (let i = 0; i < 5; i++) expect(await pool.contextLimitFor(settings)).toBe(32_768);
    // Before: /props asked on each of the five (only /api/v0/models was dropped).
    expect(nativeAfterFirst(server.paths, 3)).toEqual([]);
    expect(server.paths.slice(0, 3)).toEqual(["/v1/models", "/props?model=m", "/api/v0/models"]);
  });

  it("still asks a llama.cpp router for the model's window after it answered n_ctx 0 for itself", async () => {
    // A router answers /props without ?model= for itself (role "router", n_ctx 0); with one, the model's.
    const server = await serve((path, model, res) => {
      if (path === "/v1/models") return json(res, 200, { data: [{ id: "m", status: { value: "loaded" } }] });
      if (path === "/props") {
        return model === null
          ? json(res, 200, { role: "router", default_generation_settings: { params: {}, n_ctx: 0 } })
          : json(res, 200, { default_generation_settings: { n_ctx: 16_384 } });
      }
      return json(res, 404, { error: { message: "File Not Found" } });
    });
    const pool = createClientPool();

    expect(await pool.servedWindow({ baseUrl: server.baseUrl })).toBeUndefined();
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: "m" })).toBe(16_384);
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, model: "m" })).toBe(16_384);
  });
});
