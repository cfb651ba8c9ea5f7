import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SchemaCompatError } from "./errors.js";
import { orderTools } from "./order-tools.js";

const tool = (name: string, tag = 0) => ({ type: "function" as const, function: { name, tag } });

describe("orderTools", () => {
  it("orders by name by default, so the same set is the same array however it was assembled", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ maxLength: 8 })), (names) => {
        const tools = names.map((n) => tool(n));
        const shuffled = [...tools].reverse();
        expect(orderTools(tools)).toEqual(orderTools(shuffled));
        const sorted = orderTools(tools).map((t) => t.function.name);
        expect(sorted).toEqual([...names].sort());
      }),
    );
  });

  it("keeps the caller's order with false, and sorts by a comparator otherwise", () => {
    const tools = [tool("b"), tool("a"), tool("c")];
    expect(orderTools(tools, false).map((t) => t.function.name)).toEqual(["b", "a", "c"]);
    const byLength = orderTools(
      [tool("ccc"), tool("a"), tool("bb")],
      (x, y) => x.function.name.length - y.function.name.length,
    );
    expect(byLength.map((t) => t.function.name)).toEqual(["a", "bb", "ccc"]);
  });

  it("is stable for equal names and never mutates its input", () => {
    const tools = [tool("x", 1), tool("a"), tool("x", 2), tool("x", 3)];
    const before = JSON.stringify(tools);
    const out = orderTools(tools);
    expect(out.filter((t) => t.function.name === "x").map((t) => t.function.tag)).toEqual([1, 2, 3]);
    expect(JSON.stringify(tools)).toBe(before);
    expect(out).not.toBe(tools);
    expect(orderTools(tools, false)).not.toBe(tools);
  });

  it("reads a top-level name (MCP-style tools) as well", () => {
    expect(orderTools([{ name: "b" }, { name: "a" }])).toEqual([{ name: "a" }, { name: "b" }]);
  });

  it("throws a SchemaCompatError naming the bad argument", () => {
    expect(() => orderTools("tools" as never)).toThrow(/needs an array of tools/);
    try {
      orderTools([], "name" as never);
      expect.unreachable();
    } catch (error) {
      expect(SchemaCompatError.isInstance(error)).toBe(true);
      expect((error as SchemaCompatError).code).toBe("invalid-order");
    }
  });
});
