// Starts test/http-server.mjs (a Streamable HTTP MCP server with given tools) in a process of its
// own, stopped by its pid.
import { spawn } from "node:child_process";
import type { IncomingHttpHeaders } from "node:http";
import { fileURLToPath } from "node:url";

export interface HttpTool {
  /** The tool's entry in `tools/list`, exactly as sent. */
  entry: Record<string, unknown>;
  /** The result of `tools/call`, exactly as sent. */
  result: Record<string, unknown>;
}

export interface HttpMcpServer {
  /** `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** The headers of every MCP request the server received so far, in order. */
  seen(): Promise<IncomingHttpHeaders[]>;
  stop(): void;
}

const SCRIPT = fileURLToPath(new URL("./http-server.mjs", import.meta.url));

export async function startHttpMcp(tools: readonly HttpTool[]): Promise<HttpMcpServer> {
  const child = spawn(process.execPath, [SCRIPT], {
    env: { ...process.env, HTTP_TOOLS: JSON.stringify(tools) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += String(chunk);
      const found = /listening (\d+)/.exec(out);
      if (found) resolve(Number(found[1]));
    });
    child.once("exit", (code) => reject(new Error(`http-server.mjs exited (${code}) before listening`)));
  });
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}/mcp`,
    seen: async () => (await fetch(`${origin}/seen`)).json() as Promise<IncomingHttpHeaders[]>,
    stop: () => {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid);
    },
  };
}
