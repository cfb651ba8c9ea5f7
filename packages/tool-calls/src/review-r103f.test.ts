import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ToolArgumentsError } from "./errors.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { readOf } from "./test-support/read-of.js";

// Review r103f (the loop review of r102 noticed these in parseToolArguments):
// 1. Text holding no key and value was "repaired" into {} and the call run with no arguments:
//    prose with a stray `{` (`not json at all {`) and a lone `{` that never closes (`{`, `{ `,
//    `{,`, `[{`). The model wrote nothing a tool could use, and the tool ran anyway, silently. A
//    repair may close what the model began; it may not stand in for what it never wrote. An empty
//    object the model wrote (`{}`, fenced or after prose), empty text and `null` still read as {}.
// 2. Plain text (`add 1 and 2`) was refused as "(they are a JSON string)": the text is no JSON
//    string (it holds no quotes), so the model was told something it could not recognise.

describe("arguments holding no key and value are refused, not run as {}", () => {
  it.each([
    ["prose with a stray brace", "not json at all {"],
    ["a lone brace", "{"],
    ["a lone brace and a space", "{ "],
    ["a lone brace and a newline", "{\n"],
    ["a brace and a comma", "{,"],
    ["a brace with a comment and nothing else", "{ // the path\n"],
    ["a list opening a brace", "[{"],
    ["a brace closed by a bracket", "{]"],
    ["a word and a brace", "x {"],
    ["null with a stray bracket", "null]"],
    ["null with a stray comma", "null,"],
  ])("%s (%j) is refused as malformed, naming what is missing", (_what, raw) => {
    const read = readOf(raw);
    expect(read.json).toBeUndefined();
    expect(read.kind).toBe("malformed");
    expect(read.message).toContain("the read_file call");
    expect(read.message).toMatch(/no key and value/);
    // The model is told how to call a tool that takes no arguments.
    expect(read.message).toContain("{}");
  });

  it("is still reported as truncated where the turn stopped at the token limit", () => {
    expect(readOf("{", "length").kind).toBe("truncated");
    expect(readOf("not json at all {", "length").kind).toBe("truncated");
  });

  it.each([
    ["empty text", ""],
    ["whitespace", " \n\t"],
    ["an empty object", "{}"],
    ["an empty object with space inside", "{ \n }"],
    ["an empty object with a comment inside", "{ /* none */ }"],
    ["null", "null"],
    ["Python's None", "None"],
    ["a fenced null", "```json\nnull\n```"],
    ["a fenced empty object", "```json\n{}\n```"],
    ["an empty object after prose", "No arguments: {}"],
    ["an empty object in a list", "[{}]"],
    ["an empty object held in a JSON string", '"{}"'],
  ])("%s (%j) still reads as {}", (_what, raw) => {
    expect(readOf(raw)).toEqual({ json: "{}" });
  });

  it("still repairs a real truncation: the keys and values the model wrote are kept", () => {
    expect(readOf('{"path": "a.txt"')).toEqual({ json: '{"path":"a.txt"}' });
    expect(readOf('{"path": "a.txt", ')).toEqual({ json: '{"path":"a.txt"}' });
    expect(readOf("Reading it: {'path': 'a.txt', 'lines': 20")).toEqual({
      json: '{"path":"a.txt","lines":20}',
    });
  });

  /** A key/value pair's text and value. */
  const value = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.integer({ min: -1000, max: 1000 }),
    fc.boolean(),
    fc.constant(null),
  );
  const pairs = fc.uniqueArray(fc.tuple(fc.stringMatching(/^[a-z_]{1,6}$/), value), {
    selector: ([key]) => key,
    minLength: 1,
    maxLength: 5,
  });
  const prose = fc.constantFrom("", "Here you go: ", "I'll read it.\n", "```json\n");

  it("never loses a key and value the text held as a complete JSON pair (property)", () => {
    fc.assert(
      fc.property(pairs, prose, fc.nat(), (entries, before, at) => {
        // The object as JSON, and where each pair's text ends.
        let text = "{";
        const ends: number[] = [];
        entries.forEach(([key, item], i) => {
          text += `${i > 0 ? ", " : ""}${JSON.stringify(key)}: ${JSON.stringify(item)}`;
          ends.push(text.length);
        });
        text += "}";
        const cut = 1 + (at % text.length);
        const raw = before + text.slice(0, cut);
        let read: Record<string, unknown>;
        try {
          read = parseToolArguments(raw).value;
        } catch (error) {
          // Refusing is allowed (a cut inside a string or after a colon); losing a pair is not.
          if (!ToolArgumentsError.isInstance(error)) throw error;
          return;
        }
        const held = entries.filter((_, i) => (ends[i] as number) <= cut);
        expect(Object.fromEntries(held.map(([key]) => [key, read[key]]))).toEqual(Object.fromEntries(held));
      }),
      propertyRuns(300),
    );
  });

  it("never runs text with no key and value as {} unless it is empty, null or {} (property)", () => {
    // No colon: no `"key": value` pair can be written.
    const piece = fc.constantFrom(
      "{",
      "}",
      "[",
      "]",
      ",",
      " ",
      "\n",
      '"',
      "'",
      "`",
      "a",
      "x",
      "1",
      "null",
      "true",
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 12 }).map((pieces) => pieces.join("")),
        (raw) => {
          let json: string;
          try {
            json = parseToolArguments(raw).json;
          } catch (error) {
            if (!ToolArgumentsError.isInstance(error)) throw error;
            return;
          }
          if (json !== "{}") return;
          // Empty, null (fenced, or held in quotes), or an empty object the model wrote.
          const bare = raw
            .trim()
            .replace(/^`{3,}[\w-]*\s*/, "")
            .replace(/`{3,}$/, "")
            .replace(/^["'\s]+|["'\s]+$/g, "");
          const wroteEmpty = bare === "" || bare === "null" || /\{\s*\}/.test(raw);
          expect(wroteEmpty, `${JSON.stringify(raw)} ran as {}`).toBe(true);
        },
      ),
      {
        ...propertyRuns(500),
        examples: [["not json at all {"], ["{"], ["[{"], ["{,"], ["x {"], ["{]"], ["null]"]],
      },
    );
  });
});

describe("plain text is refused as what it is", () => {
  it.each(["add 1 and 2", "hello", "add 1 and 2 }"])("%j is named plain text, not a JSON string", (raw) => {
    const read = readOf(raw);
    expect(read.kind).toBe("malformed");
    expect(read.message).not.toContain("JSON string");
    expect(read.message).toContain("plain text");
  });

  it("a JSON string is still named one", () => {
    expect(readOf('"add 1 and 2"').message).toContain("(they are a JSON string)");
  });
});
