import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ALL_FENCES, stripThinking } from "../../stream/src/fences.js";
import { recoverToolCalls, SCRATCHPADS, TEMPLATE_MARKERS } from "./recover-tool-calls.js";
import { splitGrowth } from "./test-support/split-growth.js";
import { partsInTurn } from "./test-support/turn-end.js";

// R84-1: a reply that is only a call (bare JSON, pythonic) but ends with a scratchpad —
// `{"name":"ls","arguments":{}}<think>done</think>` — recovered nothing, while the stream takes the
// scratchpad out and shows the call alone as the answer: the model's call was never run (r83 fixed
// the tagged form and the scratchpads a reply opens with, not the ones it ends with).
describe("R84-1: a whole-reply call followed by scratchpads is recovered", () => {
  const forms = ['{"name": "ls", "arguments": {"p": "."}}', '[ls(p=".")]'];
  const ls = { id: "call_recovered_0", name: "ls", args: { p: "." }, raw: '{"p":"."}' };

  it("runs the call and keeps the scratchpads in the text", () => {
    for (const form of forms) {
      for (const pads of [
        "<think>done</think>",
        "\n<thinking>a</thinking>\n◁think▷b◁/think▷\n",
        "<think>cut",
      ]) {
        const reply = `${form}${pads}`;
        expect(stripThinking(reply, { fences: ALL_FENCES }).content.trim(), reply).toBe(form);
        expect(recoverToolCalls(reply, ["ls"]), reply).toEqual({ calls: [ls], text: pads.trim() });
      }
    }
  });

  it("runs nothing where the stream shows more than the call, or a call cut open", () => {
    for (const reply of [
      '{"name": "ls", "arguments": {"p": "."}}<think>a</think> and more',
      '{"name": "ls", "arguments": {"p": "<think>"}}<think>done</think>',
      '{"name": "ls", "arguments": {"p": "."}}`<think>`',
    ]) {
      expect(recoverToolCalls(reply, ["ls"]), reply).toEqual({ calls: [], text: reply });
    }
  });

  it("property: a whole-reply call is run exactly when the stream's ALL_FENCES content is that call alone", () => {
    // As r83's property: where the first template marker is a closer, the template opened that
    // scratchpad in the prompt, and the stream reads the reply with the opener put back.
    const implicit = SCRATCHPADS.filter((k) => k.implicitOpen);
    const templateMarkers = new Set(TEMPLATE_MARKERS.map((m) => m.marker));
    const part = fc.oneof(
      fc.constantFrom(...SCRATCHPADS.flatMap((k) => [k.open, k.close])),
      fc.constantFrom("prose ", "\n", "plan"),
    );
    const side = fc.array(part, { maxLength: 5 });
    fc.assert(
      fc.property(side, fc.constantFrom(...forms), side, (before, form, after) => {
        const parts = [...before, form, ...after];
        const reply = parts.join("");
        const first = parts.findIndex((p) => templateMarkers.has(p));
        const opened = implicit.find((k) => parts[first] === k.close);
        // r87: a Phi-style `<|end|>` (after no Harmony message) with text after it ends the reply.
        const inTurn = partsInTurn(parts, opened?.open).join("");
        const read = opened ? `${opened.open}${inTurn}` : inTurn;
        // gpt-oss's `<|end|>` closes its analysis and ends a turn: after the answer it is the
        // end-of-turn token a whole-reply call may have, JSON or pythonic (r85: the pythonic form
        // allowed only Llama's own, and `[ls(p=".")]<|end|>` was lost).
        const content = stripThinking(read, { fences: ALL_FENCES }).content.replace(
          /(?:\s*<\|end\|>)+\s*$/,
          "",
        );
        const shown = content.trim() === form;
        expect(recoverToolCalls(reply, ["ls"]).calls, reply).toEqual(shown ? [ls] : []);
      }),
      propertyRuns(400),
    );
  });

  it("stays linear in the number of trailing scratchpads", async () => {
    // One reading of eight times the text against eight readings of it, in the same run
    // (splitGrowth): linear ~1, quadratic ~8.
    for (const make of [
      (n: number) => `${forms[0]}${"<think>x</think>\n".repeat(n)}`,
      (n: number) => `${forms[1]}${"<thinking>x</thinking>".repeat(n)} end`,
      (n: number) => `${forms[0]}${"◁think▷".repeat(2 * n)}`,
    ]) {
      expect(
        await splitGrowth((reply) => recoverToolCalls(reply, ["ls"]), make),
        make(1).slice(0, 60),
      ).toBeLessThan(4);
    }
    // Seconds on a loaded machine (six agents on two cores); the default 5 s was too tight.
  }, 60_000);
});
