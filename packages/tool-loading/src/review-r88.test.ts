import { describe, expect, it } from "vitest";
import { CATALOG, TOOLS } from "./test-support/tools.js";
import { createToolLoading } from "./tool-loading.js";

// Review r88: gpt-oss's Harmony markup leaking into a call's name. Ollama has been seen to hand
// back `create_event<|channel|>analysis` for a call to `create_event`, and llama.cpp's parser
// `shelljson` for `shell` (the `json` content type glued on); each failed as unknown.

describe("R88-1: a catalogued tool called with gpt-oss's markup in its name", () => {
  it("ondemand: is loaded and run as the tool the name starts with", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    for (const written of [
      "read_file<|channel|>analysis",
      "functions.read_file <|constrain|>json",
      "read_filejson",
      "read_file json",
    ]) {
      const route = loading.route(
        { id: "c1", name: written, args: { path: "a" } },
        { loaded: [], messages: [] },
      );
      expect(route, written).toMatchObject({
        kind: "dispatch",
        id: "c1",
        name: "read_file",
        loaded: ["read_file"],
        loadedNow: "read_file",
      });
    }
  });

  it("a name that is all markup, or whose rest is no tool, is still unknown", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    for (const written of ["assistant<|channel|>analysis", "<|channel|>read_file", "json", "nothingjson"]) {
      const route = loading.route({ id: "c1", name: written, args: {} }, { loaded: [], messages: [] });
      expect(route, written).not.toMatchObject({ kind: "dispatch", name: "read_file" });
    }
  });
});
