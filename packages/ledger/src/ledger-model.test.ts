import { countTokens, renderPrompt } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { createCalibration } from "./calibration.js";
import { estimateFrom, type LedgerEntry, rebaseLedger, recordRequest } from "./ledger.js";
import { type MessageLike, messageEstimate } from "./messages.js";
import { planCompaction, SUMMARY_LEAD } from "./plan-compaction.js";
import { carriesDefinitions, pruneToolResults } from "./prune.js";
import { applyCompaction } from "./run-compaction.js";
import { refusal } from "./test-support/refusal.js";
import { contextChars } from "./tokens.js";

// A model of a long run as the ledger sees it: random transcripts (every role, calls with and
// without answers' ids, images, huge and empty contents, lone surrogates, reasoning), the requests
// a loop sends at each boundary, the readings a server reports for them (the testkit's token rule,
// or an absurd one) and random windows. The properties are what a run relies on to stay inside its
// window and its prompt cache. R90_LEDGER_RUNS / R90_LEDGER_SEED replay or widen a run.

const RUNS = Number(process.env.R90_LEDGER_RUNS ?? 60);
const SEED = process.env.R90_LEDGER_SEED === undefined ? undefined : Number(process.env.R90_LEDGER_SEED);
const params = propertyRuns(RUNS, SEED !== undefined ? { seed: SEED } : {});

const TOOLS = [
  {
    type: "function",
    function: {
      name: "read",
      description: "Reads a page",
      parameters: { type: "object", properties: { path: { type: "string" } } },
    },
  },
];

/** Text as tools and users really send it, with the edge cases: empty, huge, a lone surrogate. */
const textArb = fc.oneof(
  { weight: 4, arbitrary: fc.lorem({ maxCount: 30 }) },
  { weight: 1, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: fc.constantFrom("\ud800", "a\udc00b", "😀\ud83d") },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => s.repeat(200)) },
  { weight: 1, arbitrary: fc.nat({ max: 9 }).map((d) => `${d}`.repeat(3000)) },
);

const IMAGE = { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } };
const DEFINITION = JSON.stringify({ name: "grep", parameters: { type: "object", properties: {} } });

const contentArb: fc.Arbitrary<MessageLike["content"]> = fc.oneof(
  { weight: 5, arbitrary: textArb },
  { weight: 1, arbitrary: textArb.map((text) => [{ type: "text", text }]) },
  { weight: 1, arbitrary: textArb.map((text) => [{ type: "text", text }, IMAGE]) },
);

const resultArb: fc.Arbitrary<MessageLike["content"]> = fc.oneof(
  { weight: 6, arbitrary: contentArb },
  { weight: 1, arbitrary: fc.constant(DEFINITION) },
);

interface Step {
  calls: number;
  ids: "unique" | "none";
  reasoning: string | undefined;
  results: MessageLike["content"][];
}

const stepArb: fc.Arbitrary<Step> = fc
  .record({
    calls: fc.integer({ min: 0, max: 3 }),
    ids: fc.constantFrom("unique" as const, "none" as const),
    reasoning: fc.option(textArb, { nil: undefined }),
    results: fc.array(resultArb, { minLength: 3, maxLength: 3 }),
  })
  .map((s) => ({ ...s, results: s.results.slice(0, s.calls) }));

/** A transcript, and the boundaries a loop sent it at: after each question and each step's results. */
interface Run {
  messages: MessageLike[];
  boundaries: number[];
}

const runArb: fc.Arbitrary<Run> = fc
  .record({
    systems: fc.integer({ min: 0, max: 2 }),
    questions: fc.array(
      fc.record({
        question: contentArb,
        steps: fc.array(stepArb, { maxLength: 4 }),
        answer: textArb,
        reasoning: fc.option(textArb, { nil: undefined }),
      }),
      { minLength: 1, maxLength: 8 },
    ),
  })
  .map(({ systems, questions }) => {
    const messages: MessageLike[] = [];
    const boundaries: number[] = [];
    for (let s = 0; s < systems; s++) messages.push({ role: "system", content: `Rules ${s}.` });
    let n = 0;
    for (const { question, steps, answer, reasoning } of questions) {
      messages.push({ role: "user", content: question });
      boundaries.push(messages.length);
      for (const step of steps) {
        if (step.calls === 0) continue;
        const ids = step.results.map(() => (step.ids === "unique" ? `c${n++}` : undefined));
        messages.push({
          role: "assistant",
          content: null,
          ...(step.reasoning !== undefined ? { reasoning_content: step.reasoning } : {}),
          tool_calls: ids.map((id) => ({
            ...(id !== undefined ? { id } : {}),
            type: "function",
            function: { name: "read", arguments: '{"path":"a"}' },
          })),
        });
        step.results.forEach((content, k) => {
          const id = ids[k];
          messages.push({ role: "tool", ...(id !== undefined ? { tool_call_id: id } : {}), content });
        });
        boundaries.push(messages.length);
      }
      messages.push({
        role: "assistant",
        content: answer,
        ...(reasoning !== undefined ? { reasoning_content: reasoning } : {}),
      });
    }
    return { messages, boundaries };
  });

/** A server's reading of a request: the testkit's token rule, or something absurd. */
type Reading = { kind: "true" } | { kind: "absurd"; value: number } | { kind: "net-of-cache" };
const readingArb: fc.Arbitrary<Reading> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Reading>({ kind: "true" }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1, 3, 1e300)
      .map((value): Reading => ({ kind: "absurd", value })),
  },
  { weight: 1, arbitrary: fc.constant<Reading>({ kind: "net-of-cache" }) },
);

const trueTokens = (messages: readonly MessageLike[]) =>
  countTokens(renderPrompt({ messages, tools: TOOLS }));

/** Sends the run at its boundaries, recording each reading as a loop does; the ledger and the last honest reading. */
function sendRun(run: Run, readings: readonly Reading[]) {
  let ledger: LedgerEntry[] = [];
  let previous: { messages: MessageLike[]; tools: typeof TOOLS } | undefined;
  let lastTrue: { through: number; prompt: number } | undefined;
  let lastPrompt = 0;
  run.boundaries.forEach((end, k) => {
    const messages = run.messages.slice(0, end);
    const real = trueTokens(messages);
    const reading = readings[k % readings.length] ?? { kind: "true" };
    const cached = Math.min(real, lastPrompt);
    const prompt = reading.kind === "true" ? real : reading.kind === "absurd" ? reading.value : real - cached;
    const next = { messages, tools: TOOLS, prompt, cached: reading.kind === "net-of-cache" ? cached : 0 };
    ledger = recordRequest(ledger, previous, next);
    previous = { messages, tools: TOOLS };
    lastPrompt = real;
    if (reading.kind === "true") lastTrue = { through: end - 1, prompt: real };
  });
  return { ledger, lastTrue };
}

const leading = (messages: readonly MessageLike[]) => {
  let k = 0;
  while (k < messages.length && messages[k]?.role === "system") k++;
  return k;
};

describe("the ledger model: a long run's plans, prunes, readings and rebases", () => {
  it("the generator's transcripts are accepted by an endpoint", () => {
    fc.assert(
      fc.property(runArb, (run) => refusal(run.messages) === undefined),
      params,
    );
  });

  it(
    "a plan never splits a call from its answer, its arithmetic holds, and the kept part is sent byte for byte",
    () => {
      let planned = 0;
      fc.assert(
        fc.property(
          runArb,
          fc.array(readingArb, { minLength: 1, maxLength: 6 }),
          fc.integer({ min: 50, max: 40_000 }),
          fc.option(fc.double({ min: 0.05, max: 1, noNaN: true }), { nil: undefined }),
          fc.boolean(),
          (run, readings, limit, target, useReading) => {
            const { messages } = run;
            const { ledger, lastTrue } = sendRun(run, readings);
            const estimate = estimateFrom(ledger, messages);
            const estimates = messages.map((m, i) => estimate(m, i));
            // Whatever the readings were, every estimate is one planCompaction takes.
            for (const e of estimates) expect(e >= 0 && e <= Number.MAX_SAFE_INTEGER).toBe(true);
            // The last honest reading measured the prefix it was sent with; the plan's `used` is never below it.
            const used = useReading ? lastTrue?.prompt : undefined;
            const plan = planCompaction(messages, {
              limit,
              ...(used !== undefined ? { used } : {}),
              ...(target !== undefined ? { target } : {}),
              estimate,
            });
            if (plan === undefined) return;
            planned++;
            if (used !== undefined) expect(plan.used).toBeGreaterThanOrEqual(used);
            const sum = (a: number, b: number) => estimates.slice(a, b).reduce((x, y) => x + y, 0);
            expect(plan.folded).toBeCloseTo(sum(plan.from, plan.through), 6);
            expect(plan.kept).toBeCloseTo(sum(plan.through, messages.length), 6);
            expect(plan.after).toBeCloseTo(plan.used - plan.folded + plan.summaryTokens, 6);
            expect(plan.from).toBeGreaterThanOrEqual(leading(messages));
            expect(messages[plan.through]?.role).toBe("user");
            // Fits as documented: a kept tail within keepRatio, or (no target) a forced-deep fold of a
            // request that no longer fits, or (target) the target met or the last question reached.
            const users = messages.flatMap((m, i) => (m.role === "user" && i > plan.from ? [i] : []));
            const last = users.at(-1);
            if (target === undefined) {
              const withinKeep = plan.kept <= 0.35 * limit;
              expect(withinKeep || (plan.used >= limit && plan.through === last)).toBe(true);
            } else {
              expect(plan.after <= target * limit + 1e-6 || plan.through === last).toBe(true);
            }
            const summary = "notes \ud800 end";
            const out = applyCompaction(messages, { summary, through: plan.through, at: 0 });
            expect(refusal(out)).toBeUndefined();
            // Cache-stable: the kept messages are the ones sent, the same objects and the same bytes.
            const lead = leading(messages);
            const kept = out.slice(out.length - (messages.length - plan.through));
            kept.forEach((m, k) => {
              expect(m).toBe(messages[plan.through + k]);
            });
            expect(JSON.stringify(kept)).toBe(JSON.stringify(messages.slice(plan.through)));
            const systems = out.slice(0, out.length - kept.length - 1);
            expect(systems.every((m, k) => m === messages.slice(0, lead)[k] || systems.length < lead)).toBe(
              true,
            );
            const folded = out[out.length - kept.length - 1] as MessageLike;
            expect(typeof folded.content === "string" && folded.content.startsWith(SUMMARY_LEAD)).toBe(true);
            expect((folded.content as string).includes("\ud800")).toBe(false);
          },
        ),
        params,
      );
      expect(planned).toBeGreaterThan(RUNS / 10);
    },
    propertyTimeout(120_000),
  );

  it("pruning never clears a definitions result nor the newest keepLast, and a second prune keeps the bytes", () => {
    fc.assert(
      fc.property(runArb, fc.nat({ max: 6 }), fc.nat({ max: 400 }), (run, keepLast, maxChars) => {
        const { messages } = run;
        const once = pruneToolResults(messages, { keepLast, maxChars });
        expect(once).toHaveLength(messages.length);
        expect(refusal(once)).toBeUndefined();
        const tools = messages.flatMap((m, i) => (m.role === "tool" ? [i] : []));
        const newest = new Set(tools.slice(Math.max(0, tools.length - keepLast)));
        messages.forEach((m, i) => {
          if (once[i] === m) return;
          expect(m.role).toBe("tool");
          expect(newest.has(i)).toBe(false);
          expect(carriesDefinitions(m)).toBe(false);
          expect(once[i]?.tool_call_id).toBe(m.tool_call_id);
        });
        const twice = pruneToolResults(once, { keepLast, maxChars });
        expect(JSON.stringify(twice)).toBe(JSON.stringify(once));
        twice.forEach((m, i) => {
          expect(m).toBe(once[i]);
        });
      }),
      params,
    );
  });

  it("calibration answers the highest of the last four readings it took, and refuses the absurd ones", () => {
    const bodyArb = fc.record({
      text: fc.string({ minLength: 1, maxLength: 400 }),
      image: fc.boolean(),
      withTools: fc.boolean(),
    });
    const promptArb = fc.oneof(
      fc.integer({ min: 1, max: 2000 }),
      fc.constantFrom(0, -5, Number.NaN, Number.POSITIVE_INFINITY, 0.5, 1e-9),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(bodyArb, promptArb), { maxLength: 20 }), (steps) => {
        const store = createCalibration();
        const taken: number[] = [];
        for (const [{ text, image, withTools }, prompt] of steps) {
          const body = {
            messages: [{ role: "user", content: image ? [{ type: "text", text }, IMAGE] : text }],
            ...(withTools ? { tools: TOOLS } : {}),
          };
          const before = store.charsPerTokenFor("e", "m");
          const answer = store.calibrate("e", "m", body, prompt);
          const ratio = contextChars(body).total / prompt;
          const absurd = image || !(prompt > 0) || !Number.isFinite(prompt) || !(ratio >= 1 && ratio <= 8);
          if (absurd) {
            expect(answer).toBeUndefined();
            expect(store.charsPerTokenFor("e", "m")).toBe(before);
            continue;
          }
          taken.push(ratio);
          const expected = Math.max(...taken.slice(-4));
          expect(answer).toBe(expected);
          expect(store.charsPerTokenFor("e", "m")).toBe(expected);
          expect(expected).toBeGreaterThanOrEqual(1);
          expect(expected).toBeLessThanOrEqual(8);
        }
        if (taken.length === 0) expect(store.charsPerTokenFor("e", "m")).toBe(4);
      }),
      params,
    );
  });

  it(
    "rebaseLedger after a fold agrees with a fresh ledger of the folded transcript",
    () => {
      let compared = 0;
      fc.assert(
        // Honest readings: an absurd one is a different absurdity on the folded transcript, so two
        // ledgers built from absurd readings agree on nothing worth comparing.
        fc.property(runArb, (run) => {
          const { messages, boundaries } = run;
          const { ledger } = sendRun(run, [{ kind: "true" }]);
          const users = messages.flatMap((m, i) => (m.role === "user" && i > leading(messages) ? [i] : []));
          const through = users[0];
          if (through === undefined) return;
          const after = applyCompaction(messages, { summary: "notes", through, at: 0 });
          const rebased = rebaseLedger(ledger, messages, after);
          const shift = after.length - messages.length;
          // A fresh ledger: the requests at or past the cut sent again on the folded transcript, each
          // read as the folded request's own count.
          let fresh: LedgerEntry[] = [];
          let previous: { messages: MessageLike[]; tools: typeof TOOLS } | undefined;
          for (const end of boundaries) {
            if (end - 1 < through) continue;
            const folded = after.slice(0, end + shift);
            fresh = recordRequest(fresh, previous, {
              messages: folded,
              tools: TOOLS,
              prompt: trueTokens(folded),
            });
            previous = { messages: folded, tools: TOOLS };
          }
          // A reading near the floor recordRequest holds a prompt to (the body's text over 8) may be
          // taken for the longer body and not for the folded one: then the two ledgers group the
          // messages differently, and only the entries they share are compared.
          const first = rebased.findIndex((e) => e.through >= leading(after));
          const kept = rebased.slice(Math.max(0, first)).map((e) => e.through);
          if (first < 0 || kept.join() !== fresh.map((e) => e.through).join()) return;
          const a = estimateFrom(rebased, after);
          const b = estimateFrom(fresh, after);
          // Every message both measure, they measure alike; none is measured by the rebased ledger
          // across the fold (the summary and the system prompts are estimated).
          for (let i = 0; i < after.length; i++) {
            const m = after[i] as MessageLike;
            const plain = messageEstimate(m, 4);
            const x = a(m, i);
            const y = b(m, i);
            if (i <= leading(after) - 1) expect(x).toBe(plain);
            if (x !== plain && y !== plain) {
              compared++;
              expect(x).toBeCloseTo(y, 6);
            }
          }
          // Entries point at the same messages they did, in order, and only appended ones share an epoch.
          for (const entry of rebased) expect(entry.through).toBeLessThan(after.length);
        }),
        params,
      );
      expect(compared).toBeGreaterThan(0);
    },
    propertyTimeout(120_000),
  );
});
