import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LedgerError } from "./errors.js";
import type { MessageLike } from "./messages.js";
import { planCompaction } from "./plan-compaction.js";
import { applyCompaction, compactTranscript, type Fold, runCompaction } from "./run-compaction.js";
import { contextChars, messageTokens, requestTokens } from "./tokens.js";

const call = (id: string): MessageLike => ({
  role: "assistant",
  content: "",
  tool_calls: [{ id, type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } }],
});

/** Whether an endpoint would take the transcript: every tool message answers a call made before it. */
function everyResultHasItsCall(messages: readonly MessageLike[]): boolean {
  const called = new Set<string>();
  for (const message of messages) {
    for (const c of message.tool_calls ?? []) if (typeof c.id === "string") called.add(c.id);
    if (message.role === "tool" && !called.has(message.tool_call_id as string)) return false;
  }
  return true;
}

// R67L-1: a user message delivered between a call and its answer (a host's interjection) is no
// cut. planCompaction never proposes one; a fold or plan a host stored or made itself must not
// make one either, or the folded transcript opens on a tool result whose call was folded away.
describe("R67L-1: a fold never keeps a tool result whose call it folded away", () => {
  const interjected: MessageLike[] = [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Read a.txt." },
    call("c1"),
    { role: "user", content: "Also, hurry." },
    { role: "tool", tool_call_id: "c1", content: "x".repeat(2000) },
    { role: "assistant", content: "Done." },
    { role: "user", content: "Thanks. Next?" },
  ];

  it("applyCompaction refuses a fold whose through splits a call from its answer", () => {
    const fold: Fold = { summary: "They asked to read a.txt.", through: 3, at: 0 };
    expect(() => applyCompaction(interjected, fold)).toThrow(LedgerError);
    expect(() => applyCompaction(interjected, fold)).toThrow(/index 3.*tool result.*call/);
    let caught: unknown;
    try {
      applyCompaction(interjected, fold);
    } catch (error) {
      caught = error;
    }
    expect(LedgerError.isInstance(caught) && caught.code).toBe("invalid-option");
  });

  it("runCompaction refuses such a plan before the summariser runs", async () => {
    let ran = false;
    const plan = {
      from: 1,
      through: 3,
      limit: 100,
      used: 90,
      folded: 1,
      kept: 1,
      after: 1,
      summaryTokens: 1,
    };
    await expect(
      runCompaction(interjected, plan, () => {
        ran = true;
        return "s";
      }),
    ).rejects.toThrow(LedgerError);
    expect(ran).toBe(false);
    await expect(compactTranscript(interjected, plan, () => "s")).rejects.toThrow(/tool result/);
  });

  it("still takes the user message after the answer, and planCompaction's own cuts", () => {
    const out = applyCompaction(interjected, { summary: "s", through: 6, at: 0 });
    expect(out.map((m) => m.role)).toEqual(["system", "system", "user"]);
    const plan = planCompaction(interjected, { limit: 600, used: 590, keepRatio: 0.1 });
    expect(plan?.through).toBe(6);
  });

  it("property: every fold applyCompaction accepts leaves every tool result with its call", () => {
    const step = fc.oneof(
      fc.constant("question"),
      fc.constant("answer"),
      fc.integer({ min: 1, max: 3 }).map((n) => `calls:${n}`),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 14 }), fc.nat(), fc.boolean(), (steps, pick, interject) => {
        const messages: MessageLike[] = [{ role: "system", content: "s" }];
        let id = 0;
        for (const kind of steps) {
          if (kind === "question") messages.push({ role: "user", content: "q" });
          else if (kind === "answer") messages.push({ role: "assistant", content: "a" });
          else {
            const ids = Array.from({ length: Number(kind.slice(6)) }, () => `c${id++}`);
            messages.push({
              role: "assistant",
              tool_calls: ids.map((i) => ({
                id: i,
                type: "function",
                function: { name: "f", arguments: "{}" },
              })),
            });
            ids.forEach((i, k) => {
              if (interject && k === 0) messages.push({ role: "user", content: "meanwhile" });
              messages.push({ role: "tool", tool_call_id: i, content: "r" });
            });
          }
        }
        const through = pick % (messages.length + 1);
        let out: MessageLike[] | undefined;
        let caught: unknown;
        try {
          out = applyCompaction(messages, { summary: "s", through, at: 0 });
        } catch (error) {
          caught = error;
        }
        // Refused with the typed error, or accepted with every tool result still after its call.
        expect(out === undefined ? LedgerError.isInstance(caught) : everyResultHasItsCall(out)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

// R67L-2: characters the request sends that the estimate did not count let it overflow the window.
describe("R67L-2: the estimate counts a refusal part and arguments written as an object", () => {
  it("counts an assistant refusal part, as the openai SDK writes one", () => {
    const refusal = "I can't help with that. ".repeat(100);
    const message = { role: "assistant", content: [{ type: "refusal", refusal }] } as unknown as MessageLike;
    expect(messageTokens(message)).toBe(Math.ceil(refusal.length / 4));
    expect(contextChars({ messages: [message] }).history).toBe(refusal.length);
  });

  it("counts tool-call arguments a host stored as an object by their JSON", () => {
    const args = { path: "x".repeat(4000) };
    const message = {
      role: "assistant",
      tool_calls: [{ id: "c1", type: "function", function: { name: "write", arguments: args } }],
    } as unknown as MessageLike;
    const chars = "write".length + JSON.stringify(args).length;
    expect(messageTokens(message)).toBe(Math.ceil(chars / 4));
    expect(requestTokens({ messages: [message] })).toBe(Math.ceil(chars / 4));
  });

  it("still throws LedgerError, never a raw TypeError, for arguments JSON cannot write", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const message = {
      role: "assistant",
      tool_calls: [{ id: "c1", function: { name: "f", arguments: cyclic } }],
    } as unknown as MessageLike;
    expect(() => messageTokens(message)).toThrow(LedgerError);
    const big = { role: "assistant", tool_calls: [{ function: { name: "f", arguments: { n: 10n } } }] };
    expect(() => requestTokens({ messages: [big as unknown as MessageLike] })).toThrow(LedgerError);
  });
});
