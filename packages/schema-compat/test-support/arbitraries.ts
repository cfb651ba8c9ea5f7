// fast-check generators shared by this package's property tests (not part of the build).
import fc from "fast-check";

const keyArb = fc.oneof(
  fc.constantFrom("path", "name", "count", "items", "type", "pattern", "__proto__", "a b", "x/y", "~0"),
  fc.string({ maxLength: 6 }),
);

const typeName = fc.constantFrom(
  "string",
  "number",
  "integer",
  "boolean",
  "object",
  "array",
  "null",
  "bogus",
);

const patternArb = fc.constantFrom(
  "abc",
  "^abc$",
  "^[a-z]+$",
  "^\\d{3}-\\d{4}$",
  "(?=.*x)",
  "^(?!foo).*$",
  "(a)\\1",
  "^a{0,10000}$",
  "\\S",
  "^(?:a|b)+$",
  "[",
  "^.*$",
  "",
  "^$",
  "a|b",
  "\\bword\\b",
  "^[\\w.-]+@[\\w.-]+$",
);

const formatArb = fc.constantFrom(
  "date-time",
  "date",
  "time",
  "uuid",
  "email",
  "uri",
  "hostname",
  "ipv4",
  "custom",
);

const scalar = fc.oneof(
  fc.string({ maxLength: 5 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);

const refArb = fc.constantFrom(
  "#",
  "#/$defs/a",
  "#/$defs/b",
  "#/definitions/c",
  "#/properties/x",
  "#/$defs/missing",
  "https://example.com/schema.json",
  "#anchor",
);

/** Arbitrary JSON Schemas of the kinds MCP servers publish, and the broken kinds they also do. */
export const schemaArb = fc.letrec((tie) => ({
  schema: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    tie("leaf"),
    tie("object"),
    tie("array"),
    tie("combinator"),
    tie("ref"),
    fc.constant(true),
    fc.constant(false),
    fc.jsonValue({ maxDepth: 2 }),
  ),
  leaf: fc.record(
    {
      type: fc.oneof(typeName, fc.array(typeName, { maxLength: 3 })),
      description: fc.oneof(fc.string({ maxLength: 12 }), fc.integer()),
      title: fc.string({ maxLength: 8 }),
      pattern: patternArb,
      format: formatArb,
      enum: fc.array(fc.oneof(scalar, fc.jsonValue({ maxDepth: 1 })), { maxLength: 4 }),
      const: fc.oneof(scalar, fc.jsonValue({ maxDepth: 1 })),
      minimum: fc.oneof(fc.integer(), fc.constant(Number.MAX_SAFE_INTEGER)),
      maximum: fc.integer(),
      exclusiveMinimum: fc.oneof(fc.boolean(), fc.integer()),
      multipleOf: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.double({ min: 0.1, max: 3, noNaN: true })),
      minLength: fc.integer({ min: -1, max: 20 }),
      maxLength: fc.integer({ min: 0, max: 20_000 }),
      nullable: fc.boolean(),
      default: fc.jsonValue({ maxDepth: 1 }),
      examples: fc.array(scalar, { maxLength: 2 }),
    },
    { requiredKeys: [] },
  ),
  object: fc.record(
    {
      type: fc.constantFrom("object", ["object", "null"], undefined),
      properties: fc.dictionary(keyArb, tie("schema"), { maxKeys: 4 }),
      required: fc.array(fc.oneof(keyArb, fc.integer()), { maxLength: 4 }),
      additionalProperties: fc.oneof(fc.boolean(), tie("schema")),
      patternProperties: fc.dictionary(fc.constantFrom("^x-", "."), tie("schema"), { maxKeys: 1 }),
      minProperties: fc.nat(3),
      description: fc.string({ maxLength: 10 }),
    },
    { requiredKeys: [] },
  ),
  array: fc.record(
    {
      type: fc.constantFrom("array", ["array", "null"], undefined),
      items: fc.oneof(tie("schema"), fc.array(tie("schema"), { maxLength: 3 })),
      prefixItems: fc.array(tie("schema"), { maxLength: 2 }),
      additionalItems: fc.boolean(),
      minItems: fc.oneof(fc.nat(5), fc.constant(5000), fc.constant(-1)),
      maxItems: fc.oneof(fc.nat(5), fc.constant(100_000)),
      uniqueItems: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  combinator: fc.record(
    {
      anyOf: fc.array(tie("schema"), { maxLength: 3 }),
      oneOf: fc.array(tie("schema"), { maxLength: 3 }),
      allOf: fc.array(tie("schema"), { maxLength: 3 }),
      not: tie("schema"),
      if: tie("schema"),
      // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword is called then.
      then: tie("schema"),
      type: typeName,
      properties: fc.dictionary(keyArb, tie("schema"), { maxKeys: 2 }),
      description: fc.string({ maxLength: 10 }),
    },
    { requiredKeys: [] },
  ),
  ref: fc.record({ $ref: refArb, description: fc.string({ maxLength: 8 }) }, { requiredKeys: ["$ref"] }),
}));

/** A whole document: a root schema with `$defs` and `definitions` its `$ref`s can point into. */
export const documentArb = fc
  .tuple(schemaArb.schema, schemaArb.schema, schemaArb.schema, schemaArb.schema)
  .map(([root, a, b, c]) =>
    typeof root === "object" && root !== null && !Array.isArray(root)
      ? { ...root, $defs: { a, b }, definitions: { c } }
      : root,
  );
