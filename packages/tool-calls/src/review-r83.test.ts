import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ALL_FENCES, stripThinking } from "../../stream/src/fences.js";
import { parseJson } from "./parse-json.js";
import { recoverToolCalls, SCRATCHPADS, TEMPLATE_MARKERS } from "./recover-tool-calls.js";
import { splitGrowth } from "./test-support/split-growth.js";
import { partsInTurn } from "./test-support/turn-end.js";

// R83-1: recoverToolCalls read calls only after the reply's LAST `</think>` (or `◁/think▷`), even
// when that closer closed a `<think>` the answer opened after its call:
// `<tool_call>{…}</tool_call><think>done</think>` recovered nothing, while the stream (and so the
// user) shows the call as the answer — the model's call was never run. The cut is for a template
// that opens the scratchpad in the prompt (the reply begins inside reasoning, with no `<think>`):
// that is so only when the reply's first such marker is a closer.
describe("R83-1: a </think> ends a scratchpad the template opened only when it comes before any <think>", () => {
  const call = '<tool_call>{"name": "ls", "arguments": {"p": "."}}</tool_call>';
  const ls = { id: "call_recovered_0", name: "ls", args: { p: "." }, raw: '{"p":"."}' };

  it("runs a call written before a scratchpad the answer opens and closes (the stream shows it)", () => {
    for (const reply of [
      `${call}<think>done</think>`,
      `${call}\n◁think▷done◁/think▷`,
      `Plan made.</think>\n${call}\n<think>Now I wait.</think>`,
      `Plan made.</think>${call} more</think>x`,
      `<think>a</think>b</think>${call}`,
    ]) {
      expect(stripThinking(reply, { fences: ALL_FENCES }).content, reply).toContain(call);
      expect(recoverToolCalls(reply, ["ls"]).calls, reply).toEqual([ls]);
    }
    expect(recoverToolCalls(`${call}<think>done</think>`, ["ls"]).text).toBe("<think>done</think>");
  });

  it("still reads a reply that begins inside the template's scratchpad from its first closer on", () => {
    const sketched = `I could run ${call} here.</think>Nothing to run.`;
    expect(recoverToolCalls(sketched, ["ls"])).toEqual({ calls: [], text: sketched });
    expect(recoverToolCalls(`Plan.</think>\n${call}`, ["ls"]).calls).toEqual([ls]);
    // A whole-reply form after a scratchpad: the answer is only the call.
    expect(recoverToolCalls('<think>plan</think>\n\n[ls(p=".")]', ["ls"]).calls).toEqual([ls]);
  });

  it("property: a call is run exactly where the stream's ALL_FENCES content shows it, lone closers included", () => {
    // Where the reply's first `<think>`/`◁think▷`/analysis marker is a closer, the template opened
    // that scratchpad in the prompt: the stream reads it so with the opener put back. (A
    // `<thinking>` or `<reasoning>` before it is a tag the reasoning may mention: it decides nothing.)
    const implicit = SCRATCHPADS.filter((k) => k.implicitOpen);
    const templateMarkers = new Set(TEMPLATE_MARKERS.map((m) => m.marker));
    const marker = fc.constantFrom(...SCRATCHPADS.flatMap((k) => [k.open, k.close]));
    // r85: a pythonic call list in the tag too, and the end-of-turn tokens a template leaks, after
    // a call or anywhere (`<tool_call>[ls(p=".")]</tool_call>` was lost, with or without one).
    const pythonic = `<tool_call>[ls(p=".")]</tool_call>`;
    const endToken = fc.constantFrom("<|eot_id|>", "<|im_end|>", "</s>", "<end_of_turn>", "<|endoftext|>");
    fc.assert(
      fc.property(
        fc.array(fc.oneof(marker, endToken, fc.constantFrom(call, pythonic, "prose ", "\n")), {
          maxLength: 9,
        }),
        (parts) => {
          const reply = parts.join("");
          const first = parts.findIndex((p) => templateMarkers.has(p));
          const opened = implicit.find((k) => parts[first] === k.close);
          // r87: an end-of-turn token with text after it ends the reply (outside reasoning).
          const inTurn = partsInTurn(parts, opened?.open).join("");
          const read = opened ? `${opened.open}${inTurn}` : inTurn;
          const content = stripThinking(read, { fences: ALL_FENCES }).content;
          const shown = content.split(call).length + content.split(pythonic).length - 2;
          expect(recoverToolCalls(reply, ["ls"]).calls, reply).toHaveLength(shown);
        },
      ),
      propertyRuns(400),
    );
  });

  it("stays linear in the number of markers", async () => {
    // A reply opening with many closed scratchpads, an opener repeated after a call, and a
    // `</think>` inside each of many calls' arguments. One reading of eight times the text against eight readings of it, in the same run
    // (splitGrowth): linear ~1, quadratic ~8.
    const cases = [
      (n: number) => `${"<think>x</think>\n".repeat(n)}${call}`,
      (n: number) => `${call}${"<think>".repeat(2 * n)}`,
      (n: number) => '<tool_call>{"name": "ls", "arguments": {"p": "</think>"}}</tool_call>'.repeat(n),
    ];
    for (const make of cases) {
      expect(
        await splitGrowth((reply) => recoverToolCalls(reply, ["ls"]), make),
        make(8).slice(0, 40),
      ).toBeLessThan(4);
    }
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});

// R83-3 (found on the way): only a reply holding `</think>` was read past the scratchpads it opens
// with, so a whole-reply call (bare JSON, pythonic) after a closed `<thinking>`, `<reasoning>` or
// raw gpt-oss analysis was never recovered — the stream shows the call alone as the answer.
describe("R83-3: a whole-reply call after closed scratchpads of any kind is recovered", () => {
  const forms = ['{"name": "ls", "arguments": {"p": "."}}', '[ls(p=".")]'];
  const ls = { id: "call_recovered_0", name: "ls", args: { p: "." }, raw: '{"p":"."}' };

  it("property: closed scratchpads then one call written as the whole answer", () => {
    const pad = fc
      .tuple(
        fc.constantFrom(...SCRATCHPADS),
        fc.constantFrom("plan", "", "use ls"),
        fc.constantFrom("", "\n", "\n\n"),
      )
      .map(([kind, draft, gap]) => `${kind.open}${draft}${kind.close}${gap}`);
    fc.assert(
      fc.property(fc.array(pad, { minLength: 1, maxLength: 3 }), fc.constantFrom(...forms), (pads, form) => {
        const reply = `${pads.join("")}${form}`;
        expect(stripThinking(reply, { fences: ALL_FENCES }).content).toBe(form);
        expect(recoverToolCalls(reply, ["ls"]).calls).toEqual([ls]);
      }),
      propertyRuns(200),
    );
  });

  // R83-6: gpt-oss served raw writes its final channel's header after the analysis; the stream
  // drops it with the scratchpad, so the answer is the call alone, and it was never run.
  it("reads past gpt-oss's final-channel header after its analysis", () => {
    for (const form of forms) {
      const reply = `<|channel|>analysis<|message|>plan<|end|>\n<|start|>assistant<|channel|>final<|message|>${form}`;
      expect(stripThinking(reply).content).toBe(form);
      expect(recoverToolCalls(reply, ["ls"]).calls, reply).toEqual([ls]);
    }
  });
});

// R83-4 (found on the way): parseJson cut the reply at its LAST lone `</think>` (after taking out
// the scratchpads it opens), as recoverToolCalls did: '<think>a</think>{"a": 1} b</think>c' and
// 'a</think>{"a": 1} b</think>c' read nothing while the stream shows '{"a": 1} b</think>c' — the
// JSON the model answered with was lost. It now reads with the same rule as recoverToolCalls.
describe("R83-4: parseJson cuts only at a first closer ahead of every opener, as the stream reads it", () => {
  it("reads the answer before a later lone closer", () => {
    for (const reply of [
      'a</think>{"a": 1} b</think>c',
      '<think>a</think>{"a": 1} b</think>c',
      '{"a": 1}<think>x</think> then </think>',
      '◁think▷x◁/think▷{"a": 1} and ◁/think▷',
    ]) {
      expect(stripThinking(reply, { fences: ALL_FENCES }).content, reply).toMatch(/^\{"a": 1\}/);
      expect(parseJson(reply), reply).toEqual({ a: 1 });
    }
  });

  it("still reads past the scratchpad the template opened; a <thinking> mentioned in it decides nothing", () => {
    expect(parseJson('plan {"b": 2}</think>{"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('I write <thinking> tags? No. {"b": 2}</think>{"a": 1}')).toEqual({ a: 1 });
    expect(parseJson('{"a": 1} is wrong.</think>Nothing.')).toBeUndefined();
    expect(parseJson('x</think>{"note": "ends with </think> here"}')).toEqual({
      note: "ends with </think> here",
    });
  });

  // R83-5 (found on the way, older than r83): each scratchpad's opener searched for a JSON value
  // around it from the last place passed to the next `{` — the answer at the end of the reply —
  // so many scratchpads with text between them read in the square of the length ('<think>x</think>
  // b\n' x 10^4 then '{"a": 1}', 190 K chars: 1.5 s; x 2*10^4: 4.5 s). The bracket found is kept.
  it("stays linear in the number of markers", async () => {
    // One reading of eight times the text against eight readings of it, in the same run
    // (splitGrowth): linear ~1, quadratic ~8.
    const cases = [
      (n: number) => `${"<think>x</think> b\n".repeat(n)}{"a": 1}`,
      (n: number) => `${"<think>x</think> b</think>\n".repeat(n)}{"a": 1}`,
      (n: number) => `${'{"s": "</think>"} '.repeat(n)}`,
      (n: number) => `${"`</think>` ".repeat(n)}{"a": 1}`,
    ];
    for (const make of cases) {
      expect(await splitGrowth(parseJson, make), make(1).slice(0, 40)).toBeLessThan(4);
    }
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});
