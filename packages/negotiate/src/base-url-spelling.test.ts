import { createClientPool } from "@loopwright/client";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createCapabilityStore } from "./capabilities.js";

/** A base URL written as a person might: any case of scheme and host, a port or not, slashes, spaces. */
const parts = fc.record({
  scheme: fc.constantFrom("http", "HTTP", "Http", "https", "HTTPS", "hTtPs"),
  host: fc.constantFrom(
    "127.0.0.1",
    "LocalHost",
    "api.Example.COM",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "bücher.example",
    "xn--bcher-kva.example",
    "0x7f.1",
  ),
  port: fc.constantFrom("", ":", ":80", ":443", ":8080", ":080", ":00443"),
  path: fc.array(fc.constantFrom("v1", "V1", "api", "my model", "%7E", "~", ".", "..", "ü", ""), {
    maxLength: 4,
  }),
  slashes: fc.constantFrom("", "/", "//"),
  before: fc.constantFrom("", " ", "\t"),
  after: fc.constantFrom("", " ", "\n"),
});
type Parts = { [K in "scheme" | "host" | "port" | "slashes" | "before" | "after"]: string } & {
  path: readonly string[];
};
const written = ({ scheme, host, port, path, slashes, before, after }: Parts) =>
  `${before}${scheme}://${host}${port}${path.map((p) => `/${p}`).join("")}${slashes}${after}`;
const spelling = parts.map(written);
/**
 * Two spellings, half of them the same URL written again with another case of its scheme, another
 * way to say its default port, other trailing slashes and blank space. Two independent spellings
 * name the same server about once in 500 pairs, which left "shares one latch exactly when the pool
 * shares one client" checking its sharing half almost never.
 */
const twoSpellings = fc.oneof(
  fc.tuple(spelling, spelling),
  parts.chain((first) => {
    const http = first.scheme.toLowerCase() === "http";
    const defaultPort = http ? ":80" : ":443";
    const sameServer = fc.record({
      scheme: fc.constantFrom(...(http ? ["http", "HTTP", "Http"] : ["https", "HTTPS", "hTtPs"])),
      port: ["", ":", defaultPort].includes(first.port)
        ? fc.constantFrom("", ":", defaultPort)
        : fc.constant(first.port),
      slashes: fc.constantFrom("", "/", "//"),
      before: fc.constantFrom("", " ", "\t"),
      after: fc.constantFrom("", " ", "\n"),
    });
    return sameServer.map((again) => [written(first), written({ ...first, ...again })] as const);
  }),
);

describe("one spelling of a base URL per server", () => {
  it("latches HTTP://Host:80/v1/ and http://host/v1 as one endpoint, and forgets it under either", () => {
    const store = createCapabilityStore();
    const shouted = store.capabilitiesFor("HTTP://Host:80/v1/", "sk-1");
    shouted.strictSchemas = false;
    expect(store.capabilitiesFor("http://host/v1", "sk-1")).toBe(shouted);
    expect(store.capabilitiesFor("http://host/v1", "sk-1").strictSchemas).toBe(false);
    expect(store.size).toBe(1);
    expect(store.exportCapabilities().endpoints.map((e) => e.baseUrl)).toEqual(["http://host/v1"]);
    expect(store.forget(" http://HOST/v1//", "sk-1")).toBe(true);
    expect(store.size).toBe(0);
    expect(store.capabilitiesFor("HTTP://Host:80/v1/", "sk-1").strictSchemas).toBe(true);
  });

  it("reads a key with a newline around it (read from a file) as the key the client sends", () => {
    const store = createCapabilityStore();
    const fromFile = store.capabilitiesFor("http://host/v1", "sk-file-key\n");
    expect(store.capabilitiesFor("http://host/v1", "sk-file-key")).toBe(fromFile);
    expect(store.capabilitiesFor("http://host/v1", " sk-file-key ", { "x-title": "app" })).toBe(
      store.capabilitiesFor("http://host/v1", "sk-file-key", { "x-title": "app" }),
    );
    expect(store.forget("http://host/v1", "sk-file-key")).toBe(true);
    expect(store.size).toBe(1);
  });

  it("keeps a path's case and another port apart, as the server would", () => {
    const store = createCapabilityStore();
    const v1 = store.capabilitiesFor("http://host/v1");
    expect(store.capabilitiesFor("http://host/V1")).not.toBe(v1);
    expect(store.capabilitiesFor("http://host:8080/v1")).not.toBe(v1);
    expect(store.capabilitiesFor("https://host/v1")).not.toBe(v1);
    expect(store.capabilitiesFor("https://HOST:443/v1")).toBe(store.capabilitiesFor("https://host/v1"));
  });

  it("lays a snapshot written under another spelling onto the endpoint the loop holds", () => {
    const store = createCapabilityStore();
    const held = store.capabilitiesFor("http://llm.example/v1", "sk-1");
    const written = createCapabilityStore();
    written.capabilitiesFor("http://llm.example/v1", "sk-1").usageInStream = false;
    const snapshot = written.exportCapabilities();
    (snapshot.endpoints[0] as { baseUrl: string }).baseUrl = "HTTP://LLM.Example:80/v1/";
    store.importCapabilities(snapshot);
    expect(held.usageInStream).toBe(false);
    expect(store.size).toBe(1);
  });

  it("spells every base URL as @loopwright/client's pool does (parity property)", () => {
    fc.assert(
      fc.property(spelling, (baseUrl) => {
        const store = createCapabilityStore();
        // The client the pool makes is given the pool's one spelling of the URL.
        const pooled = createClientPool().getClient({ baseUrl }).baseURL;
        store.capabilitiesFor(baseUrl);
        expect(store.exportCapabilities().endpoints[0]?.baseUrl).toBe(pooled);
      }),
      propertyRuns(300),
    );
  });

  it("shares one latch between two spellings exactly when the client pool shares one client", () => {
    let shared = 0;
    fc.assert(
      fc.property(twoSpellings, ([a, b]) => {
        const store = createCapabilityStore();
        const pool = createClientPool();
        const oneClient = pool.getClient({ baseUrl: a }) === pool.getClient({ baseUrl: b });
        if (oneClient) shared++;
        expect(store.capabilitiesFor(a) === store.capabilitiesFor(b)).toBe(oneClient);
        // And forgetting under one spelling forgets what the other latched.
        store.capabilitiesFor(a).usageInStream = false;
        store.forget(b);
        expect(store.capabilitiesFor(a).usageInStream).toBe(oneClient);
      }),
      propertyRuns(300),
    );
    // Both halves of "exactly when" are checked on every run, not only when a seed happens on a pair.
    expect(shared).toBeGreaterThan(60);
  });
});
