// The catalogue a loading mode puts on the system prompt (r10 #4): a session lists its own tools as
// one server and each MCP server under its own name, so loading a server by its name loads its
// tools; an Agent hands its `catalog` option to the loop. A real server-everything over stdio and
// the testkit's scripted model over HTTP.
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type ChatMessageLike,
  createSession,
  defineTool,
  type Session,
} from "./test-exports.js";

const EVERYTHING = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);
const NODE = process.execPath;

let server: TestServer | undefined;
const sessions: Session[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
  await server?.close();
  server = undefined;
});

function sent(s: TestServer, index: number): ChatMessageLike[] {
  return (s.chatRequests[index]!.body as { messages: ChatMessageLike[] }).messages;
}

/** The system prompt of a request, as text. */
function systemText(s: TestServer, index: number): string {
  const first = sent(s, index)[0];
  return first?.role === "system" ? String(first.content) : "";
}

/** A model that loads `names` on the user's message, then answers "done". */
function loads(names: string[]): Promise<TestServer> {
  return startServer({
    replies: (request) => {
      const messages = (request.body as { messages: ChatMessageLike[] }).messages;
      return messages.some((m) => m.role === "tool")
        ? { content: "done" }
        : { toolCalls: [{ name: "load_tools", arguments: JSON.stringify({ names }) }] };
    },
  });
}

const clock = defineTool({
  name: "clock",
  description: "Tells the time.\nSecond line.",
  parameters: { type: "object", properties: {} },
  execute: () => "noon",
});

describe("a session's catalogue", { timeout: 30_000 }, () => {
  it("lists each MCP server under its name: loading a server by its name loads its tools", async () => {
    server = await loads(["everything"]);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      tools: [clock],
      mcpServers: { mcpServers: { everything: { command: NODE, args: [EVERYTHING, "stdio"] } } },
    });
    sessions.push(session);
    const [info] = await session.mcpReady();
    expect(info?.state).toBe("connected");
    const result = await session.prompt("load the everything server's tools");
    expect(result.status).toBe("ok");
    const answer = String(
      (session.messages.find((m) => (m as ChatMessageLike).role === "tool") as ChatMessageLike).content,
    );
    expect(answer).toMatch(/^Loaded: /);
    expect(answer).toContain("everything__echo");
    expect(answer).not.toContain("clock");
    // The catalogue names both servers; the host's tool is under "tools".
    const system = systemText(server, 0);
    expect(system).toMatch(/^everything: .*everything__echo/m);
    expect(system).toMatch(/^tools: clock$/m);
    // The loaded tools are declared on the next request.
    const declared = (
      (server.chatRequests[1]!.body as { tools?: { function: { name: string } }[] }).tools ?? []
    ).map((t) => t.function.name);
    expect(declared).toEqual(expect.arrayContaining(["everything__echo", "load_tools"]));
    expect(declared).not.toContain("clock");
  });
});

describe("Agent's catalog option", () => {
  it("reaches the loop: the catalogue on the system prompt is the one given", async () => {
    server = await loads(["timekeeping"]);
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      tools: [clock],
      catalog: [{ name: "timekeeping", tools: [{ name: "clock" }] }],
    });
    const result = await agent.prompt("what time is it");
    expect(result.status).toBe("ok");
    expect(systemText(server, 0)).toMatch(/^timekeeping: clock$/m);
    const answer = agent.messages.find((m) => (m as ChatMessageLike).role === "tool") as ChatMessageLike;
    expect(String(answer.content)).toMatch(/^Loaded: clock/);
  });

  it("is refused with invalid-input when it is not a list of { name, tools: [{ name }] }", () => {
    const refused = (catalog: unknown) => {
      try {
        new Agent({ config: { baseUrl: "http://127.0.0.1:1/v1", model: "m" }, catalog: catalog as never });
      } catch (error) {
        expect(AgentError.isInstance(error)).toBe(true);
        expect((error as AgentError).code).toBe("invalid-input");
        return (error as AgentError).message;
      }
      throw new Error(`accepted ${JSON.stringify(catalog)}`);
    };
    expect(refused("tools")).toMatch(/^new Agent: catalog must be a list of servers .*got a string/);
    expect(refused([{ name: "x" }])).toMatch(/^new Agent: catalog\[0\] must be a server .*got an object/);
    expect(refused([{ name: "x", tools: [{}] }])).toMatch(
      /^new Agent: catalog\[0\]\.tools\[0\] must be a tool/,
    );
  });
});
