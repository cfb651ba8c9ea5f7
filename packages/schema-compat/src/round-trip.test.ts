import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonText } from "../../../test-support/json-text.js";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

// The round trip the loop relies on: a call the original schema takes, written the way a model
// answering the sanitized schema writes it (every property present, null for one left out, an
// object of unlisted keys as JSON text), must pass the sanitized schema and come back from
// restoreArguments as the original call — and, written with that object as an object, from
// dropOptionalNulls.

type Raw = Record<string, unknown>;
type Style = "plain" | "ref" | "allOfRef" | "allOf";
type Node =
  | { kind: "leaf"; schema: Raw; values: fc.Arbitrary<unknown> }
  | {
      kind: "object";
      props: Array<{ name: string; node: Node; required: boolean }>;
      closed: boolean;
      style: Style;
    }
  | { kind: "array"; item: Node; style: Style }
  | { kind: "tuple"; items: Node[]; style: Style }
  | { kind: "union"; branches: Node[]; style: Style; key: "anyOf" | "oneOf" };

const leaves: Node[] = [
  { kind: "leaf", schema: { type: "string" }, values: fc.string({ maxLength: 3 }) },
  { kind: "leaf", schema: { type: "integer", minimum: 0 }, values: fc.nat(99) },
  { kind: "leaf", schema: { type: "boolean" }, values: fc.boolean() },
  { kind: "leaf", schema: { enum: ["fast", "slow"] }, values: fc.constantFrom("fast", "slow") },
  { kind: "leaf", schema: { const: "v1" }, values: fc.constant("v1") },
  // Null is a value of these: required wherever they appear, so "absent" and "null" never blur.
  { kind: "leaf", schema: { type: ["string", "null"] }, values: fc.option(fc.string({ maxLength: 3 })) },
  { kind: "leaf", schema: { enum: ["x", null] }, values: fc.constantFrom("x", null) },
  {
    kind: "leaf",
    schema: { anyOf: [{ type: "integer" }, { type: "null" }] },
    values: fc.option(fc.nat(9)),
  },
  // zod's `.nullable()` of an enum (pydantic's Optional[Literal]), and OpenAPI 3.0's forms: its
  // `nullable: true` takes null only where the enum lists it.
  {
    kind: "leaf",
    schema: { anyOf: [{ type: "string", enum: ["a", "b"] }, { type: "null" }] },
    values: fc.constantFrom("a", "b", null),
  },
  {
    kind: "leaf",
    schema: { type: "string", enum: ["a", null], nullable: true },
    values: fc.constantFrom("a", null),
  },
  {
    kind: "leaf",
    schema: { type: "string", enum: ["a", "b"], nullable: true },
    values: fc.constantFrom("a", "b"),
  },
];
// "null" as a value or a type, not the `nullable` keyword (which, beside an enum without null, takes none).
const takesNull = (node: Node) => node.kind === "leaf" && /\bnull\b/.test(JSON.stringify(node.schema));
const styleArb = fc.constantFrom<Style>("plain", "plain", "ref", "allOfRef", "allOf");

const nodeArb: fc.Arbitrary<Node> = fc.letrec<{ node: Node; object: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(...leaves),
    tie("object"),
    fc.record({ kind: fc.constant("array" as const), item: tie("node"), style: styleArb }),
    fc.record({
      kind: fc.constant("tuple" as const),
      items: fc.array(tie("node"), { minLength: 1, maxLength: 3 }),
      style: styleArb,
    }),
    fc.record({
      kind: fc.constant("union" as const),
      branches: fc.array(tie("object"), { minLength: 2, maxLength: 3 }),
      style: styleArb,
      key: fc.constantFrom("anyOf" as const, "oneOf" as const),
    }),
  ),
  object: fc.record({
    kind: fc.constant("object" as const),
    props: fc.uniqueArray(
      fc
        .record({
          name: fc.constantFrom("a", "b", "c", "__proto__", "constructor", "", "x/y", "~1"),
          node: tie("node"),
          required: fc.boolean(),
        })
        .map((p) => ({ ...p, required: p.required || takesNull(p.node) })),
      { selector: (p) => p.name, maxLength: 4 },
    ),
    closed: fc.boolean(),
    style: styleArb,
  }),
})).node;

/** Gives each union branch its own property names, as a tagged union's variants have. */
function tagged(node: Node, prefix = ""): Node {
  switch (node.kind) {
    case "leaf":
      return node;
    case "array":
      return { ...node, item: tagged(node.item) };
    case "tuple":
      return { ...node, items: node.items.map((i) => tagged(i)) };
    case "object":
      return {
        ...node,
        props: node.props.map((p) => ({ ...p, name: `${prefix}${p.name}`, node: tagged(p.node) })),
      };
    case "union":
      return { ...node, branches: node.branches.map((b, i) => tagged(b, `${prefix}u${i}_`)) };
  }
}

function schemaOf(node: Node, defs: Raw): unknown {
  if (node.kind === "leaf") return node.schema;
  let schema: Raw;
  if (node.kind === "array") schema = { type: "array", items: schemaOf(node.item, defs) };
  else if (node.kind === "tuple")
    schema = { type: "array", prefixItems: node.items.map((i) => schemaOf(i, defs)), items: false };
  else if (node.kind === "union") schema = { [node.key]: node.branches.map((b) => schemaOf(b, defs)) };
  else {
    const properties: Raw = {};
    for (const p of node.props)
      Object.defineProperty(properties, p.name, { value: schemaOf(p.node, defs), enumerable: true });
    schema = {
      type: "object",
      properties,
      required: node.props.filter((p) => p.required).map((p) => p.name),
    };
    if (node.closed) schema.additionalProperties = false;
  }
  const name = `d${Object.keys(defs).length}`;
  switch (node.style) {
    case "plain":
      return schema;
    case "allOf":
      return { allOf: [schema], description: "Wrapped." };
    case "ref":
      defs[name] = schema;
      return { $ref: `#/$defs/${name}` };
    case "allOfRef":
      defs[name] = schema;
      return { allOf: [{ $ref: `#/$defs/${name}` }], description: "Pydantic v1's field." };
  }
}

const set = (target: Raw, key: string, value: unknown) =>
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });

interface Written {
  /** The call the original schema takes. */
  call: unknown;
  /** As a model answering the strict schema writes it. */
  strict: unknown;
  /** The same, with an object of unlisted keys written as the object rather than JSON text. */
  plain: unknown;
}

/** A call the original takes, and the same call as a model answering the strict schema writes it. */
function callArb(node: Node, root = true): fc.Arbitrary<Written> {
  const each = (items: Written[]) => ({
    call: items.map((i) => i.call),
    strict: items.map((i) => i.strict),
    plain: items.map((i) => i.plain),
  });
  switch (node.kind) {
    case "leaf":
      return node.values.map((v) => ({ call: v, strict: v, plain: v }));
    case "array":
      return fc.array(callArb(node.item, false), { maxLength: 3 }).map(each);
    case "tuple":
      return fc.tuple(...node.items.map((i) => callArb(i, false))).map(each);
    case "union":
      return fc.oneof(...node.branches.map((b) => callArb(b, root)));
    case "object":
      return fc
        .tuple(
          ...node.props.map((p) =>
            p.required ? callArb(p.node, false) : fc.option(callArb(p.node, false), { nil: undefined }),
          ),
        )
        .map((values) => {
          const call: Raw = {};
          const strict: Raw = {};
          const plain: Raw = {};
          node.props.forEach((p, i) => {
            const v = values[i];
            if (v) set(call, p.name, v.call);
            set(strict, p.name, v ? v.strict : null);
            set(plain, p.name, v ? v.plain : null);
          });
          // Below the root, an open object with no properties is asked for as JSON text.
          const text = !root && node.props.length === 0 && !node.closed;
          return { call, strict: text ? JSON.stringify(call) : strict, plain };
        });
  }
}

/** Whether a value passes a schema in the strict subset (types, enum, anyOf, closed objects, items). */
function passes(schema: Raw, value: unknown): boolean {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Raw[]).some((b) => passes(b, value));
  const types = (typeof schema.type === "string" ? [schema.type] : schema.type) as string[];
  const kind =
    value === null
      ? "null"
      : Array.isArray(value)
        ? "array"
        : Number.isInteger(value)
          ? "integer"
          : typeof value;
  if (!types.some((t) => t === kind || (t === "number" && kind === "integer"))) return false;
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return false;
  if (kind === "array") return (value as unknown[]).every((v) => passes(schema.items as Raw, v));
  if (kind === "object") {
    const props = schema.properties as Raw;
    const v = value as Raw;
    return (
      Object.keys(v).every((k) => Object.hasOwn(props, k) && passes(props[k] as Raw, v[k])) &&
      (schema.required as string[]).every((k) => Object.hasOwn(v, k))
    );
  }
  return true;
}

const rootArb = fc
  .oneof(
    nodeArb.filter((n) => n.kind === "object"),
    fc
      .array(
        nodeArb.filter((n) => n.kind === "object"),
        { minLength: 2, maxLength: 3 },
      )
      // A field another alternative leaves out is written null: where null is also one of its
      // values, null and absent both fit the original, and either answer is right.
      .filter((branches) =>
        branches.every((b) => b.kind !== "object" || !b.props.some((p) => takesNull(p.node))),
      )
      .map((branches): Node => ({ kind: "union", branches, style: "plain", key: "anyOf" })),
  )
  .map((n) => tagged(n));

describe("the strict round trip", { timeout: propertyTimeout(60_000) }, () => {
  it("every call the original schema takes passes the sanitized schema as the model writes it, and restoreArguments gives it back", () => {
    let textWritten = 0;
    fc.assert(
      fc.property(
        rootArb.chain((root) => {
          const defs: Raw = {};
          const schema = schemaOf(root, defs) as Raw;
          const full = Object.keys(defs).length > 0 ? { ...schema, $defs: defs } : schema;
          let calls = callArb(root);
          if (root.kind === "union") {
            // sanitizeSchema merges a root union into one object: the other alternatives' fields are null.
            const names = root.branches.flatMap((b) =>
              b.kind === "object" ? b.props.map((p) => p.name) : [],
            );
            const merged = (written: unknown) => {
              const all: Raw = {};
              for (const n of names)
                set(all, n, Object.hasOwn(written as Raw, n) ? (written as Raw)[n] : null);
              return all;
            };
            calls = calls.map(({ call, strict, plain }) => ({
              call,
              strict: merged(strict),
              plain: merged(plain),
            }));
          }
          return fc.tuple(fc.constant(full), calls);
        }),
        ([schema, { call, strict, plain }]) => {
          const sanitized = sanitizeSchema(schema);
          expect(passes(sanitized, strict), JSON.stringify(sanitized)).toBe(true);
          expect(restoreArguments(strict, schema)).toEqual(call);
          expect(dropOptionalNulls(plain, schema)).toEqual(call);
          if (JSON.stringify(strict) !== JSON.stringify(plain)) textWritten++;
        },
      ),
      propertyRuns(1000, { seed: 2026 }),
    );
    // Objects of unlisted keys were reached and written as JSON text, not only listed properties.
    expect(textWritten).toBeGreaterThan(50);
  });
});

// Deep and recursive enough to reach JSON text: a recursive tree (expanded `recursionLimit` times,
// then asked for as JSON text), objects nested past `maxDepth`, and a value with no type. The model
// writes each such value as JSON text; restoreArguments must hand the tool the original call.

interface TreeCall {
  name: string;
  kids?: TreeCall[];
  next?: TreeCall;
  meta?: { n: number; tag?: string };
}
const treeArb = fc.letrec<{ tree: TreeCall }>((tie) => ({
  tree: fc.record(
    {
      name: fc.string({ maxLength: 3 }),
      kids: fc.array(tie("tree"), { maxLength: 2 }),
      next: tie("tree"),
      meta: fc.record({ n: fc.nat(9), tag: fc.string({ maxLength: 2 }) }, { requiredKeys: ["n"] }),
    },
    { requiredKeys: ["name"] },
  ),
})).tree;
// A string under "any value" that reads as JSON text of an object or array would be parsed: not one a model means.
const anyArb = fc.oneof(
  fc.stringMatching(/^[a-z ]{0,4}$/),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.dictionary(fc.constantFrom("a", "b"), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 2 }),
);

function treeSchema(wrap: boolean): Raw {
  const ref = (target: string) =>
    wrap ? { allOf: [{ $ref: target }], description: "Wrapped." } : { $ref: target };
  return {
    type: "object",
    properties: { tree: ref("#/$defs/node"), extra: { description: "Anything." } },
    required: ["tree", "extra"],
    $defs: {
      node: {
        type: "object",
        properties: {
          name: { type: "string" },
          kids: { type: "array", items: ref("#/$defs/node") },
          next: { oneOf: [ref("#/$defs/node")] },
          meta: {
            type: "object",
            properties: { n: { type: "integer" }, tag: { type: "string" } },
            required: ["n"],
          },
        },
        required: ["name"],
      },
    },
  };
}

/** The call as a model answering the sanitized schema writes it: nulls for absent fields, JSON text where asked. */
function writeStrict(value: unknown, node: Raw): unknown {
  const description = typeof node.description === "string" ? node.description : "";
  if (description.includes("Give this value as JSON text.")) return jsonText(value);
  if (description.includes("give an object or an array as JSON text")) {
    return typeof value === "object" && value !== null ? jsonText(value) : value;
  }
  if (Array.isArray(value)) return value.map((item) => writeStrict(item, node.items as Raw));
  if (typeof value !== "object" || value === null) return value;
  const out: Raw = {};
  for (const [key, sub] of Object.entries(node.properties as Raw)) {
    set(out, key, Object.hasOwn(value, key) ? writeStrict((value as Raw)[key], sub as Raw) : null);
  }
  return out;
}

describe("the strict round trip through JSON text", { timeout: propertyTimeout(60_000) }, () => {
  it("every call the original takes, written with JSON text where the sanitized schema asks for it, comes back from restoreArguments as the original call", () => {
    let textWritten = 0;
    fc.assert(
      fc.property(
        fc.record({
          wrap: fc.boolean(),
          recursionLimit: fc.integer({ min: 1, max: 3 }),
          maxDepth: fc.integer({ min: 2, max: 6 }),
          call: fc.record({ tree: treeArb, extra: anyArb }),
        }),
        ({ wrap, recursionLimit, maxDepth, call }) => {
          const schema = treeSchema(wrap);
          const options = { recursionLimit, maxDepth };
          const sanitized = sanitizeSchema(schema, options);
          const strict = writeStrict(call, sanitized);
          if (JSON.stringify(strict).includes('\\"')) textWritten++;
          expect(passes(sanitized, strict), JSON.stringify(strict)).toBe(true);
          expect(restoreArguments(strict, schema, options)).toEqual(call);
        },
      ),
      {
        ...propertyRuns(500, { seed: 2026 }),
        // -0 in a value given as JSON text (shrunk from seed -1325616714 at 5,000 runs).
        examples: [
          [{ wrap: false, recursionLimit: 1, maxDepth: 2, call: { tree: { name: "" }, extra: { a: -0 } } }],
        ],
      },
    );
    // The property reached JSON text, not only shallow calls.
    expect(textWritten).toBeGreaterThan(100);
  });

  it("the calls the first round trip generates, written without JSON text, come back from restoreArguments as from dropOptionalNulls", () => {
    fc.assert(
      fc.property(
        rootArb.chain((root) => {
          const defs: Raw = {};
          const schema = schemaOf(root, defs) as Raw;
          return fc.tuple(
            fc.constant(Object.keys(defs).length > 0 ? { ...schema, $defs: defs } : schema),
            callArb(root),
          );
        }),
        ([schema, { plain }]) => {
          expect(restoreArguments(plain, schema)).toEqual(dropOptionalNulls(plain, schema));
        },
      ),
      propertyRuns(300, { seed: 2026 }),
    );
  });
});
