import { describe, expect, it } from "vitest";
import { anchorPattern } from "./pattern.js";

/**
 * Whether llama.cpp (b9749) can read a pattern: its converter copies escapes into GBNF as they
 * stand, and GBNF knows only `\x..`, `\u....`, `\U........`, `\t`, `\n`, `\r`, `\\`, `\"`, `\[`
 * and `\]`; outside a class the converter also takes a backslash before a regex operator
 * (`\.`, `\*`, …) as that character. Anything else (`\v`, `\0`, `\-`, `\d`, `\/`) is a 400
 * "failed to parse grammar" (checked against the live server: live-grammar.test.ts). A raw half
 * of a surrogate pair without its other half beside it is not text its JSON parser takes (a 500).
 */
function grammarReadable(pattern: string): boolean {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    const code = c.charCodeAt(0);
    if (code >= 0xd800 && code <= 0xdbff) {
      const low = pattern.charCodeAt(i + 1);
      if (!(low >= 0xdc00 && low <= 0xdfff)) return false;
      i++;
    } else if (code >= 0xdc00 && code <= 0xdfff) return false;
    else if (c === "\\") {
      const rest = pattern.slice(i + 1);
      const m =
        /^(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|[tnr\\"[\]])/.exec(rest) ??
        (inClass ? null : /^[\^$.()|{}*+?]/.exec(rest));
      if (!m) return false;
      i += m[0].length;
    } else if (c === "[" && !inClass) {
      inClass = true;
      if (pattern[i + 1] === "^") i++;
    } else if (c === "]" && inClass) inClass = false;
  }
  return true;
}

/** Probe strings: each character alone, and between two letters. */
const probes = (() => {
  const chars: string[] = [];
  for (let c = 0; c < 0x3100; c++) chars.push(String.fromCharCode(c));
  for (const c of [0xfeff, 0xffff]) chars.push(String.fromCharCode(c));
  return chars.filter((c) => c !== '"' && c !== "\\").flatMap((c) => [c, `a${c}b`, `${c}${c}`]);
})();

/** The source and the rewrite match the same probe strings (none holds a quote or a backslash). */
function sameMatches(source: string, rewritten: string): string[] {
  const a = new RegExp(source);
  const b = new RegExp(rewritten);
  return probes.filter((s) => a.test(s) !== b.test(s)).slice(0, 5);
}

const SOURCES = [
  "^a\\0b$",
  "^a\\vb$",
  "^a\\fb$",
  "^a\\tb$",
  "^a\\nb$",
  "^a\\rb$",
  "^a\\x41b$",
  "^a\\u00e9b$",
  "^a\\cJb$",
  "^a\\.b$",
  "^a\\-b$",
  "^a\\/b$",
  "^a\\ b$",
  "^a\\,b$",
  "^a\\$b\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^$",
  "^a\\x2Ab$",
  "^\\d+$",
  "^\\w+$",
  "^\\s+$",
  "^\\S+$",
  "^\\W+$",
  "^\\D+$",
  "^[\\0]$",
  "^[\\v\\f]$",
  "^[\\b]$",
  "^[a\\-z]$",
  "^[a-]$",
  "^[-a]$",
  "^[\\t\\n\\r]$",
  "^[\\x41-\\x5a]$",
  "^[\\cJ]$",
  "^[\\d]$",
  "^[\\w.]$",
  "^[a\\s]$",
  "^[^\\s]$",
  "^[^\\d_]$",
  "^[\\]\\[]$",
  "^[\\^a]$",
  "^[a^]$",
  "^[\\.\\/]$",
  "^[#--]$",
  "^[\\x00-\\x1f]$",
  "^a.b$",
  "^.+$",
  "^.*$",
  "a.c",
  "\\d{3}-\\d{4}",
  "^é+$",
  "^[é-ü]+$",
  "^日本語$",
  "^a{b$",
  "^a}b$",
  "^a{,5}$",
  "^a{2,}$",
  "^\\😀$",
  "^[😀]$",
  "^😀$",
  "^[A-Z]{2}\\d{2}[A-Z0-9]{4}\\d{7}([A-Z0-9]?){0,16}$",
  "^\\uD83D$",
  "^a\\uDE00b$",
  "^[\\uD800a]$",
  "^\\uD83D\\uDE00$",
  "^[\\uD83D\\uDE00]$",
  "^(🙂)+$",
  "^🙂a+$",
  "^a+?$",
  "^(ab)+?$",
  "^x{2}?$",
  "^a*?b??c{1,3}?$",
];

describe("anchorPattern writes only escapes a grammar server reads", () => {
  it("rewrites every kind of escape into one llama.cpp's grammar parser takes, matching the same strings", () => {
    for (const source of SOURCES) {
      const out = anchorPattern(source);
      expect(out, source).toBeTypeOf("string");
      expect(grammarReadable(out as string), `${source} → ${out}`).toBe(true);
      if (out !== "") expect(sameMatches(source, out as string), `${source} → ${out}`).toEqual([]);
      // Already in the form it writes: a second pass changes nothing.
      if (out !== "") expect(anchorPattern(out as string), source).toBe(out);
    }
  });

  it("writes control escapes as \\x (\\v → [\\x0B] outside a class), a literal - in a class as \\x2D, and \\d as [0-9]", () => {
    expect(anchorPattern("^a\\vb$")).toBe("^a[\\x0B]b$");
    expect(anchorPattern("^a\\0b$")).toBe("^a[\\x00]b$");
    expect(anchorPattern("^[\\b]$")).toBe("^[\\x08]$");
    expect(anchorPattern("^[a\\-z]$")).toBe("^[a\\x2Dz]$");
    expect(anchorPattern("^a\\-b$")).toBe("^a-b$");
    expect(anchorPattern("^\\d+$")).toBe("^[0-9]+$");
    expect(anchorPattern("^[\\w]$")).toBe("^[A-Za-z0-9_]$");
  });

  it("writes a character past ASCII as \\u…, a brace that is no count escaped, and an emoji's halves together", () => {
    expect(anchorPattern("^é+$")).toBe("^[\\u00E9]+$");
    expect(anchorPattern("^\\x41\\u00e9{2}$")).toBe("^A[\\u00E9]{2}$");
    expect(anchorPattern("^[é-ü]$")).toBe("^[\\u00E9-\\u00FC]$");
    expect(anchorPattern("^a{b}$")).toBe("^a\\{b\\}$");
    expect(anchorPattern("^a{2,3}$")).toBe("^a{2,3}$");
    // `\😀` is an identity escape of the high half; the low half follows. Never a lone `\uD83D`.
    expect(anchorPattern("^\\😀$")).toBe("^😀$");
    expect(anchorPattern("^[😀]$")).toBe("^[😀]$");
  });

  it("writes \\s as the whole of ECMAScript's white space, and \\S as the rest but the quote and backslash", () => {
    const space = new RegExp(anchorPattern("^\\s$") as string);
    const other = new RegExp(anchorPattern("^\\S$") as string);
    const wrong: string[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c);
      if (space.test(ch) !== /^\s$/.test(ch)) wrong.push(`\\s U+${c.toString(16)}`);
      if (ch !== '"' && ch !== "\\" && other.test(ch) !== /^\S$/.test(ch))
        wrong.push(`\\S U+${c.toString(16)}`);
    }
    expect(wrong).toEqual([]);
    expect(other.test('"') || other.test("\\")).toBe(false);
  });

  it("makes . refuse the line terminators it refuses in ECMAScript, as well as the quote and backslash", () => {
    expect(anchorPattern("^a.b$")).toBe('^a[^"\\\\\\n\\r\\u2028\\u2029]b$');
    const dot = new RegExp(anchorPattern("^.$") as string);
    for (const ch of ["\n", "\r", "\u2028", "\u2029", '"', "\\"])
      expect(dot.test(ch), JSON.stringify(ch)).toBe(false);
    for (const ch of ["a", "\t", "\u00a0", "é"]) expect(dot.test(ch), JSON.stringify(ch)).toBe(true);
    // `^.*$` refuses a line break, so it is kept; `.*` alone (matching anywhere) still constrains nothing.
    expect(anchorPattern("^.*$")).toBe('^[^"\\\\\\n\\r\\u2028\\u2029]*$');
    expect(anchorPattern(".*")).toBe("");
  });

  it("rejects a raw lone half of a surrogate pair as unreadable, and takes a whole pair", () => {
    expect(grammarReadable("^\uD83D$")).toBe(false);
    expect(grammarReadable("^[\uD800-\uDFFF]$")).toBe(false);
    expect(grammarReadable("^a\uDE00$")).toBe(false);
    expect(grammarReadable("^\\uD83D😀$")).toBe(true);
  });

  it("never writes a lone half of a surrogate pair raw: alone it is written \\u…, a pair together", () => {
    // The r9 patterns a real llama.cpp server refused with a 500 (its JSON parser, not its grammar).
    expect(anchorPattern("^\\uD83D$")).toBe("^[\\uD83D]$");
    expect(anchorPattern("^a\\uDE00$")).toBe("^a[\\uDE00]$");
    expect(anchorPattern("^a\uD800$")).toBe("^a[\\uD800]$");
    expect(anchorPattern("^[\\uD800a]$")).toBe("^[\\uD800a]$");
    expect(anchorPattern("^\\uD83D\\uDE00$")).toBe("^😀$");
    expect(anchorPattern("^[\\uD83D\\uDE00]$")).toBe("^[😀]$");
    expect(anchorPattern("^[😀-]$")).toBe("^[😀\\x2D]$");
  });

  it("moves a class range with half of a surrogate pair at an end to the description (units in ECMAScript, code points in a grammar)", () => {
    for (const source of [
      "^[^\\uD800-\\uDFFF]+$",
      "^(?:[\\uD83C-\\uDBFF][\\uDC00-\\uDFFF])+$",
      "^[\\uD83D\\uDE00-\\uDE4F]$",
      "^[a-😀]$",
      "^[\\uD83D-\\uDE00]$",
    ])
      expect(anchorPattern(source), source).toBeUndefined();
  });

  it("moves a character past U+FFFF under a quantifier to the description (without the u flag the count repeats its low half)", () => {
    for (const source of ["^🙂+$", "^a🙂{2}$", "^\\uD83D\\uDE00+$", "^\\😀*$", "^😀?$", "^x😀{1,3}y$"])
      expect(anchorPattern(source), source).toBeUndefined();
    // In a group the count repeats the whole character, in ECMAScript and in a grammar alike.
    expect(anchorPattern("^(🙂)+$")).toBe("^(🙂)+$");
    expect(anchorPattern("^a🙂{2}b$")).toBeUndefined();
    expect(anchorPattern("^🙂a+$")).toBe("^🙂a+$");
    expect(anchorPattern("^😀{,2}$")).toBe("^😀\\{,2\\}$");
  });

  it("drops the ? of a lazy quantifier, which a grammar server reads as optional (a+? as (a+)?)", () => {
    expect(anchorPattern("^a+?$")).toBe("^a+$");
    expect(anchorPattern("^(ab)+?$")).toBe("^(ab)+$");
    expect(anchorPattern("^x{2}?$")).toBe("^x{2}$");
    expect(anchorPattern("^a*?b??c{1,3}?$")).toBe("^a*b?c{1,3}$");
    expect(anchorPattern("^é+?$")).toBe("^[\\u00E9]+$");
    // An escaped `?` or a literal brace is no quantifier: the `?` after it is one, and stays.
    expect(anchorPattern("^a\\??$")).toBe("^a\\??$");
    expect(anchorPattern("^a{b}?$")).toBe("^a\\{b\\}?$");
    expect(anchorPattern("^a|b+?|c$")).toBe('^(a[^"\\\\]*|[^"\\\\]*b+[^"\\\\]*|[^"\\\\]*c)$');
  });

  it("moves a negated set inside a class (\\S, \\W, \\D) to the description: no grammar class says it", () => {
    for (const source of ["^[^\\S]$", "^[^\\Wa]$", "^[\\D]$"])
      expect(anchorPattern(source), source).toBeUndefined();
  });
});
