import fc from "fast-check";
import { describe, expect, it } from "vitest";
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
          // A call before a `</think>` is in the scratchpad the template opened (documented).
          expect(read.calls.length).toBe(before && !(closed && pad.implicitOpen) ? 1 : 0);
        },
      ),
      { numRuns: 400 },
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

  it("property: a reply of prose, fence lines and calls recovers the same calls with ~~~ as with ```", () => {
    const piece = fc.constantFrom("Some prose.\n", "FENCE\n", "FENCE\n", `${call}\n`, "\n");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (parts) => {
        const reply = parts.join("");
        const ticks = recoverToolCalls(reply.replaceAll("FENCE", "```"), tools);
        const tildes = recoverToolCalls(reply.replaceAll("FENCE", "~~~"), tools);
        expect(tildes.calls).toEqual(ticks.calls);
        expect(tildes.text).toBe(ticks.text.replaceAll("```", "~~~"));
      }),
      { numRuns: 500 },
    );
  });
});
