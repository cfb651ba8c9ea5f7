/**
 * Which JSON schemas llama.cpp's schema-to-grammar converter refuses, as far as the recordings
 * show: a `pattern` not anchored with `^…$`, and a non-empty schema it cannot recognise (no known
 * `type` and none of the keywords it handles). A remote `$ref` is accepted (recorded live).
 */
import { isRecord } from "./recorded.js";

const PRIMITIVE_TYPES = new Set(["boolean", "number", "integer", "string", "null", "array", "object"]);
const HANDLED_KEYWORDS = [
  "$ref",
  "oneOf",
  "anyOf",
  "allOf",
  "const",
  "enum",
  "properties",
  "additionalProperties",
  "items",
  "prefixItems",
  "pattern",
  "format",
  "minLength",
  "maxLength",
];

/** nlohmann::json's compact dump: object keys sorted, no spaces. */
export function sortedDump(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedDump).join(",")}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedDump(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function recognised(schema: Record<string, unknown>): boolean {
  if (Object.keys(schema).length === 0) return true;
  const t = schema.type;
  if (typeof t === "string") return PRIMITIVE_TYPES.has(t);
  if (Array.isArray(t)) return t.every((x) => typeof x === "string" && PRIMITIVE_TYPES.has(x));
  return HANDLED_KEYWORDS.some((k) => k in schema);
}

/** Every conversion error llama.cpp would report for `schema`, in visiting order (empty: it compiles). */
export function grammarErrors(schema: unknown): string[] {
  const errors: string[] = [];
  const visit = (node: unknown): void => {
    if (!isRecord(node)) return;
    if (!recognised(node)) {
      errors.push(`Unrecognized schema: ${sortedDump(node)}`);
      return;
    }
    if (typeof node.pattern === "string" && !(node.pattern.startsWith("^") && node.pattern.endsWith("$"))) {
      errors.push("Pattern must start with '^' and end with '$'");
    }
    for (const key of ["properties", "$defs", "definitions"]) {
      const group = node[key];
      if (isRecord(group)) for (const sub of Object.values(group)) visit(sub);
    }
    for (const key of ["items", "additionalProperties", "not"]) if (isRecord(node[key])) visit(node[key]);
    for (const key of ["anyOf", "oneOf", "allOf", "prefixItems", "items"]) {
      const list = node[key];
      if (Array.isArray(list)) for (const sub of list) visit(sub);
    }
  };
  visit(schema);
  return errors;
}
