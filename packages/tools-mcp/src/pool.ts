import { restoreArguments, sanitizeTools } from "@loopwright/schema-compat";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { type McpServerConfig, type McpServersInput, mcpServers } from "./config.js";
import {
  type McpElicitation,
  type McpElicitationAnswer,
  ServerConnection,
  type ServerStatus,
} from "./connection.js";
import { type McpToolOutput, type ToolContentPart, toolOutput } from "./content.js";
import { describeValue, echoedName, McpPoolError, messageOf } from "./errors.js";
import { CallGate } from "./gate.js";
import type { HookEvent, HookOutcome, HookRunner, McpHookSpec } from "./hooks.js";
import { onAbort } from "./on-abort.js";
import { ownField, ownView } from "./own.js";
import { Reaper } from "./reaper.js";
import { serverNamesOf, toServerNames } from "./redact.js";
import { untilStopped } from "./stop.js";

/** A tool as `tool-loading`'s catalogue reads it: its name as the model calls it, and one line saying what it does. */
export interface CatalogTool {
  name: string;
  description?: string;
}

/**
 * A connected server as `tool-loading` reads it (its `CatalogServer`): the server's name, a label
 * for people, and its tools by name only.
 */
export interface CatalogServer {
  name: string;
  label?: string;
  tools: CatalogTool[];
}

/**
 * An OpenAI chat-completions function tool, as `tools()` returns them (a type alias, so it is
 * assignable to index-signature shapes such as the loop's `ToolDefinition`).
 */
export type McpToolDefinition = {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown> };
};

/**
 * What the MCP annotations say about a tool, and what follows for the loop: `parallel` (may run
 * beside other calls: read-only) and `dedupe` (an identical repeat may share the first answer:
 * read-only or idempotent). Absent hints take the MCP defaults: not read-only, destructive, not
 * idempotent, open-world.
 */
export interface McpToolPolicy {
  readOnly: boolean;
  idempotent: boolean;
  destructive: boolean;
  openWorld: boolean;
  parallel: boolean;
  dedupe: boolean;
}

/**
 * Options for {@link createMcpPool}. `null` in any of them, as a value read back from JSON or a
 * database row may be, counts as not given and takes its default; so does `null` options.
 */
export interface McpPoolOptions {
  /**
   * How long one call may take, in ms (default 60 000); the server is told to cancel past it. A
   * bound past what a timer holds (2^31 - 1 ms, about 24.8 days) is held to it. So is every bound here.
   */
  timeoutMs?: number | null | undefined;
  /**
   * How long starting a server may take, in ms (default 30 000), and apart from that, how long
   * listing its tools may take: every page of `tools/list` together, at a start and on each
   * `list_changed`.
   */
  connectTimeoutMs?: number | null | undefined;
  /**
   * How tools are named for the model: `"prefixed"` (default) as `<server>__<tool>`, so two
   * servers' `search` stay apart and a name says where it goes; `"plain"` as the server named them,
   * prefixing only a name a server earlier in the list already uses.
   */
  toolNames?: "prefixed" | "plain" | null | undefined;
  /** What `call` hands back for a result with images: `"describe"` (default) text only, `"parts"` content parts with the images. */
  images?: "describe" | "parts" | null | undefined;
  /** Restarts after a server dies (default 1): a non-negative integer. */
  maxRestarts?: number | null | undefined;
  /** Lines of a server's stderr kept for a failure message (default 20): a non-negative integer. */
  stderrLines?: number | null | undefined;
  /**
   * The largest message a stdio server may send, in bytes (default 10 MiB, the SDK's own cap): a
   * positive integer. A longer line is skipped, not held; the call it answered fails with
   * `call-failed` naming its size and this option, and the server runs on. (On Windows the SDK's
   * transport is used, with its fixed 10 MiB cap.)
   */
  maxMessageBytes?: number | null | undefined;
  /**
   * Run each server's non-read-only calls one at a time, its read-only ones together (default
   * true) — so a loop with `parallel: true` cannot run two writes at once on one server. Calls to
   * different servers never wait for each other.
   */
  serializeWrites?: boolean | null | undefined;
  /**
   * Start a reaper (default true, on Linux and macOS): one small Node process per pool, while any
   * of its stdio servers runs, that ends their process trees if this process is killed without
   * closing the pool (SIGKILL, the OOM killer). `false` starts none: a server that does not exit on
   * stdin EOF then outlives a killed host. Never started on Windows.
   */
  reaper?: boolean | null | undefined;
  /** Hooks run by `runHooks`: the spec's `hooks` entries that name a server and tool. */
  hooks?: readonly McpHookSpec[] | null | undefined;
  /**
   * Default time a hook may take once its server is up, in ms (default 10 000), its wait for a turn at its server's
   * write gate included.
   */
  hookTimeoutMs?: number | null | undefined;
  /** Told of a server failing, restarting or changing its tools. Never given env or header values. */
  onNotice?: ((text: string) => void) | null | undefined;
  /** Told when the set of tools changed (a server connected, restarted, failed or sent `list_changed`). */
  onToolsChanged?: (() => void) | null | undefined;
  /**
   * Answers a server's question for the user (form-mode elicitation). Given it, the pool tells
   * servers it can elicit, and fills fields the answer leaves out with the schema's defaults;
   * without it, servers are told it cannot, and URL-mode questions are always declined.
   */
  elicit?:
    | ((request: McpElicitation, signal: AbortSignal) => Promise<McpElicitationAnswer>)
    | null
    | undefined;
  /** The client name and version sent to servers (default `loopwright-tools-mcp`). */
  clientInfo?: { name: string; version: string } | null | undefined;
}

/** A tool call's output with where it ran. */
export interface McpCallOutput extends McpToolOutput {
  /** The server that ran it. */
  server: string;
  /** The tool's own name on that server. */
  tool: string;
}

/** A pool of MCP servers; see {@link createMcpPool}. */
export interface McpPool {
  /** Connects every server not yet connected, in parallel; resolves to each one's status (never rejects). */
  connect(): Promise<ServerStatus[]>;
  /** Each server's state now (failed ones with their error), without connecting anything. */
  status(): ServerStatus[];
  /** The connected servers as catalogue entries (connecting first, as `connect` does). */
  servers(): Promise<CatalogServer[]>;
  /** Every connected server's tools as OpenAI definitions, sanitized by schema-compat, in name order. */
  tools(): Promise<McpToolDefinition[]>;
  /**
   * Calls a tool by the name `tools()` gave it (or its unsanitized form). Resolves to what the model
   * reads: the result's text, or content parts with the images under `images: "parts"`, with the
   * server's credentials masked (`***`). Throws
   * `McpPoolError` whose message is what the model should read: `tool-error` (the tool's own
   * `isError` text), `timeout`, `aborted`, `server-died`, `unknown-tool`, `call-failed`, `closed`.
   * The shape `runAgentLoop`'s `dispatch` takes: `({ name, args }, signal) => pool.call(name, args, signal)`.
   */
  call(name: string, args: unknown, signal?: AbortSignal): Promise<string | ToolContentPart[]>;
  /**
   * The same call with the whole output (masked as `call`'s: text, parts and every string of the
   * structured content; images as sent): text, parts, images, structured content, and `ok: false`
   * for an `isError` result (which does not throw here). Throws `McpPoolError` for the rest.
   */
  callTool(
    name: string,
    args: unknown,
    options?: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined },
  ): Promise<McpCallOutput>;
  /** What a tool's annotations allow, by the name `tools()` gave it; undefined for a name no server offers. */
  policy(name: string): McpToolPolicy | undefined;
  /** The loop's `dedupeToolCalls` predicate: true for a read-only or idempotent tool. */
  dedupe(request: { name: string }): boolean;
  /** Runs the `hooks` for an event on their servers: a `HookRunner`. */
  runHooks: HookRunner;
  /**
   * Closes every server: HTTP sessions ended, and each stdio server's whole process tree ended
   * (stdin closed, then SIGTERM and SIGKILL to a snapshot of its process tree on Linux and macOS;
   * within about 1.25 s). Calls after this throw `closed`.
   */
  close(): Promise<void>;
}

interface Entry {
  connection: ServerConnection;
  tool: Tool;
  name: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
const DEFAULT_HOOK_TIMEOUT_MS = 10_000;
/** The SDK's own cap on one stdio message (`STDIO_DEFAULT_MAX_BUFFER_SIZE`). */
const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
const CATALOG_DESCRIPTION_CHARS = 200;

/** The longest delay a Node timer holds (about 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Longest string an option refusal quotes; a longer one is given by its length. */
const QUOTED_CHARS = 40;

/** What an option was given, for its refusal: a number, boolean or short string as written, else its kind. */
function shown(value: unknown): string {
  if (typeof value === "number") return Number.isFinite(value) ? `the number ${value}` : String(value);
  if (typeof value === "boolean") return String(value);
  if (typeof value === "string")
    return value.length <= QUOTED_CHARS
      ? `the string ${JSON.stringify(value)}`
      : `a string of ${value.length} characters`;
  if (typeof value === "function") return "a function";
  return describeValue(value);
}

/**
 * A name from the caller (a hook's id, server or tool) as a message quotes it: as JSON writes it
 * (a line break or a lone half of a pair escaped, never echoed) and cut at `QUOTED_CHARS`, never
 * between the halves of a pair.
 */
function quoted(name: string): string {
  if (name.length <= QUOTED_CHARS) return JSON.stringify(name);
  const high = name.charCodeAt(QUOTED_CHARS - 1);
  const cut = high >= 0xd800 && high <= 0xdbff ? QUOTED_CHARS - 1 : QUOTED_CHARS;
  return `${JSON.stringify(name.slice(0, cut))}… (${name.length} characters)`;
}

function refuse(what: string, value: unknown): never {
  throw new McpPoolError("invalid-config", `${what}; got ${shown(value)}.`);
}

/** Every option `createMcpPool` reads; the type below fails to compile when one is missing. */
const POOL_OPTION_KEYS = [
  "timeoutMs",
  "connectTimeoutMs",
  "toolNames",
  "images",
  "maxRestarts",
  "stderrLines",
  "maxMessageBytes",
  "serializeWrites",
  "reaper",
  "hooks",
  "hookTimeoutMs",
  "onNotice",
  "onToolsChanged",
  "elicit",
  "clientInfo",
] as const satisfies readonly (keyof McpPoolOptions)[];
type UnreadOption = Exclude<keyof McpPoolOptions, (typeof POOL_OPTION_KEYS)[number]>;
/** The options once read: each given one as it was, none of them `null` (`withoutNulls`). */
type PoolSettings = { [K in keyof McpPoolOptions]?: Exclude<McpPoolOptions[K], null> };
const EVERY_OPTION_READ: UnreadOption extends never ? true : never = true;

/**
 * The options as given, each read by name (an inherited one or a getter counts, as it would for any
 * property read), with every `null` member left out: null is "not set" (as in JSON or a database
 * row), for every option alike, and so are null options. A getter that throws is `invalid-config`.
 */
function withoutNulls(options: unknown): PoolSettings {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) refuse("options must be an object", options);
  void EVERY_OPTION_READ;
  // No prototype, and read from the options' own fields (and a class's getters): an option only a
  // polluted Object.prototype holds (`timeoutMs = -1`, `reaper = false`) is not the host's.
  const read = Object.create(null) as Record<string, unknown>;
  for (const key of POOL_OPTION_KEYS) {
    let value: unknown;
    try {
      value = ownField(options, key);
    } catch (error) {
      throw new McpPoolError(
        "invalid-config",
        `options.${key} could not be read: ${error instanceof Error ? error.message : String(error)}.`,
      );
    }
    if (value !== undefined && value !== null) read[key] = value;
  }
  return read as PoolSettings;
}

/** A time bound in ms, held to what a timer can wait (a longer one would end every wait at once). */
function positive(value: unknown, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) {
    refuse(`${what} must be a positive number of milliseconds`, value);
  }
  return Math.min(value, MAX_TIMER_MS);
}

/** A count (restarts, lines, bytes): an integer of at least `min`, or `fallback` when not given. */
function count(value: unknown, fallback: number, what: string, min = 0): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    refuse(`${what} must be ${min === 0 ? "a non-negative" : "a positive"} integer`, value);
  }
  return value;
}

/**
 * Checks the options that are neither time bounds nor counts (nulls already left out); throws
 * `invalid-config` naming the first bad one and what it was given.
 */
function checkOptions(options: PoolSettings): void {
  const { images, toolNames, serializeWrites, reaper, clientInfo, hooks } = options;
  if (images !== undefined && images !== "describe" && images !== "parts")
    refuse(`images must be "describe" or "parts"`, images);
  if (toolNames !== undefined && toolNames !== "prefixed" && toolNames !== "plain")
    refuse(`toolNames must be "prefixed" or "plain"`, toolNames);
  if (serializeWrites !== undefined && typeof serializeWrites !== "boolean")
    refuse("serializeWrites must be true or false", serializeWrites);
  if (reaper !== undefined && typeof reaper !== "boolean") refuse("reaper must be true or false", reaper);
  if (
    clientInfo !== undefined &&
    (typeof clientInfo !== "object" ||
      clientInfo === null ||
      typeof clientInfo.name !== "string" ||
      typeof clientInfo.version !== "string")
  )
    refuse("clientInfo must be { name, version }, both strings", clientInfo);
  if (hooks !== undefined && !Array.isArray(hooks)) refuse("hooks must be an array", hooks);
  for (const name of ["onNotice", "onToolsChanged", "elicit"] as const)
    if (options[name] !== undefined && typeof options[name] !== "function")
      refuse(`${name} must be a function`, options[name]);
}

/** ms as seconds to a tenth, for a message. */
function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

function oneLine(text: string | undefined): string | undefined {
  if (!text) return undefined;
  const line = text.trim().split(/\r?\n/)[0]?.trim() ?? "";
  if (line === "") return undefined;
  if (line.length <= CATALOG_DESCRIPTION_CHARS) return line;
  // Never between the two halves of a surrogate pair (an emoji): a lone half is not valid text, and
  // an endpoint such as llama.cpp refuses a request that holds one.
  let end = CATALOG_DESCRIPTION_CHARS - 1;
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${line.slice(0, end)}…`;
}

/** Whether OpenAI takes a tool name as it is (schema-compat's `sanitizeTools` leaves it unchanged). */
const legalAsWritten = (name: string) => /^[A-Za-z0-9_-]{1,64}$/.test(name);

/** Code-unit order, the same on every machine (no locale). */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function policyOf(tool: Tool): McpToolPolicy {
  // Read as the server wrote it (the tool is on a prototype-less base; so is this default).
  const a = tool.annotations ?? (Object.create(null) as NonNullable<Tool["annotations"]>);
  const readOnly = a.readOnlyHint === true;
  const idempotent = a.idempotentHint === true;
  return {
    readOnly,
    idempotent,
    destructive: readOnly ? false : a.destructiveHint !== false,
    openWorld: a.openWorldHint !== false,
    parallel: readOnly,
    dedupe: readOnly || idempotent,
  };
}

function argsObject(args: unknown, name: string): Record<string, unknown> {
  if (args === undefined || args === null) return {};
  if (typeof args === "object" && !Array.isArray(args)) return args as Record<string, unknown>;
  throw new McpPoolError("call-failed", `${name} takes its arguments as a JSON object.`, { tool: name });
}

/**
 * A pool of MCP servers from the shapes a spec's `bundle.mcpServers` and a `.mcp.json` hold:
 * stdio servers (`command`, `args`, `env`, `cwd`) and HTTP servers (`url`, `headers`; Streamable
 * HTTP, falling back to legacy SSE on a 4xx). Nothing starts until first needed; then every server
 * connects in parallel, and one that fails is reported (status, `onNotice`, its stderr tail) while
 * the others work. `notifications/tools/list_changed` refreshes the tools; a server that dies is
 * restarted once and the call it was running is answered with an error naming it. Each server's
 * calls to tools not marked read-only run one at a time (`serializeWrites`); different servers'
 * calls never wait for each other.
 *
 * Throws `McpPoolError` (`invalid-config`) for a bad server entry or option (an option's refusal
 * says what it was given). A `null` option counts as not given, as do `null` options. Never logs, and never
 * puts a server's `env` or `headers` values into a notice, a status or an error; a tool's result
 * (`call`, `callTool`, a hook's outcome) has the server's credentials masked (`***`) before it is
 * handed on, so a server that echoes its own key does not hand it to the model.
 */
export function createMcpPool(
  input: McpServersInput | readonly McpServerConfig[],
  options: McpPoolOptions | null = {},
): McpPool {
  // No prototype: a field a config has none of (`cwd`, `env`, `headers`) is not Object.prototype's.
  const configs = mcpServers(input as McpServersInput).map((config) => ownView(config));
  const settings = withoutNulls(options);
  checkOptions(settings);
  const timeoutMs = positive(settings.timeoutMs, DEFAULT_TIMEOUT_MS, "timeoutMs");
  const connectTimeoutMs = positive(
    settings.connectTimeoutMs,
    DEFAULT_CONNECT_TIMEOUT_MS,
    "connectTimeoutMs",
  );
  const hookTimeoutMs = positive(settings.hookTimeoutMs, DEFAULT_HOOK_TIMEOUT_MS, "hookTimeoutMs");
  const maxRestarts = count(settings.maxRestarts, 1, "maxRestarts");
  const stderrLines = count(settings.stderrLines, 20, "stderrLines");
  const serializeWrites = settings.serializeWrites !== false;
  const maxMessageBytes = count(settings.maxMessageBytes, DEFAULT_MAX_MESSAGE_BYTES, "maxMessageBytes", 1);
  const naming = settings.toolNames ?? "prefixed";
  // Each hook read as the host wrote it: never an `enabled`, `events` or `server` only a polluted
  // Object.prototype holds.
  const hooks = [...(settings.hooks ?? [])].map((hook) => ownView(hook));
  hooks.forEach((hook, i) => {
    if (typeof hook?.id !== "string") {
      throw new McpPoolError("invalid-config", "each hook needs an id (a string) and events (an array).");
    }
    const enabled = hook.enabled as unknown;
    // Read as `!== false`, "false" (a string) ran the hook it was written to switch off.
    if (enabled !== undefined && enabled !== null && typeof enabled !== "boolean")
      refuse(`hooks[${i}] (${quoted(hook.id)}).enabled must be true or false`, enabled);
    // A switch-off entry ({ id, enabled: false }, as a stronger spec layer writes one) needs no
    // events: it runs on none. It was refused as a hook without events.
    const events = hook.events as unknown;
    if (!Array.isArray(events) && !(enabled === false && (events === undefined || events === null)))
      refuse(
        `hooks[${i}] (${quoted(hook.id)}).events must be an array of events (only an entry with enabled: false may leave it out)`,
        events,
      );
    // Read as seconds times 1000: NaN, a negative or a string would otherwise pass unseen (NaN and a
    // negative took the default bound, "5" ran as 5 s). `null`, as from JSON, is not given; 0 takes
    // the default, as the spec's schema allows it.
    const seconds = hook.timeoutSeconds as unknown;
    if (
      seconds !== undefined &&
      seconds !== null &&
      (typeof seconds !== "number" || !(seconds >= 0) || !Number.isFinite(seconds))
    )
      refuse(
        `hooks[${i}] (${quoted(hook.id)}).timeoutSeconds must be a non-negative number of seconds`,
        seconds,
      );
  });
  const notice = (text: string) => {
    try {
      settings.onNotice?.(text);
    } catch {
      // A listener's failure is its own.
    }
  };
  // What sanitizing a server's schemas changed that the host should hear of (a part no value
  // satisfies, sent as words): told once for the pool's life, though every rebuild sanitizes again.
  const told = new Set<string>();
  const toldOnce = (text: string) => {
    if (told.has(text)) return;
    told.add(text);
    notice(text);
  };
  // One gate per server: writes on different servers cannot conflict, so they never wait for each other.
  const gates = new Map<ServerConnection, CallGate>();
  let closed = false;
  let stale = true;
  let definitions: McpToolDefinition[] = [];
  const byName = new Map<string, Entry>();

  const reaper =
    settings.reaper !== false && configs.some((config) => config.type === "stdio")
      ? Reaper.create()
      : undefined;
  const connections = configs.map(
    (config) =>
      new ServerConnection(config, {
        clientInfo: settings.clientInfo ?? { name: "loopwright-tools-mcp", version: "0.1.0" },
        connectTimeoutMs,
        ...(settings.elicit ? { elicit: settings.elicit } : {}),
        maxRestarts,
        stderrLines,
        maxMessageBytes,
        ...(reaper ? { reaper } : {}),
        onNotice: notice,
        onToolsChanged: () => {
          stale = true;
          try {
            settings.onToolsChanged?.();
          } catch {
            // A listener's failure is its own.
          }
        },
      }),
  );

  /**
   * Rebuilds names and definitions from what is connected now, and what a server being restarted
   * listed before it died: its names stay its own meanwhile (a call to one waits for the restart),
   * so under `toolNames: "plain"` a name it shares with a later server never points there instead.
   */
  const rebuild = () => {
    if (!stale) return;
    stale = false;
    byName.clear();
    const raw: { exposed: string; connection: ServerConnection; tool: Tool }[] = [];
    const taken = new Set<string>();
    for (const connection of connections) {
      // A first start has listed nothing yet; a restart keeps the list from before.
      if (connection.state !== "connected" && connection.state !== "connecting") continue;
      for (const tool of connection.tools) {
        let exposed = naming === "prefixed" ? `${connection.name}__${tool.name}` : tool.name;
        if (taken.has(exposed)) exposed = `${connection.name}__${tool.name}`;
        taken.add(exposed);
        raw.push({ exposed, connection, tool });
      }
    }
    // A name already legal keeps it: made legal first, so a server `a.b`'s `a.b__search` (made
    // `a_b__search`) cannot take the name of server `a_b`'s own `a_b__search`, which would send
    // calls to that name to the other server and leave `a_b`'s tool a `_2` of it.
    raw.sort(
      (a, b) =>
        Number(!legalAsWritten(a.exposed)) - Number(!legalAsWritten(b.exposed)) ||
        byText(a.exposed, b.exposed),
    );
    const sanitized = sanitizeTools(
      raw.map(({ exposed, tool }) => ({
        type: "function" as const,
        function: {
          name: exposed,
          ...(tool.description ? { description: tool.description } : {}),
          parameters: tool.inputSchema as Record<string, unknown>,
        },
      })),
      { onNotice: toldOnce },
    ) as McpToolDefinition[];
    const entries = raw.map(({ connection, tool, exposed }, index) => {
      const entry = { connection, tool, name: sanitized[index]?.function.name ?? exposed };
      byName.set(entry.name, entry);
      return entry;
    });
    // Each name as written too (`a.b__search`), where no tool has it as its own.
    raw.forEach(({ exposed }, index) => {
      if (!byName.has(exposed)) byName.set(exposed, entries[index] as Entry);
    });
    // Name order: the tool array is the head of the prompt cache, and the order servers answered in is not stable.
    definitions = [...sanitized].sort((a, b) => byText(a.function.name, b.function.name));
  };

  const connect = async (): Promise<ServerStatus[]> => {
    // The reaper runs before a stdio server is spawned: each server's pid is then in its pipe in
    // the same synchronous block as its spawn() returns, so a host killed right after this call
    // (before any event-loop turn) leaves no server unlisted, but one it was killed inside the
    // spawn() of (after the fork, before the pid was known).
    const spawning = connections.some((c) => c.config.type === "stdio" && c.state === "idle");
    if (reaper && spawning) reaper.start();
    await Promise.all(connections.map((c) => c.ensure().catch(() => {})));
    // None of them runs (each failed to start): the reaper is not kept for nothing.
    if (reaper && spawning) reaper.idle();
    return connections.map((c) => c.status());
  };

  const lookup = async (name: string): Promise<Entry> => {
    if (closed) throw new McpPoolError("closed", "The MCP pool is closed.");
    rebuild();
    let entry = byName.get(name);
    if (!entry && connections.some((c) => c.state !== "connected" && c.state !== "failed")) {
      await connect();
      rebuild();
      entry = byName.get(name);
    }
    if (!entry) {
      const names = [...byName.values()].map((e) => e.name);
      const unique = [...new Set(names)].sort(byText);
      const down = connections.filter((c) => c.state === "failed").map((c) => c.name);
      throw new McpPoolError(
        "unknown-tool",
        `No MCP tool is named "${echoedName(name)}". Tools: ${unique.slice(0, 30).join(", ") || "none"}${unique.length > 30 ? ", …" : ""}.` +
          (down.length ? ` Not connected: ${down.join(", ")}.` : ""),
        { tool: name },
      );
    }
    return entry;
  };

  const gateOf = (connection: ServerConnection): CallGate => {
    let gate = gates.get(connection);
    if (!gate) {
      gate = new CallGate();
      gates.set(connection, gate);
    }
    return gate;
  };

  /**
   * Runs one call at its server's gate. `callTimeoutMs` bounds the call once it has its turn; a
   * hook's `bound` (a deadline, ms since the epoch, and the time it was given) bounds its wait for
   * the turn and the call together.
   */
  const run = async (
    entry: Entry,
    args: unknown,
    signal: AbortSignal | undefined,
    callTimeoutMs: number,
    bound?: { deadline: number; limitMs: number },
  ): Promise<McpCallOutput> => {
    const { connection, tool } = entry;
    const where = { server: connection.name, tool: tool.name };
    const name = `${echoedName(tool.name)} on MCP server "${connection.name}"`;
    // Read against the schema as shown (its credentials masked), then each masked property name
    // written back as the server's own where that schema declares it: the server takes its
    // arguments by its own names, and a key the schema leaves free is the model's own.
    const object = toServerNames(
      restoreArguments(argsObject(args, entry.name), tool.inputSchema),
      serverNamesOf(tool),
      tool.inputSchema,
    );
    const serialize = serializeWrites && !policyOf(tool).parallel;
    const waitStarted = Date.now();
    let waitSignal = signal;
    let outOfTime = false;
    let stopWaiting = () => {};
    if (bound) {
      const controller = new AbortController();
      const stop = () => controller.abort(signal?.reason);
      let unhook = () => {};
      if (signal?.aborted) stop();
      else if (signal) unhook = onAbort(signal, stop);
      const timer = setTimeout(
        () => {
          outOfTime = true;
          controller.abort();
        },
        Math.max(0, bound.deadline - waitStarted),
      );
      waitSignal = controller.signal;
      stopWaiting = () => {
        clearTimeout(timer);
        unhook();
      };
    }
    const neverStarted = () =>
      new McpPoolError(
        "timeout",
        `${name} did not start within ${seconds(bound?.limitMs ?? 0)} s: it waited all that time for its turn behind the server's other calls that are not read-only.`,
        where,
      );
    let release: () => void;
    try {
      release = await gateOf(connection).acquire(!serialize, waitSignal);
    } catch (error) {
      if (outOfTime && !signal?.aborted) throw neverStarted();
      throw new McpPoolError("aborted", `${name} was stopped before it started.`, { ...where, cause: error });
    } finally {
      stopWaiting();
    }
    if (bound && Date.now() >= bound.deadline) {
      // Its turn came as its time ran out: the same outcome as running out while waiting.
      release();
      throw neverStarted();
    }
    const waited = Date.now() - waitStarted;
    try {
      const result = await connection.call(tool.name, object, {
        timeoutMs: bound ? Math.max(1, bound.deadline - Date.now()) : callTimeoutMs,
        ...(signal ? { signal } : {}),
      });
      let output: McpToolOutput;
      try {
        // Masked before anyone reads it: a server may echo the credentials it was given.
        output = connection.maskOutput(toolOutput(result));
      } catch (error) {
        // A result the server could send but nothing here can write out (structured content too
        // deep for JSON.stringify, with no text of its own) is this call's failure, not a crash.
        throw new McpPoolError(
          "call-failed",
          `${name} answered with a result that could not be read: ${connection.redact(messageOf(error))}`,
          { ...where, cause: connection.redactError(error) },
        );
      }
      return { ...output, ...where };
    } catch (error) {
      // A hook's timeout names the whole time it was given, and how much of it went on waiting.
      if (bound && McpPoolError.isInstance(error) && error.code === "timeout") {
        const wait = seconds(waited);
        throw new McpPoolError(
          "timeout",
          `${name} did not answer within ${seconds(bound.limitMs)} s${wait > 0 ? ` (${wait} s of it waiting for its turn behind the server's other calls that are not read-only)` : ""}; the server was asked to cancel it.`,
          { ...where, cause: error.cause },
        );
      }
      throw error;
    } finally {
      release();
    }
  };

  const callTool: McpPool["callTool"] = async (name, args, given = {}) => {
    // The host's options as written: a signal or timeoutMs only Object.prototype holds is not theirs.
    const callOptions = ownView(given);
    const entry = await untilStopped(
      lookup(name),
      callOptions.signal,
      () =>
        new McpPoolError("aborted", `${echoedName(name)} was stopped before its MCP server had started.`, {
          tool: name,
        }),
    );
    return run(entry, args, callOptions.signal, positive(callOptions.timeoutMs, timeoutMs, "timeoutMs"));
  };

  const runHooks: HookRunner = async (
    event: HookEvent,
    input: unknown,
    context?: unknown,
    signal?: AbortSignal,
  ) => {
    const due = hooks.filter((h) => h.enabled !== false && h.events?.includes(event) === true);
    return Promise.all(
      due.map(async (hook): Promise<HookOutcome> => {
        const started = Date.now();
        const base = {
          id: hook.id,
          name: hook.id,
          event,
          ...(hook.maxTokens !== undefined ? { maxTokens: hook.maxTokens } : {}),
        };
        const connection = connections.find((c) => c.name === hook.server);
        try {
          if (!hook.server || !hook.tool)
            throw new Error(`hook ${quoted(hook.id)} names no MCP server and tool.`);
          if (!connection)
            throw new Error(
              `hook ${quoted(hook.id)} names MCP server ${quoted(hook.server)}, which the pool does not have.`,
            );
          // A stop while the server is still starting ends the wait, as it does for a call.
          await untilStopped(
            connection.ensure(),
            signal,
            () =>
              new McpPoolError(
                "aborted",
                `hook ${quoted(hook.id)} was stopped before MCP server ${quoted(connection.name)} had started.`,
                { server: connection.name, ...(hook.tool ? { tool: hook.tool } : {}) },
              ),
          );
          const found = connection.tools.find((t) => t.name === hook.tool);
          if (!found)
            throw new Error(
              `MCP server ${quoted(hook.server)} has no tool ${quoted(hook.tool)} for hook ${quoted(hook.id)}.`,
            );
          const given = typeof hook.timeoutSeconds === "number" ? hook.timeoutSeconds * 1000 : hookTimeoutMs;
          const limitMs = given > 0 ? Math.min(given, MAX_TIMER_MS) : hookTimeoutMs;
          // From here, not from the call: the wait for a turn at the server's gate counts too.
          const output = await run(
            { connection, tool: found, name: found.name },
            { event, input, context },
            signal,
            limitMs,
            { deadline: Date.now() + limitMs, limitMs },
          );
          const veto = output.structured?.veto === true;
          return output.ok
            ? { ...base, ok: true, context: output.text, ...(veto ? { veto } : {}), ms: Date.now() - started }
            : { ...base, ok: false, error: output.text, ms: Date.now() - started };
        } catch (error) {
          const timedOut = McpPoolError.isInstance(error) && error.code === "timeout";
          return {
            ...base,
            ok: false,
            error: messageOf(error),
            ...(timedOut ? { timedOut } : {}),
            ms: Date.now() - started,
          };
        }
      }),
    );
  };

  return {
    connect,
    status: () => connections.map((c) => c.status()),
    async servers() {
      await connect();
      rebuild();
      const byServer = new Map<ServerConnection, CatalogTool[]>();
      for (const [key, entry] of byName) {
        if (key !== entry.name) continue;
        const list = byServer.get(entry.connection) ?? [];
        const description = oneLine(entry.tool.description);
        list.push({ name: entry.name, ...(description ? { description } : {}) });
        byServer.set(entry.connection, list);
      }
      return connections
        .filter((c) => c.state === "connected")
        .map((c) => {
          const title = c.status().serverInfo?.title;
          return { name: c.name, ...(title ? { label: title } : {}), tools: byServer.get(c) ?? [] };
        });
    },
    async tools() {
      await connect();
      rebuild();
      return definitions.map((d) => structuredClone(d));
    },
    async call(name, args, signal) {
      const output = await callTool(name, args, signal ? { signal } : {});
      if (!output.ok) {
        throw new McpPoolError("tool-error", output.text, { server: output.server, tool: output.tool });
      }
      return settings.images === "parts" && output.images.length > 0 ? output.parts : output.text;
    },
    callTool,
    policy(name) {
      rebuild();
      const entry = byName.get(name);
      return entry ? policyOf(entry.tool) : undefined;
    },
    dedupe(request) {
      rebuild();
      const entry = byName.get(request?.name);
      return entry ? policyOf(entry.tool).dedupe : false;
    },
    runHooks,
    async close() {
      closed = true;
      // Every server is closed at once below (its state set before it awaits anything): the names
      // built from them go, so `tools()` and `policy()` no longer offer tools nothing can call.
      stale = true;
      await Promise.all(connections.map((c) => c.close()));
    },
  };
}
