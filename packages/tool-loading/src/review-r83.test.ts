/**
 * Review r83 of tool loading: `heldDefinitions(messages, tools)` wrote each held tool's definition
 * as JSON on every call to compare it with the line the transcript holds, so a proxied run paid
 * for every held tool on every load (10^3 loads of 200 tools: 2.2 ms a load, 0.8 ms with each
 * tool's line kept).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { heldDefinitions, type MessageLike, proxyLoadResult } from "./load-result.js";

const makeTools = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    type: "function" as const,
    function: {
      name: `t${i}`,
      description: `tool ${i}`,
      parameters: { type: "object", properties: { a: { type: "string" } } } as Record<string, unknown>,
    },
  }));
const resolution = (names: string[]) => ({ names, unknown: [], overCap: [], cap: 500 });

/** A transcript where one proxied load answered with every tool's definition. */
const loadedAll = (tools: ReturnType<typeof makeTools>): MessageLike[] => [
  { role: "user", content: "go" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "load_tools", arguments: "{}" } }],
  },
  {
    role: "tool",
    tool_call_id: "c1",
    content: proxyLoadResult(resolution(tools.map((t) => t.function.name)), tools, []),
  },
];

afterEach(() => {
  vi.restoreAllMocks();
});

describe("r83-4: a held tool's definition is written once while the tool stays the same", () => {
  it("writes no definition again when the transcript is read again", () => {
    const tools = makeTools(50);
    const messages = loadedAll(tools);
    expect(heldDefinitions(messages, tools).size).toBe(50);
    const stringify = vi.spyOn(JSON, "stringify");
    for (let i = 0; i < 4; i++) expect(heldDefinitions(messages, tools).size).toBe(50);
    // Before: each held tool's line written on each call (200).
    expect(stringify).toHaveBeenCalledTimes(0);
  });

  it("a tool renamed, or its description, parameters or function replaced, is written again", () => {
    const tools = makeTools(4);
    const messages = loadedAll(tools);
    const names = () => [...heldDefinitions(messages, tools)].sort();
    expect(names()).toEqual(["t0", "t1", "t2", "t3"]);
    const [a, b, c, d] = tools as [
      (typeof tools)[0],
      (typeof tools)[0],
      (typeof tools)[0],
      (typeof tools)[0],
    ];
    a.function.description = "tool 0, changed";
    b.function.parameters = { type: "object", properties: { b: { type: "number" } } };
    c.function = { ...c.function, description: "tool 2, a new function" };
    d.function.name = "t3_renamed";
    expect(names()).toEqual([]);
    a.function.description = "tool 0";
    b.function.parameters = { type: "object", properties: { a: { type: "string" } } };
    c.function = { ...c.function, description: "tool 2" };
    d.function.name = "t3";
    expect(names()).toEqual(["t0", "t1", "t2", "t3"]);
  });
});
