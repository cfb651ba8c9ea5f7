import { describe, expect, it } from "vitest";
import { recoverToolCalls } from "./recover-tool-calls.js";

// Review r88: markup left in the text around calls that were recovered.

const ls = { id: "call_recovered_0", name: "ls", args: { path: "x" }, raw: '{"path": "x"}' };

describe("R88-1: a section opener with any amount of blank space before its first call is markup, not text", () => {
  // Kimi K2 and DeepSeek open their calls with a section token; only 64 characters before the
  // call were looked at, so with more blank space between them the opener stayed in `text`.
  const kimi = (gap: string) =>
    `Checking.<|tool_calls_section_begin|>${gap}<|tool_call_begin|>functions.ls:0<|tool_call_argument_begin|>{"path": "x"}<|tool_call_end|><|tool_calls_section_end|>`;
  const deepseek = (gap: string) =>
    `Checking.<｜tool▁calls▁begin｜>${gap}<｜tool▁call▁begin｜>function<｜tool▁sep｜>ls\n\`\`\`json\n{"path": "x"}\n\`\`\`<｜tool▁call▁end｜><｜tool▁calls▁end｜>`;

  for (const [family, reply] of [
    ["Kimi", kimi],
    ["DeepSeek", deepseek],
  ] as const) {
    it(`${family}: one newline, forty blank lines, seventy spaces`, () => {
      for (const gap of ["", "\n", "\n".repeat(40), " ".repeat(70), "\r\n\t".repeat(30)]) {
        expect(recoverToolCalls(reply(gap), ["ls"]), JSON.stringify(gap)).toEqual({
          calls: [ls],
          text: "Checking.",
        });
      }
    });
  }

  it("an opener with words between it and the call is left as the model wrote it", () => {
    // Only blank space joins an opener to its call: text between them is the model's.
    const reply =
      'Checking.<|tool_calls_section_begin|> then <|tool_call_begin|>functions.ls:0<|tool_call_argument_begin|>{"path": "x"}<|tool_call_end|>';
    const { calls, text } = recoverToolCalls(reply, ["ls"]);
    expect(calls).toEqual([ls]);
    expect(text).toBe("Checking.<|tool_calls_section_begin|> then");
  });
});
