import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { recoverToolCalls } from "./recover-tool-calls.js";
import { splitGrowth } from "./test-support/split-growth.js";

// Review r87: two gaps r86 left in where a reply ends and what of it a user sees.

const TOOLS = ["ls", "get_weather"];

/** The calls a reply gives, without `id` and `raw`, and its text. */
function read(reply: string, options?: { finishReason?: string }) {
  const { calls, text } = recoverToolCalls(reply, TOOLS, options);
  return { calls: calls.map(({ name, args }) => ({ name, args })), text };
}

const weather = { name: "get_weather", args: { city: "Paris" } };
const ls = { name: "ls", args: { path: "x" } };
const call = '<tool_call>{"name": "ls", "arguments": {"path": "x"}}</tool_call>';

describe("R87-1: a gpt-oss preamble on the commentary channel before its call", () => {
  const harmonyCall =
    '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>';
  const preamble = "<|start|>assistant<|channel|>commentary<|message|>Let me check that.<|end|>";

  it("shows the preamble's words, not its Harmony header and end token, and runs the call", () => {
    // The user saw `<|channel|>commentary<|message|>Let me check that.` as the reply's text.
    expect(read(`<|channel|>commentary<|message|>Let me check that.<|end|>${harmonyCall}`)).toEqual({
      calls: [weather],
      text: "Let me check that.",
    });
    // After the analysis: the analysis is reasoning, kept as written (as `<think>…</think>` is, and
    // as it is before a call with no preamble); the preamble's markup goes.
    const analysis = "<|channel|>analysis<|message|>Need weather.<|end|>";
    expect(read(`${analysis}${preamble}${harmonyCall}`)).toEqual({
      calls: [weather],
      text: `${analysis}Let me check that.`,
    });
    expect(read(`${analysis}${harmonyCall}`).text).toBe(analysis);
    // A preamble before each of two calls.
    const second = harmonyCall.replace("Paris", "Oslo");
    expect(read(`${preamble}${harmonyCall}\n${preamble.replace("that", "Oslo")}${second}`)).toEqual({
      calls: [weather, { name: "get_weather", args: { city: "Oslo" } }],
      text: "Let me check that.\nLet me check Oslo.",
    });
  });

  it("reads the form with its tokens stripped the same way", () => {
    const stripped = 'assistantcommentary to=functions.get_weather json{"city":"Paris"}';
    expect(read(`commentaryLet me check that.${stripped}`)).toEqual({
      calls: [weather],
      text: "Let me check that.",
    });
    expect(read(`analysisNeed weather.assistantcommentaryLet me check that.${stripped}`)).toEqual({
      calls: [weather],
      text: "analysisNeed weather.Let me check that.",
    });
  });

  it("leaves the text as written where no call follows the preamble", () => {
    for (const reply of [
      // Nothing recovered: the text as it was.
      "<|channel|>commentary<|message|>Let me check that.<|end|>",
      `${preamble}${harmonyCall.replace("get_weather", "rm")}`,
      // Cut at the token ceiling inside the call: not run, nothing taken out.
      `${preamble}${harmonyCall.slice(0, -"}<|call|>".length)}`,
    ]) {
      expect(read(reply, { finishReason: "length" }), reply).toEqual({ calls: [], text: reply });
    }
    // A preamble before a call in another form is not Harmony's: only the call is taken out.
    expect(read(`commentary${call}`)).toEqual({ calls: [ls], text: "commentary" });
  });
});

describe("R87-2: text after an end-of-turn token with no turn header after it", () => {
  /** End-of-turn tokens that end the turn: the server should have stopped there. */
  const TURN_ENDS = [
    "<|eot_id|>",
    "<|eot|>",
    "<|im_end|>",
    "<end_of_turn>",
    "<eos>",
    "<|end|>",
    "</s>",
    "<｜end▁of▁sentence｜>",
    "<|end_of_sentence|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|return|>",
    "<|observation|>",
  ];

  it("in every family, a call after a bare end token is past the turn: none runs, the text stops at the token", () => {
    // Each ran the call: `Sure.<|eot_id|><tool_call>…` gave ls and the text `Sure.`.
    for (const token of TURN_ENDS) {
      for (const after of [
        call,
        `\n${call}`,
        '[ls(path="x")]',
        `More.\n${call}`,
        'functools[{"name": "ls"}]',
      ]) {
        expect(read(`Sure.${token}${after}`), token + after).toEqual({ calls: [], text: "Sure." });
      }
      // A call before the token is this turn's: it runs, the one after does not.
      expect(read(`${call}${token}${call.replace('"x"', '"y"')}`), token).toEqual({ calls: [ls], text: "" });
      // Only blank space and end tokens after it: the reply's own end, as before.
      expect(read(`${call}${token}\n`), token).toEqual({ calls: [ls], text: "" });
    }
  });

  it("keeps reading after tokens that end a message, not the turn", () => {
    // Llama 3.1's `<|eom_id|>` (Llama 4's `<|eom|>`) ends a `<|python_tag|>` call's message, the
    // tool's answer to come; gpt-oss's `<|call|>` ends a call's message, and its `<|end|>` a message
    // with its Harmony header. Pinned: each keeps the calls after it running, as before.
    expect(read(`<|python_tag|>ls(path="x")<|eom_id|>${call}`).calls).toEqual([ls, ls]);
    expect(read(`<|python_tag|>ls(path="x")<|eom|>${call}`).calls).toEqual([ls, ls]);
    const harmony = '<|channel|>commentary to=functions.ls <|constrain|>json<|message|>{"path": "x"}';
    expect(read(`${harmony}<|call|>${call}`).calls).toEqual([ls, ls]);
    expect(read(`<|channel|>analysis<|message|>plan<|end|>${call}`)).toEqual({
      calls: [ls],
      text: "<|channel|>analysis<|message|>plan<|end|>",
    });
    // `</s>` after an `<s>` is HTML strikethrough, not Mistral's end of sequence.
    expect(read(`The price is <s>10</s> 8. ${call}`)).toEqual({
      calls: [ls],
      text: "The price is <s>10</s> 8.",
    });
  });

  it("reads a token in reasoning, a call's string, a code block or inline code as text", () => {
    const cases: Array<[string, ReturnType<typeof read>]> = [
      [
        `<think>Llama ends with <|eot_id|> and then</think>${call}`,
        { calls: [ls], text: "<think>Llama ends with <|eot_id|> and then</think>" },
      ],
      [
        `Qwen ends with <|im_end|> here</think>${call}`,
        { calls: [ls], text: "Qwen ends with <|im_end|> here</think>" },
      ],
      [
        '<tool_call>{"name": "ls", "arguments": {"path": "a<|eot_id|>b"}}</tool_call>',
        { calls: [{ name: "ls", args: { path: "a<|eot_id|>b" } }], text: "" },
      ],
      [
        `Write \`<|im_end|>\` after a turn.\n${call}`,
        { calls: [ls], text: "Write `<|im_end|>` after a turn." },
      ],
      [
        `Gemma:\n\`\`\`\nhi<end_of_turn>\nbye\n\`\`\`\n${call}`,
        { calls: [ls], text: "Gemma:\n```\nhi<end_of_turn>\nbye\n```" },
      ],
    ];
    for (const [reply, expected] of cases) expect(read(reply), reply).toEqual(expected);
  });

  it("property: whatever comes after the token, nothing after it runs and the text is the part before", () => {
    const before = fc.constantFrom("", "Sure.", call, `I will look.\n${call}`, "<think>plan</think>Sure.");
    const after = fc.constantFrom(
      call,
      '[ls(path="y")]',
      '{"name": "ls", "arguments": {}}',
      `Next.\n${call}`,
      "Bye.",
    );
    fc.assert(
      fc.property(
        before,
        fc.constantFrom(...TURN_ENDS),
        fc.constantFrom("", "\n", " "),
        after,
        (head, token, gap, tail) => {
          const alone = read(head);
          const reply = `${head}${token}${gap}${tail}`;
          expect(read(reply), reply).toEqual({ calls: alone.calls, text: alone.text.trim() });
        },
      ),
      propertyRuns(400),
    );
  });

  it("stays linear in the number of tokens", async () => {
    // Each token has text after it, so each is looked at; the first ends the reply.
    for (const unit of ["a<|im_end|>b ", "x<s>y</s>z ", "<|python_tag|>ls()<|eom_id|> "]) {
      // One reading of eight times the text against eight readings of it: linear ~1, quadratic ~8.
      const ratio = await splitGrowth(
        (reply) => recoverToolCalls(reply, TOOLS),
        (n) => unit.repeat(n),
      );
      expect(ratio, unit).toBeLessThan(4);
    }
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});
