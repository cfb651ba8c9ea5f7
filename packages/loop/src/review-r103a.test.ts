/**
 * r103a: the loop against the seed and against hostile input. A dedupe predicate that throws ends
 * the step with nothing run, and the run's error says it was the predicate.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, failedRun } from "./errors.js";
import { createRuntime } from "./index.js";
import { NOT_RUN } from "./run-calls.js";
import { ADD_TOOL, QUESTION, unanswered } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a dedupeToolCalls predicate that throws", () => {
  it("ends the run with an error naming the predicate, its own error the cause, every call answered not run", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "d1", name: "add", arguments: '{"a":1,"b":1}' },
            { id: "d2", name: "add", arguments: '{"a":2,"b":2}' },
          ],
        },
      ],
    });
    const thrown = new Error("the annotations lookup failed");
    let ran = 0;
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => ++ran,
        dedupeToolCalls: () => {
          throw thrown;
        },
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe("dedupeToolCalls threw: the annotations lookup failed");
    expect((error as Error).cause).toBe(thrown);
    expect(ran).toBe(0);
    const run = failedRun(error)!;
    expect(unanswered(run.messages)).toEqual([]);
    expect(run.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([NOT_RUN, NOT_RUN]);
  });
});
