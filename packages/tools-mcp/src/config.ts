import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, resolve, sep } from "node:path";
import { describeValue, McpPoolError, messageOf } from "./errors.js";
import { ownField, ownView } from "./own.js";

/** A server the pool starts as a child process and talks to over stdin and stdout. */
export interface McpStdioServer {
  /** The name tools, catalogue entries, hooks and errors refer to it by. */
  name: string;
  type: "stdio";
  command: string;
  args: string[];
  /** Added to a small safe default environment (PATH, HOME, …). A credential's place: never logged. */
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
  /** Values to mask in anything reported about the server (what `${VAR}` expansion put in). */
  masked?: string[] | undefined;
  /** Only these of the server's tools are offered (Gemini CLI's `includeTools`); all when absent. */
  includeTools?: string[] | undefined;
  /** These of the server's tools are never offered, even when `includeTools` names them. */
  excludeTools?: string[] | undefined;
}

/** A server reached over HTTP: Streamable HTTP, falling back to the legacy SSE transport. */
export interface McpHttpServer {
  name: string;
  /** `http`: Streamable HTTP first, SSE if the server refuses it; `sse`: the legacy SSE transport only. */
  type: "http" | "sse";
  url: string;
  /** Sent with every request. A credential's place: never logged. */
  headers?: Record<string, string> | undefined;
  /** Values to mask in anything reported about the server (what `${VAR}` expansion put in). */
  masked?: string[] | undefined;
  /** Only these of the server's tools are offered (Gemini CLI's `includeTools`); all when absent. */
  includeTools?: string[] | undefined;
  /** These of the server's tools are never offered, even when `includeTools` names them. */
  excludeTools?: string[] | undefined;
}

/** One server as the pool holds it, checked and with its kind settled. */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/**
 * A server as a spec's `bundle.mcpServers` entry or a `.mcp.json` entry spells it: a command line
 * (`command`, `args`, `env`, `cwd`) or a URL (`url`, `headers`), with an optional `type`
 * (`stdio`, `http`, `streamable-http`, `sse`) and `enabled: false` to leave it out.
 */
export interface McpServerEntry {
  name?: string | undefined;
  type?: string | undefined;
  command?: string | undefined;
  args?: readonly string[] | undefined;
  env?: Readonly<Record<string, string>> | undefined;
  cwd?: string | undefined;
  url?: string | undefined;
  /** Gemini CLI's name for a Streamable HTTP `url` (read as `url` with `type: "http"`). */
  httpUrl?: string | undefined;
  /** Windsurf's name for `url`. */
  serverUrl?: string | undefined;
  headers?: Readonly<Record<string, string>> | undefined;
  enabled?: boolean | undefined;
  /** Cline's, Roo's and others' switch: `disabled: true` leaves the server out, as `enabled: false` does. */
  disabled?: boolean | undefined;
  /** Only these of the server's tools are offered. */
  includeTools?: readonly string[] | undefined;
  /** These of the server's tools are never offered. */
  excludeTools?: readonly string[] | undefined;
  /** Roo Code's name for tools switched off: never offered, as `excludeTools`. */
  disabledTools?: readonly string[] | undefined;
}

/**
 * A `.mcp.json` document: each server's entry by its name, under `mcpServers` (Claude Desktop, Claude
 * Code, Cursor, Cline, Roo, Gemini CLI, Windsurf, LM Studio), `servers` (VS Code's `.vscode/mcp.json`)
 * or `context_servers` (Zed's settings.json), only one of them. The fields this package reads are typed (an `args` that is no list of strings does not
 * compile); any other field goes in and is ignored, as at run time, since the files those clients
 * write carry their own (`autoApprove`, `alwaysAllow`, `timeout`, `trust`, …) — so a misspelt field
 * name is not caught until the pool finds no `command` or `url`. A document read from a file comes in through
 * {@link readMcpJson}, or as `JSON.parse` answers it (`any`).
 */
export type McpJsonDocument =
  | { mcpServers: McpJsonServers; servers?: undefined; context_servers?: undefined }
  | {
      servers: McpJsonServers;
      mcpServers?: undefined;
      context_servers?: undefined;
      inputs?: readonly unknown[] | undefined;
    }
  | { context_servers: McpJsonServers; mcpServers?: undefined; servers?: undefined };

/** A document's servers by name. */
// Either: an entry held as a McpServerEntry (an interface, so no index signature of its own), or one
// written out with other clients' fields beside the ones read here.
export type McpJsonServers = Readonly<
  Record<string, McpServerEntry | (McpServerEntry & { readonly [field: string]: unknown })>
>;

/** What {@link createMcpPool} and {@link mcpServers} take: a list of named entries, or a `.mcp.json` document. */
export type McpServersInput = readonly McpServerEntry[] | McpJsonDocument;

/** Options for {@link mcpServers} and {@link readMcpJson}. */
export interface McpServersOptions {
  /**
   * Expand `${VAR}` and `${VAR:-default}` in `command`, `args`, `env` and `headers` values, `cwd`
   * and `url` from this environment (pass `process.env`), as Claude Code does for a `.mcp.json`
   * (VS Code's `${env:VAR}` is read as `${VAR}`).
   * Off by default: a spec document keeps `${VAR}` as the literal it is. What an expansion put in
   * is masked in every message about the server.
   */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /**
   * The folder VS Code's and Cursor's `${workspaceFolder}` (and `${workspaceFolderBasename}`) stand
   * for: the project the file belongs to. {@link readMcpJson} takes the folder around a
   * `.vscode/mcp.json` or `.cursor/mcp.json` when this is not given. Without it, an entry that uses
   * either variable is refused (`invalid-config`), never started with the variable's text in it.
   */
  workspaceFolder?: string | undefined;
}

/** A variable's name, read where a `${` left off (sticky: no copy of the rest of the text). */
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

/**
 * `text` with its `${NAME}` and `${NAME:-default}` references filled: `lookup` gives a variable's
 * value (`undefined` or `""` for unset: the default is used), `missing` refuses an unset one with no
 * default (it throws). A default may hold references of its own (`${DB_PASSWORD:-${PASSWORD}}`, as
 * a shell reads it, and as spec's export writes a literal default it takes out), filled only when the
 * default is used: an unset reference in a default that is not used refuses nothing. A `${` that
 * starts no reference (`${1}`) is kept as written, and so is the rest of the text after a
 * `${NAME:-` that is never closed (an unset reference in it refuses nothing either). One pass,
 * however deep the defaults nest.
 */
function expandReferences(
  text: string,
  lookup: (name: string) => string | undefined,
  missing: (name: string) => never,
): string {
  // One output: a default that is used writes straight into it, one that is not writes nothing. Each
  // open default is a frame (an array, not recursion: a spec of nested defaults is anyone's text).
  let out = "";
  const frames: { outer: boolean; start: number; mark: number }[] = [];
  let use = true;
  let from = 0;
  let at = 0;
  // The first unset reference (no default) in a default that is used, refused once the outermost
  // default around it closes: one never closed is kept as written, and refuses nothing.
  let unset: string | undefined;
  while (at < text.length) {
    const ch = text[at];
    if (ch === "}" && frames.length > 0) {
      if (use) out += text.slice(from, at);
      // Back in the text around the default, written as it was.
      use = (frames.pop() as { outer: boolean }).outer;
      if (frames.length === 0 && unset !== undefined) missing(unset);
      at++;
      from = at;
      continue;
    }
    if (ch !== "$" || text[at + 1] !== "{") {
      at++;
      continue;
    }
    // VS Code spells an environment variable `${env:NAME}`: read as `${NAME}` (it has no default form).
    const prefixed = text.startsWith("env:", at + 2);
    const start = at + (prefixed ? 6 : 2);
    NAME.lastIndex = start;
    const name = NAME.exec(text)?.[0];
    const after = start + (name?.length ?? 0);
    if (name === undefined || (text[after] !== "}" && (prefixed || !text.startsWith(":-", after)))) {
      at += 2;
      continue;
    }
    if (use) out += text.slice(from, at);
    const mark = out.length;
    const value = use ? lookup(name) : undefined;
    const set = value !== undefined && value !== "";
    if (text[after] === "}") {
      if (use && set) out += value;
      else if (use && frames.length === 0) missing(name);
      else if (use) unset ??= name;
      at = after + 1;
    } else {
      if (use && set) out += value;
      frames.push({ outer: use, start: at, mark });
      use = use && !set;
      at = after + 2;
    }
    from = at;
  }
  const open = frames[0];
  // A `${NAME:-` never closed is kept as written, from where it starts.
  if (open !== undefined) return out.slice(0, open.mark) + text.slice(open.start);
  return out + text.slice(from);
}

/**
 * `${NAME}`, `${NAME:-` and VS Code's `${env:NAME}` as {@link expandReferences} reads them: the
 * references a text holds.
 */
const REFERENCE = /\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)(\}|:-)/g;

/**
 * Where a stdio server's command line still holds `${NAME}` references no expansion filled (the
 * config did not come through {@link mcpServers} with `env`): `args[1] is ${GH_COMMAND}`, for the
 * failure of a start, which may be why — a reference left as it is reaches the server as that text,
 * and one that is a whole `sh -c` script is run by the shell as an empty one. An `env` value is
 * named by its key only (it is a credential's place). Empty for an HTTP server and for a config an
 * expansion filled (it has `masked` values): what is left there came with a value.
 */
export function unfilledReferences(config: McpServerConfig): string[] {
  if (config.type !== "stdio" || (config.masked?.length ?? 0) > 0) return [];
  const found: string[] = [];
  const look = (text: string, where: string, named = true) => {
    const refs = [
      ...new Set(
        [...text.matchAll(REFERENCE)]
          // `${env:NAME:-` is no reference (VS Code's form has no default): expansion keeps it too.
          .filter((m) => m[1] === undefined || m[3] === "}")
          .map((m) => `\${${m[1] ?? ""}${m[2]}${m[3] === "}" ? "}" : ":-…}"}`),
      ),
    ];
    if (refs.length === 0) return;
    const shown =
      refs.length > 3 ? `${refs.slice(0, 3).join(", ")} and ${refs.length - 3} more` : refs.join(", ");
    if (!named) found.push(`${where} holds a \${…} reference`);
    else if (refs.length === 1 && refs[0] === text) found.push(`${where} is the reference ${text}`);
    else found.push(`${where} holds ${shown}`);
  };
  look(config.command, "command");
  for (const [i, arg] of config.args.entries()) look(arg, `args[${i}]`);
  if (config.cwd !== undefined) look(config.cwd, "cwd");
  for (const [key, value] of Object.entries(config.env ?? {})) look(value, `env.${key}`, false);
  return found;
}

function expandConfig(
  given: McpServerConfig,
  env: Readonly<Record<string, string | undefined>>,
  at: string,
): McpServerConfig {
  // Built by entryToConfig with only the fields given: a `cwd` it has none of is not Object.prototype's.
  const config = ownView(given);
  const masked: string[] = [];
  const expand = (text: string, where: string): string =>
    expandReferences(
      text,
      (name) => {
        // The environment's own variables only: `env[name]` also reads what every object inherits,
        // so `${toString}`, `${constructor}` and `${__proto__}` were filled with a function's source
        // or "[object Object]" (process.env too) where they are unset.
        const value = Object.hasOwn(env, name) ? env[name] : undefined;
        if (typeof value !== "string") return undefined;
        if (value !== "") masked.push(value);
        return value;
      },
      (name) => {
        throw invalid(
          where,
          `\${${name}} is not set in the environment, and has no default (\${${name}:-default}).`,
        );
      },
    );
  const map = (values: Record<string, string> | undefined, where: string) =>
    values && Object.fromEntries(Object.entries(values).map(([k, v]) => [k, expand(v, `${where}.${k}`)]));
  if (config.type === "stdio") {
    const out: McpStdioServer = {
      ...config,
      command: expand(config.command, `${at}.command`),
      args: config.args.map((arg, i) => expand(arg, `${at}.args[${i}]`)),
    };
    const envValues = map(config.env, `${at}.env`);
    if (envValues) out.env = envValues;
    if (config.cwd !== undefined) out.cwd = expand(config.cwd, `${at}.cwd`);
    return masked.length ? { ...out, masked } : out;
  }
  const out: McpHttpServer = { ...config, url: expand(config.url, `${at}.url`) };
  const headers = map(config.headers, `${at}.headers`);
  if (headers) out.headers = headers;
  checkUrl(out.url, at);
  return masked.length ? { ...out, masked } : out;
}

const HTTP_TYPES = new Set(["http", "streamable-http", "streamableHttp", "streamable_http"]);

function invalid(at: string, what: string): McpPoolError {
  return new McpPoolError("invalid-config", `${at}: ${what}`);
}

function stringMap(value: unknown, at: string): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(at, `expected an object of strings, got ${describeValue(value)}.`);
  }
  const entries = Object.entries(value);
  for (const [key, entry] of entries) {
    // The value may be a credential: name its key, never show it.
    if (typeof entry !== "string")
      throw invalid(`${at}.${key}`, `expected a string, got ${describeValue(entry)}.`);
  }
  // Built from its entries, never by assignment: `out["__proto__"] = value` sets no variable or header
  // (it is the prototype's setter), so one named `__proto__` in a .mcp.json was silently left out.
  return Object.fromEntries(entries) as Record<string, string>;
}

/** A checked config's `masked` values carried over when it is checked again (`createMcpPool(readMcpJson(…))`). */
function maskedOf(e: Record<string, unknown>): { masked?: string[] } {
  const masked = e.masked;
  return Array.isArray(masked) && masked.every((m) => typeof m === "string") && masked.length
    ? { masked: [...masked] }
    : {};
}

/**
 * VS Code's `${input:id}` (a prompt for a value), `${command:id}` (a command's answer) and
 * `${config:name}` (a setting): nothing here can ask, run or read them (`${input:github_token}`).
 */
const EDITOR_REFERENCE = /\$\{(input|command|config):([^}]*)\}/;

const EDITOR_REFERENCE_IS = {
  input: "asks VS Code to prompt for a value",
  command: "asks VS Code to run a command for a value",
  config: "reads a VS Code setting",
} as const;

/** Every string an entry's fields hold that this package reads, with its place. */
function entryStrings(e: Record<string, unknown>, at: string): [text: string, where: string][] {
  const out: [string, string][] = [];
  for (const field of ["command", "cwd", "url", "httpUrl", "serverUrl"]) {
    if (typeof e[field] === "string") out.push([e[field] as string, `${at}.${field}`]);
  }
  if (Array.isArray(e.args)) {
    for (const [i, arg] of e.args.entries()) if (typeof arg === "string") out.push([arg, `${at}.args[${i}]`]);
  }
  for (const field of ["env", "headers"]) {
    const map = e[field];
    if (typeof map === "object" && map !== null && !Array.isArray(map)) {
      for (const [key, value] of Object.entries(map))
        if (typeof value === "string") out.push([value, `${at}.${field}.${key}`]);
    }
  }
  return out;
}

/**
 * Refuses an entry whose strings hold a `${input:…}`, `${command:…}` or `${config:…}` reference:
 * sent as written, the literal text went to the server as its token or header. Names the field and
 * the reference, never the value.
 */
function refuseInputs(e: Record<string, unknown>, at: string): void {
  for (const [text, where] of entryStrings(e, at)) {
    const found = EDITOR_REFERENCE.exec(text);
    if (found) {
      const kind = found[1] as keyof typeof EDITOR_REFERENCE_IS;
      throw invalid(
        where,
        `\${${kind}:${found[2]}} ${EDITOR_REFERENCE_IS[kind]}, which cannot be done here; write the value, or a \${VAR} reference read with the env option, in its place.`,
      );
    }
  }
}

/**
 * The variables VS Code and Cursor fill in a server's strings for the editor's own state:
 * `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}` and `${/}`.
 */
const EDITOR_VARIABLE = /\$\{(userHome|workspaceFolder|workspaceFolderBasename|pathSeparator|\/)\}/g;

/**
 * The entry with its editor variables filled, as VS Code and Cursor fill them: the home folder, the
 * path separator, and the workspace folder from `folder`. One that needs the workspace folder when
 * `folder` is not known is refused, naming the place and the variable: sent as written, the server
 * got the text `${workspaceFolder}/data` as its path.
 */
function fillEditorVariables(
  e: Record<string, unknown>,
  at: string,
  folder: string | undefined,
  expanding: boolean,
): Record<string, unknown> {
  const value = (name: string, where: string): string => {
    if (name === "userHome") return homedir();
    if (name === "pathSeparator" || name === "/") return sep;
    if (folder === undefined) {
      throw invalid(
        where,
        `\${${name}} stands for the folder VS Code or Cursor has open, which is not known here; pass the workspaceFolder option (readMcpJson takes the folder around a .vscode/mcp.json or .cursor/mcp.json itself).`,
      );
    }
    return name === "workspaceFolder" ? folder : basename(folder);
  };
  const fill = (text: string, where: string) =>
    text.replace(EDITOR_VARIABLE, (_whole, name: string) => {
      const filled = value(name, where);
      // The env option's expansion reads the filled text next: a folder named `${GITHUB_TOKEN}` had
      // the token filled into the server's path, sent where the path goes (VS Code fills once).
      if (expanding && filled.includes("${")) {
        throw invalid(
          where,
          `\${${name}} stands for a path holding "\${", which the env option's expansion would read as a reference and fill; use a folder without it.`,
        );
      }
      return filled;
    });
  if (!entryStrings(e, at).some(([text]) => text.includes("${"))) return e;
  // Over the entry's own view (which has no prototype): a field it has none of still reads as
  // absent, and one a class's getter gives (`type`, `excludeTools`) is still read — a copy of its
  // keys left those out, so an sse server became http and excluded tools were offered.
  const out: Record<string, unknown> = Object.create(e);
  for (const field of ["command", "cwd", "url", "httpUrl", "serverUrl"]) {
    if (typeof e[field] === "string") out[field] = fill(e[field] as string, `${at}.${field}`);
  }
  if (Array.isArray(e.args)) {
    out.args = e.args.map((arg, i) => (typeof arg === "string" ? fill(arg, `${at}.args[${i}]`) : arg));
  }
  for (const field of ["env", "headers"]) {
    const map = e[field];
    if (typeof map === "object" && map !== null && !Array.isArray(map)) {
      out[field] = Object.fromEntries(
        Object.entries(map).map(([key, value]) => [
          key,
          typeof value === "string" ? fill(value, `${at}.${field}.${key}`) : value,
        ]),
      );
    }
  }
  return out;
}

/**
 * Gemini CLI's `includeTools` and `excludeTools`, and Roo Code's `disabledTools` (tools hidden from
 * the model, read as `excludeTools`), checked: lists of tool names.
 */
function toolFilters(
  e: Record<string, unknown>,
  at: string,
): { includeTools?: string[]; excludeTools?: string[] } {
  const out: { includeTools?: string[]; excludeTools?: string[] } = {};
  for (const field of ["includeTools", "excludeTools", "disabledTools"] as const) {
    const value = e[field];
    if (value === undefined) continue;
    if (!Array.isArray(value) || value.some((v) => typeof v !== "string"))
      throw invalid(`${at}.${field}`, "expected an array of tool names (strings).");
    const names = value as string[];
    if (field === "includeTools") out.includeTools = [...names];
    // Roo Code's list of switched-off tools was ignored, and the model was offered them.
    else out.excludeTools = [...new Set([...(out.excludeTools ?? []), ...names])];
  }
  return out;
}

function checkUrl(text: string, at: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`${at}.url`, "not an absolute URL.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid(`${at}.url`, `expected http: or https:, got ${url.protocol}`);
  }
}

function entryToConfig(
  entry: unknown,
  name: string,
  at: string,
  expanding: boolean,
  workspaceFolder: string | undefined,
): McpServerConfig | undefined {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    throw invalid(
      at,
      `expected a server object ({ command, args } or { url }), got ${describeValue(entry)}.`,
    );
  }
  // Read as the host wrote it: never a field only a polluted Object.prototype holds.
  const given = ownView(entry) as Record<string, unknown>;
  // Cline, Roo and others switch a server off with `disabled: true`; read as `enabled: false` is,
  // since a server the user switched off was started, its tools offered, its credentials sent.
  if (given.enabled === false || given.disabled === true) return undefined;
  if (name.trim() === "") throw invalid(at, "a server needs a non-empty name.");
  refuseInputs(given, at);
  const e = fillEditorVariables(given, at, workspaceFolder, expanding);
  if (e.envFile !== undefined) {
    // Not read: a server started without the variables the file holds fails in ways far from here.
    throw invalid(
      `${at}.envFile`,
      "envFile is not read here; put the variables it holds in env (with ${VAR} references and readMcpJson's env option for secrets).",
    );
  }
  const filters = toolFilters(e, at);
  // Gemini CLI's `httpUrl` and Windsurf's `serverUrl` are the `url` of an HTTP server.
  const urlFields = ["url", "httpUrl", "serverUrl"].filter((field) => e[field] !== undefined);
  if (urlFields.length > 1) {
    throw invalid(at, `has both ${urlFields.join(" and ")}; give one URL (url).`);
  }
  const urlField = urlFields[0] ?? "url";
  const type = e.type;
  if (type !== undefined && typeof type !== "string")
    throw invalid(`${at}.type`, `expected a string, got ${describeValue(type)}.`);
  const hasUrl = urlFields.length > 0;
  const hasCommand = e.command !== undefined;
  if (type === "stdio" || (type === undefined && hasCommand && !hasUrl)) {
    if (typeof e.command !== "string" || e.command.trim() === "") {
      throw invalid(`${at}.command`, "a stdio server needs a command (a non-empty string).");
    }
    const args = e.args ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
      throw invalid(`${at}.args`, "expected an array of strings.");
    }
    if (e.cwd !== undefined && typeof e.cwd !== "string")
      throw invalid(`${at}.cwd`, `expected a string, got ${describeValue(e.cwd)}.`);
    const env = stringMap(e.env, `${at}.env`);
    return {
      name,
      type: "stdio",
      command: e.command,
      args: [...(args as string[])],
      ...(env ? { env } : {}),
      ...(typeof e.cwd === "string" ? { cwd: e.cwd } : {}),
      ...maskedOf(e),
      ...filters,
    };
  }
  if (type === "sse" || (type !== undefined && HTTP_TYPES.has(type)) || (type === undefined && hasUrl)) {
    const url = e[urlField];
    if (typeof url !== "string") throw invalid(`${at}.${urlField}`, "an HTTP server needs a url (a string).");
    // With expansion on, the URL is checked once its references are filled in.
    if (!expanding) checkUrl(url, at);
    const headers = stringMap(e.headers, `${at}.headers`);
    return {
      name,
      type: type === "sse" ? "sse" : "http",
      url,
      ...(headers ? { headers } : {}),
      ...maskedOf(e),
      ...filters,
    };
  }
  if (type !== undefined)
    throw invalid(
      `${at}.type`,
      `unknown server type "${type}" (expected stdio, http, streamable-http or sse).`,
    );
  throw invalid(at, "a server needs either a command (stdio) or a url (HTTP).");
}

/** Where a document holds its servers: most clients, VS Code, Zed. */
const DOCUMENT_KEYS = ["mcpServers", "servers", "context_servers"] as const;

/**
 * Checks server entries and settles each one's kind. Reads a list of named entries (a spec's
 * `bundle.mcpServers`) or a `.mcp.json` document (`{ mcpServers: { name: entry } }`); entries with
 * `enabled: false` are left out. With `options.env`, `${VAR}` and `${VAR:-default}` are expanded.
 * Returns new objects; never mutates its input.
 *
 * Throws `McpPoolError` (`invalid-config`) naming the place of the first problem
 * (`mcpServers.github.args`, `[2].url`) — never the value, which may be a credential — and for
 * two servers with one name.
 */
export function mcpServers(input: McpServersInput, options: McpServersOptions = {}): McpServerConfig[] {
  const out: McpServerConfig[] = [];
  const env = ownField(options, "env") as McpServersOptions["env"];
  const folder = ownField(options, "workspaceFolder");
  if (folder !== undefined && (typeof folder !== "string" || folder.trim() === "")) {
    throw invalid(
      "workspaceFolder",
      `expected a folder's path (a non-empty string), got ${describeValue(folder)}.`,
    );
  }
  const settle = (config: McpServerConfig | undefined, at: string) => {
    if (config) out.push(env ? expandConfig(config, env, at) : config);
  };
  if (Array.isArray(input)) {
    input.forEach((entry, index) => {
      const name = ownField(entry, "name");
      if (typeof name !== "string") throw invalid(`[${index}].name`, "each server needs a name (a string).");
      const config = entryToConfig(entry, name, `[${index}]`, env !== undefined, folder);
      if (config === undefined) {
        // A switch-off ({ name, enabled: false } or Cline's disabled: true) after an entry of its name
        // is a stronger layer's, as in a spec (resolveAgentSpec) and as a JSON document's later key:
        // the earlier server was started beside it, the one the user switched off.
        for (let i = out.length - 1; i >= 0; i--) if (out[i]?.name === name) out.splice(i, 1);
      }
      settle(config, `[${index}]`);
    });
  } else if (typeof input === "object" && input !== null) {
    // VS Code's `.vscode/mcp.json` holds its servers under `servers`, Zed's settings.json under
    // `context_servers`; the others under `mcpServers`.
    const keys = DOCUMENT_KEYS.filter((key) => key in ownView(input));
    if (keys.length === 0) {
      throw invalid(
        "servers",
        `expected an array of servers or a .mcp.json document ({ mcpServers }, VS Code's { servers } or Zed's { context_servers }), got ${describeValue(input)}.`,
      );
    }
    if (keys.length > 1)
      throw invalid(keys[1] as string, `the document has both ${keys.join(" and ")}; keep one.`);
    const key = keys[0] as (typeof DOCUMENT_KEYS)[number];
    const servers = ownField(input, key);
    if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
      throw invalid(key, `expected an object of servers by name, got ${describeValue(servers)}.`);
    }
    for (const [name, entry] of Object.entries(servers)) {
      settle(entryToConfig(entry, name, `${key}.${name}`, env !== undefined, folder), `${key}.${name}`);
    }
  } else {
    throw invalid(
      "servers",
      `expected an array of servers or a .mcp.json document ({ mcpServers }, VS Code's { servers } or Zed's { context_servers }), got ${describeValue(input)}.`,
    );
  }
  const seen = new Set<string>();
  for (const server of out) {
    if (seen.has(server.name)) throw invalid(server.name, "two servers have this name; each needs its own.");
    seen.add(server.name);
  }
  return out;
}

/**
 * `text` with the comments (`// …`, `/* … *\/`) and trailing commas of JSON with comments taken out,
 * outside strings only: what VS Code and the clients built on it accept in their config files.
 */
function withoutComments(text: string): string {
  let out = "";
  // A comma is held back, with the blanks after it, until what follows shows whether it is a
  // trailing one (a close comes next: it is left out). Trimming the whole output at each close went
  // over all of it each time: a file of many `]` took time growing with its size squared.
  let comma = false;
  let held = "";
  const put = (piece: string) => {
    if (comma) out += `,${held}`;
    comma = false;
    held = "";
    out += piece;
  };
  let at = 0;
  while (at < text.length) {
    const ch = text[at] as string;
    if (ch === '"') {
      // A string as it is, escapes and all.
      let end = at + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      put(text.slice(at, end + 1));
      at = end + 1;
    } else if (ch === "/" && text[at + 1] === "/") {
      while (at < text.length && text[at] !== "\n") at++;
    } else if (ch === "/" && text[at + 1] === "*") {
      const end = text.indexOf("*/", at + 2);
      at = end === -1 ? text.length : end + 2;
      if (comma) held += " ";
      else out += " ";
    } else if (ch === "}" || ch === "]") {
      // A comma with only blanks (and comments) after it before the close is a trailing one.
      comma = false;
      held = "";
      out += ch;
      at++;
    } else if (ch === ",") {
      put("");
      comma = true;
      at++;
    } else if (comma && /\s/.test(ch)) {
      held += ch;
      at++;
    } else {
      put(ch);
      at++;
    }
  }
  if (comma) out += `,${held}`;
  return out;
}

/**
 * The project a `<folder>/.vscode/mcp.json` or `<folder>/.cursor/mcp.json` belongs to, for
 * `${workspaceFolder}`; none for any other file, nor for Cursor's own `~/.cursor/mcp.json` (there the
 * variable means whichever project is open).
 */
function workspaceFolderOf(path: string): string | undefined {
  const file = resolve(path);
  const parent = dirname(file);
  if (basename(file) !== "mcp.json" || ![".vscode", ".cursor"].includes(basename(parent))) return undefined;
  const folder = dirname(parent);
  return folder === resolve(homedir()) ? undefined : folder;
}

/**
 * Reads a `.mcp.json` file (the shape Claude Code, Cursor and VS Code write) into checked server
 * configs, as {@link mcpServers} does (with `options.env`, `${VAR}` references expanded). Throws `McpPoolError` (`invalid-config`) when the file cannot
 * be read or is not JSON (naming the file, never quoting it), and for any bad entry.
 */
export async function readMcpJson(path: string, options: McpServersOptions = {}): Promise<McpServerConfig[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new McpPoolError("invalid-config", `Could not read ${path}: ${messageOf(error)}`, { cause: error });
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    try {
      // VS Code, Cursor, Gemini CLI and Zed read their files as JSON with comments and trailing
      // commas (Gemini CLI's own example has a commented-out line): such a file was "not JSON".
      document = JSON.parse(withoutComments(text));
    } catch {
      // The parser's message quotes the text around the fault, which may be a credential: say less.
      throw new McpPoolError("invalid-config", `${path} is not JSON.`);
    }
  }
  const folder = ownField(options, "workspaceFolder") ?? workspaceFolderOf(path);
  try {
    return mcpServers(
      document as McpServersInput,
      folder === undefined ? options : { ...options, workspaceFolder: folder as string },
    );
  } catch (error) {
    if (McpPoolError.isInstance(error)) {
      throw new McpPoolError("invalid-config", `${path}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}
