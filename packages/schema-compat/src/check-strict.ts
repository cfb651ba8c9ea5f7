import { STRICT_FORMATS, STRICT_KEYWORDS, STRICT_MAX_DEPTH, TYPE_NAMES } from "./keywords.js";
import { isGrammarSafePattern, REPETITION_LIMIT } from "./pattern.js";
import { besideTester, boundsAdmitNone, fields, INTEGER_BOUND_LIMIT, own } from "./sanitize-schema.js";

/** One way a schema falls outside the strict subset: where (a JSON pointer) and what. */
export interface StrictSchemaIssue {
  /** JSON pointer to the offending schema, `""` for the root. */
  path: string;
  /** What is wrong there, in words. */
  message: string;
}

type Raw = Record<string, unknown>;

function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function pointer(path: string, token: string): string {
  return `${path}/${token.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

function nonNegativeInteger(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function fits(value: unknown, type: string): boolean {
  if (type === "null") return value === null;
  if (type === "string" || type === "boolean") return typeof value === type;
  if (type === "number") return typeof value === "number" && Number.isFinite(value);
  if (type === "integer") return typeof value === "number" && Number.isInteger(value);
  return false;
}

function walk(
  given: unknown,
  path: string,
  depth: number,
  allowed: readonly string[],
  issues: StrictSchemaIssue[],
): void {
  const report = (message: string) => issues.push({ path, message });
  if (!isObject(given)) {
    report("is not a schema object");
    return;
  }
  // The fields the schema holds: none read through a polluted Object.prototype.
  const schema = fields(given);
  for (const key of Object.keys(schema)) {
    if (!allowed.includes(key)) report(`uses the keyword "${key}", which is outside the subset`);
  }
  if (schema.description !== undefined && typeof schema.description !== "string") {
    report("has a description that is not a string");
  } else if (typeof schema.description === "string" && !schema.description.isWellFormed()) {
    report(
      "has a description holding half a surrogate pair alone (a server reading UTF-8 refuses the request)",
    );
  }
  if (schema.anyOf !== undefined) {
    if (!Array.isArray(schema.anyOf) || schema.anyOf.length < 2)
      report("has an anyOf that is not a list of 2+");
    const others = Object.keys(schema).filter((k) => k !== "anyOf" && k !== "description");
    if (others.length > 0) report(`mixes anyOf with ${others.join(", ")}`);
    if (Array.isArray(schema.anyOf)) {
      schema.anyOf.forEach((branch, i) => {
        walk(branch, pointer(pointer(path, "anyOf"), String(i)), depth, allowed, issues);
      });
    }
    return;
  }
  const types = typeof schema.type === "string" ? [schema.type] : schema.type;
  if (!Array.isArray(types) || types.length === 0) {
    report("has no type");
    return;
  }
  if (!types.every((t) => (TYPE_NAMES as readonly string[]).includes(t as string)))
    report("has an unknown type");
  if (new Set(types).size !== types.length) report("repeats a type");
  const nonNull = types.filter((t) => t !== "null");
  if (nonNull.length > 1) report("has a type list with more than one non-null type");
  if (types.length > 1 && !types.includes("null")) report("has a type list that is not [T, null]");
  const type = nonNull[0] as string | undefined;

  if (schema.enum !== undefined) {
    if (!Array.isArray(schema.enum) || schema.enum.length === 0) report("has an empty or non-list enum");
    else if (!schema.enum.every((v) => types.some((t) => fits(v, t as string)))) {
      report("has an enum value that does not fit its type");
    } else if (schema.enum.some((v) => typeof v === "string" && !v.isWellFormed())) {
      report(
        "has an enum value holding half a surrogate pair alone (a server reading UTF-8 refuses the request)",
      );
    }
  }
  const onlyFor = (keys: string[], owner: string) => {
    for (const key of keys)
      if (schema[key] !== undefined && type !== owner) report(`uses ${key} on a ${type}`);
  };
  onlyFor(["properties", "required", "additionalProperties"], "object");
  onlyFor(["items", "minItems", "maxItems"], "array");
  onlyFor(["pattern", "format"], "string");
  for (const key of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]) {
    if (schema[key] === undefined) continue;
    if (type !== "number" && type !== "integer") report(`uses ${key} on a ${type}`);
    if (typeof schema[key] !== "number" || !Number.isFinite(schema[key])) report(`has a non-numeric ${key}`);
    else if (type === "integer" && Math.abs(schema[key] as number) >= INTEGER_BOUND_LIMIT)
      report(
        `has an integer ${key} of ${INTEGER_BOUND_LIMIT} or more in size, which llama.cpp cannot build a range for`,
      );
    else if (type === "integer" && key !== "multipleOf" && !Number.isInteger(schema[key]))
      report(
        `has a fractional integer ${key} (${schema[key]}), which llama.cpp cuts toward zero (write the whole bound it means)`,
      );
  }
  if (typeof schema.multipleOf === "number" && !(schema.multipleOf > 0))
    report("has a multipleOf that is not > 0");
  // What no value satisfies: a grammar built from it admits nothing (llama.cpp b9749 answers a
  // 500, or for a string's contradictory lengths never answers at all).
  if ((type === "number" || type === "integer") && boundsAdmitNone(type, schema))
    report(`has bounds no ${type} meets (a grammar server cannot answer a schema nothing satisfies)`);
  if (
    nonNegativeInteger(schema.minLength) &&
    nonNegativeInteger(schema.maxLength) &&
    (schema.minLength as number) > (schema.maxLength as number)
  )
    report(
      "has a minLength above its maxLength (llama.cpp b9749 never answers it: its slot spins, and every later request waits)",
    );
  if (
    nonNegativeInteger(schema.minItems) &&
    nonNegativeInteger(schema.maxItems) &&
    (schema.minItems as number) > (schema.maxItems as number)
  )
    report("has a minItems above its maxItems (a grammar server cannot answer a schema nothing satisfies)");
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    // Not the pattern: sanitizeSchema weighs an enum against the source's, and sends the
    // pattern rewritten for a grammar (kept inside the string), which a value may not match.
    const meets = besideTester(schema, false);
    if (schema.enum.some((v) => (typeof v === "number" || typeof v === "string") && !meets(v)))
      report(
        "has an enum value the bounds or multipleOf beside it refuse (a grammar server follows the enum alone)",
      );
  }
  if (schema.pattern !== undefined) {
    if (typeof schema.pattern !== "string" || !isGrammarSafePattern(schema.pattern)) {
      report("has a pattern a grammar builder cannot take (it must be anchored ^…$, with no lookaround)");
    }
  }
  if (schema.format !== undefined && !STRICT_FORMATS.includes(schema.format as string)) {
    report(`has the format ${JSON.stringify(schema.format)}, which is outside the subset`);
  }
  for (const key of ["minItems", "maxItems"]) {
    const value = schema[key];
    if (value !== undefined && (!nonNegativeInteger(value) || (value as number) > REPETITION_LIMIT)) {
      report(`has a ${key} that is not an integer from 0 to ${REPETITION_LIMIT}`);
    }
  }

  if (type === "object") {
    if (depth + 1 > STRICT_MAX_DEPTH) report(`nests objects deeper than ${STRICT_MAX_DEPTH} levels`);
    if (!isObject(schema.properties)) {
      report("is an object without properties");
      return;
    }
    const keys = Object.keys(schema.properties);
    for (const key of keys) {
      if (!key.isWellFormed())
        report(
          `has the property name ${JSON.stringify(key)}, which holds half a surrogate pair alone (a server reading UTF-8 refuses the request)`,
        );
    }
    const required = Array.isArray(schema.required) ? new Set(schema.required) : undefined;
    if (
      !required ||
      (schema.required as unknown[]).length !== keys.length ||
      !keys.every((k) => required.has(k))
    ) {
      report("does not list every property in required");
    }
    if (schema.additionalProperties !== false) report("does not set additionalProperties: false");
    for (const key of keys) {
      walk(schema.properties[key], pointer(pointer(path, "properties"), key), depth + 1, allowed, issues);
    }
  } else if (type === "array") {
    if (schema.items === undefined) report("is an array without items");
    else walk(schema.items, pointer(path, "items"), depth, allowed, issues);
  }
}

/** Options for {@link checkStrictSchema}. */
export interface CheckStrictOptions {
  /** Also report the constraints `relaxSchema` removes (pattern, format, bounds, item counts). */
  relaxed?: boolean | undefined;
}

/**
 * Lists every way a schema falls outside the strict subset `sanitizeSchema` produces: an object
 * root, every object closed (`additionalProperties: false`) with all its properties required,
 * nullable only through `[T, "null"]` type lists or a null `anyOf` branch, no `anyOf` at the root
 * or beside other keywords, no `$ref`, anchored grammar-safe patterns, formats both OpenAI and
 * llama.cpp know, at most 10 levels of objects, integer bounds whole and under 10^15 in size,
 * nothing no value satisfies (bounds, lengths or item counts that contradict, an empty enum, an enum value
 * the bounds or multipleOf beside it refuse), and no property name, description or enum
 * value holding half a surrogate pair alone.
 *
 * Reads any value; never throws. Returns an empty array for a schema inside the subset.
 */
export function checkStrictSchema(schema: unknown, options: CheckStrictOptions = {}): StrictSchemaIssue[] {
  const issues: StrictSchemaIssue[] = [];
  const allowed =
    isObject(options) && own(options, "relaxed")
      ? ["type", "description", "properties", "required", "additionalProperties", "items", "enum", "anyOf"]
      : STRICT_KEYWORDS;
  try {
    if (!isObject(schema) || own(schema, "type") !== "object") {
      issues.push({ path: "", message: 'the root is not an object schema (type: "object")' });
    }
    walk(schema, "", 0, allowed, issues);
  } catch (error) {
    // A schema nested past what the stack holds, or a value JSON cannot hold (a throwing getter,
    // a revoked Proxy): it is outside the subset, and said so rather than thrown.
    const reason =
      error instanceof RangeError ? "it nests too deeply to read" : "part of it cannot be read as JSON";
    issues.push({ path: "", message: `the schema is not readable: ${reason}` });
  }
  return issues;
}
