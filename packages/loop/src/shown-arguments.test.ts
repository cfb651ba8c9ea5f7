// A watcher's `tool-call` event shows a call's arguments as read, and where they could not be read,
// as the model wrote them — never the `{}` they were read as beside an error saying they were
// unreadable. Over HTTP, through runAgentLoop.
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { runAgentLoop } from "./index.js";

const CALCULATOR: ToolDefinition = {
  type: "function",
  function: {
    name: "calculator",
    description: "Works a sum out.",
    parameters: { type: "object", properties: { expression: { type: "string" } } },
  },
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The `tool-call` events and the first tool result of a run whose model calls with `args`. */
async function shown(args: string) {
  server = await startServer({
    replies: [{ toolCalls: [{ id: "c1", name: "calculator", arguments: args }] }, { content: "Done." }],
  });
  const events: RunEvent[] = [];
  const ran: unknown[] = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim" },
    messages: [{ role: "user", content: "2+2?" }],
    tools: [CALCULATOR],
    dispatch: ({ args: given }) => {
      ran.push(given);
      return "4";
    },
    onEvent: (event) => events.push(event),
  });
  const calls = events.flatMap((e) => (e.kind === "tool-call" ? [e.args] : []));
  const answer = result.messages.find((m) => m.role === "tool")?.content;
  return { calls, answer, ran };
}

describe("the arguments a tool-call event shows", () => {
  it("are what the model wrote when they could not be read", async () => {
    const { calls, answer, ran } = await shown("{bad json");
    expect(ran).toEqual([]);
    expect(answer).toMatch(/not a JSON object/);
    expect(calls).toEqual(["{bad json"]);
  });

  it("are the arguments as read otherwise, an empty object included", async () => {
    expect((await shown('{"expression": "2+2"}')).calls).toEqual(['{"expression":"2+2"}']);
    await server?.close();
    expect((await shown("{}")).calls).toEqual(["{}"]);
    await server?.close();
    expect((await shown("")).calls).toEqual(["{}"]);
  });
});
