import { StringDecoder } from "node:string_decoder";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, ElicitResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { type McpServerConfig, unfilledReferences } from "./config.js";
import type { McpToolOutput } from "./content.js";
import { echoedName, headOf, McpPoolError, messageOf } from "./errors.js";
import { onAbort } from "./on-abort.js";
import { ownField } from "./own.js";
import { bareOptions, ownFetch, ownJson, ownMessages } from "./own-json.js";
import type { Reaper } from "./reaper.js";
import {
  describeServer,
  type Mask,
  masker,
  maskOutput,
  maskTool,
  redactError,
  resultSecretsOf,
  secretsOf,
  wellFormedOutput,
} from "./redact.js";
import { toolListSchema, toolResultSchema } from "./result-schema.js";
import { isMcpError, loadedSdk, loadSdk, sdk, transportStatus } from "./sdk.js";
import {
  MESSAGE_TOO_LARGE,
  type OversizedData,
  OversizedMessageError,
  TreeStdioTransport,
} from "./stdio-transport.js";
import { untilStopped } from "./stop.js";

/**
 * For a stdio server that failed to start: the `${NAME}` references its command line still holds,
 * which may be why (a spec or `.mcp.json` given to the pool as it is), and how they get filled.
 */
function unfilledHint(config: McpServerConfig, mask: (text: string) => string): string {
  const found = unfilledReferences(config).map(mask);
  if (found.length === 0) return "";
  const places = found.length > 4 ? [...found.slice(0, 4), `${found.length - 4} more`] : found;
  return (
    ` Its ${places.join("; ")}: not filled in, as the pool fills no \${…} reference itself (it passes it ` +
    "on as written, and a shell runs a whole-script one as an empty script). To fill references from the " +
    "environment, give the pool (or createSession, as its mcpServers option) the servers through " +
    "mcpServers(servers, { env: process.env })."
  );
}

/** Where a server stands. */
export type ServerState = "idle" | "connecting" | "connected" | "failed" | "closed";

/** One server as {@link McpPool.status} reports it. Carries no `env` or `headers`. */
export interface ServerStatus {
  name: string;
  state: ServerState;
  /** How it is reached once connected: `stdio`, `streamable-http`, or `sse` (the legacy fallback). */
  transport?: "stdio" | "streamable-http" | "sse";
  /**
   * The process a stdio server was started as, while it runs (for `npx …`, the npx process): the
   * root of the process tree that closing the server ends on Linux and macOS.
   */
  pid?: number;
  /** Tools it offers (0 until connected). */
  tools: number;
  /** Times it was restarted after dying. */
  restarts: number;
  /** Why it failed, for a `failed` server: the message names it and ends with its stderr tail. */
  error?: McpPoolError;
  /** The name and version the server reported. */
  serverInfo?: { name: string; version: string; title?: string };
}

/** A server's question for the user (MCP form-mode elicitation), as a host's `elicit` is handed it. */
export interface McpElicitation {
  /** The server asking, by its configured name. */
  server: string;
  message: string;
  /** The JSON Schema of the answer (flat: strings, numbers, booleans, enums). */
  requestedSchema: Record<string, unknown>;
}

/** The user's answer: `accept` with the fields (omitted ones get the schema's defaults), `decline`, or `cancel`. */
export interface McpElicitationAnswer {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, string | number | boolean | string[]> | undefined;
}

/** What a connection needs from its pool. */
export interface ConnectionOptions {
  elicit?: ((request: McpElicitation, signal: AbortSignal) => Promise<McpElicitationAnswer>) | undefined;
  clientInfo: { name: string; version: string };
  connectTimeoutMs: number;
  maxRestarts: number;
  stderrLines: number;
  maxMessageBytes: number;
  /** The pool's reaper, if it has one (not on Windows, not with `reaper: false`). */
  reaper?: Reaper | undefined;
  onToolsChanged: () => void;
  onNotice: (text: string) => void;
}

const LINE_CHARS = 500;
/**
 * How much of a stderr line is kept before masking: the shown 500 characters and room for the
 * longest credential written out in full (every character percent-encoded as 4 UTF-8 bytes), so one
 * that starts inside the shown part is masked whole. The rest of a longer line is never held.
 */
const keptChars = (secrets: readonly string[]) => LINE_CHARS + 12 * (secrets[0]?.length ?? 0);

/** `text` with each lone surrogate (half a surrogate pair without its other half) written U+FFFD. */
const wellFormed = (text: string): string => text.toWellFormed();

/** Text for `#say` to insert as it is: masked already, or the pool's own wording. */
class Shown {
  constructor(readonly text: string) {}
}
const shown = (text: string) => new Shown(text);

/**
 * `mask`, keeping the pool's own naming of the server (`MCP server "postgres"`) as written. Every
 * env value is masked in what a message quotes, and a server is often named as one of its values is
 * (`postgres` with `PGUSER: postgres`): its every error and notice read `MCP server "***"`, naming no
 * server. The name is the host's own key for it, shown in `status()` and `unknown-tool` as it is.
 */
function keepingName(mask: Mask, name: string): Mask {
  const phrase = `MCP server "${name}"`;
  return (text) => (text.includes(phrase) ? text.split(phrase).map(mask).join(phrase) : mask(text));
}

/** The most pages of `tools/list` read from one server; past them the rest is left out, with a notice. */
const MAX_TOOL_PAGES = 100;

/** Two listings of one server's tools, the same tool for tool as the server wrote them. */
function sameTools(a: readonly Tool[], b: readonly Tool[]): boolean {
  return a.length === b.length && a.every((tool, i) => JSON.stringify(tool) === JSON.stringify(b[i]));
}

/** A count of bytes as people read it (`10,485,760`). */
const bytes = (n: number) => n.toLocaleString("en-US");

/** The size and cap of an answer the transport skipped as too large, or undefined for any other error. */
function oversized(error: unknown): OversizedData | undefined {
  if (!isMcpError(error) || error.code !== MESSAGE_TOO_LARGE) return undefined;
  const data = error.data as Partial<OversizedData> | undefined;
  return data?.loopwrightOversized === true &&
    typeof data.bytes === "number" &&
    typeof data.limit === "number"
    ? (data as OversizedData)
    : undefined;
}

/** An error's message, with the HTTP status where the SDK kept it apart. */
function failure(error: unknown): string {
  const code = transportStatus(error);
  return code !== undefined ? `HTTP ${code}: ${messageOf(error)}` : messageOf(error);
}

/**
 * A terminal's escape sequences: CSI (`ESC [ … final`: colours, cursor moves, clearing), OSC
 * (`ESC ] … BEL` or `ESC \\`: a window title, a link) and the two-character ones. Linear: each
 * part read by one quantifier over characters the next part cannot start with.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const TERMINAL_ESCAPE = /\u001b(?:\[[0-?]*[ -/]*[@-~]?|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])?/g;
/** C0 controls but the tab and line break, DEL, and C1 controls: written `\\uXXXX` by {@link plainText}. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const OTHER_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * A server's stderr as a message quotes it: its terminal escapes (a coloured log's) left out, and
 * each other control character but a tab or a line break written `\\uXXXX`, so the model reads
 * `error: …`, not `[31merror[0m: …`, and a terminal showing the message is not recoloured or retitled.
 */
function plainText(text: string): string {
  return text
    .replace(TERMINAL_ESCAPE, "")
    .replace(OTHER_CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** How much of what a server said a `call-failed` message gives: the rest is left out, its length said. */
const SAID_CHARS = 2000;

/**
 * What a server said, as a `call-failed` message gives it: whole up to {@link SAID_CHARS}
 * characters, else cut there (never inside a character) with its length said. A server's error
 * message can be any size, and the error is a tool result the model is sent again on every step.
 */
function cutSaid(said: string): string {
  if (said.length <= SAID_CHARS) return said;
  return `${headOf(said, SAID_CHARS)}… (${said.length.toLocaleString("en-US")} characters)`;
}

/**
 * One page of the server's tools, as `client.listTools` reads it but with {@link toolListSchema}:
 * a property named `__proto__` keeps its schema. The SDK's cache of the tools' output schemas and
 * task support (which its `callTool` checks) is filled as its own `listTools` fills it; an SDK
 * with no such cache to fill answers with its own `listTools`.
 */
async function listToolsPage(
  client: Client,
  params: Parameters<Client["listTools"]>[0],
  options: Parameters<Client["listTools"]>[1],
): ReturnType<Client["listTools"]> {
  const cache = (client as unknown as { cacheToolMetadata?: unknown }).cacheToolMetadata;
  if (typeof cache !== "function") return client.listTools(params, options);
  const result = await client.request(
    bareOptions({ method: "tools/list", params }),
    toolListSchema(),
    options,
  );
  cache.call(client, result.tools);
  return result;
}

/** How many of the problems with an answer that is no tool result a message names. */
const NAMED_PROBLEMS = 3;

/**
 * For the SDK's refusal of an answer that is no tool result (a zod error: content parts of a type
 * MCP has not, `content: null`), its first problems on one line, each with where it is, and a count
 * of the rest: `its answer is not an MCP tool result (content[0]: Invalid input; …; and 9,997
 * more)`. The SDK's own message is its whole report as JSON over many lines, 35 MB for 10,000 such
 * parts. Undefined for any other error.
 */
function notAResult(error: unknown): string | undefined {
  // zod's error (not always an Error, and named differently between its builds): a list of
  // issues, each with a code and a path.
  const issues =
    typeof error === "object" && error !== null ? (error as { issues?: unknown }).issues : undefined;
  if (!Array.isArray(issues) || issues.length === 0) return undefined;
  if (!issues.every((issue) => typeof issue?.code === "string" && Array.isArray(issue.path)))
    return undefined;
  const named = issues.slice(0, NAMED_PROBLEMS).map((issue: { path?: unknown; message?: unknown }) => {
    const path = Array.isArray(issue.path)
      ? issue.path
          .map((step) => (typeof step === "number" ? `[${step}]` : `.${String(step)}`))
          .join("")
          .replace(/^\./, "")
      : "";
    return `${path || "the result"}: ${String(issue.message)}`;
  });
  const rest = issues.length - named.length;
  return `its answer is not an MCP tool result (${named.join("; ")}${rest > 0 ? `; and ${rest.toLocaleString("en-US")} more` : ""})`;
}

/** One MCP server: connects on first use, lists its tools, calls them, and restarts once after dying. */
export class ServerConnection {
  readonly config: McpServerConfig;
  readonly #options: ConnectionOptions;
  readonly #mask: Mask;
  readonly #resultMask: Mask;
  /** What a listed tool is passed through: the result mask, and half a surrogate pair as U+FFFD. */
  readonly #toolMask: Mask;
  readonly #keptChars: number;
  #state: ServerState = "idle";
  #client: Client | undefined;
  /** The client of a start under way, so close() can end it (and its process) before it answers. */
  #starting: Client | undefined;
  #transport: ServerStatus["transport"];
  #pid: number | undefined;
  #tools: Tool[] = [];
  #restarts = 0;
  #deaths = 0;
  #generation = 0;
  /** The `list_changed` listing under way, if any, and whether another is due after it. */
  #listing: Promise<void> | undefined;
  #listAgain = false;
  /** Whether the server said its tools changed while it was starting (see the handler). */
  #changedWhileStarting = false;
  #error: McpPoolError | undefined;
  #ready: Promise<void> | undefined;
  #stderr: string[] = [];
  /** The stderr tail of the process that died last, as its death was noticed (masked). */
  #deathTail = "";
  #partial = "";
  #serverInfo: ServerStatus["serverInfo"];

  constructor(config: McpServerConfig, options: ConnectionOptions) {
    this.config = config;
    this.#options = options;
    const secrets = secretsOf(config);
    this.#mask = keepingName(masker(secrets), config.name);
    this.#resultMask = masker(resultSecretsOf(config));
    const resultMask = this.#resultMask;
    this.#toolMask = (text) => wellFormed(resultMask(text));
    this.#keptChars = keptChars(secrets);
  }

  get name(): string {
    return this.config.name;
  }

  get state(): ServerState {
    return this.#state;
  }

  get tools(): readonly Tool[] {
    return this.#tools;
  }

  /** Where this server stands, without its env or headers. */
  status(): ServerStatus {
    return {
      name: this.name,
      state: this.#state,
      ...(this.#transport ? { transport: this.#transport } : {}),
      ...(this.#pid !== undefined && this.#state === "connected" ? { pid: this.#pid } : {}),
      tools: this.#state === "connected" ? this.#tools.length : 0,
      restarts: this.#restarts,
      ...(this.#error && this.#state === "failed" ? { error: this.#error } : {}),
      ...(this.#serverInfo ? { serverInfo: this.#serverInfo } : {}),
    };
  }

  /**
   * Text safe to report: every env and header value (and URL credential) replaced by `***`, in the
   * forms a server writes it back in (percent-encoded, JSON-escaped, base64, wrapped; see `masker`).
   */
  redact(text: string): string {
    // Half a surrogate pair a server wrote (an error message cut inside an emoji) as U+FFFD too: the
    // message may go to the model as a tool result, in a request llama.cpp would refuse.
    return wellFormed(this.#mask(text));
  }

  /**
   * The pool's own wording about this server, with only what it quotes masked: each value put in
   * goes through `redact` unless it is `shown(…)` (masked already, or the pool's own words). The
   * whole message went through `redact` before, so an ordinary env value (`MODE: server`,
   * `STATE: stopped`) masked the pool's own words: `MCP *** "fx" ***; restarting it`.
   */
  #say(parts: TemplateStringsArray, ...values: unknown[]): string {
    let text = parts[0] ?? "";
    values.forEach((value, at) => {
      text += (value instanceof Shown ? value.text : this.redact(String(value))) + (parts[at + 1] ?? "");
    });
    return wellFormed(text);
  }

  /** `MCP server "name" (command or URL)`, the name kept and the rest masked. */
  #described(): Shown {
    return shown(this.redact(describeServer(this.config)));
  }

  /**
   * A tool's name as the server wrote it, masked, then cut and escaped as {@link echoedName} gives
   * it (masked first, so a credential across the cut is masked whole).
   */
  #toolNamed(tool: string): Shown {
    return shown(echoedName(this.redact(tool)));
  }

  /** The server's name, shown as the host wrote it (its own key: see `keepingName`). */
  get #named(): Shown {
    return shown(this.name);
  }

  /**
   * A tool's output safe to hand a model: its text, text parts and structured content masked of
   * this server's credentials (`resultSecretsOf`: ordinary values such as `info` are left alone),
   * and half a surrogate pair written U+FFFD (an endpoint such as llama.cpp refuses a request that
   * holds one, and a host may send the output on without the loop's own check).
   */
  maskOutput<T extends McpToolOutput>(output: T): T {
    return wellFormedOutput(maskOutput(output, this.#resultMask));
  }

  /** An error safe to keep as a cause: its message, stack and causes masked as `redact` does. */
  redactError(error: unknown): unknown {
    return redactError(error, this.#mask);
  }

  #isClosed(): boolean {
    return this.#state === "closed";
  }

  /** Connects if it has not (once; concurrent callers share the attempt). Rejects with the failure. */
  ensure(): Promise<void> {
    if (this.#state === "connected") return Promise.resolve();
    if (this.#state === "closed") return Promise.reject(this.#closedError());
    if (this.#state === "failed" && !this.#ready) return Promise.reject(this.#error);
    this.#ready ??= this.#open();
    return this.#ready;
  }

  async #open(): Promise<void> {
    const generation = ++this.#generation;
    this.#state = "connecting";
    this.#changedWhileStarting = false;
    this.#stderr = [];
    this.#partial = "";
    try {
      await this.#connect(generation);
      if (generation !== this.#generation || this.#isClosed()) return;
      this.#state = "connected";
      this.#error = undefined;
      this.#options.onToolsChanged();
      const client = this.#client;
      if (this.#changedWhileStarting && client) this.#relist(client, generation);
    } catch (error) {
      if (this.#isClosed()) throw this.#closedError();
      // Let a dying process's last words arrive before they are quoted.
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (this.#isClosed()) throw this.#closedError();
      // A restart that failed: the tools listed before it are no longer offered.
      const offered = this.#state === "connecting" && this.#restarts > 0;
      this.#state = "failed";
      this.#error = McpPoolError.isInstance(error)
        ? error
        : new McpPoolError(
            "connect-failed",
            this
              .#say`${this.#described()} could not be started: ${failure(error)}.${shown(this.#stderrTail())}${shown(
              unfilledHint(this.config, (text) => this.redact(text)),
            )}`,
            { server: this.name, cause: this.redactError(error) },
          );
      this.#options.onNotice(this.#error.message);
      if (offered) this.#options.onToolsChanged();
      throw this.#error;
    } finally {
      this.#ready = undefined;
    }
  }

  #newClient(generation: number): Client {
    const elicit = this.#options.elicit;
    const { Client, ElicitRequestSchema, ToolListChangedNotificationSchema } = sdk();
    const client = new Client(this.#options.clientInfo, {
      capabilities: elicit ? { elicitation: { form: { applyDefaults: true } } } : {},
    });
    if (elicit) {
      client.setRequestHandler(ElicitRequestSchema, async (request, extra): Promise<ElicitResult> => {
        const params = request.params;
        if (params.mode === "url" || !("requestedSchema" in params)) return { action: "decline" };
        const answer = await elicit(
          {
            server: this.name,
            message: params.message,
            requestedSchema: params.requestedSchema as Record<string, unknown>,
          },
          extra.signal,
        );
        return { ...answer };
      });
    }
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      if (generation !== this.#generation) return;
      // Told while its first listing is under way (a server registering tools as it starts): that
      // listing may be older than the change, so the tools are listed again once it is connected.
      if (this.#state === "connecting") this.#changedWhileStarting = true;
      else if (this.#state === "connected") this.#relist(client, generation);
    });
    client.onclose = () => this.#closed(generation);
    // The SDK reports transport hiccups here; a death is handled by onclose, the rest by the call that
    // met them. An oversized message that answered no call is told here, as nothing else hears of it.
    client.onerror = (error) => {
      if (!(error instanceof OversizedMessageError) || error.answered) return;
      if (generation !== this.#generation) return;
      this.#options.onNotice(
        `MCP server "${this.name}" sent a message of ${bytes(error.bytes)} bytes, more than maxMessageBytes (${bytes(error.limit)}) allows; it was skipped. A call it answered, if any, ends at its timeout.`,
      );
    };
    return client;
  }

  async #connect(generation: number): Promise<void> {
    const config = this.config;
    const timeout = this.#options.connectTimeoutMs;
    // Loaded already (any earlier connect in this process): no await, so a stdio server is spawned in
    // the caller's synchronous block as before, where the reaper hears of it at once.
    const { SSEClientTransport, StdioClientTransport, StreamableHTTPClientTransport, StreamableHTTPError } =
      loadedSdk() ?? (await loadSdk());
    if (config.type === "stdio") {
      const params = {
        command: config.command,
        args: config.args,
        ...(config.env ? { env: config.env } : {}),
        ...(config.cwd ? { cwd: config.cwd } : {}),
      };
      // On Windows the SDK's transport, as before: it ends the direct child only.
      const transport =
        process.platform === "win32"
          ? new StdioClientTransport({ ...params, stderr: "pipe" })
          : new TreeStdioTransport({
              ...params,
              maxMessageBytes: this.#options.maxMessageBytes,
              ...(this.#options.reaper ? { reaper: this.#options.reaper.link() } : {}),
            });
      // Decoded as one stream: a character whose bytes two reads of the pipe part is read whole,
      // not as two U+FFFD in the stderr tail (nor a credential holding it left unmasked).
      const decoder = new StringDecoder("utf8");
      transport.stderr?.on("data", (chunk: Buffer | string) =>
        this.#noteStderr(typeof chunk === "string" ? chunk : decoder.write(chunk)),
      );
      await this.#start(generation, transport, "stdio", timeout);
      this.#pid = transport.pid ?? undefined;
      return;
    }
    const url = new URL(config.url);
    // The SDK reads its options (requestInit, authProvider, fetch, …) and the request's init where
    // they are found: only what is given here is there, and the fetch reads only what the SDK set.
    const requestInit = bareOptions<RequestInit>(config.headers ? { headers: { ...config.headers } } : {});
    const options = bareOptions({ requestInit, fetch: ownFetch });
    if (config.type === "http") {
      try {
        await this.#start(
          generation,
          new StreamableHTTPClientTransport(url, options),
          "streamable-http",
          timeout,
        );
        return;
      } catch (error) {
        // The spec's backwards compatibility: an older server answers the initialize POST with a
        // 4xx (404 or 405 for a route it lacks, 400 from some). 401 and 403 are about credentials,
        // which SSE would not fix.
        const code = error instanceof StreamableHTTPError ? error.code : undefined;
        if (code !== 400 && code !== 404 && code !== 405) throw error;
        this.#options.onNotice(
          `MCP server "${this.name}" refused Streamable HTTP (${code}); trying the legacy SSE transport.`,
        );
      }
    }
    await this.#start(generation, new SSEClientTransport(url, options), "sse", timeout);
  }

  async #start(
    generation: number,
    transport: Transport,
    kind: NonNullable<ServerStatus["transport"]>,
    timeout: number,
  ): Promise<void> {
    const client = this.#newClient(generation);
    this.#starting = client;
    try {
      if (this.#isClosed()) throw this.#closedError();
      // Every options object the SDK is handed holds only what is given (not a polluted `.signal`).
      try {
        await client.connect(ownMessages(transport), bareOptions({ timeout }));
      } catch (error) {
        // Named as a listing that runs out is: what was waited for, and the option that bounds it
        // (the SDK's own words, "MCP error -32001: Request timed out", name neither).
        if (!(isMcpError(error) && error.code === sdk().ErrorCode.RequestTimeout)) throw error;
        throw new Error(
          `it did not answer the initialize request within connectTimeoutMs (${Math.round(timeout / 100) / 10} s)`,
          { cause: error },
        );
      }
      const tools = await this.#listTools(client);
      if (generation !== this.#generation) throw new Error("superseded");
      this.#client = client;
      this.#transport = kind;
      this.#tools = tools;
      const info = client.getServerVersion();
      if (info) {
        this.#serverInfo = {
          name: info.name,
          version: info.version,
          ...(typeof info.title === "string" ? { title: info.title } : {}),
        };
      }
    } catch (error) {
      await client.close().catch(() => {});
      throw error;
    } finally {
      if (this.#starting === client) this.#starting = undefined;
    }
  }

  /**
   * Lists the tools again after a `list_changed`, and tells the pool. One listing at a time: a
   * notification that comes while one is under way (which may have read the tools before the
   * change) has one more listing made after it, however many came; so a server that says its
   * tools changed thousands of times in a row is asked for them twice, not thousands of times, and
   * no older listing can land after a newer one.
   */
  #relist(client: Client, generation: number): void {
    if (this.#listing) {
      this.#listAgain = true;
      return;
    }
    const current = () => generation === this.#generation && this.#state === "connected";
    this.#listing = (async () => {
      do {
        this.#listAgain = false;
        try {
          const tools = await this.#listTools(client);
          if (!current()) return;
          // A notification that changed nothing (server-everything sends one as it starts, with the
          // list it first gave) is no change to tell: no notice, and no re-planning of the tools.
          if (sameTools(tools, this.#tools)) continue;
          this.#tools = tools;
          this.#options.onNotice(`MCP server "${this.name}" changed its tools: ${this.#tools.length} now.`);
          this.#options.onToolsChanged();
        } catch (error) {
          if (!current()) return;
          this.#options.onNotice(
            this
              .#say`MCP server "${this.#named}" said its tools changed, but listing them failed: ${messageOf(error)}`,
          );
        }
      } while (this.#listAgain && current());
    })().finally(() => {
      this.#listing = undefined;
      this.#listAgain = false;
    });
  }

  /**
   * Every page of the server's tools, all within one `connectTimeoutMs`; past
   * {@link MAX_TOOL_PAGES} pages the first ones are kept, and `onNotice` is told.
   */
  async #listTools(client: Client): Promise<Tool[]> {
    const limit = this.#options.connectTimeoutMs;
    const deadline = Date.now() + limit;
    const tools: Tool[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      let result: Awaited<ReturnType<Client["listTools"]>>;
      try {
        // The SDK's answer is a copy its schema made, each field it knows read through the prototype.
        result = ownJson(
          await listToolsPage(
            client,
            cursor ? bareOptions({ cursor }) : undefined,
            bareOptions({ timeout: Math.max(1, deadline - Date.now()) }),
          ),
        );
      } catch (error) {
        if (!(isMcpError(error) && error.code === sdk().ErrorCode.RequestTimeout)) throw error;
        throw new Error(
          `listing its tools took longer than connectTimeoutMs (${Math.round(limit / 100) / 10} s), after ${pages} page${pages === 1 ? "" : "s"}`,
          { cause: error },
        );
      }
      pages++;
      // A server may write its credentials into a description or a schema, which the model reads;
      // and half a surrogate pair there (a description cut inside an emoji) would be in every request
      // the tool array goes out with, each refused by llama.cpp, which takes only valid UTF-8.
      // The input schema has only the credentials masked: its property names are the ones the
      // server takes its arguments by, and schema-compat's sanitizeTools (the pool's tools())
      // writes half a pair there, and everywhere else in it, as U+FFFD and restoreArguments hands
      // the server its own name back. Written U+FFFD here, "q\ud83d" and "q\ud83e" became one
      // parameter, and a call reached the server under a name it does not take.
      for (const tool of result.tools) tools.push(maskTool(tool, this.#toolMask, this.#resultMask));
      cursor = result.nextCursor;
    } while (cursor && pages < MAX_TOOL_PAGES);
    if (cursor) {
      this.#options.onNotice(
        `MCP server "${this.name}" listed its tools over more than ${MAX_TOOL_PAGES} pages; only the first ${MAX_TOOL_PAGES} pages (${tools.length} tools) are used.`,
      );
    }
    const listed = this.#firstByName(tools);
    // The config's includeTools and excludeTools (Gemini CLI's): a tool left out is never offered,
    // and a call by its name is refused as any unknown tool is. Exclusion wins over inclusion.
    const include = ownField(this.config, "includeTools") as string[] | undefined;
    const exclude = ownField(this.config, "excludeTools") as string[] | undefined;
    if (include === undefined && exclude === undefined) return listed;
    return listed.filter((tool) => (include?.includes(tool.name) ?? true) && !exclude?.includes(tool.name));
  }

  /**
   * `tools` with only the first of each name, `onNotice` told once of the names listed more than
   * once (on one page or over several; the first five named): the server takes a call by its name,
   * so a second tool of that name is one it cannot be asked for, whose schema and annotations
   * (read-only, say) would be offered and read for calls that reach the first. One pass.
   */
  #firstByName(tools: Tool[]): Tool[] {
    const counts = new Map<string, number>();
    const first: Tool[] = [];
    for (const tool of tools) {
      const count = counts.get(tool.name) ?? 0;
      counts.set(tool.name, count + 1);
      if (count === 0) first.push(tool);
    }
    if (first.length === tools.length) return tools;
    const repeated = [...counts].filter(([, count]) => count > 1);
    const named = repeated
      .slice(0, 5)
      .map(([name, count]) => `${count} tools named "${echoedName(name)}"`)
      .join(", ");
    const more = repeated.length > 5 ? ` and ${repeated.length - 5} more names twice or more` : "";
    this.#options.onNotice(
      `MCP server "${this.name}" listed ${named}${more}; only the first of each name is offered.`,
    );
    return first;
  }

  #noteStderr(chunk: string): void {
    // Kept as written (cut to what can be shown) and masked when quoted, all lines together, so a
    // credential wrapped over two lines or cut across two writes is masked whole. A line that never
    // ends is held only up to its kept part: the rest of it is never joined or searched again.
    const lines = chunk.split(/\r?\n/);
    const head = this.#partial + (lines.shift() ?? "");
    if (lines.length === 0) {
      this.#partial = head.slice(0, this.#keptChars);
      return;
    }
    this.#partial = (lines.pop() ?? "").slice(0, this.#keptChars);
    for (const line of [head, ...lines])
      if (line.trim() !== "") this.#stderr.push(line.slice(0, this.#keptChars));
    const keep = this.#options.stderrLines;
    if (this.#stderr.length > keep) this.#stderr.splice(0, this.#stderr.length - keep);
  }

  #stderrTail(): string {
    if (this.config.type !== "stdio" || this.#options.stderrLines === 0) return "";
    const lines = [...this.#stderr, ...(this.#partial.trim() ? [this.#partial] : [])];
    // Its terminal escapes taken out first (masking then reads the text a person would), then
    // masked before the cut, so a credential straddling it cannot leave its head behind.
    const tail = this.redact(plainText(lines.slice(-this.#options.stderrLines).join("\n")))
      .split("\n")
      .map((line) => line.slice(0, LINE_CHARS));
    return lines.length
      ? ` Its stderr ended with:\n${tail.map((l) => `  ${l}`).join("\n")}`
      : " It wrote nothing to stderr.";
  }

  #closedError(): McpPoolError {
    return new McpPoolError("closed", `MCP server "${this.name}" is closed: the pool was closed.`, {
      server: this.name,
    });
  }

  /** The transport closed. Ours to close, or a death: restarted once (by default), then failed. */
  #closed(generation: number): void {
    if (generation !== this.#generation || this.#state !== "connected") return;
    this.#died();
  }

  #died(): void {
    this.#deaths++;
    this.#generation++;
    this.#client = undefined;
    this.#pid = undefined;
    const tail = this.#stderrTail();
    // Kept for the calls the death cut short: the restart below starts a new stderr.
    this.#deathTail = tail;
    if (this.#restarts < this.#options.maxRestarts) {
      this.#restarts++;
      this.#options.onNotice(
        this
          .#say`MCP server "${this.#named}" stopped; restarting it (restart ${this.#restarts}).${shown(tail)}`,
      );
      this.#state = "connecting";
      this.#ready = this.#open();
      this.#ready.catch(() => {});
    } else {
      this.#state = "failed";
      this.#error = new McpPoolError(
        "server-died",
        this
          .#say`${this.#described()} stopped again after ${this.#restarts} restart(s) and is not restarted any more.${shown(tail)}`,
        { server: this.name },
      );
      this.#options.onNotice(this.#error.message);
      this.#options.onToolsChanged();
    }
  }

  /**
   * Calls one of this server's tools by the name the server gave it. Resolves to the result as the
   * server sent it (an `isError` result included); rejects with a `McpPoolError` for a timeout, an
   * abort, a death, or a refusal. The SDK tells the server to cancel on a timeout or an abort.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<CallToolResult> {
    // A stop while the server is still starting ends the wait (the start goes on for the next call).
    await untilStopped(
      this.ensure().catch((error: unknown) => {
        throw this.#notRun(error, tool);
      }),
      options.signal,
      () =>
        new McpPoolError(
          "aborted",
          `${echoedName(tool)} on MCP server "${this.name}" was stopped before the server had started.`,
          {
            server: this.name,
            tool,
            cause: options.signal?.reason,
          },
        ),
    );
    const client = this.#client;
    if (!client) throw this.#notRun(this.#error ?? this.#closedError(), tool);
    const deaths = this.#deaths;
    // The SDK adds an abort listener to the signal it is given and never removes it: given the
    // caller's (a run's signal, shared by every call), each call left one behind, holding the call,
    // and a stop at the end of the run sent the server a cancellation for every call ever made. It
    // is given a signal of this call's own instead, told of the caller's stop while the call runs.
    const caller = options.signal;
    const own = caller ? new AbortController() : undefined;
    const forward = () => own?.abort(caller?.reason);
    let unhook = () => {};
    if (caller?.aborted) forward();
    else if (caller) unhook = onAbort(caller, forward);
    const requestOptions = bareOptions({
      timeout: options.timeoutMs,
      ...(own ? { signal: own.signal } : {}),
    });
    try {
      const required = this.#tools.find((t) => t.name === tool)?.execution?.taskSupport === "required";
      if (!required)
        return ownJson(
          (await client.callTool(
            bareOptions({ name: tool, arguments: args }),
            toolResultSchema(),
            requestOptions,
          )) as CallToolResult,
        );
      return ownJson(await this.#callTask(client, tool, args, options));
    } catch (error) {
      throw this.#callError(error, tool, deaths, options, client);
    } finally {
      unhook();
    }
  }

  /**
   * A tool that runs only as a task (MCP 2025-11-25): started, polled, and read back by the SDK.
   * Each poll is a quick request of its own, so the call's time bound and the caller's stop are
   * kept here over the whole task: past either the wait ends at once (not at the next poll) and
   * the server is asked to cancel the task (`tasks/cancel`).
   */
  async #callTask(
    client: Client,
    tool: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<CallToolResult> {
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new (sdk().McpError)(sdk().ErrorCode.RequestTimeout, "Request timed out")),
      options.timeoutMs,
    );
    const stop = () => controller.abort(options.signal?.reason);
    let unhook = () => {};
    if (options.signal?.aborted) stop();
    else if (options.signal) unhook = onAbort(options.signal, stop);
    const ended = new Promise<never>((_resolve, reject) => {
      const fail = () => reject(controller.signal.reason);
      if (controller.signal.aborted) fail();
      else controller.signal.addEventListener("abort", fail, { once: true });
    });
    ended.catch(() => {});
    const stream = client.experimental.tasks.callToolStream(
      bareOptions({ name: tool, arguments: args }),
      toolResultSchema(),
      bareOptions({ timeout: options.timeoutMs, signal: controller.signal }),
    );
    let taskId: string | undefined;
    try {
      for (;;) {
        const next = await Promise.race([stream.next(), ended]);
        if (next.done) break;
        const message = next.value;
        if (message.type === "taskCreated") taskId = message.task.taskId;
        if (message.type === "result") return message.result as CallToolResult;
        if (message.type === "error") throw message.error;
      }
      throw new Error("the task ended without a result");
    } catch (error) {
      if (!controller.signal.aborted) throw error;
      if (taskId !== undefined)
        client.experimental.tasks.cancelTask(taskId, bareOptions({ timeout: 5_000 })).catch(() => {});
      throw controller.signal.reason;
    } finally {
      clearTimeout(timer);
      unhook();
      if (!controller.signal.aborted) controller.abort();
      stream.return(undefined).catch(() => {});
    }
  }

  /**
   * The server's own failure (it died for good, its restart failed, the pool closed) as this call's:
   * the same code, naming the tool and saying it was not run. A call that was waiting for its turn,
   * or for a restart, when the server failed was handed the server's error as it stood, with no
   * tool in it and one object shared by every such call.
   */
  #notRun(error: unknown, tool: string): unknown {
    if (!McpPoolError.isInstance(error)) return error;
    return new McpPoolError(
      error.code,
      `${echoedName(tool)} on MCP server "${this.name}" was not run: ${error.message}`,
      {
        server: this.name,
        tool,
        cause: error,
      },
    );
  }

  #callError(
    error: unknown,
    tool: string,
    deaths: number,
    options: { signal?: AbortSignal; timeoutMs: number },
    client: Client,
  ): McpPoolError {
    const where = { server: this.name, tool, cause: this.redactError(error) };
    const name = `${echoedName(tool)} on MCP server "${this.name}"`;
    if (options.signal?.aborted) {
      return new McpPoolError(
        "aborted",
        `${name} was stopped before it answered; the server was asked to cancel it.`,
        where,
      );
    }
    if (this.#isClosed()) {
      // The pool was closed under the call: not a death, and nothing will restart it.
      return new McpPoolError(
        "closed",
        `${name} had not answered when the pool was closed, so the call has no answer.`,
        where,
      );
    }
    // -32000 is the SDK's ConnectionClosed, and also the first of JSON-RPC's "server error" codes,
    // which servers answer with for their own failures: read as a death, such an answer restarted
    // a server that was running fine (and failed it for good at the second). The SDK lets go of the
    // client's transport before it fails the calls of a connection that closed; a server's own
    // -32000 leaves it there.
    const died =
      this.#deaths !== deaths ||
      (isMcpError(error) &&
        error.code === sdk().ErrorCode.ConnectionClosed &&
        client.transport === undefined);
    if (died) {
      if (this.#deaths === deaths && this.#state === "connected") this.#died();
      const next =
        this.#state === "connecting"
          ? " It is being restarted, so the call can be made again."
          : " It is not restarted again.";
      return new McpPoolError(
        "server-died",
        this
          .#say`MCP server "${this.#named}" stopped while ${this.#toolNamed(tool)} was running, so the call has no answer.${shown(next)}${shown(this.#deathTail)}`,
        where,
      );
    }
    const tooLarge = oversized(error);
    if (tooLarge) {
      return new McpPoolError(
        "call-failed",
        `${name} answered with a message of ${bytes(tooLarge.bytes)} bytes, more than maxMessageBytes (${bytes(tooLarge.limit)}) allows, so the answer was dropped; the server runs on. Ask for less at a time, or raise the pool's maxMessageBytes.`,
        where,
      );
    }
    if (isMcpError(error) && error.code === sdk().ErrorCode.RequestTimeout) {
      return new McpPoolError(
        "timeout",
        `${name} did not answer within ${Math.round(options.timeoutMs / 100) / 10} s; the server was asked to cancel it.`,
        where,
      );
    }
    if (!isMcpError(error) && this.config.type !== "stdio" && this.#state === "connected") {
      // The server cannot be reached: reconnect (it counts as the one restart).
      this.#died();
      return new McpPoolError(
        "server-died",
        this
          .#say`MCP server "${this.#named}" could not be reached while ${this.#toolNamed(tool)} was running: ${messageOf(error)}.`,
        where,
      );
    }
    // A server built on the SDK that throws an McpError sends its message with the SDK's prefix
    // already on it, and the client's McpError adds it again: "MCP error -32602: MCP error -32602: …".
    const said = cutSaid(notAResult(error) ?? messageOf(error).replace(/^(MCP error -?\d+: )\1+/, "$1"));
    return new McpPoolError(
      "call-failed",
      this.#say`${this.#toolNamed(tool)} on MCP server "${this.#named}" failed: ${said}`,
      where,
    );
  }

  /** Disconnects (a stdio server's process is ended); the connection cannot be used again. */
  async close(): Promise<void> {
    this.#state = "closed";
    this.#generation++;
    // A start under way is ended too: its process would otherwise run on until the connect timeout.
    const starting = this.#starting;
    this.#starting = undefined;
    if (starting) await starting.close().catch(() => {});
    const client = this.#client;
    this.#client = undefined;
    if (!client) return;
    const transport = client.transport;
    // A client exists only once a connect has loaded the SDK.
    if (transport instanceof sdk().StreamableHTTPClientTransport)
      await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}
