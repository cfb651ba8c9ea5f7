// What the Agent and the Session add on top of the loop: the same scripted runs (three tool steps
// and an answer, over HTTP to the testkit) through runAgentLoop directly (the baseline), through an
// Agent, and through a Session writing its JSONL file. Reports each as a ratio of the baseline
// measured in the same run.  node --import tsx bench/overhead.bench.ts
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runAgentLoop } from "@loopwright/loop";
import { type Reply, startServer } from "@loopwright/testkit";
import { Agent, createSession } from "../src/index.js";

const RUNS = Number(process.env.RUNS ?? 40);
const script = (): Reply[] => [
  { toolCalls: [{ id: "a", name: "add", arguments: '{"n":1}' }] },
  { toolCalls: [{ id: "b", name: "add", arguments: '{"n":2}' }] },
  { toolCalls: [{ id: "c", name: "add", arguments: '{"n":3}' }] },
  { content: "The sum is 6." },
];
const server = await startServer({ replies: (_request, index) => script()[index % 4]! });
const config = { baseUrl: server.baseUrl, model: "sim" };
const tool = {
  name: "add",
  description: "Adds",
  parameters: { type: "object", properties: { n: { type: "number" } } },
  execute: ({ n }: Record<string, unknown>) => n,
};
const dir = mkdtempSync(join(tmpdir(), "agent-bench-"));

// Interleaved, so the load of a shared machine falls on all three alike.
const variants: [string, (i: number) => Promise<unknown>][] = [
  [
    "runAgentLoop (baseline)",
    () =>
      runAgentLoop({
        config,
        messages: [{ role: "user", content: "Add them" }],
        tools: [
          { type: "function", function: { name: "add", description: "Adds", parameters: tool.parameters } },
        ],
        dispatch: ({ args }) => args.n,
      }),
  ],
  ["Agent", () => new Agent({ config, tools: [tool] }).prompt("Add them")],
  [
    "Session with JSONL file",
    async (i) =>
      (await createSession({ config, tools: [tool], sessionDir: dir, sessionId: `b${i}` })).prompt(
        "Add them",
      ),
  ],
];
const totals = variants.map(() => 0);
for (let i = -5; i < RUNS; i++) {
  for (const [at, [, once]] of variants.entries()) {
    const started = performance.now();
    await once(i + 5);
    if (i >= 0) totals[at]! += performance.now() - started;
  }
}
const [base = 1, agent = 0, session = 0] = totals.map((t) => t / RUNS);
for (const [at, [label]] of variants.entries()) {
  console.log(`${label.padEnd(28)} ${(totals[at]! / RUNS).toFixed(2)} ms/run`);
}
console.log(`Agent / baseline:   ${(agent / base).toFixed(2)}x`);
console.log(`Session / baseline: ${(session / base).toFixed(2)}x`);
await server.close();
rmSync(dir, { recursive: true, force: true });
