/**
 * Review r62 of tool loading: a proxied preselection's id against the ids the transcript holds, a
 * changed definition sent again, an uncatalogued host tool refused whichever way it is called,
 * requested names capped and matched in time linear in their length, a renamed tool's host name
 * taken by call_tool and load_tools, and what counts as a redundant load.
 */
import type { FunctionToolLike } from "@loopwright/schema-compat";
import { bestTimes } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { MessageLike } from "./load-result.js";
import { expandNames } from "./names.js";
import { countEntries } from "./test-support/work.js";
import { createToolLoading } from "./tool-loading.js";

const tool = (
  name: string,
  description: string,
  properties: Record<string, unknown> = {},
): FunctionToolLike => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties } },
});
const TOOLS = [
  tool("list_pods", "List pods", { namespace: { type: "string" } }),
  tool("read_file", "Read a file", { path: { type: "string" } }),
  tool("write_file", "Write a file", { path: { type: "string" }, text: { type: "string" } }),
  tool("delete_all", "Delete everything"),
];
const CATALOG = [
  { name: "kubernetes", tools: [{ name: "list_pods" }] },
  { name: "files", tools: [{ name: "read_file" }, { name: "write_file" }] },
];
const loadCall = (id: string, names: string[]): MessageLike => ({
  role: "assistant",
  content: "",
  tool_calls: [
    { id, type: "function", function: { name: "load_tools", arguments: JSON.stringify({ names }) } },
  ],
});

/** Every tool-call id an assistant message of `messages` holds, with repeats. */
const callIds = (messages: readonly MessageLike[]) =>
  messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));

describe("r62-1: a proxied preselection's id", () => {
  it("is one the transcript does not hold already", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const first = loading.preselection(["list_pods"], [{ role: "user", content: "hi" }, loadCall("x", [])]);
    expect(first.messages).toHaveLength(2);
    // A transcript carried from an earlier run whose preselection landed at 4 as well.
    const four: MessageLike[] = [
      loadCall("call_preselected_4", ["list_pods"]),
      { role: "tool", tool_call_id: "call_preselected_4", content: "No tool was loaded." },
      { role: "assistant", content: "ok" },
      { role: "user", content: "now read" },
    ];
    const exchange = loading.preselection(["read_file"], four);
    const all = [...four, ...exchange.messages];
    const ids = callIds(all);
    expect(new Set(ids).size).toBe(ids.length);
    const [call, answer] = exchange.messages;
    expect(answer?.tool_call_id).toBe(call?.tool_calls?.[0]?.id);
    expect(answer?.tool_call_id).toMatch(/^call_preselected_/);
    // An answer's id alone (its call folded away) is not taken either.
    const orphan: MessageLike[] = [{ role: "tool", tool_call_id: "call_preselected_1", content: "x" }];
    const again = loading.preselection(["read_file"], orphan);
    expect(again.messages[1]?.tool_call_id).not.toBe("call_preselected_1");
  });
});

describe("r62-2: a tool whose definition changed since it was loaded (proxy)", () => {
  const READ_V2 = tool("read_file", "Read a file, a range of it", {
    path: { type: "string" },
    lines: { type: "string" },
  });
  const v2 = TOOLS.map((t) => (t.function.name === "read_file" ? READ_V2 : t));
  const loadedOnce = (): MessageLike[] => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const messages: MessageLike[] = [{ role: "user", content: "read" }, loadCall("c1", ["read_file"])];
    const route = loading.route(
      { id: "c1", name: "load_tools", args: { names: ["read_file"] } },
      { loaded: [], messages },
    );
    messages.push({ role: "tool", tool_call_id: "c1", content: route.kind === "load" ? route.content : "" });
    messages.push(loadCall("c2", ["read_file"]));
    return messages;
  };

  it("is sent again with its definition as it is now, counted fresh and not redundant", () => {
    const messages = loadedOnce();
    const same = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const unchanged = same.route(
      { id: "c2", name: "load_tools", args: { names: ["read_file"] } },
      { loaded: [], messages },
    );
    expect(unchanged).toMatchObject({ kind: "load", fresh: [], repeated: ["read_file"] });
    const changed = createToolLoading({ mode: "proxy", tools: v2, catalog: CATALOG });
    const route = changed.route(
      { id: "c2", name: "load_tools", args: { names: ["read_file"] } },
      { loaded: [], messages },
    );
    expect(route).toMatchObject({ kind: "load", fresh: ["read_file"], repeated: [] });
    const content = route.kind === "load" ? route.content : "";
    expect(content).not.toContain("Already in this conversation");
    expect(content).toContain('"lines":{"type":"string"}');
  });

  it("is not left out of a preselection", () => {
    const messages = loadedOnce().slice(0, 3);
    const same = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    expect(same.preselection(["read_file"], messages).names).toEqual([]);
    const changed = createToolLoading({ mode: "proxy", tools: v2, catalog: CATALOG });
    const exchange = changed.preselection(["read_file"], messages);
    expect(exchange.names).toEqual(["read_file"]);
    expect(String(exchange.messages[1]?.content)).toContain('"lines":{"type":"string"}');
  });

  it("heldDefinitions given the tools holds only names whose line is current", async () => {
    const { heldDefinitions } = await import("./load-result.js");
    const messages = loadedOnce();
    expect([...heldDefinitions(messages)]).toEqual(["read_file"]);
    expect([...heldDefinitions(messages, TOOLS)]).toEqual(["read_file"]);
    expect([...heldDefinitions(messages, v2)]).toEqual([]);
  });

  it("each earlier answer is read once, not again by every later load (10,000 tools, 600 loads)", () => {
    const many = Array.from({ length: 10_000 }, (_, i) =>
      tool(`t${i}`, `tool ${i}`, { a: { type: "string" } }),
    );
    const loading = createToolLoading({
      mode: "proxy",
      tools: many,
      catalog: [{ name: "srv", tools: many.map((t) => ({ name: t.function.name })) }],
    });
    const messages: MessageLike[] = [{ role: "user", content: "go" }];
    // Work, not time (a machine under load cannot fail it): each answer's text is split into lines
    // to be read, so the splits by line made during the loads count the answers read.
    const split = String.prototype.split;
    let splits = 0;
    String.prototype.split = function (this: string, separator: unknown, limit?: number) {
      if (separator === "\n") splits++;
      return Reflect.apply(split, this, [separator, limit]) as string[];
    } as typeof split;
    try {
      for (let i = 0; i < 600; i++) {
        const names = [`t${i}`, `t${i + 5000}`, `t${i + 7000}`];
        messages.push(loadCall(`c${i}`, names));
        const route = loading.route(
          { id: `c${i}`, name: "load_tools", args: { names } },
          { loaded: [], messages },
        );
        messages.push({
          role: "tool",
          tool_call_id: `c${i}`,
          content: route.kind === "load" ? route.content : "",
        });
      }
    } finally {
      String.prototype.split = split;
    }
    // Read again by every later load, the 600 answers were split ~180,000 times (1.3 s a hundred
    // loads here); each once now, however many loads follow it.
    expect(splits).toBeGreaterThan(0);
    expect(splits).toBeLessThanOrEqual(600 * 3);
  });
});

describe("r62-3: a host tool the catalogue does not list (ondemand and proxy)", () => {
  it("is refused whichever way the model calls it: by its own name, through call_tool, through load_tools", () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const loading = createToolLoading({ mode, tools: TOOLS, catalog: CATALOG });
      // Never declared: not in the tool array of any step.
      for (const step of [0, 1, 5]) {
        const names = loading.request({ step, loaded: ["read_file"] }).tools.map((t) => t.function.name);
        expect(names).not.toContain("delete_all");
      }
      const state = { loaded: [], messages: [] };
      const direct = loading.route({ id: "c1", name: "delete_all", args: {} }, state);
      expect(direct).toMatchObject({ kind: "refuse", unknown: ["delete_all"] });
      expect(direct.kind === "refuse" && direct.error.code).toBe("unknown-tool");
      const proxied = loading.route(
        { id: "c2", name: "call_tool", args: { name: "delete_all", arguments: {} } },
        state,
      );
      expect(proxied).toMatchObject({ kind: "refuse", unknown: ["delete_all"] });
      const load = loading.route({ id: "c3", name: "load_tools", args: { names: ["delete_all"] } }, state);
      expect(load.kind === "load" && load.resolution.unknown).toEqual(["delete_all"]);
      // A catalogued tool still runs however it is called.
      expect(loading.route({ id: "c4", name: "read_file", args: {} }, state)).toMatchObject({
        kind: "dispatch",
      });
    }
  });

  it("eager declares it and dispatches it, as before", () => {
    const loading = createToolLoading({ mode: "eager", tools: TOOLS, catalog: CATALOG });
    expect(
      loading.route({ id: "c1", name: "delete_all", args: {} }, { loaded: [], messages: [] }),
    ).toMatchObject({
      kind: "dispatch",
      name: "delete_all",
    });
  });
});

describe("r62-5: a requested name's length and its stars", () => {
  const many = Array.from({ length: 10_000 }, (_, i) => tool(`tool_${i}`, `tool ${i}`));
  const big = createToolLoading({
    mode: "ondemand",
    tools: many,
    catalog: [{ name: "srv", tools: many.map((t) => ({ name: t.function.name })) }],
  });

  const route = (name: string) =>
    big.route({ id: "c1", name: "load_tools", args: { names: [name] } }, { loaded: [], messages: [] });
  /** How many times as long loading `name` takes as loading `baseline`, the best of three each, in turn. */
  const against = async (name: string, baseline: string) => {
    const [time, base] = await bestTimes([
      () => {
        for (let i = 0; i < 20; i++) route(name);
      },
      () => {
        for (let i = 0; i < 20; i++) route(baseline);
      },
    ]);
    return (time as number) / (base as number);
  };

  it("answers a 100,000-character pattern at once, says names are read up to 256 characters, and loads nothing", () => {
    const huge = `${"*".repeat(100_000)}q`;
    const route1 = route(huge);
    expect(route1.kind === "load" && route1.fresh).toEqual([]);
    const content = route1.kind === "load" ? route1.content : "";
    expect(content).toContain("A name is read up to 256 characters; a longer one matches nothing.");
    expect(content.length).toBeLessThan(600);
    // Measured: 5.3 s before (a step back per star, against every tool). Counted, not timed (a
    // fixed 500 ms failed under load, and a ratio of two timings moved 3-4× on a loaded CI host):
    // twenty such loads now walk none of the 10,000 tools (measured: 40 entries, the loads' own
    // bookkeeping), where before each tested the pattern against every tool.
    const walked = countEntries(() => {
      for (let i = 0; i < 20; i++) route(huge);
    }, many.length).total;
    expect(walked).toBeLessThan(many.length / 10);
  }, 30_000);

  it("matches a pattern of many stars under the cap quickly, each run of stars as one", async () => {
    const pattern = `${"*".repeat(200)}_9999${"*".repeat(40)}`;
    const found = route(pattern);
    expect(found.kind === "load" && found.fresh).toEqual(["tool_9999"]);
    // Each against the same pattern with its runs of stars written once, in the same run: about the
    // same cost now; a step back per star against every tool, hundreds of times it.
    expect(await against(pattern, "*_9999*")).toBeLessThan(30);
    expect(await against(`${"*a".repeat(120)}*`, "*a*")).toBeLessThan(30);
  }, 30_000);

  it("reads patterns as before: a prefix, a suffix, parts in order, and a star standing for nothing", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const load = (name: string) => {
      const route = loading.route(
        { id: "c", name: "load_tools", args: { names: [name] } },
        { loaded: [], messages: [] },
      );
      return route.kind === "load" ? [...route.fresh].sort() : [];
    };
    expect(load("*_file")).toEqual(["read_file", "write_file"]);
    expect(load("read_*")).toEqual(["read_file"]);
    expect(load("**e*_**f*le")).toEqual(["read_file", "write_file"]);
    expect(load("*pods*")).toEqual(["list_pods"]);
    expect(load("list_pods*")).toEqual(["list_pods"]);
    expect(load("*o*o*")).toEqual([]);
    expect(load("r*d*e")).toEqual(["read_file"]);
    expect(load("l*s*s")).toEqual(["list_pods"]);
    expect(load("*")).toEqual(["list_pods", "read_file", "write_file"]);
  });
});

describe("r62-5: the pattern matcher agrees with a regex on small patterns (fast-check)", () => {
  it("loads exactly the catalogued names the equivalent regex matches", () => {
    const letters = fc.constantFrom("a", "b", "_");
    const word = fc.array(letters, { minLength: 1, maxLength: 6 }).map((chars) => chars.join(""));
    const pattern = fc
      .array(fc.constantFrom("a", "b", "_", "*"), { minLength: 1, maxLength: 8 })
      .map((chars) => chars.join(""))
      .filter((p) => p.includes("*"));
    fc.assert(
      fc.property(fc.uniqueArray(word, { minLength: 1, maxLength: 12 }), pattern, (names, glob) => {
        const catalog = [{ name: "srv", tools: names.map((name) => ({ name })) }];
        const regex = new RegExp(`^${glob.replace(/\*+/g, ".*")}$`);
        const expected = names.filter((name) => regex.test(name)).sort();
        const got = expandNames([glob], catalog, 100);
        // A pattern that is a server split ("srv*"…) never arises: the alphabet has no separator
        // but "__", and "srv" holds letters outside it.
        expect([...got.names].sort()).toEqual(expected);
      }),
    );
  });
});
