import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./index.js";
import { wireMessages } from "./tool-names.js";

/**
 * How many lookups (`Set.prototype.has`, `Map.prototype.get`) the synchronous `work` makes: a count
 * does not move with a loaded machine's scheduling, where a ratio of two timings moved 3 to 12
 * times. Each method is put back as it was, whatever `work` throws.
 */
function lookups(work: () => void): number {
  let count = 0;
  const has = Set.prototype.has;
  const get = Map.prototype.get;
  Set.prototype.has = function (this: Set<unknown>, value: unknown) {
    count++;
    return has.call(this, value);
  };
  Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
    count++;
    return get.call(this, key);
  };
  try {
    work();
  } finally {
    Set.prototype.has = has;
    Map.prototype.get = get;
  }
  return count;
}

// Review round r80: the cost of keeping tool-call ids distinct across a long transcript.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("tool-call ids reused across many messages", () => {
  /** A transcript of `steps` tool steps, the call of step i named `id(i)`, then a question. */
  const transcript = (steps: number, id: (step: number) => string): ChatMessage[] => {
    const given: ChatMessage[] = [{ role: "user", content: "q" }];
    for (let i = 0; i < steps; i++) {
      given.push({
        role: "assistant",
        content: null,
        tool_calls: [{ id: id(i), type: "function", function: { name: "t", arguments: "{}" } }],
      });
      given.push({ role: "tool", tool_call_id: id(i), content: `r${i}` });
    }
    given.push({ role: "user", content: "and now?" });
    return given;
  };
  /** Runs the loop once over `given`; the request it sent. */
  const send = async (given: ChatMessage[]): Promise<ChatMessage[]> => {
    const at = server?.chatRequests.length ?? 0;
    await createRuntime().runAgentLoop({
      config: { baseUrl: (server as TestServer).baseUrl, model: "sim" },
      messages: given,
      tools: [{ type: "function", function: { name: "t", parameters: { type: "object" } } }],
      dispatch: () => "R",
    });
    return (server?.chatRequests[at]?.body as { messages: ChatMessage[] } | undefined)?.messages ?? [];
  };

  it("6,000 steps all calling call_0 are sent with distinct ids in linear time", async () => {
    server = await startServer({ replies: () => ({ content: "done" }) });
    const steps = 6_000;
    const reused = transcript(steps, () => "call_0");
    const sent = await send(reused);
    const ids = sent.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
    expect(ids).toHaveLength(steps);
    expect(new Set(ids).size).toBe(steps);
    expect(ids.slice(0, 3)).toEqual(["call_0", "call_0_2", "call_0_3"]);
    // Each answer follows its call under the call's id.
    const answers = sent.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : []));
    expect(answers).toEqual(ids);
    // The cost, counted rather than timed (a ratio of two timings against the same transcript with
    // ids already distinct read 1.0 to 1.4, and once 12, beside two busy loops): the lookups that
    // make the ids distinct, for these steps and for twice as many. Each repeat searched the
    // suffixes from _2 up before (10,000 steps took 6.6 s a request, r80a profiled it): a lookup per
    // earlier step, 18 million here, four times as many for twice the steps. Now a few per step.
    const counted = (n: number) =>
      lookups(() =>
        wireMessages(
          transcript(n, () => "call_0"),
          new Map(),
        ),
      );
    const [once, twice] = [counted(steps), counted(2 * steps)];
    expect(once).toBeLessThan(10 * steps);
    expect(twice / once).toBeLessThan(3);
  }, 120_000);
});
