import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findFences } from "./json-text.js";
import { parseJson } from "./parse-json.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { recoverToolCalls } from "./recover-tool-calls.js";
import { countScanned } from "./test-support/scanned.js";

// Review r79: what r77b/r78b left in @loopwright/tool-calls.

const rm = '<tool_call>{"name": "rm", "arguments": {"path": "/"}}</tool_call>';
const fence = (marker: string, info: string, body: string) => `${marker}${info}\n${body}\n${marker}`;

describe("R79-4: a ```json line inside a fenced block does not close it (CommonMark: a closing fence has no info string)", () => {
  it("leaves a call quoted after a ```json line inside a block as the example it is", () => {
    for (const reply of [
      `To document it:\n\`\`\`markdown\nWrite a call like this:\n\`\`\`json\n${rm}\n\`\`\`\nThat is all.`,
      `Like this:\n\`\`\`\nfirst line\n\`\`\`json\n${rm}\n\`\`\`\n\nDone.`,
      `Like this:\n\`\`\`\nfirst line\n\`\`\` python\n${rm}\n\`\`\`\n\nDone.`,
    ]) {
      const read = recoverToolCalls(reply, ["rm"]);
      expect(read.calls, reply).toEqual([]);
      expect(read.text).toBe(reply);
    }
  });

  it("still closes at a bare run, one after the JSON on its line, and one before an end-of-turn token", () => {
    expect(findFences('```json\n{"a": 1}```\nmore', 5).map((f) => f.body)).toEqual(['{"a": 1}']);
    expect(findFences("```\nx\n```  \n", 5).map((f) => [f.body, f.closed])).toEqual([["x\n", true]]);
    expect(findFences("```tool_code\nf()\n```<end_of_turn>", 5).map((f) => f.body)).toEqual(["f()\n"]);
    // A block opened with four backticks is closed only by four or more.
    expect(findFences("````\na\n```\nb\n````\n", 5).map((f) => f.body)).toEqual(["a\n```\nb\n"]);
  });

  it("property: a block's lines that start with ``` and an info string are its text", () => {
    const line = fc.constantFrom("```json", "``` python", "```ts", "text", "{", "}", "", "`x`");
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.constantFrom("", "json", "md"), (lines, info) => {
        const body = lines.join("\n");
        const fences = findFences(`Intro.\n\`\`\`${info}\n${body}\n\`\`\`\nAfter.`, 5);
        expect(fences.length).toBe(1);
        expect(fences[0]?.body).toBe(`${body}\n`);
        expect(fences[0]?.closed).toBe(true);
      }),
    );
  });
});

describe("R79-4: parseJson reads a ~~~ fence as it reads a backtick one", () => {
  it("takes the fenced object over one in the prose before it", () => {
    const prose = 'Note: use {"b": 2} style. Result:\n';
    expect(parseJson(`${prose}\`\`\`json\n{"a": 1}\n\`\`\`\n`)).toEqual({ a: 1 });
    expect(parseJson(`${prose}~~~json\n{"a": 1}\n~~~\n`)).toEqual({ a: 1 });
  });

  it("property: the same reply fenced with ``` or ~~~ reads the same", () => {
    const word = fc.constantFrom("see", '{"b": 2}', "[1]", "note", "{x}", " ", "\n", "`");
    const json = fc.dictionary(fc.constantFrom("a", "b", "c"), fc.oneof(fc.integer(), fc.string()), {
      minKeys: 1,
    });
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 6 }),
        json,
        fc.constantFrom("", "json"),
        (before, value, info) => {
          const prose = `${before.join(" ")}\n`;
          const body = JSON.stringify(value, null, 1);
          const ticks = parseJson(`${prose}${fence("```", info, body)}\n`);
          const tildes = parseJson(`${prose}${fence("~~~", info, body)}\n`);
          expect(tildes).toEqual(ticks);
          expect(tildes).toEqual(value);
        },
      ),
    );
  });
});

const tool = (name: string, properties: Record<string, unknown> = {}) => ({
  type: "function" as const,
  function: { name, parameters: { type: "object", properties } },
});

describe("R79-6: a negative zero", () => {
  // Decided: JSON.parse keeps -0, and so does every reader here; the text written from a value
  // (`json`, a `raw` the library writes) is JSON.stringify's, `0`. Benign (the same number to any
  // arithmetic but division), and documented; these hold it.
  it("is -0 in the value of every reader, plain or repaired, and 0 in the text written from it", () => {
    expect(Object.is((parseJson('{"x": -0}') as { x: number }).x, -0)).toBe(true);
    for (const text of ['{"x": -0}', "{'x': -0}", '{"x": -0.0, y: nil}']) {
      const read = parseToolArguments(text);
      expect(Object.is((read.value as { x: number }).x, -0), text).toBe(true);
      expect(read.json.startsWith('{"x":0')).toBe(true);
    }
    for (const reply of [
      '<tool_call>{"name": "f", "arguments": {"x": -0}}</tool_call>',
      "<tool_call>{'name': 'f', 'arguments': {'x': -0}}</tool_call>",
      "[f(x=-0)]",
      "<tool_call><function=f><parameter=x>-0</parameter></function></tool_call>",
    ]) {
      const [call] = recoverToolCalls(reply, [tool("f", { x: { type: "number" } })]).calls;
      expect(Object.is(call?.args.x, -0), reply).toBe(true);
      // `raw` as the model wrote it (-0), or written from the value (0): the same number either way.
      expect((parseToolArguments(call?.raw ?? "").value as { x: number }).x === 0).toBe(true);
    }
  });
});

describe("R79-7: pythonic literals and keywords given twice", () => {
  it("reads Python's hex, octal, binary and grouped literals as the numbers Python reads", () => {
    const [call] = recoverToolCalls("[f(a=0x10, b=-0o17, c=0b11, d=1_000, e=0.000_1, s='0x10')]", [
      "f",
    ]).calls;
    expect(call?.args).toEqual({ a: 16, b: -15, c: 3, d: 1000, e: 0.0001, s: "0x10" });
    expect(parseToolArguments(call?.raw ?? "").value).toEqual(call?.args);
    // Past a double: recorded with its digits, as the decimal spelling is.
    const [big] = recoverToolCalls("[f(a=0xFFFFFFFFFFFFFFFFFF)]", ["f"]).calls;
    expect(big?.raw).toBe('{"a":4722366482869645213695}');
    expect(parseToolArguments(big?.raw ?? "", { takesString: () => true }).value).toEqual({
      a: "4722366482869645213695",
    });
  });

  it("property: any integer written in hex, octal, binary or decimal reads the same", () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.constantFrom(16, 8, 2, 10), (n, base) => {
        const prefix = { 16: "0x", 8: "0o", 2: "0b", 10: "" }[base];
        const written = `${n < 0 ? "-" : ""}${prefix}${Math.abs(n).toString(base)}`;
        const [call] = recoverToolCalls(`[f(a=${written})]`, ["f"]).calls;
        expect(call?.args.a).toBe(n === 0 ? 0 : n);
      }),
    );
  });

  it("keeps the last value of a keyword given twice, as every format keeps a key given twice", () => {
    const replies = [
      "[f(a=1, a=2)]",
      '<tool_call>{"name": "f", "arguments": {"a": 1, "a": 2}}</tool_call>',
      "<tool_call>{'name': 'f', 'arguments': {'a': 1, 'a': 2}}</tool_call>",
      "<tool_call><function=f><parameter=a>1</parameter><parameter=a>2</parameter></function></tool_call>",
    ];
    for (const reply of replies) {
      expect(
        recoverToolCalls(reply, [tool("f", { a: { type: "integer" } })]).calls.map((c) => c.args),
        reply,
      ).toEqual([{ a: 2 }]);
    }
    expect(parseToolArguments("{'a': 1, 'a': 2}").value).toEqual({ a: 2 });
  });
});

describe("R79-8: the glued `namejson` is read as `name` only in Harmony, where gpt-oss writes it", () => {
  it("reads gpt-oss's to=functions.shelljson as shell, with its tokens or stripped of them", () => {
    for (const reply of [
      '<|channel|>commentary to=functions.shelljson <|constrain|>json<|message|>{"cmd":"ls"}<|call|>',
      'commentary to=functions.shelljson json{"cmd":"ls"}',
    ]) {
      expect(
        recoverToolCalls(reply, ["shell"]).calls.map((c) => [c.name, c.args]),
        reply,
      ).toEqual([["shell", { cmd: "ls" }]]);
    }
    // A tool that is named so is itself.
    expect(
      recoverToolCalls(
        '<|channel|>commentary to=functions.shelljson <|constrain|>json<|message|>{"cmd":"ls"}<|call|>',
        ["shell", "shelljson"],
      ).calls.map((c) => c.name),
    ).toEqual(["shelljson"]);
  });

  it("leaves a call to `searchjson` in any other format as a call to a tool that does not exist", () => {
    for (const reply of [
      '<tool_call>{"name": "searchjson", "arguments": {"q": "x"}}</tool_call>',
      '[TOOL_CALLS]searchjson[ARGS]{"q": "x"}',
      '[searchjson(q="x")]',
      '{"name": "searchjson", "arguments": {"q": "x"}}',
      "<tool_call><function=searchjson><parameter=q>x</parameter></function></tool_call>",
    ]) {
      const read = recoverToolCalls(reply, ["search"]);
      expect(read.calls, reply).toEqual([]);
      expect(read.text).toBe(reply);
    }
  });
});

describe("R79-9: a scratchpad opener written as inline code opens nothing (as the stream reads it)", () => {
  const call = '<tool_call>{"name": "rm", "arguments": {"path": "x"}}</tool_call>';

  it("recovers the call after `<thinking>`, `<think>` or `<reasoning>` mentioned in a sentence", () => {
    for (const marker of ["<thinking>", "<think>", "<reasoning>"]) {
      const reply = `Models wrap reasoning in \`${marker}\` tags.\n${call}`;
      expect(
        recoverToolCalls(reply, ["rm"]).calls.map((c) => c.name),
        reply,
      ).toEqual(["rm"]);
    }
  });

  it("still hides a call in a scratchpad opened without backticks, or with one on one side only", () => {
    for (const reply of [`Use \`<thinking>\`. <thinking>maybe ${call}`, `a \`<thinking>maybe ${call}`]) {
      expect(recoverToolCalls(reply, ["rm"]).calls, reply).toEqual([]);
    }
  });
});

describe("R79-9: a lone closer written as inline code ends no scratchpad (as the stream reads it)", () => {
  const call = '<tool_call>{"name": "rm", "arguments": {"path": "x"}}</tool_call>';

  it("recovers a call before `</think>` mentioned in a sentence; a bare </think> still ends the scratchpad", () => {
    const quoted = `Checking.\n${call}\nQwen ends its scratchpad with \`</think>\`.`;
    expect(recoverToolCalls(quoted, ["rm"]).calls.map((c) => c.name)).toEqual(["rm"]);
    expect(recoverToolCalls(`${call} plan</think>done`, ["rm"]).calls).toEqual([]);
    expect(recoverToolCalls(`${call} \`</think>\` plan</think>done`, ["rm"]).calls).toEqual([]);
  });

  it("stays linear on many quoted closers (a search per closer goes on from the one before)", () => {
    const text = `${"`</think>` ".repeat(20_000)}${call}`;
    // Counted, not timed (a ratio of two timings moved 3-4 times on a loaded host): the characters
    // the searches went over, 35 for each of the text's now; searching from the start for each
    // quoted closer went over the text once per closer (past 100 each at once: fails).
    const scanned = countScanned(() => {
      expect(recoverToolCalls(text, ["rm"]).calls.length).toBe(1);
    }, 100 * text.length);
    expect(scanned).toBeGreaterThan(text.length);
  });
});
