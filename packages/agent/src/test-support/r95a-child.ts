// Child process for r95a's kill-between-steps test: a session whose model asks for `pay` (a side
// effect, logged to a file the parent reads); the model's next turn never comes, and the parent
// kills this process while the session waits for it.
import { appendFileSync } from "node:fs";
import { createSession, defineTool } from "../index.js";

const [dir, id, baseUrl, log] = process.argv.slice(2) as [string, string, string, string];
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
  config: { baseUrl, model: "sim", maxRetries: 0 },
  tools: [pay],
  sessionDir: dir,
  sessionId: id,
});
await session.prompt("Pay invoice 9.");
