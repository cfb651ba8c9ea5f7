import { describe, expect, it } from "vitest";
import { recoverToolCalls } from "./recover-tool-calls.js";

const tools = [
  {
    name: "write_file",
    inputSchema: {
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" }, n: { type: "integer" } },
    },
  },
];

/** What recoverToolCalls made of a reply: the calls as [name, args], and the text left. */
function recovered(reply: string) {
  const { calls, text } = recoverToolCalls(reply, tools);
  return { calls: calls.map((c) => [c.name, c.args]), text };
}

describe("a markup call whose last value the reply never finished is not recovered", () => {
  const cut = [
    // Qwen3-Coder, wrapped and bare: the content's end was never written.
    "<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<parameter=content>\nChapter one, the begi",
    "<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<parameter=content>\nChapter one, the begi",
    "<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<parameter=n>\n12",
    // GLM.
    "<tool_call>write_file<arg_key>path</arg_key><arg_value>a.txt</arg_value><arg_key>content</arg_key><arg_value>Chapter one, the beg",
    // MiniMax / DeepSeek V3.2 <invoke>: the unfinished parameter was dropped and the call run without it.
    '<invoke name="write_file"><parameter name="path">a.txt</parameter><parameter name="content">Chapter one, the beg',
    '<minimax:tool_call><invoke name="write_file"><parameter name="path">a.txt</parameter><parameter name="content">Chapter one',
  ];
  for (const reply of cut) {
    it(`leaves ${JSON.stringify(reply.slice(0, 48))}… in the text`, () => {
      expect(recovered(reply)).toEqual({ calls: [], text: reply });
    });
  }

  it("still recovers the same calls when their values are closed, or the block is", () => {
    expect(
      recovered(
        "<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<parameter=content>\nhi\n</parameter>",
      ).calls,
    ).toEqual([["write_file", { path: "a.txt", content: "hi" }]]);
    // The wrapper's closing tag says the model finished, though it left the value's own tag out.
    expect(
      recovered("<tool_call>\n<function=write_file>\n<parameter=content>\nhi\n</tool_call>").calls,
    ).toEqual([["write_file", { content: "hi" }]]);
    expect(
      recovered("<tool_call>write_file<arg_key>content</arg_key><arg_value>hi</arg_value></tool_call>").calls,
    ).toEqual([["write_file", { content: "hi" }]]);
    expect(
      recovered('<invoke name="write_file"><parameter name="content">hi</parameter></invoke>').calls,
    ).toEqual([["write_file", { content: "hi" }]]);
  });

  it("never runs an <invoke> call without a parameter the model wrote", () => {
    const reply =
      '<invoke name="write_file"><parameter name="path">a.txt</parameter><parameter name="content">hi</invoke>';
    expect(recovered(reply).calls).not.toEqual([["write_file", { path: "a.txt" }]]);
  });
});

describe("with finishReason length, a call still open where the reply ends is not recovered", () => {
  const whole = { path: "a.txt", content: "Chapter one.", n: 123 };
  const forms: Record<string, (args: Record<string, unknown>) => string> = {
    hermes: (args) => `<tool_call>\n${JSON.stringify({ name: "write_file", arguments: args })}\n</tool_call>`,
    bare: (args) => JSON.stringify({ name: "write_file", arguments: args }),
    mistral: (args) => `[TOOL_CALLS]write_file[ARGS]${JSON.stringify(args)}`,
    llama: (args) => `<function=write_file>${JSON.stringify(args)}</function>`,
    pythonTag: (args) => `<|python_tag|>${JSON.stringify({ name: "write_file", parameters: args })}`,
    qwenCoder: (args) =>
      `<tool_call>\n<function=write_file>\n${Object.entries(args)
        .map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`)
        .join("")}</function>\n</tool_call>`,
    invoke: (args) =>
      `<minimax:tool_call><invoke name="write_file">${Object.entries(args)
        .map(([k, v]) => `<parameter name="${k}">${v}</parameter>`)
        .join("")}</invoke></minimax:tool_call>`,
  };
  for (const [form, write] of Object.entries(forms)) {
    it(`${form}: every cut reads as the whole call or none`, () => {
      const reply = write(whole);
      const seen = new Set<string>();
      const left = new Set<string>();
      for (let at = 1; at <= reply.length; at++) {
        const { calls, text } = recoverToolCalls(reply.slice(0, at), tools, { finishReason: "length" });
        seen.add(JSON.stringify(calls.map((c) => c.args)));
        // A call recovered takes all of its markup with it: no piece of a closing tag (`</tool_ca`)
        // or of the wrapper is left as the answer.
        if (calls.length > 0) left.add(text);
      }
      // The whole call, once its text is complete; nothing before.
      expect([...seen].filter((s) => s !== "[]")).toEqual([JSON.stringify([whole])]);
      expect([...left]).toEqual([""]);
    });
  }

  it("takes a piece of the closing tag after the last call with the call, and keeps the answer before it", () => {
    const call = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt"}}';
    for (const tail of ["\n</tool_call", "\n</tool_", "\n</", "\n<", "</tool_call>\n<|im_"]) {
      expect(recoverToolCalls(`Hi.\n${call}${tail}`, tools, { finishReason: "length" })).toEqual({
        calls: [expect.objectContaining({ name: "write_file", args: { path: "a.txt" } })],
        text: "Hi.",
      });
    }
    // DeepSeek's tokens, in either spelling.
    const deepseek =
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>{"n": 1}<｜tool▁call▁end｜>';
    for (const reply of [`${deepseek}<｜tool▁calls▁en`, `${deepseek}<|tool_calls_en`]) {
      expect(recoverToolCalls(reply, tools, { finishReason: "length" }).text).toBe("");
    }
    // Text after the call that is not a piece of a closing tag stays; a whole tag is not a piece.
    for (const tail of ["\nDone <b", "\n<b>", "\n[see"]) {
      const { text } = recoverToolCalls(`Hi.\n${call}\n</tool_call>${tail}`, tools, {
        finishReason: "length",
      });
      expect(text).toBe(`Hi.\n\n${tail.trim()}`);
    }
  });

  it("without a finish reason a bracket left open after a whole value is still closed, as before", () => {
    expect(recovered('<tool_call>{"name": "write_file", "arguments": {"n": 1}').calls).toEqual([
      ["write_file", { n: 1 }],
    ]);
  });

  it("refuses options that are not an object by name", () => {
    expect(() => recoverToolCalls("x", tools, "length" as never)).toThrow(/options must be an object/);
    expect(recoverToolCalls("x", tools, null).calls).toEqual([]);
  });
});

describe("a call quoted in inline code is an example, not a call", () => {
  const names = ["run", "add"];
  it("leaves markup written between backticks in a sentence in the text", () => {
    for (const reply of [
      'Use `<tool_call>{"name": "run", "arguments": {"cmd": "rm -rf /"}}</tool_call>` to run commands.',
      'Mistral writes ``[TOOL_CALLS]add[ARGS]{"a": 1}`` for a call.',
      "Qwen3-Coder writes `<function=run><parameter=cmd>ls</parameter></function>` instead.",
    ]) {
      expect(recoverToolCalls(reply, names)).toEqual({ calls: [], text: reply });
    }
  });

  it("still recovers a call beside inline code, or holding backticks in its arguments", () => {
    const call = '<tool_call>{"name": "run", "arguments": {"cmd": "echo `date`"}}</tool_call>';
    for (const reply of [`Run \`ls\` first.\n${call}`, call, `I will run it: ${call}`]) {
      expect(recoverToolCalls(reply, names).calls.map((c) => c.args)).toEqual([{ cmd: "echo `date`" }]);
    }
  });
});

describe("a tool definition written as JSON is not a call", () => {
  it("never runs a tool with its own parameters schema as the arguments", () => {
    const names = ["get_weather", "add"];
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    for (const reply of [
      JSON.stringify({ name: "get_weather", description: "Weather for a city", parameters: schema }),
      JSON.stringify([
        { type: "function", function: { name: "get_weather", description: "Weather", parameters: schema } },
      ]),
      `I have these tools:\n\`\`\`json\n${JSON.stringify({ name: "add", description: "Adds", parameters: schema })}\n\`\`\``,
    ]) {
      expect(recoverToolCalls(reply, names)).toEqual({ calls: [], text: reply });
    }
    // A call is still a call.
    expect(
      recoverToolCalls('{"name": "add", "arguments": {"a": 1}}', names).calls.map((c) => c.args),
    ).toEqual([{ a: 1 }]);
  });
});

describe("the text left after the calls are taken out", () => {
  it("keeps the reasoning and the prose as written, closing up only where a call was", () => {
    const thinking = "<think>step one\n\n\n\nstep two</think>";
    const prose = "Here is the plan:\n```\na\n\n\n\nb\n```";
    const call = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>';
    const { calls, text } = recoverToolCalls(`${thinking}\n${prose}\n\n\n${call}\n\n\nDone.`, ["add"]);
    expect(calls).toHaveLength(1);
    expect(text).toBe(`${thinking}\n${prose}\n\nDone.`);
  });
});
