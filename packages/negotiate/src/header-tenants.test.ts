import { describe, expect, it } from "vitest";
import { createCapabilityStore } from "./capabilities.js";

const AZURE = "https://contoso.openai.azure.com/openai/v1";

describe("tenants that authenticate by a header", () => {
  it("keeps two api-key headers on one base URL apart, and forgets one alone", () => {
    const store = createCapabilityStore();
    const a = store.capabilitiesFor(AZURE, undefined, { "api-key": "tenant-a-secret" });
    const b = store.capabilitiesFor(AZURE, undefined, { "api-key": "tenant-b-secret" });
    expect(a).not.toBe(b);
    a.strictSchemas = false;
    expect(b.strictSchemas).toBe(true);
    expect(store.capabilitiesFor(AZURE).strictSchemas).toBe(true);

    expect(store.forget(AZURE, undefined, { "api-key": "tenant-a-secret" })).toBe(true);
    expect(store.capabilitiesFor(AZURE, undefined, { "api-key": "tenant-a-secret" }).strictSchemas).toBe(
      true,
    );
    expect(store.capabilitiesFor(AZURE, undefined, { "api-key": "tenant-b-secret" })).toBe(b);
    // A keyless tenant with no headers is another tenant: forgetting it leaves both alone.
    store.capabilitiesFor(AZURE);
    expect(store.forget(AZURE)).toBe(true);
    expect(store.capabilitiesFor(AZURE, undefined, { "api-key": "tenant-b-secret" })).toBe(b);
  });

  it("reads a header name in any case, in any order, and no headers as {}", () => {
    const store = createCapabilityStore();
    const held = store.capabilitiesFor(AZURE, "sk-1", { "X-Api-Key": "k", "x-title": "app" });
    expect(store.capabilitiesFor(AZURE, "sk-1", { "x-title": "app", "x-api-key": "k" })).toBe(held);
    expect(store.capabilitiesFor(AZURE, "sk-1", {})).toBe(store.capabilitiesFor(AZURE, "sk-1"));
    expect(store.capabilitiesFor(AZURE, "sk-1", null as never)).toBe(store.capabilitiesFor(AZURE, "sk-1"));
    expect(store.capabilitiesFor(AZURE, "sk-1", { "x-api-key": "other" })).not.toBe(held);
  });

  it("never writes a header's value into a snapshot, and round-trips its latches", () => {
    const store = createCapabilityStore();
    store.capabilitiesFor(AZURE, undefined, { "api-key": "azure-secret-991" }).usageInStream = false;
    const text = JSON.stringify(store.exportCapabilities());
    expect(text).not.toContain("azure-secret-991");
    const restored = createCapabilityStore();
    restored.importCapabilities(text);
    expect(restored.capabilitiesFor(AZURE, undefined, { "api-key": "azure-secret-991" }).usageInStream).toBe(
      false,
    );
    expect(restored.capabilitiesFor(AZURE).usageInStream).toBe(true);
  });

  it("keeps the snapshot's key digest of an endpoint without headers as it was", () => {
    const store = createCapabilityStore();
    store.capabilitiesFor(AZURE, "sk-1");
    store.capabilitiesFor(AZURE, "sk-1", {});
    const [endpoint] = store.exportCapabilities().endpoints;
    expect(store.size).toBe(1);
    // SHA-256 of "sk-1", its first 32 hex digits: snapshots written before headers counted still apply.
    expect(endpoint?.keyId).toBe("0f2c10bf3d128c719c6bfa4ecbae94b7");
  });

  it("names headers that are not an object of strings", () => {
    const store = createCapabilityStore();
    for (const headers of ["api-key: x", ["api-key", "x"], { "api-key": 5 }]) {
      expect(() => store.capabilitiesFor(AZURE, undefined, headers as never)).toThrow(TypeError);
      expect(() => store.capabilitiesFor(AZURE, undefined, headers as never)).toThrow(
        /capabilitiesFor: headers must be an object of header names to strings/,
      );
      expect(() => store.forget(AZURE, undefined, headers as never)).toThrow(/forget: headers must/);
    }
  });
});
