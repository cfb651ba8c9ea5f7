// The loop's awaited host callbacks (beforeStep, onMessage), over HTTP with the testkit: a stop ends a
// run waiting on one at once, every call answered, and what one throws is named in the run's error.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentLoopOptions } from "./agent-loop.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun } from "./errors.js";
import { createRuntime } from "./index.js";

const TOOLS: ToolDefinition[] = [
  { type: "function", function: { name: "get", parameters: { type: "object", properties: {} } } },
];
const question: ChatMessage[] = [{ role: "user", content: "Get it." }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every tool call of `messages` with a tool message answering it. */
function everyCallAnswered(messages: readonly ChatMessage[]): boolean {
  const answered = new Set(
    messages.flatMap((m) => (m.role === "tool" ? [(m as { tool_call_id: string }).tool_call_id] : [])),
  );
  return messages.every((m) =>
    m.role !== "assistant"
      ? true
      : ((m as { tool_calls?: { id: string }[] }).tool_calls ?? []).every((c) => answered.has(c.id)),
  );
}

/**
 * Runs the loop against a tool step then an answer, with `extra`: options, or a function of
 * `stopIn(ms)` that a callback calls where it starts to wait, to stop the run that long after (a
 * timer from the run's start would fire before the step under test on a loaded machine). `ms` is
 * how long the run took to end after the stop (after its start, where it was not stopped).
 */
async function run(
  extra: Partial<AgentLoopOptions> | ((stopIn: (ms: number) => void) => Partial<AgentLoopOptions>),
) {
  server = await startServer({
    replies: [{ toolCalls: [{ id: "c1", name: "get", arguments: "{}" }] }, { content: "done" }],
  });
  const stop = new AbortController();
  const reason = new Error("the user pressed stop");
  let started = Date.now();
  const stopIn = (ms: number) => {
    setTimeout(() => {
      started = Date.now();
      stop.abort(reason);
    }, ms);
  };
  const ended = await createRuntime()
    .runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: () => "got",
      signal: stop.signal,
      ...(typeof extra === "function" ? extra(stopIn) : extra),
    })
    .then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
  return { ...ended, ms: Date.now() - started, reason };
}

describe("a stop while the loop waits on a host callback", () => {
  it("ends a run whose beforeStep never settles, at once, with the stop", async () => {
    let calls = 0;
    const { error, ms, reason } = await run((stopIn) => ({
      beforeStep: (_messages, step) => {
        calls++;
        if (step !== 2) return undefined;
        stopIn(200);
        return new Promise(() => {});
      },
    }));
    expect(ms).toBeLessThan(2_000);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as AgentLoopError).cause).toBe(reason);
    expect(calls).toBe(2);
    const messages = failedRun(error)?.messages ?? [];
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(everyCallAnswered(messages)).toBe(true);
    // Only the first step's request went out.
    expect(server?.chatRequests).toHaveLength(1);
  });

  it("ends a run whose onMessage never settles, at once, every call answered", async () => {
    const told: string[] = [];
    const { error, ms, reason } = await run((stopIn) => ({
      onMessage: (message) => {
        told.push(message.role);
        stopIn(200);
        return new Promise(() => {});
      },
    }));
    expect(ms).toBeLessThan(2_000);
    expect((error as AgentLoopError).cause).toBe(reason);
    const messages = failedRun(error)?.messages ?? [];
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(everyCallAnswered(messages)).toBe(true);
    expect(told).toEqual(["assistant"]);
  });

  it("still tells onMessage of a message appended after the stop, without waiting for it", async () => {
    const told: string[] = [];
    const { error, ms, reason } = await run((stopIn) => ({
      // A tool that runs until the stop.
      dispatch: (_request, signal) => {
        stopIn(200);
        return new Promise((resolve) => signal?.addEventListener("abort", () => resolve("stopped")));
      },
      onMessage: (message) => {
        told.push(message.role);
        return message.role === "tool" ? new Promise(() => {}) : undefined;
      },
    }));
    expect(ms).toBeLessThan(2_000);
    expect((error as AgentLoopError).cause).toBe(reason);
    expect(told).toEqual(["assistant", "tool"]);
    expect(everyCallAnswered(failedRun(error)?.messages ?? [])).toBe(true);
  });

  it("ignores what the callback settles with after the stop: a late rejection is handled", async () => {
    const unhandled: unknown[] = [];
    const spy = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on("unhandledRejection", spy);
    try {
      const { error } = await run((stopIn) => ({
        beforeStep: (_messages, step) => {
          if (step !== 2) return undefined;
          stopIn(100);
          return sleep(400).then(() => Promise.reject(new Error("late")));
        },
      }));
      expect(AgentLoopError.isInstance(error)).toBe(true);
      await sleep(500);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", spy);
    }
  });
});

describe("what a host callback throws", () => {
  it("is named in the run's error, the callback's own error kept as the cause", async () => {
    const thrown = new TypeError("Cannot read properties of undefined (reading 'id')");
    const fromMessage = await run({
      onMessage: () => {
        throw thrown;
      },
    });
    expect((fromMessage.error as AgentLoopError).message).toBe(
      "onMessage threw: Cannot read properties of undefined (reading 'id')",
    );
    expect((fromMessage.error as AgentLoopError).cause).toBe(thrown);
    expect(everyCallAnswered(failedRun(fromMessage.error)?.messages ?? [])).toBe(true);
    await server?.close();

    const fromStep = await run({ beforeStep: () => Promise.reject(thrown) });
    expect((fromStep.error as AgentLoopError).message).toBe(
      "beforeStep threw: Cannot read properties of undefined (reading 'id')",
    );
    expect((fromStep.error as AgentLoopError).cause).toBe(thrown);
  });
});
