/**
 * OpenAI's strict-mode schema rules (structured outputs and `strict: true` tools), as far as the
 * recorded refusals show them: every object needs `additionalProperties: false`, and `required`
 * must list every key of `properties`.
 */
import { isRecord } from "./recorded.js";

/** One strict-mode violation: where it is and which rule it breaks. */
export interface StrictViolation {
  /** Path from the schema root, e.g. `["properties", "organizations", "items"]`. */
  context: (string | number)[];
  kind: "additionalProperties" | "required";
  /** For `required`: the first property key missing from `required`. */
  missing?: string | undefined;
}

/** Python's tuple repr, which OpenAI's messages use for the context: `()`, `('a',)`, `('a', 0)`. */
export function pythonTuple(parts: readonly (string | number)[]): string {
  const items = parts.map((p) => (typeof p === "number" ? String(p) : `'${p}'`));
  if (items.length === 1) return `(${items[0]},)`;
  return `(${items.join(", ")})`;
}

function isObjectSchema(schema: Record<string, unknown>): boolean {
  const t = schema.type;
  return t === "object" || (Array.isArray(t) && t.includes("object")) || isRecord(schema.properties);
}

/** The first strict-mode violation in `schema`, depth first in key order, or undefined. */
export function findStrictViolation(
  schema: unknown,
  context: (string | number)[] = [],
): StrictViolation | undefined {
  if (!isRecord(schema)) return undefined;
  if (isObjectSchema(schema)) {
    if (schema.additionalProperties !== false) return { context, kind: "additionalProperties" };
    const keys = isRecord(schema.properties) ? Object.keys(schema.properties) : [];
    const required = Array.isArray(schema.required) ? schema.required : undefined;
    const missing = keys.find((k) => !required?.includes(k));
    if (!required || missing !== undefined) return { context, kind: "required", missing: missing ?? keys[0] };
  }
  const children: [(string | number)[], unknown][] = [];
  for (const key of ["properties", "$defs", "definitions"] as const) {
    const group = schema[key];
    if (isRecord(group)) for (const [name, sub] of Object.entries(group)) children.push([[key, name], sub]);
  }
  if (isRecord(schema.items)) children.push([["items"], schema.items]);
  for (const key of ["anyOf", "allOf", "oneOf"] as const) {
    const list = schema[key];
    if (Array.isArray(list)) for (const [i, sub] of list.entries()) children.push([[key, i], sub]);
  }
  for (const [path, sub] of children) {
    const found = findStrictViolation(sub, [...context, ...path]);
    if (found) return found;
  }
  return undefined;
}
