// The MCP config files users already have, written as each client documents them and read with
// readMcpJson, then started in the pool against the published server-everything (stdio and HTTP).
// Before: Cline's `disabled: true` server was started; VS Code's `servers` document read as "not a
// .mcp.json"; Gemini CLI's `httpUrl` and Windsurf's `serverUrl` were "no command or url"; a
// `${input:…}` went to the server as its literal text; `includeTools`/`excludeTools` were ignored.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING, NODE, startEverythingHttp } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError, readMcpJson } from "./index.js";

let dir: string;
let http: Awaited<ReturnType<typeof startEverythingHttp>>;
const pools: McpPool[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tools-mcp-r93-"));
  http = await startEverythingHttp("streamableHttp");
});
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});
afterAll(async () => {
  http?.stop();
  await rm(dir, { recursive: true, force: true });
});

let files = 0;
async function fileOf(document: unknown): Promise<string> {
  const path = join(dir, `config-${files++}.json`);
  await writeFile(path, JSON.stringify(document, null, 2));
  return path;
}

function pool(configs: Parameters<typeof createMcpPool>[0]): McpPool {
  const made = createMcpPool(configs);
  pools.push(made);
  return made;
}

async function refusal(promise: Promise<unknown>): Promise<McpPoolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(McpPoolError.isInstance(error)).toBe(true);
  expect((error as McpPoolError).code).toBe("invalid-config");
  return error as McpPoolError;
}

const toolNames = async (p: McpPool) => (await p.tools()).map((t) => t.function.name).sort();

describe("Claude Desktop's claude_desktop_config.json", () => {
  it("reads a command server with env and starts it", async () => {
    const path = await fileOf({
      mcpServers: { everything: { command: NODE, args: [EVERYTHING], env: { SOME_KEY: "k-1" } } },
    });
    const configs = await readMcpJson(path);
    expect(configs).toEqual([
      { name: "everything", type: "stdio", command: NODE, args: [EVERYTHING], env: { SOME_KEY: "k-1" } },
    ]);
    expect(await pool(configs).call("everything__echo", { message: "desktop" })).toContain("desktop");
  });
});

describe("Cline's and Roo's cline_mcp_settings.json / mcp_settings.json", () => {
  it("leaves a `disabled: true` server out, and reads past autoApprove, alwaysAllow and timeout", async () => {
    const path = await fileOf({
      mcpServers: {
        on: { command: NODE, args: [EVERYTHING], disabled: false, autoApprove: ["echo"], timeout: 60 },
        off: { command: NODE, args: [EVERYTHING], disabled: true, alwaysAllow: [] },
      },
    });
    const configs = await readMcpJson(path);
    // Before: both, and the pool started the one the user switched off.
    expect(configs.map((c) => c.name)).toEqual(["on"]);
    const p = pool(configs);
    await p.connect();
    expect(p.status().map((s) => s.name)).toEqual(["on"]);
  });

  it('reads Cline\'s `type: "streamableHttp"` server', async () => {
    const url = `http://127.0.0.1:${http.port}/mcp`;
    const path = await fileOf({ mcpServers: { web: { type: "streamableHttp", url, disabled: false } } });
    expect(await readMcpJson(path)).toEqual([{ name: "web", type: "http", url }]);
  });
});

describe("VS Code's .vscode/mcp.json", () => {
  it("reads the servers under `servers` and starts them", async () => {
    const path = await fileOf({
      inputs: [],
      servers: { everything: { type: "stdio", command: NODE, args: [EVERYTHING] } },
    });
    // Before: refused as "expected … a .mcp.json document ({ mcpServers })".
    const configs = await readMcpJson(path);
    expect(configs.map((c) => [c.name, c.type])).toEqual([["everything", "stdio"]]);
    expect(await pool(configs).call("everything__get-sum", { a: 2, b: 40 })).toContain("42");
  });

  it("refuses a ${input:…} it cannot prompt for, naming the field and the input", async () => {
    const path = await fileOf({
      inputs: [{ type: "promptString", id: "api-key", description: "API key", password: true }],
      servers: {
        everything: { command: NODE, args: [EVERYTHING], env: { API_KEY: "${input:api-key}" } },
      },
    });
    // Before: read, and the server got the text "${input:api-key}" as its API key.
    for (const options of [{}, { env: { API_KEY: "set" } }]) {
      const error = await refusal(readMcpJson(path, options));
      expect(error.message).toContain("servers.everything.env.API_KEY");
      expect(error.message).toContain("${input:api-key}");
    }
    const header = await fileOf({
      servers: {
        web: { type: "http", url: "http://x.test/mcp", headers: { Authorization: "Bearer ${input:tok}" } },
      },
    });
    expect((await refusal(readMcpJson(header))).message).toContain("servers.web.headers.Authorization");
  });

  it("refuses envFile, saying to put the variables in env", async () => {
    const path = await fileOf({
      servers: { everything: { command: NODE, args: [EVERYTHING], envFile: "${workspaceFolder}/.env" } },
    });
    const error = await refusal(readMcpJson(path));
    expect(error.message).toMatch(
      /servers\.everything\.envFile: envFile is not read here; put the variables/,
    );
  });

  it("refuses a document with both mcpServers and servers", async () => {
    const path = await fileOf({ mcpServers: {}, servers: {} });
    expect((await refusal(readMcpJson(path))).message).toContain("both mcpServers and servers");
  });
});

describe("Gemini CLI's settings.json", () => {
  it("reads httpUrl as a Streamable HTTP url, and calls the server", async () => {
    const httpUrl = `http://127.0.0.1:${http.port}/mcp`;
    const path = await fileOf({ mcpServers: { web: { httpUrl, trust: false, timeout: 30000 } } });
    // Before: "a server needs either a command (stdio) or a url (HTTP)".
    const configs = await readMcpJson(path);
    expect(configs).toEqual([{ name: "web", type: "http", url: httpUrl }]);
    expect(await pool(configs).call("web__echo", { message: "gemini" })).toContain("gemini");
  });

  it("offers only includeTools, never excludeTools, and refuses a call to a tool left out", async () => {
    const path = await fileOf({
      mcpServers: {
        web: { httpUrl: `http://127.0.0.1:${http.port}/mcp`, includeTools: ["echo", "get-sum"] },
        local: { command: NODE, args: [EVERYTHING], excludeTools: ["echo"] },
      },
    });
    const p = pool(await readMcpJson(path));
    const names = await toolNames(p);
    // Before: every tool of both servers.
    expect(names.filter((n) => n.startsWith("web__"))).toEqual(["web__echo", "web__get-sum"]);
    expect(names).not.toContain("local__echo");
    expect(names).toContain("local__get-sum");
    const error = await p.call("local__echo", { message: "x" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as McpPoolError).code).toBe("unknown-tool");
  });

  it("refuses includeTools that is no list of names", async () => {
    const path = await fileOf({ mcpServers: { s: { command: NODE, includeTools: "echo" } } });
    expect((await refusal(readMcpJson(path))).message).toContain("mcpServers.s.includeTools");
  });
});

describe("Windsurf's mcp_config.json", () => {
  it("reads serverUrl as url, with ${VAR} expansion in it and its headers", async () => {
    const path = await fileOf({
      mcpServers: {
        web: {
          serverUrl: "http://127.0.0.1:${PORT}/mcp",
          headers: { Authorization: "Bearer ${TOKEN:-none}" },
        },
      },
    });
    const configs = await readMcpJson(path, { env: { PORT: String(http.port) } });
    expect(configs).toEqual([
      {
        name: "web",
        type: "http",
        url: `http://127.0.0.1:${http.port}/mcp`,
        headers: { Authorization: "Bearer none" },
        masked: [String(http.port)],
      },
    ]);
  });

  it("refuses an entry with two URLs", async () => {
    const path = await fileOf({
      mcpServers: { web: { url: "http://a.test/", serverUrl: "http://b.test/" } },
    });
    expect((await refusal(readMcpJson(path))).message).toContain("has both url and serverUrl");
  });
});

describe("Claude Code's .mcp.json", () => {
  it("expands ${VAR} and ${VAR:-default} in command, args and env, and starts the server", async () => {
    const path = await fileOf({
      mcpServers: {
        everything: {
          type: "stdio",
          command: "${NODE_BIN}",
          args: ["${SERVER:-missing}"],
          env: { MODE: "${MODE:-plain}" },
        },
      },
    });
    const configs = await readMcpJson(path, { env: { NODE_BIN: NODE, SERVER: EVERYTHING } });
    expect(configs[0]).toMatchObject({ command: NODE, args: [EVERYTHING], env: { MODE: "plain" } });
    expect(await pool(configs).call("everything__echo", { message: "code" })).toContain("code");
  });
});

describe("VS Code's ${env:VAR}", () => {
  it("is filled from the env option as ${VAR} is, and refused when unset", async () => {
    const path = await fileOf({
      servers: {
        web: { type: "http", url: "http://x.test/mcp", headers: { Authorization: "Bearer ${env:GH_TOKEN}" } },
      },
    });
    // Before: kept as written, and the literal "${env:GH_TOKEN}" was sent as the token.
    const [config] = await readMcpJson(path, { env: { GH_TOKEN: "tok-123" } });
    expect(config).toMatchObject({ headers: { Authorization: "Bearer tok-123" }, masked: ["tok-123"] });
    const error = await refusal(readMcpJson(path, { env: {} }));
    expect(error.message).toContain("servers.web.headers.Authorization: ${GH_TOKEN} is not set");
  });
});
