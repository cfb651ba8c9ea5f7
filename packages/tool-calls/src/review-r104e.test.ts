import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ToolArgumentsError } from "./errors.js";
import { parseToolArguments } from "./parse-tool-arguments.js";

/** The refusal parseToolArguments throws for `text`, or undefined when it reads it. */
function refusal(text: string, finishReason?: string): ToolArgumentsError | undefined {
  try {
    parseToolArguments(text, finishReason === undefined ? {} : ({ finishReason } as never));
    return undefined;
  } catch (e) {
    if (e instanceof ToolArgumentsError) return e;
    throw e;
  }
}

/** Whether `text` ends inside a double-quoted string: an odd number of unescaped `"` before its end. */
function endsInDoubleQuotes(text: string): boolean {
  let open = false;
  for (let i = 0; i < text.length; i++) {
    if (open && text[i] === "\\") i++;
    else if (text[i] === '"') open = !open;
  }
  return open;
}

describe("a refusal of cut-off arguments says where they really stop", () => {
  it("says text cut after a key's colon stopped after that key with no value, not in a string", () => {
    const e = refusal('{"path": "a.txt", "content":');
    expect(e?.message).toMatch(/cut off after the key content with no value written for it/);
    expect(e?.message).not.toMatch(/middle of a string/);
    expect(e?.message).toMatch(/the call was not run/);
  });

  it("says text cut inside `true` stopped inside a literal, naming its key", () => {
    const e = refusal('{"a": tru');
    expect(e?.message).toMatch(/cut off inside the number or literal at a /);
    expect(e?.message).not.toMatch(/string/);
  });

  it("names whose string value the text stopped in, nested keys and list places included", () => {
    expect(refusal('{"a": {"b": "hel')?.message).toMatch(/in the middle of the string value at a\.b /);
    expect(refusal('{"a": [1, "x')?.message).toMatch(/in the middle of the string value at a\[1\] /);
    expect(refusal('{"a')?.message).toMatch(/in the middle of a key /);
  });

  it("keeps naming the output token limit, with the place, when the finish reason is length", () => {
    const e = refusal('{"a": 12', "length");
    expect(e?.kind).toBe("truncated");
    expect(e?.message).toMatch(/at the output token limit \(inside the number or literal at a\)/);
  });

  it("says it stopped in a string only when an odd number of unescaped quotes comes before the end", () => {
    const piece = fc.constantFrom(
      '{"a": ',
      '"x',
      '"',
      "tru",
      "12",
      ", ",
      '"k": ',
      "[",
      "{",
      "\\",
      "]",
      "}",
      ":",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (pieces) => {
        const text = `{${pieces.join("")}`;
        const e = refusal(text);
        if (!e || !/cut off/.test(e.message)) return;
        const inString = /in the middle of (a string|the string value|a key)/.test(e.message);
        expect(inString).toBe(endsInDoubleQuotes(text));
      }),
      propertyRuns(200),
    );
  });
});
