import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ToolArgumentsError, ToolCallsError } from "./errors.js";
import { parseJson } from "./parse-json.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

const anyPlace = () => true;

function refusal(run: () => unknown): ToolArgumentsError {
  try {
    run();
  } catch (error) {
    if (ToolArgumentsError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("no ToolArgumentsError was thrown");
}

// R77B-1: a number written with leading zeros (`012345678901234567891`, JSON refuses it) went
// through a double on the way to strict JSON (`Number(token)`), so an integer past 2^53 reached
// the tool as another integer with nothing reported (no "inexact", takesString never asked), and
// `00.5e400` (Infinity) or a leading-zero number beside a word only jsonrepair reads came back as
// the string "00.5e400" / "0012" at a place the model wrote a number.
describe("R77B-1: a number written with leading zeros keeps its digits", () => {
  it("refuses an integer past 2^53 written with a leading zero, naming the digits written", () => {
    for (const text of ["{'id': 012345678901234567891}", '{"id": 012345678901234567891}']) {
      const error = refusal(() => parseToolArguments(text, { name: "get_order" }));
      expect(error.kind).toBe("inexact");
      expect(error.numbers?.[0]).toMatchObject({ path: ["id"], digits: "012345678901234567891" });
    }
  });

  it("hands the digits written over as a string where the tool takes one", () => {
    const read = parseToolArguments('{"id": -0009007199254740993}', { takesString: anyPlace });
    expect(read.value).toEqual({ id: "-0009007199254740993" });
    expect(read.inexact).toEqual([
      { path: ["id"], digits: "-0009007199254740993", kind: "integer", as: "string" },
    ]);
  });

  it("refuses a leading-zero number past a double's range instead of handing over a string", () => {
    for (const text of ["{'x': 00.5e400}", '{"x": 01e400, "y": 2}']) {
      const error = refusal(() => parseToolArguments(text));
      expect(error.kind).toBe("inexact");
      expect(error.numbers?.[0]?.kind).toBe("range");
    }
  });

  it("reads a leading-zero number as that number where only the general repair reads the rest", () => {
    const read = parseToolArguments('{"count": 0012, "mode": nil}');
    expect(read.value.count).toBe(12);
  });

  it("parseJson refuses such an integer under takesString, and reads a small one as its number", () => {
    let caught: unknown;
    try {
      parseJson("Here: {'id': 0009007199254740993}", { takesString: () => false });
    } catch (error) {
      caught = error;
    }
    expect(ToolCallsError.isInstance(caught) && caught.code).toBe("inexact");
    expect(parseJson("{'n': 007, 'm': 00.25}")).toEqual({ n: 7, m: 0.25 });
  });

  it("property: a leading-zero integer reaches the tool as its exact value, or as the digits written, or is refused", () => {
    const safe = BigInt(Number.MAX_SAFE_INTEGER);
    // Held: JavaScript writes the double back with the same value (12345678901234567000 is, 2^60 is not).
    const heldAsWritten = (n: bigint) => {
      const [mantissa = "", power] = String(Number(n)).replace("-", "").split("e+");
      const [whole = "", fraction = ""] = mantissa.split(".");
      const back = BigInt(whole + fraction + "0".repeat(power ? Number(power) - fraction.length : 0));
      return back === (n < 0n ? -n : n);
    };
    fc.assert(
      fc.property(
        fc.bigInt(-(10n ** 25n), 10n ** 25n),
        fc.integer({ min: 1, max: 3 }),
        fc.constantFrom(
          "{'n': %}",
          '{"n": %}',
          "{n: %, 'k': True}",
          '{"n": %, "m": nil}',
          '```json\n{"n": %}\n```',
        ),
        (n, zeros, shape) => {
          const magnitude = n < 0n ? -n : n;
          const token = `${n < 0n ? "-" : ""}${"0".repeat(zeros)}${magnitude}`;
          const text = shape.replace("%", token);
          if (magnitude <= safe || heldAsWritten(n)) {
            expect(parseToolArguments(text).value.n).toBe(Number(n));
            return;
          }
          const error = refusal(() => parseToolArguments(text));
          expect(error.kind).toBe("inexact");
          expect(error.numbers?.[0]?.digits).toBe(token);
          expect(parseToolArguments(text, { takesString: anyPlace }).value.n).toBe(token);
        },
      ),
      propertyRuns(300),
    );
  });
});

// R77B-2: a call written inside a scratchpad that never closes (`Answer.<think><tool_call>…`), in
// Kimi's `◁think▷…◁/think▷` or in raw gpt-oss analysis (`<|channel|>analysis<|message|>…<|end|>`)
// was recovered and run, where the stream takes exactly that text out of the answer as reasoning:
// only `</think>` ended a scratchpad, and only when written.
describe("R77B-2: no call is recovered from a scratchpad the stream reads as reasoning", () => {
  const tools = ["get_weather", "write_file"];
  const call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>';

  for (const [label, reply] of [
    ["a <think> never closed", `<think>I could do ${call} but first`],
    ["a <think> opened after the answer", `Answer.<think>${call}`],
    ["Kimi's ◁think▷ closed", `◁think▷I could call ${call}◁/think▷Done.`],
    ["text before a lone ◁/think▷", `I could call ${call}◁/think▷Done.`],
    [
      "gpt-oss analysis",
      `<|channel|>analysis<|message|>I could call ${call}<|end|><|start|>assistant<|channel|>final<|message|>Done.`,
    ],
  ] as const) {
    it(`leaves the call in ${label} as text`, () => {
      const read = recoverToolCalls(reply, tools);
      expect(read.calls).toEqual([]);
      expect(read.text).toBe(reply);
    });
  }

  it("still recovers a call after Kimi's scratchpad, and one whose argument holds <think>", () => {
    const after = recoverToolCalls(`◁think▷plan◁/think▷${call}`, tools);
    expect(after.calls.map((c) => c.args)).toEqual([{ city: "Oslo" }]);
    expect(after.text).toBe("◁think▷plan◁/think▷");
    const write =
      '<tool_call>{"name": "write_file", "arguments": {"path": "t.md", "content": "<think>"}}</tool_call>';
    const both = recoverToolCalls(`${write}\n${call}`, tools);
    expect(both.calls.map((c) => c.args)).toEqual([{ path: "t.md", content: "<think>" }, { city: "Oslo" }]);
  });

  it("property: nothing written after a <think> that never closes is recovered; what precedes it is", () => {
    const piece = fc.constantFrom(call, " ", "\n", "text", "```", "`", "</tool_call>", "<tool_call>", "{");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 6 }), fc.boolean(), (parts, before) => {
        const lead = before ? `${call}\n` : "";
        const read = recoverToolCalls(`${lead}<think>${parts.join("")}`, tools);
        expect(read.calls.length).toBe(before ? 1 : 0);
      }),
      propertyRuns(300),
    );
  });
});

// R77B-3: Qwen3-Coder markup has no escapes, and a value ended at the first `</parameter>`, the
// block at the first `</function>`: a write_file whose content held either tag (a file about the
// format, a chat template) was run with the content cut there, the rest dropped without a word
// — and a parameter written after it (`path`) lost.
describe("R77B-3: a Qwen3-Coder value holding </parameter> or </function> is read whole", () => {
  const tools = ["write_file"];
  const call = (...parameters: [string, string][]) =>
    `<tool_call>\n<function=write_file>\n${parameters.map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`).join("")}</function>\n</tool_call>`;

  for (const content of ["Close it with </parameter> then go on.", "End with </function>."]) {
    it(`keeps ${JSON.stringify(content)} and the parameter after it`, () => {
      const read = recoverToolCalls(call(["content", content], ["path", "notes.md"]), tools);
      expect(read.calls.map((c) => c.args)).toEqual([{ content, path: "notes.md" }]);
      expect(read.text).toBe("");
    });
  }

  it("recovers no call where a closing tag is followed by text that no later tag ends", () => {
    const reply = "<function=write_file>\n<parameter=content>\nx\n</parameter> junk\n</function>";
    expect(recoverToolCalls(reply, tools).calls).toEqual([]);
    // The markup's own end written in the text, then more: not run with the text cut there.
    const early = call(["path", "p.md"], ["content", "a </parameter>\n</function> b"]);
    expect(recoverToolCalls(early, tools)).toEqual({ calls: [], text: early });
    // The wrapper's closing tag written in the text is the text's: the wrapper closes after </function>.
    const wrapper = recoverToolCalls(call(["path", "p.md"], ["content", "a </tool_call> b"]), tools);
    expect(wrapper.calls.map((c) => c.args)).toEqual([{ path: "p.md", content: "a </tool_call> b" }]);
    expect(wrapper.text).toBe("");
  });
  // The property over any content of tags and text is review-r78.test.ts's (a wider piece set).
});

// R77B-4: the same for GLM-4.5+: a value ended at the first `</arg_value>` and the wrapper at the
// first `</tool_call>`, so `{content: "a </arg_value> b"}` ran as "a " (the rest dropped) and one
// holding `</tool_call>` as "a " with "b</arg_value></tool_call>" left in the answer.
describe("R77B-4: a GLM value holding </arg_value> or </tool_call> is read whole", () => {
  const tools = ["write_file"];
  const glm = (content: string) =>
    `<tool_call>write_file<arg_key>content</arg_key><arg_value>${content}</arg_value><arg_key>path</arg_key><arg_value>x.md</arg_value></tool_call>`;
  const glmLast = (content: string) =>
    `<tool_call>write_file<arg_key>path</arg_key><arg_value>x.md</arg_value><arg_key>content</arg_key><arg_value>${content}</arg_value></tool_call>`;

  for (const content of ["a </arg_value> b", "a </tool_call> b"]) {
    it(`keeps ${JSON.stringify(content)}, first or last`, () => {
      for (const reply of [glm(content), glmLast(content)]) {
        const read = recoverToolCalls(reply, tools);
        expect(read.calls.map((c) => c.args)).toEqual([{ content, path: "x.md" }]);
        expect(read.text).toBe("");
      }
    });
  }

  it("recovers no call whose value holds a </arg_value> no later tag ends", () => {
    const reply =
      "<tool_call>write_file<arg_key>content</arg_key><arg_value>a</arg_value> b<arg_key>path</arg_key><arg_value>x.md</arg_value></tool_call>";
    expect(recoverToolCalls(reply, tools)).toEqual({ calls: [], text: reply });
  });

  it("property: any content of tags and text reaches the tool exactly, or stays in the text", () => {
    const piece = fc.constantFrom("</arg_value>", "</tool_call>", "</arg_key>", "\n", " ", "a", "<");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), fc.boolean(), (parts, last) => {
        const content = `c${parts.join("")}c`;
        // The markup's own separator written in the text reads as markup.
        fc.pre(!/<\/arg_value>\s*(?:<arg_key>|<\/tool_call>)/.test(content));
        const reply = last ? glmLast(content) : glm(content);
        const read = recoverToolCalls(reply, tools);
        if (read.calls.length > 0) expect(read.calls.map((c) => c.args)).toEqual([{ content, path: "x.md" }]);
        else expect(read.text).toBe(reply);
      }),
      propertyRuns(400),
    );
  });
});

// R77B-5: `<invoke>` markup (MiniMax-M2, DeepSeek V3.2) likewise: a value ended at the first
// `</parameter>`, so `{content: "a </parameter> b"}` ran as "a " with " b</parameter>" dropped.
describe("R77B-5: an <invoke> value holding </parameter> is read whole", () => {
  const tools = ["write_file"];
  const invoke = (content: string, dsml = "") =>
    `<${dsml}invoke name="write_file"><${dsml}parameter name="content">${content}</${dsml}parameter><${dsml}parameter name="path">x.md</${dsml}parameter></${dsml}invoke>`;

  for (const dsml of ["", "｜DSML｜"]) {
    it(`keeps the text and the parameter after it${dsml ? " (DSML)" : ""}`, () => {
      const content = `a </${dsml}parameter> b <${dsml}parameter name="x"> c`;
      const read = recoverToolCalls(invoke(content, dsml), tools);
      expect(read.calls.map((c) => c.args)).toEqual([{ content, path: "x.md" }]);
    });
  }

  it("recovers no call whose value holds a </parameter> no later tag ends", () => {
    const reply = '<invoke name="write_file"><parameter name="content">a</parameter> b</invoke>';
    expect(recoverToolCalls(reply, tools)).toEqual({ calls: [], text: reply });
  });

  it("property: any content of tags and text reaches the tool exactly, or stays in the text", () => {
    const piece = fc.constantFrom("</parameter>", '<parameter name="k">', "</invoke>", "\n", " ", "a", "<");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (parts) => {
        const content = `c${parts.join("")}c`;
        // The markup's own separator written in the text reads as markup.
        fc.pre(!/<\/parameter>\s*(?:<parameter name=|<\/invoke>)/.test(content));
        const reply = invoke(content);
        const read = recoverToolCalls(reply, tools);
        if (read.calls.length > 0) expect(read.calls.map((c) => c.args)).toEqual([{ content, path: "x.md" }]);
        else expect(read.text).toBe(reply);
      }),
      propertyRuns(400),
    );
  });
});

// R77B-6: parseJson handed a number JSON refuses (`0012`, `+5`) to jsonrepair where the rest needed
// it, which makes a string of it: {"a": 0012, "b": nil} read a as "0012", and an integer past 2^53
// written so came back as a string even where takesString answered false, never refused.
describe("R77B-6: parseJson reads a number JSON refuses as the number it means", () => {
  it("reads 0012 and +5 as numbers beside a word only the general repair reads", () => {
    expect(parseJson('Here: {"a": 0012, "b": nil}')).toEqual({ a: 12, b: "nil" });
    expect(parseJson('{"x": +5, "y": .5}')).toEqual({ x: 5, y: 0.5 });
  });

  it("property: a leading-zero integer is its number, or refused under takesString, never a string", () => {
    const safe = BigInt(Number.MAX_SAFE_INTEGER);
    fc.assert(
      fc.property(fc.bigInt(-(10n ** 22n), 10n ** 22n), fc.integer({ min: 1, max: 3 }), (n, zeros) => {
        const magnitude = n < 0n ? -n : n;
        const token = `${n < 0n ? "-" : ""}${"0".repeat(zeros)}${magnitude}`;
        const text = `Result: {"n": ${token}, "k": nil}`;
        let caught: unknown;
        let read: { n?: unknown } | undefined;
        try {
          read = parseJson(text, { takesString: () => false });
        } catch (error) {
          caught = error;
        }
        if (magnitude <= safe) expect(read?.n).toBe(Number(n));
        else if (caught === undefined) expect(read?.n).toBe(Number(n));
        else expect(ToolCallsError.isInstance(caught) && caught.code).toBe("inexact");
      }),
      propertyRuns(300),
    );
  });
});
