import { isDeepStrictEqual } from "node:util";
import { runAgentLoop } from "@loopwright/loop";
import {
  checkStrictSchema,
  type JsonSchema,
  relaxSchema,
  restoreArguments,
  type SanitizeOptions,
  sanitizeSchema,
} from "@loopwright/schema-compat";
import { startServer } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { jsonText } from "../../../test-support/json-text.js";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { createToolset, defineTool, type Tool, ToolInputError } from "./index.js";

// A model of the whole way a typed tool's arguments travel: a random zod object schema is declared
// (`defineTool`), sanitized for a server's dialect (`sanitizeSchema` / `relaxSchema` of
// schema-compat), a value valid for the zod schema is written as a model obeying the SANITIZED
// schema writes it (every property present, null for one left out, JSON text where asked), sent as
// JSON text, read back (`restoreArguments`) and checked by the toolset's `dispatch`. `execute` must
// get exactly what zod makes of the value (defaults applied); a value the sanitized schema lets
// through but zod refuses must be refused with a message naming the argument. Directly for the
// three dialects (strict, relaxed, strict with a low recursionLimit and maxDepth), and through
// `runAgentLoop` against the testkit's llama.cpp server for the strict one, the real path: the
// request's declaration, the streamed arguments, the loop's parse and restore, then `dispatch`.
// Where a property is both optional and nullable the strict form can only say null, and a null is
// a value the tool takes: such a null may reach `execute` as null (see `reading`).

type Raw = { [key: string]: unknown };
type Path = (string | number)[];
type Dialect = "strict" | "relaxed" | "shallow";

/** A scalar zod schema, with values it takes and values each dialect lets through that it refuses. */
interface Leaf {
  name: string;
  zod: () => z.ZodType;
  valid: fc.Arbitrary<unknown>;
  /** A value it takes, for `.default(…)`. */
  sample: unknown;
  /** Values the strict form still takes (the keyword went into the description) but zod refuses. */
  strictBad?: fc.Arbitrary<unknown>;
  /** The same for the relaxed form, where every bound, pattern and format is description only. */
  relaxedBad?: fc.Arbitrary<unknown>;
}

// Strings a grammar server can put inside a pattern-bound string: no `"` or `\` (the sanitizer keeps
// a pattern from matching them, as documented, so the string cannot end mid-value).
const plain = fc.string({ maxLength: 4, unit: fc.constantFrom("a", "b", "z", "0", " ", "-", "é") });
// Any double JSON can carry, -0 among them (fc.double draws it too, but seldom): a model may write
// `-0`, which JSON.parse reads as -0 and zod takes as it is.
const number = fc.oneof(fc.constant(-0), fc.double({ noNaN: true, noDefaultInfinity: true }));

const catalog: Leaf[] = [
  { name: "string", zod: () => z.string(), valid: fc.string({ maxLength: 4 }), sample: "s" },
  {
    name: "length",
    zod: () => z.string().min(2).max(4),
    valid: fc.string({ minLength: 2, maxLength: 4 }),
    sample: "ab",
    strictBad: fc.constantFrom("", "a", "abcdef"),
    relaxedBad: fc.constantFrom("", "a", "abcdef"),
  },
  {
    name: "anchored",
    zod: () => z.string().regex(/^[a-z]+$/),
    valid: fc.stringMatching(/^[a-z]{1,4}$/),
    sample: "abc",
    relaxedBad: fc.constantFrom("", "ABC", "a b"),
  },
  {
    name: "unanchored",
    zod: () => z.string().regex(/ab/),
    valid: fc.tuple(plain, plain).map(([a, b]) => `${a}ab${b}`),
    sample: "ab",
    relaxedBad: fc.constantFrom("", "ba", "a-b"),
  },
  {
    name: "email",
    zod: () => z.email(),
    valid: fc.constantFrom("a@b.co", "first.last@example.org", "x+y@mail.example.com"),
    sample: "a@b.co",
    relaxedBad: fc.constantFrom("nope", "a@b", "@b.co"),
  },
  {
    name: "uuid",
    zod: () => z.uuid(),
    valid: fc.constantFrom("0b8f7c2e-4d1a-4c3b-9a2e-1f0e9d8c7b6a", "00000000-0000-0000-0000-000000000000"),
    sample: "0b8f7c2e-4d1a-4c3b-9a2e-1f0e9d8c7b6a",
    relaxedBad: fc.constantFrom("nope", "0b8f7c2e"),
  },
  {
    name: "url",
    zod: () => z.url(),
    valid: fc.constantFrom("https://example.org/a", "http://x.io"),
    sample: "https://example.org",
    strictBad: fc.constantFrom("not a url", ""),
    relaxedBad: fc.constantFrom("not a url", ""),
  },
  {
    name: "datetime",
    zod: () => z.iso.datetime(),
    valid: fc.constantFrom("2024-02-29T12:00:00Z", "1999-12-31T23:59:59.5Z"),
    sample: "2024-02-29T12:00:00Z",
    relaxedBad: fc.constantFrom("yesterday", "2023-02-29T12:00:00Z"),
  },
  {
    name: "date",
    zod: () => z.iso.date(),
    valid: fc.constantFrom("2024-01-31", "2000-02-29"),
    sample: "2024-01-31",
    relaxedBad: fc.constantFrom("2024-13-01", "today"),
  },
  {
    name: "bounded int",
    zod: () => z.number().int().min(-5).max(5),
    valid: fc.integer({ min: -5, max: 5 }),
    sample: 0,
    relaxedBad: fc.constantFrom(6, -6, 99),
  },
  {
    name: "int",
    zod: () => z.int(),
    valid: fc.integer(),
    sample: 7,
    // zod's safe-integer bounds are dropped from the declaration (an integer bound of 10^15 or more).
    strictBad: fc.constantFrom(1e16, -1e16),
    relaxedBad: fc.constantFrom(1e16, 2.5),
  },
  {
    name: "open interval",
    zod: () => z.number().gt(0).lt(1),
    valid: fc.double({ min: 0.001, max: 0.999, noNaN: true }),
    sample: 0.5,
    relaxedBad: fc.constantFrom(0, 1, 5),
  },
  {
    name: "halves",
    zod: () => z.number().multipleOf(0.5),
    valid: fc.oneof(
      fc.integer({ min: -20, max: 20 }).map((n) => n / 2),
      fc.constant(-0),
    ),
    sample: 1.5,
    relaxedBad: fc.constantFrom(0.3, 1.25),
  },
  { name: "boolean", zod: () => z.boolean().describe("A flag."), valid: fc.boolean(), sample: true },
  {
    name: "enum",
    zod: () => z.enum(["fast", "slow"]).describe("How fast."),
    valid: fc.constantFrom("fast", "slow"),
    sample: "slow",
  },
  { name: "string literal", zod: () => z.literal("v1"), valid: fc.constant("v1"), sample: "v1" },
  { name: "number literal", zod: () => z.literal(3), valid: fc.constant(3), sample: 3 },
  {
    name: "scalar union",
    zod: () => z.union([z.string(), z.number()]),
    valid: fc.oneof(plain, fc.integer({ min: -99, max: 99 })),
    sample: 1,
  },
  {
    name: "any",
    zod: () => z.unknown(),
    // A string that is itself JSON text of an object or array reads as that object (documented).
    // Doubles draw -0 (and 0, ±tiny, ±huge), written "-0" as a model may (see `jsonText`).
    valid: fc.oneof(
      plain,
      fc.integer(),
      number,
      fc.boolean(),
      fc.constant(null),
      fc.dictionary(fc.constantFrom("k", "l"), fc.oneof(fc.integer(), number), { maxKeys: 2 }),
      fc.array(fc.oneof(fc.integer(), number), { maxLength: 2 }),
    ),
    sample: "x",
  },
];

// Counterexamples print a leaf by its name, not its arbitraries.
const leaves = catalog.map((leaf) => Object.assign(leaf, { [fc.toStringMethod]: () => leaf.name }));

type Mod = "required" | "optional" | "nullable" | "optNull" | "nullOpt" | "default" | "nullDefault";

interface Prop {
  name: string;
  spec: Spec;
  mod: Mod;
  /** Described with `.describe(…)` after the modifier (zod's description lands beside the union it makes). */
  described?: boolean;
}

type Spec =
  | { kind: "leaf"; leaf: Leaf }
  | { kind: "object"; props: Prop[]; shape: "plain" | "strict" | "loose" }
  | { kind: "array"; item: Spec; min: number | undefined; max: number | undefined }
  | { kind: "record"; value: Spec }
  | { kind: "tagged"; branches: Prop[][] }
  | { kind: "union"; branches: Prop[][]; shared?: boolean }
  | { kind: "tree" };

const mods: Mod[] = ["required", "optional", "nullable", "optNull", "nullOpt", "default", "nullDefault"];

const specArb = fc.letrec<{ spec: Spec; props: Prop[] }>((tie) => ({
  spec: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(...leaves).map((leaf): Spec => ({ kind: "leaf", leaf })),
    fc.record({
      kind: fc.constant("object" as const),
      props: tie("props"),
      shape: fc.constantFrom("plain" as const, "strict" as const, "loose" as const),
    }),
    fc
      .record({
        kind: fc.constant("array" as const),
        item: tie("spec"),
        min: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
        extra: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
      })
      .map(
        ({ kind, item, min, extra }): Spec => ({
          kind,
          item,
          min,
          max: extra === undefined ? undefined : (min ?? 0) + extra + 1,
        }),
      ),
    fc.record({ kind: fc.constant("record" as const), value: tie("spec") }),
    fc.record({
      kind: fc.constant("tagged" as const),
      branches: fc.array(tie("props"), { minLength: 2, maxLength: 3 }),
    }),
    // A plain union's variants name their fields apart (`u0_a`, `u1_a`): where two variants share a
    // field, zod's first-match union and a model's choice of variant can part ways on what a null
    // there means (a discriminated union, "tagged", shares names freely).
    fc
      .record({
        kind: fc.constant("union" as const),
        branches: fc.array(tie("props"), { minLength: 2, maxLength: 3 }),
      })
      .map(
        ({ kind, branches }): Spec => ({
          kind,
          branches: branches.map((props, i) =>
            props.map((prop) => ({ ...prop, name: `u${i}_${prop.name}` })),
          ),
        }),
      ),
    // Variants that share field names (z.union of overlapping objects): a call may then be read by
    // either, a null as a field left out by one or a value of the other (see `reading`).
    fc.record({
      kind: fc.constant("union" as const),
      branches: fc.array(tie("props"), { minLength: 2, maxLength: 3 }),
      shared: fc.constant(true),
    }),
    fc.constant<Spec>({ kind: "tree" }),
  ),
  props: fc.uniqueArray(
    fc.record({
      // `constructor` and `toString`: parameters named after an `Object.prototype` member.
      name: fc.constantFrom("a", "b", "c", "d", "constructor", "toString"),
      spec: tie("spec"),
      mod: fc.constantFrom(...mods),
      described: fc.boolean(),
    }),
    { selector: (p) => p.name, maxLength: 3 },
  ),
})).spec;

const rootArb = fc.uniqueArray(
  fc.record({
    name: fc.constantFrom("a", "b", "c", "d", "e"),
    spec: specArb,
    mod: fc.constantFrom(...mods),
    described: fc.boolean(),
  }),
  { selector: (p) => p.name, minLength: 1, maxLength: 4 },
);

interface Tree {
  name: string;
  kids?: Tree[];
  next?: Tree | null;
}
const TreeSchema: z.ZodType<Tree> = z.lazy(() =>
  z.object({
    name: z.string(),
    kids: z.array(TreeSchema).optional(),
    next: TreeSchema.nullable().optional().describe("The next sibling."),
  }),
);
const treeArb = fc.letrec<{ tree: Tree; next: Tree | null }>((tie) => ({
  tree: fc.record(
    { name: plain, kids: fc.array(tie("tree"), { maxLength: 2 }), next: tie("next") },
    { requiredKeys: ["name"] },
  ),
  next: fc.oneof({ depthSize: "small" }, fc.constant(null), tie("tree")),
})).tree;

function withMod(schema: z.ZodType, prop: Prop): z.ZodType {
  const modified = modify(schema, prop);
  return prop.described ? modified.describe(`The ${prop.name} field.`) : modified;
}

function modify(schema: z.ZodType, prop: Prop): z.ZodType {
  switch (prop.mod) {
    case "required":
      return schema;
    case "optional":
      return schema.optional();
    case "nullable":
      return schema.nullable();
    case "optNull":
      return schema.optional().nullable();
    case "nullOpt":
      return schema.nullable().optional();
    case "default":
      return schema.default(sampleOf(prop.spec) as never);
    case "nullDefault":
      return schema.nullable().default(null);
  }
}

function objectOf(props: Prop[], shape: "plain" | "strict" | "loose" = "plain", tag?: string) {
  const shapeOf: { [name: string]: z.ZodType } = {};
  if (tag !== undefined) shapeOf.kind = z.literal(tag);
  for (const prop of props) shapeOf[prop.name] = withMod(zodOf(prop.spec), prop);
  return shape === "strict"
    ? z.strictObject(shapeOf)
    : shape === "loose"
      ? z.looseObject(shapeOf)
      : z.object(shapeOf);
}

function zodOf(spec: Spec): z.ZodType {
  switch (spec.kind) {
    case "leaf":
      return spec.leaf.zod();
    case "object":
      return objectOf(spec.props, spec.shape);
    case "array": {
      let array = z.array(zodOf(spec.item));
      if (spec.min !== undefined) array = array.min(spec.min);
      if (spec.max !== undefined) array = array.max(spec.max);
      return array;
    }
    case "record":
      return z.record(z.string(), zodOf(spec.value));
    case "tagged":
      return z.discriminatedUnion(
        "kind",
        spec.branches.map((props, i) => objectOf(props, "plain", `k${i}`)) as never,
      );
    case "union":
      return z.union(spec.branches.map((props) => objectOf(props)));
    case "tree":
      return TreeSchema;
  }
}

function sampleOf(spec: Spec): unknown {
  switch (spec.kind) {
    case "leaf":
      return spec.leaf.sample;
    case "object":
    case "union":
      return sampleProps(spec.kind === "object" ? spec.props : (spec.branches[0] as Prop[]));
    case "tagged":
      return { kind: "k0", ...sampleProps(spec.branches[0] as Prop[]) };
    case "array":
      return Array.from({ length: spec.min ?? 0 }, () => sampleOf(spec.item));
    case "record":
      return {};
    case "tree":
      return { name: "root" };
  }
}

function sampleProps(props: Prop[]): Raw {
  const out: Raw = {};
  for (const prop of props) if (prop.mod === "required") out[prop.name] = sampleOf(prop.spec);
  return out;
}

const ABSENT = Symbol("absent");

function propsArb(props: Prop[], tag?: string): fc.Arbitrary<Raw> {
  return fc
    .tuple(...props.map((prop) => propArb(prop, validArb(prop.spec))))
    .map((values) => assemble(props, values, tag));
}

function assemble(props: Prop[], values: unknown[], tag?: string): Raw {
  const out: Raw = {};
  if (tag !== undefined) out.kind = tag;
  props.forEach((prop, i) => {
    if (values[i] !== ABSENT) out[prop.name] = values[i];
  });
  return out;
}

/**
 * Values a property takes as zod reads it: the value, null where nullable, absent where optional
 * and not nullable. Where both are allowed, the declaration can only say null (a strict schema lists
 * every property), and the null is a value the tool takes: a model cannot write "absent" there.
 */
function propArb(prop: Prop, value: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const nullable = ["nullable", "optNull", "nullOpt", "nullDefault"].includes(prop.mod);
  const optional = prop.mod !== "required" && prop.mod !== "nullable";
  const choices: fc.Arbitrary<unknown>[] = [value];
  if (nullable) choices.push(fc.constant(null));
  else if (optional) choices.push(fc.constant(ABSENT));
  return fc.oneof(...choices);
}

function validArb(spec: Spec): fc.Arbitrary<unknown> {
  switch (spec.kind) {
    case "leaf":
      return spec.leaf.valid;
    case "object":
      return propsArb(spec.props);
    case "array":
      return fc.array(validArb(spec.item), { minLength: spec.min ?? 0, maxLength: spec.max ?? 3 });
    case "record":
      return fc.dictionary(fc.constantFrom("k", "l", "m"), validArb(spec.value), { maxKeys: 2 });
    case "tagged":
      return fc.oneof(...spec.branches.map((props, i) => propsArb(props, `k${i}`)));
    case "union":
      return fc.oneof(...spec.branches.map((props) => propsArb(props)));
    case "tree":
      return treeArb;
  }
}

/** A value the dialect's declaration lets through at one place that zod refuses, and that place. */
interface Bad {
  value: unknown;
  path: Path;
}

function badLeaf(leaf: Leaf, dialect: Dialect): fc.Arbitrary<unknown> | undefined {
  return dialect === "relaxed" ? leaf.relaxedBad : leaf.strictBad;
}

function badArb(spec: Spec, dialect: Dialect): fc.Arbitrary<Bad> | undefined {
  switch (spec.kind) {
    case "leaf":
      return badLeaf(spec.leaf, dialect)?.map((value) => ({ value, path: [] }));
    case "object":
      return badPropsArb(spec.props, dialect);
    case "tagged": {
      const options = spec.branches
        .map((props, i) => badPropsArb(props, dialect, `k${i}`))
        .filter((arb) => arb !== undefined);
      return options.length === 0 ? undefined : fc.oneof(...options);
    }
    case "array": {
      const item = badArb(spec.item, dialect);
      const min = spec.min ?? 0;
      const max = spec.max;
      const counts =
        dialect === "relaxed" && (min > 0 || max !== undefined)
          ? // The relaxed form leaves item counts to the description.
            fc
              .constantFrom(...[min > 0 ? min - 1 : undefined, max === undefined ? undefined : max + 1])
              .filter((n) => n !== undefined)
              .chain((n) =>
                fc
                  .array(validArb(spec.item), { minLength: n, maxLength: n })
                  .map((value): Bad => ({ value, path: [] })),
              )
          : undefined;
      const inItem =
        item === undefined
          ? undefined
          : fc
              .tuple(
                item,
                fc.array(validArb(spec.item), {
                  minLength: Math.max(min - 1, 0),
                  maxLength: Math.max(min - 1, 0),
                }),
              )
              .map(([bad, rest]): Bad => ({ value: [bad.value, ...rest], path: [0, ...bad.path] }));
      const options = [counts, inItem].filter((arb) => arb !== undefined);
      return options.length === 0 ? undefined : fc.oneof(...options);
    }
    case "record": {
      // A map is asked for as JSON text: any text goes through, so a value of another kind is refused by zod alone.
      const wrong =
        spec.value.kind === "leaf" && spec.value.leaf.name === "any"
          ? undefined
          : spec.value.kind === "leaf" && spec.value.leaf.name === "boolean"
            ? "x"
            : true;
      const options = [
        badArb(spec.value, dialect)?.map((bad) => ({ value: { k: bad.value }, path: ["k", ...bad.path] })),
        wrong === undefined ? undefined : fc.constant<Bad>({ value: { k: wrong }, path: ["k"] }),
      ].filter((arb) => arb !== undefined);
      return options.length === 0 ? undefined : fc.oneof(...options);
    }
    default:
      // A union of objects names the union, not the branch's field: not modelled here.
      return undefined;
  }
}

function badPropsArb(props: Prop[], dialect: Dialect, tag?: string): fc.Arbitrary<Bad> | undefined {
  const bads = props.map((prop) => badArb(prop.spec, dialect));
  const at = bads.flatMap((bad, i) => (bad === undefined ? [] : [i]));
  if (at.length === 0) return undefined;
  return fc.constantFrom(...at).chain((i) =>
    fc
      .tuple(
        bads[i] as fc.Arbitrary<Bad>,
        fc.tuple(...props.map((prop) => propArb(prop, validArb(prop.spec)))),
      )
      .map(([bad, values]): Bad => {
        values[i] = bad.value;
        return { value: assemble(props, values, tag), path: [(props[i] as Prop).name, ...bad.path] };
      }),
  );
}

// ---- the sanitized declaration, as a model obeying it reads it -------------------------------

const TEXT = "Give this value as JSON text.";
const ANY_TEXT = "give an object or an array as JSON text";

function typesOf(node: Raw): string[] {
  return typeof node.type === "string"
    ? [node.type]
    : Array.isArray(node.type)
      ? (node.type as string[])
      : [];
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** Whether `value` meets `node`, a schema in the strict (or relaxed) subset. */
function meets(node: unknown, value: unknown): boolean {
  if (node === true || node === undefined) return true;
  if (typeof node !== "object" || node === null) return false;
  const s = node as Raw;
  if (Array.isArray(s.anyOf) && !(s.anyOf as unknown[]).some((branch) => meets(branch, value))) return false;
  const kind = kindOf(value);
  const types = typesOf(s);
  if (types.length > 0 && !types.some((t) => t === kind || (t === "number" && kind === "integer")))
    return false;
  if (Array.isArray(s.enum) && !(s.enum as unknown[]).some((v) => v === value)) return false;
  if (typeof value === "string") {
    if (typeof s.pattern === "string" && !new RegExp(s.pattern).test(value)) return false;
  }
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) return false;
    if (typeof s.maximum === "number" && value > s.maximum) return false;
    if (typeof s.exclusiveMinimum === "number" && value <= s.exclusiveMinimum) return false;
    if (typeof s.exclusiveMaximum === "number" && value >= s.exclusiveMaximum) return false;
    if (typeof s.multipleOf === "number") {
      const q = value / s.multipleOf;
      if (Math.abs(q - Math.round(q)) > 1e-9) return false;
    }
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === "number" && value.length < s.minItems) return false;
    if (typeof s.maxItems === "number" && value.length > s.maxItems) return false;
    return value.every((item) => meets(s.items, item));
  }
  if (kind === "object") {
    const props = (s.properties ?? {}) as Raw;
    const v = value as Raw;
    if (s.additionalProperties === false && !Object.keys(v).every((k) => Object.hasOwn(props, k)))
      return false;
    if (Array.isArray(s.required) && !(s.required as string[]).every((k) => Object.hasOwn(v, k)))
      return false;
    return Object.keys(v).every((k) => !Object.hasOwn(props, k) || meets(props[k], v[k]));
  }
  return true;
}

const NOT_WRITABLE = Symbol("not writable");

/** What the model writes for a value, and the places it wrote null for a property the value left out. */
interface Writing {
  written: unknown;
  nulls: Path[];
}

/**
 * `value` as a model answering the sanitized `node` writes it: every listed property present, null
 * for one left out, JSON text where the declaration asks for it, the first union branch it meets.
 */
function write(value: unknown, node: unknown, at: Path = [], inUnion = false): Writing | typeof NOT_WRITABLE {
  if (typeof node !== "object" || node === null) return { written: value, nulls: [] };
  const s = node as Raw;
  const description = typeof s.description === "string" ? s.description : "";
  if (description.includes(TEXT)) {
    // JSON text stands for an object or an array; null is written as such where the place takes it.
    // Null is the JSON text "null" only where no branch beside it takes null itself.
    if (value === null)
      return typesOf(s).includes("null")
        ? { written: null, nulls: [] }
        : inUnion
          ? NOT_WRITABLE
          : { written: "null", nulls: [] };
    if (typeof value !== "object") return NOT_WRITABLE;
    return { written: jsonText(value), nulls: [] };
  }
  if (description.includes(ANY_TEXT))
    return {
      written: typeof value === "object" && value !== null ? jsonText(value) : value,
      nulls: [],
    };
  if (Array.isArray(s.anyOf)) {
    // A branch is first tried holding no null as JSON text at any depth: a model writes null as the
    // text "null" under a branch (whose own type may not take null) only where no branch takes the
    // value otherwise — `{ "k": "null" }` under a branch declaring k JSON text is read, rightly, as
    // the string "null" by a branch beside it declaring k a string or null.
    for (const branch of s.anyOf as unknown[]) {
      const writing = write(value, branch, at, true);
      if (writing !== NOT_WRITABLE && meets(branch, writing.written)) return writing;
    }
    if (!inUnion) {
      for (const branch of s.anyOf as unknown[]) {
        const writing = write(value, branch, at);
        if (writing !== NOT_WRITABLE && meets(branch, writing.written)) return writing;
      }
    }
    return NOT_WRITABLE;
  }
  if (Array.isArray(value)) {
    const items = value.map((item, i) => write(item, s.items, [...at, i], inUnion));
    if (items.includes(NOT_WRITABLE)) return NOT_WRITABLE;
    return {
      written: (items as Writing[]).map((item) => item.written),
      nulls: (items as Writing[]).flatMap((item) => item.nulls),
    };
  }
  if (typeof value === "object" && value !== null && typesOf(s).includes("object")) {
    const props = (s.properties ?? {}) as Raw;
    const out: Raw = {};
    const nulls: Path[] = [];
    for (const key of Object.keys(props)) {
      if (!Object.hasOwn(value, key)) {
        out[key] = null;
        nulls.push([...at, key]);
        continue;
      }
      const writing = write((value as Raw)[key], props[key], [...at, key], inUnion);
      if (writing === NOT_WRITABLE) return NOT_WRITABLE;
      out[key] = writing.written;
      nulls.push(...writing.nulls);
    }
    // Keys the declaration does not list stay, so the value fails `meets` rather than lose them.
    for (const key of Object.keys(value)) if (!Object.hasOwn(props, key)) out[key] = (value as Raw)[key];
    return { written: out, nulls };
  }
  return { written: value, nulls: [] };
}

/**
 * Whether the tool's own check takes `value` (`parse`, which reads a left-out parameter named after
 * an `Object.prototype` member as left out, where zod alone would read the inherited member).
 */
function takes(tool: Tool, value: unknown): boolean {
  try {
    tool.parse(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * `value` as plain data: an object on `argumentsPrototype` (a parameter named after an
 * `Object.prototype` member) compared by its own keys, as any other.
 */
function plainData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plainData);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.keys(value).map((key) => [key, plainData((value as Raw)[key])]));
}

/**
 * What zod makes of `value` with null at those of `nulls` (places the model wrote null for a
 * property the value left out) where `got` (what `execute` was handed) holds null: each such null
 * may be read as left out or, where zod takes null there, as the null the model wrote. A null the
 * value itself held is a value, and stays — except under a union whose variants share field names
 * (`overlap`), where the call may be read by another variant that leaves the field out: there a
 * null the value held that `got` lacks is read as left out. Undefined where zod refuses that reading.
 */
function reading(tool: Tool, value: unknown, nulls: Path[], got: unknown, overlap = false): unknown {
  const copy = structuredClone(value);
  if (overlap) leftOut(copy, got);
  for (const path of nulls) {
    let there: unknown = got;
    for (const step of path) there = (there as Raw | undefined)?.[step as string];
    if (there !== null) continue;
    let target = copy as Raw;
    for (const step of path.slice(0, -1)) target = target[step as string] as Raw;
    target[path[path.length - 1] as string] = null;
  }
  return takes(tool, copy) ? tool.parse(copy) : undefined;
}

/**
 * Deletes from `value` each key holding null where `got` (at the same place) holds no null: the
 * key left out (or given its default).
 */
function leftOut(value: unknown, got: unknown): void {
  if (typeof value !== "object" || value === null || typeof got !== "object" || got === null) return;
  for (const key of Object.keys(value)) {
    const inner = (value as Raw)[key];
    if (inner === null && !Array.isArray(value) && (got as Raw)[key] !== null) delete (value as Raw)[key];
    else leftOut(inner, (got as Raw)[key]);
  }
}

/**
 * Whether `args` (a call as restored) is `value` but for nulls: a key one holds null at that the
 * other leaves out. Under variants sharing field names the call may be read by another variant than
 * the one the value was made by (zod's first match may even read the value itself by one that
 * drops what it holds): then what `execute` gets is right when the call is the value but for nulls
 * and the tool takes it.
 */
function sameButNulls(args: unknown, value: unknown): boolean {
  if (Array.isArray(args) || Array.isArray(value)) {
    return (
      Array.isArray(args) &&
      Array.isArray(value) &&
      args.length === value.length &&
      args.every((item, i) => sameButNulls(item, value[i]))
    );
  }
  if (typeof args !== "object" || args === null || typeof value !== "object" || value === null)
    return isDeepStrictEqual(args, value);
  const a = args as Raw;
  const v = value as Raw;
  return [...new Set([...Object.keys(a), ...Object.keys(v)])].every((key) =>
    Object.hasOwn(a, key) && Object.hasOwn(v, key)
      ? sameButNulls(a[key], v[key])
      : (Object.hasOwn(a, key) ? a[key] : v[key]) === null,
  );
}

/** What `execute` may get for `value` written as `args` were restored (see `reading`, `sameButNulls`). */
function rightReading(tool: Tool, props: Prop[], value: unknown, nulls: Path[], args: unknown, got: unknown) {
  const overlap = overlaps(props);
  const expected = reading(tool, value, nulls, got, overlap);
  if (isDeepStrictEqual(plainData(expected), plainData(got))) return true;
  return (
    overlap &&
    sameButNulls(args, value) &&
    takes(tool, args) &&
    isDeepStrictEqual(plainData(tool.parse(args)), plainData(got))
  );
}

/** Whether a union among `props` (at any depth) has variants sharing field names. */
function overlaps(props: Prop[]): boolean {
  const inSpec = (spec: Spec): boolean => {
    switch (spec.kind) {
      case "object":
        return overlaps(spec.props);
      case "array":
        return inSpec(spec.item);
      case "record":
        return inSpec(spec.value);
      case "tagged":
        return spec.branches.some(overlaps);
      case "union":
        return spec.shared === true || spec.branches.some(overlaps);
      default:
        return false;
    }
  };
  return props.some((prop) => inSpec(prop.spec));
}

const dialects: { name: Dialect; options: SanitizeOptions; declare: (schema: Raw) => JsonSchema }[] = [
  { name: "strict", options: {}, declare: (schema) => sanitizeSchema(schema) },
  { name: "relaxed", options: {}, declare: (schema) => relaxSchema(schema) },
  {
    name: "shallow",
    options: { recursionLimit: 1, maxDepth: 2 },
    declare: (schema) => sanitizeSchema(schema, { recursionLimit: 1, maxDepth: 2 }),
  },
];

interface Case {
  props: Prop[];
  values: Raw[];
  bad: { [dialect in Dialect]?: Bad[] };
}

const caseArb: fc.Arbitrary<Case> = rootArb.chain((props) => {
  const bads = Object.fromEntries(
    dialects.map(({ name }) => {
      const arb = badPropsArb(props, name);
      return [name, arb === undefined ? fc.constant([]) : fc.array(arb, { maxLength: 2 })];
    }),
  ) as { [dialect in Dialect]: fc.Arbitrary<Bad[]> };
  return fc.record({
    props: fc.constant(props),
    values: fc.array(propsArb(props), { minLength: 1, maxLength: 3 }),
    bad: fc.record(bads),
  });
});

function toolOf(props: Prop[]) {
  const executed: unknown[] = [];
  const tool = defineTool({
    name: "t",
    description: "The tool under test.",
    input: objectOf(props) as z.ZodObject,
    execute: (args) => {
      executed.push(args);
      return "done";
    },
  });
  return { tool, executed, toolset: createToolset([tool]) };
}

function formatPath(path: Path): string {
  return path
    .map((part, at) => (typeof part === "number" ? `[${part}]` : at === 0 ? part : `.${part}`))
    .join("");
}

async function settle(promise: Promise<unknown>): Promise<{ ok: true } | { ok: false; error: unknown }> {
  try {
    await promise;
    return { ok: true };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A leaf of the catalog by its name (for the fixed examples below). */
function leafNamed(name: string): Leaf {
  return leaves.find((leaf) => leaf.name === name) as Leaf;
}

const str = (name: string, mod: Mod): Prop => ({
  name,
  spec: { kind: "leaf", leaf: leafNamed("string") },
  mod,
  described: false,
});
const plainProp = (name: string, spec: Spec, mod: Mod): Prop => ({ name, spec, mod, described: false });
const noBad = { strict: [], relaxed: [], shallow: [] };
const stringLeaf: Spec = { kind: "leaf", leaf: leafNamed("string") };
/** A required property holding a union whose variants share field names. */
const sharedUnion = (name: string, branches: Prop[][]): Prop =>
  plainProp(name, { kind: "union", shared: true, branches }, "required");

/**
 * Counterexamples found at numRuns 3000, checked on every run (seeds -848646852 and 1240037890,
 * shrunk; the third below). The first two are shallow: a union variant's object asked for as JSON text, the model answering by the
 * first variant (null for its fields left out) though only another takes the parsed text. A library
 * fault, fixed in schema-compat (r96a): the union was read whole, keeping a null the first variant
 * takes where the variant that takes the value refuses it, and dispatch refused the call.
 */
const shrunk: [Case][] = [
  [
    {
      props: [
        plainProp(
          "a",
          {
            kind: "union",
            shared: true,
            branches: [
              [
                plainProp("constructor", { kind: "object", props: [], shape: "strict" }, "required"),
                plainProp("b", { kind: "tagged", branches: [[], []] }, "optNull"),
                str("a", "nullOpt"),
              ],
              [
                str("a", "optional"),
                plainProp(
                  "constructor",
                  { kind: "union", shared: true, branches: [[], [str("a", "required")]] },
                  "required",
                ),
              ],
            ],
          },
          "required",
        ),
        str("e", "required"),
        plainProp("d", { kind: "union", branches: [[], []] }, "required"),
      ],
      values: [{ a: { constructor: { a: "" } }, e: "", d: {} }],
      bad: noBad,
    },
  ],
  [
    {
      props: [
        plainProp(
          "a",
          {
            kind: "array",
            min: undefined,
            max: undefined,
            item: {
              kind: "union",
              shared: true,
              branches: [
                [str("a", "nullOpt"), str("d", "nullable"), plainProp("b", { kind: "tree" }, "required")],
                [
                  plainProp(
                    "a",
                    { kind: "record", value: { kind: "leaf", leaf: leafNamed("string") } },
                    "optional",
                  ),
                  plainProp("b", { kind: "union", branches: [[], []] }, "required"),
                ],
              ],
            },
          },
          "required",
        ),
      ],
      values: [{ a: [{ b: {} }] }, { a: [] }],
      bad: noBad,
    },
  ],
  // Seed 1286858130 (strict), cut down by hand: the k0 variant takes any value at `constructor`,
  // the k1 variant a map there, asked for as JSON text. The model's string "0" for k0 reached
  // execute as the number 0 (read as k1's JSON text): fixed in schema-compat (r96a).
  [
    {
      props: [
        plainProp(
          "e",
          {
            kind: "tagged",
            branches: [
              [plainProp("constructor", { kind: "leaf", leaf: leafNamed("any") }, "required")],
              [
                plainProp(
                  "constructor",
                  { kind: "record", value: { kind: "leaf", leaf: leafNamed("string") } },
                  "required",
                ),
              ],
            ],
          },
          "required",
        ),
      ],
      values: [{ e: { kind: "k0", constructor: "0" } }, { e: { kind: "k0", constructor: "null" } }],
      bad: noBad,
    },
  ],
  // Seed -98302 at 10x (r98c), in the strict dialect: the map's alternative asks for JSON text at
  // `b`, the list's does not; the list written as text fits only the map's alternative. Read with
  // the asks of the list variant alone, the text reached zod and the call was read by the empty
  // variant, `b` dropped (an intermediate form of r98c's union fix, never landed).
  [
    {
      props: [
        sharedUnion("a", [
          [plainProp("b", { kind: "record", value: stringLeaf }, "required")],
          [plainProp("b", { kind: "array", item: stringLeaf, min: undefined, max: undefined }, "required")],
          [],
        ]),
      ],
      values: [{ a: { b: [] } }, { a: { b: {} } }],
      bad: noBad,
    },
  ],
  // -0 (r98c), in JSON text asked for under "any" and as a number of the call itself: written with
  // JSON.stringify, `{"k":[0]}` and `0` — the call the model sent was not the generated one (seed
  // -1000533327, shrunk by hand). Fails on its first run with JSON.stringify put back.
  [
    {
      props: [
        plainProp("a", { kind: "leaf", leaf: leafNamed("any") }, "required"),
        plainProp("b", { kind: "leaf", leaf: leafNamed("halves") }, "required"),
      ],
      values: [
        { a: { k: [-0] }, b: -0 },
        { a: -0, b: 0.5 },
      ],
      bad: noBad,
    },
  ],
];

describe("a typed tool's arguments through every schema-compat dialect", {
  timeout: propertyTimeout(60_000),
}, () => {
  it("reach execute as zod reads them, and a value only the declaration takes is refused naming the argument", async () => {
    let badSent = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ props, values, bad }) => {
        const { tool, executed, toolset } = toolOf(props);
        const original = tool.declaration.function.parameters;
        for (const { name, options, declare } of dialects) {
          const declared = declare(original) as Raw;
          expect(checkStrictSchema(declared, { relaxed: name === "relaxed" }), name).toEqual([]);
          for (const value of values) {
            expect(takes(tool, value), JSON.stringify(value)).toBe(true);
            const writing = write(value, declared);
            expect(
              writing,
              `${name}: a value zod takes cannot be written under ${JSON.stringify(declared)}`,
            ).not.toBe(NOT_WRITABLE);
            const { written, nulls } = writing as Writing;
            expect(
              meets(declared, written),
              `${name}: ${JSON.stringify(written)} under ${JSON.stringify(declared)}`,
            ).toBe(true);
            const args = restoreArguments(JSON.parse(jsonText(written)), original, options);
            executed.length = 0;
            const outcome = await settle(toolset.dispatch({ id: "c", name: "t", args }));
            expect(outcome, `${name}: ${JSON.stringify(written)} → ${JSON.stringify(args)}`).toEqual({
              ok: true,
            });
            expect(executed.length).toBe(1);
            expect(
              rightReading(tool, props, value, nulls, args, executed[0]),
              `${name}: ${JSON.stringify(written)} → ${JSON.stringify(args)}; execute got ${JSON.stringify(executed[0])}, not ${JSON.stringify(reading(tool, value, nulls, executed[0]))}`,
            ).toBe(true);
          }
          for (const { value, path } of bad[name] ?? []) {
            expect(takes(tool, value), JSON.stringify(value)).toBe(false);
            const writing = write(value, declared);
            if (writing === NOT_WRITABLE || !meets(declared, writing.written)) continue;
            const { written } = writing;
            badSent++;
            const args = restoreArguments(JSON.parse(jsonText(written)), original, options);
            executed.length = 0;
            const outcome = await settle(toolset.dispatch({ id: "c", name: "t", args }));
            expect(executed, `${name}: ${JSON.stringify(written)} ran`).toEqual([]);
            expect(outcome.ok).toBe(false);
            const error = (outcome as { error: unknown }).error;
            expect(ToolInputError.isInstance(error), String(error)).toBe(true);
            expect((error as ToolInputError).code).toBe("invalid-arguments");
            // Some issue names the place, or a place above it (a union names itself), never only the root.
            const at = formatPath(path);
            const named = (error as ToolInputError).issues.some(
              (issue) => issue.path !== "" && (at === issue.path || at.startsWith(issue.path)),
            );
            expect(named, `${name}: ${at} in ${(error as Error).message}`).toBe(true);
          }
        }
      }),
      { ...propertyRuns(150), examples: shrunk },
    );
    expect(badSent).toBeGreaterThan(20);
  });

  it("through runAgentLoop against a llama.cpp server: the strict declaration is sent, each call reaches execute as zod reads it, and a call zod refuses is answered naming the argument", async () => {
    let refusedAnswered = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ props, values, bad }) => {
        const executed = new Map<string, unknown>();
        const tool = defineTool({
          name: "t",
          description: "The tool under test.",
          input: objectOf(props) as z.ZodObject,
          execute: (args, { id }) => {
            executed.set(id, args);
            return "done";
          },
        });
        const toolset = createToolset([tool]);
        const declared = sanitizeSchema(tool.declaration.function.parameters);
        const calls: { id: string; text: string; value: unknown; nulls: Path[]; bad?: Path }[] = [];
        // Identical calls in one step share one answer (the loop's dedupe): each is sent once. The
        // loop compares the arguments the tool is handed — restored, where a null written for a
        // defaulted tag reads as that tag (`{"a":null}` is `{"a":3}` for `z.literal(3).default(3)`,
        // seed 348402337 at 5x) — as JSON text, where -0 is written 0.
        const sent = new Set<string>();
        const add = (value: unknown, writing: Writing, bad?: Path) => {
          const text = jsonText(writing.written);
          const same = JSON.stringify(
            restoreArguments(JSON.parse(text), tool.declaration.function.parameters),
          );
          if (sent.has(same)) return;
          sent.add(same);
          const id = `call_${calls.length}`;
          calls.push({ id, text, value, nulls: writing.nulls, ...(bad === undefined ? {} : { bad }) });
        };
        for (const value of values) add(value, write(value, declared) as Writing);
        for (const { value, path } of bad.strict ?? []) {
          const writing = write(value, declared);
          if (writing !== NOT_WRITABLE && meets(declared, writing.written)) add(value, writing, path);
        }
        const server = await startServer({
          // A window wide enough for the largest generated declaration (the default is 4096 tokens).
          personality: { name: "llamacpp", nCtx: 131_072 },
          replies: [
            { toolCalls: calls.map(({ id, text }) => ({ id, name: "t", arguments: text })) },
            { content: "Done." },
          ],
        });
        try {
          const result = await runAgentLoop({
            config: { baseUrl: server.baseUrl, model: "sim" },
            messages: [{ role: "user", content: "Use the tool." }],
            tools: toolset.tools,
            dispatch: toolset.dispatch,
            signal: AbortSignal.timeout(15_000),
          });
          // The server compiled the strict form: the loop never fell back to the relaxed one.
          const body = server.requests[0]?.body as { tools: { function: { parameters: unknown } }[] };
          expect(body.tools[0]?.function.parameters).toEqual(declared);
          for (const call of calls) {
            const outcome = result.toolCalls.find(({ id }) => id === call.id);
            const answer = result.messages.find(
              (message) => message.role === "tool" && message.tool_call_id === call.id,
            );
            if (call.bad === undefined) {
              expect(outcome?.ok, `${call.text}: ${JSON.stringify(answer)}`).toBe(true);
              const got = executed.get(call.id);
              const args = restoreArguments(JSON.parse(call.text), tool.declaration.function.parameters);
              expect(
                rightReading(tool, props, call.value, call.nulls, args, got),
                `${call.text}: execute got ${JSON.stringify(got)}, not ${JSON.stringify(reading(tool, call.value, call.nulls, got))}`,
              ).toBe(true);
            } else {
              refusedAnswered++;
              expect(executed.has(call.id), `${call.text} ran`).toBe(false);
              expect(outcome?.ok).toBe(false);
              const [first] = call.bad;
              expect(String(answer?.content), call.text).toContain(`${String(first)}`);
              expect(String(answer?.content)).toMatch(
                /^Error: t was not run: its arguments do not match its schema/,
              );
            }
          }
        } finally {
          await server.close();
        }
      }),
      propertyRuns(30),
    );
    expect(refusedAnswered).toBeGreaterThan(0);
  });
});
