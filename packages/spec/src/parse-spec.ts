import type { z } from "zod";
import { expected } from "./expected.js";
import { describeKind, issue, type SpecIssue } from "./issues.js";
import {
  child,
  cloneJson,
  credentialInName,
  isPlainObject,
  type JsonProblem,
  quotable,
  setOwn,
} from "./json.js";
import {
  agentSpecSchema,
  FREE_JSON,
  SPEC_FEATURES,
  SPEC_MAJOR,
  SPEC_TOKEN,
  SPEC_TOKEN_PATTERN,
} from "./schema.js";
import { looksLikeKey, looksSecretName } from "./secret-signs.js";
import type { AgentSpec } from "./types.js";

/** Options for `parseSpec`. */
export interface ParseSpecOptions {
  /**
   * Read `bundle.mcpServers`. Off by default: a bundled server is a command line, so accepting
   * one is running a program, which the host decides rather than inherits.
   */
  bundle?: boolean | undefined;
  /** The `requires` entries this host honours; defaults to `SPEC_FEATURES`. */
  features?: readonly string[] | undefined;
}

/** What `parseSpec` found: the spec when there were no errors, and every problem at once. */
export interface ParseSpecResult {
  /** The document with every dropped part gone; `undefined` when `errors` is not empty. */
  spec: AgentSpec | undefined;
  /** Why the document was refused (not an object, spec token, requires, a container of the wrong kind). */
  errors: SpecIssue[];
  /** What was dropped, each naming its path. */
  warnings: SpecIssue[];
}

interface Walk {
  errors: SpecIssue[];
  warnings: SpecIssue[];
  /** Each object and list `bare` copied in this parse, by the original (made at the first copy): see `bare`. */
  bare?: WeakMap<object, unknown>;
}

// Parts of the schema the walker reads; zod keeps these on every schema's `def`.
interface Def {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { def: Def }).def;

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = defOf(current);
    if ((def.type === "optional" || def.type === "nullable") && def.innerType) current = def.innerType;
    else return current;
  }
}

const KIND: Record<string, string> = { object: "an object", record: "an object", array: "a list" };

function firstMessage(error: z.ZodError): string {
  return error.issues[0]?.message ?? "not accepted";
}

// Lists whose entries are merged by a key, within a document as across layers.
const KEYED: Record<string, string> = { prompt: "id", hooks: "id", "bundle.mcpServers": "name" };

const DROPPED = Symbol("dropped");

/** A key pasted as a name (`ghp_…`, `sk-…`); no key shape is shorter than 14 characters. */
const keyShaped = (name: string): boolean => name.length >= 14 && looksLikeKey(name);

/** What a name holding a credential is, for its warning; `undefined` for a name that holds none. */
function nameCredential(name: string): string | undefined {
  if (keyShaped(name)) return "is a name shaped like a key";
  return credentialInName(name) ? "is a name holding a credential" : undefined;
}

/**
 * Whether a JSON value (`cloneJson`'s copy: at most 65 levels deep) has a key-shaped name at any
 * depth. `findSpecSecrets` reads values, not names, so `exportSpec` would hand such a name on.
 */
function holdsKeyName(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return value.some(holdsKeyName);
  return Object.keys(value).some(
    (key) => nameCredential(key) !== undefined || holdsKeyName((value as Record<string, unknown>)[key]),
  );
}

/** The warning for a key pasted where the document takes a name (its path shows it as `${SECRET}`). */
const keyNamed = (path: string, what: string): SpecIssue =>
  issue(
    path,
    "credential",
    `${what}; a document never carries a credential`,
    "dropped; the host supplies keys.",
  );

/**
 * Walks `value` against `schema`, returning the accepted part or DROPPED. A container of the
 * wrong kind is an error; anything else that does not pass is a warning and is left out.
 */
function walk(schema: z.ZodType, value: unknown, path: string, ctx: Walk): unknown {
  const node = unwrap(schema);
  const def = defOf(node);
  if (node === FREE_JSON) {
    const problem: JsonProblem = {};
    const copy = cloneJson(value, problem);
    if (copy === undefined) {
      const why = problem.reason === undefined ? "" : ` (${problem.reason})`;
      ctx.warnings.push(issue(path, "invalid-value", `is not a JSON value${why}`, "dropped."));
      return DROPPED;
    }
    if (holdsKeyName(copy)) {
      ctx.warnings.push(keyNamed(path, "holds a name shaped like a key"));
      return DROPPED;
    }
    return copy;
  }
  const kind = KIND[def.type];
  if (kind !== undefined) {
    const fits = def.type === "array" ? Array.isArray(value) : isPlainObject(value);
    if (!fits) {
      ctx.errors.push(issue(path, "container", `must be ${kind}, not ${describeKind(value)}.`));
      return DROPPED;
    }
  }
  switch (def.type) {
    case "object":
      return walkObject(node, def.shape ?? {}, value as Record<string, unknown>, path, ctx);
    case "record": {
      const out: Record<string, unknown> = {};
      const source = value as Record<string, unknown>;
      for (const key of Object.keys(source)) {
        const at = child(path, key);
        const item = source[key];
        if (item === null || item === undefined) continue;
        const credential = nameCredential(key);
        if (credential !== undefined) {
          ctx.warnings.push(keyNamed(at, credential));
          continue;
        }
        const keyCheck = def.keyType?.safeParse(key);
        if (keyCheck && !keyCheck.success) {
          ctx.warnings.push(
            issue(
              at,
              "invalid-value",
              `is not an accepted name (${firstMessage(keyCheck.error)})`,
              "dropped.",
            ),
          );
          continue;
        }
        const accepted = walk(def.valueType as z.ZodType, item, at, ctx);
        if (accepted !== DROPPED) setOwn(out, key, accepted);
      }
      return out;
    }
    case "array": {
      const out: unknown[] = [];
      // Each accepted entry's index in the document, so a warning about it names that entry.
      const places: number[] = [];
      const list = value as unknown[];
      // Every index, a hole in a list built in code included (forEach skipped one without a word):
      // a run of holes is one warning, so `new Array(1e9)` is not a billion of them.
      for (let index = 0; index < list.length; index += 1) {
        const at = child(path, index);
        if (!(index in list)) {
          let end = index + 1;
          while (end < list.length && !(end in list)) end += 1;
          const more = end - index - 1;
          const said = more === 0 ? "is empty" : `is empty, and so are the ${more} after it`;
          ctx.warnings.push(issue(at, "null-entry", said, "dropped."));
          index = end - 1;
          continue;
        }
        const item = list[index];
        if (item === null || item === undefined) {
          ctx.warnings.push(issue(at, "null-entry", "is empty", "dropped."));
          continue;
        }
        const accepted = walk(def.element as z.ZodType, item, at, ctx);
        if (accepted !== DROPPED) {
          out.push(accepted);
          places.push(index);
        }
      }
      const keyField = KEYED[path];
      return keyField ? dedupe(out as Record<string, unknown>[], places, keyField, path, ctx) : out;
    }
    default: {
      const checked = node.safeParse(bare(value, copiesOf(ctx)));
      if (!checked.success) {
        const allowed = expected(node) ?? firstMessage(checked.error);
        ctx.warnings.push(
          issue(
            path,
            "invalid-value",
            `expected ${allowed}, got ${describeKind(value)}`,
            // A task is replaced whole across layers, so a dropped field of one is its own default.
            path.startsWith("tasks")
              ? "dropped, not corrected, so the side task's own default applies."
              : "dropped, not corrected, so a weaker layer's value applies.",
          ),
        );
        return DROPPED;
      }
      // -0 is 0 in JSON; keep it so, or a round trip through text would change the spec.
      return Object.is(checked.data, -0) ? 0 : plain(checked.data);
    }
  }
}

/**
 * `value` as zod is handed it to check: each object (at any depth) copied onto no prototype. A
 * strict object counts every key `for…in` finds as one of the value's own, so one field some code
 * set on a polluted `Object.prototype` ("Unrecognized key") dropped every part of every document.
 * What zod answers is built by zod, on plain objects.
 */
function bare(value: unknown, copies: WeakMap<object, unknown>): unknown {
  if (typeof value !== "object" || value === null) return value;
  // Each part is checked, then checked again inside its parent (a server, then the bundle holding
  // it): the copy made for the part is the one its parent's copy holds, so a parse copies each
  // object once, not once per level above it (r86d: O(depth × size)). A part is finished, never
  // changed again, before it is checked.
  const known = copies.get(value);
  if (known !== undefined) return known;
  let copy: unknown;
  if (Array.isArray(value)) copy = value.map((item) => bare(item, copies));
  else {
    const fields = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(value)) fields[key] = bare((value as Record<string, unknown>)[key], copies);
    copy = fields;
  }
  copies.set(value, copy);
  return copy;
}

/** The parse's `bare` copies, kept on `ctx` (made at the first: `asSpec` hands `parseInto` a walk of its own). */
function copiesOf(ctx: Walk): WeakMap<object, unknown> {
  if (ctx.bare === undefined) ctx.bare = new WeakMap();
  return ctx.bare;
}

/** `bare`'s copies (what zod hands back of them as it was given) as plain objects again. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value !== "object" || value === null) return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== null && proto !== Object.prototype) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setOwn(copy, key, plain((value as Record<string, unknown>)[key]));
  return copy;
}

function walkObject(
  node: z.ZodType,
  shape: Record<string, z.ZodType>,
  source: Record<string, unknown>,
  path: string,
  ctx: Walk,
): unknown {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(source)) {
    const at = child(path, key);
    const item = source[key];
    const field = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (field === undefined) {
      if (looksSecretName(key)) {
        ctx.warnings.push(
          issue(
            at,
            "credential",
            "a document never carries a credential",
            "dropped; the host supplies keys.",
          ),
        );
      } else {
        ctx.warnings.push(issue(at, "unknown-field", "is not a field of this format", "dropped."));
      }
      continue;
    }
    if (item === null || item === undefined) continue;
    const accepted = walk(field, item, at, ctx);
    if (accepted !== DROPPED) setOwn(out, key, accepted);
  }
  // Required fields and rules across fields: a part missing one is dropped whole. The document
  // itself is not checked here: its one required field, the token, is refused by parseInto.
  if (path === "") return out;
  const whole = node.safeParse(bare(out, copiesOf(ctx)));
  if (!whole.success) {
    const problem = whole.error.issues[0];
    const field = problem?.path.length === 1 ? String(problem.path[0]) : undefined;
    const reason =
      field !== undefined && !Object.hasOwn(out, field)
        ? `${field} is missing`
        : `${field === undefined ? "" : `${field}: `}${firstMessage(whole.error)}`;
    // An entry written only to switch off a weaker layer's (`{ "name": "github", "enabled": false }`)
    // switches nothing off once dropped: say so, or the server or hook runs with only this warning.
    const consequence =
      out.enabled === false
        ? `dropped whole, so it switches nothing off: a weaker layer's entry of that ${path.startsWith("bundle.") ? "name" : "id"} stays on (its ${path.startsWith("bundle.") ? "name" : "id"} and enabled: false are enough).`
        : "dropped whole.";
    ctx.warnings.push(issue(path, "incomplete", reason, consequence));
    return DROPPED;
  }
  return out;
}

/**
 * Keeps one entry per key: a later entry replaces an earlier one in its place. `places[i]` is
 * entry i's index in the document (entries dropped before this are not in `entries`), which the
 * warning names.
 */
function dedupe(
  entries: Record<string, unknown>[],
  places: readonly number[],
  key: string,
  path: string,
  ctx: Walk,
): unknown[] {
  const out: Record<string, unknown>[] = [];
  // For each key: where its entry is in `out`, and the document index of the entry last kept there.
  const at = new Map<unknown, { slot: number; place: number }>();
  entries.forEach((entry, index) => {
    const name = entry[key];
    const place = places[index] ?? index;
    const seen = at.get(name);
    if (seen === undefined) {
      at.set(name, { slot: out.length, place });
      out.push(entry);
      return;
    }
    ctx.warnings.push(
      issue(
        child(path, place),
        "duplicate-id",
        `repeats ${key} of entry ${seen.place}; it replaces that entry.`,
      ),
    );
    out[seen.slot] = entry;
    seen.place = place;
  });
  return out;
}

/** @internal Parse options plus what the other functions use to re-check a spec. */
export interface InternalParseOptions extends ParseSpecOptions {
  /** Skip the requires check (a spec that passed it once is re-checked without the host's list). */
  anyRequires?: boolean;
}

/**
 * Reads an agent document, keeping what passes and reporting every problem at once.
 *
 * Refuses (errors, `spec` undefined) only for four faults of the document itself: it is not an
 * object; its `spec` token is missing or of another major; a `requires` entry this host does not
 * understand; a container (object or list) of the wrong kind. Anything else that does not pass is
 * dropped with a warning naming its path — an out-of-range number is dropped, never clamped.
 * `null` reads as absent; `0`, `-1`, `""` and `[]` are values. `${VAR}` stays literal.
 * `bundle.mcpServers` is read only with `{ bundle: true }`. `options` absent or `null` reads as
 * none. Never throws, for any value.
 */
export function parseSpec(value: unknown, options?: ParseSpecOptions | null): ParseSpecResult {
  const ctx: Walk = { errors: [], warnings: [] };
  try {
    // null options read as none, as null reads as absent in a document.
    const spec = parseInto(value, (options ?? {}) as InternalParseOptions, ctx);
    return { spec: ctx.errors.length === 0 ? spec : undefined, errors: ctx.errors, warnings: ctx.warnings };
  } catch (cause) {
    // Only an exotic value (a throwing getter, a proxy) gets here; the contract is a result.
    const reason = cause instanceof Error ? cause.message : String(cause);
    ctx.errors.push(issue("", "not-object", `could not be read as JSON (${reason}).`));
    return { spec: undefined, errors: ctx.errors, warnings: ctx.warnings };
  }
}

/** @internal */
export function parseInto(value: unknown, options: InternalParseOptions, ctx: Walk): AgentSpec | undefined {
  if (!isPlainObject(value)) {
    ctx.errors.push(
      issue(
        "",
        "not-object",
        typeof value === "string"
          ? `an agent document is a JSON object, not a string; parse JSON text first: parseSpec(JSON.parse(text)).`
          : `an agent document is a JSON object such as { "spec": "${SPEC_TOKEN}" }, not ${describeKind(value)}.`,
      ),
    );
    return undefined;
  }
  checkToken(value.spec, ctx);
  const features = options.features ?? SPEC_FEATURES;
  if (value.requires !== null && value.requires !== undefined) {
    checkRequires(value.requires, features, options, ctx);
  }
  const source: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key === "spec") continue; // checked above
    if (key === "requires" && Array.isArray(value.requires)) {
      // Entries that are not names were refused above; the rest are kept as written.
      source.requires = value.requires.filter((entry) => typeof entry === "string" && entry !== "");
      continue;
    }
    if (key === "bundle" && !options.bundle && value.bundle !== null && value.bundle !== undefined) {
      ctx.warnings.push(
        issue(
          "bundle",
          "bundle-ignored",
          "bundled servers are read only when the host asks (parseSpec(document, { bundle: true })); ignored.",
        ),
      );
      continue;
    }
    setOwn(source, key, value[key]);
  }
  const walked = walk(agentSpecSchema, source, "", ctx);
  if (walked === DROPPED || typeof value.spec !== "string") return undefined;
  return { spec: value.spec, ...(walked as Omit<AgentSpec, "spec">) };
}

function checkToken(token: unknown, ctx: Walk): void {
  if (typeof token !== "string") {
    ctx.errors.push(
      issue("spec", "spec", `is missing; an agent document starts with "spec": "${SPEC_TOKEN}".`),
    );
    return;
  }
  const match = SPEC_TOKEN_PATTERN.exec(token);
  if (!match) {
    ctx.errors.push(issue("spec", "spec", `is not an agent spec token; expected "${SPEC_TOKEN}".`));
    return;
  }
  if (Number(match[1]) !== SPEC_MAJOR) {
    ctx.errors.push(
      issue(
        "spec",
        "spec",
        `is major version ${match[1]}, and this host reads version ${SPEC_MAJOR}; upgrade @loopwright/spec or export the agent as "${SPEC_TOKEN}".`,
      ),
    );
  }
}

function checkRequires(
  requires: unknown,
  features: readonly string[],
  options: InternalParseOptions,
  ctx: Walk,
): void {
  if (!Array.isArray(requires)) return; // the walk reports it as a container of the wrong kind
  if (!options.anyRequires && !Array.isArray(features)) {
    // A string's includes() would accept any substring of it ("ask" in "tasks"): refuse instead.
    ctx.errors.push(
      issue(
        "requires",
        "requires",
        `this host's features option is not a list of feature names (it is ${describeKind(features)}), so no entry can be checked against it.`,
      ),
    );
    return;
  }
  requires.forEach((entry, index) => {
    const at = child("requires", index);
    if (typeof entry !== "string" || entry === "") {
      ctx.errors.push(issue(at, "requires", `is ${describeKind(entry)}, not a feature name.`));
      return;
    }
    if (entry === "bundle" && !options.bundle) {
      ctx.errors.push(
        issue(
          at,
          "requires",
          "the agent needs its bundled servers, and this call does not accept them; parse with { bundle: true } to install them.",
        ),
      );
      return;
    }
    if (!options.anyRequires && !features.includes(entry)) {
      // As JSON writes it: a line break or a lone half of a pair in the entry is escaped, not echoed.
      const shown = JSON.stringify(quotable(entry));
      ctx.errors.push(
        issue(at, "requires", `this host does not understand ${shown}, so it cannot run the agent as meant.`),
      );
    }
  });
}
