// A second loopwright instance in its own process, driven over IPC by the tests: it runs an agent
// loop on Redis-backed stores, emitting the run's events into the Redis bus.
import { redisHost } from "./host.js";

interface RunCommand {
  type: "run";
  url: string;
  prefix: string;
  baseUrl: string;
  runId: string;
  /** How long each tool call takes, so a run lasts long enough to be interrupted. */
  toolMs: number;
  /**
   * The tool call (from 1) that waits for a `{ type: "go" }` message before it answers, once
   * every event emitted so far is written to Redis and `{ type: "holding" }` was sent: a test
   * acts on the run (restarts Redis) at that point whatever the machine's load, not after a time.
   */
  holdAt?: number;
}

const send = (message: unknown) => process.send?.(message);

process.on("message", async (message: RunCommand | { type: "exit" } | { type: "go" }) => {
  if (message.type === "exit") process.exit(0);
  if (message.type === "go") return;
  const errors: string[] = [];
  const runtime = await redisHost({
    url: message.url,
    prefix: message.prefix,
    onError: (error) => errors.push(String(error)),
  });
  try {
    const { runId } = message;
    let calls = 0;
    const result = await runtime.runAgentLoop({
      config: { baseUrl: message.baseUrl, model: "sim" },
      messages: [{ role: "user", content: "work" }],
      tools: [
        { type: "function", function: { name: "step", parameters: { type: "object", properties: {} } } },
      ],
      dispatch: async () => {
        await new Promise((resolve) => setTimeout(resolve, message.toolMs));
        if (++calls === message.holdAt) {
          await runtime.bus.flushed();
          const go = new Promise((resolve) => process.once("message", resolve));
          send({ type: "holding" });
          await go;
        }
        return "ok";
      },
      onEvent: (event) => runtime.bus.emit(runId, event),
    });
    runtime.bus.emit(runId, { kind: "done" });
    await runtime.bus.flushed();
    await runtime.capabilities.sync();
    send({
      type: "ran",
      emitted: runtime.bus.history(runId).length,
      steps: result.steps,
      usageInStream: runtime.capabilities.capabilitiesFor(message.baseUrl).usageInStream,
    });
  } catch (error) {
    send({ type: "failed", message: String(error), stack: (error as Error).stack });
  } finally {
    await runtime.close();
  }
});
send({ type: "ready" });
