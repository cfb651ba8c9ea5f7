import { describe, expect, it } from "vitest";
import { buildBody, createCapabilityStore, modelCapabilitiesFor } from "./index.js";

// buildBody read its config's fields through a polluted Object.prototype: some code in the process
// setting Object.prototype.maxTokens (prototype pollution) put a max_tokens into every body.

const supports = () => createCapabilityStore().capabilitiesFor("http://x.test/v1");
const messages = [{ role: "user", content: "hi" }];

function polluted<T>(name: string, value: unknown, body: () => T): T {
  Object.defineProperty(Object.prototype, name, { value, configurable: true, writable: true });
  try {
    return body();
  } finally {
    delete (Object.prototype as Record<string, unknown>)[name];
  }
}

describe("buildBody reads the config's own fields (or its class's), never a polluted Object.prototype's", () => {
  it("an inherited maxTokens, extraBody, temperature or reasoningEffort goes into no body", () => {
    const s = supports();
    const model = modelCapabilitiesFor(s, "m");
    const clean = buildBody({ model: "m" }, s, model, messages);
    for (const [name, value] of [
      ["maxTokens", 7],
      ["extraBody", { polluted: 1 }],
      ["temperature", 0.3],
      ["reasoningEffort", "high"],
    ] as const) {
      const body = polluted(name, value, () => buildBody({ model: "m" }, s, model, messages));
      expect({ name, body }).toEqual({ name, body: clean });
    }
  });

  it("still reads a class's getters", () => {
    class Params {
      get model() {
        return "from-a-getter";
      }
      get maxTokens() {
        return 64;
      }
    }
    const body = buildBody(new Params(), supports(), undefined, messages);
    expect(body.model).toBe("from-a-getter");
    expect(body.max_tokens ?? body.max_completion_tokens).toBe(64);
  });
});
