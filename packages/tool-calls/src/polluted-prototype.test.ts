import { describe, expect, it } from "vitest";
import { parseJson } from "./parse-json.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

// Review r85h: options and the package's own records read through a polluted Object.prototype.

const proto = Object.prototype as Record<string, unknown>;
const set: string[] = [];
/** Sets `Object.prototype[name]` for one test (taken off by `polluting` as the test returns). */
function pollute(name: string, value: unknown): void {
  set.push(name);
  Object.defineProperty(Object.prototype, name, {
    value,
    configurable: true,
    writable: true,
    enumerable: false,
  });
}
/**
 * A test's body, with what it set on Object.prototype taken off as the body returns or throws, before
 * the test runner's own code runs again. An `afterEach` came too late: between a test and its hooks
 * the runner closes iterators, and an inherited `return` that is no function broke the worker for
 * every file it ran after (CI, stop 59: "string \"P0LLUTED\" is not a function" in thirteen files).
 */
function polluting<A extends unknown[]>(body: (...args: A) => void): (...args: A) => void {
  return (...args) => {
    try {
      body(...args);
    } finally {
      for (const name of set.splice(0)) delete proto[name];
    }
  };
}

const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } } },
    },
  },
  { type: "function", function: { name: "clock", parameters: { type: "object", properties: {} } } },
];

describe("parseToolArguments: options a caller left out read as absent", () => {
  it.each([
    ["takesString", "P0LLUTED"],
    ["takesOnlyString", "P0LLUTED"],
    ["finishReason", true],
    ["name", true],
  ])(
    "Object.prototype.%s = %j",
    polluting((key, value) => {
      pollute(key, value);
      expect(parseToolArguments('{"city": "Paris"}')).toEqual({
        value: { city: "Paris" },
        json: '{"city":"Paris"}',
        repaired: false,
        inexact: [],
      });
      expect(parseToolArguments("{city: 'Paris'}", {}).value).toEqual({ city: "Paris" });
    }),
  );

  it(
    "an inherited name is not the call's name, nor an inherited takesString its answer",
    polluting(() => {
      pollute("name", "P0LLUTED");
      pollute("takesString", () => true);
      let message = "";
      try {
        parseToolArguments('{"id": 12345678901234567891}');
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^The arguments for this call hold 12345678901234567891/);
    }),
  );

  it(
    "an inherited finishReason 'length' does not make open arguments cut off",
    polluting(() => {
      pollute("finishReason", "length");
      expect(parseToolArguments('{"a": [1, 2').value).toEqual({ a: [1, 2] });
    }),
  );

  it("a class's getter still counts", () => {
    class Options {
      get takesString() {
        return () => true;
      }
    }
    expect(parseToolArguments('{"id": 12345678901234567891}', new Options()).value).toEqual({
      id: "12345678901234567891",
    });
  });
});

describe("parseToolArguments: the package's own records", () => {
  it(
    "Object.prototype.quoted: the arguments still read",
    polluting(() => {
      pollute("quoted", "P0LLUTED");
      expect(parseToolArguments('{"city": "Paris", "n": 1}').value).toEqual({ city: "Paris", n: 1 });
      expect(parseToolArguments("{zip: 02134}", { takesOnlyString: () => true }).value).toEqual({
        zip: "02134",
      });
    }),
  );

  it(
    "Object.prototype.keys: a number past what JavaScript holds is still named",
    polluting(() => {
      pollute("keys", "P0LLUTED");
      expect(() => parseToolArguments('{"id": 12345678901234567891}')).toThrow(/12345678901234567891 at id/);
    }),
  );
});

describe("recoverToolCalls and parseJson", () => {
  const TAGGED = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
  const WRAPPED = '{"tool_calls":[{"function":{"name":"clock","arguments":"{}"}}]}';
  const MARKUP =
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
  /** Each key polluted, a reply whose call was lost to it, and the call's name. */
  const LOST: Record<string, [string, string]> = {
    arguments: ['<|python_tag|>{"name": "clock", "parameters": {}}', "clock"],
    description: [TAGGED, "get_weather"],
    tool: [WRAPPED, "clock"],
    tool_name: [WRAPPED, "clock"],
    unsure: [MARKUP, "get_weather"],
  };
  it.each(Object.entries(LOST).map(([key, [text, name]]) => ({ key, text, name })))(
    "Object.prototype.$key: the call is still recovered",
    polluting(({ key, text, name }) => {
      pollute(key, "P0LLUTED");
      expect(recoverToolCalls(text, TOOLS as never).calls.map((c) => c.name)).toEqual([name]);
    }),
  );

  it(
    "Object.prototype.open: a closed call leaves no text behind, cut at the limit or not",
    polluting(() => {
      pollute("open", true);
      const text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
      expect(recoverToolCalls(text, TOOLS as never, { finishReason: "length" })).toMatchObject({ text: "" });
    }),
  );

  it(
    "Object.prototype.finishReason = 'length' is not the reply's finish reason",
    polluting(() => {
      const text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par';
      const before = recoverToolCalls(text, TOOLS as never);
      pollute("finishReason", "length");
      expect(recoverToolCalls(text, TOOLS as never)).toEqual(before);
      expect(parseJson('{"a": 1}')).toEqual({ a: 1 });
    }),
  );

  it(
    "Object.prototype.parameters is no tool's schema",
    polluting(() => {
      pollute("parameters", { type: "object", properties: { zip: { type: "string" } } });
      const tools = [{ type: "function", function: { name: "lookup" } }];
      expect(
        recoverToolCalls(
          '<tool_call>{"name": "lookup", "arguments": {"zip": 02134}}</tool_call>',
          tools as never,
        ).calls[0]?.args,
      ).toEqual({ zip: 2134 });
    }),
  );

  it(
    "Object.prototype.return: arguments and calls read (no destructuring closes an iterator through it)",
    polluting(() => {
      pollute("return", "P0LLUTED");
      expect(parseToolArguments('{"city": "Paris", "n": [1, {"m": 2}]}').value).toEqual({
        city: "Paris",
        n: [1, { m: 2 }],
      });
      expect(parseToolArguments("{zip: 02134, x: 1.10}", { takesOnlyString: () => true }).value).toEqual({
        zip: "02134",
        x: "1.10",
      });
      const markup =
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
      expect(recoverToolCalls(markup, TOOLS as never).calls.map((c) => c.args)).toEqual([{ city: "Paris" }]);
      expect(
        recoverToolCalls(
          '<think>a</think><tool_call>{"name": "clock", "arguments": {}}</tool_call>',
          TOOLS as never,
        ).calls,
      ).toHaveLength(1);
    }),
  );
});
