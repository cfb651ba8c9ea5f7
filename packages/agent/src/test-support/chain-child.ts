// Child process for the chained-prompt close test (r68): a host that starts its next prompt from
// the `run_metrics` event that tells the previous one ended, then closes the session while that
// prompt runs. Prints "closed <ms> <running>" once close() resolves; a close that never resolves
// (the event loop starved) is the parent's timeout.
import { createSession, defineTool } from "../index.js";

const [dir, baseUrl] = process.argv.slice(2) as [string, string];
const wait = defineTool({
  name: "wait",
  description: "Takes its time",
  parameters: { type: "object", properties: {} },
  execute: async () => {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return "waited";
  },
});
const session = await createSession({
  config: { baseUrl, model: "sim" },
  tools: [wait],
  sessionDir: dir,
  sessionId: "chain",
});
// A host's own bookkeeping at each run's end, on a timer (a save to its store).
session.agent.subscribe(async (event) => {
  if (event.type === "agent_end") await new Promise((resolve) => setTimeout(resolve, 200));
});
let second: Promise<unknown> | undefined;
session.onEvent((event) => {
  if (event.type === "run_metrics" && !event.running && second === undefined)
    second = session.prompt("Second prompt");
});
await session.prompt("First prompt");
// The second prompt's tool is running.
await new Promise((resolve) => setTimeout(resolve, 300));
const started = Date.now();
await session.close();
process.stdout.write(`closed ${Date.now() - started} ${session.running}\n`);
await second;
process.exit(0);
