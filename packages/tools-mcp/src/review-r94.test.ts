// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are the clients' ${…} references, meant literally.
// The config formats of other MCP clients, checked against their documentation (the README's table
// gives each page) and fed to readMcpJson as each page's example is shaped, then started in the pool
// against the published servers. Before: VS Code's and Cursor's `${workspaceFolder}` went to the
// server as its literal text; a file with a comment (Gemini CLI's own example has one) was "not
// JSON"; Roo Code's `disabledTools` were offered; Zed's `context_servers` were "not a document"; a
// switch-off after a server of its name left the server running; and a start that failed on an
// unfilled `${env:VAR}` said nothing of it.
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join, sep } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING, FILESYSTEM, NODE, startEverythingHttp, writeUnder } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError, mcpServers, readMcpJson } from "./index.js";

let dir: string;
let http: Awaited<ReturnType<typeof startEverythingHttp>>;
const pools: McpPool[] = [];

beforeAll(async () => {
  // The real path: server-filesystem answers with the folders it resolved.
  dir = await realpath(await mkdtemp(join(tmpdir(), "tools-mcp-r94-")));
  http = await startEverythingHttp("streamableHttp");
});
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});
afterAll(async () => {
  http?.stop();
  await rm(dir, { recursive: true, force: true });
});

const write = (relative: string, text: string): Promise<string> => writeUnder(dir, relative, text);

function pool(configs: Parameters<typeof createMcpPool>[0]): McpPool {
  const made = createMcpPool(configs, { connectTimeoutMs: 20_000 });
  pools.push(made);
  return made;
}

function refusal(run: () => unknown): McpPoolError {
  let error: unknown;
  try {
    run();
  } catch (e) {
    error = e;
  }
  expect(McpPoolError.isInstance(error)).toBe(true);
  expect((error as McpPoolError).code).toBe("invalid-config");
  return error as McpPoolError;
}

async function refused(promise: Promise<unknown>): Promise<McpPoolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return refusal(() => {
    if (error) throw error;
  });
}

const toolNames = async (p: McpPool) => (await p.tools()).map((t) => t.function.name).sort();

describe("VS Code's and Cursor's editor variables", () => {
  it("fills ${workspaceFolder} in a project's .vscode/mcp.json with the project, and the server gets it", async () => {
    const project = join(dir, "project-a");
    const path = await write(
      "project-a/.vscode/mcp.json",
      JSON.stringify({
        servers: {
          fs: {
            type: "stdio",
            command: NODE,
            args: [FILESYSTEM, "${workspaceFolder}"],
            cwd: "${workspaceFolder}",
          },
        },
      }),
    );
    const [config] = await readMcpJson(path);
    expect(config).toMatchObject({ args: [FILESYSTEM, project], cwd: project });
    // Before: server-filesystem was handed the text "${workspaceFolder}" as its one allowed folder.
    const text = await pool([config as NonNullable<typeof config>]).call("fs__list_allowed_directories", {});
    expect(text).toContain(project);
    expect(text).not.toContain("${workspaceFolder}");
  });

  it("fills ${userHome}, ${workspaceFolderBasename}, ${pathSeparator} and ${/} as the editors do", async () => {
    const path = await write(
      "project-b/.cursor/mcp.json",
      JSON.stringify({
        mcpServers: {
          s: {
            command: NODE,
            args: ["${userHome}${/}x", "${workspaceFolderBasename}${pathSeparator}y"],
          },
        },
      }),
    );
    const [config] = await readMcpJson(path);
    expect(config).toMatchObject({ args: [`${homedir()}${sep}x`, `project-b${sep}y`] });
  });

  it("refuses ${workspaceFolder} where no folder is known, naming the place and the variable", async () => {
    const path = await write(
      "elsewhere/mcp.json",
      JSON.stringify({
        mcpServers: { fs: { command: NODE, args: [FILESYSTEM, "${workspaceFolder}/data"] } },
      }),
    );
    const error = await refused(readMcpJson(path));
    expect(error.message).toContain("mcpServers.fs.args[1]: ${workspaceFolder} stands for the folder");
    expect(error.message).toContain("workspaceFolder option");
    // The same list, given to the pool as it is: refused at once, never started with the text.
    const list = [{ name: "fs", command: NODE, args: [FILESYSTEM, "${workspaceFolderBasename}"] }];
    expect(refusal(() => createMcpPool(list)).message).toContain("[0].args[1]: ${workspaceFolderBasename}");
    // With the option, it is filled; an option that is no path is refused.
    const [config] = await readMcpJson(path, { workspaceFolder: "/srv/app" });
    expect(config).toMatchObject({ args: [FILESYSTEM, "/srv/app/data"] });
    expect(refusal(() => mcpServers(list, { workspaceFolder: "" })).message).toContain("workspaceFolder");
  });

  it("reads Cursor's url server with a ${env:NAME} header, and calls it", async () => {
    const path = await write(
      "project-c/.cursor/mcp.json",
      JSON.stringify({
        mcpServers: {
          web: {
            url: `http://127.0.0.1:${http.port}/mcp`,
            headers: { Authorization: "Bearer ${env:WEB_TOKEN}" },
          },
        },
      }),
    );
    const configs = await readMcpJson(path, { env: { WEB_TOKEN: "t-42" } });
    expect(configs).toEqual([
      {
        name: "web",
        type: "http",
        url: `http://127.0.0.1:${http.port}/mcp`,
        headers: { Authorization: "Bearer t-42" },
        masked: ["t-42"],
      },
    ]);
    expect(await pool(configs).call("web__echo", { message: "cursor" })).toContain("cursor");
  });

  it("refuses VS Code's ${command:…} and ${config:…}, which nothing here can answer", async () => {
    for (const [value, what] of [
      ["${command:pickToken}", "${command:pickToken} asks VS Code to run a command"],
      ["${config:my.token}", "${config:my.token} reads a VS Code setting"],
    ]) {
      const list = [{ name: "s", command: NODE, env: { TOKEN: value as string } }];
      expect(refusal(() => mcpServers(list)).message).toContain(`[0].env.TOKEN: ${what}`);
    }
  });
});

describe("a file with comments and trailing commas (JSON with comments, as the clients read it)", () => {
  it("reads Gemini CLI's settings.json with a commented-out line, and starts the server", async () => {
    const path = await write(
      "gemini/settings.json",
      `{
  // Gemini CLI's own example comments out a line like this one.
  "mcpServers": {
    "local": {
      "command": ${JSON.stringify(NODE)},
      "args": [${JSON.stringify(EVERYTHING)}], /* the published server */
      "includeTools": ["echo", "get-sum"],
      // "excludeTools": ["echo"],
      "timeout": 30000,
    },
  },
}`,
    );
    // Before: "… is not JSON."
    const p = pool(await readMcpJson(path));
    expect(await toolNames(p)).toEqual(["local__echo", "local__get-sum"]);
  });

  it("keeps a // or /* inside a string, and still refuses a file that is not JSON", async () => {
    const path = await write(
      "strings/mcp.json",
      `{ "mcpServers": { "web": { "url": "http://a.test/x//y", "headers": { "X": "/* not a comment */", }, }, }, }`,
    );
    expect(await readMcpJson(path)).toEqual([
      { name: "web", type: "http", url: "http://a.test/x//y", headers: { X: "/* not a comment */" } },
    ]);
    const broken = await write("strings/broken.json", "{ // a comment\n mcpServers: {} }");
    expect((await refused(readMcpJson(broken))).message).toMatch(/broken\.json is not JSON\.$/);
  });
});

describe("Roo Code's disabledTools", () => {
  it("is read as excludeTools: the tools it names are not offered, and a call to one is unknown-tool", async () => {
    const path = await write(
      "roo/.roo/mcp.json",
      JSON.stringify({
        mcpServers: {
          local: {
            command: NODE,
            args: [EVERYTHING],
            alwaysAllow: ["get-sum"],
            disabledTools: ["echo"],
            disabled: false,
          },
        },
      }),
    );
    const configs = await readMcpJson(path);
    expect(configs[0]).toMatchObject({ excludeTools: ["echo"] });
    const p = pool(configs);
    // Before: local__echo was offered to the model, switched off as it was.
    const names = await toolNames(p);
    expect(names).toContain("local__get-sum");
    expect(names).not.toContain("local__echo");
    const error = await p.call("local__echo", { message: "x" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as McpPoolError).code).toBe("unknown-tool");
  });

  it("joins excludeTools when both are given, and refuses one that is no list of names", () => {
    const [config] = mcpServers({
      mcpServers: { s: { command: NODE, excludeTools: ["a"], disabledTools: ["b", "a"] } },
    });
    expect(config).toMatchObject({ excludeTools: ["a", "b"] });
    const bad = { mcpServers: { s: { command: NODE, disabledTools: "echo" } } };
    expect(refusal(() => mcpServers(bad as never)).message).toContain("mcpServers.s.disabledTools");
  });
});

describe("Zed's settings.json context_servers", () => {
  it("reads the command and url servers under context_servers, leaves a switched-off one out, and starts them", async () => {
    const path = await write(
      "zed/settings.json",
      `{
  "theme": "One Dark",
  "context_servers": {
    "local": { "source": "custom", "enabled": true, "command": ${JSON.stringify(NODE)}, "args": [${JSON.stringify(EVERYTHING)}], "env": {} },
    "remote": { "url": "http://127.0.0.1:${http.port}/mcp", "headers": { "Authorization": "Bearer z" } },
    "off": { "command": "nothing-here", "enabled": false },
  },
}`,
    );
    // Before: refused as "expected … a .mcp.json document".
    const configs = await readMcpJson(path);
    expect(configs.map((c) => [c.name, c.type])).toEqual([
      ["local", "stdio"],
      ["remote", "http"],
    ]);
    const p = pool(configs);
    expect(await p.call("local__get-sum", { a: 40, b: 2 })).toContain("42");
    expect(await p.call("remote__echo", { message: "zed" })).toContain("zed");
  });

  it("refuses a document with context_servers beside mcpServers", () => {
    const error = refusal(() => mcpServers({ mcpServers: {}, context_servers: {} } as never));
    expect(error.message).toContain("both mcpServers and context_servers");
  });
});

describe("a switch-off after a server of its name, as a stronger layer writes it", () => {
  const weaker = [
    { name: "keep", command: NODE, args: [EVERYTHING] },
    { name: "gone", command: NODE, args: [EVERYTHING] },
  ];

  for (const off of [
    { name: "gone", enabled: false },
    { name: "gone", disabled: true },
  ]) {
    it(`leaves the server out for ${JSON.stringify(off)}: never started`, async () => {
      const p = pool([...weaker, off]);
      await p.connect();
      // Before: "gone" was started beside its switch-off, its tools offered.
      expect(p.status().map((s) => s.name)).toEqual(["keep"]);
      expect((await toolNames(p)).some((n) => n.startsWith("gone__"))).toBe(false);
    });
  }

  it("lets a later entry of the name stand after a switch-off, and still refuses two servers of one name", async () => {
    const again = [{ name: "gone", enabled: false }, ...weaker];
    expect(mcpServers(again).map((c) => c.name)).toEqual(["keep", "gone"]);
    const twice = [...weaker, { name: "gone", command: NODE }];
    expect(refusal(() => mcpServers(twice)).message).toContain("two servers have this name");
  });
});

describe("a start failure with a ${env:VAR} left unfilled", () => {
  it("names the reference and says how to fill it, as for ${VAR}", async () => {
    const p = pool([
      { name: "gh", command: "bash", args: ["-c", "${env:GH_COMMAND}"], env: { T: "${env:T}" } },
    ]);
    const [status] = await p.connect();
    expect(status?.state).toBe("failed");
    // Before: the failure said nothing of the reference bash was given as its script.
    expect(status?.error?.message).toContain(
      "Its args[1] is the reference ${env:GH_COMMAND}; env.T holds a ${…} reference: not filled in",
    );
    expect(status?.error?.message).toContain("mcpServers(servers, { env: process.env })");
  });

  it("starts once mcpServers fills it from env", async () => {
    const servers = mcpServers([{ name: "s", command: "bash", args: ["-c", "${env:RUN}"] }], {
      env: { RUN: `exec '${NODE}' '${EVERYTHING}'` },
    });
    expect(await pool(servers).call("s__echo", { message: "filled" })).toContain("filled");
  });
});
