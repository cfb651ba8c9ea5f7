import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { ModelListingError } from "./errors.js";
import { createClientPool } from "./pool.js";

// A model of the window lookups against every server personality a pool meets: per run, each
// loopback base plays one personality (OpenAI, OpenRouter, vLLM, llama.cpp single and router, LM
// Studio loaded, not loaded, several loaded or too slow, Ollama, a proxy that has only /v1/models,
// one that 500s, one that hangs or trickles, one with a huge or a malformed body, one that
// redirects, one that resets mid-body, a gateway echoing the request into its listing), and a
// random sequence of lookups (three models and none, three tenants — one whose key is refused —
// extra headers, a stopped signal or one stopped mid-lookup, tight deadlines, two lookups at once,
// the clock moved past the miss timer, `forget`, one to 1024 kept routes) runs against it. The model says what each lookup answers and which paths each base is asked, from
// the route latches it keeps itself; the requests must carry only their own tenant's key, no error
// may hold any key, and no request may be left open once its lookup has settled.
//
// R91_WINDOW_RUNS sets how many cases, R91_WINDOW_SEED replays one.

const RUNS = Number(process.env.R91_WINDOW_RUNS ?? 40);
const SEED = process.env.R91_WINDOW_SEED === undefined ? undefined : Number(process.env.R91_WINDOW_SEED);

const KINDS = [
  "openai",
  "openrouter",
  "vllm",
  "llamacpp",
  "llamarouter",
  "lmstudio",
  "ollama",
  "proxy404",
  "err500",
  "hang",
  "trickle",
  "huge",
  "malformed",
  "redirect",
  "reset",
  "resetlist",
  "echo",
  "slowlm",
] as const;
type Kind = (typeof KINDS)[number];

const MODELS = ["org/m-a", "org/m-b", "org/m-c"] as const;
/** A model no server lists. */
const GHOST = "org/ghost";
type ModelName = (typeof MODELS)[number] | typeof GHOST | undefined;

const TENANTS = ["alpha", "beta", "bad"] as const;
type Tenant = (typeof TENANTS)[number];
/** Each tenant's key: long and unlike any word the servers send, so a leak is unambiguous. */
const KEYS: Record<Tenant, string> = {
  alpha: "sk-alpha-9f3c1e7a5b2d4c6e8f0a1b3c",
  beta: "sk-beta-2d4f6a8c0e1b3d5f7a9c1e3b",
  bad: "sk-refused-7e5c3a1f9d7b5e3c1a9f7d5b",
};
/** Servers that check keys refuse this tenant's with 401 on every route. */
const CHECKS_KEYS = new Set<Kind>(["openai", "openrouter", "vllm", "proxy404"]);

/** Servers only a deadline gets an answer from: their lookups are given a tight request timeout. */
const DEADLINED = new Set<Kind>(["hang", "trickle", "slowlm"]);

const MAX_BODY = 64 * 1024;
const MISS_MS = 1_000;
const LLAMA_SINGLE_CTX = 4096;
const LLAMA_TRAINED = 131_072;

/** A model's window on a server that states one: distinct per server kind and model. */
function windowOf(kind: Kind, model: string): number {
  return 1000 * (KINDS.indexOf(kind) + 1) + 10 * MODELS.indexOf(model as (typeof MODELS)[number]) + 8;
}

interface Setup {
  kind: Kind;
  /** LM Studio: the models loaded; llama.cpp router: the models started with a --ctx-size in args. */
  loaded: boolean[];
  /** For `huge`: whether the body declares its length (refused unread) or is chunked. */
  declared: boolean;
}

interface Seen {
  url: string;
  trace: string;
  headers: IncomingMessage["headers"];
  open: boolean;
}

/** A loopback server whose personality is set per run. */
class Personality {
  setup: Setup = { kind: "openai", loaded: [true, false, false], declared: false };
  seen: Seen[] = [];
  origin = "";
  /** Called with each request's trace and index within its lookup; answers true to hold it open. */
  onRequest: (trace: string) => boolean = () => false;
  private server: Server = createServer((req, res) => this.handle(req, res));

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const trace = String(req.headers["x-trace"] ?? "");
    const entry: Seen = { url: req.url ?? "/", trace, headers: req.headers, open: true };
    this.seen.push(entry);
    res.on("close", () => {
      entry.open = false;
    });
    if (this.onRequest(trace)) return;
    const url = new URL(req.url ?? "/", this.origin);
    this.answer(url, req.headers, res);
  }

  /** Writes a whole reply; answers `true`, so a route can end with `return this.json(…)`. */
  private json(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): true {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
    return true;
  }

  private answer(url: URL, headers: IncomingMessage["headers"], res: ServerResponse): true | undefined {
    const auth = String(headers.authorization ?? "");
    const { kind, loaded, declared } = this.setup;
    const path = url.pathname;
    const model = url.searchParams.get("model");
    const notFound = () => this.json(res, 404, { error: { message: `no route ${path}` } });
    if (CHECKS_KEYS.has(kind) && auth === `Bearer ${KEYS.bad}`) {
      this.json(res, 401, { error: { message: "Incorrect API key provided", code: "invalid_api_key" } });
      return;
    }
    const plain = { object: "list", data: MODELS.map((id) => ({ id, object: "model", owned_by: "o" })) };
    switch (kind) {
      case "openai":
      case "proxy404":
      case "ollama":
        return path === "/v1/models" ? this.json(res, 200, plain) : notFound();
      case "openrouter":
        if (path !== "/v1/models") return notFound();
        return this.json(res, 200, {
          data: MODELS.map((id) => ({
            id,
            canonical_slug: `${id}-2026`,
            context_length: windowOf(kind, id),
            top_provider: { context_length: 7 },
          })),
        });
      case "vllm":
        if (path !== "/v1/models") return notFound();
        return this.json(res, 200, {
          object: "list",
          data: MODELS.map((id) => ({
            id,
            object: "model",
            owned_by: "vllm",
            max_model_len: windowOf(kind, id),
          })),
        });
      case "llamacpp":
        if (path === "/v1/models") {
          return this.json(res, 200, {
            object: "list",
            data: [{ id: MODELS[0], object: "model", meta: { n_ctx_train: LLAMA_TRAINED, n_vocab: 32000 } }],
          });
        }
        if (path === "/props") {
          return this.json(res, 200, {
            default_generation_settings: { n_ctx: LLAMA_SINGLE_CTX },
            total_slots: 1,
          });
        }
        return notFound();
      case "llamarouter":
        if (path === "/v1/models") {
          return this.json(res, 200, {
            data: MODELS.map((id, i) => ({
              id,
              object: "model",
              status: loaded[i]
                ? { value: "loaded", args: ["llama-server", "--ctx-size", String(windowOf(kind, id))] }
                : { value: "unloaded" },
            })),
          });
        }
        if (path === "/props") {
          if (model === null) {
            return this.json(res, 200, { role: "router", default_generation_settings: { n_ctx: 0 } });
          }
          if (!(MODELS as readonly string[]).includes(model)) {
            return this.json(res, 400, { error: { message: "model not found" } });
          }
          return this.json(res, 200, { default_generation_settings: { n_ctx: windowOf(kind, model) + 1 } });
        }
        return notFound();
      case "lmstudio":
        if (path === "/v1/models") return this.json(res, 200, plain);
        if (path === "/api/v0/models") {
          return this.json(res, 200, {
            object: "list",
            data: MODELS.map((id, i) =>
              loaded[i]
                ? {
                    id,
                    type: "llm",
                    state: "loaded",
                    max_context_length: 999_999,
                    loaded_context_length: windowOf(kind, id),
                  }
                : { id, type: "llm", state: "not-loaded", max_context_length: 999_999 },
            ),
          });
        }
        // LM Studio answers a route it lacks with 200 and an error body.
        return this.json(res, 200, { error: "Unexpected endpoint or method. (GET /props)" });
      case "err500":
        return this.json(res, 500, { error: { message: "upstream exploded" } });
      case "hang":
        return;
      case "trickle": {
        // Headers at once, then a byte now and then for ever: only the deadline ends it.
        res.writeHead(200, { "content-type": "application/json" });
        res.write('{"data":[');
        const timer = setInterval(() => res.write(" "), 5);
        res.on("close", () => clearInterval(timer));
        return;
      }
      case "huge": {
        if (path === "/props") return notFound();
        const filler = JSON.stringify({ data: MODELS.map((id) => ({ id, pad: "x".repeat(MAX_BODY) })) });
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (declared) headers["content-length"] = String(Buffer.byteLength(filler));
        res.writeHead(200, headers);
        res.end(filler);
        return;
      }
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"data": [{"id": "org/m-a", "max_model_len": 40');
        return;
      case "redirect":
        if (path === "/v1/models") return this.json(res, 307, "", { location: "/real/v1/models" });
        if (path === "/real/v1/models") {
          return this.json(res, 200, {
            data: MODELS.map((id) => ({ id, context_length: windowOf(kind, id) })),
          });
        }
        return this.json(res, 302, "", { location: `${evil.origin}${path}` });
      case "reset":
        if (path === "/v1/models") return this.json(res, 200, plain);
        if (path === "/api/v0/models") {
          res.writeHead(200, { "content-type": "application/json" });
          res.write('{"object":"list","data":[{"id":"org/m-a","state":"loaded",');
          setTimeout(() => res.destroy(), 5);
          return;
        }
        return notFound();
      case "echo":
        // A gateway that writes what it was sent into its listing (and its errors).
        if (path !== "/v1/models") {
          return this.json(res, 404, {
            error: { message: `no route for ${auth} ${headers["api-key"] ?? ""}` },
          });
        }
        return this.json(res, 200, {
          data: MODELS.map((id) => ({
            id,
            owned_by: `${auth} ${headers["api-key"] ?? ""}`,
            max_model_len: windowOf(kind, id),
          })),
        });
      case "slowlm":
        // LM Studio busy loading: its listing answers, /api/v0/models not within the lookup's time.
        if (path === "/v1/models") return this.json(res, 200, plain);
        if (path === "/api/v0/models") return;
        return this.json(res, 200, { error: "Unexpected endpoint or method. (GET /props)" });
      case "resetlist":
        // The listing cut off mid-body (a proxy dropping the connection); nothing else served.
        if (path !== "/v1/models") return notFound();
        res.writeHead(200, { "content-type": "application/json" });
        res.write('{"object":"list","data":[{"id":"org/m-a",');
        setTimeout(() => res.destroy(), 5);
        return;
    }
  }
}

/** Where the redirecting personality points its native routes: must never be asked. */
const evil = new Personality();
const bases = [new Personality(), new Personality(), new Personality(), new Personality()];

beforeAll(async () => {
  await Promise.all([evil, ...bases].map((b) => b.start()));
});
afterAll(async () => {
  await Promise.all([evil, ...bases].map((b) => b.close()));
});

// ---------------------------------------------------------------------------------------------
// The model

type ListingOutcome =
  | { ok: true; window: number | undefined; meta: number | undefined; ids: string[] }
  | { ok: false; code: "http" | "malformed" | "unreachable"; status?: number }
  | "hang";
/**
 * `absent`: 404/405/501; `blank`: 200 without a window (left alone for MISS_MS); `other`: any other
 * failure, or a llama.cpp router's n_ctx 0 for itself (no latch).
 */
type PropsOutcome = number | "absent" | "blank" | "other" | "hang";
/** `nothing`: a listing without the model's window, or a body past the cap (no latch). */
type LmOutcome = number | "absent" | "refused" | "miss" | "nothing" | "hang";

function refused(setup: Setup, tenant: Tenant): boolean {
  return CHECKS_KEYS.has(setup.kind) && tenant === "bad";
}

function listingOf(setup: Setup, model: ModelName, tenant: Tenant): ListingOutcome {
  const { kind, loaded } = setup;
  if (refused(setup, tenant)) return { ok: false, code: "http", status: 401 };
  const listed = model !== undefined && (MODELS as readonly string[]).includes(model);
  const ids = [...MODELS] as string[];
  switch (kind) {
    case "openai":
    case "proxy404":
    case "ollama":
    case "lmstudio":
    case "reset":
    case "slowlm":
      return { ok: true, window: undefined, meta: undefined, ids };
    case "openrouter":
    case "vllm":
    case "redirect":
    case "echo":
      return { ok: true, window: listed ? windowOf(kind, model as string) : undefined, meta: undefined, ids };
    case "llamacpp": {
      // One entry: found by its id, or as the only entry when no model is named.
      const found = model === undefined || model === MODELS[0];
      return { ok: true, window: undefined, meta: found ? LLAMA_TRAINED : undefined, ids: [MODELS[0]] };
    }
    case "llamarouter": {
      const i = listed ? MODELS.indexOf(model as (typeof MODELS)[number]) : -1;
      return {
        ok: true,
        window: i >= 0 && loaded[i] ? windowOf(kind, model as string) : undefined,
        meta: undefined,
        ids,
      };
    }
    case "err500":
      return { ok: false, code: "http", status: 500 };
    case "hang":
    case "trickle":
      return "hang";
    case "huge":
    case "malformed":
      return { ok: false, code: "malformed" };
    case "resetlist":
      return { ok: false, code: "unreachable" };
  }
}

function propsOf(setup: Setup, model: ModelName, tenant: Tenant): PropsOutcome {
  const { kind } = setup;
  if (refused(setup, tenant)) return "other";
  switch (kind) {
    case "openai":
    case "openrouter":
    case "vllm":
    case "ollama":
    case "proxy404":
    case "huge":
    case "reset":
    case "resetlist":
    case "echo":
      return "absent";
    case "lmstudio":
    case "slowlm":
    case "malformed":
      return "blank";
    case "err500":
    case "redirect":
      return "other";
    case "llamacpp":
      return LLAMA_SINGLE_CTX;
    case "llamarouter":
      return model !== undefined && (MODELS as readonly string[]).includes(model)
        ? windowOf(kind, model) + 1
        : "other";
    case "hang":
    case "trickle":
      return "hang";
  }
}

function lmOf(setup: Setup, model: ModelName, tenant: Tenant): LmOutcome {
  const { kind, loaded } = setup;
  if (refused(setup, tenant)) return "refused";
  switch (kind) {
    case "llamacpp":
    case "llamarouter":
    case "openai":
    case "openrouter":
    case "vllm":
    case "ollama":
    case "proxy404":
    case "resetlist":
    case "echo":
      return "absent";
    case "lmstudio": {
      if (model === undefined) {
        const on = MODELS.filter((_, i) => loaded[i]);
        return on.length === 1 ? windowOf(kind, on[0] as string) : "nothing";
      }
      const i = MODELS.indexOf(model as (typeof MODELS)[number]);
      return i >= 0 && loaded[i] ? windowOf(kind, model) : "nothing";
    }
    case "err500":
    case "redirect":
      return "miss";
    case "reset":
      // A body cut off mid-way is an unreadable body: left alone for listingMissMs (README).
      return "miss";
    case "malformed":
      // A complete body that is no listing: a server answering every path, left alone (README).
      return "miss";
    case "huge":
      return "nothing";
    case "hang":
    case "trickle":
    case "slowlm":
      return "hang";
  }
}

interface Latches {
  neither: boolean;
  gone: boolean;
  missUntil: number;
  propsMissUntil: number;
}

interface Expected {
  /** The paths (with query) asked, in order. */
  paths: string[];
  /** What the lookup answers: a number, `undefined`, entries' ids, or an error's description. */
  answer: unknown;
  /** The latch change applied when the lookup is not stopped. */
  latch: (l: Latches, now: number) => void;
  /** How many paths are asked before the native routes' latches are read (`-1`: they never are). */
  servedAfter: number;
}

type Op = "limit" | "served" | "list";

const setNeither = (s: Latches): void => {
  s.neither = true;
};
const setGone = (s: Latches): void => {
  s.gone = true;
};
const setMiss = (s: Latches, now: number): void => {
  s.missUntil = now + MISS_MS;
};
const setPropsMiss = (s: Latches, now: number): void => {
  s.propsMissUntil = now + MISS_MS;
};

function expect0(setup: Setup, op: Op, model: ModelName, tenant: Tenant, l: Latches, now: number): Expected {
  const paths: string[] = [];
  const changes: ((l: Latches, now: number) => void)[] = [];
  const latch = (l2: Latches, n: number) => {
    for (const c of changes) c(l2, n);
  };
  const listingPaths = setup.kind === "redirect" ? ["/v1/models", "/real/v1/models"] : ["/v1/models"];
  let meta: number | undefined;
  if (op === "list" || op === "limit") {
    paths.push(...listingPaths);
    const listing = listingOf(setup, model, tenant);
    if (op === "list") {
      if (listing === "hang") return { paths, answer: "TimeoutError", latch, servedAfter: -1 };
      if (!listing.ok)
        return {
          paths,
          answer: `ModelListingError:${listing.code}:${listing.status ?? ""}`,
          latch,
          servedAfter: -1,
        };
      return { paths, answer: listing.ids, latch, servedAfter: -1 };
    }
    if (listing === "hang") return { paths, answer: 0, latch, servedAfter: -1 };
    if (listing.ok && listing.window !== undefined)
      return { paths, answer: listing.window, latch, servedAfter: -1 };
    if (listing.ok) meta = listing.meta;
  }
  const none = op === "limit" ? (meta ?? 0) : undefined;
  // Here the lookup reads (and touches) this server's latches.
  const servedAfter = paths.length;
  if (l.neither) return { paths, answer: none, latch, servedAfter };
  let propsAbsent = false;
  if (!(l.propsMissUntil > now)) {
    paths.push(model ? `/props?model=${encodeURIComponent(model)}` : "/props");
    const props = propsOf(setup, model, tenant);
    if (typeof props === "number") return { paths, answer: props, latch, servedAfter };
    if (props === "hang") return { paths, answer: none, latch, servedAfter };
    if (props === "blank") changes.push(setPropsMiss);
    propsAbsent = props === "absent";
  }
  if (l.gone || l.missUntil > now) {
    if (propsAbsent && l.gone) changes.push(setNeither);
    return { paths, answer: none, latch, servedAfter };
  }
  paths.push("/api/v0/models");
  const lm = lmOf(setup, model, tenant);
  if (typeof lm === "number") return { paths, answer: lm, latch, servedAfter };
  if (lm === "absent") {
    changes.push(setGone);
    if (propsAbsent) changes.push(setNeither);
  } else if (lm === "miss") {
    // A route that does not answer within the lookup's time latches nothing here: the lookups on
    // servers that never answer are bounded by their endpoint's own requestTimeoutSeconds, one
    // tenant's choice (review-r91 pins the pool's own bound, which does latch).
    changes.push(setMiss);
  }
  return { paths, answer: none, latch, servedAfter };
}

// ---------------------------------------------------------------------------------------------
// The runs

type Stop = { type: "none" } | { type: "before" } | { type: "at"; index: number };

interface Step {
  type: "lookup";
  base: number;
  op: Op;
  model: ModelName;
  tenant: Tenant;
  header: "none" | "tenant" | "api-key";
  stop: Stop;
  /** A tight request timeout (seconds) for this lookup's endpoint; only given to hanging servers. */
  timeoutSeconds: number;
}
/** Two lookups on one base at once (tenants side by side), neither stopped. */
interface Pair {
  type: "pair";
  base: number;
  lookups: [Omit<Step, "base" | "stop" | "type">, Omit<Step, "base" | "stop" | "type">];
}
type Action = Step | Pair | { type: "tick"; ms: number } | { type: "forget"; base: number; tenant: Tenant };

const setupArb: fc.Arbitrary<Setup> = fc.record({
  kind: fc.constantFrom(...KINDS),
  loaded: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
  declared: fc.boolean(),
});

const pairedArb = fc.record({
  op: fc.constantFrom<Op>("limit", "served", "list"),
  model: fc.constantFrom<ModelName>(...MODELS, GHOST, undefined),
  tenant: fc.constantFrom<Tenant>(...TENANTS),
  header: fc.constantFrom("none", "tenant", "api-key"),
  timeoutSeconds: fc.constantFrom(0.03, 0.06, 0.12),
});

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant("pair" as const),
      base: fc.nat({ max: bases.length - 1 }),
      lookups: fc.tuple(pairedArb, pairedArb),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      type: fc.constant("lookup" as const),
      base: fc.nat({ max: bases.length - 1 }),
      op: fc.constantFrom<Op>("limit", "limit", "served", "list"),
      model: fc.constantFrom<ModelName>(...MODELS, GHOST, undefined),
      tenant: fc.constantFrom<Tenant>(...TENANTS),
      header: fc.constantFrom("none", "tenant", "api-key"),
      stop: fc.oneof(
        { weight: 6, arbitrary: fc.constant<Stop>({ type: "none" }) },
        { weight: 1, arbitrary: fc.constant<Stop>({ type: "before" }) },
        { weight: 2, arbitrary: fc.nat({ max: 3 }).map<Stop>((index) => ({ type: "at", index })) },
      ),
      timeoutSeconds: fc.constantFrom(0.03, 0.06, 0.12),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ type: fc.constant("tick" as const), ms: fc.nat({ max: 2 * MISS_MS }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant("forget" as const),
      base: fc.nat({ max: bases.length - 1 }),
      tenant: fc.constantFrom<Tenant>(...TENANTS),
    }),
  },
);

/**
 * The timeout a deadlined lookup runs under. On the LM Studio that is still loading (`slowlm`) its
 * listing must answer first and only `/api/v0/models` run out of time: 30 ms let the listing itself
 * run out on a loaded host (once in four full runs beside other suites), so it has a quarter of a
 * second at least. `hang` and `trickle` keep the drawn 30-120 ms: every request of theirs is meant to.
 */
function timeoutFor(kind: Kind, drawn: number): number {
  return kind === "slowlm" ? Math.max(drawn, 0.25) : drawn;
}

/** Waits until `ready()` holds, or `ms` have passed. */
async function settle(ready: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!ready() && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
}

function describeAnswer(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((e) => (e as { id: string }).id);
  return value;
}

function describeError(error: unknown): unknown {
  if (ModelListingError.isInstance(error)) return `ModelListingError:${error.code}:${error.status ?? ""}`;
  if (error instanceof DOMException && error.name === "TimeoutError") return "TimeoutError";
  return error;
}

let traces = 0;

async function runCase(setups: Setup[], actions: Action[], maxRoutes: number): Promise<void> {
  let clock = 1_000_000;
  const pool = createClientPool({
    maxRoutes,
    lookupBoundMs: 5_000,
    listingMissMs: MISS_MS,
    now: () => clock,
    maxLookupBodyBytes: MAX_BODY,
  });
  // The pool's latches as the model keeps them: insertion order is recency, the first goes first.
  const latches = new Map<number, Latches>();
  const touch = (base: number): Latches => {
    const state = latches.get(base) ?? { neither: false, gone: false, missUntil: 0, propsMissUntil: 0 };
    latches.delete(base);
    latches.set(base, state);
    while (latches.size > maxRoutes) latches.delete(latches.keys().next().value as number);
    return state;
  };
  evil.seen = [];
  bases.forEach((b, i) => {
    b.setup = setups[i] as Setup;
    b.seen = [];
  });
  const fresh = (): Latches => ({ neither: false, gone: false, missUntil: 0, propsMissUntil: 0 });

  /** Two lookups at once: each asks what the model says from the latches before, or after the other's. */
  const runPair = async (pair: Pair, server: Personality, baseUrl: string): Promise<void> => {
    const setup = server.setup;
    const before = { ...(latches.get(pair.base) ?? fresh()) };
    const runs = pair.lookups.map((step) => {
      const trace = `lookup-${++traces}`;
      const key = KEYS[step.tenant];
      const headers: Record<string, string> = { "x-trace": trace };
      if (step.header === "tenant") headers["x-tenant"] = step.tenant;
      if (step.header === "api-key") headers["api-key"] = key;
      const deadlined = DEADLINED.has(setup.kind);
      const settings = {
        baseUrl,
        apiKey: key,
        headers,
        ...(step.model === undefined ? {} : { model: step.model }),
        ...(deadlined ? { requestTimeoutSeconds: timeoutFor(setup.kind, step.timeoutSeconds) } : {}),
      };
      const want = expect0(setup, step.op, step.model, step.tenant, before, clock);
      const lookup: Promise<unknown> =
        step.op === "limit"
          ? pool.contextLimitFor(settings, undefined)
          : step.op === "served"
            ? pool.servedWindow(settings)
            : pool.listModels(settings);
      return { step, trace, key, want, lookup, deadlined };
    });
    const settled = await Promise.allSettled(runs.map((r) => r.lookup));
    for (const [i, run] of runs.entries()) {
      const { step, trace, want, deadlined } = run;
      const other = runs[1 - i] as (typeof runs)[number];
      const afterOther = { ...before };
      other.want.latch(afterOther, clock);
      const alt = expect0(setup, step.op, step.model, step.tenant, afterOther, clock);
      // `neither` and /props' own latch are read as the native routes begin, the LM Studio latches
      // after /props answers: the other lookup's latches may land in between.
      const between = expect0(
        setup,
        step.op,
        step.model,
        step.tenant,
        { ...afterOther, neither: before.neither, propsMissUntil: before.propsMissUntil },
        clock,
      );
      const where = `${trace} (pair) ${step.op} ${setup.kind} model=${String(step.model)} tenant=${step.tenant}`;
      const result = settled[i] as PromiseSettledResult<unknown>;
      const answer =
        result.status === "fulfilled" ? describeAnswer(result.value) : describeError(result.reason);
      expect(answer, where).toEqual(want.answer);
      const text =
        result.status === "fulfilled"
          ? (JSON.stringify(result.value) ?? "")
          : `${String(result.reason)} ${JSON.stringify(result.reason)} ${String((result.reason as Error).stack)}`;
      for (const t of TENANTS) expect(text, where).not.toContain(KEYS[t]);
      const seen = () => server.seen.filter((x) => x.trace === trace);
      await settle(
        () => seen().length >= Math.min(want.paths.length, alt.paths.length, between.paths.length),
        1_000,
      );
      const urls = seen().map((x) => x.url);
      const fits = (paths: string[]) =>
        JSON.stringify(deadlined ? paths.slice(0, urls.length) : paths) === JSON.stringify(urls);
      expect(
        fits(want.paths) || fits(alt.paths) || fits(between.paths),
        `${where}: ${JSON.stringify(urls)}`,
      ).toBe(true);
      for (const x of seen()) {
        expect(x.headers.authorization, where).toBe(`Bearer ${run.key}`);
        const sent = JSON.stringify(x.headers);
        for (const t of TENANTS) if (t !== step.tenant) expect(sent, where).not.toContain(KEYS[t]);
      }
      await settle(() => seen().every((x) => !x.open));
      expect(seen().filter((x) => x.open).length, where).toBe(0);
    }
    // Latches only ever add up, and are the same from either order: both lookups' changes apply.
    if (runs.some((r) => r.want.servedAfter >= 0)) {
      const kept = touch(pair.base);
      for (const r of runs) r.want.latch(kept, clock);
    }
  };

  for (const action of actions) {
    if (action.type === "tick") {
      clock += action.ms;
      continue;
    }
    const server = bases[action.base] as Personality;
    const baseUrl = `${server.origin}/v1`;
    if (action.type === "forget") {
      pool.forget({ baseUrl, apiKey: KEYS[action.tenant] });
      latches.delete(action.base);
      continue;
    }
    if (action.type === "pair") {
      await runPair(action, server, baseUrl);
      continue;
    }
    const { op, model, tenant } = action;
    const setup = server.setup;
    // Unique across runs: a request the client gave up on can reach its server after the next run began.
    const trace = `lookup-${++traces}`;
    const key = KEYS[tenant];
    const headers: Record<string, string> = { "x-trace": trace };
    if (action.header === "tenant") headers["x-tenant"] = tenant;
    // A credential under a header of its own: sent beside the bearer token, as the SDK would.
    if (action.header === "api-key") headers["api-key"] = key;
    const settings = {
      baseUrl,
      apiKey: key,
      headers,
      ...(model === undefined ? {} : { model }),
    };
    const state = latches.get(action.base) ?? {
      neither: false,
      gone: false,
      missUntil: 0,
      propsMissUntil: 0,
    };
    const want = expect0(setup, op, model, tenant, state, clock);
    // A lookup that asks nothing (a latched server) cannot be stopped mid-way: it is not stopped.
    const stop: Stop = action.stop.type === "at" && want.paths.length === 0 ? { type: "none" } : action.stop;
    // A tight deadline on a server that never answers; not on one the caller stops mid-request,
    // where the deadline could pass before the request reaches the server.
    if (DEADLINED.has(setup.kind) && stop.type !== "at") {
      Object.assign(settings, { requestTimeoutSeconds: timeoutFor(setup.kind, action.timeoutSeconds) });
    }
    const controller = new AbortController();
    const reason = new Error(`stopped ${trace}`);
    if (stop.type === "before") controller.abort(reason);
    // Stopped mid-lookup: the server holds the chosen request open and the caller aborts.
    const stopAt = stop.type === "at" ? stop.index % want.paths.length : -1;
    let asked = 0;
    server.onRequest = (t) => {
      if (t !== trace) return false;
      if (asked++ !== stopAt) return false;
      controller.abort(reason);
      return true;
    };
    const lookup =
      op === "limit"
        ? pool.contextLimitFor(settings, undefined, { signal: controller.signal })
        : op === "served"
          ? pool.servedWindow(settings, { signal: controller.signal })
          : pool.listModels(settings, { signal: controller.signal });
    let got: unknown;
    let failure: unknown;
    try {
      const answered = await lookup;
      // What listModels hands back holds no key, whatever the server wrote into it.
      for (const t of TENANTS) expect(JSON.stringify(answered) ?? "", trace).not.toContain(KEYS[t]);
      got = describeAnswer(answered);
    } catch (error) {
      failure = error;
    }
    server.onRequest = () => false;
    const seen = () => server.seen.filter((s) => s.trace === trace);
    const where = `${trace} ${op} ${setup.kind} model=${String(model)} tenant=${tenant} stop=${JSON.stringify(stop)}`;
    if (stop.type === "before") {
      expect(failure, where).toBe(reason);
      expect(seen(), where).toEqual([]);
    } else if (stop.type === "at") {
      expect(failure, where).toBe(reason);
      expect(
        seen().map((s) => s.url),
        where,
      ).toEqual(want.paths.slice(0, stopAt + 1));
    } else {
      expect(failure === undefined ? got : describeError(failure), where).toEqual(want.answer);
      // A request given up on at its deadline may reach the server (same process) a moment later.
      await settle(() => seen().length >= want.paths.length, 1_000);
      const urls = seen().map((s) => s.url);
      // Where the deadline ends the lookup, it may even end before its one request was sent.
      const deadlined = DEADLINED.has(setup.kind);
      expect(urls, where).toEqual(deadlined ? want.paths.slice(0, urls.length) : want.paths);
      want.latch(state, clock);
    }
    // A lookup that reached the native routes (even one stopped there) touched the server's latches.
    const reached =
      want.servedAfter >= 0 &&
      (stop.type === "none" || (stop.type === "at" && stop.index % want.paths.length >= want.servedAfter));
    if (reached) {
      const kept = touch(action.base);
      if (stop.type === "none") Object.assign(kept, state);
    }
    // Every request carried this tenant's key and no other's.
    for (const s of seen()) {
      expect(s.headers.authorization, where).toBe(`Bearer ${key}`);
      const text = JSON.stringify(s.headers);
      for (const other of TENANTS) if (other !== tenant) expect(text, where).not.toContain(KEYS[other]);
    }
    // No key in what the caller is handed back.
    if (failure !== undefined && failure !== reason) {
      const text = `${String(failure)} ${JSON.stringify(failure)} ${String((failure as Error).stack)}`;
      for (const t of TENANTS) expect(text, where).not.toContain(KEYS[t]);
    }
    // Nothing of a settled lookup is left open on the server: a held or hanging request is closed.
    await settle(() => seen().every((s) => !s.open));
    expect(
      seen()
        .filter((s) => s.open)
        .map((s) => s.url),
      where,
    ).toEqual([]);
  }
  // Never followed off-origin.
  expect(evil.seen.map((s) => s.url)).toEqual([]);
}

describe("window lookups against every server's personality (model)", () => {
  it(
    "answers what the model says, asks only what it says, and keeps tenants apart",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(setupArb, { minLength: bases.length, maxLength: bases.length }),
          fc.array(actionArb, { minLength: 1, maxLength: 25 }),
          fc.constantFrom(1, 2, 3, 1024),
          async (setups, actions, maxRoutes) => {
            await runCase(setups, actions, maxRoutes);
          },
        ),
        propertyRuns(RUNS, { ...(SEED === undefined ? {} : { seed: SEED }) }),
      );
    },
    propertyTimeout(RUNS * 2_000 + 10_000),
  );
});
