// r104h: a tool call cut by max_tokens before its name is whole, as llama-server b9749 sends it
// (testkit captures llamacpp-live/51, 52): the stream has the opener and a `length` finish, nothing
// of the `<tool_call>` markup. The run must run no tool and say the reply was cut at the ceiling.
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a run whose tool call llama.cpp cut before its name was whole", () => {
  it("runs no tool, answers nothing as if whole, and says the reply was cut at the token ceiling", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] }],
    });
    const events: RunEvent[] = [];
    const dispatched: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "tiny", maxTokens: 4 },
      messages: [{ role: "user", content: "hi" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
        },
      ],
      dispatch: (call) => {
        dispatched.push(String((call as { name?: string }).name));
        return "sunny";
      },
      onEvent: (e) => events.push(e),
    } as Parameters<ReturnType<typeof createRuntime>["runAgentLoop"]>[0]);
    expect(server.chatRequests).toHaveLength(1);
    expect(server.chatRequests[0]?.body).toMatchObject({ max_tokens: 4 });
    expect(dispatched).toEqual([]);
    expect(result.turn.finishReason).toBe("length");
    expect(result.turn.content ?? "").not.toContain("<tool_call>");
    const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
    expect(notices).toEqual(["The reply was cut off at the token ceiling (maxTokens)."]);
  });
});
