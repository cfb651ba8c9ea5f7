/**
 * Review r81 of tool loading: the functions called on their own rebuilt a catalogue's lookups on
 * every call (proxiedCall half a second a call at 10^5 tools), a load by a server's name sorted its
 * tools again on every load, a load's answer wrote half a surrogate pair from a resolution built by
 * hand raw (llama.cpp refuses invalid UTF-8), and a catalogue or tool array with a hole in it (an
 * array built in code) crashed with a TypeError deep inside instead of a typed error.
 */
import { describe, expect, it } from "vitest";
import type { CatalogServer } from "./catalog.js";
import { catalogText } from "./catalog.js";
import { ToolLoadingError } from "./errors.js";
import { loadResult, proxyLoadResult } from "./load-result.js";
import { carryOver, expandNames, loadNames } from "./names.js";
import { proxiedCall } from "./proxied-call.js";
import { countEntries } from "./test-support/work.js";
import { createToolLoading } from "./tool-loading.js";

const N = 100_000;
/** 10^5 tools under one server, listed out of name order (so a load by the server's name sorts). */
const bigCatalog = (): CatalogServer[] => [
  {
    name: "big",
    tools: Array.from({ length: N }, (_, i) => ({ name: `tool_${String((i * 7919) % N).padStart(6, "0")}` })),
  },
];
/**
 * The entries the first call on a fresh catalogue walks, and those ten more calls on the same
 * catalogue walk, counted (a ratio of the two timed moved 3-4× on a loaded CI host). The first
 * checks the catalogue and builds its lookups, putting every tool into a Map; each later call only
 * checks that the catalogue lists what it listed, which puts nothing anywhere. Before, each call
 * built the lookups again, so ten walked ten catalogues.
 */
const firstAndMore = (
  first: (catalog: CatalogServer[]) => unknown,
  more: (catalog: CatalogServer[]) => void,
) => {
  const catalog = bigCatalog();
  const firstCount = countEntries(() => first(catalog)).total;
  // Past ten catalogues' worth the count stops: the cost the fix took away, at once.
  return { first: firstCount, more: countEntries(() => more(catalog), 10 * N).total };
};

describe("r81-1: a catalogue is checked and indexed once, not on every call on its own", () => {
  it("proxiedCall: ten more calls on the same catalogue walk less than one catalogue", () => {
    const names: string[] = [];
    const { first, more } = firstAndMore(
      (catalog) => proxiedCall({ name: "tool_000005", arguments: {} }, catalog),
      (catalog) => {
        for (let i = 0; i < 10; i++)
          names.push(proxiedCall({ name: `big.tool_00000${i}`, arguments: {} }, catalog).name);
      },
    );
    expect(names).toEqual(Array.from({ length: 10 }, (_, i) => `tool_00000${i}`));
    // The first reads every tool; before, each of the ten did too (about ten catalogues).
    expect(first).toBeGreaterThanOrEqual(N);
    // Measured: 0 now (10 N before).
    expect(more).toBeLessThan(N / 10);
  });

  it("expandNames and loadNames: ten more calls on the same catalogue walk less than one catalogue", () => {
    const read: unknown[] = [];
    const { first, more } = firstAndMore(
      (catalog) => expandNames(["tool_000001"], catalog),
      (catalog) => {
        for (let i = 0; i < 5; i++) {
          read.push(expandNames([`big.tool_00000${i}`, "Tool_000009"], catalog).names);
          read.push(loadNames({ names: ["Big.Tool_000001"] }, catalog));
        }
      },
    );
    for (let i = 0; i < 5; i++) {
      expect(read[2 * i]).toEqual([`tool_00000${i}`, "tool_000009"]);
      expect(read[2 * i + 1]).toEqual(["Big.Tool_000001"]);
    }
    expect(first).toBeGreaterThanOrEqual(N);
    // Measured: 2.0 N. A name differing only in case builds the case lookup once, on the first such
    // call (every tool iterated and put in a Map); before, each of the ten calls built the name
    // lookups again (at least 2 N each, 20 N in all).
    expect(more).toBeLessThan(4 * N);
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
  it("loading a server again walks fewer entries than its first load, which sorts (ondemand)", () => {
    // Two servers of 3,000 tools each, listed out of name order. `big`'s first load sorts its
    // names; later ones, before, sorted them again. Counted, not timed (a ratio of two timings
    // moved 3-4× on a loaded CI host): every array sorted, filtered or mapped counts its length,
    // and every entry a Map or Set hands out or takes in counts one.
    const names = (server: string) =>
      Array.from({ length: 3_000 }, (_, i) => ({
        name: `${server}_${String((i * 7919) % 3_000).padStart(5, "0")}`,
      }));
    const catalog = [
      { name: "warm", tools: names("w") },
      { name: "big", tools: names("b") },
    ];
    const tools = catalog.flatMap((server) =>
      server.tools.map((t) => ({ type: "function" as const, function: { name: t.name, parameters: {} } })),
    );
    const run = createToolLoading({ mode: "ondemand", tools, catalog, loadCap: 2 });
    const load = (id: string, server: string) =>
      run.route({ id, name: "load_tools", args: { names: [server] } }, { loaded: [], messages: [] });
    for (let i = 0; i < 2; i++) load(`w${i}`, "warm");
    let route: ReturnType<typeof load> | undefined;
    const first = countEntries(() => {
      route = load("b0", "big");
    });
    expect(route?.kind === "load" ? route.fresh : []).toEqual(["b_00000", "b_00001"]);
    const again = countEntries(() => {
      for (let i = 1; i <= 10; i++) load(`b${i}`, "big");
    });
    // The first load sorts the server's 3,000 names once; before, each of the ten more sorted them
    // again (30,000). What else a load walks (every one of the server's tools it reaches) is the
    // same for each load, and not what this counts.
    expect(first.sorted).toBe(3_000);
    expect(again.sorted).toBe(0);
  });
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
    expect(text).toBe(
      "No tool was loaded.\nNot in the catalogue: x\\u000ay. Use the names the catalogue lists.",
    );
  });
});
