// How long V8 takes to test one key of up to PATTERN_KEY_LIMIT characters against the slowest
// patterns `mayBacktrack` still calls safe: for each family of patterns (k bounded repeats of `a`
// in a row, anchored or not; optional two-way groups in a row; two unbounded quantifiers), the
// largest member it calls safe, tried on every key of `a`s or of the family's unit (then a `!` that makes it fail) from 1
// to PATTERN_KEY_LIMIT characters. `mapAlongSchema` tests each key of an object, so this is the
// time one key of a model's object can cost; r44 #6 found about 30 ms where "about a millisecond"
// was meant. The first call runs V8's regexp interpreter; later calls run compiled code.
// Run: pnpm --filter @loopwright/schema-compat bench
import { mayBacktrack, PATTERN_KEY_LIMIT } from "../src/backtracking.js";

/** A family of patterns growing with `n`, and the largest `n` it is tried up to. */
interface Family {
  name: string;
  pattern(n: number): string;
  upTo: number;
  /** What the keys repeat (then a `!` that makes them fail): `a` unless given. */
  unit?: string;
}

const bounded = (k: number, anchored: boolean): Family => ({
  name: `${anchored ? "^" : ""}a{0,n} x${k}$`,
  pattern: (n) => `${anchored ? "^" : ""}${`a{0,${n}}`.repeat(k)}$`,
  upTo: PATTERN_KEY_LIMIT,
});

/** One fixed pattern each, its keys repeating the unit given. */
function common(patterns: [string, string][]): Family[] {
  return patterns.map(([pattern, unit]) => ({ name: pattern, pattern: () => pattern, upTo: 1, unit }));
}

const families: Family[] = [
  ...[2, 3, 4, 5, 6].map((k) => bounded(k, true)),
  ...[1, 2, 3].map((k) => bounded(k, false)),
  { name: "^(?:a|a)? xn$", pattern: (n) => `^${"(?:a|a)?".repeat(n)}$`, upTo: 40 },
  { name: "(?:a|a)? xn$", pattern: (n) => `${"(?:a|a)?".repeat(n)}$`, upTo: 40 },
  { name: "^a*a{0,n}$", pattern: (n) => `^a*a{0,${n}}$`, upTo: PATTERN_KEY_LIMIT },
  // A repeated group that starts with a separator its tail cannot take (r48 F4), entered in n ways.
  { name: "^[a-z-]{0,n}(-[a-z]+)*$", pattern: (n) => `^[a-z-]{0,${n}}(-[a-z]+)*$`, upTo: 256, unit: "a-" },
  { name: "^[a-z-]{0,n}(-[a-z]+)*$", pattern: (n) => `^[a-z-]{0,${n}}(-[a-z]+)*$`, upTo: 256, unit: "-a" },
  // Common patterns a group that starts with a separator lets through (r48 F4): one member each.
  ...common([
    ["^\\d+(\\.\\d+)?$", "1"],
    ["^-?\\d+(\\.\\d+)?$", "1"],
    ["^[a-z0-9]+(?:-[a-z0-9]+)*$", "a-"],
    ["^[a-z]+(_[a-z]+)*$", "a_"],
    ["^v?\\d+\\.\\d+\\.\\d+(-[a-z0-9.]+)?$", "1"],
    ["^\\d{1,3}(\\.\\d{1,3}){3}$", "1."],
  ]),
  // What follows a group, separated from how the group ends, and letter or digit heads (fix151).
  ...common([
    ["^-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?$", "1"],
    ["^(\\d+)?(\\.\\d+)?$", "1"],
    ["^[a-z]+(-[a-z]+)*\\.[a-z]+$", "a-"],
    ["^[a-z]+(-[a-z]+)*(_[a-z]+)*$", "a-"],
    ["^[0-9]+(x[0-9]+)*$", "1x"],
    ["^[A-Z][a-z]+(?:[A-Z][a-z]+)*$", "Aa"],
  ]),
];

/** The largest member of `family` that `mayBacktrack` calls safe, or undefined where none is. */
function edge(family: Family): string | undefined {
  let found: string | undefined;
  for (let n = 1; n <= family.upTo; n++) {
    const pattern = family.pattern(n);
    if (mayBacktrack(pattern)) break;
    found = pattern;
  }
  return found;
}

/** The slowest key's time, in ms: its first test (interpreted) and the median of five later ones. */
function slowestKey(pattern: string, unit: string): { first: number; steady: number; at: number } {
  let first = 0;
  let steady = 0;
  let at = 0;
  for (let length = 1; length <= PATTERN_KEY_LIMIT; length++) {
    const key = `${unit.repeat(length).slice(0, length - 1)}!`;
    // A fresh source for each key (`length` empty groups, which match nothing more) so V8 starts
    // it in its interpreter again rather than reuse the code it compiled.
    const anchor = pattern.startsWith("^") ? "^" : "";
    const fresh = new RegExp(`${anchor}${"(?:)".repeat(length)}${pattern.slice(anchor.length)}`, "u");
    let start = performance.now();
    fresh.test(key);
    first = Math.max(first, performance.now() - start);
    const regex = new RegExp(pattern, "u");
    const times: number[] = [];
    for (let round = 0; round < 7; round++) {
      start = performance.now();
      regex.test(key);
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const median = times[3] as number;
    if (median > steady) {
      steady = median;
      at = length;
    }
  }
  return { first, steady, at };
}

console.log(`node ${process.version}; keys of 1 to ${PATTERN_KEY_LIMIT} characters; ms a key\n`);
let worst = 0;
for (const family of families) {
  const pattern = edge(family);
  if (pattern === undefined) {
    console.log(`${family.name.slice(0, 24).padEnd(24)} none called safe`);
    continue;
  }
  const { first, steady, at } = slowestKey(pattern, family.unit ?? "a");
  worst = Math.max(worst, steady);
  const shown = pattern.length > 44 ? `${pattern.slice(0, 43)}…` : pattern;
  console.log(
    `${family.name.slice(0, 24).padEnd(24)} ${shown.padEnd(45)} slowest key ${String(at).padStart(3)} chars: ${steady
      .toFixed(3)
      .padStart(7)} ms compiled, ${first.toFixed(3).padStart(7)} ms first call`,
  );
}
console.log(`\nslowest key of any safe edge pattern, compiled: ${worst.toFixed(3)} ms`);
