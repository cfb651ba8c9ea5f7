import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseJson } from "./parse-json.js";

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

  it("stays linear on many quoted closers", () => {
    const text = `{"a": 1} ${"`</think>` ".repeat(200_000)}`;
    const started = performance.now();
    expect(parseJson(text)).toEqual({ a: 1 });
    expect(performance.now() - started).toBeLessThan(3000);
  });
});
