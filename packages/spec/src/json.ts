// Small JSON helpers shared by the parser, the resolver and the exporter.
import { protoless } from "./protoless.js";
import { tellingPair, urlSign, withoutKeys, withoutUrlSecrets } from "./secret-signs.js";

/** A plain object as JSON.parse makes one (or one with no prototype). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Sets an own, enumerable property, so a key such as `__proto__` is data rather than a prototype. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(
    target,
    key,
    protoless({ value, enumerable: true, writable: true, configurable: true }),
  );
}

const MAX_DEPTH = 64;

/** Why `cloneJson` gave up on a value, for the warning that drops it. */
export interface JsonProblem {
  reason?: string;
}

/**
 * A deep copy of a JSON value, or `undefined` when it is not one (a function, a cycle, a class
 * instance, a non-finite number, nesting deeper than 64), with why in `problem.reason`. `null`
 * inside is kept: it is a value there.
 */
export function cloneJson(
  value: unknown,
  problem: JsonProblem = {},
  depth = 0,
  seen: Set<object> = new Set(),
): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  const fail = (reason: string): undefined => {
    problem.reason ??= reason;
    return undefined;
  };
  if (typeof value === "number")
    return Number.isFinite(value)
      ? Object.is(value, -0)
        ? 0
        : value
      : fail("it holds a number JSON cannot write");
  if (value === undefined) return fail("it holds undefined");
  if (typeof value !== "object") return fail(`it holds a ${typeof value}`);
  if (depth > MAX_DEPTH) return fail(`it nests deeper than ${MAX_DEPTH} levels`);
  if (seen.has(value)) return fail("it refers to itself");
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const item of value) {
        const copy = cloneJson(item, problem, depth + 1, seen);
        if (copy === undefined) return undefined;
        out.push(copy);
      }
      return out;
    }
    if (!isPlainObject(value)) return fail("it holds an object that is not plain data");
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      // An undefined property is no property, as JSON.stringify reads it.
      if (value[key] === undefined) continue;
      const copy = cloneJson(value[key], problem, depth + 1, seen);
      if (copy === undefined) return undefined;
      setOwn(out, key, copy);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

/** How much of a name a path or a message quotes; a longer one is cut and ends in `…`. */
export const MAX_QUOTED = 60;

/** A `name=value` pasted as a name: its leading dashes (`--api-key=X`) and the pair. */
const PAIR_NAME = /^(-*)([^=]*=)/;

/**
 * @internal Whether a name (an object key) holds a credential other than a key shape: a URL's
 * (`postgres://app:X@db/app`, `https://h/?api_key=X`) or a telling pair's (`password=X`,
 * `--api-key=X`), as `findSpecSecrets` reads a value. No field or variable is named so.
 */
export function credentialInName(name: string): boolean {
  if (urlSign(name) !== undefined) return true;
  const pair = PAIR_NAME.exec(name);
  return pair !== null && tellingPair(name.slice(pair[1]?.length ?? 0));
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
const SECRET = "${SECRET}";

/** The name with a URL's or a telling pair's credential written `${SECRET}` (see `credentialInName`). */
function withoutNameSecrets(name: string): string {
  if (urlSign(name) !== undefined) return withoutUrlSecrets(name, () => SECRET);
  const pair = PAIR_NAME.exec(name);
  if (pair === null || !tellingPair(name.slice(pair[1]?.length ?? 0))) return name;
  return `${pair[0]}${SECRET}`;
}

/**
 * A name from the document as a path or message may quote it: a key-shaped part written
 * `${SECRET}` (a key pasted where a name goes is not echoed into a log) and at most
 * `MAX_QUOTED` characters.
 */
export function quotable(name: string): string {
  // No key shape matches fewer than 14 characters ("Basic " and 8), and most names are shorter.
  const safe = withoutNameSecrets(name.length < 14 ? name : withoutKeys(name));
  if (safe.length <= MAX_QUOTED) return safe;
  // Never between the two halves of a pair (an emoji): a lone half is not text a log can write.
  const high = safe.charCodeAt(MAX_QUOTED - 1);
  const cut = high >= 0xd800 && high <= 0xdbff ? MAX_QUOTED - 1 : MAX_QUOTED;
  return `${safe.slice(0, cut)}…`;
}

/** `a.b`, `a["odd key"]`, `a[3]`: how a path names a child (its name as `quotable` shows it). */
export function child(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  const shown = quotable(key);
  if (/^[A-Za-z_$][\w$]*$/.test(shown)) return path === "" ? shown : `${path}.${shown}`;
  return `${path}[${JSON.stringify(shown)}]`;
}
