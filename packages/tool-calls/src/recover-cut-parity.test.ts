import { describe, expect, it } from "vitest";
import { recoverToolCalls } from "./recover-tool-calls.js";

// One rule every text-call format shares: with the reply cut at the token ceiling, a call still
// open where the reply ends is never recovered (closed up and run), while the calls closed before
// it still are. Pinned for every format, so no format can drift from it.

const tools = [
  {
    name: "write_file",
    inputSchema: {
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" }, n: { type: "integer" } },
    },
  },
];
const one = { path: "a.txt", content: "Chapter one.", n: 123 };
const two = { path: "b.txt", content: "Two, three.", n: 45 };
const json = (args: object) => JSON.stringify(args);
const call = (args: object, key = "arguments") => JSON.stringify({ name: "write_file", [key]: args });
const gemma = (args: typeof one) =>
  `call:write_file{path:<|"|>${args.path}<|"|>,content:<|"|>${args.content}<|"|>,n:${args.n}}`;

const replies: Record<string, string> = {
  "Hermes <tool_call>": `<tool_call>\n${call(one)}\n</tool_call>`,
  "Hermes, two calls in one block": `<tool_call>\n${call(one)}\n${call(two)}\n</tool_call>`,
  "whole reply JSON": call(one),
  "whole reply, two calls": `${call(one)}; ${call(two)}`,
  "Mistral [ARGS]": `[TOOL_CALLS]write_file[ARGS]${json(one)}`,
  "Mistral list": `[TOOL_CALLS] [${call(one)}, ${call(two)}]`,
  "Llama <function=>": `<function=write_file>${json(one)}</function>`,
  "Llama <|python_tag|>, two calls": `<|python_tag|>${call(one, "parameters")}; ${call(two, "parameters")}`,
  "Qwen3-Coder": `<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<parameter=n>\n123\n</parameter>\n</function>\n</tool_call>`,
  "bare <function=> markup": "<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n</function>",
  GLM: "<tool_call>write_file<arg_key>path</arg_key><arg_value>a.txt</arg_value></tool_call>",
  "MiniMax <invoke>": `<minimax:tool_call><invoke name="write_file"><parameter name="path">a.txt</parameter></invoke></minimax:tool_call>`,
  "bare <invoke>": `<invoke name="write_file"><parameter name="path">a.txt</parameter></invoke>`,
  "DeepSeek V3.1": `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>${json(one)}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
  "Kimi K2": `<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>${json(one)}<|tool_call_end|><|tool_calls_section_end|>`,
  Harmony: `<|start|>assistant<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>${json(one)}<|call|>`,
  "Harmony without tokens": `commentary to=functions.write_file json${json(one)}`,
  "Functionary v3": `>>>write_file\n${json(one)}`,
  "Gemma 4": `<|tool_call>${gemma(one)}<tool_call|>`,
  pythonic: `[write_file(path="a.txt", content="Chapter one.", n=123)]`,
};

function argsOf(reply: string, finishReason?: string): unknown[] {
  return recoverToolCalls(reply, tools, { finishReason }).calls.map((c) => c.args);
}

describe("with finishReason length, every format recovers only the calls closed before the cut", () => {
  for (const [format, reply] of Object.entries(replies)) {
    it(`${format}: each cut recovers a prefix of the whole reply's calls, each call whole`, () => {
      const all = argsOf(reply);
      expect(all.length).toBeGreaterThan(0);
      // The whole reply reads the same whatever the finish reason.
      expect(argsOf(reply, "length")).toEqual(all);
      for (let at = 1; at < reply.length; at++) {
        const cut = argsOf(reply.slice(0, at), "length");
        expect(all.slice(0, cut.length)).toEqual(cut);
      }
    });
  }

  it("recovers the first of two calls in a tag when the second is cut; a reply of calls only as a whole", () => {
    const tagged = replies["Llama <|python_tag|>, two calls"] as string;
    expect(argsOf(tagged.slice(0, -12), "length")).toEqual([one]);
    const whole = replies["whole reply, two calls"] as string;
    expect(argsOf(whole.slice(0, -12), "length")).toEqual([]);
    // Without a finish reason, the bracket left open after a whole value is closed, as before.
    expect(argsOf(whole.slice(0, -1))).toEqual([one, two]);
  });
});
