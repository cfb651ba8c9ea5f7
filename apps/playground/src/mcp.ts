// MCP servers for the playground: from --mcp <file>, or from a ./.mcp.json found in the working
// directory once the user said yes to starting them. Their tools are offered beside the built-in
// ones, and their calls go to the pool.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { ToolDefinition } from "@loopwright/loop";
import { type SecretHide, withoutSecrets } from "@loopwright/spec";
import {
  createMcpPool,
  type McpPool,
  type McpServerConfig,
  mcpServers,
  readMcpJson,
  type ToolContentPart,
} from "@loopwright/tools-mcp";
import { escapeUnseen } from "./printable.js";
import { withoutKeys } from "./tools/index.js";
import { shownServerArgs, shownUrl, withoutServerArgSecrets } from "./web/spec.js";

/** The servers a config names, connected: their tools, the pool, and a line saying what started. */
export interface PlaygroundMcp {
  pool: McpPool;
  tools: ToolDefinition[];
  summary: string;
}

/** What {@link loadMcp} reads besides the file. */
export interface LoadMcpOptions {
  /**
   * Told why a found `./.mcp.json` was not started, and of servers failing or restarting (the host's
   * `OPENAI_API_KEY` replaced by `[redacted]` in what a server wrote to stderr).
   */
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

/** What the consent question shows in place of a credential. */
const HIDDEN = "(hidden)";

/**
 * Text a shell acts on, whitespace, or a path (`./x`, `/x`, `~/x`): what a plain token never holds.
 * A credential-named part holding one may be a command or a program rather than a secret.
 */
const NOT_A_TOKEN = /[\s$`;|&<>()\\'"]|^[./~]/;

/** `NOT_A_TOKEN` without whitespace: what a shell acts on, or a path. */
const SHELL_TEXT = /[$`;|&<>()\\'"]|^[./~]/;

/** What the consent question shows in place of a credential that is not a plain token. */
const HIDDEN_ODD = "(hidden, and not a plain token: read the file)";

/**
 * What the consent question puts in place of a credential spec found: always hidden — a
 * password with `$&;` in it, a base64 key starting with `/` and a URL's userinfo are credentials
 * too — but marked when it is not a plain token (shell text, whitespace, a path), so a name like
 * `GITHUB_TOKEN=` or `credential.helper=` cannot quietly hide a command: the user is told to read
 * the file.
 */
const hide: SecretHide = (secret, name) =>
  // A key shape (no name) may hold a space ("Bearer …"); a URL's userinfo never holds shell text.
  (name === undefined ? SHELL_TEXT : NOT_A_TOKEN).test(secret) ? HIDDEN_ODD : HIDDEN;

/**
 * A string as the terminal is shown it: each control or invisible character written as an escape
 * (`\x1b`, `\u202e`), so the file cannot move the cursor or reorder the line; in double quotes
 * when it is empty or holds whitespace or a quote, so each argument reads as one.
 */
function shown(text: string): string {
  const escaped = escapeUnseen(text);
  return escaped === "" || /[\s"']/.test(escaped) ? `"${escaped.replace(/"/g, '\\"')}"` : escaped;
}

/**
 * One server as the consent question lists it, every part escaped: the command line as written,
 * its `cwd`, and its env values (all decide what runs), with only what spec's `withoutArgSecrets`
 * and `withoutSecrets` find taken out (a credential-named flag's, assignment's or header's value,
 * a URL's userinfo and telling query values, each key-shaped part; `${VAR}` references shown as
 * written); for an HTTP server, its URL without userinfo and query, and only the names of its headers.
 *
 * A shell's own command (after `sh -c`, `bash -lc`, …) is what the user agrees to run, so it is
 * never hidden whole, as spec's export rule replaces one that may hold a credential: it is shown
 * with each secret's value hidden where it is written (web/spec.ts `shownShellCommand`), and, when spec
 * reports it, `SHELL_MARK` after it — a telling word in a hostile payload marks the payload,
 * it cannot blank it.
 */
function describe(server: McpServerConfig): string {
  const name = shown(server.name);
  if (server.type === "stdio") {
    const args = server.args;
    // Read with the command's words before them: `node -e`, ssh's remote command and `pwsh -Com`
    // are known by their program, as spec's findSpecSecrets knows them.
    // A script tight to its flag (`-cCODE`) is shown after its flag; ssh's remote command given as
    // words is shown as the one line ssh sends, so a flag and its value are read together.
    const safe = withoutServerArgSecrets(server.command, args, hide);
    const line = [
      shown(withoutSecrets(server.command, undefined, hide)),
      ...shownServerArgs(args, server.command, safe, hide).map((word) =>
        word.mark ? word.text : shown(word.text),
      ),
    ];
    const env = Object.entries(server.env ?? {}).map(
      ([k, v]) => `${shown(k)}=${shown(withoutSecrets(v, k, hide))}`,
    );
    return (
      `  ${name}: ${line.join(" ")}` +
      `${server.cwd !== undefined ? ` (cwd: ${shown(server.cwd)})` : ""}` +
      `${env.length ? ` (env: ${env.join(", ")})` : ""}`
    );
  }
  const names = Object.keys(server.headers ?? {}).map(shown);
  return `  ${name}: ${shown(shownUrl(server.url))}${names.length ? ` (headers: ${names.join(", ")})` : ""}`;
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
  if (file !== undefined) return start(await readMcpJson(resolve(cwd, file), { env }), file, onNotice);
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
    // Started from what was read and shown, with its `${VAR}`s filled in: the file is not read
    // again, so a change made to it while the question waited starts nothing.
    if (/^\s*y(es)?\s*$/i.test(answer)) return start(mcpServers(servers, { env }), FOUND, onNotice);
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
  servers: McpServerConfig[],
  from: string,
  onNotice: (text: string) => void,
): Promise<PlaygroundMcp> {
  // The pool masks the values it gave a server; a server may have read the host's key elsewhere.
  const pool = createMcpPool(servers, { onNotice: (text) => onNotice(withoutKeys(text)) });
  const statuses = await pool.connect();
  const tools = (await pool.tools()) as ToolDefinition[];
  const parts = statuses.map((s) =>
    s.state === "connected" ? `${s.name} (${s.tools} tools)` : `${s.name} (failed)`,
  );
  return { pool, tools, summary: `MCP servers from ${from}: ${parts.join(", ") || "none"}` };
}

/**
 * Calls an MCP tool through the pool with each of `keys` (by default the host's `OPENAI_API_KEY`)
 * replaced by `[redacted]` in either outcome: in the result, and in a failure's message, stack and
 * causes (an `isError` result or a JSON-RPC error is thrown as `McpPoolError`, quoting the server's
 * words). The pool masks only the credentials it gave a server; one that read the key another way
 * (a project's `.env`) may quote it in either. What this resolves to or throws is what the model,
 * the terminal and a session file are given.
 */
export async function callMcp(
  pool: McpPool,
  name: string,
  args: unknown,
  signal?: AbortSignal,
  keys?: readonly string[],
): Promise<string | ToolContentPart[]> {
  try {
    return withoutKeys(await pool.call(name, args, signal), keys);
  } catch (error) {
    // The error is this call's own: redacted where it is, as `withoutKeys` does an error.
    throw withoutKeys(error, keys);
  }
}
