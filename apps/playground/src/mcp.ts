// MCP servers for the playground: from --mcp <file>, else ./.mcp.json when there is one. Their
// tools are offered beside the built-in ones, and their calls go to the pool.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { ToolDefinition } from "@loopwright/loop";
import { createMcpPool, type McpPool, readMcpJson } from "@loopwright/tools-mcp";

/** The servers a config names, connected: their tools, the pool, and a line saying what started. */
export interface PlaygroundMcp {
  pool: McpPool;
  tools: ToolDefinition[];
  summary: string;
}

/**
 * Reads `file` (or `./.mcp.json` when no file is given and one exists) and connects its servers.
 * Resolves to undefined when there is nothing to read. Throws `McpPoolError` for a file that is
 * missing or malformed; a server that fails to start is named in the summary, and the rest work.
 */
export async function loadMcp(
  file: string | undefined,
  onNotice: (text: string) => void,
): Promise<PlaygroundMcp | undefined> {
  const path = file ?? (existsSync(".mcp.json") ? ".mcp.json" : undefined);
  if (!path) return undefined;
  const pool = createMcpPool(await readMcpJson(resolve(path), { env: process.env }), { onNotice });
  const statuses = await pool.connect();
  const tools = (await pool.tools()) as ToolDefinition[];
  const parts = statuses.map((s) =>
    s.state === "connected" ? `${s.name} (${s.tools} tools)` : `${s.name} (failed)`,
  );
  return { pool, tools, summary: `MCP servers from ${path}: ${parts.join(", ") || "none"}` };
}
