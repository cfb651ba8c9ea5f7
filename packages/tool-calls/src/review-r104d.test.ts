import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { controlsMismatch } from "../../../test-support/controls-parity.js";
import { propertyRuns } from "../../../test-support/properties.js";
import { escapeControls } from "./echo.js";
import { ToolArgumentsError } from "./errors.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { readOf } from "./test-support/read-of.js";

// Review r104d:
// 1. A lone `[` was refused as "they are a JSON array of 0 values; a call takes one object": the
//    model wrote one bracket and stopped, which is cut-off text, not a list. It is told so, in the
//    words r103f gave a lone `{`.
// 2. An object or list opened and cut before its first member was closed up and run: `{"a": {`
//    as `{"a": {}}`, `{"a": [` as `{"a": []}`. Decided: invented, not kept. The model opened the
//    value to fill it; an empty one is what it never wrote (as `{"a":` was never run as
//    `{"a": null}`, and a lone `{` is not run as `{}` since r103f). Refused as malformed, naming
//    where the arguments stop. A bracket left open after a whole member still keeps what was
//    written: closing it invents nothing.

describe("a lone [ is cut-off text, not a list of none", () => {
  it.each([
    ["a lone bracket", "["],
    ["a bracket and a space", "[ "],
    ["two brackets", "[["],
    ["a fenced bracket", "```json\n["],
  ])("%s (%j) is refused as a bracket that never closes, not as a JSON array of 0 values", (_what, raw) => {
    const read = readOf(raw);
    expect(read.kind).toBe("malformed");
    expect(read.message).not.toContain("JSON array");
    expect(read.message).toContain('they hold no key and value, only a "[" that never closes');
    expect(read.message).toContain("{}");
  });

  it("is truncated at the token limit, as a lone { is", () => {
    expect(readOf("[", "length").kind).toBe("truncated");
  });

  it("an empty list written closed is still a list, refused as one", () => {
    expect(readOf("[]").message).toContain("they are a JSON array of 0 values");
  });
});

describe("an object or list opened and cut before its first member is refused, not run empty", () => {
  it.each([
    ['{"a": {', "a, an object opened and cut off before its first key"],
    ['{"a": [', "a, a list opened and cut off before its first value"],
    ['{"path": "x.txt", "options": {', "options, an object"],
    ['{"a": {"b": {', "a.b, an object"],
    ['{"a": [{', "a[0], an object"],
    ['{"a": [1, [', "a[1], a list"],
    ['{"a": { // the options\n', "a, an object"],
    ['[{"a": {', "a, an object"],
    ["Writing it: {'a': {", "a, an object"],
    ['{"the key": [', '["the key"], a list'],
  ])("%j stops inside %s, and the call is not run", (raw, where) => {
    // Before: {"a": {} }, {"a": []} … run with an empty value the model never wrote.
    const read = readOf(raw);
    expect(read.json).toBeUndefined();
    expect(read.kind).toBe("malformed");
    expect(read.message).toContain(`they stop inside ${where}`);
    expect(read.message).toContain("so the call was not run");
    expect(read.message).toContain("the read_file call");
  });

  it("is truncated at the token limit", () => {
    expect(readOf('{"a": {', "length").kind).toBe("truncated");
    expect(readOf('{"a": [', "length").kind).toBe("truncated");
  });

  it("names a key as an echo does: control characters written \\uXXXX, a long one cut", () => {
    const hostile = readOf('{"a\\u001b[2J\\u202etxt\\nb": {').message ?? "";
    expect(hostile).toContain('they stop inside ["a\\u001b[2J\\u202etxt\\nb"], an object');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(hostile).not.toMatch(/[\u0000-\u001f\u202e]/);
    const long = readOf(`{"${"k".repeat(5_000)}": [`).message ?? "";
    expect(long).toContain("… (5000 characters)");
    expect(long.length).toBeLessThan(400);
  });

  it("still keeps what was written where a bracket is left open after a whole member", () => {
    expect(readOf('{"a": [1, ')).toEqual({ json: '{"a":[1]}' });
    expect(readOf('{"a": [1')).toEqual({ json: '{"a":[1]}' });
    expect(readOf('{"a": {"b": 1')).toEqual({ json: '{"a":{"b":1}}' });
    expect(readOf('{"a": {"b": 1}, ')).toEqual({ json: '{"a":{"b":1}}' });
    // An empty value the model wrote closed is its own.
    expect(readOf('{"a": {}, "b": []')).toEqual({ json: '{"a":{},"b":[]}' });
  });

  /** Objects whose values nest objects and lists, some empty, as JSON writes them. */
  const nested = fc
    .dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1, maxKeys: 4 })
    .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>);

  /** Each path in `value` holding an empty object or list, with which ("{}" or "[]"). */
  function empties(value: unknown, path = ""): Map<string, string> {
    const found = new Map<string, string>();
    const walk = (v: unknown, at: string) => {
      if (Array.isArray(v)) {
        if (v.length === 0) found.set(at, "[]");
        for (const [i, item] of v.entries()) walk(item, `${at}/${i}`);
      } else if (v !== null && typeof v === "object") {
        const entries = Object.entries(v);
        if (entries.length === 0) found.set(at, "{}");
        for (const [key, item] of entries) walk(item, `${at}/${JSON.stringify(key)}`);
      }
    };
    walk(value, path);
    return found;
  }

  it("never hands the tool an empty object or list the text did not hold closed (property)", () => {
    fc.assert(
      fc.property(nested, fc.boolean(), fc.nat(), (value, spaced, at) => {
        const text = JSON.stringify(value, null, spaced ? 1 : undefined);
        const raw = text.slice(0, 1 + (at % text.length));
        let read: Record<string, unknown>;
        try {
          read = parseToolArguments(raw).value;
        } catch (error) {
          // Refusing is allowed; making up an empty value is not.
          if (!ToolArgumentsError.isInstance(error)) throw error;
          return;
        }
        const written = empties(value);
        for (const [path, kind] of empties(read)) {
          expect(written.get(path), `${JSON.stringify(raw)} read ${kind} at ${path}`).toBe(kind);
        }
      }),
      { ...propertyRuns(500), examples: [[{ a: { b: 1 } }, false, 5]] },
    );
  });
});

describe("a key an inexact number sits under, as its refusal names it", () => {
  it("has its right-to-left override and terminal escape written \\uXXXX, where they reached the message raw", () => {
    // Before: 'hold 12345678901234567891 at ["a<RLO>b"]' — U+202E turned the rest of the line round in
    // a host's log; JSON.stringify had escaped the C0 controls only.
    const read = readOf('{"a\\u202eb": 12345678901234567891, "\\u001b[2J\\u0085": 1e400}');
    expect(read.kind).toBe("inexact");
    expect(read.message).toContain('12345678901234567891 at ["a\\u202eb"]');
    expect(read.message).toContain('1e400 at ["\\u001b[2J\\u0085"]');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(read.message).not.toMatch(/[\u0000-\u001f\u0085\u202e]/);
  });
});

describe("tool-calls' copy of the echo rule's character set", () => {
  it("is tools' set, character for character", () => {
    expect(controlsMismatch(escapeControls)).toBeUndefined();
  });
});
