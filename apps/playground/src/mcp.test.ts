import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { startServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("./main.ts", import.meta.url));
// Run from another directory, so tsx is named by where it is rather than looked up from there.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const everything = fileURLToPath(
  new URL("../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

function playground(args: string[], cwd: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number; out: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--import", tsx, main, ...args],
      { cwd, env: { ...process.env, OPENAI_BASE_URL: undefined, NO_COLOR: "1", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

describe("playground with MCP servers", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "playground-mcp-"));
    const config = { mcpServers: { everything: { command: process.execPath, args: [everything, "stdio"] } } };
    await writeFile(join(dir, "servers.json"), JSON.stringify(config));
    await writeFile(join(dir, "broken.json"), "{ not json");
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("offers the servers of --mcp <file> beside its own tools, and runs their calls", async () => {
    const { code, out } = await playground(
      ["--mcp", "servers.json", "--prompt", "use everything__echo"],
      dir,
    );
    expect(code).toBe(0);
    expect(out).toContain("MCP servers from servers.json: everything (13 tools)");
    expect(out).toContain('→ everything__echo {"message":"use everything__echo"}');
    expect(out).toContain("← everything__echo: Echo: use everything__echo");
  }, 60_000);

  it("reads ./.mcp.json when no --mcp is given", async () => {
    const cwd = await mkdtemp(join(dir, "cwd-"));
    await writeFile(
      join(cwd, ".mcp.json"),
      JSON.stringify({ mcpServers: { e: { command: process.execPath, args: [everything, "stdio"] } } }),
    );
    const { code, out } = await playground(["--prompt", "use e__get-tiny-image"], cwd);
    expect(code).toBe(0);
    expect(out).toContain("MCP servers from .mcp.json: e (13 tools)");
    expect(out).toMatch(/← e__get-tiny-image: .*\[image: image\/png, [\d.]+ kB\]/);
  }, 60_000);

  it("never hands the model the host's key through an MCP tool's result (a server given it prints its env)", async () => {
    const cwd = await mkdtemp(join(dir, "cwd-"));
    const key = "sk-host-key-for-mcp-7788";
    await writeFile(
      join(cwd, ".mcp.json"),
      JSON.stringify({
        mcpServers: {
          e: {
            command: process.execPath,
            args: [everything, "stdio"],
            // biome-ignore lint/suspicious/noTemplateCurlyInString: a .mcp.json ${VAR} reference, meant literally.
            env: { OPENAI_API_KEY: "${OPENAI_API_KEY}" },
          },
        },
      }),
    );
    const endpoint = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
    try {
      const { code, out } = await playground(["--prompt", "use e__get-env"], cwd, {
        OPENAI_BASE_URL: endpoint.baseUrl,
        OPENAI_API_KEY: key,
      });
      expect(code).toBe(0);
      expect(out).toContain("← e__get-env: {");
      const sent = JSON.stringify(endpoint.chatRequests.map((r) => r.body));
      // The server's environment reached the model (its PATH is there) …
      expect(sent).toContain('\\"PATH\\"');
      // … without the key.
      expect(sent).not.toContain(key);
      expect(out).not.toContain(key);
    } finally {
      await endpoint.close();
    }
  }, 60_000);

  it("says a config that is not JSON is not JSON, in one line, and exits 1", async () => {
    const { code, out } = await playground(["--mcp", "broken.json", "--prompt", "hi"], dir);
    expect(code).toBe(1);
    expect(out).toMatch(/^error: .*broken\.json is not JSON\.$/m);
  }, 60_000);
});
