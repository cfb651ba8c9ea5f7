import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ALL_FENCES, stripThinking } from "../../stream/src/fences.js";
import { parseJson } from "./parse-json.js";
import { recoverToolCalls, SCRATCHPADS, TEMPLATE_MARKERS } from "./recover-tool-calls.js";
import { splitGrowth } from "./test-support/split-growth.js";
import { partsInTurn } from "./test-support/turn-end.js";

// Review r82: parseJson skips the scratchpads recoverToolCalls skips (JSON there is the model's
// draft, not its answer), then a hostile review.

describe("R82-2: parseJson reads no JSON inside a scratchpad, closed or not, of any kind the stream takes out", () => {
  it("skips an unclosed <think> / ◁think▷, and <thinking>, <reasoning>, gpt-oss analysis, closed or not", () => {
    expect(parseJson('<think>draft {"b": 2}')).toBeUndefined();
    expect(parseJson('◁think▷draft {"b": 2}')).toBeUndefined();
    expect(parseJson('{"a": 1}\n<think>or maybe {"b": 2}')).toEqual({ a: 1 });
    expect(parseJson('<thinking>plan {"b": 2}</thinking>{"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('<reasoning>plan {"b": 2}</reasoning>Answer: {"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('<thinking>plan {"b": 2}')).toBeUndefined();
    expect(
      parseJson(
        '<|channel|>analysis<|message|>plan {"b": 2}<|end|><|start|>assistant<|channel|>final<|message|>{"a": 1}',
      ),
    ).toEqual({ a: 1 });
    expect(parseJson('Sure.\n<thinking>```json\n{"b": 2}\n```</thinking>\n```json\n{"a": 1}\n```')).toEqual({
      a: 1,
    });
  });

  it("the calls recoverToolCalls leaves in a scratchpad are the JSON parseJson leaves there", () => {
    for (const { open, close } of SCRATCHPADS) {
      const reply = `${open}I could call <tool_call>{"name": "rm", "arguments": {"p": "/"}}</tool_call>${close}{"a": 1}`;
      expect(recoverToolCalls(reply, ["rm"]).calls, open).toEqual([]);
      expect(parseJson(reply), open).toEqual({ a: 1 });
    }
  });

  it("an opener written as inline code, or inside a string of the JSON around it, opens nothing", () => {
    expect(parseJson('Models write `<thinking>` first. {"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('Here: {"note": "use <thinking> tags", "a": 1}')).toEqual({
      note: "use <thinking> tags",
      a: 1,
    });
    expect(parseJson('Here: {"html": "<think>x", "n": 2} and more.')).toEqual({ html: "<think>x", n: 2 });
    // A closer written as inline code inside the scratchpad does not close it.
    expect(parseJson('<thinking>ends with `</thinking>` then {"b": 2}</thinking>{"a": 1}')).toEqual({ a: 1 });
  });

  it("property: the answer outside every scratchpad is what is read, as the stream's ALL_FENCES content", () => {
    const json = fc
      .dictionary(fc.constantFrom("a", "b", "text"), fc.oneof(fc.integer(), fc.constantFrom("x", "y z")), {
        minKeys: 1,
        maxKeys: 3,
      })
      .map((v) => JSON.stringify(v));
    const draft = fc.array(fc.oneof(json, fc.constantFrom("plan ", "{", "[1, ", "\n")), { maxLength: 3 });
    const closedPad = fc
      .tuple(fc.constantFrom(...SCRATCHPADS), draft)
      .map(([kind, d]) => ({ pad: true, text: `${kind.open}${d.join("")}${kind.close}` }));
    const answerPiece = fc.oneof(json, fc.constantFrom("Answer: ", "\n", " then ")).map((text) => ({
      pad: false,
      text,
    }));
    const unclosed = fc.option(
      fc.tuple(fc.constantFrom(...SCRATCHPADS), draft).map(([kind, d]) => `${kind.open}${d.join("")}`),
      { nil: "" },
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(closedPad, answerPiece), { minLength: 1, maxLength: 5 }),
        unclosed,
        (pieces, tail) => {
          const text = pieces.map((p) => p.text).join("") + tail;
          const answer = pieces
            .filter((p) => !p.pad)
            .map((p) => p.text)
            .join("");
          expect(parseJson(text)).toEqual(parseJson(answer));
          expect(parseJson(text)).toEqual(parseJson(stripThinking(text, { fences: ALL_FENCES }).content));
        },
      ),
      propertyRuns(500),
    );
  });

  it("property: any order of openers, closers (lone or quoted) and JSON reads as the stream's ALL_FENCES content does", () => {
    const marker = fc.constantFrom(...SCRATCHPADS.flatMap((k) => [k.open, k.close]));
    const text = fc.constantFrom('{"a":1}', '{"b":2}', "[3]", "prose ", "\n", "{", "`");
    fc.assert(
      fc.property(fc.array(fc.oneof(marker, text), { maxLength: 8 }), (parts) => {
        const reply = parts.join("");
        // r83b: where the first of TEMPLATE_MARKERS (not quoted) is a closer, the template opened
        // that scratchpad in the prompt: the stream reads it so with the opener put back. The
        // content is read again after an empty scratchpad: a lone closer left in it (the stream had
        // seen a marker before it) is text, as it was to the stream.
        const quoted = (i: number) => parts[i - 1] === "`" && parts[i + 1] === "`";
        const first = parts.findIndex((p, i) => !quoted(i) && TEMPLATE_MARKERS.some((m) => m.marker === p));
        const opened = SCRATCHPADS.find((k) => k.implicitOpen && parts[first] === k.close);
        const read = opened ? `${opened.open}${reply}` : reply;
        const content = stripThinking(read, { fences: ALL_FENCES }).content;
        expect(parseJson(reply)).toEqual(parseJson(`<think></think>${content}`));
      }),
      propertyRuns(1000),
    );
    // One kind's opener inside another kind's scratchpad is reasoning: it opens nothing.
    expect(parseJson('<reasoning>say <think> first</reasoning>{"a": 1}')).toEqual({ a: 1 });
  });

  it("stays linear on many scratchpads, openers inside JSON strings, and quoted openers", async () => {
    const cases = [
      (n: number) => `${'<thinking>x {"b":1}</thinking>'.repeat(n)}{"a":1}`,
      (n: number) => `${'note {"a": "<thinking>"} '.repeat(n)}{"a":1}`,
      (n: number) => `${"`<thinking>` ".repeat(n)}{"a":1}`,
      (n: number) => '{ <think> [ <thinking> " '.repeat(n),
    ];
    // One reading of eight times the text against eight readings of it, in the same run
    // (splitGrowth): linear ~1, quadratic ~8.
    for (const make of cases) {
      expect(await splitGrowth(parseJson, make), make(1).slice(0, 40)).toBeLessThan(4);
    }
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});

describe("R82-3: recoverToolCalls reads scratchpads left to right: another kind's opener inside one opens nothing", () => {
  const call = '<tool_call>{"name": "ls", "arguments": {"p": "."}}</tool_call>';

  it("runs the call after a <reasoning> that mentions <think> (the stream shows it as the answer)", () => {
    for (const reply of [
      `<reasoning>Qwen opens with <think> first.</reasoning>\n${call}`,
      `<thinking>I write ◁think▷ here</thinking>${call}`,
      `<|channel|>analysis<|message|>no <thinking> needed<|end|>${call}`,
    ]) {
      expect(stripThinking(reply, { fences: ALL_FENCES }).content, reply).toContain(call);
      expect(recoverToolCalls(reply, ["ls"]).calls, reply).toEqual([
        { id: "call_recovered_0", name: "ls", args: { p: "." }, raw: '{"p":"."}' },
      ]);
    }
  });

  it("property: a call is run exactly where the stream's ALL_FENCES content shows it", () => {
    // A lone `</think>` / `◁/think▷` is left out: recoverToolCalls reads only after the last one
    // (its documented cut), where the stream keeps an answer written before a closed <think>.
    const marker = fc.constantFrom(
      ...SCRATCHPADS.flatMap((k) => (k.implicitOpen ? [k.open] : [k.open, k.close])),
    );
    // r85: a pythonic list in the tag, and end-of-turn tokens a template leaks, anywhere.
    const pythonic = `<tool_call>[ls(p=".")]</tool_call>`;
    const endToken = fc.constantFrom("<|eot_id|>", "<|eot|>", "<|im_end|>", "</s>", "<end_of_turn>", "<eos>");
    fc.assert(
      fc.property(
        fc.array(fc.oneof(marker, endToken, fc.constantFrom(call, pythonic, "prose ", "\n")), {
          maxLength: 8,
        }),
        (parts) => {
          const reply = parts.join("");
          // r87: an end-of-turn token with text after it ends the reply (the server should have
          // stopped there); what the stream shows before it is what runs.
          const content = stripThinking(partsInTurn(parts).join(""), { fences: ALL_FENCES }).content;
          const shown = content.split(call).length + content.split(pythonic).length - 2;
          expect(recoverToolCalls(reply, ["ls"]).calls, reply).toHaveLength(shown);
        },
      ),
      propertyRuns(1000),
    );
  });
});
