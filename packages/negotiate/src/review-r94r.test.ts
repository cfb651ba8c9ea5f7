/**
 * Round 94 (review, l): the one-call-per-message rewrite for a chat template that takes one tool
 * call per assistant message (`parallelCalls: false`) reads each tool result once per request.
 */
import { describe, expect, it } from "vitest";
import { createCapabilityStore } from "./capabilities.js";
import { buildBody } from "./request-body.js";
import { withTemplateRoles } from "./template-roles.js";

/** A step of `n` calls answered in reverse order, each result counting the reads of its id. */
function wideStep(n: number): { messages: unknown[]; reads: () => number } {
  let reads = 0;
  const calls = Array.from({ length: n }, (_, i) => ({
    id: `call_${i}`,
    type: "function",
    function: { name: "add", arguments: "{}" },
  }));
  const results = calls.map((call) => {
    const result = { role: "tool", content: `r${call.id}` } as Record<string, unknown>;
    Object.defineProperty(result, "tool_call_id", {
      enumerable: true,
      get: () => {
        reads++;
        return call.id;
      },
    });
    return result;
  });
  const messages = [
    { role: "user", content: "Go." },
    { role: "assistant", content: "All of them.", tool_calls: calls },
    ...results.reverse(),
  ];
  return { messages, reads: () => reads };
}

describe("one tool call per assistant message, for a step of many calls", () => {
  it("reads each result's id once, not once per call: linear in the step, on every request", () => {
    // Before: every call scanned every result of the step, n² reads (8,000 calls: seconds a
    // request, and the rewrite runs for every request of the run).
    const { messages, reads } = wideStep(400);
    const out = withTemplateRoles(messages, { parallelCalls: false } as never);
    expect(reads()).toBeLessThanOrEqual(2 * 400);
    // Each call still goes with its own result right after it.
    expect(out).toHaveLength(1 + 2 * 400);
    for (let i = 0; i < 400; i++) {
      const call = out[1 + 2 * i] as { tool_calls: { id: string }[] };
      const result = out[2 + 2 * i] as { tool_call_id: string };
      expect(call.tool_calls).toHaveLength(1);
      expect(result.tool_call_id).toBe(call.tool_calls[0]?.id);
    }
  });

  it("buildBody for a latched model: the same, with the system message folded and a user message bridged too", () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor("http://127.0.0.1:9/v1");
    const model = store.modelCapabilitiesFor(supports, "llama-3.1-8b");
    Object.assign(model, { parallelCalls: false, systemRole: false, userAfterTool: false });
    const { messages, reads } = wideStep(300);
    const body = buildBody({ model: "llama-3.1-8b" }, supports, model, [
      { role: "system", content: "Be brief." },
      ...messages,
      { role: "user", content: "And?" },
    ] as never[]);
    // The JSON-safety pass reads each id too: a few reads each, never one per call.
    expect(reads()).toBeLessThanOrEqual(4 * 300);
    const sent = body.messages as { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[];
    expect(sent[0]).toEqual({ role: "user", content: "Be brief.\n\nGo." });
    for (let i = 0; i < 300; i++) {
      expect(sent[2 + 2 * i]?.tool_call_id).toBe(sent[1 + 2 * i]?.tool_calls?.[0]?.id);
    }
    expect(sent.slice(-2)).toEqual([
      { role: "assistant", content: "(Tool results read.)" },
      { role: "user", content: "And?" },
    ]);
  });
});
