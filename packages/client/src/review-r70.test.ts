// Review r70 (second round on client): what a host saw of errors, warnings and refusals. Every case
// that asks a server speaks HTTP to the testkit's loopback server.

import { getEventListeners } from "node:events";
import { startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EndpointConfigError } from "./errors.js";
import { createClientPool } from "./pool.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer({ models: [{ id: "m", context_length: 4096 }] });
});
afterEach(() => server.close());

const refusal = (baseUrl: string): EndpointConfigError => {
  try {
    createClientPool().getClient({ baseUrl });
  } catch (error) {
    expect(EndpointConfigError.isInstance(error)).toBe(true);
    return error as EndpointConfigError;
  }
  throw new Error("expected getClient to refuse the base URL");
};

describe("R70C-1: a key pasted after the ? of a base URL", () => {
  it.each(["sk-1234abcd5678efgh", "Abc123Def456Ghi789Jkl0", "c2stMTIzNDU2Nzg5MGFi=="])(
    "is refused without being quoted, however short (%s)",
    (key) => {
      const error = refusal(`${server.baseUrl}?${key}`);
      expect(error.field).toBe("baseUrl");
      expect(error.message).not.toContain(key.replace(/=+$/, ""));
      expect(error.message).toContain("a parameter not shown");
    },
  );

  it("still names a parameter written name=value, beside one it does not show", () => {
    const key = "sk-1234abcd5678efgh";
    const error = refusal(`${server.baseUrl}?api-version=2024-10-21&${key}`);
    expect(error.message).toContain("?api-version, a parameter not shown");
    expect(error.message).not.toContain(key);
  });
});

describe("R70C-2: an error body nested deeper than JSON.stringify can walk", () => {
  const depth = 100_000;
  it.each([
    ["with no message", `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`],
    ["beside a message", `{"message":"too long","x":${"[".repeat(depth)}${"]".repeat(depth)}}`],
  ])(
    "reaches the caller as the server's refusal with its status (%s), not a connection error",
    async (_, body) => {
      server.enqueue({ type: "error", status: 400, body });
      const client = createClientPool().getClient({
        baseUrl: server.baseUrl,
        apiKey: "sk-r70-0123456789abcdef",
      });
      const error = await client.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error).not.toBeInstanceOf(OpenAI.APIConnectionError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    },
  );
});

describe("R70C-3: many lookups at once on one host signal", () => {
  it("add one abort listener to it, print no MaxListenersExceededWarning, and remove it when done", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const pool = createClientPool();
      const host = new AbortController();
      const settings = { baseUrl: server.baseUrl, model: "m" };
      let most = 0;
      const lookups = Array.from({ length: 24 }, () =>
        pool.contextLimitFor(settings, undefined, { signal: host.signal }),
      );
      most = getEventListeners(host.signal, "abort").length;
      expect(await Promise.all(lookups)).toEqual(Array(24).fill(4096));
      expect(most).toBe(1);
      expect(getEventListeners(host.signal, "abort")).toHaveLength(0);
      // Let a warning emitted during the lookups reach its listener.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("still stops every one of them, each with the signal's reason, when it aborts", async () => {
    const pool = createClientPool();
    const host = new AbortController();
    const reason = new Error("host shutting down");
    // All twelve are in flight (their requests sent, no answer read) when the host stops.
    const lookups = Array.from({ length: 12 }, () =>
      pool.listModels({ baseUrl: server.baseUrl }, { signal: host.signal }).catch((e: unknown) => e),
    );
    expect(getEventListeners(host.signal, "abort")).toHaveLength(1);
    host.abort(reason);
    for (const outcome of await Promise.all(lookups)) expect(outcome).toBe(reason);
    expect(getEventListeners(host.signal, "abort")).toHaveLength(0);
  });
});

describe("a listed window no server has", () => {
  it("is no window past 2^53 - 1 (1e308 was taken, and every token count measured against it)", async () => {
    const listing = await startServer({
      models: [
        { id: "huge", context_length: 1e308 },
        { id: "both", context_length: 2 ** 60, max_model_len: 8192 },
      ],
    });
    try {
      const pool = createClientPool();
      expect(await pool.contextLimitFor({ baseUrl: listing.baseUrl, model: "huge" })).toBe(0);
      expect(await pool.contextLimitFor({ baseUrl: listing.baseUrl, model: "both" })).toBe(8192);
    } finally {
      await listing.close();
    }
  });
});

describe("headers given as a Headers or a Map", () => {
  it("are refused with EndpointConfigError naming headers, not sent as none (the tenant's api-key dropped)", () => {
    for (const headers of [new Headers({ "api-key": "k-123" }), new Map([["api-key", "k-123"]])]) {
      let error: unknown;
      try {
        createClientPool().getClient({ baseUrl: server.baseUrl, headers: headers as never });
      } catch (caught) {
        error = caught;
      }
      expect(EndpointConfigError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ field: "headers" });
      expect((error as Error).message).toContain("Object.fromEntries");
      expect((error as Error).message).not.toContain("k-123");
    }
  });
});
