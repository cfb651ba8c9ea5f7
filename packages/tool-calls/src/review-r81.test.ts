import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ToolArgumentsError } from "./errors.js";
import { parseJson } from "./parse-json.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { recoverToolCalls } from "./recover-tool-calls.js";
import { splitGrowth } from "./test-support/split-growth.js";

// Review r81: what r79c left in @loopwright/tool-calls, then a hostile review.

describe("R81-1: parseJson does not cut the reply at a `</think>` written as inline code", () => {
  it("reads the JSON before a sentence that quotes the closer", () => {
    for (const reply of [
      '{"a": 1}\nQwen ends its scratchpad with `</think>`.',
      'Result:\n```json\n{"a": 1}\n```\nQwen ends its scratchpad with `</think>`.',
      'plan {"b": 2}</think>{"a": 1}\nQwen ends its scratchpad with `</think>`.',
    ]) {
      expect(parseJson(reply), reply).toEqual({ a: 1 });
    }
  });

  it("still cuts at a bare </think>, or one with a backtick on one side only", () => {
    expect(parseJson('{"b": 2} `</think>` plan</think>{"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('{"b": 2}`</think>{"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('{"b": 2}</think>`{"a": 1}')).toEqual({ a: 1 });
  });

  it("property: a sentence quoting `</think>` after the JSON leaves it as read without", () => {
    const value = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 6 }).filter((k) => !k.includes("`")),
      fc.oneof(fc.integer(), fc.boolean()),
      { minKeys: 1, maxKeys: 4 },
    );
    fc.assert(
      fc.property(
        value,
        fc.array(fc.constantFrom("`</think>`", " ", "text", "."), { maxLength: 6 }),
        (v, tail) => {
          const json = JSON.stringify(v);
          expect(parseJson(`${json}\n${tail.join("")}`)).toEqual(parseJson(json));
        },
      ),
    );
  });

  it("stays linear on many quoted closers", async () => {
    expect(parseJson(`{"a": 1} ${"`</think>` ".repeat(1000)}`)).toEqual({ a: 1 });
    // One reading of eight times the text against eight readings of it, in the same run
    // (splitGrowth): linear ~1, quadratic ~8.
    const make = (n: number) => `{"a": 1} ${"`</think>` ".repeat(n)}`;
    expect(await splitGrowth(parseJson, make)).toBeLessThan(4);
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});

describe("R81-3: the argument repair reads Python's number literals as the pythonic call parser does", () => {
  it("reads {'a': 0x10} (a Python dict) as 16, where it was refused as 'unfinished'", () => {
    const read = parseToolArguments(
      "{'a': 0x10, 'b': 0o17, 'c': 0b11, 'd': 1_000, 'e': -0X1f, 'f': 1_000.5}",
    );
    expect(read.value).toEqual({ a: 16, b: 15, c: 3, d: 1000, e: -31, f: 1000.5 });
    expect(read.repaired).toBe(true);
    expect(parseToolArguments('[{"a": [0x10, +0b1]}]').value).toEqual({ a: [16, 1] });
  });

  it("reads them alike in parseJson and in a JSON call recoverToolCalls finds (never the string '0x10')", () => {
    expect(parseJson('Result: {"a": 0x10, "b": 1_000}')).toEqual({ a: 16, b: 1000 });
    const calls = recoverToolCalls('<tool_call>{"name": "f", "arguments": {"a": 0x10}}</tool_call>', [
      "f",
    ]).calls;
    expect(calls.map((c) => c.args)).toEqual([{ a: 16 }]);
    expect(recoverToolCalls("[f(a=0x10)]", ["f"]).calls.map((c) => c.args)).toEqual([{ a: 16 }]);
  });

  it("keeps the text where only a string is taken, and weighs one past a double as written", () => {
    const read = parseToolArguments('{"zip": 0x10, "n": 0x10}', { takesOnlyString: (p) => p[0] === "zip" });
    expect(read.value).toEqual({ zip: "0x10", n: 16 });
    expect(() => parseToolArguments('{"a": 0x10000000000000001}')).toThrow(/0x10000000000000001/);
  });

  it("leaves what is no Python literal as before", () => {
    expect(() => parseToolArguments('{"a": 0x}')).toThrow(ToolArgumentsError);
    expect(() => parseToolArguments('{"a": 1__0}')).toThrow(ToolArgumentsError);
    expect(parseJson('{"a": 0x}')).toEqual({ a: "0x" });
  });

  it("property: a Python integer literal reads as BigInt reads it", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.constantFrom(["0x", 16], ["0o", 8], ["0b", 2], ["0X", 16]) as fc.Arbitrary<[string, number]>,
        fc.boolean(),
        (n, [prefix, radix], negative) => {
          const literal = `${negative ? "-" : ""}${prefix}${n.toString(radix)}`;
          expect(parseToolArguments(`{"a": ${literal}, "b": 1}`).value).toEqual({
            a: negative ? -n : n,
            b: 1,
          });
        },
      ),
    );
  });
});

describe("R81-2: inside a scratchpad, a closer written as inline code closes nothing (as the stream now reads it)", () => {
  const call = '<tool_call>{"name": "rm", "arguments": {"path": "/"}}</tool_call>';

  it("leaves a call written after a quoted closer inside the scratchpad as reasoning", () => {
    for (const reply of [
      `<thinking>Tags end with \`</thinking>\`. Maybe:\n${call}\n</thinking>I will not.`,
      `<reasoning>It ends with \`</reasoning>\`. ${call}`,
      `<think>It ends with \`</think>\`. ${call}`,
      `<think>It ends with \`</think>\`. ${call}</think>No call.`,
    ]) {
      const read = recoverToolCalls(reply, ["rm"]);
      expect(read.calls, reply).toEqual([]);
      expect(read.text).toBe(reply);
    }
  });

  it("still recovers a call after the bare closer, and after one with a backtick on one side only", () => {
    for (const reply of [
      `<thinking>about \`</thinking>\`</thinking>${call}`,
      `<thinking>use \`x\`</thinking>${call}`,
      `<reasoning>plan</reasoning>\`${call}`,
    ]) {
      expect(
        recoverToolCalls(reply, ["rm"]).calls.map((c) => c.name),
        reply,
      ).toEqual(["rm"]);
    }
  });

  it("stays linear on many quoted closers inside a scratchpad", async () => {
    const text = (n: number) => `<thinking>${"`</thinking>` ".repeat(n)}</thinking>${call}`;
    expect(recoverToolCalls(text(1000), ["rm"]).calls.length).toBe(1);
    // One reading of eight times the text against eight readings of it, in the same run
    // (splitGrowth): linear ~1, quadratic ~8.
    expect(await splitGrowth((reply) => recoverToolCalls(reply, ["rm"]), text)).toBeLessThan(4);
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});

describe("R81-8: parseJson reads after Kimi's ◁/think▷ as after </think> (as recoverToolCalls does)", () => {
  it("never reads the JSON a Kimi scratchpad sketched", () => {
    expect(parseJson('◁think▷plan {"b": 2}◁/think▷{"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('plan {"b": 2}◁/think▷Answer: {"a": 1}')).toEqual({ a: 1 });
    // The later of the two closers counts; one inside a JSON string or quoted as inline code does not.
    // Only the first lone closer ends the template's scratchpad; a later one is text, as the
    // stream shows `{"b": 2}</think>{"a": 1}` (r83b: was read after the last one).
    expect(parseJson('◁/think▷{"b": 2}</think>{"a": 1}')).toEqual({ b: 2 });
    expect(parseJson('x</think>{"note": "ends with ◁/think▷ here"}')).toEqual({
      note: "ends with ◁/think▷ here",
    });
    expect(parseJson('{"a": 1} Kimi ends with `◁/think▷`.')).toEqual({ a: 1 });
  });
});

describe("R81-10: an inexact refusal's message shows each number and path at most 40 characters long", () => {
  const long = "9".repeat(5000);

  it("five 5,000-digit numbers, or a 100,000-character key, no longer make a message of that size", () => {
    const many = (() => {
      try {
        return parseToolArguments(`{"a": [${Array(2000).fill(long).join(",")}]}`);
      } catch (error) {
        return error;
      }
    })();
    expect(ToolArgumentsError.isInstance(many)).toBe(true);
    const error = many as ToolArgumentsError;
    expect(error.kind).toBe("inexact");
    expect(error.message.length).toBeLessThan(1000);
    expect(error.message).toContain("… (5000 characters) at a[0]");
    expect(error.message).toContain("and 1995 more");
    // The whole digits stay on the error.
    expect(error.numbers?.[0]?.digits).toBe(long);
    const key = "k".repeat(100_000);
    expect(() => parseToolArguments(`{"${key}": ${long}}`)).toThrow(/^(?!.{2000})/s);
    expect(() => parseJson(`{"${key}": ${long}}`, { takesString: () => false })).toThrow(
      /\(100000 characters\)/,
    );
  });

  it("a short number is still named whole, with the string to write", () => {
    expect(() => parseToolArguments('{"id": 12345678901234567891}')).toThrow(
      /12345678901234567891 at id.*as a string \("12345678901234567891"\)/s,
    );
  });
});
