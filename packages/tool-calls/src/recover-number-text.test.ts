// A call written into the reply as text carries the number tokens the model wrote (`02134`,
// `1.10`, `1e21`, `+5`, `.5`) in its `raw`, so the loop's reading of `raw` by the tool's schema
// (parseToolArguments with takesOnlyString) gives what the same arguments streamed as a call give.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { type ArgumentPath, parseToolArguments, recoverToolCalls } from "./index.js";

const SHIP = {
  type: "function",
  function: {
    name: "ship",
    parameters: {
      type: "object",
      properties: { zip: { type: "string" }, count: { type: "integer" } },
    },
  },
};

/** The schema rule the loop applies: zip takes only a string, count a number. */
const bySchema = {
  name: "ship",
  takesString: (path: ArgumentPath) => path[0] === "zip",
  takesOnlyString: (path: ArgumentPath) => path[0] === "zip",
};

/** What the tool is handed for `text` read as the loop reads a call's arguments: the value, or the refusal's kind. */
function handed(text: string): unknown {
  try {
    return parseToolArguments(text, bySchema).value;
  } catch (error) {
    return { refused: (error as { kind?: string }).kind };
  }
}

/** The one call recovered from `reply`, read as the loop reads it (`raw`, by the schema). */
function recovered(reply: string): unknown {
  const { calls } = recoverToolCalls(reply, [SHIP]);
  expect(calls.map((c) => c.name)).toEqual(["ship"]);
  return handed((calls[0] as { raw: string }).raw);
}

/** The text formats a server's parser may leave in the reply, each holding `zip` and `count` as written. */
const FORMATS: Record<string, (zip: string, count: string) => string> = {
  hermes: (zip, count) =>
    `<tool_call>\n{"name": "ship", "arguments": {"zip": ${zip}, "count": ${count}}}\n</tool_call>`,
  mistral: (zip, count) => `[TOOL_CALLS][{"name": "ship", "arguments": {"zip": ${zip}, "count": ${count}}}]`,
  "mistral [ARGS]": (zip, count) => `[TOOL_CALLS]ship[ARGS]{"zip": ${zip}, "count": ${count}}`,
  "bare JSON": (zip, count) => `{"name": "ship", "parameters": {"zip": ${zip}, "count": ${count}}}`,
  "almost-JSON": (zip, count) =>
    `<tool_call>{'name': 'ship', 'arguments': {zip: ${zip}, 'count': ${count}}}</tool_call>`,
  pythonic: (zip, count) => `[ship(zip=${zip}, count=${count})]`,
  gemma: (zip, count) => `<|tool_call>call:ship{zip:${zip},count:${count}}<tool_call|>`,
  llama3: (zip, count) =>
    `<|python_tag|>{"name": "ship", "parameters": {"zip": ${zip}, "count": ${count}}}<|eom_id|>`,
  "llama 3.1 function": (zip, count) => `<function=ship>{"zip": ${zip}, "count": ${count}}</function>`,
  harmony: (zip, count) =>
    `<|start|>assistant<|channel|>commentary to=functions.ship <|constrain|>json<|message|>{"zip": ${zip}, "count": ${count}}<|call|>`,
  "deepseek v3.1": (zip, count) =>
    `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>ship<｜tool▁sep｜>{"zip": ${zip}, "count": ${count}}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
  kimi: (zip, count) =>
    `<|tool_calls_section_begin|><|tool_call_begin|>functions.ship:0<|tool_call_argument_begin|>{"zip": ${zip}, "count": ${count}}<|tool_call_end|><|tool_calls_section_end|>`,
  granite: (zip, count) => `<|tool_call|>[{"name": "ship", "arguments": {"zip": ${zip}, "count": ${count}}}]`,
  functionary: (zip, count) => `>>>ship\n{"zip": ${zip}, "count": ${count}}`,
  fenced: (zip, count) =>
    `\`\`\`json\n{"name": "ship", "arguments": {"zip": ${zip}, "count": ${count}}}\n\`\`\``,
  "in a string": (zip, count) =>
    `<tool_call>{"name": "ship", "arguments": ${JSON.stringify(`{"zip": ${zip}, "count": ${count}}`)}}</tool_call>`,
};

describe("recoverToolCalls keeps the number tokens the model wrote, for the loop's schema-aware reading", () => {
  it("a zip code written 02134 in a Hermes call reaches a string-only place with its zero, as when streamed", () => {
    const reply = '<tool_call>\n{"name": "ship", "arguments": {"zip": 02134, "count": 02}}\n</tool_call>';
    // Before: {"zip": 2134, "count": 2} — the recovered call's raw was written from the number.
    expect(recovered(reply)).toEqual({ zip: "02134", count: 2 });
    expect(handed('{"zip": 02134, "count": 02}')).toEqual({ zip: "02134", count: 2 });
  });

  it("keeps 1.10, 1e21 and 1E3 as written in each format; a number place still reads them as numbers", () => {
    for (const [format, write] of Object.entries(FORMATS)) {
      for (const zip of ["1.10", "1e21", "1E3", "0012"]) {
        expect([format, zip, recovered(write(zip, "1e3"))]).toEqual([format, zip, { zip, count: 1000 }]);
      }
    }
  });

  it("a plus sign or a bare point: text at a string-only place, the number at a number place, as when streamed", () => {
    for (const [format, write] of Object.entries(FORMATS)) {
      expect([format, recovered(write("+5", "3"))]).toEqual([format, { zip: "+5", count: 3 }]);
      expect([format, recovered(write(".5", "3"))]).toEqual([format, { zip: ".5", count: 3 }]);
      // Before: the recovered call's raw was refused by the loop's reading ("a number cut short").
      expect([format, recovered(write('"a"', ".5"))]).toEqual([format, { zip: "a", count: 0.5 }]);
      expect([format, recovered(write('"a"', "+5"))]).toEqual([format, { zip: "a", count: 5 }]);
      expect([format, recovered(write('"a"', "-.5"))]).toEqual([format, { zip: "a", count: -0.5 }]);
      expect(handed('{"zip": "a", "count": .5}')).toEqual({ zip: "a", count: 0.5 });
    }
  });

  it("keeps a token as written where the repair of the whole call made a string of it, as the streamed reading does not", () => {
    // Found by the parity property: the call's repair quoted 00.0, the arguments' own reading reads 0.
    const reply =
      '<tool_call>\n{"name": "ship", "arguments": {"zip": 00.9e400, "count": 00.0}}\n</tool_call>';
    expect(recovered(reply)).toEqual({ zip: "00.9e400", count: 0 });
    expect(handed('{"zip": 00.9e400, "count": 00.0}')).toEqual({ zip: "00.9e400", count: 0 });
  });

  it("never rewrites a number-like text inside a string argument", () => {
    const { calls } = recoverToolCalls('[note(text="x {a: +5, b: .5}", n=+2)]', ["note"]);
    expect(calls.map((c) => c.args)).toEqual([{ text: "x {a: +5, b: .5}", n: 2 }]);
    expect(calls[0]?.raw).toBe('{"text":"x {a: +5, b: .5}","n":+2}');
  });

  it("parity: any number token, at either place, reaches the tool the same recovered or streamed", () => {
    const token = fc
      .tuple(
        fc.constantFrom("", "-", "+"),
        fc.oneof(fc.stringMatching(/^\d{1,22}$/), fc.stringMatching(/^\d{0,4}\.\d{1,6}$/)),
        fc.oneof(fc.constant(""), fc.stringMatching(/^[eE][+-]?\d{1,3}$/)),
      )
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(token, token, fc.constantFrom(...Object.keys(FORMATS)), (zip, count, format) => {
        const write = FORMATS[format] as (zip: string, count: string) => string;
        const { calls } = recoverToolCalls(write(zip, count), [SHIP]);
        // A call whose arguments no reader takes stays in the text, streamed or not; one read is read alike.
        const streamed = handed(`{"zip": ${zip}, "count": ${count}}`);
        if (calls.length === 0) {
          expect(streamed).toMatchObject({ refused: expect.any(String) });
          return;
        }
        expect(handed((calls[0] as { raw: string }).raw)).toEqual(streamed);
      }),
      propertyRuns(1000),
    );
  });
});
