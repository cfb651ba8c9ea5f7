import { describeValue, SchemaCompatError } from "./errors.js";
import type { NamedToolLike } from "./types.js";

/** How `orderTools` orders: by name (`true` or absent), as given (`false`), or by a comparator. */
export type ToolOrder<T> = boolean | ((a: T, b: T) => number);

function nameOf(tool: unknown): string {
  if (typeof tool !== "object" || tool === null) return "";
  const { function: fn, name } = tool as NamedToolLike;
  if (typeof fn === "object" && fn !== null && typeof fn.name === "string") return fn.name;
  return typeof name === "string" ? name : "";
}

/** Compares two tools by name, code unit by code unit, so the order is the same in every locale. */
function byName(a: unknown, b: unknown): number {
  const x = nameOf(a);
  const y = nameOf(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Puts a tool array in a stable order, so the same set of tools is the same request prefix (and
 * the same prompt cache) however the caller assembled it.
 *
 * By default (or `true`) sorts by the function's name (or a top-level `name`); `false` keeps the
 * caller's order; a comparator orders another way. Always stable and always a new array; never
 * mutates its input. Throws a `SchemaCompatError` (`code: "invalid-tools"` or `"invalid-order"`)
 * for a `tools` that is not an array or an `order` that is none of the three.
 */
export function orderTools<T>(tools: readonly T[], order: ToolOrder<T> = true): T[] {
  if (!Array.isArray(tools)) {
    throw new SchemaCompatError(
      "invalid-tools",
      `orderTools needs an array of tools, and was given ${describeValue(tools)}.`,
    );
  }
  if (order === false) return [...tools];
  if (order === true) return [...tools].sort(byName);
  if (typeof order === "function") return [...tools].sort(order);
  throw new SchemaCompatError(
    "invalid-order",
    `orderTools takes true (by name), false (as given) or a comparator as its order, and was given ${describeValue(order)}.`,
  );
}
