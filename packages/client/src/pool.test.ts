import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveApiKey } from "./api-key.js";
import {
  DEFAULT_FIRST_TOKEN_SECONDS,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  firstTokenMs,
  NO_KEY,
  timeoutMs,
} from "./endpoint.js";
import { EndpointConfigError } from "./errors.js";
import { createClientPool } from "./pool.js";
import { isCredentialParam } from "./redact.js";
import { redactingFetch } from "./redact-fetch.js";
import { findEntry } from "./window.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

/** What `run` throws, or `undefined` when it returns. */
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

const ask = (client: ReturnType<ReturnType<typeof createClientPool>["getClient"]>) =>
  client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });

describe("getClient", () => {
  it("pools one client per base URL, key, headers and timeout", () => {
    const pool = createClientPool();
    const endpoint = {
      baseUrl: server.baseUrl,
      apiKey: "k",
      headers: { "X-A": "1" },
      requestTimeoutSeconds: 30,
    };
    const client = pool.getClient(endpoint);
    expect(pool.getClient({ ...endpoint, baseUrl: `${server.baseUrl}/`, headers: { "x-a": "1" } })).toBe(
      client,
    );
    expect(pool.getClient({ ...endpoint, apiKey: "other" })).not.toBe(client);
    expect(pool.getClient({ ...endpoint, headers: { "X-A": "2" } })).not.toBe(client);
    expect(pool.getClient({ ...endpoint, requestTimeoutSeconds: 5 })).not.toBe(client);
    expect(pool.getClient({ baseUrl: server.baseUrl })).toBe(
      pool.getClient({ baseUrl: server.baseUrl, apiKey: "" }),
    );
    expect(pool.size).toBe(5);
    pool.reset();
    expect(pool.size).toBe(0);
  });

  it("returns a real openai client that sends the endpoint's key and headers", async () => {
    const pool = createClientPool();
    server.enqueue({ type: "turn", content: "hello" });
    const reply = await ask(
      pool.getClient({ baseUrl: server.baseUrl, apiKey: "sk-own", headers: { "X-Trace": "t1" } }),
    );
    expect(reply.choices[0]?.message.content).toBe("hello");
    expect(server.chatRequests[0]?.headers.authorization).toBe("Bearer sk-own");
    expect(server.chatRequests[0]?.headers["x-trace"]).toBe("t1");
  });

  it("sends NO_KEY to a keyless server, never $OPENAI_API_KEY", async () => {
    const saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = "sk-env-secret";
    try {
      server.enqueue({ type: "turn", content: "ok" });
      await ask(createClientPool().getClient({ baseUrl: server.baseUrl }));
      expect(server.chatRequests[0]?.headers.authorization).toBe(`Bearer ${NO_KEY}`);
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });

  it("never retries on its own: one failed request is one request on the wire", async () => {
    server.enqueue({ type: "error", status: 503, body: { error: { message: "Loading model" } } });
    await expect(ask(createClientPool().getClient({ baseUrl: server.baseUrl }))).rejects.toThrow(
      /Loading model/,
    );
    expect(server.chatRequests).toHaveLength(1);
  });

  it("applies requestTimeoutSeconds to a call that does not stream", async () => {
    server.enqueue({ type: "turn", content: "late", firstByteDelayMs: 2000 });
    const client = createClientPool().getClient({ baseUrl: server.baseUrl, requestTimeoutSeconds: 0.1 });
    const error = await ask(client).catch((e: unknown) => e);
    expect((error as Error).constructor.name).toBe("APIConnectionTimeoutError");
  });

  it("refuses an endpoint without a usable base URL, naming the field", () => {
    const pool = createClientPool();
    for (const baseUrl of ["", "  ", "ftp://host/v1", "not a url"]) {
      const error = (() => {
        try {
          pool.getClient({ baseUrl });
        } catch (e) {
          return e;
        }
      })();
      expect(EndpointConfigError.isInstance(error)).toBe(true);
      expect((error as EndpointConfigError).field).toBe("baseUrl");
    }
    expect(() => pool.getClient({ baseUrl: server.baseUrl, headers: { a: 1 as unknown as string } })).toThrow(
      /header/,
    );
  });
});

describe("timeoutMs and firstTokenMs", () => {
  it("read the endpoint's seconds; absent is a finite default, and only a written 0 waits forever", () => {
    expect(timeoutMs({})).toBe(DEFAULT_REQUEST_TIMEOUT_SECONDS * 1000);
    expect(timeoutMs({})).toBe(120_000);
    expect(timeoutMs({ requestTimeoutSeconds: 0 })).toBeUndefined();
    expect(timeoutMs({ requestTimeoutSeconds: 30 })).toBe(30_000);
    expect(firstTokenMs({ requestTimeoutSeconds: 30 })).toBe(150_000);
    expect(firstTokenMs({ requestTimeoutSeconds: 30, firstTokenSeconds: 600 })).toBe(600_000);
    expect(firstTokenMs({})).toBe(DEFAULT_FIRST_TOKEN_SECONDS * 1000);
    expect(firstTokenMs({})).toBe(120_000);
    expect(firstTokenMs({ requestTimeoutSeconds: 0 })).toBeUndefined();
    expect(firstTokenMs({ firstTokenSeconds: 0, requestTimeoutSeconds: 5 })).toBeUndefined();
    // A Node timer holds at most about 24.8 days; a longer one would fire at once.
    expect(timeoutMs({ requestTimeoutSeconds: 10_000_000 })).toBe(2_147_483_647);
    expect(() => timeoutMs({ requestTimeoutSeconds: -1 })).toThrow(/requestTimeoutSeconds/);
  });

  it("clamp a timeout longer than a Node timer holds, so it never becomes 1 ms or Infinity", () => {
    const year = 365 * 24 * 3600;
    expect(timeoutMs({ requestTimeoutSeconds: year })).toBe(2_147_483_647);
    expect(firstTokenMs({ requestTimeoutSeconds: year })).toBe(2_147_483_647);
    expect(firstTokenMs({ firstTokenSeconds: year })).toBe(2_147_483_647);
    expect(firstTokenMs({ requestTimeoutSeconds: 1e306 })).toBe(2_147_483_647);
    expect(timeoutMs({ requestTimeoutSeconds: 2_147_483 })).toBe(2_147_483_000);
  });

  it("lets a request through on a client whose timeout is a year (not a 1 ms timer)", async () => {
    server.enqueue({ type: "turn", content: "still here", firstByteDelayMs: 50 });
    const reply = await ask(
      createClientPool().getClient({ baseUrl: server.baseUrl, requestTimeoutSeconds: 365 * 24 * 3600 }),
    );
    expect(reply.choices[0]?.message.content).toBe("still here");
  });
});

describe("a base URL that is not a string", () => {
  it("is refused as one of the wrong type, not as missing", () => {
    const pool = createClientPool();
    for (const [baseUrl, kind] of [
      [new URL(server.baseUrl), "a URL object"],
      [8080, "a number"],
    ] as const) {
      const thrown = thrownBy(() => pool.getClient({ baseUrl: baseUrl as never }));
      expect((thrown as EndpointConfigError).field).toBe("baseUrl");
      expect((thrown as Error).message).not.toMatch(/has no baseUrl/);
      expect((thrown as Error).message).toContain(`must be a string; it is ${kind}`);
    }
    expect((thrownBy(() => pool.getClient({} as never)) as Error).message).toMatch(/has no baseUrl/);
  });
});

describe("one endpoint, one client", () => {
  it("shares a client exactly where resolveApiKey finds the same endpoint, whatever the spelling (property)", () => {
    const spelling = fc.record({ upper: fc.boolean(), port: fc.boolean(), slashes: fc.nat(2) });
    const respell = (
      url: string,
      { upper, port, slashes }: { upper: boolean; port: boolean; slashes: number },
    ) => {
      const u = new URL(url);
      const scheme = upper ? u.protocol.toUpperCase() : u.protocol;
      const host = upper ? u.hostname.toUpperCase() : u.hostname;
      const portText = u.port ? `:${u.port}` : port ? (u.protocol === "https:" ? ":443" : ":80") : "";
      return `${scheme}//${host}${portText}${u.pathname}${"/".repeat(slashes)}`;
    };
    const web = fc.webUrl({ validSchemes: ["http", "https"] });
    fc.assert(
      fc.property(web, web, spelling, fc.boolean(), (a, other, how, respelled) => {
        const b = respelled ? respell(a, how) : other;
        const pool = createClientPool();
        const shared =
          pool.getClient({ baseUrl: a, apiKey: "k" }) === pool.getClient({ baseUrl: b, apiKey: "k" });
        const same = resolveApiKey({ baseUrl: b }, { baseUrl: a, apiKey: "sk-operator" }) === "sk-operator";
        // A respelling is always the same endpoint; forget under one spelling drops the other's client.
        const dropped = pool.forget({ baseUrl: b, apiKey: "k" });
        return shared === same && (!respelled || shared) && dropped === 1 && pool.size === (shared ? 0 : 1);
      }),
    );
  });
});

describe("a base URL with a query or a fragment", () => {
  it("is refused by name before anything is sent: the SDK would put every path after it", async () => {
    const pool = createClientPool();
    for (const [baseUrl, named] of [
      [`${server.baseUrl}?api-version=2024-10-21`, "?api-version"],
      [`${server.baseUrl}/?tenant=acme`, "?tenant"],
      [`${server.baseUrl}#models`, "#"],
    ] as const) {
      const thrown = thrownBy(() => pool.getClient({ baseUrl }));
      expect(EndpointConfigError.isInstance(thrown)).toBe(true);
      expect((thrown as EndpointConfigError).field).toBe("baseUrl");
      expect((thrown as Error).message).toContain(named);
      expect((thrown as Error).message).not.toMatch(/2024-10-21|acme/);
      const lookup = await pool.listModels({ baseUrl }).catch((error: unknown) => error);
      expect(EndpointConfigError.isInstance(lookup)).toBe(true);
      expect(await pool.contextLimitFor({ baseUrl }).catch((error: unknown) => error)).toBeInstanceOf(
        EndpointConfigError,
      );
    }
    // A key pasted after the "?" is a parameter name: refused without being quoted.
    const pasted = thrownBy(() =>
      pool.getClient({ baseUrl: `${server.baseUrl}?sk-proj-0123456789abcdefghijkl` }),
    );
    expect((pasted as EndpointConfigError).field).toBe("baseUrl");
    expect((pasted as Error).message).not.toContain("0123456789abcdefghijkl");
    // A credential in the query is still refused as one, naming the parameter and never its value.
    expect(() => pool.getClient({ baseUrl: `${server.baseUrl}?api-key=sk-in-query-123456` })).toThrow(
      /credential in its query \(api-key\)/,
    );
    expect(server.requests).toHaveLength(0);
  });
});

describe("window lookup options a pool cannot use", () => {
  it("are refused by name when the pool is made, not by a RangeError at the first lookup", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ lookupBoundMs: -5 }, "lookupBoundMs"],
      [{ lookupBoundMs: 0 }, "lookupBoundMs"],
      [{ lookupBoundMs: Number.NaN }, "lookupBoundMs"],
      [{ lookupBoundMs: "10s" }, "lookupBoundMs"],
      [{ lookupBoundMs: 2 ** 40 }, "lookupBoundMs"],
      [{ listingMissMs: -1 }, "listingMissMs"],
      [{ listingMissMs: Number.POSITIVE_INFINITY }, "listingMissMs"],
      [{ maxLookupBodyBytes: 0 }, "maxLookupBodyBytes"],
      [{ maxLookupBodyBytes: -1 }, "maxLookupBodyBytes"],
      [{ maxLookupBodyBytes: 1.5 }, "maxLookupBodyBytes"],
      [{ maxLookupBodyBytes: "16MB" }, "maxLookupBodyBytes"],
      [{ maxLookupBodyBytes: Number.POSITIVE_INFINITY }, "maxLookupBodyBytes"],
      [{ now: 1234 }, "now"],
      [{ routeLatches: {} }, "routeLatches"],
      [{ onLog: "console" }, "onLog"],
    ];
    for (const [options, field] of cases) {
      const thrown = thrownBy(() => createClientPool(options as never));
      expect(EndpointConfigError.isInstance(thrown), field).toBe(true);
      expect((thrown as EndpointConfigError).field).toBe(field);
    }
    expect(createClientPool({ lookupBoundMs: 1, listingMissMs: 0, routeLatches: new Map() }).size).toBe(0);
  });
});

describe("arguments of the wrong type", () => {
  it("are named by a typed error, or read as absent where absent is what null means", async () => {
    const pool = createClientPool(null as never);
    const settings = { baseUrl: server.baseUrl, model: "m" };
    // null options are no options; a signal that is not an AbortSignal is named.
    await expect(pool.contextLimitFor(settings, 4096, null as never)).resolves.toBe(4096);
    const served = await pool.servedWindow(settings, null as never);
    expect(served === undefined || typeof served === "number").toBe(true);
    for (const lookup of [{ signal: "stop" }, { signal: {} }, "fast"]) {
      const error = await pool.listModels(settings, lookup as never).catch((e: unknown) => e);
      expect(EndpointConfigError.isInstance(error)).toBe(true);
      expect((error as EndpointConfigError).field).toMatch(/^(options|signal)$/);
    }
    expect(() => findEntry("models" as never, "m")).toThrow(/findEntry: entries must/);
    expect(() => findEntry(null as never, undefined)).toThrow(/findEntry: entries must/);
    expect(isCredentialParam(42 as never)).toBe(false);
    expect(isCredentialParam(null as never)).toBe(false);
    expect(() => redactingFetch(null as never)).toThrow(/redactingFetch: secrets must/);
    expect(() => redactingFetch([42] as never)).toThrow(/redactingFetch: secrets must/);
  });
});

describe("an apiKey that is not a string", () => {
  it("is refused by name before anything is sent, and the error never repeats the value", async () => {
    const pool = createClientPool();
    for (const apiKey of [12345678901, { key: "sk-object-secret" }, ["sk-array-secret"], true]) {
      const endpoint = { baseUrl: server.baseUrl, apiKey } as never;
      const thrown = thrownBy(() => pool.getClient(endpoint));
      expect(EndpointConfigError.isInstance(thrown)).toBe(true);
      expect((thrown as EndpointConfigError).field).toBe("apiKey");
      expect(String((thrown as Error).message)).not.toMatch(/12345678901|sk-object-secret|sk-array-secret/);
      const lookup = await pool
        .listModels({ baseUrl: server.baseUrl, apiKey } as never)
        .catch((error: unknown) => error);
      expect(EndpointConfigError.isInstance(lookup)).toBe(true);
      expect((lookup as EndpointConfigError).field).toBe("apiKey");
    }
    expect(server.requests.length).toBe(0);
    // null and undefined are no key, as before.
    expect(pool.getClient({ baseUrl: server.baseUrl, apiKey: null } as never)).toBeDefined();
  });
});
