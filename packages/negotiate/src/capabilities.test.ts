import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CAPABILITY_SNAPSHOT_VERSION,
  createCapabilityStore,
  EFFORT_LADDER,
  effortFor,
} from "./capabilities.js";
import { CapabilitySnapshotError } from "./errors.js";

const URL_A = "http://127.0.0.1:8080/v1";

describe("capabilitiesFor", () => {
  it("reads an absent and an empty key as one endpoint, and a trailing slash as the same URL", () => {
    const store = createCapabilityStore();
    expect(store.capabilitiesFor(URL_A)).toBe(store.capabilitiesFor(`${URL_A}/`, ""));
    // @loopwright/client's NO_KEY is what a keyless endpoint is sent: the same entry.
    expect(store.capabilitiesFor(URL_A, "no-key")).toBe(store.capabilitiesFor(URL_A));
    expect(store.capabilitiesFor(URL_A, "k1")).not.toBe(store.capabilitiesFor(URL_A, "k2"));
    expect(store.capabilitiesFor(URL_A)).toEqual({ strictSchemas: true, usageInStream: true });
  });

  it("keeps two stores apart", () => {
    const a = createCapabilityStore();
    const b = createCapabilityStore();
    a.capabilitiesFor(URL_A).usageInStream = false;
    expect(b.capabilitiesFor(URL_A).usageInStream).toBe(true);
  });

  it("starts a model with everything allowed and legacyTokenLimit true", () => {
    const store = createCapabilityStore();
    const model = store.modelCapabilitiesFor(store.capabilitiesFor(URL_A), "gpt-5");
    expect(model).toEqual({
      refusedEfforts: [],
      legacyTokenLimit: true,
      chosenTemperature: true,
      assistantPrefill: true,
      prefillEcho: true,
      structuredOutput: true,
      droppedFields: [],
      toolChoice: true,
      anyToolCallIds: true,
      systemRole: true,
      userAfterTool: true,
      parallelCalls: true,
    });
  });

  it("refuses an empty base URL or model name with a clear error", () => {
    const store = createCapabilityStore();
    expect(() => store.capabilitiesFor("")).toThrow(/baseUrl/);
    expect(() => store.modelCapabilitiesFor(store.capabilitiesFor(URL_A), "")).toThrow(/model/);
  });
});

describe("wrong-typed store arguments", () => {
  it("names a key that is not a string, and reads null store options as none", () => {
    const store = createCapabilityStore(null as never);
    for (const key of [42, {}, ["sk"]]) {
      expect(() => store.capabilitiesFor(URL_A, key as never)).toThrow(TypeError);
      expect(() => store.capabilitiesFor(URL_A, key as never)).toThrow(/capabilitiesFor: apiKey must/);
      expect(() => store.forget(URL_A, key as never)).toThrow(/forget: apiKey must/);
    }
    expect(store.capabilitiesFor(URL_A, null as never)).toBe(store.capabilitiesFor(URL_A));
  });
});

describe("effortFor", () => {
  it("answers empty for off, absent, and a model that takes no effort", () => {
    expect(effortFor(undefined, undefined)).toBe("");
    expect(effortFor(undefined, "off")).toBe("");
    const store = createCapabilityStore();
    const model = store.modelCapabilitiesFor(store.capabilitiesFor(URL_A), "gpt-4o");
    model.droppedFields.push("reasoning_effort");
    expect(effortFor(model, "high")).toBe("");
  });

  it("refuses a model or a setting of the wrong type by name instead of crashing inside", () => {
    const store = createCapabilityStore();
    const model = store.modelCapabilitiesFor(store.capabilitiesFor(URL_A), "m");
    for (const call of [
      () => effortFor({} as never, "low"),
      () => effortFor("m" as never, "low"),
      () => effortFor(model, 5 as never),
    ]) {
      expect(call).toThrow(TypeError);
      expect(call).toThrow(/^effortFor: (model|asked) must/);
    }
  });

  it("only ever climbs, and never moves a value that is not on the ladder", () => {
    fc.assert(
      fc.property(
        fc.subarray([...EFFORT_LADDER]),
        fc.oneof(fc.constantFrom(...EFFORT_LADDER), fc.constantFrom("xhigh", "max")),
        (refused, asked) => {
          const model = createCapabilityStore().modelCapabilitiesFor(
            createCapabilityStore().capabilitiesFor(URL_A),
            "m",
          );
          model.refusedEfforts.push(...refused);
          const sent = effortFor(model, asked);
          const at = EFFORT_LADDER.indexOf(asked);
          if (at < 0) return sent === asked;
          const up = EFFORT_LADDER.indexOf(sent);
          const above = EFFORT_LADDER.slice(at).filter((r) => !refused.includes(r));
          return up >= at && (above.length === 0 ? sent === asked : sent === above[0]);
        },
      ),
    );
  });
});

describe("export and import", () => {
  function learned() {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(URL_A, "sk-live-abc");
    supports.strictSchemas = false;
    const model = store.modelCapabilitiesFor(supports, "gpt-5");
    model.refusedEfforts.push("none");
    model.legacyTokenLimit = false;
    model.assistantPrefill = false;
    model.droppedFields.push("min_p");
    model.toolChoice = false;
    store.modelCapabilitiesFor(store.capabilitiesFor("http://other/v1"), "qwen").structuredOutput = false;
    store.modelCapabilitiesFor(store.capabilitiesFor("http://other/v1"), "qwen").prefillEcho = false;
    return store;
  }

  it("round-trips every latch through JSON text, without the API key", () => {
    const snapshot = learned().exportCapabilities();
    const text = JSON.stringify(snapshot);
    expect(text).not.toContain("sk-live-abc");
    const restored = createCapabilityStore();
    restored.importCapabilities(text);
    expect(restored.exportCapabilities()).toEqual(snapshot);
    const supports = restored.capabilitiesFor(URL_A, "sk-live-abc");
    expect(supports.strictSchemas).toBe(false);
    expect(restored.modelCapabilitiesFor(supports, "gpt-5").legacyTokenLimit).toBe(false);
    expect(restored.modelCapabilitiesFor(supports, "gpt-5").toolChoice).toBe(false);
    expect(restored.modelCapabilitiesFor(supports, "gpt-5").prefillEcho).toBe(true);
    expect(
      restored.modelCapabilitiesFor(restored.capabilitiesFor("http://other/v1"), "qwen").prefillEcho,
    ).toBe(false);
    // The same URL with another key learned nothing.
    expect(restored.capabilitiesFor(URL_A, "sk-other").strictSchemas).toBe(true);
  });

  it("reads a snapshot written before the tool_choice latch existed as tool_choice still taken", () => {
    const snapshot = learned().exportCapabilities();
    for (const endpoint of snapshot.endpoints) {
      for (const model of Object.values(endpoint.models))
        delete (model as { toolChoice?: boolean }).toolChoice;
    }
    const restored = createCapabilityStore();
    restored.importCapabilities(JSON.stringify(snapshot));
    const supports = restored.capabilitiesFor(URL_A, "sk-live-abc");
    expect(restored.modelCapabilitiesFor(supports, "gpt-5")).toMatchObject({
      toolChoice: true,
      legacyTokenLimit: false,
    });
  });

  it("reads a snapshot written before the prefillEcho latch existed (same version) as the server that may echo", () => {
    const snapshot = learned().exportCapabilities();
    for (const endpoint of snapshot.endpoints) {
      for (const model of Object.values(endpoint.models))
        delete (model as { prefillEcho?: boolean }).prefillEcho;
    }
    expect(snapshot.version).toBe(CAPABILITY_SNAPSHOT_VERSION);
    const restored = createCapabilityStore();
    restored.importCapabilities(JSON.stringify(snapshot));
    expect(restored.modelCapabilitiesFor(restored.capabilitiesFor("http://other/v1"), "qwen")).toMatchObject({
      prefillEcho: true,
      structuredOutput: false,
    });
  });

  it("refuses a snapshot whose prefillEcho is not true or false, naming it and changing nothing", () => {
    const snapshot = learned().exportCapabilities() as unknown as {
      endpoints: { models: Record<string, Record<string, unknown>> }[];
    };
    (snapshot.endpoints[1]!.models.qwen as Record<string, unknown>).prefillEcho = "no";
    const restored = createCapabilityStore();
    let error: unknown;
    try {
      restored.importCapabilities(snapshot);
    } catch (e) {
      error = e;
    }
    expect(CapabilitySnapshotError.isInstance(error)).toBe(true);
    expect((error as CapabilitySnapshotError).code).toBe("malformed");
    expect((error as Error).message).toMatch(/models\["qwen"\]\.prefillEcho: expected true or false/);
    expect(restored.exportCapabilities().endpoints).toEqual([]);
  });

  it("keeps a model named like an Object.prototype member (__proto__, constructor) in the snapshot", () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(URL_A);
    for (const name of ["__proto__", "constructor", "toString"]) {
      store.modelCapabilitiesFor(supports, name).legacyTokenLimit = false;
    }
    const snapshot = store.exportCapabilities();
    const text = JSON.stringify(snapshot);
    expect(Object.keys(JSON.parse(text).endpoints[0].models).sort()).toEqual([
      "__proto__",
      "constructor",
      "toString",
    ]);
    const restored = createCapabilityStore();
    restored.importCapabilities(text);
    const back = restored.capabilitiesFor(URL_A);
    for (const name of ["__proto__", "constructor", "toString"]) {
      expect(restored.modelCapabilitiesFor(back, name).legacyTokenLimit).toBe(false);
    }
    expect(restored.exportCapabilities()).toEqual(snapshot);
  });

  it("updates objects a caller already holds", () => {
    const restored = createCapabilityStore();
    const held = restored.capabilitiesFor(URL_A, "sk-live-abc");
    restored.importCapabilities(learned().exportCapabilities());
    expect(held.strictSchemas).toBe(false);
  });

  it("refuses a snapshot of another version, changing nothing", () => {
    const restored = createCapabilityStore();
    const snapshot = { ...learned().exportCapabilities(), version: CAPABILITY_SNAPSHOT_VERSION + 1 };
    const error = (() => {
      try {
        restored.importCapabilities(snapshot);
      } catch (e) {
        return e;
      }
    })();
    expect(CapabilitySnapshotError.isInstance(error)).toBe(true);
    expect((error as CapabilitySnapshotError).code).toBe("version");
    expect(restored.exportCapabilities().endpoints).toEqual([]);
  });

  it("refuses a malformed snapshot as a whole: a bad second endpoint keeps the first out too", () => {
    const snapshot = learned().exportCapabilities();
    const broken = JSON.parse(JSON.stringify(snapshot));
    broken.endpoints[1].models.qwen.legacyTokenLimit = "yes";
    const restored = createCapabilityStore();
    expect(() => restored.importCapabilities(broken)).toThrow(
      /endpoints\[1\]\.models\["qwen"\]\.legacyTokenLimit/,
    );
    expect(restored.exportCapabilities().endpoints).toEqual([]);
    const codeOf = (bad: unknown) => {
      try {
        restored.importCapabilities(bad);
      } catch (e) {
        return (e as CapabilitySnapshotError).code;
      }
    };
    for (const bad of [null, 42, "{", { version: 1 }, { version: 1, endpoints: [{}] }]) {
      expect(codeOf(bad)).toBe("malformed");
    }
    expect(codeOf({ endpoints: [] })).toBe("version");
    expect(restored.exportCapabilities().endpoints).toEqual([]);
  });

  it("refuses a model with an empty name at its path before writing anything", () => {
    const snapshot = learned().exportCapabilities();
    const broken = JSON.parse(JSON.stringify(snapshot));
    broken.endpoints[1].models[""] = broken.endpoints[1].models.qwen;
    const restored = createCapabilityStore();
    const error = (() => {
      try {
        restored.importCapabilities(broken);
      } catch (e) {
        return e;
      }
    })();
    expect(CapabilitySnapshotError.isInstance(error)).toBe(true);
    expect((error as CapabilitySnapshotError).code).toBe("malformed");
    expect((error as CapabilitySnapshotError).path).toBe("$.endpoints[1].models");
    expect((error as Error).message).toMatch(/model name must be non-empty/);
    // The first endpoint, valid, is not written either.
    expect(restored.size).toBe(0);
    expect(restored.exportCapabilities().endpoints).toEqual([]);
  });

  it("never throws anything but a CapabilitySnapshotError, whatever it is given", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        try {
          createCapabilityStore().importCapabilities(value);
          return true;
        } catch (error) {
          return CapabilitySnapshotError.isInstance(error);
        }
      }),
    );
  });
});
