// The catalogue a loading mode puts on the system prompt (r10 #4): a session lists its own tools as
// one server and each MCP server under its own name, so loading a server by its name loads its
// tools; an Agent hands its `catalog` option to the loop. A real server-everything over stdio and
// the testkit's scripted model over HTTP.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

const weather = defineTool({
  name: "weather",
  description: "Tells the weather.",
  parameters: { type: "object", properties: {} },
  execute: () => "sun",
});

/** The text of the run's first tool message (the load_tools answer). */
function loadAnswer(session: Session): string {
  return String(
    (session.messages.find((m) => (m as ChatMessageLike).role === "tool") as ChatMessageLike).content,
  );
}

const EVERYTHING_SERVERS = {
  mcpServers: { everything: { command: NODE, args: [EVERYTHING, "stdio"] } },
};

describe("a session and the host's catalogue (r11 #3)", { timeout: 30_000 }, () => {
  it("createSession({ catalog }): loading the host's server by its name loads its tools", async () => {
    server = await loads(["timekeeping"]);
    const catalog = [{ name: "timekeeping", tools: [{ name: "clock" }] }];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      tools: [clock, weather],
      catalog,
    });
    sessions.push(session);
    expect((await session.prompt("what time is it")).status).toBe("ok");
    expect(loadAnswer(session)).toMatch(/^Loaded: clock\b/);
    expect(systemText(server, 0)).toMatch(/^timekeeping: clock$/m);
    expect(session.agent.catalog).toEqual(catalog);
  });

  it("keeps a catalogue the host assigned to session.agent.catalog, run after run", async () => {
    server = await loads(["timekeeping"]);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      tools: [clock, weather],
    });
    sessions.push(session);
    const catalog = [{ name: "timekeeping", tools: [{ name: "clock" }] }];
    session.agent.catalog = catalog;
    expect((await session.prompt("what time is it")).status).toBe("ok");
    expect(loadAnswer(session)).toMatch(/^Loaded: clock\b/);
    expect(session.agent.catalog).toBe(catalog);
    expect((await session.prompt("and again")).status).toBe("ok");
    expect(session.agent.catalog).toBe(catalog);
    expect(systemText(server, server.chatRequests.length - 1)).toMatch(/^timekeeping: clock$/m);
  });

  it("with MCP servers, lists the host's servers, the rest of its own tools and each MCP server: each loads by name", async () => {
    server = await loads(["timekeeping", "everything"]);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      tools: [clock, weather],
      catalog: [{ name: "timekeeping", tools: [{ name: "clock" }] }],
      mcpServers: EVERYTHING_SERVERS,
    });
    sessions.push(session);
    expect((await session.mcpReady())[0]?.state).toBe("connected");
    expect((await session.prompt("load both")).status).toBe("ok");
    const answer = loadAnswer(session);
    expect(answer).toMatch(/^Loaded: /);
    expect(answer).toContain("clock");
    expect(answer).toContain("everything__echo");
    expect(answer).not.toContain("weather");
    const system = systemText(server, 0);
    expect(system).toMatch(/^timekeeping: clock$/m);
    expect(system).toMatch(/^tools: weather$/m); // the session's tools the host's servers do not list
    expect(system).toMatch(/^everything: .*everything__echo/m);
  });

  it("with MCP servers, adds its own tools to a host server named tools", async () => {
    server = await loads(["tools"]);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      tools: [clock, weather],
      catalog: [{ name: "tools", tools: [{ name: "clock" }] }],
      mcpServers: EVERYTHING_SERVERS,
    });
    sessions.push(session);
    await session.mcpReady();
    expect((await session.prompt("load the tools")).status).toBe("ok");
    expect(loadAnswer(session)).toMatch(/^Loaded: clock, weather\b/);
    const system = systemText(server, 0);
    expect(system).toMatch(/^tools: clock, weather$/m);
    expect(system.match(/^tools:/gm)).toHaveLength(1);
  });

  it("with MCP servers, lists an MCP tool the host's catalogue lists only there, and no MCP server left with none (r12 #6)", async () => {
    server = await loads(["favourites"]);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      tools: [clock],
      catalog: [{ name: "favourites", tools: [{ name: "everything__echo" }, { name: "clock" }] }],
      mcpServers: EVERYTHING_SERVERS,
    });
    sessions.push(session);
    expect((await session.mcpReady())[0]?.state).toBe("connected");
    expect((await session.prompt("load the favourites")).status).toBe("ok");
    const system = systemText(server, 0);
    expect(system).toMatch(/^favourites: clock, everything__echo$/m);
    const everything = system.split("\n").find((line) => line.startsWith("everything: "));
    expect(everything).toMatch(/everything__get-annotated-message/);
    expect(everything).not.toMatch(/everything__echo\b/);
    const mcpNames = session.agent.tools
      .list()
      .map((tool) => tool.name)
      .filter((name) => name.startsWith("everything__"));
    expect(mcpNames).toContain("everything__echo");
    await session.close();
    await server.close();

    // The host lists every tool of the MCP server: the server is not listed at all.
    server = await loads(["all"]);
    const all = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", toolDiscovery: "ondemand" },
      catalog: [{ name: "all", tools: mcpNames.map((name) => ({ name })) }],
      mcpServers: EVERYTHING_SERVERS,
    });
    sessions.push(all);
    expect((await all.mcpReady())[0]?.state).toBe("connected");
    expect((await all.prompt("load them all")).status).toBe("ok");
    const listed = systemText(server, 0);
    expect(listed).toMatch(/^all: .*everything__echo/m);
    expect(listed).not.toMatch(/^everything:/m);
    expect((all.agent.catalog ?? []).map((entry) => entry.name)).not.toContain("everything");
  });

  it("refuses a host server named as an MCP server, and a catalog of the wrong shape, before anything is written", async () => {
    const refused = async (options: Record<string, unknown>) => {
      try {
        const session = await createSession({
          config: { baseUrl: "http://127.0.0.1:1/v1", model: "m" },
          ...options,
        });
        sessions.push(session);
      } catch (error) {
        expect(AgentError.isInstance(error)).toBe(true);
        expect((error as AgentError).code).toBe("invalid-input");
        return (error as AgentError).message;
      }
      throw new Error(`accepted ${JSON.stringify(options)}`);
    };
    const dir = mkdtempSync(join(tmpdir(), "session-catalog-"));
    try {
      expect(
        await refused({
          catalog: [{ name: "everything", tools: [{ name: "clock" }] }],
          tools: [clock],
          mcpServers: EVERYTHING_SERVERS,
          sessionDir: dir,
          sessionId: "refused",
        }),
      ).toMatch(/^createSession: catalog\[0\] is named "everything", as an MCP server of the session is/);
      expect(existsSync(join(dir, "refused.jsonl"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await refused({ catalog: "timekeeping" })).toMatch(
      /^createSession: catalog must be a list of servers .*got a string/,
    );
    expect(await refused({ catalog: [{ name: "x", tools: [{}] }] })).toMatch(
      /^createSession: catalog\[0\]\.tools\[0\] must be a tool/,
    );
    // null is absent.
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:1/v1", model: "m" },
      catalog: null,
    });
    sessions.push(session);
    expect(session.agent.catalog).toBeUndefined();
  });
});
