// MCP servers in a Session: a real server-everything over stdio and a server command that fails,
// with the testkit's scripted model over HTTP.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SPEC_TOKEN } from "@loopwright/spec";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type ChatMessageLike, createSession, type Session, type SessionEvent } from "./test-exports.js";

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

type McpChanged = Extract<SessionEvent, { type: "mcp_changed" }>;

function sent(s: TestServer, index: number): ChatMessageLike[] {
  return (s.chatRequests[index]!.body as { messages: ChatMessageLike[] }).messages;
}

function declared(s: TestServer, index: number): string[] {
  const tools = (s.chatRequests[index]!.body as { tools?: { function: { name: string } }[] }).tools ?? [];
  return tools.map((t) => t.function.name);
}

/** Resolves with the first `mcp_changed` event that passes `match`. */
function nextChange(session: Session, match: (event: McpChanged) => boolean): Promise<McpChanged> {
  return new Promise((resolve) => {
    const stop = session.onEvent((event) => {
      if (event.type === "mcp_changed" && match(event)) {
        stop();
        resolve(event);
      }
    });
  });
}

describe("Session with MCP servers", { timeout: 30_000 }, () => {
  it("connects in the background, tells mcp_changed, and runs the model's MCP call through the pool", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            {
              id: "c1",
              name: "everything__echo",
              arguments: JSON.stringify({ message: "hello over stdio" }),
            },
          ],
        },
        { content: "It echoed." },
      ],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      mcpServers: { mcpServers: { everything: { command: NODE, args: [EVERYTHING, "stdio"] } } },
    });
    sessions.push(session);
    // The constructor did not wait for the server.
    expect(session.mcpServers[0]?.state).not.toBe("connected");
    const connected = await nextChange(session, (e) => e.servers[0]?.state === "connected");
    expect(connected.servers[0]).toMatchObject({ name: "everything", state: "connected" });
    expect(connected.servers[0]?.tools).toContain("everything__echo");

    const result = await session.prompt("Echo something");
    expect(result).toEqual({ status: "ok", reply: "It echoed." });
    expect(declared(server, 0)).toContain("everything__echo");
    const toolMessage = sent(server, 1).at(-1)!;
    expect(toolMessage.role).toBe("tool");
    expect(toolMessage.content).toContain("hello over stdio");
    const entry = session.getSnapshot().timeline.find((e) => e.type === "tool");
    expect(entry).toMatchObject({ name: "everything__echo", isError: false });

    await session.close();
    expect(session.mcpServers[0]?.state).toBe("closed");
  });

  it("reports a server command that fails through mcp_changed, without its env values, and still answers", async () => {
    server = await startServer({ replies: [{ content: "Still here." }] });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      mcpServers: [
        {
          name: "broken",
          command: NODE,
          args: ["-e", "process.stderr.write('cannot start: missing database\\n'); process.exit(3)"],
          env: { API_TOKEN: "tok-very-secret-123" },
        },
      ],
    });
    sessions.push(session);
    const failed = nextChange(session, (e) => e.servers[0]?.state === "failed");
    // The first prompt is not held up by the failing server.
    expect(await session.prompt("Are you there?")).toEqual({ status: "ok", reply: "Still here." });
    const event = await failed;
    expect(event.servers[0]?.error).toContain("broken");
    expect(event.servers[0]?.error).toContain("cannot start: missing database");
    expect(JSON.stringify(event)).not.toContain("tok-very-secret-123");
    expect(event.servers[0]?.tools).toEqual([]);
  });

  it("takes the servers from a spec's bundle.mcpServers", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const session = await createSession({
      spec: {
        spec: SPEC_TOKEN,
        model: { name: "sim", endpoint: { baseUrl: server.baseUrl } },
        bundle: { mcpServers: [{ name: "ev", command: NODE, args: [EVERYTHING, "stdio"] }] },
      },
    });
    sessions.push(session);
    const servers = await session.mcpReady();
    expect(servers[0]).toMatchObject({ name: "ev", state: "connected" });
    expect(servers[0]?.tools).toContain("ev__get-sum");
    expect(await session.prompt("hi")).toEqual({ status: "ok", reply: "ok" });
    expect(declared(server, 0)).toContain("ev__get-sum");
  });

  it("runs identical calls of a tool that is not idempotent each time (the pool's dedupe policy)", async () => {
    const toggle = (id: string) => ({ id, name: "e__toggle-simulated-logging", arguments: "{}" });
    server = await startServer({
      replies: [{ toolCalls: [toggle("t1"), toggle("t2")] }, { content: "Toggled." }],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      mcpServers: [{ name: "e", command: NODE, args: [EVERYTHING, "stdio"] }],
    });
    sessions.push(session);
    await session.mcpReady();
    expect((await session.prompt("toggle twice")).status).toBe("ok");
    const results = sent(server, 1)
      .filter((m) => m.role === "tool")
      .map((m) => String(m.content));
    expect(results).toHaveLength(2);
    // Run twice, the toggle answers differently (on, then off); a shared answer would repeat the first.
    expect(results[0]).not.toEqual(results[1]);
  });

  it("declares a server's tools that joined mid-prompt from the next step, and the model's call to them runs", async () => {
    // A server that starts only once the gate file exists: the prompt starts before it can connect,
    // and the host's tool opens the gate during step 1 and waits for the server's tools to join.
    const dir = mkdtempSync(join(tmpdir(), "mcp-gate-"));
    const gate = join(dir, "open");
    const gated =
      "const fs = require('node:fs'); const { pathToFileURL } = require('node:url');" +
      "const [gate, entry] = process.argv.slice(1);" +
      "const wait = setInterval(() => { if (!fs.existsSync(gate)) return; clearInterval(wait);" +
      " process.argv = [process.argv[0], entry, 'stdio']; import(pathToFileURL(entry).href); }, 20);";
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "start_server", arguments: "{}" }] },
        {
          toolCalls: [
            { id: "c2", name: "late__echo", arguments: JSON.stringify({ message: "joined mid-prompt" }) },
          ],
        },
        { content: "It echoed." },
      ],
    });
    let session: Session | undefined;
    session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      mcpServers: [{ name: "late", command: NODE, args: ["-e", gated, gate, EVERYTHING] }],
      tools: [
        {
          name: "start_server",
          description: "Starts the late server",
          parameters: { type: "object", properties: {} },
          execute: async () => {
            const joined = nextChange(session as Session, (e) => e.servers[0]?.state === "connected");
            writeFileSync(gate, "");
            await joined;
            return "started";
          },
        },
      ],
    });
    sessions.push(session);
    try {
      const result = await session.prompt("Echo something once the server is up");
      expect(result).toEqual({ status: "ok", reply: "It echoed." });
      expect(declared(server, 0)).not.toContain("late__echo");
      expect(declared(server, 1)).toContain("late__echo");
      const toolMessage = sent(server, 2).at(-1)!;
      expect(toolMessage).toMatchObject({ role: "tool", tool_call_id: "c2" });
      expect(toolMessage.content).toContain("joined mid-prompt");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not offer a server's tool, joining mid-prompt, that the model would be shown under a host tool's name; the prompt finishes (r19 #2)", async () => {
    // The host's `late..echo` is declared as `late__echo`, the name the late server's echo tool has.
    const dir = mkdtempSync(join(tmpdir(), "mcp-gate-"));
    const gate = join(dir, "open");
    const gated =
      "const fs = require('node:fs'); const { pathToFileURL } = require('node:url');" +
      "const [gate, entry] = process.argv.slice(1);" +
      "const wait = setInterval(() => { if (!fs.existsSync(gate)) return; clearInterval(wait);" +
      " process.argv = [process.argv[0], entry, 'stdio']; import(pathToFileURL(entry).href); }, 20);";
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "start_server", arguments: "{}" }] },
        { toolCalls: [{ id: "c2", name: "late__echo", arguments: JSON.stringify({ message: "which?" }) }] },
        { content: "Done." },
      ],
    });
    const tool = (name: string, execute: () => unknown) => ({
      name,
      description: name,
      parameters: { type: "object", properties: {} },
      execute,
    });
    let session: Session | undefined;
    session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      mcpServers: [{ name: "late", command: NODE, args: ["-e", gated, gate, EVERYTHING] }],
      tools: [
        tool("late..echo", () => "the host's echo"),
        tool("start_server", async () => {
          const joined = nextChange(session as Session, (e) => e.servers[0]?.state === "connected");
          writeFileSync(gate, "");
          await joined;
          return "started";
        }),
      ],
    });
    sessions.push(session);
    try {
      const result = await session.prompt("Start the server, then echo");
      expect(result).toEqual({ status: "ok", reply: "Done." });
      // The server's other tools joined; its echo did not, and the model's call ran the host's tool.
      expect(declared(server, 1)).toContain("late__get-sum");
      expect(declared(server, 1).filter((name) => name === "late__echo")).toHaveLength(1);
      expect(sent(server, 2).at(-1)).toMatchObject({
        role: "tool",
        tool_call_id: "c2",
        content: "the host's echo",
      });
      expect(session.mcpServers[0]?.tools).not.toContain("late__echo");
      expect(session.mcpServers[0]?.tools).toContain("late__get-sum");
      expect(session.getSnapshot().timeline).toContainEqual({
        type: "notice",
        text: expect.stringMatching(
          /^MCP tool "late__echo" is not offered: The tools "late\.\.echo" and "late__echo" would both be declared to the model as "late__echo"/,
        ),
      });
      expect(session.getSnapshot().timeline.filter((e) => e.type === "error")).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("throws a typed error for a server entry the pool refuses", async () => {
    await expect(
      createSession({
        config: { baseUrl: "http://127.0.0.1:9", model: "sim" },
        mcpServers: [{ name: "x" } as never],
      }),
    ).rejects.toMatchObject({
      code: "invalid-input",
      message: expect.stringContaining("mcpServers"),
    });
  });
});

describe("the MCP servers of layered specs (r80)", () => {
  const layer = (baseUrl: string, mcpServers: unknown[]) => ({
    spec: SPEC_TOKEN,
    model: { name: "sim", endpoint: { baseUrl } },
    bundle: { mcpServers },
  });

  it("leaves out a server a stronger layer switches off", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const session = await createSession({
      spec: [
        layer(server.baseUrl, [{ name: "ev", command: NODE, args: [EVERYTHING, "stdio"] }]),
        layer(server.baseUrl, [{ name: "ev", enabled: false }]),
      ] as never,
    });
    sessions.push(session);
    // Before: the layers' entries were joined as written, so server-everything started and its
    // tools were declared although the stronger layer switched it off.
    expect(await session.mcpReady()).toEqual([]);
    expect(await session.prompt("hi")).toEqual({ status: "ok", reply: "ok" });
    expect(declared(server, 0).filter((name) => name.startsWith("ev__"))).toEqual([]);
  });

  it("takes a stronger layer's server of the same name in place of the weaker one", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const session = await createSession({
      spec: [
        layer(server.baseUrl, [{ name: "ev", command: NODE, args: ["/nonexistent/server.js"] }]),
        layer(server.baseUrl, [{ name: "ev", command: NODE, args: [EVERYTHING, "stdio"] }]),
      ] as never,
    });
    sessions.push(session);
    // Before: createSession refused two servers named "ev" (the pool takes each name once).
    const servers = await session.mcpReady();
    expect(servers).toHaveLength(1);
    expect(servers[0]).toMatchObject({ name: "ev", state: "connected" });
    expect(servers[0]?.tools).toContain("ev__get-sum");
  });
});
