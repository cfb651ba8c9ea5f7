// Child process for the mid-step crash test: a session whose model asks, in one step, for `slow`
// (runs until the parent kills the process) and `pay` (a side effect, done at once, logged to a
// file the parent reads). The parent kills this process while `slow` runs.
import { appendFileSync } from "node:fs";
import { createSession, defineTool } from "../index.js";

const [dir, id, baseUrl, log] = process.argv.slice(2) as [string, string, string, string];
const slow = defineTool({
  name: "slow",
  description: "Takes its time",
  parameters: { type: "object", properties: {} },
  execute: async () => {
    appendFileSync(log, "slow started\n");
    await new Promise((resolve) => setTimeout(resolve, 120_000));
    return "slow done";
  },
});
const pay = defineTool({
  name: "pay",
  description: "Pays an invoice",
  parameters: { type: "object", properties: { invoice: { type: "number" } } },
  execute: async ({ invoice }) => {
    appendFileSync(log, `paid invoice ${String(invoice)}\n`);
    return `Paid invoice ${String(invoice)}.`;
  },
});
const session = await createSession({
  config: { baseUrl, model: "sim" },
  tools: [slow, pay],
  sessionDir: dir,
  sessionId: id,
});
await session.prompt("Pay invoice 7.");
