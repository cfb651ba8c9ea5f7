/**
 * Review round r81: what the loop hands a tool call to listen to, and what a run's side costs tell
 * the host. Over HTTP against the testkit.
 */
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, failedRun, type SideUsage } from "./index.js";
import { isSummary, longHistory } from "./test-support/long-history.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function serve(options: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}

describe("thirty parallel tool calls with no time limit, each listening to its signal", () => {
  for (const toolTimeoutSeconds of [0, Number.POSITIVE_INFINITY]) {
    it(`hang no listener each on the run's signal (toolTimeoutSeconds ${toolTimeoutSeconds}), and a stop still ends every one`, async () => {
      const calls = Array.from({ length: 30 }, (_, i) => ({
        id: `c${i}`,
        name: "wait",
        arguments: JSON.stringify({ n: i }),
      }));
      const server = await serve({ replies: [{ toolCalls: calls }, { content: "never asked" }] });
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
      process.on("warning", onWarning);
      const run = new AbortController();
      const given: AbortSignal[] = [];
      let stopped = 0;
      try {
        const result = await createRuntime()
          .runAgentLoop({
            config: {
              baseUrl: server.baseUrl,
              model: "sim",
              maxRetries: 0,
              parallel: true,
              toolTimeoutSeconds,
            },
            messages: [{ role: "user", content: "go" }],
            tools: [{ type: "function", function: { name: "wait", parameters: { type: "object" } } }],
            signal: run.signal,
            dispatch: (_request, signal) => {
              if (signal) given.push(signal);
              if (given.length === 30) setTimeout(() => run.abort(new Error("enough")), 20);
              return new Promise((_resolve, reject) => {
                signal?.addEventListener(
                  "abort",
                  () => {
                    stopped++;
                    reject(new Error("stopped"));
                  },
                  { once: true },
                );
              });
            },
          })
          .then(
            () => "finished",
            (error: unknown) => error,
          );
        expect(result).not.toBe("finished");
        expect(given).toHaveLength(30);
        expect(stopped).toBe(30);
        // Each call its own signal, aborted with the run's reason.
        expect(new Set(given).size).toBe(30);
        expect(given.includes(run.signal)).toBe(false);
        for (const signal of given) expect((signal.reason as Error).message).toBe("enough");
        await new Promise((resolve) => setTimeout(resolve, 50));
        // Before: "MaxListenersExceededWarning: Possible EventTarget memory leak detected. 11 abort
        // listeners added to [AbortSignal]": each tool's listener went on the run's own signal.
        expect(warnings.filter((w) => w.includes("MaxListeners"))).toEqual([]);
      } finally {
        process.off("warning", onWarning);
      }
    });
  }
});

describe("a fold's summary for a request that then failed", () => {
  it("is on the run's error event for a bus watcher, as on failedRun(error).sideUsage", async () => {
    const server = await serve({
      replies: (request) =>
        isSummary(request)
          ? { content: "Notes: chapters one to four.", usage: { prompt_tokens: 900, completion_tokens: 40 } }
          : { type: "error", status: 400, body: { error: { message: "model m is not served here" } } },
    });
    const runtime = createRuntime();
    const error = await runtime
      .runAgentLoop({
        runId: "folded-then-failed",
        config: {
          baseUrl: server.baseUrl,
          model: "m",
          maxRetries: 0,
          contextLength: 1600,
          compact: true,
          tasks: { compaction: { model: "m" } },
        },
        messages: longHistory(),
        dispatch: () => "unused",
      })
      .catch((e: unknown) => e);
    expect(server.chatRequests.filter(isSummary)).toHaveLength(1);
    const side = failedRun(error)?.sideUsage;
    expect(side?.summary).toEqual({ prompt: 900, completion: 40, total: 940, cached: 0 });
    const events = runtime.bus.history("folded-then-failed") as Array<RunEvent & { sideUsage?: SideUsage }>;
    // What a watcher saw last of the side costs: before, nothing (the summary was on no event).
    const seen = events.filter((e) => e.sideUsage !== undefined).at(-1);
    expect(seen?.kind).toBe("error");
    expect(seen?.sideUsage).toEqual(side);
    expect(events.at(-1)?.kind).toBe("done");
    runtime.close();
  });

  it("a run with no side task has no sideUsage on its error event", async () => {
    const server = await serve({
      replies: [{ type: "error", status: 400, body: { error: { message: "no such model" } } }],
    });
    const runtime = createRuntime();
    await runtime
      .runAgentLoop({
        runId: "plain-failed",
        config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0 },
        messages: [{ role: "user", content: "hi" }],
        dispatch: () => "unused",
      })
      .catch(() => undefined);
    const events = runtime.bus.history("plain-failed");
    const failed = events.find((e) => e.kind === "error");
    expect(failed).toMatchObject({ kind: "error" });
    expect(Object.hasOwn(failed ?? {}, "sideUsage")).toBe(false);
    expect(events.at(-1)?.kind).toBe("done");
    runtime.close();
  });
});
