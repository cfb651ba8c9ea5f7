// Review round r83 (ledger): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import type { MessageLike } from "./messages.js";
import { planCompaction } from "./plan-compaction.js";
import { pruneToolResults } from "./prune.js";
import { messageTokens } from "./tokens.js";

const polluted = Object.prototype as Record<string, unknown>;

/** Runs `body` with `fields` set on Object.prototype, taken off again in `finally`. */
function withPolluted<T>(fields: Record<string, unknown>, body: () => T): T {
  try {
    Object.assign(polluted, fields);
    return body();
  } finally {
    for (const field of Object.keys(fields)) delete polluted[field];
  }
}

describe("R83L-1: a tool call's and a content part's inner fields read through a polluted Object.prototype", () => {
  it("estimates: an inherited function, name or arguments is no call's, an inherited text no part's", () => {
    const long = "x".repeat(40_000);
    // A call some servers send without arguments (a tool that takes none), and one without a function.
    const noArguments: MessageLike = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "f" } }],
    } as unknown as MessageLike;
    const noFunction = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function" }],
    } as unknown as MessageLike;
    const image = {
      role: "user",
      content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AA" } }],
    } as unknown as MessageLike;
    const clean = [messageTokens(noArguments), messageTokens(noFunction), messageTokens(image)];
    expect(clean).toEqual([1, 0, 765]);
    // Before: 10,001, 20,000 and 10,765 tokens.
    expect(
      withPolluted({ arguments: long, function: { name: long, arguments: long }, text: long }, () => [
        messageTokens(noArguments),
        messageTokens(noFunction),
        messageTokens(image),
      ]),
    ).toEqual(clean);
  });

  it("folds: an inherited tool_calls does not hide a tool answer, so a cut never splits a call from it", () => {
    const messages = [
      { role: "system", content: "Be terse." },
      { role: "user", content: "q".repeat(4_000) },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      // A message steered in while the call ran: a cut here would keep the answer without its call.
      { role: "user", content: "Also check the logs." },
      { role: "tool", tool_call_id: "c1", content: "ok" },
      { role: "assistant", content: "Done." },
      { role: "user", content: "Next?" },
    ] as MessageLike[];
    const options = { limit: 1_200, summaryTokens: 10 };
    const clean = planCompaction(messages, options);
    expect(clean?.through).toBe(6);
    // Before: every message read as a caller, the tool message was none's answer and the cut fell at 3.
    const dirty = withPolluted({ tool_calls: [{ id: "zz" }] }, () => planCompaction(messages, options));
    expect(dirty?.through).toBe(6);
  });

  it("pruning: an inherited name does not make a tool result a definition, an inherited text no part's", () => {
    const messages = [
      { role: "tool", tool_call_id: "c1", content: `{"parameters":{"q":"${"x".repeat(1_000)}"}}` },
      {
        role: "tool",
        tool_call_id: "c2",
        content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AA" } }],
      },
    ] as MessageLike[];
    const pruned = withPolluted({ name: "polluted", parameters: {}, text: "x".repeat(500) }, () =>
      pruneToolResults(messages, { keepLast: 0 }),
    );
    // Before: the first was kept whole as a tool definition, the second's stub counted 500 chars.
    expect(pruned.map((message) => message.content)).toEqual([
      "[result cleared, 1,023 chars]",
      "[result cleared, 0 chars, 1 media part]",
    ]);
  });
});
