import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ALL_FENCES, stripThinking } from "../../stream/src/fences.js";
import { ToolCallsError } from "./errors.js";
import { recoverToolCalls, SCRATCHPADS } from "./recover-tool-calls.js";

// Review r85: calls a reply shows that were not recovered.

/** The end-of-turn tokens a chat template leaks when a server prints special tokens. */
const END_TOKENS = [
  "<|end|>",
  "<|eot_id|>",
  "<|eom_id|>",
  "<|im_end|>",
  "</s>",
  "<|endoftext|>",
  "<|end_of_text|>",
  "<end_of_turn>",
  "<|return|>",
  "<｜end▁of▁sentence｜>",
  // Llama 4's own (its pythonic calls were lost after them), Gemma's end of sequence, GLM's.
  "<|eot|>",
  "<|eom|>",
  "<eos>",
  "<|observation|>",
  "<|END_OF_TURN_TOKEN|>",
];
/** The same at the end of a text, with the blank space around them (what the stream shows after the call). */
const TRAILING_END_TOKENS = new RegExp(
  `(?:\\s*(?:${END_TOKENS.map((t) => t.replace(/[|[\]]/g, "\\$&")).join("|")}))+\\s*$`,
);

const ls = { id: "call_recovered_0", name: "ls", args: { path: "x" }, raw: '{"path":"x"}' };

/** Every shape a call is read in, written as a reply that is that call alone. */
const SHAPES: Record<string, string> = {
  tagged: '<tool_call>\n{"name": "ls", "arguments": {"path": "x"}}\n</tool_call>',
  "tagged, no closing tag": '<tool_call>\n{"name": "ls", "arguments": {"path": "x"}}',
  "tagged pythonic": "<tool_call>ls(path='x')</tool_call>",
  "tagged pythonic list": "<tool_call>[ls(path='x')]</tool_call>",
  "whole-reply JSON": '{"name": "ls", "arguments": {"path": "x"}}',
  "whole-reply JSON list": '[{"name": "ls", "arguments": {"path": "x"}}]',
  functools: 'functools[{"name": "ls", "arguments": {"path": "x"}}]',
  "python_tag JSON": '<|python_tag|>{"name": "ls", "parameters": {"path": "x"}}',
  "python_tag pythonic": '<|python_tag|>ls(path="x")',
  "python_tag pythonic list": '<|python_tag|>[ls(path="x")]',
  fenced: '```json\n{"name": "ls", "arguments": {"path": "x"}}\n```',
  "fenced tool_code": "```tool_code\nls(path='x')\n```",
  "tilde fenced": '~~~json\n{"name": "ls", "arguments": {"path": "x"}}\n~~~',
  pythonic: "[ls(path='x')]",
  "bare pythonic": "ls(path='x')",
  "Qwen3-Coder": "<tool_call>\n<function=ls>\n<parameter=path>\nx\n</parameter>\n</function>\n</tool_call>",
  GLM: "<tool_call>ls<arg_key>path</arg_key><arg_value>x</arg_value></tool_call>",
  "Llama 3.1 function": '<function=ls>{"path": "x"}</function>',
  Mistral: '[TOOL_CALLS] [{"name": "ls", "arguments": {"path": "x"}}]',
  "GLM, no closing tag": "<tool_call>ls<arg_key>path</arg_key><arg_value>x</arg_value>",
  "Qwen3-Coder, no wrapper close":
    "<tool_call>\n<function=ls>\n<parameter=path>\nx\n</parameter>\n</function>",
  MiniMax: '<minimax:tool_call><invoke name="ls"><parameter name="path">x</parameter></invoke>',
  "LM Studio": '[TOOL_REQUEST]{"name": "ls", "arguments": {"path": "x"}}',
  Granite: '<|tool_call|>[{"name": "ls", "arguments": {"path": "x"}}]',
  "Gemma 4": '<|tool_call>call:ls{path:<|"|>x<|"|>}',
  FunctionGemma: "<start_function_call>call:ls{path:<escape>x<escape>}",
  Kimi: '<|tool_calls_section_begin|><|tool_call_begin|>functions.ls:0<|tool_call_argument_begin|>{"path": "x"}',
  "Functionary v3": '>>>ls\n{"path": "x"}',
  "Harmony, tokens stripped": 'commentary to=functions.ls json{"path": "x"}',
};

describe("R85-1: a call followed by the end-of-turn tokens a template leaks is recovered, in every shape", () => {
  it("a pythonic call list, in a tag or as the whole reply, then <|end|>, <|im_end|>, </s> …", () => {
    // Only Llama's own <|eot_id|> / <|eom_id|> were read after a pythonic call.
    for (const reply of [
      "[ls(path='x')]<|end|>",
      "[ls(path='x')]<|im_end|>\n",
      "ls(path='x')</s>",
      "[ls(path='x')]<end_of_turn>\n\n",
      // Llama 4 writes pythonic calls and ends its turn with <|eot|> (Llama 3's is <|eot_id|>).
      "[ls(path='x')]<|eot|>",
      "[ls(path='x')]<end_of_turn><eos>",
      '<|python_tag|>ls(path="x")<|endoftext|>',
      "<tool_call>[ls(path='x')]</tool_call>",
      "<tool_call>[ls(path='x')]</tool_call><|im_end|>",
      '<|python_tag|>[ls(path="x")]<|eom_id|>',
      // A tilde fence closed with an end-of-turn token after it, as ```<end_of_turn> closes one.
      "~~~\nls(path='x')\n~~~<|end|>",
    ]) {
      expect(recoverToolCalls(reply, ["ls"]), reply).toEqual({ calls: [ls], text: "" });
    }
    // The answer after gpt-oss's analysis, and after a closed <think>: the same.
    const harmony =
      '<|channel|>analysis<|message|>plan<|end|><|start|>assistant<|channel|>final<|message|>[ls(path="x")]<|return|>';
    expect(recoverToolCalls(harmony, ["ls"]).calls).toEqual([ls]);
    expect(recoverToolCalls("<think>plan</think>\n[ls(path='x')]<|im_end|>", ["ls"])).toEqual({
      calls: [ls],
      text: "<think>plan</think>",
    });
  });

  it("property: every shape, then end-of-turn tokens and blank space, after closed scratchpads or none", () => {
    const gap = fc.constantFrom("", "\n", " ", "\r\n", "\n\n");
    const tokens = fc.array(fc.tuple(gap, fc.constantFrom(...END_TOKENS)), { minLength: 1, maxLength: 3 });
    const pads = fc.array(
      fc.tuple(fc.constantFrom(...SCRATCHPADS), gap).map(([kind, g]) => `${kind.open}plan${kind.close}${g}`),
      { maxLength: 2 },
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(SHAPES)),
        pads,
        tokens,
        gap,
        (shape, before, after, last) => {
          const call = SHAPES[shape] as string;
          const reply = `${before.join("")}${call}${after.map(([g, t]) => g + t).join("")}${last}`;
          // The stream shows the call alone as the answer, end-of-turn tokens aside.
          const content = stripThinking(reply, { fences: ALL_FENCES }).content;
          expect(content.replace(TRAILING_END_TOKENS, "").trim(), reply).toBe(call);
          const { calls, text } = recoverToolCalls(reply, ["ls"]);
          // `raw` is the argument text as written where the shape wrote JSON (`{"path": "x"}`).
          expect(
            calls.map(({ id, name, args }) => ({ id, name, args })),
            reply,
          ).toEqual([{ id: ls.id, name: "ls", args: ls.args }]);
          expect(text, reply).toBe(before.join("").trim());
        },
      ),
      propertyRuns(600),
    );
  });

  it("a run of end-of-turn tokens longer than 256 characters (a server that ignores the end of the turn)", () => {
    // A server told to ignore the end-of-sequence token (`ignore_eos`), or a template that does
    // not stop on it, leaves the token over and over up to its token limit. Only the last 256
    // characters were looked at: a whole-reply call was lost, and the tokens stayed in the text.
    for (const run of [
      "<|im_end|>\n".repeat(40),
      "</s>".repeat(80),
      `<|eot_id|>${" ".repeat(300)}<|eot_id|>`,
      "<end_of_turn>\n<eos>".repeat(30),
    ]) {
      for (const [shape, call] of Object.entries(SHAPES)) {
        const { calls, text } = recoverToolCalls(call + run, ["ls"]);
        expect(
          calls.map(({ name, args }) => ({ name, args })),
          `${shape} + ${run.slice(0, 12)}…`,
        ).toEqual([{ name: "ls", args: ls.args }]);
        expect(text, `${shape} + ${run.slice(0, 12)}…`).toBe("");
      }
    }
  });

  it("property: an end-of-turn token (or a scratchpad marker) inside a string argument is the argument's text", () => {
    const piece = fc.constantFrom(...END_TOKENS, "</think>", "<think>", "```", "\n", "a", " ", "'");
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 5 }),
        fc.constantFrom(...END_TOKENS),
        fc.constantFrom("json", "tagged", "pythonic", "python_tag"),
        (parts, end, shape) => {
          const path = parts.join("");
          const quoted = JSON.stringify(path);
          const call = {
            json: `{"name": "ls", "arguments": {"path": ${quoted}}}`,
            tagged: `<tool_call>{"name": "ls", "arguments": {"path": ${quoted}}}</tool_call>`,
            pythonic: `[ls(path=${quoted})]`,
            python_tag: `<|python_tag|>ls(path=${quoted})`,
          }[shape];
          const reply = `${call}${end}`;
          expect(
            recoverToolCalls(reply, ["ls"]).calls.map((c) => c.args),
            reply,
          ).toEqual([{ path }]);
        },
      ),
      propertyRuns(500),
    );
  });
});

describe("R85-1b: a call in a form that runs to the end of the reply, then scratchpads, as the stream shows it", () => {
  const call = '{"name": "ls", "arguments": {"path": "x"}}';

  it("recovers it and keeps the scratchpads in the text", () => {
    for (const [reply, text] of [
      ['<|python_tag|>ls(path="x")<think>done</think>', "<think>done</think>"],
      ['<|python_tag|>ls(path="x")<|eot_id|><think>done', "<think>done"],
      [`\`\`\`json\n${call}\n\`\`\`\n<think>done</think>`, "<think>done</think>"],
      [
        `I will call it:\n\`\`\`json\n${call}\n\`\`\`\n<think>done</think>`,
        "I will call it:\n\n<think>done</think>",
      ],
      [
        `\`\`\`json\n${call}\n<reasoning>done</reasoning>\n◁think▷more`,
        "<reasoning>done</reasoning>\n◁think▷more",
      ],
    ] as const) {
      expect(
        stripThinking(reply, { fences: ALL_FENCES }).content.replace(TRAILING_END_TOKENS, "").trim(),
      ).not.toBe(reply.trim());
      expect(recoverToolCalls(reply, ["ls"]), reply).toEqual({
        calls: [{ ...ls, raw: expect.any(String) }],
        text,
      });
    }
  });

  it("recovers nothing where the scratchpad's opener cuts the call open, as the stream shows it", () => {
    for (const reply of [
      '```json\n{"name": "ls", "arguments": {"path": "<think>x"}}\n```<think>y</think>',
      '```json\n{"name": "ls", "arguments": {"path": "x"}\n<think>done</think>',
      "<tool_call>\n<function=ls>\n<parameter=path>\nx<think>done</think>",
    ]) {
      expect(recoverToolCalls(reply, ["ls"]), reply).toEqual({ calls: [], text: reply });
    }
  });
});

describe("R85-2: a reply that ended inside its one fence, holding a call, is a call (as after an unclosed <tool_call>)", () => {
  const call = '{"name": "ls", "arguments": {"path": "x"}}';

  it("recovers the call whatever the finish reason, prose before it kept", () => {
    for (const finishReason of [undefined, "stop", "length"]) {
      for (const [reply, text] of [
        [`\`\`\`json\n${call}\n`, ""],
        [`\`\`\`json\n${call}`, ""],
        [`I will call it:\n\`\`\`json\n${call}\n`, "I will call it:"],
        [`~~~json\n${call}\n`, ""],
        [`\`\`\`json\r\n${call}\r\n`, ""],
        [`\`\`\`json\n${call}\n<|im_end|>`, ""],
        ["```tool_code\nls(path='x')\n", ""],
        ["```\n[ls(path='x')]<|eot_id|>", ""],
      ] as const) {
        expect(recoverToolCalls(reply, ["ls"], { finishReason }), reply).toEqual({ calls: [ls], text });
      }
    }
    // As with `<tool_call>` and no closing tag.
    expect(recoverToolCalls(`<tool_call>\n${call}\n`, ["ls"], { finishReason: "length" }).calls).toEqual([
      ls,
    ]);
  });

  it("a fence written in the call's string, the reply ending after the call, does not close it", () => {
    const reply = '```json\n{"name": "ls", "arguments": {"path": "a\\n```\\nb"}}\n';
    expect(recoverToolCalls(reply, ["ls"]).calls.map((c) => c.args)).toEqual([{ path: "a\n```\nb" }]);
  });

  it("cut at the ceiling inside the closing fence: the piece of fence goes with the call", () => {
    expect(recoverToolCalls(`\`\`\`json\n${call}\n\`\``, ["ls"], { finishReason: "length" })).toEqual({
      calls: [ls],
      text: "",
    });
  });

  it("recovers nothing from a fence holding more than the call, or a call still open at the ceiling", () => {
    const open = '```json\n{"name": "ls", "arguments": {"path": "x"}\n';
    for (const [reply, finishReason] of [
      [`\`\`\`json\n${call}\nThis lists the files.`, undefined],
      ['```json\n{"name": "ls", "arguments": {"path": "Chapter one, the beg', undefined],
      [open, "length"],
      ['```json\n{"name": "ls", "description": "lists files"}\n', undefined],
      [`\`\`\`json\n${call}\n\`\`\`\nand\n\`\`\`json\n${call}\n`, undefined],
      [`<think>plan \`\`\`json\n${call}\n`, undefined],
    ] as const) {
      expect(recoverToolCalls(reply, ["ls"], { finishReason }), reply).toEqual({ calls: [], text: reply });
    }
    // Not cut at the ceiling, brackets left open read as for an unclosed <tool_call>.
    expect(recoverToolCalls(open, ["ls"]).calls).toEqual([ls]);
  });
});

describe("R85-3: recoverToolCalls names what it was given in place of its tools or text", () => {
  it.each([
    [undefined, "was given undefined (pass [] for a turn with no tools)."],
    [null, "was given null (pass [] for a turn with no tools)."],
    ["ls", 'was given a string (one tool\'s name: pass it in an array, ["ls"]).'],
    [
      { name: "ls", inputSchema: {} },
      "was given an object (one tool's definition: pass it in an array, [tool]).",
    ],
    [
      { type: "function", function: { name: "ls" } },
      "was given an object (one tool's definition: pass it in an array, [tool]).",
    ],
    [{}, "was given an object."],
    [5, "was given the number 5."],
    [true, "was given the boolean true."],
    [() => ["ls"], "was given a function."],
  ])("tools %o", (tools, ending) => {
    let thrown: unknown;
    try {
      recoverToolCalls("[ls(path='x')]", tools as never);
    } catch (error) {
      thrown = error;
    }
    expect(ToolCallsError.isInstance(thrown)).toBe(true);
    expect((thrown as ToolCallsError).code).toBe("invalid-tools");
    expect((thrown as ToolCallsError).message).toBe(
      `recoverToolCalls needs the tools the model may call as an array (names or tool definitions), and ${ending}`,
    );
  });

  it("text that is not a string, and options that are not an object", () => {
    expect(() => recoverToolCalls(undefined as never, ["ls"])).toThrow(
      /^recoverToolCalls needs the reply as a string, and was given undefined\.$/,
    );
    expect(() => recoverToolCalls(7 as never, ["ls"])).toThrow(/and was given the number 7\.$/);
    expect(() => recoverToolCalls("x", ["ls"], true as never)).toThrow(/and was given the boolean true\.$/);
  });
});

describe("R85-4: Qwen3-Coder markup written with CRLF line ends", () => {
  it("takes the CRLF framing off each value, as the LF one", () => {
    const reply =
      "<tool_call>\r\n<function=ls>\r\n<parameter=path>\r\nx\r\n</parameter>\r\n</function>\r\n</tool_call><|im_end|>";
    expect(recoverToolCalls(reply, ["ls"])).toEqual({ calls: [ls], text: "" });
    // A value's own line breaks stay.
    const two = "<function=ls>\r\n<parameter=path>\r\na\r\nb\r\n</parameter>\r\n</function>";
    expect(recoverToolCalls(two, ["ls"]).calls.map((c) => c.args)).toEqual([{ path: "a\r\nb" }]);
  });
});

// Found on the way: a pythonic list read at most 256 calls and answered those, the rest taken out
// of the text with them, never run (a JSON list of 300 runs all 300).
describe("R85-5: a pythonic list of more calls than are read stays in the text, none dropped unseen", () => {
  it("257 calls: none recovered and the reply kept; 256: all of them", () => {
    const list = (n: number) => `[${"ls(path='x'), ".repeat(n)}]`;
    const over = list(257);
    expect(recoverToolCalls(over, ["ls"])).toEqual({ calls: [], text: over });
    expect(recoverToolCalls(`<tool_call>${over}</tool_call>`, ["ls"]).calls).toEqual([]);
    expect(recoverToolCalls(list(256), ["ls"]).calls).toHaveLength(256);
  });
});
