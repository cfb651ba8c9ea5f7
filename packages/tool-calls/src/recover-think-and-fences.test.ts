import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { recoverToolCalls } from "./index.js";

// A call written as text reaches its tool with exactly the arguments written — scratchpad markers
// and backticks inside its strings included — or not at all; markup quoted in a fenced code block
// is an example, never a call.

const tools = ["write_file", "delete_file", "get_weather"];

const hermes = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

describe("a </think> or <think> inside a call's string argument", () => {
  const template = "{%- if enable_thinking %}<think>\n{%- else %}<think>\n\n</think>\n\n{%- endif %}";

  it("is that argument's text: the call is recovered with the arguments written", () => {
    const args = { path: "template.jinja", content: template };
    const out = recoverToolCalls(hermes("write_file", args), tools);
    expect(out.calls.map((c) => [c.name, c.args])).toEqual([["write_file", args]]);
    expect(JSON.parse(out.calls[0]?.raw ?? "")).toEqual(args);
    expect(out.text).toBe("");
  });

  it("holds for a lone </think>, in every way a call is written", () => {
    const args = { path: "notes.md", content: "Qwen3 ends its reasoning with </think> and then answers." };
    const forms = [
      hermes("write_file", args),
      JSON.stringify({ name: "write_file", arguments: args }),
      `<tool_call>\n<function=write_file>\n<parameter=path>\nnotes.md\n</parameter>\n<parameter=content>\n${args.content}\n</parameter>\n</function>\n</tool_call>`,
      `[TOOL_CALLS] [${JSON.stringify({ name: "write_file", arguments: args })}]`,
    ];
    for (const form of forms) {
      const out = recoverToolCalls(form, tools);
      expect(
        out.calls.map((c) => c.args),
        form,
      ).toEqual([args]);
      expect(out.text, form).toBe("");
    }
  });

  it("does not end a scratchpad before it: the reply is cut at the last </think> outside every call", () => {
    const args = { path: "a.md", content: "a </think> b" };
    const reply = `<think>The user wants a file.</think>\n${hermes("write_file", args)}`;
    const out = recoverToolCalls(reply, tools);
    expect(out.calls.map((c) => c.args)).toEqual([args]);
    expect(out.text).toBe("<think>The user wants a file.</think>");
  });

  it("still leaves a call written inside the scratchpad as the scratchpad's text", () => {
    const inside = `<think>Maybe ${hermes("delete_file", { path: "x </think> y" })} — no.</think>Nothing to do.`;
    expect(recoverToolCalls(inside, tools)).toEqual({ calls: [], text: inside });
    const plain = `<think>maybe ${hermes("delete_file", { path: "a" })}</think>Done.`;
    expect(recoverToolCalls(plain, tools)).toEqual({ calls: [], text: plain });
  });

  it("a call sketched in the scratchpad with brackets that never close is not run on the answer's text", () => {
    for (const reply of [
      '<think>Maybe <tool_call>{"name": "delete_file", "arguments": {"path": "a"</think>Answer.',
      'Plan: <tool_call>{"name": "delete_file", "arguments": {"path": "a"</think>Answer.',
      '<think>Maybe [TOOL_CALLS] [{"name": "delete_file", "arguments": {"path": "a"}</think>Answer.',
      "<think>Maybe <tool_call>\n<function=delete_file>\n<parameter=path>\na\n</think>Answer.",
    ]) {
      expect(recoverToolCalls(reply, tools), reply).toEqual({ calls: [], text: reply });
    }
  });

  it("nothing written before the scratchpad's one </think> is recovered, whatever it holds", () => {
    const piece = fc.constantFrom(
      "<tool_call>",
      "</tool_call>",
      '{"name": "delete_file", "arguments": {',
      '"path": "a',
      '"',
      "}",
      "]",
      "[TOOL_CALLS] [",
      "<function=delete_file>",
      "<parameter=path>",
      "</parameter>",
      "</function>",
      '<invoke name="delete_file">',
      '<parameter name="path">',
      "```",
      "<think>",
      " x ",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 10 }), (parts) => {
        const reply = `<think>${parts.join("")}</think>Done.`;
        expect(recoverToolCalls(reply, tools).calls).toEqual([]);
      }),
      propertyRuns(500),
    );
  });

  it("any text of markers, fences and backticks in the arguments comes back exactly, or no call at all", () => {
    const piece = fc.oneof(
      fc.constantFrom(
        "<think>",
        "</think>",
        "```",
        "```xml\n",
        "```json\n",
        "`",
        "\n",
        " ",
        "<tool_call>",
        "</tool_call>",
      ),
      fc.string({ maxLength: 6 }),
    );
    const value = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(""));
    const lead = fc.constantFrom(
      "",
      "<think>plan</think>\n",
      "I will write it.\n",
      "<think>a</think><think>b</think>",
    );
    fc.assert(
      fc.property(lead, value, value, (before, path, content) => {
        const args = { path, content };
        const out = recoverToolCalls(`${before}${hermes("write_file", args)}`, tools);
        for (const call of out.calls) {
          expect(call.name).toBe("write_file");
          expect(call.args).toEqual(args);
          expect(JSON.parse(call.raw ?? "")).toEqual(args);
        }
        // A call written after the scratchpad and after plain prose is always found.
        expect(out.calls).toHaveLength(1);
      }),
      propertyRuns(400),
    );
  });

  it("holds for Qwen3-Coder's parameter text: the value written, or no call", () => {
    const piece = fc.oneof(
      fc.constantFrom("<think>", "</think>", "```", "```xml\n", "`", "\n", " "),
      fc.string({ maxLength: 6 }).filter((s) => !s.includes("<")),
    );
    const value = fc.array(piece, { maxLength: 8 }).map((parts) => `x${parts.join("")}x`);
    const lead = fc.constantFrom("", "<think>plan</think>\n", "Writing it.\n");
    fc.assert(
      fc.property(lead, value, (before, content) => {
        const reply = `${before}<tool_call>\n<function=write_file>\n<parameter=path>\na.md\n</parameter>\n<parameter=content>\n${content}\n</parameter>\n</function>\n</tool_call>`;
        const out = recoverToolCalls(reply, ["write_file"]);
        for (const call of out.calls) expect(call.args).toEqual({ path: "a.md", content });
      }),
      propertyRuns(300),
    );
  });
});

describe("markup quoted in a fenced code block", () => {
  const call = hermes("delete_file", { path: "src/index.ts" });

  it("is an example, whatever the fence's info string, with prose around it", () => {
    for (const info of ["xml", "", "text", "json", "html"]) {
      const reply = `To delete a file, a Hermes-style model writes:\n\`\`\`${info}\n${call}\n\`\`\`\nThat is only an example; I did not call it.`;
      expect(recoverToolCalls(reply, tools), info).toEqual({ calls: [], text: reply });
    }
    const before = `A call looks like this:\n\`\`\`xml\n${call}\n\`\`\``;
    expect(recoverToolCalls(before, tools)).toEqual({ calls: [], text: before });
  });

  it("is an example when a fenced JSON call is followed by more prose", () => {
    const reply =
      'A call looks like:\n```json\n{"name": "delete_file", "arguments": {"path": "/tmp/x"}}\n```\nThat is the format.';
    expect(recoverToolCalls(reply, tools)).toEqual({ calls: [], text: reply });
  });

  it("keeps the documented exceptions: a reply that is one fence, a fenced call it ends with, ```tool_code", () => {
    expect(recoverToolCalls(`\`\`\`xml\n${call}\n\`\`\``, tools).calls).toHaveLength(1);
    const announced = recoverToolCalls(
      'I will call it:\n```json\n{"name": "delete_file", "arguments": {"path": "a"}}\n```',
      tools,
    );
    expect(announced.calls.map((c) => c.args)).toEqual([{ path: "a" }]);
    expect(announced.text).toBe("I will call it:");
    const gemma = recoverToolCalls('```tool_code\nget_weather(city="Oslo")\n```\nLet me check.', tools);
    expect(gemma.calls.map((c) => c.args)).toEqual([{ city: "Oslo" }]);
  });

  it("is not opened by backticks inside a call's own argument", () => {
    const first = { path: "README.md", content: "Run:\n```sh\npnpm build\n" };
    const second = { path: "b.md", content: "x" };
    const reply = `${hermes("write_file", first)}\n${hermes("write_file", second)}`;
    expect(recoverToolCalls(reply, tools).calls.map((c) => c.args)).toEqual([first, second]);
    const inline = { path: "c.md", content: "a ` b" };
    const both = `${hermes("write_file", inline)} ${hermes("write_file", second)}`;
    expect(recoverToolCalls(both, tools).calls.map((c) => c.args)).toEqual([inline, second]);
  });
});

describe("a Qwen3-Coder call whose </tool_call> is missing", () => {
  const reply = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n";

  it("comes out with its opener whatever the finish reason, as a Hermes call without its closing tag does", () => {
    for (const finishReason of ["stop", "length"]) {
      const out = recoverToolCalls(reply, tools, { finishReason });
      expect(
        out.calls.map((c) => c.args),
        finishReason,
      ).toEqual([{ city: "Oslo" }]);
      expect(out.text, finishReason).toBe("");
    }
  });

  it("stays in the text when cut inside the call, at the token ceiling", () => {
    const cut = "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n";
    expect(recoverToolCalls(cut, tools, { finishReason: "length" })).toEqual({ calls: [], text: cut });
  });
});
