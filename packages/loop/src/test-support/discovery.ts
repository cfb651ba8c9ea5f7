/**
 * The tools, catalogue, run and request readers the tool-discovery review tests share (r62, r64, r65):
 * four tools, three of them catalogued on two servers (`delete_all` left out), and what each
 * request the testkit received declared and answered.
 */
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach } from "vitest";
import type { ChatMessage, LoopConfig, ToolDefinition } from "../config.js";
import { LoopOptionError } from "../errors.js";
import type { DispatchRequest } from "../run-calls.js";
import { createRuntime } from "../runtime.js";

/** A function tool with a description and (optional, not required) parameters. */
export const tool = (
  name: string,
  description: string,
  properties: Record<string, unknown> = {},
): ToolDefinition => ({
  type: "function",
  function: { name, description, parameters: { type: "object", properties } },
});

export const TOOLS = [
  tool("list_pods", "List pods", { namespace: { type: "string" } }),
  tool("read_file", "Read a file", { path: { type: "string" } }),
  tool("write_file", "Write a file", { path: { type: "string" }, text: { type: "string" } }),
  tool("delete_all", "Delete everything"),
];

/** Every tool but `delete_all`, on two servers. */
export const CATALOG = [
  { name: "kubernetes", tools: [{ name: "list_pods" }] },
  { name: "files", tools: [{ name: "read_file" }, { name: "write_file" }] },
];

export const QUESTION: ChatMessage[] = [{ role: "user", content: "What does notes.txt say?" }];

/** A chat request's body, as far as these tests read it. */
export type Body = { tools?: Array<{ function: { name: string } }>; messages: ChatMessage[] };

/** The bodies of every chat request `server` received, in order. */
export const bodiesOf = (server: TestServer | undefined) =>
  (server?.chatRequests ?? []).map((r) => r.body as Body);

/** The names of the tools a request declared. */
export const toolNames = (body: Body | undefined) => (body?.tools ?? []).map((t) => t.function.name);

/** What a request's transcript answered the call `id` with. */
export const toolAnswer = (body: Body | undefined, id: string) =>
  String(body?.messages.find((m) => m.role === "tool" && m.tool_call_id === id)?.content);

/** A reply holding one tool call; `args` as an object is written as JSON, a string as it is. */
export const call = (id: string, name: string, args: unknown): Reply => ({
  toolCalls: [{ id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) }],
});

/**
 * One run against `server` over `TOOLS` and `CATALOG` (system "S", the QUESTION), `config` and
 * `extra` on top: what it answered, every call dispatched and every call `onToolCall` was told of.
 */
export async function runDiscovery(
  server: TestServer,
  config: Partial<LoopConfig>,
  extra: Record<string, unknown> = {},
) {
  const dispatched: DispatchRequest[] = [];
  const watched: DispatchRequest[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", ...config },
    system: "S",
    messages: QUESTION,
    tools: TOOLS,
    catalog: CATALOG,
    dispatch: (request) => {
      dispatched.push(request);
      return `ran ${request.name}`;
    },
    onToolCall: (request) => watched.push(request),
    ...extra,
  });
  return { result, dispatched, watched };
}

/** The names of the tool calls a transcript holds, in order. */
export const callNamesIn = (messages: readonly ChatMessage[] | undefined) =>
  (messages ?? [])
    .flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []))
    .map((c) => (c.type === "function" ? c.function.name : c.type));

/**
 * A test file's testkit server, closed after each test (call once, at the file's top level).
 * `start` starts it with `replies` (once: a started server is kept until `close`), `run` starts it
 * and makes one `runDiscovery` against it, `bodies` reads what it received, `server` is the one
 * running now.
 */
export function discoveryServer() {
  let running: TestServer | undefined;
  const close = async () => {
    await running?.close();
    running = undefined;
  };
  afterEach(close);
  const start = async (replies: Reply[]) => {
    running ??= await startServer({ replies });
    return running;
  };
  return {
    start,
    close,
    run: async (replies: Reply[], config: Partial<LoopConfig>, extra: Record<string, unknown> = {}) =>
      runDiscovery(await start(replies), config, extra),
    bodies: () => bodiesOf(running),
    get server() {
      return running;
    },
  };
}

/** The LoopOptionError a run threw, itself or as the cause of the AgentLoopError carrying the run. */
export const optionError = (error: unknown) =>
  [error, (error as { cause?: unknown } | undefined)?.cause].find((e) => LoopOptionError.isInstance(e)) as
    | LoopOptionError
    | undefined;
