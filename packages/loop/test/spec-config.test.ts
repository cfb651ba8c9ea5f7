// One config shape: what resolveAgentSpec returns is what runAgentLoop takes, and every field it
// sets is read or refused — never dropped. Kept out of src/: nothing the package ships imports spec.
import {
  type AgentSpec,
  parseSpec,
  type ResolvedAgentConfig,
  resolveAgentSpec,
  SPEC_TOKEN,
} from "@loopwright/spec";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, createRuntime, type LoopConfig, LoopOptionError } from "../src/index.js";
import { ADD_TOOL, QUESTION } from "../src/test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function resolved(document: Record<string, unknown>, baseUrl: string): ResolvedAgentConfig {
  const { spec, errors } = parseSpec({ spec: SPEC_TOKEN, ...document });
  if (!spec) throw new Error(errors.join("\n"));
  const host: AgentSpec = { spec: SPEC_TOKEN, model: { name: "sim", endpoint: { baseUrl } } } as AgentSpec;
  return resolveAgentSpec([host, spec]);
}

describe("a resolved agent spec runs the loop as it is", () => {
  it("is assignable to the loop's config, and the loop honours dedupe, recovery and the prompt it sets", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "a", name: "add", arguments: '{"a":1,"b":2}' },
            { id: "b", name: "add", arguments: '{"a":1,"b":2}' },
          ],
        },
        // A call written as text: with recovery off it is the answer, not a call.
        { content: '<tool_call>{"name": "add", "arguments": {"a": 3, "b": 4}}</tool_call>' },
      ],
    });
    const config: LoopConfig = resolved(
      {
        prompt: [
          { id: "role", text: "You add numbers." },
          { id: "style", text: "Be brief." },
        ],
        tools: { dedupe: false, recover: false },
      },
      server.baseUrl,
    );
    let runs = 0;
    const result = await createRuntime().runAgentLoop({
      config,
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => {
        runs++;
        return 3;
      },
    });
    expect(runs).toBe(2);
    expect(result.toolCalls.map((c) => c.source)).toEqual(["dispatched", "dispatched"]);
    expect(result.turn.toolCalls).toEqual([]);
    expect(result.turn.content).toContain("<tool_call>");
    const first = server.chatRequests[0]?.body as { messages: { role: string; content: string }[] };
    expect(first.messages[0]).toEqual({ role: "system", content: "You add numbers.\n\nBe brief." });
  });

  it("refuses what the spec asks for and the loop does not do yet, naming the field", async () => {
    server = await startServer({ replies: [{ content: "never sent" }] });
    const config = resolved({ tools: { discovery: "proxy" } }, server.baseUrl);
    const error = await createRuntime()
      .runAgentLoop({ config, messages: QUESTION, dispatch: () => "" })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    const cause = (error as AgentLoopError).cause;
    expect(LoopOptionError.isInstance(cause)).toBe(true);
    expect((cause as LoopOptionError).option).toBe("config.toolDiscovery");
    expect(server.chatRequests).toHaveLength(0);
  });
});
