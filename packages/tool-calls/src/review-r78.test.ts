import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
// The stream's fence table, read from its source: tool-calls does not depend on stream (not even
// as a devDependency), and this test is what keeps the two tables from drifting apart.
import { ALL_FENCES, DEFAULT_FENCES, stripThinking } from "../../stream/src/fences.js";
import { recoverToolCalls, SCRATCHPADS } from "./recover-tool-calls.js";

// R78B-1: recoverToolCalls' scratchpad table was copied by hand from the stream's default fences,
// and `<thinking>…</thinking>` / `<reasoning>…</reasoning>` (in ALL_FENCES, which side tasks and any
// host passing `fences: ALL_FENCES` read as reasoning) were missing: `<thinking>I could
// <tool_call>{"name": "rm", …}</tool_call></thinking>` had its call recovered and run.
describe("R78B-1: no call is recovered from any scratchpad the stream can read as reasoning", () => {
  const tools = ["get_weather", "write_file"];
  const call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>';

  it("has exactly the stream's fences, default ones included (a test that fails when they drift)", () => {
    const stream = ALL_FENCES.map((f) => ({
      open: f.open,
      close: f.close,
      ...(f.implicitOpen ? { implicitOpen: true } : {}),
      ...(f.resume ? { resume: f.resume } : {}),
      // Outside the default fences: a tag a model may be quoting (r83b).
      ...(DEFAULT_FENCES.some((d) => d.open === f.open) ? {} : { quotable: true }),
    }));
    expect(SCRATCHPADS).toEqual(stream);
    for (const fence of DEFAULT_FENCES) expect(SCRATCHPADS.map((p) => p.open)).toContain(fence.open);
  });

  for (const [label, reply] of [
    ["<thinking> closed", `Let me see.<thinking>I could ${call}</thinking>\nNo call needed.`],
    ["<thinking> never closed", `Answer.<thinking>I could ${call}`],
    ["<reasoning> closed", `<reasoning>maybe ${call}</reasoning> Done.`],
    ["<reasoning> never closed", `Done. <reasoning>maybe ${call}`],
  ] as const) {
    it(`leaves the call in ${label} as text`, () => {
      const read = recoverToolCalls(reply, tools);
      expect(read.calls).toEqual([]);
      expect(read.text).toBe(reply);
      // The stream with ALL_FENCES takes that very call out of the answer.
      expect(stripThinking(reply, { fences: ALL_FENCES }).content).not.toContain("<tool_call>");
    });
  }

  it("still recovers a call after </thinking>, and one whose argument holds <reasoning>", () => {
    const after = recoverToolCalls(`<thinking>plan</thinking>\n${call}`, tools);
    expect(after.calls.map((c) => c.args)).toEqual([{ city: "Oslo" }]);
    expect(after.text).toBe("<thinking>plan</thinking>");
    const write =
      '<tool_call>{"name": "write_file", "arguments": {"path": "t.md", "content": "<reasoning>"}}</tool_call>';
    const both = recoverToolCalls(`${write}\n${call}`, tools);
    expect(both.calls.map((c) => c.args)).toEqual([
      { path: "t.md", content: "<reasoning>" },
      { city: "Oslo" },
    ]);
  });

  it("property: a call inside any scratchpad, closed or not, is never recovered; one before it is, as documented", () => {
    const piece = fc.constantFrom(call, " ", "\n", "text", "`", "</tool_call>", "<tool_call>", "{");
    fc.assert(
      fc.property(
        fc.constantFrom(...SCRATCHPADS),
        fc.array(piece, { maxLength: 5 }),
        fc.boolean(),
        fc.boolean(),
        (pad, parts, before, closed) => {
          const lead = before ? `${call}\n` : "";
          const inside = `${parts.join("")}${call}`;
          const reply = `${lead}${pad.open}${inside}${closed ? `${pad.close}\nDone.` : ""}`;
          const read = recoverToolCalls(reply, tools);
          // A call before the opener is answer, a `<think>` closed after it too (r83b: only a
          // `</think>` ahead of every `<think>` ends a scratchpad the template opened).
          expect(read.calls.length).toBe(before ? 1 : 0);
        },
      ),
      propertyRuns(400),
    );
  });
});

// R78B-3: the README says markup quoted in a fenced code block with prose around it is an example,
// not a call; a fence written with tildes (`~~~`, `~~~xml`, CommonMark's other fence) was not read
// as one, so `Example:\n~~~\n<tool_call>{"name": "rm", …}</tool_call>\n~~~\nThat is how.` had its
// example recovered and run where the same text in a backtick fence stays.
describe("R78B-3: markup in a ~~~ fence with prose around it is an example, as in a ``` fence", () => {
  const tools = ["rm"];
  const call = '<tool_call>\n{"name": "rm", "arguments": {"path": "/"}}\n</tool_call>';

  for (const fence of ["~~~", "~~~xml", "~~~~ text", "  ~~~"]) {
    it(`leaves the call in ${JSON.stringify(fence)} … with prose around it`, () => {
      const reply = `Example:\n${fence}\n${call}\n${fence.trim().replace(/[^~].*$/, "")}\nThat is how.`;
      const read = recoverToolCalls(reply, tools);
      expect(read.calls).toEqual([]);
      expect(read.text).toBe(reply);
    });
  }

  it("recovers a call after a closed ~~~ fence, one in a reply that is only that fence, and one after ~~~ quoted in backticks", () => {
    expect(recoverToolCalls(`Like this:\n~~~\nexample\n~~~\n${call}`, tools).calls).toHaveLength(1);
    expect(recoverToolCalls(`~~~\n${call}\n~~~`, tools).calls).toHaveLength(1);
    expect(recoverToolCalls(`\`\`\`\n~~~\n\`\`\`\n${call}`, tools).calls).toHaveLength(1);
    expect(recoverToolCalls(`Write \`~~~\` to fence code.\n${call}`, tools).calls).toHaveLength(1);
    // A shorter tilde line does not close a longer fence.
    const read = recoverToolCalls(`Note:\n~~~~\n~~~\n${call}\n~~~~\nNow: ${call}`, tools);
    expect(read.calls).toHaveLength(1);
    expect(read.text).toBe(`Note:\n~~~~\n~~~\n${call}\n~~~~\nNow:`);
  });

  it("recovers a JSON call a reply ends with in a ~~~json fence, as in a ```json one", () => {
    const json = '{"name": "rm", "arguments": {"path": "/"}}';
    for (const reply of [`I will call it:\n~~~json\n${json}\n~~~`, `~~~\n${json}\n~~~\n`]) {
      const read = recoverToolCalls(reply, tools);
      expect(read.calls.map((c) => c.args)).toEqual([{ path: "/" }]);
      expect(read.text).toBe(reply.startsWith("I") ? "I will call it:" : "");
    }
    const example = `Example:\n~~~json\n${json}\n~~~\nThat is the format.`;
    expect(recoverToolCalls(example, tools)).toEqual({ calls: [], text: example });
  });

  it("property: a reply of prose, fence lines and calls recovers the same calls with ~~~ as with ```", () => {
    const json = '{"name": "rm", "arguments": {"path": "/"}}';
    const piece = fc.constantFrom("Some prose.\n", "FENCE\n", "FENCE\n", `${call}\n`, `${json}\n`, "\n");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (parts) => {
        const reply = parts.join("");
        const ticks = recoverToolCalls(reply.replaceAll("FENCE", "```"), tools);
        const tildes = recoverToolCalls(reply.replaceAll("FENCE", "~~~"), tools);
        expect(tildes.calls).toEqual(ticks.calls);
        expect(tildes.text).toBe(ticks.text.replaceAll("```", "~~~"));
      }),
      propertyRuns(500),
    );
  });
});

// R78B-2: Qwen3-Coder markup has no escapes, and a `<function=` written in a parameter's value (a
// file about the format: `Use <function=name> to call`) ended the block there: write_file ran with
// {content: 'Use '} and no path, the rest of the markup left in the answer. The other families'
// own tokens inside a JSON string value were untested.
describe("R78B-2: a call's own markup written inside its values is that value's text", () => {
  const tools = ["write_file", "rm", "foo"];
  const qwen = (wrapped: boolean, ...parameters: [string, string][]) => {
    const block = `<function=write_file>\n${parameters.map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`).join("")}</function>`;
    return wrapped ? `<tool_call>\n${block}\n</tool_call>` : block;
  };

  for (const content of [
    "Use <function=foo> to call foo.",
    "x <function=write_file> y",
    "a <function=rm>\nb",
  ]) {
    for (const wrapped of [true, false]) {
      it(`Qwen3-Coder keeps ${JSON.stringify(content)} and the parameter after it${wrapped ? "" : " (no wrapper)"}`, () => {
        const read = recoverToolCalls(qwen(wrapped, ["content", content], ["path", "a.txt"]), tools);
        expect(read.calls.map((c) => [c.name, c.args])).toEqual([["write_file", { content, path: "a.txt" }]]);
        expect(read.text).toBe("");
      });
    }
  }

  it("reads a block after one never closed as the next call, and recovers nothing where a value may hold it", () => {
    const closed =
      "<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n<function=rm>\n<parameter=path>\nb.txt\n</parameter>\n</function>";
    expect(recoverToolCalls(closed, tools).calls.map((c) => [c.name, c.args])).toEqual([
      ["write_file", { path: "a.txt" }],
      ["rm", { path: "b.txt" }],
    ]);
    // path left open before <function=rm>, or path holding '<function=rm>…b.txt': never run cut.
    const open =
      "<function=write_file>\n<parameter=path>\na.txt\n<function=rm>\n<parameter=path>\nb.txt\n</parameter>\n</function>";
    expect(recoverToolCalls(open, tools)).toEqual({ calls: [], text: open });
  });

  it("recovers nothing from a value </function> ends, then a block it could as well hold; one alone still reads", () => {
    const reply =
      "<function=write_file>\n<parameter=path>\np.md\n</parameter>\n<parameter=content>\nc</function><function=write_file><parameter=x>c\n</parameter>\n</function>";
    expect(recoverToolCalls(reply, tools)).toEqual({ calls: [], text: reply });
    const alone = recoverToolCalls("<function=write_file>\n<parameter=path>\na.txt\n</function>", tools);
    expect(alone.calls.map((c) => c.args)).toEqual([{ path: "a.txt" }]);
  });

  it("recovers nothing from a value holding a whole block and text after it (where it ends cannot be told)", () => {
    const content = "x <function=write_file>\n<parameter=path>\nb\n</parameter>\n</function> y";
    for (const wrapped of [true, false]) {
      const reply = qwen(wrapped, ["content", content], ["path", "a.txt"]);
      expect(recoverToolCalls(reply, tools)).toEqual({ calls: [], text: reply });
    }
  });

  const tokens: Array<[string, (value: string) => string]> = [
    [
      "Gemma 4",
      (v) => `<|tool_call>call:write_file{content:<|"|>${v}<|"|>,path:<|"|>a.txt<|"|>}<tool_call|>`,
    ],
    [
      "FunctionGemma",
      (v) =>
        `<start_function_call>call:write_file{content:<escape>${v}<escape>,path:<escape>a.txt<escape>}<end_function_call>`,
    ],
    [
      "Harmony",
      (v) =>
        `<|start|>assistant<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>${JSON.stringify({ content: v, path: "a.txt" })}<|call|>`,
    ],
    [
      "DeepSeek V3",
      (v) =>
        `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>write_file\n\`\`\`json\n${JSON.stringify({ content: v, path: "a.txt" })}\n\`\`\`<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    ],
    [
      "DeepSeek V3.1",
      (v) =>
        `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>${JSON.stringify({ content: v, path: "a.txt" })}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    ],
  ];
  const inside = [
    'x call:rm{path:<|"|>/<|"|>} y',
    "x <|tool_call>call:rm{}<tool_call|> y",
    "a}b",
    "x <start_function_call>call:rm{} <end_function_call> y",
    "x <|call|> y <|channel|>commentary to=functions.rm <|message|>{} z",
    "x <｜tool▁call▁end｜><｜tool▁calls▁end｜> y",
    "x <｜tool▁call▁begin｜>rm<｜tool▁sep｜>{} y",
    "x <|tool_call_end|> y\n```\nz",
  ];
  for (const [family, write] of tokens) {
    it(`${family}: a string value holding any family's call tokens reaches the tool whole`, () => {
      for (const content of inside) {
        // Each family's own quote token cannot be written inside its own string.
        if (family === "Gemma 4" && content.includes('<|"|>')) continue;
        if (family === "FunctionGemma" && content.includes("<escape>")) continue;
        const read = recoverToolCalls(write(content), tools);
        expect(read.calls.map((c) => [c.name, c.args])).toEqual([["write_file", { content, path: "a.txt" }]]);
        expect(read.text).toBe("");
      }
    });
  }

  it("property: Qwen3-Coder content of tags, openers and text reaches the tool exactly, or stays in the text", () => {
    const piece = fc.constantFrom(
      "<function=write_file>",
      "<function=rm>",
      "</parameter>",
      "</function>",
      "<parameter=x>",
      "</tool_call>",
      "\n",
      " ",
      "a",
      "<",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), fc.boolean(), fc.boolean(), (parts, wrapped, first) => {
        const content = `c${parts.join("")}c`;
        // The markup's own separators written in the text read as markup: no reader can tell them apart.
        fc.pre(!/<\/parameter>\s*(?:<parameter=|<\/function>|<function=)/.test(content));
        const pairs: [string, string][] = [
          ["content", content],
          ["path", "p.md"],
        ];
        const reply = qwen(wrapped, ...(first ? pairs : pairs.reverse()));
        const read = recoverToolCalls(reply, tools);
        if (read.calls.length > 0) {
          expect(read.calls.map((c) => [c.name, c.args])).toEqual([
            ["write_file", { content, path: "p.md" }],
          ]);
        } else expect(read.text).toBe(reply);
        // Block openers and text alone (no closing tag, no parameter a block could read) are read whole.
        const plain = !content.includes("</") && !content.includes("<parameter=");
        expect(plain ? read.calls.length : 1).toBe(1);
      }),
      propertyRuns(500),
    );
  });
});
