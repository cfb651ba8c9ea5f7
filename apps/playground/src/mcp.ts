// MCP servers for the playground: from --mcp <file>, or from a ./.mcp.json found in the working
// directory once the user said yes to starting them. Their tools are offered beside the built-in
// ones, and their calls go to the pool.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ToolDefinition } from "@loopwright/loop";
import { looksLikeKey, looksSecretName } from "@loopwright/spec";
import { createMcpPool, type McpPool, type McpServerConfig, readMcpJson } from "@loopwright/tools-mcp";
import { shownUrl } from "./web/spec.js";

/** The servers a config names, connected: their tools, the pool, and a line saying what started. */
export interface PlaygroundMcp {
  pool: McpPool;
  tools: ToolDefinition[];
  summary: string;
}

/** What {@link loadMcp} reads besides the file. */
export interface LoadMcpOptions {
  /** Told why a found `./.mcp.json` was not started, and of servers failing or restarting. */
  onNotice: (text: string) => void;
  /**
   * Asks the user a question and resolves to the line they answered. Given, a found `./.mcp.json`
   * is listed and started only on `y`/`yes`; absent (no terminal to ask at), it is never started.
   */
  ask?: (question: string) => Promise<string>;
  /** Where `./.mcp.json` is looked for and `file` is read from (default: the working directory). */
  cwd?: string;
  /** What `${VAR}` in the file is filled in from (default: `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** The file looked for in the working directory when no `--mcp` is given. */
const FOUND = ".mcp.json";

/** What the consent question shows in place of an argument that may be a credential. */
const HIDDEN_ARG = "(hidden)";

/**
 * A command line as the consent question shows it: a key-shaped argument, the value of a flag or
 * assignment named like a credential (`--token X`, `--api-key=X`, `-e GITHUB_TOKEN=X`) hidden, a
 * `${VAR}` reference shown as written, a URL without its userinfo and query.
 */
function shownArgs(args: readonly string[]): string[] {
  return args.map((arg, i) => {
    if (/^\$\{[^}]+\}$/.test(arg)) return arg;
    if (looksLikeKey(arg)) return HIDDEN_ARG;
    const assigned = /^(-{0,2}[A-Za-z][\w.-]*)=(.+)$/s.exec(arg);
    if (assigned && looksSecretName(assigned[1] as string)) return `${assigned[1]}=${HIDDEN_ARG}`;
    const flag = args[i - 1];
    if (flag && /^--?[A-Za-z][\w.-]*$/.test(flag) && looksSecretName(flag) && !arg.startsWith("-"))
      return HIDDEN_ARG;
    return shownUrl(arg);
  });
}

/** One server as the consent question lists it: what runs or where it goes, and the names (never the values) of its env and headers. */
function describe(server: McpServerConfig): string {
  if (server.type === "stdio") {
    const names = Object.keys(server.env ?? {});
    return `  ${server.name}: ${[server.command, ...shownArgs(server.args)].join(" ")}${names.length ? ` (env: ${names.join(", ")})` : ""}`;
  }
  const names = Object.keys(server.headers ?? {});
  return `  ${server.name}: ${shownUrl(server.url)}${names.length ? ` (headers: ${names.join(", ")})` : ""}`;
}

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

/**
 * Connects the servers of `file`, or of a `./.mcp.json` the user agreed to start. Resolves to
 * undefined when there is nothing to start.
 *
 * A file named with `--mcp` is the user's choice and is started. A `./.mcp.json` found in the
 * working directory belongs to whatever repository the playground was started in: it lists programs
 * to run and `${VAR}`s to fill in from the environment (an API key among them), so it is never
 * started without consent — with `ask`, its servers and commands are listed and started on `y`;
 * without, or on any other answer, a notice says how to opt in (`--mcp .mcp.json`) and nothing
 * runs. A found file that cannot be read is named in a notice, not thrown.
 *
 * Throws `McpPoolError` for a `--mcp` file that is missing or malformed; a server that fails to
 * start is named in the summary, and the rest work.
 */
export async function loadMcp(
  file: string | undefined,
  options: LoadMcpOptions,
): Promise<PlaygroundMcp | undefined> {
  const { onNotice, ask } = options;
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  if (file !== undefined) return start(resolve(cwd, file), file, env, onNotice);
  const found = join(cwd, FOUND);
  if (!existsSync(found)) return undefined;
  let servers: McpServerConfig[];
  try {
    // Read as written, nothing filled in: only to say what it would start.
    servers = await readMcpJson(found);
  } catch (error) {
    onNotice(`./${FOUND} is not used: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  if (servers.length === 0) return undefined;
  const n = servers.length;
  const optIn = `To use ${plural(n, "it", "them")}: --mcp ${FOUND}`;
  if (ask) {
    const answer = await ask(
      `./${FOUND} in this directory lists ${plural(n, "an MCP server", "MCP servers")} to start:\n` +
        `${servers.map(describe).join("\n")}\n` +
        `Starting ${plural(n, "it runs that command", "them runs these commands")}, with each \${VAR} filled in from your environment. ` +
        `Start ${plural(n, "it", "them")}? [y/N] `,
    );
    if (/^\s*y(es)?\s*$/i.test(answer)) return start(found, FOUND, env, onNotice);
    onNotice(`./${FOUND} not started. ${optIn}`);
    return undefined;
  }
  onNotice(
    `./${FOUND} lists ${n} MCP ${plural(n, "server", "servers")} (${servers.map((s) => s.name).join(", ")}), ` +
      `${plural(n, "a program", "programs")} this directory asks to run: not started without your consent. ${optIn}`,
  );
  return undefined;
}

async function start(
  path: string,
  shown: string,
  env: Readonly<Record<string, string | undefined>>,
  onNotice: (text: string) => void,
): Promise<PlaygroundMcp> {
  const pool = createMcpPool(await readMcpJson(path, { env }), { onNotice });
  const statuses = await pool.connect();
  const tools = (await pool.tools()) as ToolDefinition[];
  const parts = statuses.map((s) =>
    s.state === "connected" ? `${s.name} (${s.tools} tools)` : `${s.name} (failed)`,
  );
  return { pool, tools, summary: `MCP servers from ${shown}: ${parts.join(", ") || "none"}` };
}
