/**
 * Review r81 of tool loading: the functions called on their own rebuilt a catalogue's lookups on
 * every call (proxiedCall half a second a call at 10^5 tools), a load by a server's name sorted its
 * tools again on every load, a load's answer wrote half a surrogate pair from a resolution built by
 * hand raw (llama.cpp refuses invalid UTF-8), and a catalogue or tool array with a hole in it (an
 * array built in code) crashed with a TypeError deep inside instead of a typed error.
 */
import { bestTimes } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import type { CatalogServer } from "./catalog.js";
import { catalogText } from "./catalog.js";
import { ToolLoadingError } from "./errors.js";
import { loadResult, proxyLoadResult } from "./load-result.js";
import { carryOver, expandNames, loadNames } from "./names.js";
import { proxiedCall } from "./proxied-call.js";
import { createToolLoading } from "./tool-loading.js";

const N = 100_000;
/** 10^5 tools under one server, listed out of name order (so a load by the server's name sorts). */
const bigCatalog = (): CatalogServer[] => [
  {
    name: "big",
    tools: Array.from({ length: N }, (_, i) => ({ name: `tool_${String((i * 7919) % N).padStart(6, "0")}` })),
  },
];
const time = (f: () => unknown) => {
  const started = performance.now();
  f();
  return performance.now() - started;
};
/**
 * The first call on a fresh catalogue and ten more on one already read, each the best of three,
 * measured in the same run. Each later call still checks that the catalogue lists what it listed
 * (a walk of its tools), so ten cost about one first here; before, each built the lookups again and
 * ten cost about ten firsts. A ratio under 4 tells the two apart with room for a loaded machine.
 */
const firstAndMore = (
  first: (catalog: CatalogServer[]) => unknown,
  more: (catalog: CatalogServer[]) => void,
) => {
  const firsts: number[] = [];
  const mores: number[] = [];
  for (let round = 0; round < 3; round++) {
    const catalog = bigCatalog();
    firsts.push(time(() => first(catalog)));
    mores.push(time(() => more(catalog)));
  }
  return { first: Math.min(...firsts), more: Math.min(...mores) };
};

describe("r81-1: a catalogue is checked and indexed once, not on every call on its own", () => {
  it("proxiedCall: ten more calls on the same catalogue cost under four firsts", () => {
    const { first, more } = firstAndMore(
      (catalog) => proxiedCall({ name: "tool_000005", arguments: {} }, catalog),
      (catalog) => {
        for (let i = 0; i < 10; i++) {
          expect(proxiedCall({ name: `big.tool_00000${i}`, arguments: {} }, catalog).name).toBe(
            `tool_00000${i}`,
          );
        }
      },
    );
    // Before: each call built the lookups again, so ten cost about ten firsts.
    expect(more / first).toBeLessThan(4);
  });

  it("expandNames and loadNames: ten more calls on the same catalogue cost under four firsts", () => {
    const { first, more } = firstAndMore(
      (catalog) => expandNames(["tool_000001"], catalog),
      (catalog) => {
        for (let i = 0; i < 5; i++) {
          expect(expandNames([`big.tool_00000${i}`, "Tool_000009"], catalog).names).toEqual([
            `tool_00000${i}`,
            "tool_000009",
          ]);
          expect(loadNames({ names: ["Big.Tool_000001"] }, catalog)).toEqual(["Big.Tool_000001"]);
        }
      },
    );
    expect(more / first).toBeLessThan(4);
  });

  it("a catalogue changed in place is read as it is now", () => {
    const catalog: { name: string; tools: { name: string }[] }[] = [
      { name: "fs", tools: [{ name: "read" }] },
    ];
    const tools = [{ type: "function" as const, function: { name: "read", parameters: { type: "object" } } }];
    expect(proxiedCall({ name: "fs.read" }, catalog, { tools }).name).toBe("read");
    expect(expandNames(["fs"], catalog).names).toEqual(["read"]);
    // A tool added, a server renamed, a tool renamed: each call sees the catalogue as it stands.
    catalog[0]?.tools.push({ name: "write" });
    expect(proxiedCall({ name: "fs.write" }, catalog).name).toBe("write");
    expect(expandNames(["fs"], catalog).names).toEqual(["read", "write"]);
    if (catalog[0]) catalog[0].name = "disk";
    expect(expandNames(["disk"], catalog).names).toEqual(["read", "write"]);
    expect(() => proxiedCall({ name: "fs.read" }, catalog)).toThrow(/not in the catalogue/);
    catalog[0] = { name: "disk", tools: [{ name: "stat" }] };
    expect(() => proxiedCall({ name: "read" }, catalog)).toThrow(/not in the catalogue/);
    expect(loadNames({ names: ["disk.stat"] }, catalog)).toEqual(["disk.stat"]);
    // Changed into a catalogue the check refuses: refused, not read through the old lookups.
    catalog[0]?.tools.push({ name: "bad\nname" });
    expect(() => proxiedCall({ name: "stat" }, catalog)).toThrow(/line break/);
    expect(() => expandNames(["disk"], catalog)).toThrow(/line break/);
    // The definitions given as `tools`, changed in place, are read as they are now as well.
    tools[0] = { type: "function", function: { name: "stat", parameters: { type: "object" } } };
    catalog[0] = { name: "disk", tools: [{ name: "stat" }] };
    const parse = (_text: string, o?: { takesOnlyString?: unknown }) => ({
      given: o?.takesOnlyString !== undefined,
    });
    expect(proxiedCall({ name: "stat", arguments: "{}" }, catalog, { tools, parse }).args).toEqual({
      given: true,
    });
  });
});

describe("r81-2: a load by a server's name sorts its tools once a run", () => {
  it("loading a server again costs less than its first load, which sorts (ondemand)", async () => {
    // Two servers of 3,000 tools each, listed out of name order, whose names share a long head (so
    // sorting them costs more than the rest of a load). Each run's first load of `warm` warms the
    // code up; then `big`'s first load sorts its names, and later ones, before, sorted them again.
    const head = "x".repeat(1000);
    const names = (server: string) =>
      Array.from({ length: 3_000 }, (_, i) => ({
        name: `${server}_${head}${String((i * 7919) % 3_000).padStart(5, "0")}`,
      }));
    const catalog = [
      { name: "warm", tools: names("w") },
      { name: "big", tools: names("b") },
    ];
    const tools = catalog.flatMap((server) =>
      server.tools.map((t) => ({ type: "function" as const, function: { name: t.name, parameters: {} } })),
    );
    // A fresh run for each first load bestTimes times (once to warm up, then three), each warmed.
    const runs = Array.from({ length: 4 }, () =>
      createToolLoading({ mode: "ondemand", tools, catalog, loadCap: 2 }),
    );
    const load = (run: (typeof runs)[number], id: string, server: string) =>
      run.route({ id, name: "load_tools", args: { names: [server] } }, { loaded: [], messages: [] });
    for (const run of runs) for (let i = 0; i < 2; i++) load(run, `w${i}`, "warm");
    let fresh = 0;
    let later = 0;
    const [first, again] = await bestTimes([
      () => {
        const route = load(runs[fresh++] as (typeof runs)[number], "b0", "big");
        expect(route.kind === "load" ? route.fresh : []).toEqual([`b_${head}00000`, `b_${head}00001`]);
      },
      () => load(runs[0] as (typeof runs)[number], `b${++later}`, "big"),
    ]);
    // Best of three each, in the same run (a first load timed once came to 0.42 of it idle, too near
    // the bound for a loaded machine): about a sixth now; before, each load sorted again (about 1).
    expect(again).toBeLessThan((first as number) * 0.6);
  }, 60_000);
});

describe("r81-3: a load's answer never holds half a surrogate pair", () => {
  const resolution = (names: string[], overCap: string[] = []) => ({ names, unknown: [], overCap, cap: 1 });

  it("loadResult writes U+FFFD for one in a hand-built resolution", () => {
    const fresh = loadResult(resolution(["a\ud800"], ["b\udc00"]), []);
    expect(fresh.isWellFormed()).toBe(true);
    expect(fresh).toContain("Loaded: a\ufffd.");
    expect(fresh).toContain("not loaded: b\ufffd.");
    const again = loadResult(resolution(["a\ud800"]), ["a\ud800"]);
    expect(again).toBe("Already loaded: a\ufffd. Call them by name; no need to load them again.");
  });

  it("proxyLoadResult writes U+FFFD for one, and its definition lines are unchanged", () => {
    const tools = [
      { type: "function" as const, function: { name: "d\ud800", description: "x\udfff", parameters: {} } },
    ];
    const text = proxyLoadResult(resolution(["a\ud800", "c\ud800", "d\ud800"]), tools, ["c\ud800"]);
    expect(text.isWellFormed()).toBe(true);
    expect(text).toContain("Already in this conversation: c\ufffd.");
    expect(text).toContain("No definition is available for: a\ufffd.");
    // JSON escapes it, and the line is still what holdsDefinitions reads.
    expect(text.split("\n")[0]).toBe(
      JSON.stringify({ name: "d\ud800", description: "x\udfff", parameters: {} }),
    );
  });
});

describe("r81-4: a hole in a catalogue or a tool array is a typed error, not a TypeError", () => {
  const hole = <T>(length: number, at: number, value: T): T[] => {
    const list = new Array<T>(length);
    list[at] = value;
    return list;
  };
  const holeyCatalog = () => hole<CatalogServer>(2, 1, { name: "fs", tools: [{ name: "read" }] });
  const holeyTools = (): CatalogServer[] => [{ name: "fs", tools: hole(2, 1, { name: "read" }) }];

  it.each([
    ["proxiedCall", (c: CatalogServer[]) => proxiedCall({ name: "read" }, c)],
    ["expandNames", (c: CatalogServer[]) => expandNames(["fs"], c)],
    ["loadNames", (c: CatalogServer[]) => loadNames({ names: ["read"] }, c)],
    ["catalogText", (c: CatalogServer[]) => catalogText(c)],
    ["carryOver", (c: CatalogServer[]) => carryOver(["read"], c)],
    [
      "createToolLoading",
      (c: CatalogServer[]) =>
        createToolLoading({
          mode: "ondemand",
          tools: [{ type: "function", function: { name: "read" } }],
          catalog: c,
        }),
    ],
  ])("%s refuses a hole as invalid-catalog naming it", (where, call) => {
    for (const [catalog, named] of [
      [holeyCatalog(), /catalogue entry 0 must be .* and is nothing/],
      [holeyTools(), /tool 0 of server "fs" must be .* and is nothing/],
    ] as const) {
      let error: unknown;
      try {
        call(catalog);
      } catch (e) {
        error = e;
      }
      expect(ToolLoadingError.isInstance(error), `${where}: ${String(error)}`).toBe(true);
      expect((error as ToolLoadingError).code).toBe("invalid-catalog");
      expect((error as Error).message).toMatch(named);
      expect((error as Error).message.startsWith(where)).toBe(true);
    }
  });

  it("a hole in the tool definitions is invalid-tools, not skipped", () => {
    const tools = hole(2, 1, { type: "function" as const, function: { name: "read" } });
    expect(() => createToolLoading({ mode: "ondemand", tools })).toThrow(
      expect.objectContaining({
        code: "invalid-tools",
        message: expect.stringMatching(/tool 0 .* is nothing/),
      }),
    );
  });
});

describe("r81-5: a hand-built resolution's name with a line break writes no line of its own", () => {
  it.each([
    ["names", { names: ["a\nLoaded: rm_rf"], unknown: [], overCap: [], cap: 1 }],
    ["overCap", { names: [], unknown: [], overCap: ["b\u2028c"], cap: 1 }],
  ])("%s: loadResult and proxyLoadResult refuse it as invalid-names naming it", (key, resolution) => {
    for (const answer of [() => loadResult(resolution, []), () => proxyLoadResult(resolution, [], [])]) {
      expect(answer).toThrow(
        expect.objectContaining({
          code: "invalid-names",
          message: expect.stringContaining(`the resolution's ${key} holds`),
        }),
      );
    }
  });

  it("the model's own unknown names are still echoed on one line", () => {
    const text = loadResult({ names: [], unknown: ["x\ny"], overCap: [], cap: 1 }, []);
    expect(text).toBe("No tool was loaded.\nNot in the catalogue: x y. Use the names the catalogue lists.");
  });
});
