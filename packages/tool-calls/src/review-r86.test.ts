import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { recoverToolCalls } from "./recover-tool-calls.js";
import { splitGrowth } from "./test-support/split-growth.js";

// Review r86: the four parser cases r85 named and left.

const TOOLS = ["write", "ls", "get_weather"];

/** The one call a reply should give, without its `raw` (the argument text, whose spelling varies by form). */
function only(reply: string, options?: { finishReason?: string }) {
  const { calls, text } = recoverToolCalls(reply, TOOLS, options);
  return { calls: calls.map(({ name, args }) => ({ name, args })), text };
}

/** The end-of-turn tokens a server printing special tokens leaves after a call. */
const END_TOKENS = [
  "<|im_end|>",
  "<|eot_id|>",
  "<|eom_id|>",
  "</s>",
  "<end_of_turn>",
  "<|end|>",
  "<|endoftext|>",
];

describe("R86-1: a wrapper's tag written inside a call's string argument, then an end-of-turn token", () => {
  it("gives the argument back whole and the call once, the token not left as text", () => {
    // Each lost the call (pythonic: the body was cut at the tag in its string, so the `(` never
    // closed) or ran it with its value cut at the tag (Qwen3-Coder, GLM: text "put ").
    const cases: Array<[string, string]> = [
      [
        '<tool_call>[write(text="put </tool_call> in the doc")]</tool_call><|im_end|>',
        "put </tool_call> in the doc",
      ],
      [
        '<tool_call>write(text="put </tool_call> in the doc")</tool_call><|im_end|>',
        "put </tool_call> in the doc",
      ],
      ['<tool_call>write(text="put </tool_call> in the doc")<|im_end|>', "put </tool_call> in the doc"],
      ['<tool_call>write(text="put <tool_call> in")</tool_call><|im_end|>', "put <tool_call> in"],
      [
        '<|python_tag|>write(text="put <|python_tag|> in the doc")<|eom_id|>',
        "put <|python_tag|> in the doc",
      ],
      ['<|python_tag|>write(text="put <tool_call> in the doc")<|eom_id|>', "put <tool_call> in the doc"],
      [
        "<tool_call>\n<function=write>\n<parameter=text>\nput <tool_call> in\n</parameter>\n</function>\n</tool_call><|im_end|>",
        "put <tool_call> in",
      ],
      [
        "<tool_call>write<arg_key>text</arg_key><arg_value>put <tool_call> in</arg_value></tool_call><|observation|>",
        "put <tool_call> in",
      ],
      // The call was read, but the wrapper around it was left in the text as `<minimax:tool_call></minimax:tool_call>`.
      [
        '<minimax:tool_call><invoke name="write"><parameter name="text">put </minimax:tool_call> in</parameter></invoke></minimax:tool_call><|im_end|>',
        "put </minimax:tool_call> in",
      ],
      // Already so; kept so.
      [
        '<tool_call>{"name":"write","arguments":{"text":"put </tool_call> in the doc"}}</tool_call><|im_end|>',
        "put </tool_call> in the doc",
      ],
      [
        '[TOOL_CALLS] [{"name":"write","arguments":{"text":"put [TOOL_CALLS] in"}}]</s>',
        "put [TOOL_CALLS] in",
      ],
      ['[write(text="put </tool_call> in the doc")]<|eot_id|>', "put </tool_call> in the doc"],
    ];
    for (const [reply, text] of cases) {
      expect(only(reply), reply).toEqual({ calls: [{ name: "write", args: { text } }], text: "" });
    }
  });

  it("property: any string holding wrapper tags and end-of-turn tokens round-trips through a call, in every form", () => {
    const tags = [
      "</tool_call>",
      "<tool_call>",
      "<|python_tag|>",
      "[TOOL_CALLS]",
      "<minimax:tool_call>",
      "</minimax:tool_call>",
    ];
    const piece = fc.constantFrom(...tags, ...END_TOKENS, "a", " ", "\n", "x y");
    // Letters at both ends: a markup value's edge blank space is the markup's, and a bare number would be typed.
    const value = fc.array(piece, { minLength: 1, maxLength: 6 }).map((parts) => `a${parts.join("")}z`);
    const forms: Record<string, (text: string) => string> = {
      hermes: (t) => `<tool_call>{"name": "write", "arguments": {"text": ${JSON.stringify(t)}}}</tool_call>`,
      "hermes, no closing tag": (t) =>
        `<tool_call>{"name": "write", "arguments": {"text": ${JSON.stringify(t)}}}`,
      "pythonic in a tag": (t) => `<tool_call>[write(text=${JSON.stringify(t)})]</tool_call>`,
      "bare pythonic in a tag": (t) => `<tool_call>write(text=${JSON.stringify(t)})`,
      python_tag: (t) => `<|python_tag|>write(text=${JSON.stringify(t)})`,
      pythonic: (t) => `[write(text=${JSON.stringify(t)})]`,
      Mistral: (t) => `[TOOL_CALLS] [{"name": "write", "arguments": {"text": ${JSON.stringify(t)}}}]`,
      "Qwen3-Coder": (t) =>
        `<tool_call>\n<function=write>\n<parameter=text>\n${t}\n</parameter>\n</function>\n</tool_call>`,
      GLM: (t) => `<tool_call>write<arg_key>text</arg_key><arg_value>${t}</arg_value></tool_call>`,
      MiniMax: (t) =>
        `<minimax:tool_call><invoke name="write"><parameter name="text">${t}</parameter></invoke></minimax:tool_call>`,
    };
    fc.assert(
      fc.property(
        value,
        fc.constantFrom(...Object.keys(forms)),
        fc.constantFrom("", ...END_TOKENS),
        (text, form, end) => {
          const reply = `${(forms[form] as (t: string) => string)(text)}${end}`;
          expect(only(reply), reply).toEqual({ calls: [{ name: "write", args: { text } }], text: "" });
        },
      ),
      propertyRuns(800),
    );
  });
});

describe("R86-2: GLM with no </tool_call>, then a scratchpad or prose", () => {
  const call = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>";
  const paris = { name: "get_weather", args: { city: "Paris" } };

  it("recovers the call and keeps what follows it as text", () => {
    // The call was lost: its last value was read as running to the end (`Paris</arg_value>\n<think>…`),
    // a value holding its own closer, which is refused.
    for (const [after, text] of [
      ["\n<think>done</think>", "<think>done</think>"],
      ["\n<think>still thinking", "<think>still thinking"],
      ["\n<think>done</think><|observation|>", "<think>done</think>"],
      ["\nI will now check.", "I will now check."],
      ["\n\nThe weather will follow.", "The weather will follow."],
    ] as const) {
      expect(only(call + after), after).toEqual({ calls: [paris], text });
    }
    // Two such calls, prose between and after them.
    const rome = call.replace("Paris", "Rome");
    expect(only(`${call}\nAnd Rome:\n${rome}\nDone.`)).toEqual({
      calls: [paris, { ...paris, args: { city: "Rome" } }],
      // The blank lines that met where the second call was close up to one.
      text: "And Rome:\n\nDone.",
    });
  });

  it("does not run it from a reply cut at the token ceiling, nor where two closers leave the value's end untold", () => {
    // Cut at the ceiling, the text after `</arg_value>` may as well be the value's own.
    expect(only(`${call}\nI will now ch`, { finishReason: "length" }).calls).toEqual([]);
    const twice = "<tool_call>write<arg_key>text</arg_key><arg_value>a</arg_value> b </arg_value> c";
    expect(only(twice)).toEqual({ calls: [], text: twice });
  });

  it("property: any prose or scratchpad after the call is the reply's text", () => {
    // (A lone `</think>` is left out: the first one, before any `<think>`, ends the scratchpad the
    // template opened, and the call before it is reasoning, as documented.)
    const word = fc.constantFrom(
      "The",
      "weather",
      "is",
      "<think>done</think>",
      "<reasoning>x</reasoning>",
      ".",
      "\n",
      " ",
      "<|observation|>",
    );
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 8 }), (words) => {
        // r87: GLM's `<|observation|>` opens the tool's answer: with text after it, the reply ends there.
        const cut = words.findIndex(
          (w, i) => w === "<|observation|>" && words.slice(i + 1).some((v) => v.trim() !== "" && v !== w),
        );
        const after = `\n${(cut < 0 ? words : words.slice(0, cut)).join(" ")}`;
        const shown = after.replace(/(?:\s*<\|observation\|>)+\s*$/, "").trim();
        fc.pre(cut >= 0 || shown !== "");
        expect(only(call + after), after).toEqual({ calls: [paris], text: shown });
      }),
      propertyRuns(400),
    );
  });
});

describe("R86-3: a reply running past its end-of-turn token into a turn it invents", () => {
  const call = '<tool_call>{"name": "ls", "arguments": {"path": "x"}}</tool_call>';
  const ls = { name: "ls", args: { path: "x" } };
  /** An end-of-turn token and the header of the next turn, per template family. */
  const BREAKS = [
    "<|eot_id|>\n<|start_header_id|>assistant<|end_header_id|>\n\n",
    "<|eom_id|><|start_header_id|>ipython<|end_header_id|>\n\n",
    "<|im_end|>\n<|im_start|>assistant\n",
    "<|im_end|>\n<|im_start|>user\nthanks<|im_end|>\n<|im_start|>assistant\n",
    "<end_of_turn>\n<start_of_turn>model\n",
    "<|end|>\n<|assistant|>\n",
    "</s>[INST] ok [/INST]",
    "<｜end▁of▁sentence｜><｜Assistant｜>",
    "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
    // Harmony: after a message with no header of its own, after <|return|>, and another role's message.
    "<|end|><|start|>assistant",
    "<|return|><|start|>assistant<|channel|>final<|message|>",
    "<|call|><|start|>functions.ls to=assistant<|channel|>commentary<|message|>{}<|end|><|start|>assistant",
  ];

  it("runs no call written after the token, and cuts the text there, in every family", () => {
    // The invented turn's call ran, and its header stayed in the text (`Sure.<|eot_id|>\n<|start_header_id|>…`).
    for (const gap of BREAKS) {
      expect(only(`Sure.${gap}${call}`), gap).toEqual({ calls: [], text: "Sure." });
      expect(only(`Sure.${gap}[ls(path="x")]<|eot_id|>`), gap).toEqual({ calls: [], text: "Sure." });
      // A call before the token is this reply's: run once; the one after it not.
      const second = call.replace('"x"', '"y"');
      expect(only(`${call}${gap}${second}`), gap).toEqual({ calls: [ls], text: "" });
    }
    const harmonyCall =
      '<|channel|>commentary to=functions.ls <|constrain|>json<|message|>{"path": "x"}<|call|>';
    expect(only(`Sure.<|end|><|start|>assistant${harmonyCall}`)).toEqual({ calls: [], text: "Sure." });
  });

  it("keeps gpt-oss's messages of one turn, and a break written in a call's string is the string's", () => {
    const harmonyCall =
      '<|start|>assistant<|channel|>commentary to=functions.ls <|constrain|>json<|message|>{"path": "x"}<|call|>';
    // <|end|> ends the analysis message, not the turn: the call after it is the turn's.
    expect(only(`<|channel|>analysis<|message|>plan<|end|>${harmonyCall}`).calls).toEqual([ls]);
    // A commentary preamble, then the call.
    expect(only(`<|channel|>commentary<|message|>Looking.<|end|>${harmonyCall}`).calls).toEqual([ls]);
    const template = "a<|im_end|>\n<|im_start|>user\nb";
    const reply = `<tool_call>{"name": "write", "arguments": {"text": ${JSON.stringify(template)}}}</tool_call><|im_end|>`;
    expect(only(reply)).toEqual({ calls: [{ name: "write", args: { text: template } }], text: "" });
    const explained = "ChatML:\n```\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n```\nThat is all.";
    expect(only(explained)).toEqual({ calls: [], text: explained });
    expect(only("Write `<|im_end|><|im_start|>` between turns.")).toEqual({
      calls: [],
      text: "Write `<|im_end|><|im_start|>` between turns.",
    });
  });

  it("property: whatever the reply before the break and the calls after it, none after it runs", () => {
    const before = fc.constantFrom("", "Sure.", call, `I will look.\n${call}`, "<think>plan</think>Sure.");
    const after = fc.constantFrom(
      call,
      '[ls(path="y")]',
      '{"name": "ls", "arguments": {}}',
      `Next.\n${call}`,
    );
    fc.assert(
      fc.property(before, fc.constantFrom(...BREAKS), after, (head, gap, tail) => {
        const reply = `${head}${gap}${tail}`;
        const alone = only(head);
        const { calls, text } = only(reply);
        expect(calls, reply).toEqual(alone.calls);
        expect(text, reply).toBe(alone.text.replace(/<\|eot_id\|>$/, "").trim());
      }),
      propertyRuns(400),
    );
  });
});

describe("R86-4: gpt-oss answering on its final channel with no analysis before it", () => {
  it("gives the answer with no markup, and a commentary call before it too", () => {
    // The header and <|return|> were left in the text.
    for (const reply of [
      "<|channel|>final<|message|>The answer.",
      "<|start|>assistant<|channel|>final<|message|>The answer.<|return|>",
      "\n<|channel|>final <|message|>The answer.<|return|>",
    ]) {
      expect(only(reply), reply).toEqual({ calls: [], text: "The answer." });
    }
    for (const reply of [
      '<|start|>assistant<|channel|>commentary to=functions.ls <|constrain|>json<|message|>{"path": "x"}<|call|><|start|>assistant<|channel|>final<|message|>The answer.<|return|>',
      '<|channel|>commentary to=functions.ls json<|message|>{"path": "x"}<|end|><|channel|>final<|message|>The answer.<|return|>',
    ]) {
      expect(only(reply), reply).toEqual({
        calls: [{ name: "ls", args: { path: "x" } }],
        text: "The answer.",
      });
    }
    // A call written as the final answer is read as the whole reply.
    expect(only('<|channel|>final<|message|>[ls(path="x")]<|return|>')).toEqual({
      calls: [{ name: "ls", args: { path: "x" } }],
      text: "",
    });
  });
});

describe("R86: still linear", () => {
  it("one reading of eight times the junk costs about what eight readings of it cost", async () => {
    // splitGrowth: linear ~1, quadratic ~8. The markup readers, slower per character, read 4 KB.
    const units: Array<[string, number]> = [
      ["a<|im_end|><|im_start|>", 32_000],
      ["<|end|><|start|>assistant x", 32_000],
      ['<tool_call>write(text="</tool_call>', 64_000],
      ["<tool_call>w<arg_key>k</arg_key><arg_value>v<tool_call>", 4_000],
      ["<tool_call>\n<function=w>\n<parameter=k>\nv <tool_call>", 4_000],
      ["<tool_call>g<arg_key>k</arg_key><arg_value>v</arg_value> x ", 4_000],
      ["<|channel|>final<|message|>", 32_000],
    ];
    for (const [unit, bytes] of units) {
      const ratio = await splitGrowth(
        (reply) => recoverToolCalls(reply, TOOLS),
        (n) => unit.repeat(n),
        bytes,
      );
      expect(ratio, unit).toBeLessThan(4);
    }
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});
