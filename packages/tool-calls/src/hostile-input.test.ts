import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ToolArgumentsError, ToolCallsError } from "./errors.js";
import { parseJson } from "./parse-json.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

/** The error `fn` throws (failing the test when it throws none). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

const README = "# T\n```python\nprint(1)\n```\n";

describe("a code fence inside a string argument is part of the string", () => {
  it("recovers a fenced write_file call whose content holds a fence, whole", () => {
    const call = JSON.stringify({ name: "write_file", arguments: { content: README } });
    const { calls, text } = recoverToolCalls(`Writing it now.\n\`\`\`json\n${call}\n\`\`\`\n`, [
      "write_file",
    ]);
    expect(calls.map((c) => c.args)).toEqual([{ content: README }]);
    expect(text).toBe("Writing it now.");
  });

  it("reads JSON whose string holds fences, in a fence or in prose, as written", () => {
    expect(parseJson('{"content":"```{```"}.')).toEqual({ content: "```{```" });
    const body = JSON.stringify({ content: README });
    expect(parseJson(`Here:\n\`\`\`json\n${body}\n\`\`\`\nDone.`)).toEqual({ content: README });
    expect(parseToolArguments(`\`\`\`json\n${body}\n\`\`\``).value).toEqual({ content: README });
  });
});

describe("comments are skipped, brackets in them included", () => {
  it("reads past a bracket inside a // comment", () => {
    expect(parseToolArguments('{"a": 1, // the user\'s file }\n "b": 2}').value).toEqual({ a: 1, b: 2 });
    expect(parseToolArguments('{ // ]\n"path": "a.txt"}').value).toEqual({ path: "a.txt" });
    expect(parseJson('{"a": 1, /* ] } */ "b": [2, # ]\n 3]}')).toEqual({ a: 1, b: [2, 3] });
  });

  it("does not call a complete object with a bracket in a comment truncated", () => {
    expect(parseToolArguments('{ // {\n"path": "a.txt"}', { finishReason: "length" }).value).toEqual({
      path: "a.txt",
    });
  });

  it("keeps a comment between a bare key and its colon out of the key", () => {
    expect(parseToolArguments("{path # the file\n: 'a.txt'}").value).toEqual({ path: "a.txt" });
    expect(parseToolArguments("{path /* the file */ : 'a.txt'}").value).toEqual({ path: "a.txt" });
  });
});

describe("markup inside a string argument never hides or replaces the call", () => {
  const markers = [
    "<tool_call>b",
    '<tool_call>{"name":"f","arguments":{}}',
    "<function=f>",
    "<function=f>{}",
    "[TOOL_CALLS] [{",
    "to=functions.f {}",
    "<|tool_call_begin|>f<|tool_call_argument_begin|>{}",
    "<|tool_call>call:f{}",
    "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}",
    "<|channel|>commentary to=functions.f<|message|>{}",
    "```json\n{}\n```",
  ];
  const formats: Record<string, (args: string, call: string) => string> = {
    hermes: (_, call) => `<tool_call>${call}</tool_call>`,
    "function tag": (args) => `<function=f>${args}</function>`,
    "python tag": (_, call) => `<|python_tag|>${call}`,
    mistral: (_, call) => `[TOOL_CALLS] [${call}]`,
    "mistral v11": (args) => `[TOOL_CALLS]f[ARGS]${args}`,
    granite: (_, call) => `<|tool_call|>[${call}]`,
    "lm studio": (_, call) => `[TOOL_REQUEST]${call}[END_TOOL_REQUEST]`,
    deepseek: (args) =>
      `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>${args}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    kimi: (args) => `<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>${args}<|tool_call_end|>`,
    harmony: (args) => `<|channel|>commentary to=functions.f <|constrain|>json<|message|>${args}<|call|>`,
    "harmony stripped": (args) => `commentary to=functions.f json${args}`,
    functionary: (args) => `>>>f\n${args}`,
    "whole reply": (_, call) => call,
    fenced: (_, call) => `\`\`\`json\n${call}\n\`\`\``,
  };
  for (const [format, write] of Object.entries(formats)) {
    it(`recovers the one ${format} call, its argument as written`, () => {
      for (const marker of markers) {
        const args = JSON.stringify({ a: marker });
        const call = JSON.stringify({ name: "f", arguments: { a: marker } });
        const { calls } = recoverToolCalls(write(args, call), ["f"]);
        expect(calls.map((c) => [c.name, c.args])).toEqual([["f", { a: marker }]]);
      }
    });
  }
});

describe("arguments handed over as an object must be an object in JSON", () => {
  it("refuses a Date or a toJSON that answers an array or a number, as malformed", () => {
    for (const raw of [new Date(0), { toJSON: () => [1] }, { toJSON: () => 5 }]) {
      const error = thrown(() => parseToolArguments(raw));
      expect(ToolArgumentsError.isInstance(error) && error.kind).toBe("malformed");
    }
  });

  it("answers a typed error for a cycle, a BigInt, a throwing getter, a revoked Proxy or a null-prototype object", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const getter = Object.defineProperty({}, "a", {
      enumerable: true,
      get() {
        throw new Error("no");
      },
    });
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    for (const raw of [cycle, { n: 1n }, getter, proxy, Symbol("s"), 1n]) {
      expect(ToolArgumentsError.isInstance(thrown(() => parseToolArguments(raw)))).toBe(true);
    }
    expect(parseToolArguments(Object.assign(Object.create(null), { a: 1 })).value).toEqual({ a: 1 });
  });
});

describe("repair never invents the end of a string", () => {
  it("calls arguments that end inside a string cut off, whatever the finish reason", () => {
    for (const finishReason of [undefined, null, "stop", "tool_calls", "length"]) {
      const error = thrown(() => parseToolArguments('{"cmd": "rm -rf /tmp/build', { finishReason }));
      expect(ToolArgumentsError.isInstance(error) && error.kind).toBe("truncated");
    }
    const error = thrown(() => parseToolArguments("{'cmd': 'rm -rf /tmp/build"));
    expect(ToolArgumentsError.isInstance(error) && error.kind).toBe("truncated");
  });

  it("still closes brackets left open after a complete value when the turn was not cut off", () => {
    expect(parseToolArguments('{"cmd": "ls", "n": 2').value).toEqual({ cmd: "ls", n: 2 });
    expect(parseToolArguments('{"a": {"b": [1, 2').value).toEqual({ a: { b: [1, 2] } });
  });

  it("recovers no call whose arguments were cut inside a string, and parseJson reads none", () => {
    const reply = '<tool_call>{"name": "run", "arguments": {"cmd": "rm -rf /tmp/build';
    expect(recoverToolCalls(reply, ["run"]).calls).toEqual([]);
    expect(parseJson('{"cmd": "rm -rf /tmp/build')).toBeUndefined();
  });

  it("never reads a value whose strings differ from the text's, for any cut of a JSON object", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 12 }), { minKeys: 1, maxKeys: 4 }),
        fc.nat(),
        (value, at) => {
          const text = JSON.stringify(value);
          const cut = text.slice(0, at % text.length);
          const outcome = ((): { read?: Record<string, unknown>; error?: unknown } => {
            try {
              return { read: parseToolArguments(cut).value };
            } catch (error) {
              return { error };
            }
          })();
          // Either refused with the typed error, or read:
          expect(outcome.read !== undefined || ToolArgumentsError.isInstance(outcome.error)).toBe(true);
          const strings = Object.entries(outcome.read ?? {}).filter(([, held]) => typeof held === "string");
          for (const [key, string] of strings) expect(value[key]).toBe(string);
        },
      ),
      propertyRuns(500, { seed: 22 }),
    );
  });
});

describe("depth: nesting past what JSON.stringify can write back", () => {
  it("answers a malformed error, not a RangeError, for arguments nested thousands deep", () => {
    const deep = `{"a":${"[".repeat(6000)}${"]".repeat(6000)}}`;
    const error = thrown(() => parseToolArguments(deep));
    expect(ToolArgumentsError.isInstance(error) && error.kind).toBe("malformed");
    expect(() =>
      recoverToolCalls(`<tool_call>{"name":"f","arguments":${deep}}</tool_call>`, ["f"]),
    ).not.toThrow();
    expect(parseJson(`x ${"[".repeat(6000)}`)).toBeUndefined();
    expect(parseJson("[".repeat(6000) + "]".repeat(6000))).toBeUndefined();
  });

  it("repairs a reply cut off deep inside a value, and refuses one left open far past the depth limit", () => {
    // Cut off 511 levels deep (an object, then 510 arrays): closed and read, every level kept.
    const value = parseJson<{ a: unknown }>(`Here: {"a":${"[".repeat(510)}1`);
    let depth = 0;
    for (let item: unknown = value?.a; Array.isArray(item); item = item[0]) depth++;
    expect(depth).toBe(510);
    // Left open 600 levels deep: closing it would nest past 512, so the reply holds no JSON.
    expect(parseJson(`Here: {"a":${"[".repeat(600)}1`)).toBeUndefined();
  });

  it("still finds the JSON after prose full of brackets that never close", () => {
    const reply = `${"[see ".repeat(40)}then {"path": "src/a.ts"}`;
    expect(parseJson(reply)).toEqual({ path: "src/a.ts" });
  });
});

describe("options of the wrong type", () => {
  it("reads null options as none, and names options that are not an object", () => {
    expect(parseToolArguments('{"a":1}', null as never).value).toEqual({ a: 1 });
    expect(parseToolArguments("{'a': 1}", null as never).value).toEqual({ a: 1 });
    expect(() => parseToolArguments('{"a":1}', "length" as never)).toThrow(ToolCallsError);
    expect(() => parseToolArguments('{"a":1}', "length" as never)).toThrow(
      /parseToolArguments: options must/,
    );
  });
});

describe("a tool schema whose references fan out", () => {
  it("types a markup parameter in time linear in the schema, not in the paths through it", {
    timeout: 20_000,
  }, () => {
    // Sixteen definitions, each a union of eight references to the next: 8^16 paths, 136 nodes.
    const $defs: Record<string, unknown> = { d16: { type: "string" } };
    for (let i = 15; i >= 0; i--) {
      $defs[`d${i}`] = { anyOf: Array.from({ length: 8 }, () => ({ $ref: `#/$defs/d${i + 1}` })) };
    }
    const schema = { type: "object", properties: { v: { $ref: "#/$defs/d0" } }, $defs };
    const text = "<tool_call>\n<function=set>\n<parameter=v>\n1984\n</parameter>\n</function>\n</tool_call>";
    // The test's timeout is the hang guard (the paths would take years); no timing is asserted.
    const { calls } = recoverToolCalls(text, [{ name: "set", inputSchema: schema }]);
    expect(calls[0]?.args).toEqual({ v: "1984" });
  });

  // The timeout is a hang guard for a loaded machine; no timing is asserted.
  it("types a markup parameter whose schema lists 300,000 values without overflowing the stack", {
    timeout: 20_000,
  }, () => {
    const values = Array.from({ length: 300_000 }, (_, i) => `v${i}`);
    const schema = { type: "object", properties: { v: { anyOf: [{ enum: values }, { type: "null" }] } } };
    const text = "<tool_call>\n<function=set>\n<parameter=v>\nv7\n</parameter>\n</function>\n</tool_call>";
    expect(recoverToolCalls(text, [{ name: "set", inputSchema: schema }]).calls[0]?.args).toEqual({
      v: "v7",
    });
  });
});

describe("a looping reply of quotes that never close", () => {
  // A model looping on one pythonic call: each `'` opens a string whose end is never written.
  // The general repair of last resort re-read the rest of the text from every such quote (a 28 KB
  // reply took 19 s, 64 KiB minutes); such text ends inside a string, so nothing is repaired.
  // The test's timeout is the hang guard; no timing is asserted.
  const looping = (unit: string, head = "[", tail = "]") =>
    `${head}${unit.repeat(Math.floor((64 * 1024 - head.length - tail.length) / unit.length))}${tail}`;

  it("recovers no call from 64 KiB of a repeated pythonic call, listed or in a tag, and leaves the text", {
    timeout: 20_000,
  }, () => {
    for (const text of [
      looping("get_weather(city='x "),
      looping("get_weather(city='x ", "<tool_call>[", "]</tool_call>"),
      looping("get_weather(city='x ", "<|python_tag|>[", "]"),
    ]) {
      expect(recoverToolCalls(text, ["get_weather"])).toEqual({ calls: [], text });
    }
  });

  it("refuses 64 KiB of arguments whose list repeats a quote that never closes, as malformed", {
    timeout: 20_000,
  }, () => {
    const error = thrown(() => parseToolArguments(looping("a='x ", '{"a": [', "]}")));
    expect(ToolArgumentsError.isInstance(error)).toBe(true);
  });

  it("still reads a pythonic call in a list, and an apostrophe inside a closed single-quoted string", () => {
    expect(recoverToolCalls("[get_weather(city='it's x')]", ["get_weather"]).calls[0]?.args).toEqual({
      city: "it's x",
    });
    expect(parseToolArguments("{'a': ['x', 'y']}").value).toEqual({ a: ["x", "y"] });
  });
});
