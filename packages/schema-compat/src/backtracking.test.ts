import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backtrackingPatterns, mayBacktrack } from "./index.js";

/** A piece of a pattern that matches one character (or a fixed run) in one way. */
const atom = fc.constantFrom("a", "[a-z]", "\\d", ".", "[^\\]]", "\\p{L}", "x-", "(?:ab)", "\\u{1F600}");
/** A quantifier whose count varies. */
const varying = fc.constantFrom("*", "+", "?", "{0,3}", "{2,}", "*?", "+?");
/** A run of zeros, some long: JavaScript reads a quantifier's bound with any number of digits. */
const zeros = fc.nat(40).map((n) => "0".repeat(n));
/** A bound past any key's length, some too long for a number (`{1,99999999999999999999999}`). */
const huge = fc.integer({ min: 3, max: 400 }).map((n) => "9".repeat(n));
/** A quantifier that repeats what it follows more than once. */
const repeating = fc.oneof(
  fc.constantFrom("*", "+", "{2}", "{1,}", "{2,5}", "*?", "+?", "{3,}"),
  fc.tuple(zeros, fc.integer({ min: 1, max: 3 })).map(([z, n]) => `{${z}${n},}`),
  fc.tuple(zeros, fc.integer({ min: 0, max: 3 }), huge).map(([z, n, max]) => `{${z}${n},${max}}`),
);
/** A quantifier in braces whose count varies, its bounds with leading zeros or past any key. */
const braceVarying = fc.oneof(
  fc.constantFrom("{0,3}", "{2,}", "{0,1}"),
  fc.tuple(zeros, fc.integer({ min: 0, max: 3 })).map(([z, n]) => `{${z}${n},}`),
  fc.tuple(zeros, fc.integer({ min: 0, max: 2 }), huge).map(([z, n, max]) => `{${z}${n},${max}}`),
);
/** `\u`, `\p`, `\P` before a brace: one atom with the `u` flag, a letter then the brace without it. */
const braceEscape = fc.constantFrom("\\u", "\\p", "\\P");
/** A run of atoms, some with a varying quantifier. */
const run = fc
  .array(fc.tuple(atom, fc.option(varying, { nil: "" })), { minLength: 1, maxLength: 3 })
  .map((parts) => parts.map(([a, q]) => a + q).join(""));

/** A group body that holds a varying quantifier or an alternation. */
const ambiguousBody = fc.oneof(
  fc.tuple(run, atom, varying, run).map(([before, a, q, after]) => `${before}${a}${q}${after}`),
  fc.tuple(run, run).map(([left, right]) => `${left}|${right}`),
);
const opener = fc.constantFrom("(", "(?:", "(?<name>");

/** Expects `mayBacktrack` to call each of `safe` safe and each of `risky` risky, naming the one that is not. */
function expectVerdicts(safe: string[], risky: string[]): void {
  for (const pattern of safe) expect(mayBacktrack(pattern), pattern).toBe(false);
  for (const pattern of risky) expect(mayBacktrack(pattern), pattern).toBe(true);
}

describe("mayBacktrack", () => {
  it("never calls a nested quantifier or a quantified alternation safe, wherever it sits", () => {
    fc.assert(
      fc.property(
        fc.option(fc.constant("^"), { nil: "" }),
        fc.option(run, { nil: "" }),
        opener,
        ambiguousBody,
        repeating,
        fc.option(run, { nil: "" }),
        fc.option(fc.constant("$"), { nil: "" }),
        (start, before, open, body, outer, after, end) => {
          expect(mayBacktrack(`${start}${before}${open}${body})${outer}${after}${end}`)).toBe(true);
        },
      ),
    );
  });

  it("reads a pattern valid only without the u flag in that grammar, where \\u{1,} repeats a u (r44 #1)", () => {
    // Each took 1 to 9 s on a key of under 30 characters and was called safe: the braces were read
    // as one `\u{…}` atom, which only the `u` flag makes them, and these compile only without it.
    for (const pattern of [
      "^(\\u{1,})+$",
      "^(\\p{1,})+$",
      "^(\\P{0,9})*$",
      "^x\\u{(a+)+b}",
      "^\\p{([a-z]+)*}$",
    ]) {
      expect(() => new RegExp(pattern, "u"), pattern).toThrow(SyntaxError);
      expect(mayBacktrack(pattern), pattern).toBe(true);
    }
    // With the `u` flag they are one atom each, repeated once: safe.
    for (const pattern of ["^\\u{1F600}+$", "^\\p{L}+$", "^[\\p{L}\\p{N}_-]+$", "^\\P{Lu}*$", "^\\u0041+$"])
      expect(mayBacktrack(pattern), pattern).toBe(false);
    fc.assert(
      fc.property(
        fc.option(fc.constant("^"), { nil: "" }),
        opener,
        fc.option(run, { nil: "" }),
        braceEscape,
        braceVarying,
        fc.option(run, { nil: "" }),
        repeating,
        (start, open, before, letter, count, after, outer) => {
          // A group repeated more than once holding `\u{1,}` (a `u` whose count varies, without the
          // flag). Not where the `u` follows only one letter or class that cannot take it
          // (`(a\u{0,9})+`, `([a-z]\P{0,3})*`): each repetition then starts with that character,
          // and the repetitions never trade characters (fix151).
          const head = ["a", "\\d", "[a-z]"].includes(before) ? new RegExp(`^${before}$`) : undefined;
          fc.pre(after !== "" || head === undefined || head.test(letter.slice(1)));
          expect(mayBacktrack(`${start}${open}${before}${letter}${count}${after})${outer}$`)).toBe(true);
        },
      ),
    );
    fc.assert(
      fc.property(braceEscape, opener, ambiguousBody, repeating, (letter, open, body, outer) => {
        // `\u{(a+)+}`: without the flag the braces are literals and the group inside them is live.
        expect(mayBacktrack(`^x${letter}{${open}${body})${outer}}`)).toBe(true);
      }),
    );
  });

  it("reads a quantifier's bounds however many digits they have (r44 #1)", () => {
    // Read as a literal `{` before: 9 s and 4.3 s on keys of 29 and 27 characters.
    for (const pattern of [
      "^(a+){0000000000000000000001,}$",
      "^(a+){1,99999999999999999999999}$",
      `^(a|ab){${"0".repeat(1000)}2}$`,
      `^(?:[a-z]+){${"9".repeat(400)},}$`,
      `^a{0,${"9".repeat(30)}}a{0,${"9".repeat(30)}}a{${"0".repeat(30)}1,}$`,
    ])
      expect(mayBacktrack(pattern), pattern.slice(0, 60)).toBe(true);
    expect(mayBacktrack(`^[a-z]{${"0".repeat(40)}1,${"9".repeat(40)}}$`)).toBe(false);
  });

  it("calls simple anchored patterns, prefixes and alternations of words safe", () => {
    for (const pattern of [
      "^x-",
      "^[a-z]+$",
      "^(foo|bar)$",
      "^[a-z]+_[0-9]+$",
      "^(?:get|set)_\\w+$",
      "^\\d{1,3}$",
      "x-",
      "^.*$",
    ])
      expect(mayBacktrack(pattern), pattern).toBe(false);
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z_-]{1,12}$/),
        fc.constantFrom("", "$", "[a-z]+$", "\\d*$"),
        (word, end) => {
          expect(mayBacktrack(`^${word}${end}`)).toBe(false);
        },
      ),
    );
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z]{1,8}$/), { minLength: 1, maxLength: 6 }), (words) => {
        expect(mayBacktrack(`^(${words.join("|")})$`)).toBe(false);
      }),
    );
  });

  it("calls back-references, quantified lookarounds and long runs of quantifiers risky", () => {
    for (const pattern of [
      "^([a-z]+)*$",
      "^(a|a)*$",
      "^(a+){2}$",
      "^(\\w)\\1$",
      "^(?<c>a)\\k<c>$",
      "^(?=.*[A-Z])",
      "(?<=a+)b",
      "^a*a*a*$",
      "a+a+",
      // Twenty optional two-way groups: 3^20 ways to try a key of a's.
      `^${"(a|a)?".repeat(20)}$`,
    ])
      expect(mayBacktrack(pattern), pattern).toBe(true);
  });

  it("calls bounded repeats risky once their ways pass what a key of 256 characters can afford (r44 #6)", () => {
    // 31^4 ways: called safe before, and 7 to 30 ms a key (bench/patterns.bench.ts), for each key
    // of an object. Eleven two-way groups (3^11) and an unanchored pair of a{0,30} likewise.
    for (const pattern of ["^a{0,30}a{0,30}a{0,30}a{0,30}$", `^${"(?:a|a)?".repeat(11)}$`, "a{0,30}a{0,30}$"])
      expect(mayBacktrack(pattern), pattern).toBe(true);
    // Still safe: two unbounded quantifiers anchored (257^2 ways), one unanchored, and three
    // bounded repeats that stay under the budget.
    for (const pattern of [
      "^a*a*$",
      "^[a-z]+-[a-z0-9]+$",
      "[a-z]+$",
      "^a{0,40}a{0,40}a{0,40}$",
      "^\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}$",
    ])
      expect(mayBacktrack(pattern), pattern).toBe(false);
  });

  it("calls common anchored patterns safe where a character the quantifier before it cannot take separates them (r47 F4)", () => {
    // Each takes under 0.01 ms a key: the literal or class between the quantifiers is one the one
    // before it cannot match, so it ends that quantifier in one way and the ways add up. Where the
    // character between can be taken by the quantifier before it, or the quantifiers meet, there
    // is no separation: the ways still multiply.
    expectVerdicts(
      [
        "^-?\\d+\\.\\d+$",
        "^v?\\d+\\.\\d+$",
        "^https?://[^/]+/.*$",
        "^[a-z]+_[0-9]+s?$",
        "^[a-z]+[._-][a-z]+[._-][a-z]+$",
        "^\\d+:\\d+:\\d+\\.\\d+$",
      ],
      [
        "^a*a*a*$",
        "^\\w+_\\w+_\\w+$",
        "^[a-z.]+\\.[a-z.]+\\.[a-z.]+$",
        "^.*-.*-.*$",
        "^\\d+\\d+\\.\\d+$",
        "^\\d+\\.?\\d+\\.?\\d+$",
      ],
    );
  });

  it("calls common decimal, slug and version patterns safe where a group starts with a separator (r48 F4)", () => {
    // Each takes under 0.02 ms on its slowest key of 256 characters (runs of the repeated class,
    // then a character that fails it): the group's first atom is one the quantifier before it
    // cannot take, so that quantifier enters the group in one way; a repeated group's tail cannot
    // take that atom either, so its repetitions start at fixed places and never trade characters.
    // Still risky: the group's tail can take its first atom (`-` in `[a-z-]`), or the first atom is
    // one the quantifier before it takes, or the group holds more than a separator and one run.
    expectVerdicts(
      [
        "^\\d+(\\.\\d+)?$",
        "^-?\\d+(\\.\\d+)?$",
        "^[a-z0-9]+(?:-[a-z0-9]+)*$",
        "^[a-z]+(_[a-z]+)*$",
        "^[a-z]+(-[a-z]+)*$",
        "^v?\\d+\\.\\d+\\.\\d+(-[a-z0-9.]+)?$",
        "^\\d{1,3}(\\.\\d{1,3}){3}$",
      ],
      [
        "^[a-z]+(-[a-z-]+)*$",
        "^[a-z-]+(-[a-z]+)*$",
        "^\\w+(_\\w+)*$",
        "^[a-z]+(-[a-z]+[0-9]*)*$",
        "^([a-z]+-)*$",
        "^(?:-?[a-z]+)*$",
        "^[a-z]+(-[a-z]+|_[a-z]+)*$",
        "^(?=(-[a-z]+)*)",
      ],
    );
  });

  it("calls optional groups in a row, a character after a repeated group and letter or digit heads safe where how a group ends separates them (fix151)", () => {
    // Each was called risky and takes under 0.003 ms on its slowest key of 256 characters (and
    // twice as long on a key twice as long): what follows a group starts with a character none of
    // the atoms that can end the group takes (its last atom, its head where it is repeated, the
    // atom before it where it can be skipped), so each way into the group goes on past it in one
    // place. A repeated group's head may be a letter or digit, so long as its tail cannot take it.
    // Still risky: what follows the group starts with a character one of those takes, the group
    // is one of alternatives that end alike, or the head is taken by the atom before the group;
    // and, where the count relies on these shapes, anything past half the budget, such as two
    // trading quantifiers before the group (`^[a-z0-9]*[a-z0-9]+(Aa?){3}$`: 0.06 to 0.08 ms a key).
    expectVerdicts(
      [
        "^-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?$",
        "^(\\d+)?(\\.\\d+)?$",
        "^\\d+(?:\\.\\d+)?(?:\\.\\d+)?$",
        "^\\d+(\\.\\d+)?(\\.\\d+)?\\.\\d+$",
        "^[a-z]+(-[a-z]+)*\\.[a-z]+$",
        "^[a-z]+(-[a-z]+)*(_[a-z]+)*$",
        "^[a-z]+(\\d[a-z]+)*$",
        "^[0-9]+(x[0-9]+)*$",
        "^[A-Z][a-z]+(?:[A-Z][a-z]+)*$",
        "^[a-z]+(?:[A-Z][a-z0-9]*)*$",
        "^(a\\u{0,999}){0,999}$",
      ],
      [
        "^(\\d+)?(\\d+)?$",
        "^(\\w+)?(\\w+)?x$",
        "^\\d+(\\.\\d+)?\\d+$",
        "^[a-z]+(-[a-z]+)*(-[a-z]+)*$",
        `^x+${"(-a|-a)?".repeat(12)}$`,
        `^\\d+${"(?:\\.\\d+|\\.)?".repeat(8)}$`,
        `^${"(a|a)?(a|ab)?".repeat(6)}$`,
        "^[a-z]+(x[a-z]+)*$",
        "^[a-z0-9]*[a-z0-9]+(Aa?){3}$",
      ],
    );
  });

  it("separates only by a character it can name: not `.`, nor an escaped letter beyond ASCII (r48 F4)", () => {
    // Both were called safe, and `.` (or `\é` without the `u` flag) takes the same characters as
    // the runs on either side: 4 to 5 ms on a key of 255 é's then an `a`, and more with each run.
    expectVerdicts([], ["^[^\\x00-\\x7f]+.[^\\x00-\\x7f]+.[^\\x00-\\x7f]+$", "^[^a]+\\é[^a]+\\é[^a]+$"]);
  });

  // A bound on the read, not a timing: a read that is not linear takes hours on these, a linear one
  // a second or two, and more on a loaded machine (it once took over 5 s in a full run beside
  // other work), so the bound is the test's 30 s. fuzz/ladder.ts measures how the time grows.
  it("reads a pattern in time linear in its length", { timeout: 30_000 }, () => {
    // Deep nesting and long runs are read in one pass (no pattern is run): a megabyte each.
    for (const pattern of [
      "(".repeat(200_000),
      `^${"[a-z]".repeat(200_000)}$`,
      "\\".repeat(1_000_001),
      "{1,".repeat(250_000),
      `^${"x?_".repeat(250_000)}$`,
      `^${"[a-z]_".repeat(150_000)}$`,
    ])
      expect(typeof mayBacktrack(pattern)).toBe("boolean");
  });
});

describe("backtrackingPatterns", () => {
  const slow = "^([a-z]+)*$";

  it("finds a risky pattern whose entry declares an inherited name, or decides one, by its schema path", () => {
    const schema = {
      type: "object",
      properties: {
        map: { type: "object", patternProperties: { [slow]: { properties: { constructor: {} } } } },
        deciding: {
          type: "object",
          patternProperties: { "(a|ab)*": { type: "object" } },
          additionalProperties: { properties: { toString: {} } },
        },
        "a/b": { $ref: "#/$defs/Named" },
      },
      $defs: {
        Named: { patternProperties: { "^a*a*a*$": { $ref: "#/$defs/Leaf" } } },
        Leaf: { properties: { valueOf: {} } },
      },
    };
    expect(backtrackingPatterns(schema)).toEqual(
      expect.arrayContaining([
        { path: "#/properties/map", pattern: slow },
        { path: "#/properties/deciding", pattern: "(a|ab)*" },
        { path: "#/$defs/Named", pattern: "^a*a*a*$" },
      ]),
    );
    expect(backtrackingPatterns(schema)).toHaveLength(3);
  });

  it("leaves out patterns the walk never runs, safe ones and data that only looks like a schema", () => {
    expect(
      backtrackingPatterns({
        type: "object",
        properties: {
          constructor: { type: "string" },
          // Its entry declares nothing and no additionalProperties depends on it: never run.
          record: { type: "object", patternProperties: { [slow]: { type: "object" } } },
          safe: { type: "object", patternProperties: { "^x-": { properties: { toString: {} } } } },
          data: { default: { patternProperties: { [slow]: { properties: { constructor: {} } } } } },
        },
      }),
    ).toEqual([]);
    // No inherited name anywhere: mapAlongSchema is never needed.
    expect(
      backtrackingPatterns({ type: "object", patternProperties: { [slow]: { properties: { name: {} } } } }),
    ).toEqual([]);
    expect(backtrackingPatterns(null)).toEqual([]);
  });
});
