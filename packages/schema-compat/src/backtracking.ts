/**
 * A static, linear-time check of a regular expression for the shapes that make a backtracking
 * engine (V8's, every JavaScript one) take exponential or high-polynomial time on a short input.
 * It is conservative: it may call a pattern that is fast in practice risky (`^[a-z]+(-[a-z]+)*-[a-z]+$`),
 * never the other way round for the shapes it knows. The subject is at most `PATTERN_KEY_LIMIT`
 * characters (a model's key): an unbounded quantifier counts as that many ways to match.
 */

/**
 * The longest key `mapAlongSchema` tests a `patternProperties` pattern on. The patterns are the
 * host's and the keys the model's: a backtracking pattern (`^([a-z]+)*$`) can take minutes on a
 * 31-character key, so patterns are tested only where they can change the walk's answer, never
 * where `mayBacktrack` calls them risky, and never on a longer key. Such a key (or pattern) is
 * taken both ways instead: the entry is followed (its inherited names left out of the object's
 * prototype) and `additionalProperties` still applies. That is the safe side: an object the walk
 * follows for nothing only loses inherited members the model never wrote (what
 * `argumentsPrototype` does), while one it missed would read a declared but left-out
 * `constructor` as `Object`. The bound is what `mayBacktrack` counts an unbounded quantifier as.
 */
export const PATTERN_KEY_LIMIT = 256;

/**
 * How many ways (paths through the pattern) a key may be tried in before the pattern counts as
 * risky: under half a millisecond of V8's compiled backtracking on the slowest key of up to 256
 * characters (bench/patterns.bench.ts times the largest pattern of each shape it lets through),
 * and `mapAlongSchema` tests every key of an object. Two unbounded quantifiers in sequence
 * (`^[a-z]+_[a-z]+$`, or one unanchored: 257² ways) stay under it; three (`^a*a*a*$`: 20 ms a
 * key) do not, nor four bounded ones of 31 counts each (`^a{0,30}a{0,30}a{0,30}a{0,30}$`: 31⁴
 * ways, 7 to 30 ms a key, under the budget of a million ways this once had).
 */
const PATH_BUDGET = 100_000;

/**
 * The share of `PATH_BUDGET` a pattern may use where its count relies on how a group ends (a
 * group or atom after an optional or repeated group: `(\.\d+)?([eE]\d+)?`, `(-[a-z]+)*\.`) or
 * on a group delimited by a letter or digit head (`(x[0-9]+)*`). These shapes are linear, but
 * written after two quantifiers that trade characters (`^[a-z0-9]*[a-z0-9]+(Aa?){3}$`: 66,049
 * ways before the group) they take as long as those do, 0.06 to 0.08 ms a key; half the budget
 * keeps each such pattern under 0.07 ms (fix151; measured on 40,000 random patterns).
 */
const MARGIN = 0.5;

/**
 * The most ways a delimited group (see `Opened`) counts as, repeated however often, for each way
 * into it: its repetitions end at different places, one way for each character of the key at
 * most, but V8 takes about eight times as long over each of them as over a plain quantifier's
 * count (`^[a-z-]+(-[a-z]+)*$`: 257 ways into the group, 4 ms a key; bench/patterns.bench.ts).
 */
const REPEATED_GROUP_WAYS = (PATTERN_KEY_LIMIT + 1) * 8;

/** One group being read: its finished alternatives' ways, the current alternative's, and what it holds. */
interface Frame {
  /** The ways of the alternatives before the current one (summed: each is tried in turn). */
  done: number;
  /** The ways of the current alternative's runs before the last separator (summed: see `separates`). */
  before: number;
  /** The ways of the current alternative's run since the last separator (multiplied: each item's ways combine). */
  ways: number;
  /**
   * The last item, when it is one atom whose count varies (`\d+`, `s?`): its source and its
   * counts, for `separates`; undefined after any other item.
   */
  repeated: { source: string; counts: number } | undefined;
  /** The source of the last item when it is one atom (not yet quantified), else undefined. */
  lastAtom: string | undefined;
  /** The ways of the last item, not yet multiplied in: a quantifier after it may change them. */
  last: number;
  /** Whether the last item is a group holding a quantifier that varies or an alternation. */
  lastVaries: boolean;
  /** Whether the last item can take a quantifier (an atom or a group, not an anchor or `|`). */
  lastQuantifiable: boolean;
  /** Whether this group holds (at any depth) a quantifier whose count varies, or an alternation. */
  varies: boolean;
  /** Whether this group holds (at any depth) a quantifier whose count varies. */
  repeats: boolean;
  /** Whether this group is a lookahead or lookbehind. */
  lookaround: boolean;
  /** How the ways before this group end (see `End`), for `separates`: undefined where unknown. */
  entry: End[] | undefined;
  /** Each item of the current alternative: one atom's source and counts, or undefined for any other item. */
  items: (Atom | undefined)[];
  /** The last item, when it is a group of one alternative (see `Opened`), not yet multiplied in. */
  group: Opened | undefined;
  /**
   * How the current run's ways end where its last item is a group that settled (see `End`), for
   * an atom or group after it that may separate; undefined after any other item.
   */
  ends: End[] | undefined;
}

/**
 * Some of the ways to try a key up to a point, all ending with the same atom: `ways` of them, of
 * which only `through` go on past an atom that `separates` from `source`: the atom whose count
 * varies that they end with, or for a delimited group repeated, its tail or head (`[a-z]|-`), or
 * undefined where there is none (then all of them go on). An atom whose count varies, followed
 * by one it cannot take, ends in one place for each way into it, so `through` is its ways
 * divided by its counts (fix151): this is what lets two optional groups in a row
 * (`(\.\d+)?([eE]\d+)?`), or a character after a repeated group (`(-[a-z]+)*\.`), add their
 * ways up instead of multiplying them.
 */
interface End {
  source: string | undefined;
  ways: number;
  through: number;
}

/** The most `End`s kept for one run (those with the same source are merged); past it, the rest go on undivided. */
const MAX_ENDS = 8;

/** One atom whose count varies: its source and how many counts it takes. */
interface Repeated {
  source: string;
  counts: number;
}

/** One atom of a group's body: its source and bounds (1 and 1 unless quantified). */
interface Atom {
  source: string;
  min: number;
  max: number;
}

/**
 * A closed group, not a lookaround, of one alternative. Where its first item is one atom taken
 * once (`(\.\d+)`, `(?:-[a-z0-9]+)`), `head` is that atom. It separates (r48 F4) where `head`
 * separates from how the ways before the group end (`entry`): each of them then enters the group
 * in one place only. It is `delimited` where its body is `head` and one atom whose count varies
 * that cannot match what `head` matches (the tail; `(-[a-z]+)`, `(x[0-9]+)`): each repetition
 * then starts at a character the one before cannot take, and the repetitions never trade characters.
 * Where its body ends with one atom whose count varies, `end` is that atom: what follows the group
 * may separate from it.
 */
interface Opened {
  head: string | undefined;
  entry: End[] | undefined;
  /** The tail's counts where the group is delimited, else undefined. */
  tail: number | undefined;
  /** Where the group is delimited, what its last character can be: its tail, or its head (the tail taken no times). */
  rim: string | undefined;
  /** The body's last atom where its count varies: its source, counts, and the ways of the body's last run. */
  end: { source: string; counts: number; ways: number } | undefined;
  /** The ways to try the body once. */
  ways: number;
  /** Whether the body holds a quantifier whose count varies or an alternation. */
  varies: boolean;
  min: number;
  max: number;
}

function frame(lookaround: boolean, entry?: End[]): Frame {
  return {
    done: 0,
    before: 0,
    ways: 1,
    repeated: undefined,
    lastAtom: undefined,
    last: 1,
    lastVaries: false,
    lastQuantifiable: false,
    varies: false,
    repeats: false,
    lookaround,
    entry,
    items: [],
    group: undefined,
    ends: undefined,
  };
}

/** The ways past which counting stops (the answer is already "risky"); keeps the numbers finite. */
const CAP = PATH_BUDGET * (PATTERN_KEY_LIMIT + 1) * 4;
const capped = (n: number) => Math.min(n, CAP);

/** A `{n}`, `{n,}` or `{n,m}` quantifier, read where it starts (sticky): any number of digits. */
const COUNT = /\{(\d+)(,(\d*))?\}/y;

/**
 * `{n}`, `{n,}`, `{n,m}` at `i`: its bounds and where it ends, or undefined where `{` is a literal.
 * The digits are read however many there are (`{0000000000000000000001,}` is `{1,}`); a bound too
 * large for a number is infinite.
 */
function countAt(pattern: string, i: number): { min: number; max: number; end: number } | undefined {
  COUNT.lastIndex = i;
  const found = COUNT.exec(pattern);
  if (!found) return undefined;
  const min = Number(found[1]);
  const max = found[2] === undefined ? min : found[3] === "" ? Number.POSITIVE_INFINITY : Number(found[3]);
  return { min, max, end: i + found[0].length };
}

/**
 * A separator's source: one ASCII character written plainly (not `.`, which takes any) or a
 * punctuation mark escaped (`_`, `\.`, `/`; not `\é`, which takes a character `separates` never
 * tries), or a class of them (`[._-]`, `[\d.]`), not negated.
 */
const SEPARATOR = /^(?:[ --/-~]|\\[ -/:-@[-`{-~]|\\d|\[(?!\^)(?:[ -[\]-~]|\\[ -/:-@[-`{-~]|\\d)+\])$/;

/**
 * Whether the atom `separator`, written right after the atom `repeated` whose count varies,
 * splits the ways to try a key (r47 F4): it matches only ASCII characters, none of which
 * `repeated` matches, so `repeated` can end before it in one way only, and the quantifiers on
 * either side never trade characters (`^-?\d+\.\d+$`, `^[a-z]+_[0-9]+$`, `^[^/]+/.*$`). An atom
 * that does not compile (read in the other grammar) separates nothing.
 */
function separates(repeated: string, separator: string, unicode: boolean): boolean {
  if (!SEPARATOR.test(separator)) return false;
  const flags = unicode ? "u" : "";
  const left = regexOf(`^(?:${repeated})$`, flags);
  const right = regexOf(`^(?:${separator})$`, flags);
  if (left === null || right === null) return false;
  for (let code = 0; code < 128; code++) {
    const c = String.fromCharCode(code);
    if (right.test(c) && left.test(c)) return false;
  }
  return true;
}

/**
 * `pattern` as a regular expression with `flags`, or `null` where it is none. JSON Schema's
 * patterns are read with the `u` flag; one only valid without it (`\_`) is read so.
 */
export function regexOf(pattern: string, flags: "u" | "v" | ""): RegExp | null {
  try {
    return new RegExp(pattern, flags);
  } catch {
    return null;
  }
}

/** A pattern's test: false where a string surely fails it. */
export interface PatternTest {
  test(value: string): boolean;
}

/**
 * `pattern` as a test taking a string any grammar it compiles in takes: with the `u` flag, as
 * JSON Schema's validators read it (ajv; zod's own `/u` patterns, `\p{L}`, `\u{1F600}`, a `.` that
 * takes an astral character whole), and without it, as a host's own regular expression written
 * without the flag reads it (zod writes `/^.$/`'s source alone). Read in one only, a string the
 * tool takes was called one it refuses: `^\p{L}+$` without the flag is `p{L}` repeated, and
 * refused `héllo`. Where the `u` flag refuses it, also with the `v` flag (see `setsReading`).
 * Undefined for a pattern that compiles in none. For a pattern `mayBacktrack` passes; the reading
 * without the flag is run only where `backtracks` passes it too.
 */
export function patternTest(pattern: string): PatternTest | undefined {
  const unicode = regexOf(pattern, "u");
  const plain = unicode === null || !backtracks(pattern, false) ? regexOf(pattern, "") : null;
  const sets = unicode === null ? setsReading(pattern) : null;
  const readings = [unicode, plain, sets].filter((r): r is RegExp => r !== null);
  if (readings.length < 2) return readings[0];
  return { test: (value) => readings.some((r) => r.test(value)) };
}

/**
 * `pattern` read with the `v` flag, for one the `u` flag refuses: zod writes a `/v` expression's
 * source alone, and its class set operations (`[\p{L}--[a-z]]`, `[[a-z]&&[^aeiou]]`) read
 * without a flag as other characters — `^[\p{L}--[a-z]]$` refused `é`, which zod takes. Only
 * where every class still matches one character, as `backtracks` counts it: not with `\q{…}`
 * (a class of strings, `[\q{a|aa}]+` backtracking as `(a|aa)+` does) or a property of strings
 * (`\p{RGI_Emoji}`, a property the `u` flag does not know); `null` otherwise.
 */
function setsReading(pattern: string): RegExp | null {
  if (pattern.includes("\\q{")) return null;
  for (const [property] of pattern.matchAll(/\\[pP]\{[^}]*\}/g)) {
    if (regexOf(property, "u") === null) return null;
  }
  return backtracks(pattern, true) ? null : regexOf(pattern, "v");
}

/**
 * The characters every match of `pattern` holds: each literal outside any group, class or escape
 * that no quantifier after it makes optional (`?`, `*`, `{0,…}`), where no `|` outside a group
 * offers another way — for zod's email pattern (`^(?:[A-Za-z0-9_'+\-]+\.)*…@(?:…\.)+[A-Za-z]{2,}$`,
 * which `mayBacktrack` calls risky) `@`. A string lacking one surely fails the pattern, known in
 * one pass over each without running it. Read in either grammar (with the `u` flag or without):
 * what may belong to an escape (`\x2D`, `\u{40}`: the letters, digits and brackets after it; a
 * property's braces whole, `\p{Script=Greek}`, and a group name's angle brackets, `\k<a$>`, whose
 * `=`, `$` or non-ASCII letters are no literal with the `u` flag) is not counted, nor a `{` that
 * is no quantifier, and an astral character is counted whole; a character left out only makes the
 * answer weaker. None for a pattern that is no regular expression.
 */
export function charactersEveryMatchHolds(pattern: string): string[] {
  if (regexOf(pattern, "u") === null && regexOf(pattern, "") === null) return [];
  const held = new Set<string>();
  let depth = 0;
  // The literal just read outside any group, held once what follows it is no quantifier taking none.
  let last: string | undefined;
  const hold = () => {
    if (last !== undefined) held.add(last);
    last = undefined;
  };
  let i = 0;
  while (i < pattern.length) {
    const ch = pattern[i] as string;
    if (ch === "\\") {
      hold();
      const kind = pattern[i + 1];
      i += 2;
      // `\p{Script=Greek}` and `\k<a$>`: read up to the closing brace or bracket (with the `u`
      // flag, and a named group for `\k`, what stands between them names a property or a group).
      const closer =
        (kind === "p" || kind === "P") && pattern[i] === "{"
          ? "}"
          : kind === "k" && pattern[i] === "<"
            ? ">"
            : undefined;
      const closing = closer === undefined ? -1 : pattern.indexOf(closer, i);
      if (closing >= 0) i = closing + 1;
      while (i < pattern.length && /[\w{}<>,]/.test(pattern[i] as string)) i++;
    } else if (ch === "[") {
      hold();
      i = classEnd(pattern, i);
    } else if (ch === "(" || ch === ")") {
      hold();
      depth += ch === "(" ? 1 : -1;
      i++;
    } else if (ch === "|") {
      if (depth === 0) return [];
      i++;
    } else if (ch === "*" || ch === "?" || ch === "+" || (ch === "{" && countAt(pattern, i) !== undefined)) {
      const count = ch === "{" ? countAt(pattern, i) : undefined;
      if (ch === "+" || (count !== undefined && count.min > 0)) hold();
      last = undefined;
      i = count?.end ?? i + 1;
      // A lazy quantifier (`+?`) takes as many at least.
      if (pattern[i] === "?") i++;
    } else {
      hold();
      const code = pattern.charCodeAt(i);
      const width = code >= 0xd800 && code <= 0xdbff && i + 1 < pattern.length ? 2 : 1;
      if (depth === 0 && ch !== "." && ch !== "^" && ch !== "$" && ch !== "{")
        last = pattern.slice(i, i + width);
      i += width;
    }
  }
  hold();
  return [...held];
}

/** Where a character class starting at `i` (`[`) ends: the index after its `]` (escapes skipped). */
function classEnd(pattern: string, i: number): number {
  let at = i + 1;
  if (pattern[at] === "^") at++;
  // A `]` first in the class is a literal only without the `u` flag; either reading ends at or after it.
  while (at < pattern.length && pattern[at] !== "]") at += pattern[at] === "\\" ? 2 : 1;
  return at + 1;
}

/**
 * Whether `pattern` can take a backtracking engine exponential or high-polynomial time on a key
 * of at most 256 characters (`true`: never run it on a model's key), in one pass over it:
 *
 * - a group repeated more than once (`*`, `+`, `{2}`, `{1,}`…) that holds a quantifier whose
 *   count varies or an alternation (`(a+)+`, `([a-z]+)*`, `(a|ab)*`, `((a)?){9}`): star height
 *   above one;
 * - a back-reference (`\1`, `\k<name>`), which no engine matches without backtracking;
 * - a lookahead or lookbehind holding a quantifier whose count varies (`(?=.*a)`);
 * - more ways to try a key than half a millisecond takes: each varying quantifier multiplies them
 *   by its counts (an unbounded one by 257), each alternation adds its branches, and a pattern not
 *   anchored by a leading `^` is tried from every position (`^a*a*a*$`, `(a|a)?` twenty times);
 *   a literal or class right after a repeated character that it cannot match (`\d+\.`, `[^/]+/`,
 *   `s?:`) separates the quantifiers on its two sides, whose ways then add up instead, and so
 *   does a group that starts with one (`\d+(\.\d+)?`); a repeated group of a punctuation mark
 *   and one quantified atom that cannot take it (`(-[a-z0-9]+)*`) counts as not nested, its
 *   repetitions never trading characters;
 * - counted again with what follows a group separated from it where no atom that can end the
 *   group takes its first character (the group's last atom, its head where it is repeated, what
 *   comes before it where it can be skipped: `(\.\d+)?([eE]\d+)?`, `(-[a-z]+)*\.`), and a
 *   repeated group whose head is a letter or digit its tail cannot take (`(x[0-9]+)*`) not
 *   nested: these shapes are linear, and a pattern that needs them to pass must stay under half
 *   the ways (anything slower, such as two trading quantifiers before them, is risky).
 *
 * `false` for `^x-`, `^[a-z]+$`, `^(foo|bar)$`, `^[a-z]+_[0-9]+$`, `^-?\d+\.\d+$`,
 * `^\d+(\.\d+)?$`, `^-?\d+(\.\d+)?([eE][+-]?\d+)?$`, `^[a-z0-9]+(?:-[a-z0-9]+)*$`,
 * `^[a-z]+(-[a-z]+)*\.[a-z]+$`, `^[A-Z][a-z]+(?:[A-Z][a-z]+)*$`, `^https?://[^/]+/.*$` and other
 * patterns of at most two unbounded quantifiers running together, none nested but so delimited.
 * The pattern is read in the grammar `mapAlongSchema` compiles
 * it under: with the `u` flag where it is valid so, else without (where `\u{1,}` repeats a `u`). A
 * quantifier's bounds may have any number of digits. A pattern that is no regular expression is
 * read as far as it goes (the walk never runs one).
 */
export function mayBacktrack(pattern: string): boolean {
  return backtracks(pattern, regexOf(pattern, "u") !== null);
}

/**
 * `mayBacktrack` for a pattern read in the grammar it compiles under: with the `u` flag
 * (`unicode`), where `\u{…}`, `\p{…}` and `\P{…}` are one atom, or without it, where they are
 * `u`, `p` or `P` and what follows (`\u{1,}` is `u` repeated, `\u{(a+)+}` holds the group `(a+)+`).
 */
export function backtracks(pattern: string, unicode: boolean): boolean {
  return counted(pattern, unicode, false) && counted(pattern, unicode, true);
}

/**
 * Whether `pattern` has a shape that is never safe or more ways than the budget, counted as
 * r48 F4 did (`late` false) or with what fix151 adds (`late`): what follows an optional or
 * repeated group may separate from how the group ends, and a group delimited by a letter or
 * digit head (`(x[0-9]+)*`) counts as not nested. Counted so, a pattern must stay under
 * `MARGIN` of the budget; a pattern is safe where either count calls it so.
 */
function counted(pattern: string, unicode: boolean, late: boolean): boolean {
  const stack: Frame[] = [frame(false)];
  // `separates`, asked once for each pair of atoms' sources (a long run of `x?_` compiles two atoms).
  const separations = new Map<string, boolean>();
  const separatesOnce = (repeated: string, separator: string) => {
    const key = `${repeated}\u0000${separator}`;
    let answer = separations.get(key);
    if (answer === undefined) {
      answer = separates(repeated, separator, unicode);
      separations.set(key, answer);
    }
    return answer;
  };
  let top = stack[0] as Frame;
  const budget = late ? PATH_BUDGET * MARGIN : PATH_BUDGET;
  /**
   * How many of the ways that `ends` describes go on past the atom `next` where some end with an
   * atom it separates from (each of those ends in one place: `through`), else undefined.
   */
  const enter = (ends: End[] | undefined, next: string | undefined): number | undefined => {
    if (ends === undefined || next === undefined) return undefined;
    let divided = false;
    let going = 0;
    for (const end of ends) {
      const separated = end.source !== undefined && separatesOnce(end.source, next);
      divided ||= separated;
      going = capped(going + (separated ? end.through : end.ways));
    }
    return divided ? Math.max(1, going) : undefined;
  };
  /** `ends` with those of one source merged and at most `MAX_ENDS` kept apart (the rest go on undivided). */
  const merged = (ends: End[]): End[] => {
    const bySource = new Map<string | undefined, End>();
    for (const end of ends) {
      const key = bySource.has(end.source) || bySource.size < MAX_ENDS - 1 ? end.source : undefined;
      const known = bySource.get(key);
      const through = key === undefined ? end.ways : end.through;
      if (known === undefined) bySource.set(key, { source: key, ways: end.ways, through });
      else {
        known.ways = capped(known.ways + end.ways);
        known.through = capped(known.through + through);
      }
    }
    return [...bySource.values()];
  };
  /**
   * Whether the pending group counts apart from the ways before it: it separates from how they
   * end (see `Opened`), taken at most once, or it is delimited, however often it is taken.
   */
  const apart = (group: Opened) =>
    group.max <= 1 ? enter(group.entry, group.head) !== undefined : group.tail !== undefined;
  /**
   * Multiplies the pending item into the current alternative. A single atom, not quantified,
   * that `separates` from the quantified atom before it ends the run: its ways are added up, and
   * the next run starts from the ways that reach the separator (one per way before that atom).
   * A group that separates likewise ends the run where it is entered; skipped (`?`, `*`), the
   * ways before it go on as they were. A delimited group's repetitions end, for each way into
   * it, at different places in the key: at most one way for each of its characters. After a
   * group, `top.ends` says how the ways end, for an atom or group after it that may separate.
   */
  const settle = () => {
    const group = top.group;
    top.group = undefined;
    const endsBefore = top.ends;
    top.ends = undefined;
    let ends: End[] | undefined;
    if (group !== undefined && apart(group)) {
      const reaching = top.ways;
      let entering = reaching;
      const through = enter(group.entry, group.head);
      if (through !== undefined) {
        top.before = capped(top.before + reaching);
        entering = through;
      }
      // The tail's counts where the group is delimited and may repeat.
      const repeats = group.max <= 1 ? undefined : group.tail;
      const inside =
        repeats === undefined
          ? group.ways
          : Math.min(repeats * Math.min(group.max, PATTERN_KEY_LIMIT), REPEATED_GROUP_WAYS);
      const taken = capped(entering * inside);
      top.ways = capped((group.min === 0 ? reaching : 0) + taken);
      top.last = 1;
      // Taken once, it ends with its body's last atom, in one place for each way through its
      // body's last run. Repeated (delimited), it ends in one place for each way into it where
      // what follows takes neither its tail nor its head: at every other place a repetition ended,
      // a head followed.
      const end = group.end;
      const last: End =
        repeats !== undefined
          ? { source: group.rim, ways: taken, through: entering }
          : end === undefined
            ? { source: undefined, ways: taken, through: taken }
            : {
                source: end.source,
                ways: taken,
                through: capped(entering * Math.max(1, Math.ceil(end.ways / end.counts))),
              };
      const skipped = group.entry ?? [{ source: undefined, ways: reaching, through: reaching }];
      ends = merged(group.min === 0 ? [...skipped, last] : [last]);
    }
    const separator = top.lastAtom;
    const repeated = top.repeated;
    top.ways = capped(top.ways * top.last);
    top.last = 1;
    top.lastVaries = false;
    top.lastQuantifiable = false;
    top.lastAtom = undefined;
    top.repeated = undefined;
    if (group !== undefined && ends === undefined && group.max <= 1 && group.end !== undefined) {
      // Multiplied in, taken at most once: each way ends with the body's last atom, or skips the
      // group; the ways through (one per way into that atom's counts) bound both.
      ends = [
        {
          source: group.end.source,
          ways: top.ways,
          through: Math.max(1, Math.ceil(top.ways / group.end.counts)),
        },
      ];
    }
    top.ends = ends;
    if (separator !== undefined && repeated !== undefined && separatesOnce(repeated.source, separator)) {
      top.before = capped(top.before + top.ways);
      top.ways = Math.max(1, Math.ceil(top.ways / repeated.counts));
    } else if (late && separator !== undefined && repeated === undefined) {
      const through = enter(endsBefore, separator);
      if (through !== undefined) {
        top.before = capped(top.before + top.ways);
        top.ways = through;
      }
    }
  };
  /** An atom spanning `pattern[from, to)`. */
  const atom = (from: number, to: number) => {
    const repeated = top.lastAtom === undefined ? top.repeated : undefined;
    settle();
    top.repeated = repeated;
    top.lastAtom = pattern.slice(from, to);
    top.lastQuantifiable = true;
    top.items.push({ source: top.lastAtom, min: 1, max: 1 });
  };
  /**
   * The group `closed` as the item `Opened` describes, or undefined where it is none; `last`, the
   * atom whose count varies that ends its body, if one does.
   */
  const opened = (
    closed: Frame,
    ways: number,
    varies: boolean,
    last: Repeated | undefined,
  ): Opened | undefined => {
    if (closed.lookaround || closed.done > 0) return undefined;
    const [first, tail, ...rest] = closed.items;
    const head = first !== undefined && first.min === 1 && first.max === 1 ? first : undefined;
    const delimited =
      head !== undefined &&
      tail !== undefined &&
      rest.length === 0 &&
      tail.max > tail.min &&
      (late || separatesOnce("[A-Za-z0-9]", head.source)) &&
      separatesOnce(tail.source, head.source);
    const counts = delimited
      ? Math.min(tail.max, PATTERN_KEY_LIMIT) - Math.min(tail.min, PATTERN_KEY_LIMIT) + 1
      : 0;
    return {
      head: head?.source,
      entry: closed.entry,
      tail: delimited ? counts : undefined,
      rim: delimited ? `${tail.source}|${head.source}` : undefined,
      end: last === undefined ? undefined : { source: last.source, counts: last.counts, ways: closed.ways },
      ways,
      varies,
      min: 1,
      max: 1,
    };
  };
  let i = 0;
  while (i < pattern.length) {
    const char = pattern[i];
    if (char === "\\") {
      const next = pattern[i + 1] ?? "";
      if ((next >= "1" && next <= "9") || (next === "k" && pattern[i + 2] === "<")) return true;
      // With the `u` flag, `\u{…}`, `\p{…}`, `\P{…}` span their braces; any other escape (and
      // those, without it) is two characters, what follows read on its own.
      let end = i + 2;
      if (unicode && (next === "u" || next === "p" || next === "P") && pattern[i + 2] === "{") {
        const close = pattern.indexOf("}", i + 3);
        end = close < 0 ? pattern.length : close + 1;
      }
      atom(i, end);
      i = end;
      continue;
    }
    if (char === "[") {
      const end = classEnd(pattern, i);
      atom(i, end);
      i = end;
      continue;
    }
    if (char === "(") {
      const after = top.lastAtom === undefined ? top.repeated : undefined;
      settle();
      // How the ways before the group end: with the repeated atom right before it, or as the
      // group right before it left them (see `End`).
      const entry: End[] | undefined =
        after === undefined
          ? late
            ? top.ends
            : undefined
          : [
              {
                source: after.source,
                ways: top.ways,
                through: Math.max(1, Math.ceil(top.ways / after.counts)),
              },
            ];
      top.items.push(undefined);
      let lookaround = false;
      if (pattern[i + 1] === "?") {
        const kind = pattern.slice(i + 2, i + 4);
        lookaround = kind[0] === "=" || kind[0] === "!" || kind === "<=" || kind === "<!";
      }
      top = frame(lookaround, entry);
      stack.push(top);
      i++;
      // The group's prefix (`?:`, `?=`, `?<name>`) holds nothing that counts: skip to its body.
      if (pattern[i] === "?") {
        if (pattern[i + 1] === "<" && pattern[i + 2] !== "=" && pattern[i + 2] !== "!") {
          const close = pattern.indexOf(">", i);
          i = close < 0 ? pattern.length : close + 1;
        } else {
          const body = /^\?[a-zA-Z-]*[:=!]|^\?<[=!]/.exec(pattern.slice(i, i + 12));
          i += body ? body[0].length : 1;
        }
      }
      continue;
    }
    if (char === ")") {
      if (stack.length === 1) {
        // An unbalanced `)`: no valid pattern; read it as a literal.
        atom(i, i + 1);
        i++;
        continue;
      }
      const last = top.lastAtom === undefined ? top.repeated : undefined;
      settle();
      const group = stack.pop() as Frame;
      const ways = capped(group.done + group.before + group.ways);
      const varies = group.varies || group.done > 0;
      if (group.lookaround && group.repeats) return true;
      top = stack[stack.length - 1] as Frame;
      top.varies ||= varies;
      top.repeats ||= group.repeats;
      settle();
      top.last = ways;
      top.lastVaries = varies;
      top.lastQuantifiable = true;
      top.group = opened(group, ways, varies, last);
      i++;
      continue;
    }
    if (char === "|") {
      settle();
      top.done = capped(top.done + top.before + top.ways);
      top.before = 0;
      top.ways = 1;
      top.items = [];
      i++;
      continue;
    }
    let count: { min: number; max: number; end: number } | undefined;
    if (char === "*") count = { min: 0, max: Number.POSITIVE_INFINITY, end: i + 1 };
    else if (char === "+") count = { min: 1, max: Number.POSITIVE_INFINITY, end: i + 1 };
    else if (char === "?") count = { min: 0, max: 1, end: i + 1 };
    else if (char === "{") count = countAt(pattern, i);
    if (count !== undefined && top.lastQuantifiable) {
      const { min, max } = count;
      const item = top.lastAtom === undefined ? undefined : top.items[top.items.length - 1];
      if (item !== undefined) {
        item.min = min;
        item.max = max;
      }
      const group = top.group;
      if (group !== undefined) {
        group.min = min;
        group.max = max;
      }
      if (group !== undefined && apart(group)) {
        // Counted where it settles (see `settle`): its repetitions never trade characters.
        top.varies ||= max > min || group.varies;
        top.repeats ||= max > min;
        top.last = 1;
        top.lastVaries = false;
        top.lastQuantifiable = false;
        top.repeated = undefined;
        i = count.end;
        if (pattern[i] === "?" || pattern[i] === "+") i++;
        continue;
      }
      // Taken at most once, it is multiplied in where it settles, then ends as its body does.
      if (max >= 2) top.group = undefined;
      if (max >= 2 && top.lastVaries) return true;
      top.repeated = undefined;
      // A fixed count (`{3}`) of a group of one way is one way; a varying one multiplies its ways
      // (an unbounded one always varies, its lower bound however large).
      if (max > min || max === Number.POSITIVE_INFINITY) {
        top.varies = true;
        top.repeats = true;
        const counts = Math.min(max, PATTERN_KEY_LIMIT) - Math.min(min, PATTERN_KEY_LIMIT) + 1;
        top.last = capped(top.last * counts);
        // One atom repeated: what follows it may separate (see `separates`).
        if (top.lastAtom !== undefined) top.repeated = { source: top.lastAtom, counts };
      }
      top.lastAtom = undefined;
      top.lastQuantifiable = false;
      i = count.end;
      // A lazy or (in other engines) possessive mark after the quantifier changes nothing here.
      if (pattern[i] === "?" || pattern[i] === "+") i++;
      if (top.before + top.ways * top.last > budget) return true;
      continue;
    }
    if (char === "^" || char === "$") {
      settle();
      top.items.push(undefined);
    } else atom(i, i + 1);
    i++;
  }
  // An unclosed group: count it as closed where the pattern ends.
  while (stack.length > 1) {
    settle();
    const group = stack.pop() as Frame;
    if (group.lookaround && group.repeats) return true;
    top = stack[stack.length - 1] as Frame;
    top.last = capped(group.done + group.before + group.ways);
    top.varies ||= group.varies || group.done > 0;
    top.repeats ||= group.repeats;
  }
  settle();
  const anchored = pattern.startsWith("^") && top.done === 0;
  const ways = (top.done + top.before + top.ways) * (anchored ? 1 : PATTERN_KEY_LIMIT + 1);
  return ways > budget;
}
