/**
 * Checks the options of a built-in personality (and of the scripted model) before a server starts,
 * so a value it cannot honour is a `TestkitError` (`invalid-option`) naming the option rather than
 * a nonsense answer to every request later.
 */
import { TestkitError } from "../errors.js";
import { ownFields } from "../own-body.js";

/** One option's rule: what the value must be (for the message) and the test it must pass. */
export interface OptionRule {
  readonly expected: string;
  readonly test: (value: unknown) => boolean;
}

/** A whole number >= 1 (a context size, a token count). */
export const positiveWhole: OptionRule = {
  expected: "a whole number of at least 1",
  test: (v) => typeof v === "number" && Number.isInteger(v) && v >= 1,
};

/** A finite number of milliseconds >= 0. */
export const finiteMs: OptionRule = {
  expected: "a finite number of milliseconds, 0 or more",
  test: (v) => typeof v === "number" && Number.isFinite(v) && v >= 0,
};

/** A number of milliseconds >= 0, `Infinity` allowed (a duration compared, never waited for). */
export const durationMs: OptionRule = {
  expected: "a number of milliseconds, 0 or more (Infinity: for ever)",
  test: (v) => typeof v === "number" && v >= 0,
};

export const flag: OptionRule = {
  expected: "true or false",
  test: (v) => typeof v === "boolean",
};

export const nonEmptyString: OptionRule = {
  expected: "a non-empty string",
  test: (v) => typeof v === "string" && v !== "",
};

export const stringList: OptionRule = {
  expected: "an array of strings",
  test: (v) => Array.isArray(v) && v.every((s) => typeof s === "string"),
};

export const regExp: OptionRule = {
  expected: "a RegExp",
  test: (v) => v instanceof RegExp,
};

/** One of the given strings. */
export function oneOf(...values: string[]): OptionRule {
  return {
    expected: values.map((v) => JSON.stringify(v)).join(" or "),
    test: (v) => typeof v === "string" && values.includes(v),
  };
}

function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null || typeof value !== "object") return String(value);
  if (Array.isArray(value)) return "an array";
  if (value instanceof RegExp) return String(value);
  return "an object";
}

/**
 * Throws a `TestkitError` (`invalid-option`) when `options` is not an object, has a name `rules`
 * does not list, or has a value (other than `undefined` or `null`, which mean the default: a field
 * read back from JSON) its rule refuses.
 * `owner` names whose options they are, e.g. "llamacpp personality".
 */
export function checkOptions(owner: string, options: unknown, rules: Record<string, OptionRule>): void {
  if (options === undefined) return;
  const known = Object.keys(rules);
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new TestkitError(
      "invalid-option",
      `${owner} options must be an object (${known.join(", ")}), got ${shown(options)}.`,
    );
  }
  for (const [name, value] of Object.entries(options)) {
    const rule = rules[name];
    if (!Object.hasOwn(rules, name) || rule === undefined) {
      throw new TestkitError(
        "invalid-option",
        `${owner} has no option ${JSON.stringify(name)}; its options are ${known.join(", ")}.`,
      );
    }
    if (value !== undefined && value !== null && !rule.test(value)) {
      throw new TestkitError(
        "invalid-option",
        `${owner} option ${name} must be ${rule.expected}, got ${shown(value)}.`,
      );
    }
  }
}

/**
 * Checks `options` (see `checkOptions`) and returns them as the caller wrote them: each option of
 * `rules` where `options` holds it (a class instance's getter too), in an object with no prototype,
 * so an option left out reads as absent whatever a polluted `Object.prototype` holds.
 */
export function ownOptions<T extends object>(
  owner: string,
  options: T,
  rules: Record<string, OptionRule>,
): T {
  checkOptions(owner, options, rules);
  return ownFields(options, Object.keys(rules)) as T;
}
