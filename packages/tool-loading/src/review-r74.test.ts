/**
 * Review r74 of tool loading: a load of thousands of distinct `*` patterns (a looping model
 * counting `a1*`, `a2*`, …) costs about what as many plain names do, not patterns × catalogue tools.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import type { CatalogServer } from "./catalog.js";
import { loadResult, proxyLoadResult } from "./load-result.js";
import { expandNames, type NameResolution } from "./names.js";
import { codeOf } from "./test-support/outcome.js";
import { countEntries } from "./test-support/work.js";
import { createToolLoading } from "./tool-loading.js";

describe("r74-1: a load of many distinct patterns against a large catalogue", () => {
  const tools = Array.from({ length: 20_000 }, (_, i) => ({ name: `tool_${i}` }));
  const catalog: CatalogServer[] = [{ name: "s", tools }];

  it("is answered with work linear in the names, whatever the catalogue's size", () => {
    const names = (count: number) =>
      Array.from({ length: count }, (_, i) => [`a${i}*`, `*x${i}*`, `q*${i}`][i % 3] as string);
    const resolution = expandNames(names(5_000), catalog);
    expect(resolution.names).toEqual([]);
    expect(resolution.unknown).toHaveLength(5_000);
    // Measured before: about 14 s here (each pattern tested against all 20,000 tools); about 100 ms
    // after, most of it reading the catalogue. Counted, not timed (a ratio against as many plain
    // names moved 3-4× on a loaded CI host): the first load above built the sorted lists a pattern
    // is looked up in; a load of 5,000 more patterns now walks three entries a pattern (measured:
    // 15,000, the load's own bookkeeping) and none of the catalogue's 20,000 tools, where before
    // each pattern filtered all of them (10^8; the count stops at ten catalogues).
    const patterns = names(5_000).map((name) => name.replace("*", "0*"));
    let again: ReturnType<typeof expandNames> | undefined;
    const walked = countEntries(() => {
      again = expandNames(patterns, catalog);
    }, 10 * tools.length).total;
    expect(again?.unknown).toHaveLength(5_000);
    expect(walked).toBeLessThanOrEqual(4 * patterns.length);
  }, 30_000);

  it("still loads what the patterns reach, in name order, held to the cap, through a load_tools call", () => {
    const loading = createToolLoading({
      mode: "ondemand",
      tools: tools.slice(0, 300).map(({ name }) => ({
        type: "function" as const,
        function: { name, parameters: { type: "object" } },
      })),
    });
    const names = Array.from({ length: 20_000 }, (_, i) => `tool_${i}*`);
    const route = loading.route(
      { id: "c1", name: "load_tools", args: { names } },
      { loaded: [], messages: [] },
    );
    // tool_0* reaches tool_0 alone; tool_1* reaches tool_1, tool_10…tool_19, tool_100…tool_199.
    expect(route.kind === "load" && route.fresh).toEqual([
      "tool_0",
      "tool_1",
      "tool_10",
      "tool_100",
      "tool_101",
      "tool_102",
      "tool_103",
      "tool_104",
      "tool_105",
      "tool_106",
      "tool_107",
      "tool_108",
    ]);
    expect(route.kind === "load" && route.content).toContain(
      "Held to 12 tools a load, so 288 were not loaded: tool_109, tool_11,",
    );
    expect(route.kind === "load" && route.content).toContain("Not in the catalogue: tool_300*, tool_301*,");
  });

  it("matches exactly the tools a plain glob test matches, for any names and patterns", () => {
    const piece = fc.constantFrom("a", "b", "_", ".", "ab", "ba", "é", "\ud83d\ude00", "A", "\uffff");
    const name = fc.array(piece, { minLength: 1, maxLength: 5 }).map((p) => p.join(""));
    const pattern = fc
      .array(fc.oneof(piece, fc.constant("*")), { minLength: 1, maxLength: 6 })
      .map((p) => p.join(""))
      .filter((p) => p.includes("*") && p.trim() !== "");
    const glob = (p: string) =>
      new RegExp(
        `^${p
          .split("*")
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
          .join(".*")}$`,
        "su",
      );
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 12 }), pattern, (names, p) => {
        const resolution = expandNames([p], [{ name: "zz", tools: names.map((n) => ({ name: n })) }], 100);
        const expected = names.filter((n) => glob(p).test(n)).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
        expect(resolution.names).toEqual(expected);
      }),
      propertyRuns(2_000),
    );
  });
});

describe("r74-2: a load's answer from a resolution of the wrong shape", () => {
  const tools = [{ type: "function" as const, function: { name: "a", parameters: { type: "object" } } }];
  const answers = (resolution: unknown) => [
    () => loadResult(resolution as NameResolution, []),
    () => proxyLoadResult(resolution as NameResolution, tools, []),
  ];

  it.each([
    ["names", { names: [1], unknown: [], overCap: [], cap: 12 }],
    ["unknown", { names: [], unknown: [{ name: "x" }], overCap: [], cap: 12 }],
    ["overCap", { names: [], unknown: [], overCap: [null], cap: 12 }],
  ])(
    "is refused naming the list (%s) holding what is not a name, never a bare TypeError",
    (key, resolution) => {
      for (const answer of answers(resolution)) {
        expect(codeOf(answer)).toMatch(
          new RegExp(`^invalid-names: \\w+ needs the resolution's ${key} as an array of strings`),
        );
      }
    },
  );

  it.each([NaN, 0, -1, 2.5, Infinity])("is refused for a cap of %s, never told to the model", (cap) => {
    for (const answer of answers({ names: [], unknown: [], overCap: ["a"], cap })) {
      expect(codeOf(answer)).toMatch(/^invalid-cap: \w+ needs the resolution's cap as a whole number/);
    }
  });

  it("still answers a resolution expandNames gave", () => {
    const resolution = expandNames(["a", "b"], [{ name: "s", tools: [{ name: "a" }] }]);
    expect(loadResult(resolution, [])).toBe(
      "Loaded: a. Call them by name.\nNot in the catalogue: b. Use the names the catalogue lists.",
    );
  });
});

describe("r74-3: a step's input and the options of the wrong type", () => {
  const tool = (name: string, description: string) => ({
    type: "function" as const,
    function: { name, description, parameters: { type: "object" } },
  });
  const tools = [tool("read_file", "Read a file."), tool("write_file", "Write a file.")];
  const loading = createToolLoading({ mode: "ondemand", tools });

  it.each([
    ["the string '0'", "0"],
    ["NaN", Number.NaN],
    ["-1", -1],
    ["1.5", 1.5],
  ])("a step of %s is refused (the first request lost its exclusive shortlist)", (_, step) => {
    expect(
      codeOf(() => loading.request({ step: step as number, loaded: [], preselected: ["read_file"] })),
    ).toMatch(/^invalid-call: request needs step as a whole number of 0 or more/);
    expect(
      codeOf(() =>
        loading.route(
          { id: "c1", name: "made_up", args: {} },
          { loaded: [], messages: [], step: step as number, preselected: ["read_file"] },
        ),
      ),
    ).toMatch(/^invalid-call: route needs step as a whole number of 0 or more/);
  });

  it("step 0 still declares the shortlist alone, and a route without a step still answers", () => {
    const first = loading.request({ step: 0, loaded: [], preselected: ["read_file"] });
    expect(first.tools.map((t) => t.function.name)).toEqual(["read_file"]);
    const route = loading.route({ id: "c1", name: "read_file", args: {} }, { loaded: [], messages: [] });
    expect(route.kind).toBe("dispatch");
  });

  it("a system prompt that is not a string is refused, not sent as its String() before the catalogue", () => {
    expect(codeOf(() => loading.request({ step: 1, loaded: [], system: 42 as never }))).toMatch(
      /^invalid-call: request needs system as the host's system prompt \(a string\), or none, and was given the number 42/,
    );
    expect(loading.request({ step: 1, loaded: [], system: "Be terse." }).system).toMatch(
      /^Be terse\.\n\n# Tools/,
    );
  });

  it("descriptions that is not a boolean is refused ('false' listed every description)", () => {
    expect(
      codeOf(() => createToolLoading({ mode: "ondemand", tools, descriptions: "false" as never })),
    ).toMatch(
      /^invalid-call: createToolLoading needs descriptions as true or false, and was given the string "false"/,
    );
    expect(createToolLoading({ mode: "ondemand", tools, descriptions: false }).catalogText).not.toContain(
      "Read a file.",
    );
  });
});
