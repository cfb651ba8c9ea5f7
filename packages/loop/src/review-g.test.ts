// Failing-first review findings (round four, review g), each pinned over HTTP against the testkit.
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun } from "./errors.js";
import { createRuntime } from "./index.js";
import { ADD_TOOL, QUESTION, transcriptFaults, unanswered } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SEND: ToolDefinition = {
  type: "function",
  function: {
    name: "send_email",
    description: "Send an email",
    parameters: { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
  },
};

describe("a dedupe predicate that throws", () => {
  for (const parallel of [false, true]) {
    it(`ends the run with its error, nothing dispatched and every call answered (parallel: ${parallel})`, async () => {
      server = await startServer({
        replies: [
          {
            toolCalls: [
              { id: "a", name: "add", arguments: '{"a":1,"b":2}' },
              { id: "b", name: "lookup", arguments: "{}" },
              { id: "c", name: "add", arguments: '{"a":1,"b":2}' },
            ],
          },
          { content: "3" },
        ],
      });
      const annotations: Record<string, { readOnlyHint: boolean }> = { add: { readOnlyHint: true } };
      const dispatched: string[] = [];
      const events: RunEvent[] = [];
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "sim" },
          messages: QUESTION,
          tools: [ADD_TOOL, SEND],
          parallel,
          // A host's lookup that has no entry for a tool the model made up.
          dedupeToolCalls: (request) => (annotations[request.name] as { readOnlyHint: boolean }).readOnlyHint,
          dispatch: (request) => {
            dispatched.push(request.id);
            return "3";
          },
          onEvent: (event) => events.push(event),
        })
        .then(
          () => undefined,
          (caught: unknown) => caught,
        );
      expect(AgentLoopError.isInstance(error)).toBe(true);
      expect((error as AgentLoopError).cause).toBeInstanceOf(TypeError);
      expect(dispatched).toEqual([]);
      const run = failedRun(error);
      expect(run && unanswered(run.messages)).toEqual([]);
      expect(run && transcriptFaults(run.messages)).toEqual([]);
      expect(run?.toolCalls.map((call) => call.id)).toEqual(["a", "b", "c"]);
      const calls = events.filter((e) => e.kind === "tool-call").map((e) => (e as { id: string }).id);
      const results = events.filter((e) => e.kind === "tool-result").map((e) => (e as { id: string }).id);
      expect(results.sort()).toEqual(calls.sort());
      expect(server.chatRequests.length).toBe(1);
    });
  }
});
