// Tool-call arguments reach the tool as the model wrote them: a number JavaScript cannot hold is
// handed over as its digits where the tool's schema takes a string, and refused (answered, never
// run with another number) elsewhere — over HTTP, through runAgentLoop.
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { runAgentLoop } from "./index.js";

const BIG = "12345678901234567891";

const GET_ORDER: ToolDefinition = {
  type: "function",
  function: {
    name: "get_order",
    description: "Looks an order up by its id.",
    parameters: {
      type: "object",
      properties: { id: { type: "string" }, lines: { type: "integer" } },
      required: ["id"],
    },
  },
};
const question: ChatMessage[] = [{ role: "user", content: "Where is order 12345678901234567891?" }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface SentMessage {
  role: string;
  content?: unknown;
  tool_calls?: { function: { arguments: string } }[];
}

/** The messages of the `index`th request the server was sent. */
function sentMessages(index: number): SentMessage[] {
  const body = server?.chatRequests[index]?.body as { messages?: SentMessage[] } | undefined;
  return body?.messages ?? [];
}

/** Runs get_order over HTTP against `replies`; what its dispatch was handed, and the result. */
async function runOrder(replies: Reply[]) {
  server = await startServer({ replies });
  const seen: unknown[] = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim" },
    messages: question,
    tools: [GET_ORDER],
    dispatch: ({ args }) => {
      seen.push(args);
      return "shipped";
    },
  });
  return { seen, result };
}

describe("a number JavaScript cannot hold, written unquoted in a tool call", () => {
  it("reaches the tool as the model's exact digits where its schema takes a string", async () => {
    const { seen, result } = await runOrder([
      { toolCalls: [{ id: "c1", name: "get_order", arguments: `{"id": ${BIG}}` }] },
      { content: "It ships tomorrow." },
    ]);
    // Before: the tool was handed { id: 12345678901234567000 }, another order.
    expect(seen).toEqual([{ id: BIG }]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", source: "dispatched", ok: true }]);
    const replayed = sentMessages(1).find((m) => m.role === "assistant");
    expect(replayed?.tool_calls?.[0]?.function.arguments).toBe(`{"id":"${BIG}"}`);
  });

  it("is refused where the schema takes an integer, with a message naming its path and digits", async () => {
    const { seen, result } = await runOrder([
      { toolCalls: [{ id: "c1", name: "get_order", arguments: '{"id": "A-7", "lines": 9007199254740993}' }] },
      { content: "That order has too many lines to count." },
    ]);
    // Before: the tool ran with lines 9007199254740992.
    expect(seen).toEqual([]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", source: "refused", ok: false }]);
    const answer = sentMessages(1).find((m) => m.role === "tool");
    expect(answer?.content).toMatch(/the get_order call hold 9007199254740993 at lines/);
    expect(answer?.content).toMatch(/was not run with a different number/);
  });

  it("keeps its digits in a call recovered from the reply's text", async () => {
    const { seen } = await runOrder([
      {
        content: `Looking it up.\n<tool_call>\n{"name": "get_order", "arguments": {"id": ${BIG}}}\n</tool_call>`,
      },
      { content: "It ships tomorrow." },
    ]);
    // Before: the recovered call's arguments were written back from the rounded number.
    expect(seen).toEqual([{ id: BIG }]);
  });
});
