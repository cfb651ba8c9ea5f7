// Tool-call arguments reach the tool as the model wrote them: a number JavaScript cannot hold is
// handed over as its digits where the tool's schema takes a string, and refused (answered, never
// run with another number) elsewhere — over HTTP, through runAgentLoop.
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { failedRun, runAgentLoop } from "./index.js";

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
  tool_call_id?: string;
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

/** Runs get_order as a catalogued tool in a loading mode; what its dispatch was handed, and the result. */
async function runLoaded(mode: "proxy" | "ondemand", replies: Reply[]) {
  server = await startServer({ replies });
  const seen: { name: string; args: unknown }[] = [];
  const watched: { name: string; args: unknown; raw?: string }[] = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: mode },
    onToolCall: ({ name, args, raw }) => watched.push({ name, args, raw }),
    messages: question,
    tools: [GET_ORDER],
    catalog: [{ name: "shop", tools: [{ name: "get_order", description: "Looks an order up by its id." }] }],
    dispatch: ({ name, args }) => {
      seen.push({ name, args });
      return "shipped";
    },
  });
  return { seen, watched, result };
}

const callTool = (id: string, args: string): Reply => ({
  toolCalls: [{ id, name: "call_tool", arguments: args }],
});

describe("a number JavaScript cannot hold, inside a call_tool call", () => {
  it("reaches the inner tool as its digits where the inner schema takes a string (object arguments)", async () => {
    const { seen, watched, result } = await runLoaded("proxy", [
      callTool("c1", `{"name": "get_order", "arguments": {"id": ${BIG}}}`),
      { content: "It ships tomorrow." },
    ]);
    // Before: refused against call_tool's own schema, naming arguments.id.
    expect(seen).toEqual([{ name: "get_order", args: { id: BIG } }]);
    // Watchers are told of the inner call, its raw text carrying the model's digits.
    expect(watched).toEqual([{ name: "get_order", args: { id: BIG }, raw: `{"id":${BIG}}` }]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", source: "dispatched", ok: true }]);
    const replayed = sentMessages(1).find((m) => m.role === "assistant");
    expect(JSON.parse(replayed?.tool_calls?.[0]?.function.arguments ?? "null")).toEqual({
      name: "get_order",
      arguments: { id: BIG },
    });
  });

  it("reaches the inner tool as its digits where the inner schema takes a string (arguments as text)", async () => {
    const inner = JSON.stringify(`{"id": ${BIG}}`);
    const { seen, result } = await runLoaded("proxy", [
      callTool("c1", `{"name": "get_order", "arguments": ${inner}}`),
      { content: "It ships tomorrow." },
    ]);
    // Before: refused with "its arguments are not a JSON object".
    expect(seen).toEqual([{ name: "get_order", args: { id: BIG } }]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", source: "dispatched", ok: true }]);
  });

  it("is refused where the inner schema takes an integer, naming the inner path (object arguments)", async () => {
    const { seen, result } = await runLoaded("proxy", [
      callTool("c1", '{"name": "get_order", "arguments": {"id": "A-7", "lines": 9007199254740993}}'),
      { content: "Too many lines." },
    ]);
    expect(seen).toEqual([]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", source: "refused", ok: false }]);
    const answer = String(sentMessages(1).find((m) => m.role === "tool")?.content);
    // Before: "the call_tool call hold 9007199254740993 at arguments.lines".
    expect(answer).toMatch(/the get_order call hold 9007199254740993 at lines, /);
    expect(answer).toMatch(/was not run with a different number/);
    const replayed = sentMessages(1).find((m) => m.role === "assistant");
    expect(replayed?.tool_calls?.[0]?.function.arguments).toBe("{}");
  });

  it("is refused where the inner schema takes an integer, naming the inner path (arguments as text)", async () => {
    const inner = JSON.stringify('{"id": "A-7", "lines": 9007199254740993}');
    const { seen, result } = await runLoaded("proxy", [
      callTool("c1", `{"name": "get_order", "arguments": ${inner}}`),
      { content: "Too many lines." },
    ]);
    expect(seen).toEqual([]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", source: "refused", ok: false }]);
    const answer = String(sentMessages(1).find((m) => m.role === "tool")?.content);
    // Before: "call_tool for "get_order": its arguments are not a JSON object (...)".
    expect(answer).toMatch(/the get_order call hold 9007199254740993 at lines, /);
    expect(answer).not.toMatch(/not a JSON object/);
  });

  it("on demand: call_tool and a catalogued tool spelled another way are settled by the tool's own schema", async () => {
    const { seen, result } = await runLoaded("ondemand", [
      {
        toolCalls: [
          { id: "c1", name: "call_tool", arguments: `{"name": "get_order", "arguments": {"id": ${BIG}}}` },
          { id: "c2", name: "shop.get_order", arguments: `{"id": "A-7", "lines": 9007199254740993}` },
          { id: "c3", name: "Get_Order", arguments: `{"id": ${BIG}1}` },
        ],
      },
      { content: "Done." },
    ]);
    expect(seen).toEqual([
      { name: "get_order", args: { id: BIG } },
      { name: "get_order", args: { id: `${BIG}1` } },
    ]);
    expect(result.toolCalls.map((c) => c.source)).toEqual(["dispatched", "refused", "dispatched"]);
    const answer = String(sentMessages(1).find((m) => m.role === "tool" && m.tool_call_id === "c2")?.content);
    expect(answer).toMatch(/the get_order call hold 9007199254740993 at lines, /);
  });
});

describe("a refused call holding such a number, on demand", () => {
  it("loads and counts nothing, so the step's next call of the tool is the one that loads it", async () => {
    const { seen, result } = await runLoaded("ondemand", [
      {
        toolCalls: [
          { id: "c1", name: "shop.get_order", arguments: '{"id": "A-7", "lines": 9007199254740993}' },
          { id: "c2", name: "get_order", arguments: '{"id": "A-7"}' },
        ],
      },
      { content: "Done." },
    ]);
    expect(seen).toEqual([{ name: "get_order", args: { id: "A-7" } }]);
    expect(result.toolCalls.map((c) => c.source)).toEqual(["refused", "dispatched"]);
    expect(result.metrics.toolsLoaded).toBe(1);
    expect(result.loaded).toEqual(["get_order"]);
  });
});

describe("a call_tool the step limit leaves unrun", () => {
  it("is told to watchers as the inner call with the model's digits, and replayed so", async () => {
    server = await startServer({
      replies: [
        callTool("c1", `{"name": "get_order", "arguments": {"id": "A-7"}}`),
        callTool("c2", `{"name": "get_order", "arguments": ${JSON.stringify(`{"id": ${BIG}}`)}}`),
      ],
    });
    const watched: { name: string; args: unknown }[] = [];
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "proxy", maxToolIterations: 1 },
      messages: question,
      tools: [GET_ORDER],
      catalog: [
        { name: "shop", tools: [{ name: "get_order", description: "Looks an order up by its id." }] },
      ],
      dispatch: () => "shipped",
      onToolCall: ({ name, args }) => watched.push({ name, args }),
    }).catch((e: unknown) => e);
    expect(watched).toEqual([
      { name: "get_order", args: { id: "A-7" } },
      { name: "get_order", args: { id: BIG } },
    ]);
    const last = failedRun(error)?.messages.findLast((m) => m.role === "assistant");
    const replayed = last?.role === "assistant" ? last.tool_calls?.[0] : undefined;
    expect(replayed?.type === "function" && JSON.parse(replayed.function.arguments)).toEqual({
      name: "get_order",
      arguments: `{"id": ${BIG}}`,
    });
  });
});

describe("parity: a call_tool call and the same call made directly", () => {
  /** What the tool was handed and what the model read back, for one call of `get_order` with `args`. */
  async function outcome(args: string, mode: "eager" | "proxy", text: boolean) {
    const wrapped = text ? JSON.stringify(args) : args;
    const call =
      mode === "eager"
        ? { id: "c1", name: "get_order", arguments: args }
        : { id: "c1", name: "call_tool", arguments: `{"name": "get_order", "arguments": ${wrapped}}` };
    const own = await startServer({ replies: [{ toolCalls: [call] }, { content: "ok" }] });
    try {
      const seen: unknown[] = [];
      await runAgentLoop({
        config: { baseUrl: own.baseUrl, model: "sim", toolDiscovery: mode },
        messages: question,
        tools: [GET_ORDER],
        ...(mode === "proxy"
          ? { catalog: [{ name: "shop", tools: [{ name: "get_order", description: "Looks an order up." }] }] }
          : {}),
        dispatch: ({ args: given }) => {
          seen.push(given);
          return "shipped";
        },
      });
      const body = own.chatRequests[1]?.body as { messages?: SentMessage[] } | undefined;
      return { seen, answer: body?.messages?.find((m) => m.role === "tool")?.content };
    } finally {
      await own.close();
    }
  }

  it("hands the tool the same arguments, or refuses with the same message, for any integer at id or lines", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }),
        fc.constantFrom("id", "lines"),
        fc.boolean(),
        async (n, key, text) => {
          const args = key === "id" ? `{"id": ${n}}` : `{"id": "A-7", "lines": ${n}}`;
          const direct = await outcome(args, "eager", false);
          const proxied = await outcome(args, "proxy", text);
          expect(proxied).toEqual(direct);
          expect(direct.seen.length + (String(direct.answer).startsWith("The arguments") ? 1 : 0)).toBe(1);
        },
      ),
      propertyRuns(20),
    );
    // Each case starts and closes two loopback servers: 20 cases took 2.5-3.1 s with the machine's
    // load at 8-10 and about 4 s at 14, close to vitest's 5 s default, so the bound is set here.
  }, 60_000);
});
