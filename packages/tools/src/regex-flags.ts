/**
 * A zod string's `.regex(/…/flags)` as a JSON Schema `pattern`: `z.toJSONSchema` writes the
 * expression's source alone, so its flags were lost, unsaid (`/^abc$/i` reached the model as
 * `^abc$`, and it never offered `ABC`, which the tool takes). Here each flag whose meaning a
 * flagless pattern can hold exactly is written into it; where none can, the pattern is refused.
 */

/** A flagless pattern meaning what the flagged expression meant, or why none can be written. */
export type FlaglessPattern =
  | { pattern: string; refused?: undefined }
  | { pattern?: undefined; refused: string };

/** What `^` and `$` mean under `m`: at a line's start or end too (after or before \n, \r, U+2028, U+2029). */
const LINE_START = "(?<![^\\n\\r\\u2028\\u2029])";
const LINE_END = "(?![^\\n\\r\\u2028\\u2029])";

/** Escaped letters that stand for no letter (classes of digits or space, control characters). */
const LETTERLESS_ESCAPES = new Set(["d", "D", "s", "S", "t", "n", "r", "f", "v"]);

function isAsciiLetter(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
}

/** `code`'s other case, for an ASCII letter. */
function otherCase(code: number): number {
  return code ^ 0x20;
}

/** A character as it can stand in a class, whatever comes before or after it. */
function classChar(code: number): string {
  return isAsciiLetter(code) || (code >= 0x30 && code <= 0x39)
    ? String.fromCharCode(code)
    : `\\x${code.toString(16).padStart(2, "0")}`;
}

/** One item of a class in a pattern read without the `u` or `v` flag: its text, and the character it is (`undefined` for `\d` and the like). */
interface ClassAtom {
  text: string;
  code: number | undefined;
}

/**
 * Reads the escape at `source[at]` (a `\`) in a pattern without the `u` flag, as Annex B reads it:
 * its text and the character it stands for, or `undefined` for a set (`\d`, `\w`…). `inClass`:
 * `\b` is a backspace there. A backreference or octal escape (`\1`) is `"backreference"`.
 */
function readEscape(source: string, at: number, inClass: boolean): ClassAtom | "backreference" | "named" {
  const next = source[at + 1] ?? "";
  const hex = (length: number): ClassAtom | undefined => {
    const digits = source.slice(at + 2, at + 2 + length);
    return digits.length === length && /^[0-9A-Fa-f]+$/.test(digits)
      ? { text: `\\${next}${digits}`, code: Number.parseInt(digits, 16) }
      : undefined;
  };
  switch (next) {
    case "d":
    case "D":
    case "s":
    case "S":
    case "w":
    case "W":
      return { text: `\\${next}`, code: undefined };
    case "b":
      return inClass ? { text: "\\b", code: 8 } : { text: "\\b", code: undefined };
    case "B":
      return { text: "\\B", code: undefined };
    case "t":
      return { text: "\\t", code: 9 };
    case "n":
      return { text: "\\n", code: 10 };
    case "v":
      return { text: "\\v", code: 11 };
    case "f":
      return { text: "\\f", code: 12 };
    case "r":
      return { text: "\\r", code: 13 };
    case "x":
      return hex(2) ?? { text: "\\x", code: 0x78 };
    case "u":
      return hex(4) ?? { text: "\\u", code: 0x75 };
    case "c": {
      const letter = source.charCodeAt(at + 2);
      if (isAsciiLetter(letter)) return { text: `\\c${source[at + 2]}`, code: letter % 32 };
      return { text: "\\", code: 0x5c };
    }
    case "k":
      return "named";
    default:
      if (/[1-9]/.test(next)) return "backreference";
      if (next === "0" && !/[0-9]/.test(source[at + 2] ?? "")) return { text: "\\0", code: 0 };
      if (/[0-7]/.test(next)) return "backreference";
      return { text: `\\${next}`, code: next.charCodeAt(0) };
  }
}

/**
 * The class at `source[at]` (a `[`) read without the `u` flag, with the other case of every ASCII
 * letter it holds added (which is what `i` makes it match, negated or not: `[^a]` under `i` takes
 * neither `a` nor `A`): its text and where it ends, or why it cannot be written exactly.
 */
function caseClass(source: string, at: number): { text: string; end: number } | { refused: string } {
  let i = at + 1;
  const negated = source[i] === "^";
  if (negated) i++;
  const atoms: ClassAtom[] = [];
  const items: string[] = [];
  const letters = new Set<number>();
  const readAtom = (): ClassAtom | { refused: string } => {
    if (source[i] === "\\") {
      const read = readEscape(source, i, true);
      if (read === "backreference") return { refused: "an octal escape in a class" };
      if (read === "named") return { refused: "the escape \\k" };
      i += read.text.length;
      return read;
    }
    const code = source.charCodeAt(i);
    i++;
    return { text: String.fromCharCode(code), code };
  };
  while (i < source.length && source[i] !== "]") {
    const first = readAtom();
    if ("refused" in first) return first;
    if (source[i] === "-" && i + 1 < source.length && source[i + 1] !== "]" && first.code !== undefined) {
      i++;
      const last = readAtom();
      if ("refused" in last) return last;
      if (last.code === undefined) {
        // Annex B: `[a-\d]` is a, -, and the digits.
        atoms.push(first, { text: "-", code: 0x2d }, last);
        continue;
      }
      if (last.code >= 0x80) return { refused: "a class range past ASCII" };
      for (let c = first.code; c <= last.code; c++) if (isAsciiLetter(c)) letters.add(otherCase(c));
      items.push(`${first.text}-${last.text}`);
      continue;
    }
    atoms.push(first);
  }
  if (i >= source.length) return { refused: "a class with no end" };
  for (const atom of atoms) {
    if (atom.code === undefined) {
      items.push(atom.text);
      continue;
    }
    if (atom.code >= 0x80)
      return { refused: `the character ${JSON.stringify(String.fromCharCode(atom.code))}` };
    if (isAsciiLetter(atom.code)) letters.add(otherCase(atom.code));
    // A literal `-` escaped, so no two items written side by side read as a range.
    items.push(atom.code === 0x2d ? "\\-" : atom.text);
  }
  for (const code of [...letters].sort((a, b) => a - b)) items.push(classChar(code));
  return { text: `[${negated ? "^" : ""}${items.join("")}]`, end: i + 1 };
}

/** Where the class at `source[at]` ends (past its `]`), nested classes read as the `v` flag reads them. */
function classEnd(source: string, at: number, nested: boolean): number {
  let depth = 0;
  for (let i = at; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") i++;
    else if (c === "[" && (depth === 0 || nested)) depth++;
    else if (c === "]" && --depth === 0) return i + 1;
  }
  return source.length;
}

/**
 * A pattern without flags that matches exactly the strings `new RegExp(source, flags)` matches
 * (tested from the start, as zod tests it: it resets `lastIndex`), or why none can be written.
 * `g` and `d` change nothing; `u` and `v` are how a JSON Schema pattern is read anyway (the source
 * is kept); `s` writes `.` as `[\s\S]`; `m` writes `^` and `$` as lookarounds naming the line
 * terminators; `y` anchors the whole at the start (`^(?:…)`); `i` writes each ASCII letter as both
 * its cases (`a` → `[aA]`, `[a-c]` → `[a-cABC]`). Refused: `i` with `u` or `v` where the pattern
 * holds a letter (Unicode case folding: `/k/iu` takes the Kelvin sign), `i` with a character past
 * ASCII (`é` takes `É`), a backreference (it matches the captured text in either case), `\k` or an
 * octal escape, and a modifier group (`(?i:…)`), and a flag no RegExp has.
 */
export function flaglessPattern(source: string, flags: string): FlaglessPattern {
  for (const flag of flags) {
    if (!"dgimsuvy".includes(flag)) return { refused: `the flag ${flag}` };
  }
  const caseless = flags.includes("i");
  const dotAll = flags.includes("s");
  const multiline = flags.includes("m");
  const unicode = flags.includes("u") || flags.includes("v");
  if (caseless && unicode) {
    let i = 0;
    while (i < source.length) {
      if (source[i] === "\\") {
        if (!LETTERLESS_ESCAPES.has(source[i + 1] ?? "") && /[A-Za-z]/.test(source[i + 1] ?? "")) {
          return {
            refused: `the i flag with the ${flags.includes("v") ? "v" : "u"} flag (Unicode case folding)`,
          };
        }
        i += 2;
        continue;
      }
      if (/[A-Za-z]/.test(source[i] as string) || source.charCodeAt(i) >= 0x80) {
        return {
          refused: `the i flag with the ${flags.includes("v") ? "v" : "u"} flag (Unicode case folding)`,
        };
      }
      i++;
    }
  }
  if (!caseless && !dotAll && !multiline && !flags.includes("y")) return { pattern: source };
  let out = "";
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (c === "\\") {
      if (unicode || !caseless) {
        // Read as written: only `i` without `u` changes what an escape means here.
        const end = source[i + 1] === undefined ? i + 1 : i + 2;
        out += source.slice(i, end);
        i = end;
        continue;
      }
      const read = readEscape(source, i, false);
      if (read === "backreference") {
        return {
          refused:
            "the i flag with a backreference or octal escape (it matches the captured text in either case)",
        };
      }
      if (read === "named") return { refused: "the i flag with \\k (a named backreference)" };
      i += read.text.length;
      if (read.code !== undefined && read.code >= 0x80) {
        return {
          refused: `the i flag with the character ${JSON.stringify(String.fromCharCode(read.code))}`,
        };
      }
      out +=
        read.code !== undefined && isAsciiLetter(read.code)
          ? `[${classChar(read.code)}${classChar(otherCase(read.code))}]`
          : read.text;
      continue;
    }
    if (c === "[") {
      if (caseless && !unicode) {
        const read = caseClass(source, i);
        if ("refused" in read) return { refused: `the i flag with ${read.refused}` };
        out += read.text;
        i = read.end;
      } else {
        const end = classEnd(source, i, flags.includes("v"));
        out += source.slice(i, end);
        i = end;
      }
      continue;
    }
    if (c === "(" && source[i + 1] === "?") {
      // A group's own syntax is copied whole, so a group's name is never read as letters.
      const name = /^\(\?<([A-Za-z_$][\w$]*)>/.exec(source.slice(i));
      if (name) {
        out += name[0];
        i += name[0].length;
        continue;
      }
      const opener = /^\(\?(?::|=|!|<=|<!)/.exec(source.slice(i));
      if (!opener) return { refused: "a modifier group such as (?i:…)" };
      out += opener[0];
      i += opener[0].length;
      continue;
    }
    if (c === "." && dotAll) out += "[\\s\\S]";
    else if (c === "^" && multiline) out += LINE_START;
    else if (c === "$" && multiline) out += LINE_END;
    else {
      const code = source.charCodeAt(i);
      if (caseless && code >= 0x80) {
        return {
          refused: `the i flag with the character ${JSON.stringify(c)} (its case cannot be written exactly)`,
        };
      }
      out += caseless && isAsciiLetter(code) ? `[${c}${String.fromCharCode(otherCase(code))}]` : c;
    }
    i++;
  }
  return { pattern: flags.includes("y") ? `^(?:${out})` : out };
}

/** What `z.toJSONSchema`'s `override` hands over, as far as it is read here. */
interface OverrideContext {
  zodSchema: unknown;
  jsonSchema: Record<string, unknown>;
  path: readonly (string | number)[];
}

/** A flagged expression no flagless pattern can hold: where, which, and why. */
export interface FlagRefusal {
  path: string;
  expression: string;
  why: string;
}

/** A JSON Pointer for `z.toJSONSchema`'s path (`#/properties/code`). */
function pointer(path: readonly (string | number)[]): string {
  return `#${path.map((key) => `/${String(key).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("")}`;
}

/**
 * An `override` for `z.toJSONSchema` writing each flagged `.regex()` of a string schema into its
 * `pattern` (or its entry of `allOf`, where there are several) by {@link flaglessPattern}, and
 * pushing onto `refusals` each one it cannot write exactly (left as zod wrote it, for the caller to
 * refuse).
 */
export function flagOverride(refusals: FlagRefusal[]): (ctx: OverrideContext) => void {
  return (ctx) => {
    const def = (ctx.zodSchema as { _zod?: { def?: { type?: unknown; checks?: unknown } } })?._zod?.def;
    if (def?.type !== "string" || !Array.isArray(def.checks)) return;
    const written = new Set<object>();
    for (const check of def.checks as {
      _zod?: { def?: { check?: unknown; format?: unknown; pattern?: unknown } };
    }[]) {
      const checkDef = check?._zod?.def;
      const expression = checkDef?.pattern;
      if (checkDef?.format !== "regex" || !(expression instanceof RegExp) || expression.flags === "")
        continue;
      const result = flaglessPattern(expression.source, expression.flags);
      if (result.refused !== undefined) {
        refusals.push({ path: pointer(ctx.path), expression: String(expression), why: result.refused });
        continue;
      }
      const json = ctx.jsonSchema;
      const places = [json, ...(Array.isArray(json.allOf) ? (json.allOf as Record<string, unknown>[]) : [])];
      const place = places.find(
        (node) =>
          typeof node === "object" &&
          node !== null &&
          !written.has(node) &&
          node.pattern === expression.source,
      );
      if (place === undefined) continue;
      place.pattern = result.pattern;
      written.add(place);
    }
  };
}
