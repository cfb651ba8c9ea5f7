import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { MessageLike } from "./messages.js";
import { planCompaction } from "./plan-compaction.js";
import { pruneToolResults } from "./prune.js";
import { compactTranscript } from "./run-compaction.js";
import { refusal } from "./test-support/refusal.js";

const body = fc.string({ maxLength: 40 }).map((s) => s.repeat(20));

/** Transcripts as hosts and servers really leave them: ids missing or repeated, questions between a call and its answer. */
const transcriptArb = fc
  .record({
    systems: fc.integer({ min: 0, max: 2 }),
    questions: fc.array(
      fc.record({
        question: body,
        steps: fc.array(
          fc.record({
            calls: fc.integer({ min: 1, max: 3 }),
            ids: fc.constantFrom("unique", "repeated", "none"),
            interject: fc.option(fc.nat({ max: 3 }), { nil: undefined }),
            result: body,
          }),
          { maxLength: 4 },
        ),
        answer: fc.option(body, { nil: undefined }),
      }),
      { minLength: 1, maxLength: 10 },
    ),
  })
  .map(({ systems, questions }) => {
    const messages: MessageLike[] = [];
    for (let s = 0; s < systems; s++) messages.push({ role: "system", content: `rules ${s}` });
    let n = 0;
    for (const { question, steps, answer } of questions) {
      messages.push({ role: "user", content: question });
      for (const { calls, ids, interject, result } of steps) {
        const made = Array.from({ length: calls }, (_, k) =>
          ids === "unique" ? `c${n++}` : ids === "repeated" ? `call_${k}` : undefined,
        );
        messages.push({
          role: "assistant",
          content: "",
          tool_calls: made.map((id) => ({
            ...(id ? { id } : {}),
            function: { name: "read", arguments: "{}" },
          })),
        });
        made.forEach((id, k) => {
          if (interject === k) messages.push({ role: "user", content: "also this" });
          messages.push({ role: "tool", ...(id ? { tool_call_id: id } : {}), content: result });
        });
      }
      if (answer !== undefined) messages.push({ role: "assistant", content: answer });
    }
    return messages;
  });

describe("compaction never hands back a transcript an endpoint refuses", () => {
  it("the generator's transcripts are themselves accepted", () => {
    fc.assert(fc.property(transcriptArb, (messages) => refusal(messages) === undefined));
  });

  it("pruneToolResults keeps every call answered, and pruning twice changes nothing more", () => {
    fc.assert(
      fc.property(transcriptArb, fc.nat({ max: 4 }), fc.nat({ max: 300 }), (messages, keepLast, maxChars) => {
        const once = pruneToolResults(messages, { keepLast, maxChars });
        expect(refusal(once)).toBeUndefined();
        expect(once.filter((m) => m.role === "user")).toEqual(messages.filter((m) => m.role === "user"));
        expect(pruneToolResults(once, { keepLast, maxChars })).toEqual(once);
      }),
    );
  });

  it(
    "a planned fold keeps every call answered, whatever the window and the target",
    async () => {
      let planned = 0;
      await fc.assert(
        fc.asyncProperty(
          transcriptArb,
          fc.integer({ min: 50, max: 20_000 }),
          fc.option(fc.double({ min: 0.05, max: 1, noNaN: true }), { nil: undefined }),
          async (messages, limit, target) => {
            const plan = planCompaction(messages, { limit, ...(target !== undefined ? { target } : {}) });
            if (plan === undefined) return;
            planned++;
            const folded: MessageLike[][] = [];
            const out = await compactTranscript(messages, plan, (stretch) => {
              folded.push([...stretch]);
              return "notes";
            });
            expect(refusal(out)).toBeUndefined();
            // Every question is either kept or handed to the summariser: none goes silently.
            const users = (list: readonly MessageLike[]) => list.filter((m) => m.role === "user").length;
            expect(users(out) + users(folded[0] ?? [])).toBe(users(messages));
          },
        ),
        propertyRuns(Number(process.env.RUNS ?? 200)),
      );
      expect(planned).toBeGreaterThan(20);
    },
    propertyTimeout(60_000),
  );
});
