import { getEventListeners } from "node:events";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  llamacppPersonality,
  lmstudioPersonality,
  type RecordedRequest,
  startServer,
  type TestServer,
  vllmPersonality,
} from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { captureJson, type EndlessBody, fixtureJson, type ScriptedHttp, scriptedHttp } from "../test/http.js";
import { EndpointConfigError, ModelListingError } from "./errors.js";
import { createClientPool } from "./pool.js";
import { DEFAULT_MAX_LOOKUP_BODY_BYTES, listedWindow, listingEntries } from "./window.js";

/** Waits until `ready()` holds, or 5 s have passed (the assertions after it then say what is missing). */
async function settle(ready: () => boolean): Promise<void> {
  const until = Date.now() + 5_000;
  while (!ready() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function testkit(options: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}
async function scripted(answer: Parameters<typeof scriptedHttp>[0]): Promise<ScriptedHttp> {
  const server = await scriptedHttp(answer);
  servers.push(server);
  return server;
}
const paths = (server: TestServer) => server.requests.map((r: RecordedRequest) => r.path);

/** A route answering one status, through a testkit personality's intercept (real HTTP). */
function routeStatus(path: string, status: number) {
  return {
    name: "route-status",
    intercept: (request: RecordedRequest) =>
      request.path === path
        ? { type: "error" as const, status, body: { error: { message: `status ${status}` } } }
        : undefined,
  };
}

describe("contextLimitFor reads each server's real listing", () => {
  it("takes vLLM's max_model_len (the served limit) and asks nothing else", async () => {
    const server = await testkit({ models: fixtureJson("models/vllm.json") });
    const limit = await createClientPool().contextLimitFor({
      baseUrl: server.baseUrl,
      model: "meta-llama/Meta-Llama-3.1-8B-Instruct",
    });
    expect(limit).toBe(8096);
    expect(paths(server)).toEqual(["/v1/models"]);
  });

  it("takes OpenRouter's top-level context_length for the named model", async () => {
    const server = await testkit({ models: fixtureJson("models/openrouter.json") });
    const pool = createClientPool();
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: "anthropic/claude-sonnet-4" })).toBe(
      1_000_000,
    );
  });

  it("asks llama.cpp's /props when the listing has only meta (live capture: 4096)", async () => {
    const server = await testkit({
      models: captureJson("llamacpp-live/01-models.response.txt"),
      props: captureJson("llamacpp-live/02-props.response.txt"),
    });
    const limit = await createClientPool().contextLimitFor({ baseUrl: server.baseUrl, model: "tiny.gguf" });
    expect(limit).toBe(4096);
    expect(paths(server)).toEqual(["/v1/models", "/props"]);
    expect(server.requests[1]?.url).toBe("/props?model=tiny.gguf");
  });

  it("prefers the served n_ctx over the trained window (docs: 1024 served, 131072 trained)", async () => {
    const server = await testkit({
      models: fixtureJson("models/llamacpp-v1-models.docs-example.json"),
      props: fixtureJson("models/llamacpp-props.docs-example.json"),
    });
    expect(await createClientPool().contextLimitFor({ baseUrl: server.baseUrl, model: "any-name" })).toBe(
      1024,
    );
  });

  it("falls back to meta.n_ctx_train only when neither native route answers", async () => {
    const server = await testkit({ models: fixtureJson("models/llamacpp-v1-models.docs-example.json") });
    expect(await createClientPool().contextLimitFor({ baseUrl: server.baseUrl })).toBe(131072);
    expect(paths(server)).toEqual(["/v1/models", "/props", "/api/v0/models"]);
  });

  it("reads LM Studio's loaded_context_length, and nothing from a model that is not loaded", async () => {
    const listing = fixtureJson("models/lmstudio-api-v0-models.docs-example.json") as {
      data: Record<string, unknown>[];
    };
    const models = { object: "list", data: listing.data.map(({ id }) => ({ id, object: "model" })) };
    const server = await testkit({ models, lmstudio: listing });
    const pool = createClientPool();
    // The recorded documentation body: every model "not-loaded", so no served window anywhere.
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: "meta-llama-3.1-8b-instruct" })).toBe(
      0,
    );
    // The same body with one model loaded (edited here, as a loaded server would report it).
    const loaded = {
      ...listing,
      data: listing.data.map((m) =>
        m.id === "meta-llama-3.1-8b-instruct" ? { ...m, state: "loaded", loaded_context_length: 122880 } : m,
      ),
    };
    const live = await testkit({ models, lmstudio: loaded });
    expect(await pool.contextLimitFor({ baseUrl: live.baseUrl, model: "meta-llama-3.1-8b-instruct" })).toBe(
      122880,
    );
    expect(await pool.servedWindow({ baseUrl: live.baseUrl })).toBe(122880);
  });

  it("takes no window from LM Studio's listing of models it has not loaded (max_context_length is what each could take)", async () => {
    const listing = fixtureJson("models/lmstudio-api-v0-models.docs-example.json");
    const entries = listingEntries(listing) ?? [];
    expect(entries.map((e) => e.state)).toEqual(["not-loaded", "not-loaded", "not-loaded"]);
    expect(entries.map((e) => listedWindow(e))).toEqual([undefined, undefined, undefined]);
    // A host whose base URL is LM Studio's /api/v0: its listing is this body.
    const server = await scripted((path) => (path === "/api/v0/models" ? [200, listing] : [404, {}]));
    const baseUrl = server.baseUrl.replace(/\/v1$/, "/api/v0");
    const pool = createClientPool();
    expect(await pool.contextLimitFor({ baseUrl, model: "meta-llama-3.1-8b-instruct" })).toBe(0);
    // Newer LM Studio (/api/v1/models): no loaded instance, no window either.
    expect(listedWindow({ id: "q", max_context_length: 32768, loaded_instances: [] })).toBeUndefined();
    // Mistral's entries carry no load state: their max_context_length is the window served.
    expect(listedWindow({ id: "mistral-large-latest", max_context_length: 131072 })).toBe(131072);
  });

  it("lets the operator's number win without any request", async () => {
    const server = await testkit({ models: fixtureJson("models/vllm.json") });
    expect(await createClientPool().contextLimitFor({ baseUrl: server.baseUrl }, 32768)).toBe(32768);
    expect(server.requests).toHaveLength(0);
  });

  it("refuses an operator's number that is not a number (a string read from the environment) before asking anything", async () => {
    const server = await testkit({ models: fixtureJson("models/vllm.json") });
    const pool = createClientPool();
    for (const given of ["8192", { tokens: 8192 }, true]) {
      const error = await pool
        .contextLimitFor({ baseUrl: server.baseUrl }, given as never)
        .catch((e: unknown) => e);
      expect(EndpointConfigError.isInstance(error)).toBe(true);
      expect((error as EndpointConfigError).field).toBe("operatorNumber");
    }
    expect(server.requests).toHaveLength(0);
    // Absent, null, 0 and a negative number are no number: the server is asked.
    for (const given of [undefined, null, 0, -1]) {
      expect(await pool.contextLimitFor({ baseUrl: server.baseUrl }, given)).toBe(8096);
    }
  });

  it("reads a null signal, options object and model as none, as a settings row read back from JSON has them", async () => {
    const server = await testkit({
      models: [{ id: "only", context_length: 8192 }],
      lmstudio: { data: [{ id: "only", state: "loaded", loaded_context_length: 2048 }] },
    });
    const pool = createClientPool();
    // A row's unset columns come back null: no model (the only one listed), no number, no signal.
    const row: { baseUrl: string; model: string | null } = { baseUrl: server.baseUrl, model: null };
    expect(await pool.contextLimitFor(row, null, { signal: null })).toBe(8192);
    expect(await pool.contextLimitFor(row, null, null)).toBe(8192);
    expect(await pool.servedWindow(row, { signal: null })).toBe(2048);
    expect((await pool.listModels(row, { signal: null })).map((e) => e.id)).toEqual(["only"]);
    // No request named a model: the null was not sent as one.
    expect(server.requests.map((r) => r.url).filter((u) => /model=/.test(u))).toEqual([]);
  });

  it("refuses a model that is not a string (a listing entry in place of its id) before asking anything, and latches nothing", async () => {
    const server = await testkit({
      models: [
        { id: "a", context_length: 8192 },
        { id: "b", context_length: 4096 },
      ],
      lmstudio: { data: [{ id: "a", state: "loaded", loaded_context_length: 2048 }] },
    });
    const pool = createClientPool();
    for (const model of [42, { id: "a" }, ["a"], true]) {
      const settings = { baseUrl: server.baseUrl, model: model as never };
      for (const lookup of [
        () => pool.contextLimitFor(settings),
        () => pool.servedWindow(settings),
        () => pool.listModels(settings),
      ]) {
        const error = await lookup().catch((e: unknown) => e);
        expect(EndpointConfigError.isInstance(error)).toBe(true);
        expect((error as EndpointConfigError).field).toBe("model");
        expect((error as Error).message).toMatch(/model must be a string/);
      }
    }
    expect(server.requests).toHaveLength(0);
    // The server's LM Studio route is still asked, for this tenant and every other.
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, model: "a" })).toBe(2048);
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, model: null as never })).toBe(2048);
  });

  it("answers 0 for a server it cannot reach", async () => {
    const gone = await startServer();
    const url = gone.baseUrl;
    await gone.close();
    expect(await createClientPool().contextLimitFor({ baseUrl: url, model: "m" })).toBe(0);
  });
});

describe("route latches", () => {
  it("latches a server with neither native route and does not ask them again", async () => {
    const server = await testkit({ models: [{ id: "m" }] });
    const pool = createClientPool();
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: "m" })).toBe(0);
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: "m" })).toBe(0);
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, model: "m" })).toBeUndefined();
    expect(paths(server)).toEqual(["/v1/models", "/props", "/api/v0/models", "/v1/models"]);
  });

  for (const status of [404, 405, 501]) {
    it(`drops /api/v0/models for the process on ${status}`, async () => {
      // /props answers, but with n_ctx 0 (a router build asked without its model, which says it is
      // one and so is asked again), so LM Studio's route is next.
      const server = await testkit({
        models: [{ id: "m" }],
        props: { role: "router", default_generation_settings: { n_ctx: 0 } },
        personality: routeStatus("/api/v0/models", status),
      });
      const pool = createClientPool({ now: () => 0 });
      await pool.servedWindow({ baseUrl: server.baseUrl });
      await pool.servedWindow({ baseUrl: server.baseUrl });
      expect(paths(server)).toEqual(["/props", "/api/v0/models", "/props"]);
    });
  }

  it("latches nothing on a llama.cpp router's answer for a model it does not know: the next model's window is found", async () => {
    // llama.cpp's router (tools/server/server-models.cpp, router_validate_model) answers a /props?model=
    // it has no preset for with 400 invalid_request_error "model '<name>' not found", not 404: the route
    // is there, only the model is not. A router build asked for a model it serves answers its n_ctx.
    const server = await testkit({
      models: [{ id: "qwen3-8b" }],
      props: { default_generation_settings: { n_ctx: 16384 } },
      personality: {
        name: "llamacpp-router",
        intercept: (request: RecordedRequest) =>
          request.path === "/props" && request.url !== "/props?model=qwen3-8b"
            ? {
                type: "error" as const,
                status: 400,
                body: {
                  error: { code: 400, message: "model 'ghost' not found", type: "invalid_request_error" },
                },
              }
            : undefined,
      },
    });
    const pool = createClientPool();
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, model: "ghost" })).toBeUndefined();
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, model: "qwen3-8b" })).toBe(16384);
    expect(server.requests.map((r) => r.url)).toEqual([
      "/props?model=ghost",
      "/api/v0/models",
      "/props?model=qwen3-8b",
    ]);
  });

  it("latches nothing on a refused credential (401, 403): another tenant of the server is still asked", async () => {
    const loaded = { data: [{ id: "m", state: "loaded", loaded_context_length: 8192 }] };
    // LM Studio with an API token: its routes refuse any other key.
    const server = await testkit({
      models: [{ id: "m" }],
      lmstudio: loaded,
      personality: {
        name: "token-required",
        intercept: (request: RecordedRequest) =>
          request.headers.authorization === "Bearer lm-token-right"
            ? undefined
            : {
                type: "error" as const,
                status: request.path === "/props" ? 403 : 401,
                body: { error: "unauthorized" },
              },
      },
    });
    const pool = createClientPool({ now: () => 1_000 });
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, apiKey: "lm-token-wrong" })).toBeUndefined();
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, apiKey: "lm-token-right" })).toBe(8192);
    expect(paths(server)).toEqual(["/props", "/api/v0/models", "/props", "/api/v0/models"]);
  });

  it("leaves /api/v0/models alone for listingMissMs after any other error, then asks again", async () => {
    const server = await testkit({ models: [{ id: "m" }], personality: routeStatus("/api/v0/models", 500) });
    let now = 1_000;
    const pool = createClientPool({ listingMissMs: 5_000, now: () => now });
    await pool.servedWindow({ baseUrl: server.baseUrl });
    now += 4_999;
    await pool.servedWindow({ baseUrl: server.baseUrl });
    now += 2;
    await pool.servedWindow({ baseUrl: server.baseUrl });
    expect(paths(server).filter((p) => p === "/api/v0/models")).toHaveLength(2);
  });

  it("forgets the latches on reset", async () => {
    const server = await testkit({ models: [{ id: "m" }] });
    const pool = createClientPool();
    await pool.servedWindow({ baseUrl: server.baseUrl });
    pool.reset();
    await pool.servedWindow({ baseUrl: server.baseUrl });
    expect(paths(server)).toEqual(["/props", "/api/v0/models", "/props", "/api/v0/models"]);
  });
});

describe("a lookup reads at most maxLookupBodyBytes of a body", () => {
  const MiB = 1024 * 1024;
  /** A listing that never closes its data array: an entry like OpenRouter's, again and again. */
  const endless = (upTo = 64 * MiB): EndlessBody => ({
    head: '{"data":[',
    repeat: `{"id":"org/model","description":"${"x".repeat(400)}","context_length":8192},`,
    upTo,
  });
  const ofPath = (server: ScriptedHttp, path: string) => server.seen.filter((s) => s.path.startsWith(path));

  it("stops reading an endless listing at the cap, closes the response, and listModels says why", async () => {
    const server = await scripted((path) => (path === "/v1/models" ? endless() : [404, {}]));
    // A bound far off: what ends the lookup is the cap, not the clock.
    const pool = createClientPool({ maxLookupBodyBytes: MiB, lookupBoundMs: 120_000 });
    const error = await pool.listModels({ baseUrl: server.baseUrl }).catch((e: unknown) => e);
    expect(ModelListingError.isInstance(error)).toBe(true);
    expect((error as ModelListingError).code).toBe("malformed");
    expect((error as Error).message).toMatch(/more than 1048576 bytes \(maxLookupBodyBytes\)/);
    await settle(() => server.seen[0]?.closedEarly === true);
    expect(server.seen[0]?.closedEarly).toBe(true);
    // What left the server before the client closed: the cap and what the sockets buffer, not 64 MiB.
    expect(server.seen[0]?.bytesWritten).toBeLessThan(12 * MiB);
  });

  it("takes a listing over the cap as no listing: contextLimitFor asks /props, which answers", async () => {
    const server = await scripted((path) =>
      path === "/v1/models"
        ? endless()
        : path === "/props"
          ? [200, { default_generation_settings: { n_ctx: 4096 } }]
          : [404, {}],
    );
    const pool = createClientPool({ maxLookupBodyBytes: MiB, lookupBoundMs: 120_000 });
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: "m" })).toBe(4096);
    await settle(() => ofPath(server, "/v1/models")[0]?.closedEarly === true);
    expect(ofPath(server, "/v1/models")[0]?.bytesWritten).toBeLessThan(12 * MiB);
  });

  it("takes a /props or /api/v0/models body over the cap as no answer, and latches nothing for it", async () => {
    const server = await scripted((path) =>
      path === "/v1/models"
        ? [200, { data: [{ id: "m" }] }]
        : path === "/props" || path === "/api/v0/models"
          ? endless()
          : [404, {}],
    );
    const pool = createClientPool({ maxLookupBodyBytes: MiB, lookupBoundMs: 120_000 });
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: "m" })).toBe(0);
    expect(await pool.servedWindow({ baseUrl: server.baseUrl, model: "m" })).toBeUndefined();
    // Both routes asked again the second time: a body too big says nothing about the route for
    // other tenants (as a refused key does not), so no miss and no "neither" was latched.
    expect(ofPath(server, "/props")).toHaveLength(2);
    expect(ofPath(server, "/api/v0/models")).toHaveLength(2);
    await settle(() => server.seen.every((s) => s.path.startsWith("/v1/models") || s.closedEarly));
    for (const seen of server.seen.filter((s) => !s.path.startsWith("/v1/models"))) {
      expect(seen.closedEarly, seen.path).toBe(true);
      expect(seen.bytesWritten, seen.path).toBeLessThan(12 * MiB);
    }
  });

  it("reads a listing many times OpenRouter's whole catalogue under the default cap, and not one past it", async () => {
    // The recording holds 4 of OpenRouter's 338 models (total_count) at about 1.8 KB each: the whole
    // catalogue is about 0.6 MB. 4,000 entries (about 7 MB) read as they are; 10,000 (over 16 MiB) do not.
    const recorded = (fixtureJson("models/openrouter.json") as { data: Record<string, unknown>[] }).data;
    const listing = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ ...recorded[i % recorded.length], id: `org/model-${i}` }));
    expect(DEFAULT_MAX_LOOKUP_BODY_BYTES).toBe(16 * MiB);
    const fits = await testkit({ models: listing(4_000) });
    const pool = createClientPool();
    expect(await pool.contextLimitFor({ baseUrl: fits.baseUrl, model: "org/model-3999" })).toBeGreaterThan(0);
    expect(await pool.listModels({ baseUrl: fits.baseUrl })).toHaveLength(4_000);
    const over = await testkit({ models: listing(10_000) });
    const error = await pool.listModels({ baseUrl: over.baseUrl }).catch((e: unknown) => e);
    expect((error as ModelListingError).code).toBe("malformed");
    expect((error as Error).message).toMatch(/more than 16777216 bytes/);
    expect(await pool.contextLimitFor({ baseUrl: over.baseUrl, model: "org/model-9999" })).toBe(0);
    // The cap is the pool's to raise.
    const wide = createClientPool({ maxLookupBodyBytes: 64 * MiB });
    expect(await wide.listModels({ baseUrl: over.baseUrl })).toHaveLength(10_000);
  }, 30_000);
});

describe("the lookup is bounded and stoppable", () => {
  it("answers 0 past the bound, and listModels rejects with a TimeoutError", async () => {
    const silent = await scripted(() => "hang");
    const pool = createClientPool({ lookupBoundMs: 100 });
    const started = Date.now();
    expect(await pool.contextLimitFor({ baseUrl: silent.baseUrl, model: "m" })).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    const error = await pool.listModels({ baseUrl: silent.baseUrl }).catch((e: unknown) => e);
    expect((error as Error).name).toBe("TimeoutError");
  });

  it("is bounded by the endpoint's request timeout where that is shorter", async () => {
    const silent = await scripted(() => "hang");
    const pool = createClientPool({ lookupBoundMs: 60_000 });
    expect(await pool.contextLimitFor({ baseUrl: silent.baseUrl, requestTimeoutSeconds: 0.1 })).toBe(0);
  });

  it("bounds the listing and the native routes together, not each", async () => {
    // Every native route hangs. One bound over the whole lookup ends it with the first of them:
    // a bound on each route would let that one time out and go on to ask the next, and the next.
    // Counted, not timed (a 4 s bound here passed either way).
    const slow = await scripted((path) => (path === "/v1/models" ? [200, { data: [{ id: "m" }] }] : "hang"));
    const pool = createClientPool({ lookupBoundMs: 150 });
    expect(await pool.contextLimitFor({ baseUrl: slow.baseUrl, model: "m" })).toBe(0);
    const native = slow.seen.filter((seen) => seen.path !== "/v1/models");
    expect(native.length).toBeLessThanOrEqual(1);
  });

  it("rejects with the signal's reason, closes the request, and remembers nothing", async () => {
    const server = await scripted((path) =>
      path === "/v1/models" ? [200, { data: [{ id: "m" }] }] : path === "/props" ? [404, {}] : "hang",
    );
    const pool = createClientPool({ lookupBoundMs: 10_000 });
    const controller = new AbortController();
    const reason = new Error("run stopped");
    const lookup = pool
      .contextLimitFor({ baseUrl: server.baseUrl, model: "m" }, undefined, { signal: controller.signal })
      .catch((e: unknown) => e);
    // Stopped while LM Studio's route hangs (waited for, not timed: a busy machine is slow to get there).
    await settle(() => server.seen.some((s) => s.path === "/api/v0/models"));
    controller.abort(reason);
    const error = await lookup;
    expect(error).toBe(reason);
    await settle(() => server.seen.some((s) => s.path === "/api/v0/models" && s.closedEarly));
    const lmstudio = server.seen.filter((s) => s.path === "/api/v0/models");
    expect(lmstudio).toHaveLength(1);
    expect(lmstudio[0]?.closedEarly).toBe(true);
    // Nothing was remembered: the next lookup asks /api/v0/models again (no miss was recorded).
    await pool
      .contextLimitFor({ baseUrl: server.baseUrl, model: "m" }, undefined, {
        signal: AbortSignal.timeout(100),
      })
      .catch(() => {});
    expect(server.seen.filter((s) => s.path === "/api/v0/models")).toHaveLength(2);
  });

  it("holds nothing once a lookup has answered: ten thousand lookups leave no timer or signal behind", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const server = await testkit({ models: [{ id: "m" }] });
    // A long bound: what a lookup leaves armed would be held this long after it answered.
    const pool = createClientPool({ lookupBoundMs: 600_000 });
    const host = new AbortController();
    const settings = { baseUrl: server.baseUrl, model: "m" };
    expect(await pool.servedWindow(settings)).toBeUndefined(); // latched: no request from here on
    const run = async (signal?: AbortSignal) => {
      for (let i = 0; i < 10_000; i++) await pool.servedWindow(settings, { signal });
    };
    await run(host.signal); // warm-up
    gc();
    const before = process.memoryUsage().heapUsed;
    await run(host.signal);
    await run();
    gc();
    const held = process.memoryUsage().heapUsed - before;
    // Before: about 1.2 KB a lookup (2.4 KB with the caller's signal) held for the whole bound.
    expect(held).toBeLessThan(4_000_000);
    expect(getEventListeners(host.signal, "abort")).toHaveLength(0);
    expect(server.requests).toHaveLength(2);
  });

  it("rejects at once with an already-aborted signal and sends nothing", async () => {
    const server = await testkit({ models: fixtureJson("models/vllm.json") });
    const reason = new Error("stopped before");
    const error = await createClientPool()
      .contextLimitFor({ baseUrl: server.baseUrl }, undefined, { signal: AbortSignal.abort(reason) })
      .catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(server.requests).toHaveLength(0);
  });
});

describe("listModels", () => {
  it("returns the data entries with the endpoint's key, and a typed error for an error status", async () => {
    const server = await testkit({ models: captureJson("llamacpp-live/01-models.response.txt") });
    const entries = await createClientPool().listModels({ baseUrl: server.baseUrl, apiKey: "sk-local" });
    expect(entries.map((e) => e.id)).toEqual(["tiny.gguf"]);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer sk-local");

    const refusing = await testkit({ personality: routeStatus("/v1/models", 401) });
    const error = await createClientPool()
      .listModels({ baseUrl: refusing.baseUrl })
      .catch((e: unknown) => e);
    expect(ModelListingError.isInstance(error)).toBe(true);
    expect((error as ModelListingError).status).toBe(401);
  });

  it("rejects with an unreachable ModelListingError naming the system's code for a server that is gone", async () => {
    const gone = await startServer();
    const url = gone.baseUrl;
    await gone.close();
    const error = await createClientPool()
      .listModels({ baseUrl: url })
      .catch((e: unknown) => e);
    expect(ModelListingError.isInstance(error)).toBe(true);
    expect((error as ModelListingError).code).toBe("unreachable");
    expect((error as ModelListingError).url).toBe(`${url}/models`);
    expect((error as Error).message).toMatch(/got no answer: ECONNREFUSED\./);
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });
});

describe("against the testkit's server personalities", () => {
  it("reads llama.cpp's served n_ctx from /props, not the trained window", async () => {
    const server = await testkit({ personality: llamacppPersonality({ nCtx: 2048 }) });
    expect(await createClientPool().contextLimitFor({ baseUrl: server.baseUrl, model: "tiny.gguf" })).toBe(
      2048,
    );
    expect(paths(server)).toEqual(["/v1/models", "/props"]);
  });

  it("reads vLLM's max_model_len from the listing alone", async () => {
    const server = await testkit({ personality: vllmPersonality({ maxModelLen: 16384 }) });
    const pool = createClientPool();
    const [entry] = await pool.listModels({ baseUrl: server.baseUrl });
    expect(await pool.contextLimitFor({ baseUrl: server.baseUrl, model: entry?.id })).toBe(16384);
    expect(paths(server)).toEqual(["/v1/models", "/v1/models"]);
  });

  it("reads LM Studio's loaded_context_length from /api/v0/models", async () => {
    const model = "meta-llama-3.1-8b-instruct";
    const server = await testkit({ personality: lmstudioPersonality({ contextLength: 8192, model }) });
    expect(await createClientPool().contextLimitFor({ baseUrl: server.baseUrl, model })).toBe(8192);
    expect(paths(server)).toEqual(["/v1/models", "/props", "/api/v0/models"]);
  });
});

/**
 * Listing entries as other servers publish them (trimmed to the fields that matter), each from the
 * source named beside it. The window is what contextLimitFor answers from the listing alone.
 */
describe("listing shapes beyond the recorded fixtures", () => {
  const rows: [string, string, unknown, string, number][] = [
    [
      "Groq's context_window",
      "console.groq.com /openai/v1/models",
      {
        object: "list",
        data: [
          {
            id: "llama-3.1-8b-instant",
            object: "model",
            context_window: 131072,
            max_completion_tokens: 8192,
          },
        ],
      },
      "llama-3.1-8b-instant",
      131072,
    ],
    [
      "Together's bare array with context_length",
      "api.together.xyz /v1/models (a bare array)",
      [{ id: "Austism/chronos-hermes-13b", object: "model", type: "chat", context_length: 2048 }],
      "Austism/chronos-hermes-13b",
      2048,
    ],
    [
      "Mistral's max_context_length",
      "api.mistral.ai /v1/models",
      {
        object: "list",
        data: [
          {
            id: "mistral-large-2512",
            object: "model",
            capabilities: { completion_chat: true },
            max_context_length: 256000,
          },
        ],
      },
      "mistral-large-2512",
      256000,
    ],
    [
      "DeepInfra's metadata.context_length",
      "api.deepinfra.com /v1/openai/models",
      {
        object: "list",
        data: [
          {
            id: "deepseek-ai/DeepSeek-V3",
            object: "model",
            owned_by: "deepinfra",
            metadata: { context_length: 163840, max_tokens: 163840 },
          },
        ],
      },
      "deepseek-ai/DeepSeek-V3",
      163840,
    ],
    [
      "Fireworks' camelCase contextLength",
      "api.fireworks.ai control-plane model listing",
      { data: [{ id: "accounts/fireworks/models/deepseek-v3", contextLength: 131072 }] },
      "accounts/fireworks/models/deepseek-v3",
      131072,
    ],
    [
      "a LiteLLM proxy's max_input_tokens",
      "LiteLLM proxy /v1/models with model info",
      {
        data: [
          {
            id: "gpt-4o",
            object: "model",
            owned_by: "openai",
            max_input_tokens: 128000,
            max_output_tokens: 16384,
          },
        ],
      },
      "gpt-4o",
      128000,
    ],
    [
      "Gemini's inputTokenLimit under models[], named with the models/ prefix",
      "generativelanguage.googleapis.com /v1beta/models",
      { models: [{ name: "models/gemini-2.5-flash", inputTokenLimit: 1048576, outputTokenLimit: 65536 }] },
      "gemini-2.5-flash",
      1048576,
    ],
    [
      "OpenRouter's top_provider.context_length where the top level has none",
      "openrouter.ai /api/v1/models (top-level key absent)",
      { data: [{ id: "openai/gpt-4", top_provider: { context_length: 8191, max_completion_tokens: 4096 } }] },
      "openai/gpt-4",
      8191,
    ],
    [
      "GitHub Copilot's capabilities.limits.max_prompt_tokens",
      "api.githubcopilot.com /models",
      {
        data: [
          {
            id: "gpt-5",
            capabilities: {
              limits: {
                max_context_window_tokens: 264000,
                max_prompt_tokens: 128000,
                max_output_tokens: 64000,
              },
            },
          },
        ],
      },
      "gpt-5",
      128000,
    ],
    [
      "LM Studio's loaded_context_length over its max_context_length",
      "LM Studio /api/v0/models entry shape",
      {
        data: [
          {
            id: "google/gemma-3-4b",
            state: "loaded",
            max_context_length: 131072,
            loaded_context_length: 12918,
          },
        ],
      },
      "google/gemma-3-4b",
      12918,
    ],
    [
      "LM Studio's newer listing: a loaded instance's config.context_length over max_context_length",
      "LM Studio /api/v1/models (models[] keyed by `key`, loaded_instances)",
      {
        models: [
          {
            key: "qwen/qwen3-4b",
            type: "llm",
            max_context_length: 32768,
            loaded_instances: [{ id: "qwen/qwen3-4b", config: { context_length: 8192 } }],
          },
        ],
      },
      "qwen/qwen3-4b",
      8192,
    ],
    [
      "a llama.cpp router's --ctx-size in status.args",
      "llama.cpp router mode /v1/models (status.args)",
      {
        object: "list",
        data: [
          {
            id: "m:fast",
            object: "model",
            owned_by: "llamacpp",
            status: { value: "unloaded", args: ["/opt/llama-server", "--ctx-size", "65535", "--jinja"] },
          },
        ],
      },
      "m:fast",
      65535,
    ],
  ];
  for (const [name, source, body, model, window] of rows) {
    it(`reads ${name} (${source})`, async () => {
      const server = await scripted((path) => (path === "/v1/models" ? [200, body] : [404, { error: "no" }]));
      expect(await createClientPool().contextLimitFor({ baseUrl: server.baseUrl, model })).toBe(window);
      expect(server.seen.map((s) => s.path)).toEqual(["/v1/models"]);
    });
  }

  it("reads Ollama's /api/show num_ctx, and never the trained window in its model_info", () => {
    // ollama/ollama docs/api.md "Show Model Information" response shape
    const show = {
      id: "llama3.2",
      parameters: 'num_ctx                        8192\nstop                           "<|eot_id|>"',
      model_info: { "general.architecture": "llama", "llama.context_length": 131072 },
    };
    expect(listedWindow(show)).toBe(8192);
    expect(listedWindow({ ...show, parameters: 'stop "<|eot_id|>"' })).toBeUndefined();
    expect(listedWindow({ ...show, parameters: 'num_ctx 4096\r\nstop "x"' })).toBe(4096);
  });

  it("reads a parameters string of many thousand blank lines in one pass (found after them)", () => {
    // The old `^\s*` ran on through every blank line from each line start: 40,000 took seconds.
    const parameters = `${"\n".repeat(200_000)}num_ctx 2048`;
    expect(listedWindow({ id: "m", parameters })).toBe(2048);
    expect(listedWindow({ id: "m", parameters: `${"\n".repeat(200_000)}x` })).toBeUndefined();
  });

  it("takes no window from a fraction under one token (it is not a window of 0)", () => {
    expect(listedWindow({ id: "m", max_input_tokens: 0.5 })).toBeUndefined();
    expect(listedWindow({ id: "m", context_length: 0.5, max_input_tokens: 4096 })).toBe(4096);
    expect(listedWindow({ id: "m", context_length: 8192.7 })).toBe(8192);
  });

  it("takes no window from zero, null, a negative number or a string, and asks the native routes", async () => {
    const body = {
      data: [
        {
          id: "m",
          context_length: 0,
          max_model_len: null,
          context_window: -1,
          n_ctx: "4096",
          max_input_tokens: 0,
        },
      ],
    };
    const server = await scripted((path) => (path === "/v1/models" ? [200, body] : [404, { error: "no" }]));
    expect(await createClientPool().contextLimitFor({ baseUrl: server.baseUrl, model: "m" })).toBe(0);
    expect(server.seen.map((s) => s.path.split("?")[0])).toEqual(["/v1/models", "/props", "/api/v0/models"]);
  });

  it("lists a bare array and a models[] body as entries with ids", async () => {
    const server = await scripted(() => [200, [{ id: "a" }, { name: "models/b" }, { nothing: true }]]);
    const entries = await createClientPool().listModels({ baseUrl: server.baseUrl });
    expect(entries.map((e) => e.id)).toEqual(["a", "models/b"]);
  });
});
