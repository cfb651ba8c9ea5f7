/**
 * Review r76 of tool loading: catalogued names `load_tools` could never reach. `loadNames` split
 * every name at blanks, commas and semicolons and stripped quotes and brackets, and a `functions.`
 * prefix was dropped before the exact lookup, so a tool named `read file`, `a,b`, `[x]` or
 * `functions.run`, or a server named `git hub`, loaded nothing, though `expandNames` reached them.
 */
import { describe, expect, it } from "vitest";
import type { CatalogServer } from "./catalog.js";
import { ToolLoadingError } from "./errors.js";
import { expandNames, loadNames } from "./names.js";
import { createToolLoading } from "./tool-loading.js";

const NAMES = ["read file", "a,b", "[x]", "functions.run", "x;y", "'q'", "a", "b", "x", "run", "y"];
const tool = (name: string) => ({
  type: "function" as const,
  function: { name, parameters: { type: "object" } },
});
const catalog: CatalogServer[] = [
  { name: "odd", tools: NAMES.slice(0, 6).map((name) => ({ name })) },
  { name: "plain", tools: NAMES.slice(6).map((name) => ({ name })) },
  { name: "git hub", tools: [{ name: "create_issue" }, { name: "list_issues" }] },
];
const tools = [...NAMES, "create_issue", "list_issues"].map(tool);

const loadIn = (mode: "ondemand" | "proxy", args: Record<string, unknown>) => {
  const loading = createToolLoading({ mode, tools, catalog });
  const route = loading.route({ id: "c1", name: "load_tools", args }, { loaded: [], messages: [] });
  if (route.kind !== "load") throw new Error(`expected a load, got ${route.kind}`);
  return route;
};

describe("r76-1: a whole array entry that is a catalogued name loads as that name", () => {
  it.each([["read file"], ["a,b"], ["[x]"], ["functions.run"], ["x;y"], ["'q'"]])(
    "the tool %j, given as an entry of names, loads alone (ondemand and proxy)",
    (name) => {
      for (const mode of ["ondemand", "proxy"] as const) {
        const route = loadIn(mode, { names: [name] });
        expect(route.fresh).toEqual([name]);
        expect(route.resolution.unknown).toEqual([]);
      }
    },
  );

  it("a server named 'git hub', given as an entry, loads its tools", () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const route = loadIn(mode, { names: ["git hub"] });
      expect(route.fresh).toEqual(["create_issue", "list_issues"]);
      expect(route.resolution.unknown).toEqual([]);
    }
  });

  it("under tools, beside other entries, and as a bare array, the same", () => {
    expect(loadIn("ondemand", { tools: ["read file", "a"] }).fresh).toEqual(["read file", "a"]);
    expect(loadIn("proxy", { tools: ["a,b", "run"] }).fresh).toEqual(["a,b", "run"]);
    expect(loadNames(["a,b", "run"], catalog)).toEqual(["a,b", "run"]);
  });

  it("an entry that is not a catalogued name is still split: 'a, b' loads a and b", () => {
    expect(loadIn("ondemand", { names: ["a, b"] }).fresh).toEqual(["a", "b"]);
    expect(loadIn("ondemand", { names: ["read   file"] }).resolution.unknown).toEqual(["read", "file"]);
  });

  it("names written as one string are split as before", () => {
    expect(loadIn("ondemand", { names: "a,b" }).fresh).toEqual(["a", "b"]);
    expect(loadIn("ondemand", { names: "read file" }).resolution.unknown).toEqual(["read", "file"]);
  });

  it("'functions.read file'-style prefixes still reach a tool whose name lacks it", () => {
    expect(loadIn("ondemand", { names: ["functions.a"] }).fresh).toEqual(["a"]);
  });

  it("expandNames: functions.run is the tool of that name, not run", () => {
    expect(expandNames(["functions.run"], catalog).names).toEqual(["functions.run"]);
    expect(expandNames(["functions.y"], catalog).names).toEqual(["y"]);
  });

  it("a call_tool or direct call of functions.run reaches that tool, not run", () => {
    const loading = createToolLoading({ mode: "proxy", tools, catalog });
    const route = loading.route(
      { id: "c1", name: "call_tool", args: { name: "functions.run", arguments: {} } },
      { loaded: [], messages: [] },
    );
    expect(route).toMatchObject({ kind: "dispatch", name: "functions.run" });
    const direct = createToolLoading({ mode: "ondemand", tools, catalog }).route(
      { id: "c2", name: "functions.run", args: {} },
      { loaded: [], messages: [] },
    );
    expect(direct).toMatchObject({ kind: "dispatch", name: "functions.run" });
  });
});

describe("r76-2: loadNames with a catalogue", () => {
  it("keeps a whole entry that is a catalogued tool or server name, trimmed", () => {
    expect(loadNames({ names: [" read file ", "git hub", "a, b"] }, catalog)).toEqual([
      "read file",
      "git hub",
      "a",
      "b",
    ]);
  });

  it("without one reads names as before", () => {
    expect(loadNames({ names: ["read file"] })).toEqual(["read", "file"]);
  });

  it("a catalogue that is not one is invalid-catalog", () => {
    let code = "";
    try {
      loadNames({ names: ["x"] }, [{ name: 3 }] as never);
    } catch (error) {
      code = ToolLoadingError.isInstance(error) ? error.code : "bare";
    }
    expect(code).toBe("invalid-catalog");
  });
});
