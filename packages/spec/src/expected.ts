import { z } from "zod";

// What a leaf of the schema accepts, in words, read from its JSON Schema: a message says what is
// allowed rather than repeating what the document held.

interface Leaf {
  type?: string;
  enum?: readonly unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  description?: string;
}

const cache = new WeakMap<z.ZodType, string | undefined>();

function range(low: number | undefined, given: number | undefined, unit = ""): string {
  // z.int() states the safe-integer bound; a person reads it as no bound at all.
  const high = given === Number.MAX_SAFE_INTEGER ? undefined : given;
  if (low !== undefined && high !== undefined) return ` from ${low} to ${high}${unit}`;
  if (low !== undefined) return ` of at least ${low}${unit}`;
  if (high !== undefined) return ` of at most ${high}${unit}`;
  return "";
}

function describeLeaf(leaf: Leaf): string | undefined {
  if (leaf.enum) return `one of ${leaf.enum.map((entry) => JSON.stringify(entry)).join(", ")}`;
  switch (leaf.type) {
    case "boolean":
      return "true or false";
    case "integer":
      return `a whole number${range(leaf.minimum, leaf.maximum)}`;
    case "number":
      return `a number${range(leaf.minimum, leaf.maximum)}`;
    case "string": {
      if (leaf.pattern !== undefined && leaf.description) {
        const said = leaf.description.replace(/\.+$/, "");
        return said.charAt(0).toLowerCase() + said.slice(1);
      }
      if (leaf.minLength === 1 && leaf.maxLength === undefined) return "a non-empty string";
      const low = leaf.minLength === 0 ? undefined : leaf.minLength;
      const length = range(low, leaf.maxLength, " characters");
      return length === ""
        ? "a string"
        : `a string${length.replace(/^ of/, " with").replace(/^ from/, " of")}`;
    }
    default:
      return undefined;
  }
}

/** What `schema` (a leaf: a string, number, boolean or enum) accepts, in words; `undefined` when it cannot tell. */
export function expected(schema: z.ZodType): string | undefined {
  if (cache.has(schema)) return cache.get(schema);
  let said: string | undefined;
  try {
    said = describeLeaf(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Leaf);
  } catch {
    said = undefined;
  }
  cache.set(schema, said);
  return said;
}
