import { isObject, resolvePointer } from "./sanitize-schema.js";

type Raw = Record<string, unknown>;

/** Follows `$ref`s (local ones, a few hops) to the schema a value is checked against. */
function resolve(schema: unknown, root: unknown): Raw | undefined {
  let node = schema;
  for (let hops = 0; isObject(node) && typeof node.$ref === "string" && hops < 16; hops++) {
    node = resolvePointer(root, node.$ref);
  }
  return isObject(node) ? node : undefined;
}

function acceptsNull(schema: Raw | undefined): boolean {
  if (!schema) return true;
  if (schema.nullable === true) return true;
  const type = schema.type;
  if (type === "null" || (Array.isArray(type) && type.includes("null"))) return true;
  if (Array.isArray(schema.enum) && schema.enum.includes(null)) return true;
  if ("const" in schema && schema.const === null) return true;
  for (const key of ["anyOf", "oneOf"]) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.some((b) => isObject(b) && acceptsNull(b as Raw))) return true;
  }
  // No type at all accepts anything, null included.
  return (
    type === undefined &&
    !Array.isArray(schema.enum) &&
    !("const" in schema) &&
    !schema.anyOf &&
    !schema.oneOf
  );
}

function strip(value: unknown, schema: Raw | undefined, root: unknown, depth: number): unknown {
  if (!schema || depth > 64) return value;
  if (Array.isArray(value)) {
    const items = resolve(schema.items, root);
    return items ? value.map((v) => strip(v, items, root, depth + 1)) : value;
  }
  if (!isObject(value)) return value;
  const props = isObject(schema.properties) ? schema.properties : undefined;
  if (!props) return value;
  const required = Array.isArray(schema.required) ? schema.required : [];
  const out: Raw = {};
  for (const [key, inner] of Object.entries(value)) {
    const sub = Object.hasOwn(props, key) ? resolve(props[key], root) : undefined;
    if (inner === null && Object.hasOwn(props, key) && !required.includes(key) && !acceptsNull(sub)) continue;
    Object.defineProperty(out, key, {
      value: strip(inner, sub, root, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * Undoes what strict mode made of optional parameters: `sanitizeSchema` makes an optional property
 * required-but-nullable, so a model leaves it out by writing `null` — which the tool itself (say
 * an MCP server validating with zod) refuses. Given the arguments and the tool's ORIGINAL schema,
 * drops every `null` the original schema did not allow for a property it did not require, at any
 * depth reached through `properties`, `items` and local `$ref`s.
 *
 * Returns new arguments; never mutates its input and never throws. Values the original schema
 * allows to be null, required properties, and keys it does not describe are left as they are.
 */
export function dropOptionalNulls<T>(args: T, originalSchema: unknown): T {
  try {
    return strip(args, resolve(originalSchema, originalSchema), originalSchema, 0) as T;
  } catch {
    // Arguments or a schema no JSON holds (a throwing getter, a revoked Proxy): left as they were.
    return args;
  }
}
