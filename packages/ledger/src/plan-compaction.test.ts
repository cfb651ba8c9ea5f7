import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import type { MessageLike } from "./messages.js";
import { planCompaction, SUMMARY_LEAD } from "./plan-compaction.js";
import { messageTokens } from "./tokens.js";

const say = (role: string, tokens: number): MessageLike => ({ role, content: "x".repeat(tokens * 4) });

/** A transcript: a system prompt, then questions each followed by tool steps and an answer. */
const transcriptArb = fc
  .array(
    fc.record({
      question: fc.integer({ min: 1, max: 400 }),
      steps: fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 2000 })), {
        maxLength: 4,
      }),
      answer: fc.integer({ min: 1, max: 400 }),
    }),
    { minLength: 1, maxLength: 12 },
  )
  .map((questions) => {
    const messages: MessageLike[] = [say("system", 50)];
    let id = 0;
    for (const { question, steps, answer } of questions) {
      messages.push(say("user", question));
      for (const [calls, size] of steps) {
        const ids = Array.from({ length: calls }, () => `c${id++}`);
        messages.push({
          role: "assistant",
          content: "",
          tool_calls: ids.map((callId) => ({ id: callId, function: { name: "read", arguments: "{}" } })),
        });
        for (const callId of ids)
          messages.push({ role: "tool", tool_call_id: callId, content: "r".repeat(size * 4) });
      }
      messages.push(say("assistant", answer));
    }
    return messages;
  });

describe("planCompaction", () => {
  const transcript = [
    say("system", 100),
    say("user", 1000),
    say("assistant", 1000),
    say("user", 1000),
    say("assistant", 1000),
    say("user", 500),
    say("assistant", 500),
  ];

  it("does nothing until the window is past three quarters full", () => {
    expect(planCompaction(transcript, { limit: 10_000, used: 7500 })).toBeUndefined();
    expect(planCompaction(transcript, { limit: 10_000, used: 7501 })).toBeDefined();
  });

  it("cuts on the earliest user message whose tail fits in 35% of the window, keeping the system prompt", () => {
    const plan = planCompaction(transcript, { limit: 5000, used: 5100 });
    expect(plan).toMatchObject({ from: 1, through: 5, folded: 4000, kept: 1000, after: 5100 - 4000 + 1024 });
  });

  it("estimates what is used from the messages when it is not given", () => {
    const plan = planCompaction(transcript, { limit: 6000 });
    expect(plan?.used).toBe(5100);
  });

  it("reads a used of 0 (a turn whose server counted nothing) as not reported, and estimates", () => {
    // A turn's usage.prompt is 0 where the server sent no usage: passed on as used, it must not
    // read as an empty window, or the run is never compacted and overflows.
    expect(planCompaction(transcript, { limit: 6000, used: 0 })?.used).toBe(5100);
    expect(planCompaction(transcript, { limit: 6000, used: 0.4 })?.used).toBe(5100);
  });

  it("has nothing to fold under one long tool run on a single question", () => {
    const run = [
      say("user", 10),
      ...Array.from({ length: 20 }, (_, i) => say(i % 2 ? "tool" : "assistant", 500)),
    ];
    expect(planCompaction(run, { limit: 8000 })).toBeUndefined();
  });

  it("continues an earlier summary read from a leading SUMMARY_LEAD message", () => {
    const withSummary = [
      say("system", 10),
      { role: "system", content: `${SUMMARY_LEAD}\n\nThey asked about tides.` },
      ...transcript.slice(1),
    ];
    const plan = planCompaction(withSummary, { limit: 5000, used: 5100 });
    expect(plan?.previous).toBe("They asked about tides.");
    expect(plan?.from).toBe(2);
  });

  it("continues a summary already in the array when the host passes only from", () => {
    const withSummary = [
      say("system", 10),
      { role: "system", content: `${SUMMARY_LEAD}\n\nThey asked about tides.` },
      ...transcript.slice(1),
    ];
    const plan = planCompaction(withSummary, { limit: 5000, used: 5100, from: 0 });
    expect(plan).toMatchObject({ from: 2, previous: "They asked about tides." });
  });

  it("takes from and previous from a host that stores them, scanning nothing", () => {
    const stored = transcript.slice(1);
    const plan = planCompaction(stored, { limit: 5000, used: 5100, from: 0, previous: "notes" });
    expect(plan).toMatchObject({ from: 0, through: 4, previous: "notes" });
  });

  it("never folds the leading system messages, even from a from that points into them", () => {
    const plan = planCompaction(transcript, { limit: 5000, used: 5100, from: 0, previous: "notes" });
    expect(plan).toMatchObject({ from: 1, through: 5, previous: "notes" });
  });

  it("cuts deeper to reach a target, and says how far short it fell where none reaches it", () => {
    const plan = planCompaction(transcript, { limit: 10_000, used: 8000, target: 0.5, summaryTokens: 500 });
    // Folding through index 3 leaves 8000 - 2000 + 500 = 6500 (over 5000); through 5 leaves 4500.
    expect(plan?.through).toBe(5);
    expect(plan?.after).toBe(4500);
    const short = planCompaction(transcript, { limit: 10_000, used: 8000, target: 0.1 });
    expect(short?.through).toBe(5);
    expect(short?.after).toBeGreaterThan(1000);
  });

  it("never cuts on a user message that sits between a tool call and its answer", () => {
    const call = (ids: string[]): MessageLike => ({
      role: "assistant",
      content: "",
      tool_calls: ids.map((id) => ({ id, function: { name: "read", arguments: "{}" } })),
    });
    const answer = (id: string | undefined, tokens: number): MessageLike => ({
      role: "tool",
      ...(id === undefined ? {} : { tool_call_id: id }),
      content: "r".repeat(tokens * 4),
    });
    // A host that delivers the user's interjection while the calls are still being answered.
    const interjected = [
      say("system", 10),
      say("user", 2000),
      call(["c1", "c2"]),
      answer("c1", 1000),
      say("user", 10),
      answer("c2", 100),
      say("assistant", 100),
      say("user", 100),
      say("assistant", 100),
    ];
    const plan = planCompaction(interjected, { limit: 5000, used: 4000 });
    expect(plan?.through).toBe(7);
    // A tool message without an id answers the call before it: the same holds.
    const unnamed = interjected.map((m) => (m.role === "tool" ? answer(undefined, 100) : m));
    expect(planCompaction(unnamed, { limit: 5000, used: 4000 })?.through).toBe(7);
  });

  it("uses the estimate it is given, message by message", () => {
    const plan = planCompaction(transcript, {
      limit: 5000,
      used: 5100,
      estimate: (_m, i) => (i === 6 ? 10_000 : 1),
    });
    expect(plan).toBeUndefined();
  });

  it("refuses a window that is not above zero", () => {
    expect(() => planCompaction(transcript, { limit: 0 })).toThrow(/limit/);
  });

  it("never cuts mid-exchange, never folds the system prompt, and keeps the tail within 35%", () => {
    fc.assert(
      fc.property(transcriptArb, fc.integer({ min: 500, max: 40_000 }), (messages, limit) => {
        const plan = planCompaction(messages, { limit });
        if (!plan) return;
        expect(plan.from).toBe(1);
        expect(plan.through).toBeGreaterThan(plan.from);
        expect(messages[plan.through]?.role).toBe("user");
        // Every call folded is answered inside the fold, and every kept result's call is kept.
        const folded = messages.slice(plan.from, plan.through);
        const asked = new Set(folded.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
        const answered = new Set(folded.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
        expect(answered).toEqual(asked);
        const tail = messages.slice(plan.through).reduce((sum, m) => sum + messageTokens(m), 0);
        // Within 35% while the request fits; one past the window folds to its last question however long.
        if (plan.used < limit) expect(tail).toBeLessThanOrEqual(0.35 * limit);
        else if (tail > 0.35 * limit)
          expect(plan.through).toBe(messages.findLastIndex((m) => m.role === "user"));
        expect(plan.kept).toBe(tail);
      }),
      propertyRuns(300),
    );
  });

  it("keeps every kept tool result's call, wherever user messages are interjected (fast-check)", () => {
    fc.assert(
      fc.property(
        transcriptArb,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 300 })), { maxLength: 4 }),
        fc.integer({ min: 500, max: 40_000 }),
        fc.option(fc.double({ min: 0.05, max: 0.9, noNaN: true }), { nil: undefined }),
        (base, interjections, limit, target) => {
          const messages = base.slice();
          for (const [at, tokens] of interjections) {
            messages.splice(1 + (at % messages.length), 0, say("user", tokens));
          }
          const plan = planCompaction(messages, { limit, ...(target === undefined ? {} : { target }) });
          if (!plan) return;
          expect(messages[plan.through]?.role).toBe("user");
          const kept = messages.slice(plan.through);
          const asked = new Set(kept.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
          for (const m of kept) if (m.role === "tool") expect(asked.has(m.tool_call_id)).toBe(true);
        },
      ),
      propertyRuns(300),
    );
  });

  it("with a target, cuts at the first user message that meets both bounds, or the last one if none does", () => {
    fc.assert(
      fc.property(
        transcriptArb,
        fc.integer({ min: 500, max: 40_000 }),
        fc.double({ min: 0.05, max: 0.9, noNaN: true }),
        fc.integer({ min: 0, max: 2000 }),
        (messages, limit, target, summaryTokens) => {
          const plan = planCompaction(messages, { limit, target, summaryTokens });
          if (!plan) return;
          const cost = messages.map((m) => messageTokens(m));
          const tailFrom = (c: number) => cost.slice(c).reduce((a, b) => a + b, 0);
          const afterAt = (c: number) =>
            plan.used - cost.slice(plan.from, c).reduce((a, b) => a + b, 0) + summaryTokens;
          const users = messages.flatMap((m, i) => (m.role === "user" && i > plan.from ? [i] : []));
          expect(messages[plan.through]?.role).toBe("user");
          expect(plan.after).toBe(afterAt(plan.through));
          const meets = (c: number) => tailFrom(c) <= 0.35 * limit && afterAt(c) <= target * limit;
          const first = users.find(meets);
          expect(plan.through).toBe(first ?? users.at(-1));
        },
      ),
      propertyRuns(300),
    );
  });
});
