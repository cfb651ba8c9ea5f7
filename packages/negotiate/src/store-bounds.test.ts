import { describe, expect, it } from "vitest";
import { exportedAfterImport } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";

describe("a capability store stays bounded", () => {
  it("keeps at most maxEndpoints, forgetting the least recently used", () => {
    const store = createCapabilityStore({ maxEndpoints: 2 });
    const a = store.capabilitiesFor("http://a.test/v1", "sk-a");
    a.strictSchemas = false;
    store.capabilitiesFor("http://b.test/v1", "sk-b");
    expect(store.capabilitiesFor("http://a.test/v1", "sk-a")).toBe(a); // used again: most recent
    store.capabilitiesFor("http://c.test/v1", "sk-c");
    expect(store.size).toBe(2);
    expect(store.capabilitiesFor("http://a.test/v1", "sk-a")).toBe(a);
    expect(store.exportCapabilities().endpoints.map((e) => e.baseUrl)).toEqual([
      "http://c.test/v1",
      "http://a.test/v1",
    ]);
  });

  it("forgets one tenant and keeps the others", () => {
    const store = createCapabilityStore();
    const mine = store.capabilitiesFor("http://shared.test/v1", "sk-mine");
    mine.usageInStream = false;
    const theirs = store.capabilitiesFor("http://shared.test/v1", "sk-theirs");
    theirs.usageInStream = false;
    expect(store.forget("http://shared.test/v1/", "sk-mine")).toBe(true);
    expect(store.forget("http://shared.test/v1", "sk-mine")).toBe(false);
    expect(store.capabilitiesFor("http://shared.test/v1", "sk-mine").usageInStream).toBe(true);
    expect(store.capabilitiesFor("http://shared.test/v1", "sk-theirs")).toBe(theirs);
  });

  it("peeks at a tenant without making it, pushing another out, or moving it up", () => {
    const store = createCapabilityStore({ maxEndpoints: 2 });
    const a = store.capabilitiesFor("http://a.test/v1", "sk-a");
    a.strictSchemas = false;
    const b = store.capabilitiesFor("http://b.test/v1", "sk-b", { "api-key": "hdr-b" });
    expect(store.peekCapabilities?.("http://never.test/v1", "sk-never")).toBeUndefined();
    expect(store.peekCapabilities?.("http://a.test/v1", "sk-other")).toBeUndefined();
    expect(store.size).toBe(2);
    // Found under any spelling of the server, with its headers in any case; not made most recent.
    expect(store.peekCapabilities?.("HTTP://A.test:80/v1/", "sk-a")).toBe(a);
    expect(store.peekCapabilities?.("http://b.test/v1", "sk-b", { "API-KEY": "hdr-b" })).toBe(b);
    store.capabilitiesFor("http://c.test/v1", "sk-c");
    expect(store.peekCapabilities?.("http://a.test/v1", "sk-a")).toBeUndefined();
    expect(store.peekCapabilities?.("http://b.test/v1", "sk-b", { "api-key": "hdr-b" })).toBe(b);
    expect(() => store.peekCapabilities?.("", "sk-a")).toThrow(TypeError);
    expect(() => store.peekCapabilities?.("http://a.test/v1", 7 as never)).toThrow(TypeError);
  });

  it("refuses a bound that is not a whole number from 1", () => {
    expect(() => createCapabilityStore({ maxEndpoints: 0 })).toThrow(/maxEndpoints/);
  });
});

describe("credentials in a base URL are never stored", () => {
  it("exports the URL without user info or query values, keeping endpoints apart", () => {
    const store = createCapabilityStore();
    store.capabilitiesFor("https://tenant:sk-userinfo-secret@host.test/v1").strictSchemas = false;
    store.capabilitiesFor("https://host.test/v1?api-key=sk-query-secret&api-version=2024").usageInStream =
      false;
    const plain = store.capabilitiesFor("https://host.test/v1");
    expect(plain).toEqual({ strictSchemas: true, usageInStream: true });
    const snapshot = JSON.stringify(store.exportCapabilities());
    expect(snapshot).not.toContain("sk-userinfo-secret");
    expect(snapshot).not.toContain("tenant");
    expect(snapshot).not.toContain("sk-query-secret");
    expect(store.exportCapabilities().endpoints.map((e) => e.baseUrl)).toEqual([
      "https://host.test/v1",
      "https://host.test/v1?api-key=&api-version=",
      "https://host.test/v1",
    ]);
    // The same URL again finds the same latches.
    expect(store.capabilitiesFor("https://tenant:sk-userinfo-secret@host.test/v1").strictSchemas).toBe(false);

    const restored = createCapabilityStore();
    restored.importCapabilities(store.exportCapabilities());
    expect(restored.capabilitiesFor("https://tenant:sk-userinfo-secret@host.test/v1").strictSchemas).toBe(
      false,
    );
  });
  it("takes them out of a base URL the URL parser refuses too (r6's six spellings)", () => {
    const unparseable = [
      "http://user:sk-secret1@host:99999/v1", // port out of range
      "http://user:sk-secret2@ho st/v1", // a space in the host
      "user:sk-secret3@host/v1", // no scheme
      "host/v1?api_key=sk-secret4", // no scheme, a key in the query
      "http://[::1/v1?key=sk-secret5", // a broken IPv6 bracket
      "localhost:8080/v1?key=sk-secret6", // read as scheme "localhost:"
    ];
    const store = createCapabilityStore();
    for (const url of unparseable) store.capabilitiesFor(url, "k").usageInStream = false;
    const text = JSON.stringify(store.exportCapabilities());
    for (let i = 1; i <= unparseable.length; i++) expect(text).not.toContain(`sk-secret${i}`);
    expect(text).not.toContain("user");
    expect(store.exportCapabilities().endpoints.map((e) => e.baseUrl)).toEqual([
      "http://host:99999/v1",
      "http://ho st/v1",
      "host/v1",
      "host/v1?api_key=",
      "http://[::1/v1?key=",
      "localhost:8080/v1?key=",
    ]);
    // The same spelling finds its latches again; another secret is another endpoint.
    for (const url of unparseable) expect(store.capabilitiesFor(url, "k").usageInStream).toBe(false);
    expect(store.capabilitiesFor("host/v1?api_key=sk-other", "k").usageInStream).toBe(true);
    expect(store.capabilitiesFor("user:sk-other@host/v1", "k").usageInStream).toBe(true);
    // A snapshot written with one of them verbatim (by an older version) is stripped on import.
    const again = exportedAfterImport(unparseable);
    for (let i = 1; i <= unparseable.length; i++) expect(again).not.toContain(`sk-secret${i}`);
  });
});
