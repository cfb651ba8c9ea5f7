import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ToolArgumentsError } from "./errors.js";
import { parseJson } from "./parse-json.js";
import { parseToolArguments } from "./parse-tool-arguments.js";

/** What parseToolArguments made of `raw`: the compact JSON, or the error's kind. */
function readOf(raw: string, finishReason?: string): string {
  try {
    return parseToolArguments(raw, { finishReason }).json;
  } catch (error) {
    return ToolArgumentsError.isInstance(error) ? `error:${error.kind}` : `a raw throw: ${String(error)}`;
  }
}

/** Deep equality that tells -0 from 0 and keeps `__proto__` as an own key. */
function same(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  return ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const pad = fc.constantFrom("", " ", "\n", "\t", "\r\n  ", "   ");

/** Writes a string as JSON, each character plain or \u-escaped at random (lone surrogates escaped). */
function stringText(value: string, escapes: boolean[]): string {
  let out = '"';
  let i = 0;
  for (const ch of value) {
    const code = ch.charCodeAt(0);
    const mustEscape =
      ch === '"' || ch === "\\" || code < 0x20 || (ch.length === 1 && code >= 0xd800 && code <= 0xdfff);
    if (mustEscape || escapes[i++ % Math.max(escapes.length, 1)]) {
      for (let k = 0; k < ch.length; k++) out += `\\u${ch.charCodeAt(k).toString(16).padStart(4, "0")}`;
    } else out += ch;
  }
  return `${out}"`;
}

/** Any JSON text: any value written with any spacing, escapes, number spellings and repeated keys. */
const jsonText = fc.letrec<{ value: string; object: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(
      "true",
      "false",
      "null",
      "-0",
      "0",
      "1e400",
      "-1E+400",
      "1e-400",
      "0.10",
      "12E2",
      "-3.5e-2",
    ),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
    fc
      .tuple(fc.string({ unit: "binary", maxLength: 8 }), fc.array(fc.boolean(), { maxLength: 4 }))
      .map(([s, e]) => stringText(s, e)),
    fc
      .array(fc.tuple(pad, tie("value"), pad), { maxLength: 4 })
      .map((items) => `[${items.map((p) => p.join("")).join(",")}]`),
    tie("object"),
  ),
  object: fc
    .array(
      fc.tuple(
        fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom("__proto__", "constructor", "a", "toString")),
        fc.array(fc.boolean(), { maxLength: 3 }),
        pad,
        tie("value"),
        pad,
      ),
      { maxLength: 5 },
    )
    .map(
      (members) =>
        `{${members.map(([k, e, p1, v, p2]) => `${p1}${stringText(k, e)}${p1}:${p2}${v}${p2}`).join(",")}}`,
    ),
}));

/** Numbers the generator writes that no double holds: JSON.parse reads them as ±Infinity or 0. */
const OUT_OF_RANGE = /1e400|1E\+400|1e-400/;

describe("valid JSON arguments come back as JSON.parse reads them", () => {
  it("any object written any way: spacing, \\u escapes, lone surrogates, -0, repeated keys, __proto__; 1e400 refused", () => {
    fc.assert(
      fc.property(jsonText.object, pad, pad, (text, before, after) => {
        const raw = `${before}${text}${after}`;
        const expected = JSON.parse(raw) as unknown;
        // A number past a double's range would reach the tool as Infinity (JSON's null) or 0: refused.
        if (readOf(raw) === "error:inexact") {
          expect(raw).toMatch(OUT_OF_RANGE);
          return;
        }
        const out = parseToolArguments(raw);
        expect(same(out.value, expected)).toBe(true);
        expect(out.json).toBe(JSON.stringify(expected));
        expect(out.repaired).toBe(false);
        expect(Object.getPrototypeOf(out.value)).toBe(Object.prototype);
      }),
      propertyRuns(400),
    );
  });

  it("parseJson reads any whole JSON value as JSON.parse does", () => {
    fc.assert(
      fc.property(jsonText.value, (text) => {
        expect(same(parseJson(text), JSON.parse(text))).toBe(true);
      }),
      propertyRuns(400),
    );
  });
});

describe("a repair never changes a value the model wrote", () => {
  it("never joins two numbers written without a comma into one", () => {
    // [1 2] was read as [12]: the tool was handed a number the model never wrote.
    expect(readOf('{"a": [1 2]}')).not.toBe('{"a":[12]}');
    expect(readOf('{"ids": [1 // first\n 2]}')).not.toBe('{"ids":[12]}');
    expect(readOf('{"a": 1 2}')).not.toBe('{"a":12}');
    expect(readOf('{"a": [1 2]}')).toBe('{"a":[1,2]}');
    expect(readOf("{'a': [1\n2\n3]}")).toBe('{"a":[1,2,3]}');
  });

  it("refuses a key written with no value instead of handing the tool null", () => {
    // {"a": "b", "c": } was read as { a: "b", c: null }.
    for (const raw of ['{"a": "b", "c": }', '{"a": , "c": 1}', "{'a': 1, b:}"]) {
      expect(readOf(raw)).toBe("error:malformed");
    }
    // A trailing comma is not a missing value.
    expect(readOf('{"a": [1,], "b": 2,}')).toBe('{"a":[1],"b":2}');
  });

  it("refuses NaN and Infinity by name instead of handing the tool the string 'NaN'", () => {
    for (const raw of ['{"a": NaN}', "{'a': [Infinity],}", '{"a": -Infinity}', "{'x': nan}", '{"x": inf}']) {
      expect(readOf(raw)).toBe("error:malformed");
      const error = (() => {
        try {
          parseToolArguments(raw);
        } catch (e) {
          return e as Error;
        }
        return new Error("read");
      })();
      expect(error.message).toMatch(/NaN or Infinity/);
    }
    // Inside a string they are text.
    expect(readOf("{'a': 'NaN', b: 'Infinity'}")).toBe('{"a":"NaN","b":"Infinity"}');
  });

  it("reads a Python triple-quoted string as its text, never as invented keys", () => {
    // {"a": """x"""} was read as {"a": "", "x": ""}.
    expect(readOf('{"a": """x"""}')).toBe('{"a":"x"}');
    expect(readOf("{'code': '''def f():\n    return \"hi\"'''}")).toBe(
      JSON.stringify({ code: 'def f():\n    return "hi"' }),
    );
    expect(readOf("{'a': '''it's''', 'b': 1}")).toBe('{"a":"it\'s","b":1}');
  });

  it("keeps an apostrophe inside a single-quoted string as the apostrophe the model wrote", () => {
    // {'text': 'it's fine'} reached the tool as it"s fine: the repair turned the apostrophe into a quote.
    expect(readOf("{'text': 'it's fine'}")).toBe(JSON.stringify({ text: "it's fine" }));
    expect(readOf("{'note': 'the users' files', 'n': 2}")).toBe(
      JSON.stringify({ note: "the users' files", n: 2 }),
    );
    expect(readOf("{'song': 'rock 'n' roll', 'message': \"I can't\"}")).toBe(
      JSON.stringify({ song: "rock 'n' roll", message: "I can't" }),
    );
    expect(readOf("{'msg': 'don't stop',}")).toBe(JSON.stringify({ msg: "don't stop" }));
    // SQL quoted inside a single-quoted string: 'bob' became "bob" (an identifier, not a
    // string), and two quoted values read as a second key named ", 'n".
    expect(readOf("{'sql': 'SELECT * FROM t WHERE name = 'bob''}")).toBe(
      JSON.stringify({ sql: "SELECT * FROM t WHERE name = 'bob'" }),
    );
    expect(readOf("{'sql': 'WHERE a = 'x' AND b = 'y'', 'n': 1}")).toBe(
      JSON.stringify({ sql: "WHERE a = 'x' AND b = 'y'", n: 1 }),
    );
    // A quote followed by a comma, a bracket, a colon or another string still ends the string.
    expect(readOf("{'a': 'x' 'b': 'y'}")).toBe('{"a":"x","b":"y"}');
    expect(readOf("{'a': ['x','y'], 'b': 'z'}")).toBe('{"a":["x","y"],"b":"z"}');
  });

  it("reads any English-like text with apostrophes in a single-quoted string as written (property)", () => {
    const word = fc.stringMatching(/^[A-Za-z]{1,5}(?:'[a-z]{0,2})?$/);
    const text = fc
      .array(word, { minLength: 1, maxLength: 8 })
      .map((words) => words.join(" "))
      // An apostrophe that ends the text, or meets another across spaces, reads as the string's end.
      .filter((v) => !/'\s*$/.test(v) && !/'\s*'/.test(v));
    fc.assert(
      fc.property(text, pad, (value, space) => {
        const raw = `{'text':${space}'${value}',${space}'n': 1}`;
        expect(readOf(raw)).toBe(JSON.stringify({ text: value, n: 1 }));
      }),
      propertyRuns(500),
    );
  });

  it("refuses two argument objects in one call instead of running the first", () => {
    // A server that merges two parallel calls' arguments writes {…}{…}: the second call was lost.
    for (const raw of [
      '{"a": 1}{"a": 2}',
      '{"a": 1} {"a": 2}',
      '{"a": 1},\n{"a": 2}',
      '[{"a": 1}, {"a": 2}]',
    ]) {
      expect(readOf(raw)).toBe("error:malformed");
    }
    // One object with prose or a closing tag after it is still read.
    expect(readOf('{"a": 1}\n</tool_call>')).toBe('{"a":1}');
    expect(readOf('{"a": 1} is what I will send')).toBe('{"a":1}');
    expect(readOf('[{"a": 1}]')).toBe('{"a":1}');
    // Prose with a fenced object in it is still read for its object.
    expect(readOf('Args:\n```json\n{"a": 1}\n```\nDone')).toBe('{"a":1}');
  });
});

describe("arguments cut at the token ceiling are never closed up and run", () => {
  it("any valid object text cut anywhere reads as the whole object or a typed error", () => {
    fc.assert(
      fc.property(jsonText.object, fc.nat(), (text, at) => {
        // From the opening brace on (no text at all reads as no arguments, as documented).
        const cut = text.slice(0, 1 + (at % text.length));
        const whole = JSON.stringify(JSON.parse(text));
        const read = readOf(cut, "length");
        const kinds = [
          "error:truncated",
          "error:malformed",
          ...(OUT_OF_RANGE.test(cut) ? ["error:inexact"] : []),
        ];
        expect([whole, ...kinds]).toContain(read);
      }),
      propertyRuns(1000),
    );
  });
});
