/**
 * Review r68 of tool loading: the names of a `load_tools` call read in time linear in their length,
 * however many quotes a model writes inside one; a description's lone surrogate kept out of the
 * system prompt, and `descriptionLine`'s `max` checked.
 */
import type { FunctionToolLike } from "@loopwright/schema-compat";
import { growth } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { descriptionLine } from "./catalog.js";
import { ToolLoadingError } from "./errors.js";
import { loadNames } from "./names.js";
import { createToolLoading } from "./tool-loading.js";

describe("r68-1: a load_tools name with a long run of quotes inside it", () => {
  // Fifty reads a size: one takes a fraction of a millisecond, too little to time.
  const read = (n: number) => {
    const names = `a${"'".repeat(n)}b`;
    for (let k = 0; k < 50; k++) expect(loadNames({ names })).toEqual([names]);
  };

  it("is read in time linear in its length (the quote-stripping regex was quadratic)", async () => {
    // Measured before the fix: 77 ms for 10,000 quotes, 250 ms for 20,000, 1,020 ms for 40,000. A
    // bound of 200 ms on 100,000 failed under load: 100,000 quotes are read against 6,250 in the
    // same run, about 16 times as long when linear, 256 when quadratic (a ratio of two timings
    // moved 3-4× on a loaded CI host, so the bound sits at the geometric middle, not near 16).
    expect(await growth(read, 6_250, 16)).toBeLessThan(64);
  });

  it("still loses only the quotes and brackets around a name, as a load answers it", async () => {
    expect(loadNames({ names: `"read_file", ['write_file'], \`x\`` })).toEqual([
      "read_file",
      "write_file",
      "x",
    ]);
    expect(loadNames({ names: `"'"read'_file"'"` })).toEqual(["read'_file"]);
    const loading = createToolLoading({
      mode: "ondemand",
      tools: [{ type: "function", function: { name: "read_file", parameters: { type: "object" } } }],
    });
    const names = `read_file ${"a".repeat(10)}${"'".repeat(50_000)}z`;
    const route = loading.route(
      { id: "c1", name: "load_tools", args: { names } },
      { loaded: [], messages: [] },
    );
    expect(route.kind === "load" && route.content).toMatch(
      /^Loaded: read_file\. Call them by name\.\nNot in the catalogue: a{10}'+… \(50011 characters\)/,
    );
    // The load's answer is read in linear time too (a bound of 200 ms failed under load): 16 times
    // the quotes take about 16 times as long, 256 when quadratic.
    const load = (n: number) => {
      const names = `read_file ${"a".repeat(10)}${"'".repeat(n)}z`;
      for (let k = 0; k < 50; k++)
        loading.route({ id: "c1", name: "load_tools", args: { names } }, { loaded: [], messages: [] });
    };
    expect(await growth(load, 6_250, 16)).toBeLessThan(64);
  });
});

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe("r68-2: a description holding half a surrogate pair (a server that cut its text inside an emoji)", () => {
  const cut = "Reads a file \ud83d and the \ude42 rest";

  it("reaches the system prompt as U+FFFD, never as the lone half llama.cpp refuses", () => {
    const loading = createToolLoading({
      mode: "proxy",
      tools: [{ type: "function", function: { name: "read_file", description: cut, parameters: {} } }],
      descriptions: true,
    });
    const system = loading.request({ step: 0, loaded: [], system: "Be terse." }).system ?? "";
    expect(system).toContain("- read_file: Reads a file \ufffd and the \ufffd rest");
    expect(LONE_SURROGATE.test(system)).toBe(false);
  });

  it("keeps a whole emoji as it is, and never cuts one in half", () => {
    expect(descriptionLine("Smiles 🙂 back")).toBe("Smiles 🙂 back");
    expect(descriptionLine("ab🙂cd", 4)).toBe("ab…");
  });
});

describe("r68-3: descriptionLine's max that is no length", () => {
  const refused = (max: number) => {
    try {
      descriptionLine("abcdef", max);
    } catch (error) {
      return ToolLoadingError.isInstance(error) ? `${error.code}: ${error.message}` : String(error);
    }
    return "accepted";
  };

  it("is refused naming what it was given (0 gave 'abcde…', NaN the whole line)", () => {
    const head =
      "invalid-cap: descriptionLine needs max as a whole number of at least 1 (or Infinity), and was given";
    expect(refused(0)).toBe(`${head} the number 0.`);
    expect(refused(-3)).toBe(`${head} the number -3.`);
    expect(refused(Number.NaN)).toBe(`${head} NaN.`);
    expect(refused(2.5)).toBe(`${head} the number 2.5.`);
  });

  it("takes a whole number or Infinity (side-task's whole first line)", () => {
    expect(descriptionLine("abcdef", 4)).toBe("abc…");
    expect(descriptionLine("abcdef", 1)).toBe("…");
    expect(descriptionLine("abcdef", Number.POSITIVE_INFINITY)).toBe("abcdef");
  });
});

describe("r68-4: a step's loaded names that name a tool twice (a host's list joined with a route's)", () => {
  const def = (name: string): FunctionToolLike => ({
    type: "function",
    function: { name, parameters: { type: "object", properties: {} } },
  });
  const loading = createToolLoading({ mode: "ondemand", tools: [def("read_file"), def("write_file")] });
  const names = (tools: readonly FunctionToolLike[]) => tools.map((t) => t.function.name);

  it("declares each tool once (it declared read_file twice, a tool list endpoints and the loop refuse)", () => {
    const step = loading.request({ step: 1, loaded: ["read_file", "write_file", "read_file"] });
    expect(names(step.tools)).toEqual(["load_tools", "read_file", "write_file"]);
  });

  it("and so does an exclusive preselection's first step", () => {
    const step = loading.request({ step: 0, loaded: [], preselected: ["write_file", "write_file"] });
    expect(names(step.tools)).toEqual(["write_file"]);
  });
});
