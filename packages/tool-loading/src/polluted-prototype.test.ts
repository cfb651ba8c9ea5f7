import { describe, expect, it } from "vitest";
import { catalogText } from "./catalog.js";
import { definitionLine } from "./load-result.js";
import { expandNames, loadNames } from "./names.js";
import { proxiedCall } from "./proxied-call.js";
import { createToolLoading } from "./tool-loading.js";

// Review r85h: what a route answers, and the model's call_tool / load_tools arguments, read through
// a polluted Object.prototype.

/** Every key a test set on Object.prototype, taken off after it. */
const polluted = new Set<string>();
function pollute(key: string, held: unknown): void {
  Object.defineProperty(Object.prototype, key, { value: held, writable: true, configurable: true });
  polluted.add(key);
}
/**
 * A test's body, with what it set on Object.prototype taken off as the body returns or throws, before
 * the test runner's own code runs again: an `afterEach` comes too late (see tool-calls'
 * polluted-prototype.test.ts — an inherited `return` there broke the runner's worker for the files
 * after it).
 */
function polluting(body: () => void): () => void {
  return () => {
    try {
      body();
    } finally {
      polluted.forEach((key) => {
        Reflect.deleteProperty(Object.prototype, key);
      });
      polluted.clear();
    }
  };
}

const tool = (name: string) => ({
  type: "function" as const,
  function: { name, parameters: { type: "object", properties: { path: { type: "string" } } } },
});
const TOOLS = [tool("fs_read"), tool("fs_write")];
const CATALOG = [{ name: "fs", tools: [{ name: "fs_read" }, { name: "fs_write" }] }];

describe("a dispatch route holds loadedNow itself", () => {
  it(
    "Object.prototype.loadedNow: a call to a loaded tool loaded nothing now",
    polluting(() => {
      pollute("loadedNow", "P0LLUTED");
      const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
      const route = loading.route(
        { id: "c1", name: "fs_read", args: { path: "a" } },
        { loaded: ["fs_read"], messages: [] },
      );
      expect(route).toMatchObject({ kind: "dispatch", name: "fs_read" });
      expect((route as { loadedNow?: unknown }).loadedNow).toBeUndefined();
      const eager = createToolLoading({ mode: "eager", tools: TOOLS });
      const direct = eager.route({ id: "c2", name: "fs_write", args: {} }, { loaded: [], messages: [] });
      expect((direct as { loadedNow?: unknown }).loadedNow).toBeUndefined();
    }),
  );
});

describe("the model's arguments: only the keys it wrote", () => {
  it(
    "Object.prototype.name is not call_tool's tool name",
    polluting(() => {
      pollute("name", "P0LLUTED");
      expect(proxiedCall({ tool: "fs_read", args: { path: "a" } }, CATALOG)).toMatchObject({
        name: "fs_read",
        args: { path: "a" },
      });
    }),
  );

  it(
    "Object.prototype.arguments is not call_tool's arguments",
    polluting(() => {
      pollute("arguments", "P0LLUTED");
      expect(proxiedCall({ name: "fs_read", args: {} }, CATALOG)).toMatchObject({
        name: "fs_read",
        args: {},
      });
    }),
  );

  it(
    "Object.prototype.names is not load_tools' names",
    polluting(() => {
      pollute("names", ["fs_write"]);
      expect(loadNames({ tools: ["fs_read"] }, CATALOG)).toEqual(["fs_read"]);
    }),
  );
});

describe("a description left out is none", () => {
  it(
    "Object.prototype.description = true: the catalogue is still a catalogue",
    polluting(() => {
      pollute("description", true);
      expect(expandNames(["fs_read"], CATALOG).names).toEqual(["fs_read"]);
    }),
  );

  it(
    "Object.prototype.description = 'P0LLUTED': not in the catalogue text, nor a definition",
    polluting(() => {
      pollute("description", "P0LLUTED");
      expect(catalogText(CATALOG, { descriptions: true })).not.toContain("P0LLUTED");
      expect(definitionLine(tool("fs_read"))).not.toContain("P0LLUTED");
    }),
  );
});
