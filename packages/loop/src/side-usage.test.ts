/**
 * r80b: what a run's side tasks cost — the compaction summaries and the preselection — is kept apart
 * from the turns' `usage`, on `result.sideUsage`, on `failedRun(error).sideUsage`, and on the usage
 * events (`sideUsage`) once a side task was answered. Before, a summary reporting 900 + 40 tokens was
 * missing from everything the host saw. Over HTTP against the testkit.
 */
import { type RunEvent, runMetrics } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { failedRun } from "./errors.js";
import type { LoopUsageEvent } from "./index.js";
import { createRuntime } from "./runtime.js";
import { isSummary, longHistory } from "./test-support/long-history.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

const ZERO = { prompt: 0, completion: 0, total: 0, cached: 0 };
const SUMMARY_USAGE = { prompt_tokens: 900, completion_tokens: 40, cached_tokens: 0 };
const TURN_USAGE = { prompt_tokens: 200, completion_tokens: 5, cached_tokens: 0 };

/** A non-streamed completion (what a side task asks for) whose `usage` is as the server wrote it. */
function rawCompletion(content: string, usage: object) {
  const body = {
    id: "s",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage,
  };
  return {
    type: "raw" as const,
    headers: { "content-type": "application/json" },
    chunks: [JSON.stringify(body)],
  };
}

/**
 * A run on `server` whose 1600-token window folds {@link longHistory} before its first request (the
 * summary a side task on model `m`), watched by `onEvent` where given.
 */
function compactingRun(server: TestServer, onEvent?: (event: RunEvent) => void) {
  return createRuntime().runAgentLoop({
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
    ...(onEvent ? { onEvent } : {}),
  });
}

describe("r80b: side tasks' token usage on the run", () => {
  it("a side request's counts are held as a turn's are: rounded, the cache cut to the prompt, the total at least their sum", async () => {
    const server = await startServer({
      replies: (request) =>
        isSummary(request)
          ? rawCompletion("Notes: chapters one to four.", {
              prompt_tokens: 899.6,
              completion_tokens: 40.2,
              total_tokens: 12,
              prompt_tokens_details: { cached_tokens: 5000 },
            })
          : { content: "Chapter five is next.", usage: TURN_USAGE },
    });
    servers.push(server);
    const result = await compactingRun(server);
    const held = { prompt: 900, completion: 40, total: 940, cached: 900 };
    expect(result.sideUsage).toEqual({ ...held, summary: held, preselect: ZERO });
  });

  it("a compaction's summary is counted in sideUsage.summary, not in usage; the usage event carries it and runMetrics counts it nowhere", async () => {
    const server = await startServer({
      replies: (request) =>
        isSummary(request)
          ? { content: "Notes: chapters one to four summarised.", usage: SUMMARY_USAGE }
          : { content: "Chapter five is next.", usage: TURN_USAGE },
    });
    servers.push(server);
    const events: RunEvent[] = [];
    const result = await compactingRun(server, (event) => events.push(event));
    expect(server.chatRequests.filter(isSummary)).toHaveLength(1);
    expect(result.usage).toEqual({ prompt: 200, completion: 5, total: 205, cached: 0 });
    expect(result.sideUsage).toEqual({
      prompt: 900,
      completion: 40,
      total: 940,
      cached: 0,
      summary: { prompt: 900, completion: 40, total: 940, cached: 0 },
      preselect: ZERO,
    });
    const usageEvents = events.filter((e): e is LoopUsageEvent => e.kind === "usage");
    expect(usageEvents).toHaveLength(1);
    expect(usageEvents[0]?.usage).toEqual(result.usage);
    expect(usageEvents[0]?.sideUsage).toEqual(result.sideUsage);
    // A watcher adding up usage events counts the one turn, its tokens alone.
    expect(runMetrics(events).turns).toBe(1);
    expect(runMetrics(events).tokens.total).toBe(205);
    expect(result.metrics.tokens.total).toBe(205);
  });

  it("a preselection is counted in sideUsage.preselect, and every usage event from the first carries it", async () => {
    const main = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "read_file", arguments: "{}" }], usage: TURN_USAGE },
        { content: "done", usage: TURN_USAGE },
      ],
    });
    const small = await startServer({
      replies: [{ content: '{"tools":["read_file"]}', usage: { prompt_tokens: 300, completion_tokens: 9 } }],
    });
    servers.push(main, small);
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: {
        baseUrl: main.baseUrl,
        model: "big",
        toolDiscovery: "ondemand",
        preselect: true,
        tasks: { toolSelect: { model: "small", endpoint: { baseUrl: small.baseUrl } } },
      },
      messages: [{ role: "user", content: "read notes.txt" }],
      tools: [
        {
          type: "function",
          function: {
            name: "read_file",
            description: "Read a file",
            parameters: { type: "object", properties: {} },
          },
        },
      ],
      catalog: [{ name: "fs", tools: [{ name: "read_file", description: "Read a file" }] }],
      dispatch: async () => "x",
      onEvent: (event) => events.push(event),
    });
    expect(result.preselected).toEqual(["read_file"]);
    expect(small.chatRequests).toHaveLength(1);
    expect(result.usage).toEqual({ prompt: 400, completion: 10, total: 410, cached: 0 });
    expect(result.sideUsage).toMatchObject({
      prompt: 300,
      completion: 9,
      total: 309,
      summary: ZERO,
      preselect: { prompt: 300, completion: 9, total: 309 },
    });
    const sides = events.filter((e): e is LoopUsageEvent => e.kind === "usage").map((e) => e.sideUsage);
    expect(sides).toEqual([result.sideUsage, result.sideUsage]);
    expect(runMetrics(events).tokens.total).toBe(410);
  });

  it("a run that fails after its summary carries the summary's usage on failedRun; a run with no side task has no sideUsage on its events", async () => {
    const server = await startServer({
      replies: (request) =>
        isSummary(request)
          ? { content: "Notes: chapters one to four.", usage: SUMMARY_USAGE }
          : { type: "error", status: 400, body: { error: { message: "model m is not served here" } } },
    });
    servers.push(server);
    const error = await compactingRun(server).catch((e: unknown) => e);
    const run = failedRun(error);
    expect(run?.usage).toEqual(ZERO);
    expect(run?.sideUsage).toEqual({
      prompt: 900,
      completion: 40,
      total: 940,
      cached: 0,
      summary: { prompt: 900, completion: 40, total: 940, cached: 0 },
      preselect: ZERO,
    });

    const plain = await startServer({ replies: [{ content: "hi", usage: TURN_USAGE }] });
    servers.push(plain);
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: plain.baseUrl, model: "m" },
      messages: [{ role: "user", content: "Hello?" }],
      dispatch: () => "",
      onEvent: (event) => events.push(event),
    });
    expect(result.sideUsage).toEqual({ ...ZERO, summary: ZERO, preselect: ZERO });
    const usage = events.find((e) => e.kind === "usage");
    expect(usage && "sideUsage" in usage).toBe(false);
  });
});
