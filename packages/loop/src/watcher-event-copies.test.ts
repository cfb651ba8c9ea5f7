import type { RunEvent } from "@loopwright/events";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";
import { ADD_TOOL } from "./test-support/transcript.js";

// An onEvent watcher is handed events the loop also keeps: runMetrics reads the kept ones for the
// result's `metrics`, and the usage event's ledger entries are the run's own. A watcher that
// adjusts what it is shown (a host hiding a failure, relabelling a tool) must not change what the
// run reports.
const replies = () => [
  {
    toolCalls: [{ id: "c1", name: "add", arguments: '{"a":1,"b":2}' }],
    usage: { prompt_tokens: 100, completion_tokens: 5 },
  },
  { content: "3", usage: { prompt_tokens: 120, completion_tokens: 2 } },
];

function rewrite(event: RunEvent): void {
  if (event.kind === "tool-result") event.ok = true;
  if (event.kind === "tool-call") event.name = "shown";
  if (event.kind === "usage") {
    event.turn.finishReason = "length";
    for (const entry of event.ledger ?? []) (entry as { prompt: number }).prompt = 0;
  }
}

/** The metrics without the fields measured in milliseconds, which differ from run to run. */
function untimed(metrics: object): object {
  const copy: Record<string, unknown> = { ...metrics };
  for (const key of ["meanFirstTokenMs", "slowestTurn", "toolMs"]) delete copy[key];
  return copy;
}

describe("an onEvent watcher that rewrites the events it is handed", () => {
  it("does not change the run's metrics or ledger", async () => {
    const server = await startServer({ replies: replies() });
    try {
      const run = (onEvent?: (event: RunEvent) => void) =>
        createRuntime().runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "m" },
          messages: [{ role: "user", content: "Add 1 and 2." }],
          tools: [ADD_TOOL],
          dispatch: () => {
            throw new Error("no adding today");
          },
          ...(onEvent ? { onEvent } : {}),
        });
      const plain = await run();
      server.enqueue(...replies());
      const rewritten = await run(rewrite);
      expect(plain.metrics.toolErrors).toBe(1);
      expect(plain.ledger.length).toBeGreaterThan(0);
      expect(untimed(rewritten.metrics)).toEqual(untimed(plain.metrics));
      expect(rewritten.ledger).toEqual(plain.ledger);
    } finally {
      await server.close();
    }
  });
});
