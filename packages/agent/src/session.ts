import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { SUMMARY_LEAD } from "@loopwright/ledger";
import {
  type AgentLoopOptions,
  type AgentLoopResult,
  type ChatMessage,
  DEFAULT_TOOL_TIMEOUT_MS,
  type DedupePolicy,
  type DispatchRequest,
  foreignStepLimitsUnread,
  type LoopConfig,
  type RunUsage,
  STOPPED_DURING,
  ToolIterationLimit,
} from "@loopwright/loop";
import { type AgentSpec, resolveAgentSpec } from "@loopwright/spec";
import {
  type CatalogServer,
  createMcpPool,
  type McpPool,
  type McpPoolOptions,
  type McpServerConfig,
  type McpServersInput,
  type ServerState,
} from "@loopwright/tools-mcp";
import {
  AFTER_RUN,
  Agent,
  type AgentOptions,
  BEFORE_START,
  checkAgentOptions,
  refuseUnknownOptions,
  STEP_LIMIT_NOTICE,
  TAKE_QUEUED,
} from "./agent.js";
import type { AgentEvent, AgentRunResult } from "./agent-events.js";
import { type AgentBackend, loopBackend } from "./backend.js";
import {
  type AskAnswer,
  type AskedQuestion,
  type AskQuestion,
  askUserTool,
  todoWriteTool,
} from "./builtin-tools.js";
import { configCopy } from "./config-copy.js";
import { echoedName, escapeControls, quotedEcho } from "./echo.js";
import { AgentError, errorText, forTheSessionsUser, SessionBusyError } from "./errors.js";
import { MAKE_DIRS } from "./fs-options.js";
import {
  type AgentMessage,
  cutText,
  fieldOf,
  LLM_ROLES,
  messageText,
  toolCallsOf,
  userMessage,
} from "./messages.js";
import { ownFields, setting } from "./own.js";
import { ownDescriptors, protoless } from "./protoless.js";
import type { DroppedLine } from "./session-dropped.js";
import {
  depthProblem,
  describeMessage,
  NOT_RECORDED,
  readSession,
  refuseCaseTwin,
  removeLeftTemps,
  SessionFile,
  sessionPath,
  type Todo,
} from "./session-file.js";
import {
  beginLock,
  LOCK_LEASE_MS,
  lockSessionFile,
  MAX_LOCK_LEASE_MS,
  MIN_LOCK_LEASE_MS,
  type SessionLock,
  validLease,
} from "./session-lock.js";
import type { AgentTool, ToolExecutionMode } from "./tools.js";

/** An event's own `sideUsage`, where it holds one (never `Object.prototype`'s). */
function ownSide(event: object): unknown {
  return setting(event, "sideUsage");
}

/** How a session run ended. */
/**
 * How a session run ended. `stopped`: the host's `shouldStopAfterTurn` ended it (`stalled` is the
 * session's own stall check).
 */
export type RunStatus = "ok" | "aborted" | "error" | "stalled" | "maxTurns" | "stopped";

/** What `session.prompt` resolves with. */
export interface PromptResult {
  status: RunStatus;
  /** The last assistant text of the run ("" when there was none); for a prompt stopped mid-answer, the text it kept. */
  reply: string;
  /** Why, when `status` is `"error"`. */
  error?: string;
}

/** A session's entries, stored in its snapshot (and, for messages, in its file). */
export type TimelineEvent =
  | { type: "user"; text: string }
  | { type: "assistant"; text: string }
  | {
      type: "tool";
      id: string;
      name: string;
      argsSummary: string;
      /** null while running; "aborted" when the run stopped first. */
      result: string | null;
      isError?: boolean;
      resultSummary?: string;
    }
  | { type: "error"; text: string }
  | { type: "interrupted" }
  | { type: "question"; id: string; questions: AskedQuestion[] }
  | { type: "notice"; text: string };

/** A run's clock and tokens, as `run_metrics` carries them. */
export interface RunMetrics {
  running: boolean;
  /** Seconds since the prompt started. */
  elapsed: number;
  /** Seconds before the first answer token (thinking and tools included). */
  thinkingElapsed: number;
  /** Seconds since the first answer token. */
  replyElapsed: number;
  /** Prompt tokens served from the server's cache, over the run. */
  cacheInputTokens: number;
  /** Prompt tokens not served from cache, over the run. */
  missInputTokens: number;
  /** Completion tokens over the run. */
  outputTokens: number;
  /**
   * The run's side requests (`autoCompact`'s summaries, the preselection), apart from the three
   * above: their prompt tokens served from cache, not served from cache, and their completion tokens.
   */
  sideCacheInputTokens: number;
  sideMissInputTokens: number;
  sideOutputTokens: number;
}

/** The all-zero, not-running metrics. */
export const INITIAL_RUN_METRICS: RunMetrics = Object.freeze({
  running: false,
  elapsed: 0,
  thinkingElapsed: 0,
  replyElapsed: 0,
  cacheInputTokens: 0,
  missInputTokens: 0,
  outputTokens: 0,
  sideCacheInputTokens: 0,
  sideMissInputTokens: 0,
  sideOutputTokens: 0,
});

/** Transient events: delivered to `onEvent` listeners, never stored. */
export type StreamEvent =
  | { type: "assistant_delta"; text: string }
  | { type: "thinking_delta"; text: string }
  /** The last `chars` characters of the answer streamed so far were reasoning (a late `</think>`); it follows as `thinking_delta`. */
  | { type: "assistant_retract"; chars: number }
  /** The last `chars` characters of the reasoning streamed so far were a tool call's markup (written as text, with `<think>` in its arguments); the reasoning kept follows as `thinking_delta`. */
  | { type: "thinking_retract"; chars: number }
  | { type: "tool_start"; id: string; name: string; argsSummary: string }
  /** `name` is the call's tool: a parallel step's calls end in any order, and a UI told only the id had to keep its own map from `tool_start`. */
  | { type: "tool_end"; id: string; name: string; result: string; isError?: boolean; resultSummary?: string }
  | { type: "todos_changed"; todos: Todo[] }
  | { type: "mcp_changed"; servers: McpServerInfo[] }
  | ({ type: "run_metrics" } & RunMetrics);

/** One MCP server of a session, as `mcp_changed` and `session.mcpServers` show it. */
export interface McpServerInfo {
  name: string;
  /** `pending` until first connected; then `connecting`, `connected`, `restarting`, `failed` or `closed`. */
  state: ServerState;
  /** The names the model calls this server's tools by (empty until connected). */
  tools: string[];
  /** Why it failed: the pool's message, naming the server and ending with its stderr tail (never env or header values). */
  error?: string;
}

/** Everything `onEvent` delivers. */
export type SessionEvent = TimelineEvent | StreamEvent;

/** What `getSnapshot` returns: the same object until something changes. */
export interface SessionView {
  timeline: readonly TimelineEvent[];
  todos: readonly Todo[];
}

/** A question group waiting for `submitAnswer`. */
export type PendingQuestion = Extract<TimelineEvent, { type: "question" }>;

/**
 * What `createSession` reads. Give `config` or `spec`, as for `Agent`. The Agent's hooks and modes
 * (`beforeToolCall`, `afterToolCall`, `dispatch`, `convertToLlm`, `steeringMode`, `followUpMode`,
 * `dedupeToolCalls`) reach the session's agent as given; `transformContext`, `toolChoice` and
 * `shouldStopAfterTurn` are composed with the session's own (see each).
 */
export interface SessionOptions {
  config?: LoopConfig | null | undefined;
  spec?: AgentSpec | readonly AgentSpec[] | null | undefined;
  /** The system prompt; refused together with a spec's or config's `prompt` entries (give it one way). */
  system?: string | null | undefined;
  /**
   * The host's tools, registered after the built-ins (a same name replaces a built-in). Anything
   * but a list of tools, each with a name and an `execute`, is refused (`invalid-input`).
   */
  tools?: readonly AgentTool[] | null | undefined;
  backend?: AgentBackend | null | undefined;
  toolExecution?: ToolExecutionMode | null | undefined;
  /**
   * Interactive built-ins to register (off by default); `false` for none. Anything else, or a name
   * or value that is not `askUser`/`todoWrite` and a boolean, is refused (`invalid-input`). The
   * built-in AskUser waits for `submitAnswer` without `toolTimeoutSeconds`.
   */
  builtInTools?:
    | { askUser?: boolean | undefined; todoWrite?: boolean | undefined }
    | false
    | null
    | undefined;
  /** Names the session's file; one path segment. A fresh UUID when absent. */
  sessionId?: string | null | undefined;
  /**
   * Where `<sessionId>.jsonl` lives. Absent: nothing is stored. `""` is refused (`invalid-input`). The file is held by one open session
   * at a time (its lock `<file>.lock`): opening it while another process, or another open session of
   * this one, holds it throws `AgentError` `locked`.
   */
  sessionDir?: string | null | undefined;
  /**
   * The lock's lease in milliseconds (default 30 000; an integer from 300 to 2 147 483 647): while
   * open, the session touches its `<file>.lock` every third of it, and the lock records it. A lock
   * naming another host (a container's replacement, another machine on a shared volume) that has
   * gone unrenewed for longer than the lease it records — for a lock of an older version, which
   * records none, this one — is stale and taken over, with a notice.
   */
  lockLeaseMs?: number | null | undefined;
  /**
   * Another session file whose messages and todos seed this session when its own file holds no
   * conversation (new, or empty). When the own file holds messages, they are resumed and importPath
   * is not applied (a notice says so): opening with the same options again never replaces the
   * conversation. Prompts the seed ends in that no assistant message answered (app-only messages
   * after them answer nothing) are not carried over, with a notice; the seed file is only read. A
   * seed that does not exist, when it would be applied, is refused (`AgentError` `invalid-input`),
   * and so is `""`.
   */
  importPath?: string | null | undefined;
  /** Tool-calling turns per prompt (default 50); the turn after is reserved for the answer. */
  maxTurns?: number | null | undefined;
  /**
   * Automatic compaction at 75 % of `config.contextLength` through the loop's `compact` (see
   * `AgentOptions.autoCompact`); the file is rewritten with the folded transcript.
   */
  autoCompact?: boolean | { model?: string | undefined } | null | undefined;
  /** Identical tool-call steps, or text-only replies with todos open, tolerated in a row (default 3). */
  stallThreshold?: number | null | undefined;
  /**
   * MCP servers whose tools join the session's: a spec's `bundle.mcpServers` list or a `.mcp.json`
   * document (`{ mcpServers: { name: {...} } }`). Absent: the `bundle.mcpServers` of `spec`. They
   * connect in the background (see `mcp_changed`, `mcpReady`); `close()` ends them.
   */
  mcpServers?: McpServersInput | readonly McpServerConfig[] | null | undefined;
  /** Options for the MCP pool (timeouts, tool naming, restarts, elicitation). Images are described in text. */
  mcpOptions?: Omit<McpPoolOptions, "onToolsChanged" | "images"> | null | undefined;
  /** As the Agent's: may block a call or rewrite its arguments. */
  beforeToolCall?: AgentOptions["beforeToolCall"] | null | undefined;
  /** As the Agent's: may replace a call's result or ask to terminate. */
  afterToolCall?: AgentOptions["afterToolCall"] | null | undefined;
  /** As the Agent's: runs a call of a tool the session does not hold. */
  dispatch?: AgentOptions["dispatch"] | null | undefined;
  /** As the Agent's: turns the transcript into the chat messages sent. */
  convertToLlm?: AgentOptions["convertToLlm"] | null | undefined;
  /** As the Agent's: how many steered messages one drain point delivers. */
  steeringMode?: AgentOptions["steeringMode"] | null | undefined;
  /** As the Agent's: how many follow-up messages one drain point delivers (the open-todos nudge is one). */
  followUpMode?: AgentOptions["followUpMode"] | null | undefined;
  /**
   * As the Agent's (overrides `config.dedupeToolCalls`). With MCP servers, an MCP tool's identical
   * calls share one answer when this policy or the pool's (read-only or idempotent) says they may.
   */
  dedupeToolCalls?: AgentOptions["dedupeToolCalls"] | null | undefined;
  /**
   * As the Agent's, run after the session's own in-band step: it sees the view with the session's
   * notice (the last fifth of the budget, the reserved final turn) already on its end.
   */
  transformContext?: AgentOptions["transformContext"] | null | undefined;
  /** As the Agent's, asked for every step but the reserved final turn, which is sent `"none"`. */
  toolChoice?: AgentOptions["toolChoice"] | null | undefined;
  /**
   * As the Agent's, asked after the session's stall check when that did not stop the run: true
   * ends the run with status `stopped`.
   */
  shouldStopAfterTurn?: AgentOptions["shouldStopAfterTurn"] | null | undefined;
  /**
   * As the Agent's: the host's servers for `toolDiscovery` `"ondemand"` and `"proxy"` (checked as
   * `new Agent` checks it). Without MCP servers it is the agent's `catalog`, and the session never
   * assigns `agent.catalog` (what the host assigns it stays). With MCP servers the session composes
   * `agent.catalog` before each run: these servers, its own tools none of them lists as server
   * `tools` (added to a host server named `tools`), and each connected MCP server under its name
   * with its tools none of them lists (a server they list every tool of is left out); a host server
   * named as an MCP server is refused (`invalid-input`).
   */
  catalog?: AgentOptions["catalog"] | null | undefined;
}

/** Every option `createSession` reads (the type makes a new option be listed here). */
const SESSION_OPTION_NAMES = Object.keys({
  config: true,
  spec: true,
  system: true,
  tools: true,
  backend: true,
  toolExecution: true,
  builtInTools: true,
  sessionId: true,
  sessionDir: true,
  lockLeaseMs: true,
  importPath: true,
  maxTurns: true,
  autoCompact: true,
  stallThreshold: true,
  mcpServers: true,
  mcpOptions: true,
  beforeToolCall: true,
  afterToolCall: true,
  dispatch: true,
  convertToLlm: true,
  steeringMode: true,
  followUpMode: true,
  dedupeToolCalls: true,
  transformContext: true,
  toolChoice: true,
  shouldStopAfterTurn: true,
  catalog: true,
} satisfies Record<keyof SessionOptions, true>);

/** Agent options a session does not take, and where what they would give comes from instead. */
const NOT_SESSION_OPTIONS: Readonly<Record<string, string>> = {
  messages:
    "a session's transcript is its file's (sessionDir and sessionId) or, for a new file, importPath's (another session file)",
  loaded: "a session's loaded tools come from its file",
};

/** What a session's model is told on the reserved final turn. */
export const FINAL_TURN_NOTE =
  "[notice] The tool budget for this request is spent. Answer now with what you have; tool calls on this turn will not run.";
/** What the model is told when it replies with text while todos are still open. */
export const OPEN_TODOS_NOTE =
  "[notice] Your todo list still has unfinished items. Continue working on them, or update the list with TodoWrite.";

/**
 * What a value is, for an error message: `null`, `an array`, `a number (5)`, `a string ("5")` — a
 * string quoted as `quotedEcho` writes it (cut at 60 with its length said, half a surrogate pair
 * U+FFFD, controls and bidirectional marks `\uXXXX`).
 */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing (undefined)";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `a string (${quotedEcho(value)})`;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return `a ${typeof value} (${String(value)})`;
  }
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function invalid(message: string): AgentError {
  return new AgentError("invalid-input", message);
}

/** A count option: absent (`undefined` or `null`) is `fallback`; otherwise a positive integer or `invalid-input`. */
function positive(value: number | null | undefined, fallback: number, name: string): number {
  if (value == null) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw invalid(`createSession: ${name} must be a positive integer; got ${kindOf(value)}.`);
  }
  return value;
}

/** The `lockLeaseMs` option: absent for the default lease, else an integer number of milliseconds in range. */
function lockLease(value: unknown): number {
  if (value == null) return LOCK_LEASE_MS;
  if (!validLease(value)) {
    throw invalid(
      `createSession: lockLeaseMs must be an integer number of milliseconds from ${MIN_LOCK_LEASE_MS} to ${MAX_LOCK_LEASE_MS}; got ${kindOf(value)}.`,
    );
  }
  return value;
}

/** A string option a host may pass through from a request: absent (`undefined` or `null`), or refused unless it is one. */
function text(value: unknown, name: string, what: string): string | undefined {
  if (value == null) return undefined;
  if (typeof value === "string") return value;
  const kind = Array.isArray(value) ? "an array" : `a ${typeof value}`;
  throw invalid(`createSession: ${name} must be ${what}; got ${kind}.`);
}

/**
 * A path option: absent (`undefined` or `null`) is undefined; otherwise non-empty text or
 * `invalid-input` — an empty one (an environment variable set to nothing) would store nothing, or
 * seed from nothing, with no word said.
 */
function pathOption(value: unknown, name: string): string | undefined {
  const given = text(value, name, "a path (a string)");
  if (given === "") {
    throw invalid(
      `createSession: ${name} must be a non-empty path; got "" (leave ${name} out, or give it as undefined or null, for none).`,
    );
  }
  return given;
}

/**
 * Builds what `make` builds; an `invalid-input` it throws names `createSession`, the call the host
 * made, where it named `new Agent`.
 */
function asSession<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (!AgentError.isInstance(error) || error.code !== "invalid-input") throw error;
    const message = error.message.startsWith("new Agent: ")
      ? `createSession: ${error.message.slice("new Agent: ".length)}`
      : `createSession: ${error.message}`;
    throw new AgentError("invalid-input", message, "cause" in error ? { cause: error.cause } : undefined);
  }
}

const BUILT_IN_NAMES = ["askUser", "todoWrite"] as const;

/** `builtInTools` as given: absent, `null` or `false` is none; otherwise `{ askUser?, todoWrite? }` of booleans. */
function builtInChoice(value: unknown): { askUser?: boolean; todoWrite?: boolean } {
  if (value === undefined || value === null || value === false) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw invalid(
      `createSession: builtInTools must be { askUser?, todoWrite? } (each true or false), or false for none; got ${kindOf(value)}.`,
    );
  }
  for (const [name, on] of Object.entries(value)) {
    if (!(BUILT_IN_NAMES as readonly string[]).includes(name)) {
      throw invalid(
        `createSession: builtInTools.${name} is not a built-in tool of a session (${BUILT_IN_NAMES.join(", ")}).`,
      );
    }
    if (on !== undefined && typeof on !== "boolean") {
      throw invalid(`createSession: builtInTools.${name} must be true or false; got ${kindOf(on)}.`);
    }
  }
  // Own fields only: `askUser` on a polluted Object.prototype registers no tool.
  return { askUser: setting(value, "askUser") === true, todoWrite: setting(value, "todoWrite") === true };
}

/** `tools` as given: absent or `null` is none; otherwise a list of tools, each with a name and an `execute`. */
function hostTools(value: unknown): readonly AgentTool[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    throw invalid(
      `createSession: tools must be a list of tools ({ name, execute, … }); got ${kindOf(value)}.`,
    );
  }
  value.forEach((tool: unknown, at) => {
    if (typeof tool !== "object" || tool === null) {
      throw invalid(
        `createSession: tools[${at}] must be a tool with a non-empty name and an execute function; got ${kindOf(tool)}.`,
      );
    }
    const name = setting(tool, "name");
    const execute = setting(tool, "execute");
    const named = typeof name === "string" && name !== "";
    if (!named || typeof execute !== "function") {
      const has = `${named ? `name ${quotedEcho(name)}` : "no name"} and ${typeof execute === "function" ? "an" : "no"} execute function`;
      throw invalid(
        `createSession: tools[${at}] must be a tool with a non-empty name and an execute function; got an object with ${has}.`,
      );
    }
  });
  return value;
}

/**
 * The per-call limit `toolTimeoutSeconds` sets, in milliseconds, as the loop reads it: absent is
 * `DEFAULT_TOOL_TIMEOUT_MS`, `0` (or infinity) none. `false` for a value the loop refuses (left to
 * the loop to refuse, as before).
 */
function toolLimitMs(seconds: unknown): number | undefined | false {
  if (seconds === undefined) return DEFAULT_TOOL_TIMEOUT_MS;
  if (typeof seconds !== "number" || !(seconds >= 0)) return false;
  if (seconds === 0 || seconds === Number.POSITIVE_INFINITY) return undefined;
  return Math.min(seconds * 1000, 2_147_483_647);
}

/**
 * What the model reads for a call stopped at `toolTimeoutSeconds`: the loop's own words, the name
 * echoed as the loop echoes it (`echoedName`: quoted, cut at 60 and its controls escaped where it
 * is no name a tool could have).
 */
function timedOutText(name: string, ms: number): string {
  const s = ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
  return `the ${echoedName(name)} tool did not finish within ${s} (toolTimeoutSeconds) and was stopped. Try it again with less to do, or do without it.`;
}

/**
 * Why `answer` is no answer to `question`, or undefined when it is one: `""` (skipped), an offered
 * label, or for a multi-select question a list of offered labels, each once.
 */
function answerFault(question: AskQuestion, answer: unknown): string | undefined {
  const labels = question.options.map((option) => option.label);
  const offered = labels.map((label) => quotedEcho(label)).join(", ");
  const allowed = question.multiSelect
    ? `"" (skipped), one of the offered labels (${offered}) or a list of them`
    : `"" (skipped) or one of the offered labels (${offered})`;
  if (typeof answer === "string") {
    if (answer === "" || labels.includes(answer)) return undefined;
    return `must be ${allowed}; got ${quotedEcho(answer)}, which was not offered.`;
  }
  if (!Array.isArray(answer)) return `must be ${allowed}; got ${kindOf(answer)}.`;
  if (!question.multiSelect) {
    return `is a list, but the question is not multi-select: answer one of the offered labels (${offered}), or "" to skip.`;
  }
  const seen = new Set<string>();
  for (const [at, label] of answer.entries()) {
    if (typeof label !== "string")
      return `must list offered labels (${offered}); it holds ${kindOf(label)} at [${at}].`;
    if (!labels.includes(label)) {
      return `must list offered labels (${offered}); ${quotedEcho(label)} at [${at}] was not offered.`;
    }
    if (seen.has(label)) return `lists ${quotedEcho(label)} twice.`;
    seen.add(label);
  }
  return undefined;
}

function summarize(text: string, max = 75): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${cutText(flat, max)}…` : flat;
}

/**
 * A message queued with steer() or followUp(), as a notice names it: summarized, quoted, and its
 * controls and bidi marks written `\uXXXX` (the echo rule's set), so a right-to-left override or a
 * terminal's escape in it does not turn the notice around where a host shows it.
 */
function quotedMessage(text: string): string {
  return escapeControls(JSON.stringify(summarize(text)));
}

/** Where the last summary an `autoCompact` fold put into the transcript is, or -1. */
function lastFold(messages: readonly AgentMessage[]): number {
  for (let at = messages.length - 1; at >= 0; at--) {
    const content = fieldOf(messages[at], "content");
    if (
      fieldOf(messages[at], "role") === "system" &&
      typeof content === "string" &&
      content.startsWith(SUMMARY_LEAD)
    )
      return at;
  }
  return -1;
}

/** `#settle`'s notice when a stopped prompt keeps the answer text it had streamed. */
const KEPT_CUT = "Stopped: the answer so far is kept in the conversation.";

/** The notice after a prompt that failed on a turn after a finished tool step (worded as a reopen's). */
const FAILED_AFTER_TOOLS =
  "The conversation ends in tool results the model has not answered yet (the run failed before the model answered them): the next prompt is sent after them, and session.agent.continue() has the model go on from them.";

/**
 * How long `close()` (and `dispose()`) waits for a stopped run to settle — write its last messages —
 * before it lets go of the file's lock anyway; from then on that run writes nothing to the file.
 */
const CLOSE_WAIT_MS = 5000;

/**
 * Set by `createSession` around its `new Session`: the open may wait for another opener's takeover
 * with timers (the constructor throws `LockWait`, `createSession` waits and constructs again), and
 * `lock` is the lock so taken, for the constructor to use.
 */
interface Opening {
  readonly options: SessionOptions;
  lock: SessionLock | undefined;
}
let opening: Opening | undefined;

/** Thrown by the constructor under `createSession` when taking the lock has to wait: `wait` does it with timers. */
class LockWait {
  constructor(readonly wait: () => Promise<SessionLock>) {}
}

/**
 * Makes the session directory and takes the lock of the session's file in it (see
 * `lockSessionFile`): under `createSession` (`open`), the lock it took already, or, when taking it
 * has to wait for another opener, `LockWait` (never blocking the thread); `new Session` blocks.
 */
function lockSessionDir(dir: string, file: string, open: Opening | undefined, leaseMs: number): SessionLock {
  const given = open?.lock;
  if (given && given.path === `${file}.lock` && given.lost === undefined) {
    open.lock = undefined;
    return given;
  }
  try {
    mkdirSync(dir, MAKE_DIRS);
  } catch (error) {
    throw new AgentError("storage", `Could not create the session directory ${dir}: ${errorText(error)}`, {
      cause: error,
    });
  }
  if (!open) return lockSessionFile(file, leaseMs);
  const begun = beginLock(file, leaseMs);
  if (typeof begun === "function") throw new LockWait(begun);
  return begun;
}

/** What a closed session's (or its agent's) `method` throws. */
function closedError(method: string): AgentError {
  return new AgentError(
    "closed",
    `${method}: the session is closed (close() or dispose() was called); nothing was sent or written. Create a new session (with the same sessionDir and sessionId to resume its file).`,
  );
}

/**
 * The session's agent: each `prompt` and `continue` first asks the session (`before`), which throws
 * once it is closed or its lock was found lost; each setter (`messages`, `loaded`, `system`,
 * `catalog`), `reset`, `steer` and `followUp` asks it too (`change`), which throws once the lock was
 * found lost, before anything in memory changes.
 */
class SessionAgent extends Agent {
  readonly #before: (method: string) => void;
  readonly #change: (method: string) => void;
  readonly #start: () => void;
  readonly #after: (result: AgentRunResult) => void;
  readonly #stepLimit: (found: readonly string[]) => string;

  constructor(
    options: AgentOptions,
    before: (method: string) => void,
    change: (method: string) => void,
    start: () => void,
    after: (result: AgentRunResult) => void,
    stepLimit: (found: readonly string[]) => string,
  ) {
    super(options);
    this.#before = before;
    this.#change = change;
    this.#start = start;
    this.#after = after;
    this.#stepLimit = stepLimit;
  }

  /** Another SDK's step limit in the config: the session's notice, naming its `maxTurns`, not the Agent's. */
  override [STEP_LIMIT_NOTICE](found: readonly string[]): string {
    return this.#stepLimit(found);
  }

  /** Once `prompt`'s own checks passed, before its run starts: the session shows the prompt it is running. */
  [BEFORE_START](): void {
    this.#start();
  }

  /** Once a run has settled (its `agent_end` listeners included): the session drops what a host's run left queued. */
  [AFTER_RUN](result: AgentRunResult): void {
    this.#after(result);
  }

  // Like `Agent.prompt`/`continue`, these reject (never throw): a closed session or a message the
  // file could not hold comes back as the returned promise's rejection.
  override prompt(input: Parameters<Agent["prompt"]>[0]): ReturnType<Agent["prompt"]> {
    try {
      this.#before("Agent.prompt");
      if (Array.isArray(input)) {
        for (const [at, message] of input.entries()) fitsFile(`Agent.prompt: message ${at}`, message);
      } else fitsFile("Agent.prompt: the message", input);
      return super.prompt(input);
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  }

  override continue(): ReturnType<Agent["continue"]> {
    try {
      this.#before("Agent.continue");
      return super.continue();
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  }

  // A message the session's file could not hold is refused where it is given, nothing added: the
  // session never writes a line its reader would drop on the next open.
  /** The live transcript as the host is given it, and the array it stands for. */
  #view: { of: AgentMessage[]; guarded: AgentMessage[] } | undefined;

  /**
   * The live transcript, as `Agent.messages` gives it, through a guard: an in-place change (`push`,
   * `splice`, an index or `length` assigned) asks the session first, like the setter, so once the
   * lock was found lost it throws `AgentError` (`locked`) and nothing changes. Reading is untouched.
   */
  override get messages(): AgentMessage[] {
    const live = super.messages;
    if (this.#view?.of !== live) {
      const change = () => this.#change("Agent.messages");
      this.#view = {
        of: live,
        guarded: new Proxy(
          live,
          protoless({
            set(target, key, value) {
              change();
              return Reflect.set(target, key, value);
            },
            defineProperty(target, key, descriptor) {
              change();
              return Reflect.defineProperty(target, key, protoless({ ...descriptor }));
            },
            deleteProperty(target, key) {
              change();
              return Reflect.deleteProperty(target, key);
            },
          }),
        ),
      };
    }
    return this.#view.guarded;
  }
  override set messages(messages: readonly AgentMessage[]) {
    this.#change("Agent.messages");
    if (Array.isArray(messages)) {
      for (const [at, message] of messages.entries()) fitsFile(`Agent.messages[${at}]`, message);
    }
    super.messages = messages;
  }

  override get loaded(): readonly string[] {
    return super.loaded;
  }
  override set loaded(names: readonly string[]) {
    this.#change("Agent.loaded");
    super.loaded = names;
  }

  override get system(): string | undefined {
    return super.system;
  }
  override set system(system: string | undefined) {
    this.#change("Agent.system");
    super.system = system;
  }

  override get catalog(): AgentOptions["catalog"] {
    return super.catalog;
  }
  override set catalog(catalog: AgentOptions["catalog"]) {
    this.#change("Agent.catalog");
    super.catalog = catalog;
  }

  override reset(): void {
    this.#change("Agent.reset");
    super.reset();
  }

  override steer(message: Parameters<Agent["steer"]>[0]): void {
    this.#change("Agent.steer");
    fitsFile("Agent.steer: the message", message);
    super.steer(message);
  }

  override followUp(message: Parameters<Agent["followUp"]>[0]): void {
    this.#change("Agent.followUp");
    fitsFile("Agent.followUp: the message", message);
    super.followUp(message);
  }
}

/**
 * Throws `AgentError` (`invalid-input`) naming `what` when a session file could not hold `message`
 * (nested deeper than `MAX_RECORD_DEPTH` allows).
 */
function fitsFile(what: string, message: unknown): void {
  const problem = typeof message === "object" && message !== null ? depthProblem(message) : undefined;
  if (problem) throw new AgentError("invalid-input", `${what} (the ${describeMessage(message)}) ${problem}.`);
}

/**
 * A durable conversation a host builds a chat product on: one run at a time, a timeline for the UI,
 * transient stream events, AskUser and TodoWrite built in, stall detection and a reserved final
 * turn, and (with `sessionDir`) an append-only JSONL file it resumes from.
 */
export class Session {
  readonly sessionId: string;
  /** The session's file, or undefined without `sessionDir`. */
  readonly filePath: string | undefined;
  /**
   * The underlying agent (its transcript, `steer`, `followUp`). Once the file's lock was found lost,
   * assigning its `messages`, `loaded`, `system` or `catalog`, changing its `messages` in place
   * (`push`, `splice`, an index), `reset()`, `steer()` and `followUp()` throw `AgentError`
   * (`locked`), as `prompt` is refused, and nothing in memory changes.
   */
  readonly agent: Agent;
  readonly maxTurns: number;
  readonly stallThreshold: number;

  /**
   * The timeline's entries, changed in place (an entry appended, a running tool's entry replaced):
   * the snapshot is a copy made when asked (`getSnapshot`) and kept until the next change. Copied
   * on every change, a session of 20,000 entries took 29 s to add 20,000 more (40,000: 195 s).
   */
  #timeline: TimelineEvent[] = [];
  /** Where the tool entries still running (`result: null`) stand in `#timeline`, by call id. */
  #openTools = new Map<string, number[]>();
  /** Where each question entry stands in `#timeline`, by its id. */
  #questionAt = new Map<string, number[]>();
  /** The snapshot's todos (a copy made when they change). */
  #shownTodos: readonly Todo[] = frozen([]);
  /** What `getSnapshot` returns until the next change; made when asked. */
  #snapshot: SessionView | undefined;
  #todos: readonly Todo[];
  #file: SessionFile | undefined;
  /** The lock of the session's file while it is open (undefined without `sessionDir`, and once let go). */
  #lock: SessionLock | undefined;
  /** Why the file's lock was lost (another opener took it over), once it was: `save()` rejects with it. */
  #lockLost: string | undefined;
  /** While the session itself changes its agent (`#byItself`): its setters do not ask the lock. */
  #itself = false;
  #createdAt: string;
  #stored = 0;
  /**
   * Set when the host changed the agent's transcript (assigned `agent.messages`, changed it in
   * place, `agent.reset()`): the file no longer holds its head, so the next write rewrites it whole.
   */
  #resync = false;
  /** True while `#regrow` writes the file whole again (its own writes are not checked for a deleted file). */
  #regrowing = false;
  /** The calls of the last assistant message in the file that the file holds no answer to yet. */
  #fileOpen = new Set<string>();
  /**
   * Answers written as their call finished (`tool_execution_end`), before the loop hands the step's
   * answers over: the ones the transcript does not hold yet, by call id, so each is written once.
   */
  #early = new Map<string, ChatMessage>();
  #running = false;
  /** Resolves when the running prompt has ended (its last messages written); that prompt alone resolves it. */
  #runEnd: Promise<void> = Promise.resolve();
  /** `close()`'s promise, once called. */
  #closing: Promise<void> | undefined;
  #questions = 0;
  /** The running prompt's own message: on the timeline already when the agent adds it. */
  #asked: AgentMessage | undefined;
  /** The message `Session.prompt` is handing its agent, until the agent's checks (#beforeRun) take it. */
  #starting: AgentMessage | undefined;
  /** Whether the running prompt's run has begun (#begin): a prompt refused before that shows and changes nothing. */
  #begun = false;
  /** The answer text a stopped or failed turn had streamed (the agent's last unfinished message). */
  #cut = "";
  /** Whether an `autoCompact` fold was taken in during the running prompt (its prompt may be in the summary). */
  #folded = false;
  /**
   * Assistant messages of a model turn (named by a `turn_end`): the loop's own exchange before the
   * first request (a proxied preselection's load_tools) has none, so it is not taken for an answer.
   */
  #answered = new WeakSet<AgentMessage>();
  #pending = new Map<string, { entry: PendingQuestion; resolve: (answers: AskAnswer[]) => void }>();
  /** The built-in AskUser tool, when registered: it waits for the person, never for `toolTimeoutSeconds`. */
  #askUser: AgentTool | undefined;
  readonly #eventListeners = new Set<(event: SessionEvent) => void>();
  readonly #viewListeners = new Set<() => void>();
  // Per run.
  #stalled = false;
  #lastCalls = "";
  #repeats = 0;
  #textOnly = 0;
  /** Tool turns the running prompt has taken, over every loop run the agent started for it. */
  #toolTurns = 0;
  /** Tool turns taken before the agent's current loop run began (a follow-up starts a new one). */
  #before = 0;
  #started = 0;
  #firstText = 0;
  /** `#firstText` as it stood when the streaming assistant message began. */
  #firstTextBefore = 0;
  #metrics: RunMetrics = INITIAL_RUN_METRICS;
  /** The side usage the agent's running run last told (its totals so far): what `#addSide` adds to. */
  #sideSeen: RunUsage | undefined;
  #ticker: ReturnType<typeof setInterval> | undefined;
  // MCP.
  readonly #mcp: McpPool | undefined;
  #mcpTools = new Set<string>();
  #mcpServerOf = new Map<string, string>();
  /** The connected MCP servers as catalogue entries, each with the tools the session offers of it. */
  #mcpCatalog: CatalogServer[] = [];
  /** The host's `catalog` option: its servers head the catalogue the session composes with MCP servers. */
  #hostCatalog: NonNullable<AgentOptions["catalog"]> | undefined;
  #mcpRefresh: Promise<void> = Promise.resolve();
  #mcpShown = "";
  #closed = false;

  constructor(options: SessionOptions) {
    // Bound, so they can be handed on as they are — `useSyncExternalStore(session.subscribe,
    // session.getSnapshot)`, as React's docs write it — where, unbound, reading the session's own
    // fields threw ("Cannot read properties of undefined").
    this.subscribe = this.subscribe.bind(this);
    this.getSnapshot = this.getSnapshot.bind(this);
    this.onEvent = this.onEvent.bind(this);
    if (typeof options !== "object" || options === null) {
      throw new AgentError(
        "invalid-input",
        "createSession(options): options must be an object with config or spec.",
      );
    }
    const open = opening?.options === options ? opening : undefined;
    opening = undefined;
    refuseUnknownOptions(options, SESSION_OPTION_NAMES, "createSession", NOT_SESSION_OPTIONS);
    // Read where the options object (or its own class) holds them, once: one on a polluted
    // Object.prototype (`maxTurns = 1`) is nobody's option.
    options = ownFields(options, SESSION_OPTION_NAMES);
    this.maxTurns = positive(options.maxTurns, 50, "maxTurns");
    this.stallThreshold = positive(options.stallThreshold, 3, "stallThreshold");
    const builtIn = builtInChoice(options.builtInTools);
    const given = hostTools(options.tools);
    const system = text(options.system, "system", "text (the system prompt)");
    // The options the session shares with new Agent are checked by the Agent's rule, as the host
    // gave them (the backend and the config are wrapped and copied on the way to the agent). The
    // session's own options are not the Agent's, and it reads `system` and `tools` above first.
    checkAgentOptions(options, "createSession");
    // Checked before any is used as a path: a number given to `fs` is read as an open file descriptor.
    const sessionDir = pathOption(options.sessionDir, "sessionDir");
    const importPath = pathOption(options.importPath, "importPath");
    this.sessionId = text(options.sessionId, "sessionId", "a string") ?? randomUUID();
    this.filePath = sessionDir ? sessionPath(sessionDir, this.sessionId) : undefined;
    if (sessionDir) refuseCaseTwin(sessionDir, this.sessionId);
    const leaseMs = lockLease(options.lockLeaseMs);
    // One process at a time: the file is locked before it is read, and let go again if the session
    // is refused below (`AgentError` `locked` while another process, or session, holds it).
    this.#lock =
      this.filePath && sessionDir ? lockSessionDir(sessionDir, this.filePath, open, leaseMs) : undefined;
    try {
      const notices: string[] = this.#lock?.notice ? [this.#lock.notice] : [];
      // Held by this session now: a temporary file of a rewrite its last holder never finished goes.
      const left = this.#lock && this.filePath ? removeLeftTemps(this.filePath) : undefined;
      if (left) notices.push(left);
      let messages: AgentMessage[] = [];
      let todos: Todo[] = [];
      let loaded: string[] = [];
      let createdAt: string | undefined;
      /** The own file's lines the reader did not keep as written: copied before the rewrite below. */
      let lost: DroppedLine[] = [];
      // The own file is read first: importPath seeds only a session whose file holds no conversation,
      // so a host that opens with the same options at every start resumes, never re-seeds.
      const own = this.filePath ? readSession(this.filePath, true) : undefined;
      if (own) {
        lost = own.lost;
        notices.push(...own.notices);
      }
      if (importPath && own && own.messages.length > 0) {
        notices.push(
          `importPath ${importPath} was not applied: the session file ${this.filePath} already holds a conversation (${own.messages.length} messages), which is kept. importPath seeds only a session whose file holds none; drop importPath to resume, or pick another sessionId to seed a new session.`,
        );
      }
      if (importPath && !(own && own.messages.length > 0)) {
        // A seed that is not there (a misspelt path, a volume not mounted) would start the session empty in
        // silence: refused, so nothing is written to the own file.
        if (!existsSync(importPath)) {
          throw new AgentError(
            "invalid-input",
            `importPath ${importPath} does not exist: the session ${this.filePath ? `file ${this.filePath} ` : ""}was to be seeded from it. Give the path of an existing session file, or drop importPath to start the session empty.`,
          );
        }
        // A seed that ends in a prompt no model answered seeds without it (the seed file is only read).
        const { lost: _, ...imported } = readSession(importPath, true, true);
        messages = imported.messages;
        todos = imported.todos;
        loaded = imported.loaded;
        notices.push(...imported.notices);
      } else if (own) {
        messages = own.messages;
        todos = own.todos;
        loaded = own.loaded;
        createdAt = own.createdAt;
      }
      this.#createdAt = createdAt ?? new Date().toISOString();
      this.#todos = frozen(todos);
      const tools: AgentTool[] = [];
      if (builtIn.askUser) {
        this.#askUser = askUserTool((questions, signal) => this.#ask(questions, signal));
        tools.push(this.#askUser);
      }
      if (builtIn.todoWrite) tools.push(todoWriteTool((next) => this.#setTodos(next)));
      for (const tool of given) {
        const at = tools.findIndex((t) => t.name === tool.name);
        if (at >= 0) tools.splice(at, 1);
        tools.push(tool);
      }
      const config = options.config ?? undefined;
      const hostDedupe = options.dedupeToolCalls ?? undefined;
      const hostTransform = options.transformContext ?? undefined;
      const hostChoice = options.toolChoice ?? undefined;
      const hostStop = options.shouldStopAfterTurn ?? undefined;
      this.#hostCatalog = options.catalog ?? undefined;
      const withMcp = options.mcpServers != null || specServers(options.spec).length > 0;
      // maxTurns is the prompt's budget, but the agent runs a follow-up (the open-todos nudge, a host's
      // queued message) as a new loop run whose steps count from 1: each run is given what is left.
      const backend = options.backend ?? loopBackend();
      this.agent = asSession(
        () =>
          new SessionAgent(
            {
              // A copy that keeps the config's getters and what its prototype holds, as an Agent reads them.
              ...(config
                ? { config: configCopy(config, { with: { maxToolIterations: this.maxTurns } }) }
                : {}),
              ...(options.spec ? { spec: options.spec } : {}),
              ...(system !== undefined ? { system } : {}),
              tools,
              messages,
              loaded,
              // Without MCP servers the agent keeps it (and whatever the host assigns it later) as is.
              ...(this.#hostCatalog ? { catalog: this.#hostCatalog } : {}),
              backend: {
                run: (loopOptions) => {
                  this.#before = this.#toolTurns;
                  const left = Math.max(0, this.maxTurns - this.#before);
                  return this.#timedRun(backend, loopOptions, left);
                },
              },
              ...(options.toolExecution != null ? { toolExecution: options.toolExecution } : {}),
              ...(options.autoCompact != null ? { autoCompact: options.autoCompact } : {}),
              // Handed on as given (null is absent, as new Agent reads it).
              beforeToolCall: options.beforeToolCall,
              afterToolCall: options.afterToolCall,
              dispatch: options.dispatch,
              convertToLlm: options.convertToLlm,
              steeringMode: options.steeringMode,
              followUpMode: options.followUpMode,
              // The session's in-band step first; the host's rewrite sees the view the model would.
              transformContext: (view, signal, info) => {
                const own = this.#inBand(view, info.step);
                return hostTransform ? hostTransform(own, signal, info) : own;
              },
              // The reserved final turn is for the answer: the server is told, and the note stays for one that ignores it.
              toolChoice: (info) => (this.#before + info.step > this.maxTurns ? "none" : hostChoice?.(info)),
              // Asked after a tool step, and after a text answer when a follow-up is queued: a text answer
              // neither repeats nor breaks a run of identical call sets (the text-only count is turn_end's).
              // The session's check always runs (it counts); the host's is asked when it did not stop.
              shouldStopAfterTurn: (context, signal) => {
                const own =
                  context.toolResults.length > 0 ? this.#stallCheck(context.message) : this.#stalled;
                return own || (hostStop ? hostStop(context, signal) : false);
              },
              ...(withMcp
                ? { dedupeToolCalls: (request: DispatchRequest) => this.#dedupe(request, config, hostDedupe) }
                : { dedupeToolCalls: hostDedupe }),
            },
            (method) => this.#beforeRun(method),
            (method) => this.#beforeChange(method),
            () => this.#beforeStart(),
            (result) => this.#afterHostRun(result),
            (found) => this.#stepLimitNotice(found),
          ),
      );
      if (options.spec) (this.agent.config as LoopConfig).maxToolIterations = this.maxTurns;
      this.agent.subscribe((event) => this.#onAgentEvent(event));
      this.#setTimeline(timelineOf(messages), [...todos]);
      // The pool is made (nothing connects yet) and checked against the host's catalogue before the
      // file is written, so a refused session leaves no file behind.
      const fromSpec = specServers(options.spec);
      const servers = options.mcpServers ?? fromSpec;
      if (options.mcpServers != null || fromSpec.length > 0) {
        try {
          this.#mcp = createMcpPool(servers as McpServersInput, {
            ...options.mcpOptions,
            onToolsChanged: () => this.#queueMcpRefresh(),
          });
        } catch (error) {
          throw new AgentError("invalid-input", `createSession: mcpServers: ${errorText(error)}`, {
            cause: error,
          });
        }
        const names = new Set(this.#mcp.status().map((status) => status.name));
        this.#hostCatalog?.forEach((server, at) => {
          if (!names.has(server.name)) return;
          throw invalid(
            `createSession: catalog[${at}] is named ${JSON.stringify(server.name)}, as an MCP server of the session is; ` +
              "the catalogue lists each MCP server under its own name, so give the host's server another name.",
          );
        });
      }
      if (this.filePath && sessionDir) {
        this.#file = new SessionFile(this.filePath);
        // A fresh, imported or repaired file is written whole; an intact one is only appended to.
        // Every line the reader did not keep as written goes to <file>.dropped first, so the
        // rewrite never loses a line for good.
        if (lost.length > 0) {
          const kept = this.#file.keepDropped(lost, notices);
          if (kept) notices.push(kept);
        }
        this.#rewrite(messages, todos, loaded);
      }
      this.#stored = messages.length;
      // Added without telling: no listener can be subscribed yet.
      for (const text of notices) this.#append({ type: "notice", text });
      if (this.#mcp) {
        this.#byItself(() => {
          this.agent.catalog = this.#catalog();
        });
        // In the background: never holds up the constructor or a prompt.
        void this.#mcp.connect().then(() => this.#queueMcpRefresh());
      }
    } catch (error) {
      this.#lock?.release();
      throw error;
    }
    // A lock found to be another's (its lease lapsed and another opener took it over): from then on
    // the file is that opener's, and this session writes nothing more to it.
    const lock = this.#lock;
    lock?.watch((why) => {
      if (this.#lock !== lock) return;
      this.#lock = undefined;
      this.#file = undefined;
      this.#lockLost = why;
      this.addNotice(
        `${why} Nothing more is written to the session file by this session; close it, and open the file again once the other session has let go of it.`,
      );
    });
  }

  /** The session's MCP servers now (empty without `mcpServers`). */
  get mcpServers(): McpServerInfo[] {
    if (!this.#mcp) return [];
    return this.#mcp.status().map((status) => ({
      name: status.name,
      state: status.state,
      tools: [...this.#mcpTools].filter((tool) => this.#mcpServerOf.get(tool) === status.name).sort(),
      ...(status.error ? { error: status.error.message } : {}),
    }));
  }

  /**
   * Waits until every MCP server has connected or failed and the connected servers' tools are
   * registered; resolves to `mcpServers`. Never rejects. Resolves at once without servers.
   */
  async mcpReady(): Promise<McpServerInfo[]> {
    if (this.#mcp && !this.#closed) {
      await this.#mcp.connect();
      await this.#queueMcpRefresh();
    }
    return this.mcpServers;
  }

  /** Whether a prompt is running. */
  get running(): boolean {
    return this.#running;
  }

  /** The todo list. */
  get todos(): readonly Todo[] {
    return this.#todos;
  }

  /** The most recent unanswered question group, or undefined. */
  get pendingQuestion(): PendingQuestion | undefined {
    return [...this.#pending.values()].at(-1)?.entry;
  }

  /** The transcript (chat messages), as stored. */
  get messages(): readonly AgentMessage[] {
    return this.agent.messages;
  }

  /** Listens to every timeline and stream event; returns the function that stops it. */
  onEvent(listener: (event: SessionEvent) => void): () => void {
    if (typeof listener !== "function") {
      throw invalid(`Session.onEvent: the listener must be a function, and was ${kindOf(listener)}.`);
    }
    this.#eventListeners.add(listener);
    return () => this.#eventListeners.delete(listener);
  }

  /** Listens for snapshot changes (for `useSyncExternalStore`); returns the function that stops it. */
  subscribe(listener: () => void): () => void {
    if (typeof listener !== "function") {
      throw invalid(`Session.subscribe: the listener must be a function, and was ${kindOf(listener)}.`);
    }
    this.#viewListeners.add(listener);
    return () => this.#viewListeners.delete(listener);
  }

  /** The current `{ timeline, todos }`; the same object until the next change. */
  getSnapshot(): SessionView {
    this.#snapshot ??= { timeline: [...this.#timeline], todos: this.#shownTodos };
    return this.#snapshot;
  }

  /**
   * Runs a prompt until the model answers, stalls, runs out of turns, fails or is aborted; the file
   * is written as it goes. Never rejects for a failed run (see `status`, `error`). Throws
   * `SessionBusyError` while a run is going (a prompt, or a run the host started on `agent`),
   * `AgentError` (`invalid-input`) for an empty prompt, (`closed`) after `close()` or `dispose()`
   * (nothing sent or written), and (`locked`, saying why) once the file's lock was found lost, as
   * `save()` rejects: nothing is sent, written or added (a run the loss was found during goes on,
   * writing nothing more, with a notice). The lock is asked here and again by the agent before the
   * run shows anything (its metrics, its user entry), so a loss either finds is refused as
   * `Session.prompt` with nothing left behind.
   */
  async prompt(text: string): Promise<PromptResult> {
    if (this.#closed) throw closedError("Session.prompt");
    // A run the host started on the agent too (refused here, as clear() refuses it, rather than by
    // the agent once this prompt's user entry was shown).
    if (this.#running || this.agent.isRunning) throw new SessionBusyError("prompt");
    this.#refuseLost("Session.prompt");
    if (typeof text !== "string" || text.trim() === "") {
      throw new AgentError("invalid-input", "Session.prompt: the prompt must be non-empty text.");
    }
    this.#running = true;
    // This prompt's own: a listener of its last event may start the next prompt, whose end this is not.
    let ended: () => void = () => {};
    this.#runEnd = new Promise((resolve) => {
      ended = resolve;
    });
    const asked = userMessage(text);
    // What the run shows (its metrics, the user entry) starts in the agent's checks, once they have
    // passed (#beforeRun): no host listener runs between this session's lock check and its agent's,
    // and a refusal by either leaves the timeline, the transcript and the metrics as they were.
    this.#starting = asked;
    this.#begun = false;
    // What the transcript ended in before the run: a failed run that leaves it ending in tool
    // results of its own is told how to go on (below).
    const endedIn = this.agent.messages.at(-1);
    try {
      const result = await this.agent.prompt(asked);
      let reply = lastReply(result.messages);
      let status: RunStatus;
      if (result.status === "aborted") status = "aborted";
      else if (this.#stalled) status = "stalled";
      // The host's shouldStopAfterTurn (the session's own stop is a stall).
      else if (result.status === "stopped") status = "stopped";
      else if (result.status === "error" && ToolIterationLimit.isInstance(result.cause)) status = "maxTurns";
      else if (result.status === "error") status = "error";
      else status = "ok";
      const cut = this.#cut;
      const kept =
        status === "aborted" || status === "error" ? this.#settle(status === "aborted") : undefined;
      // The answer text a stop kept is the conversation's last answer, and so the prompt's reply.
      if (kept === KEPT_CUT) reply = cut;
      if (status === "aborted") this.#push({ type: "interrupted" });
      const failure = forTheSessionsUser(result.error ?? "The run failed.");
      if (status === "error") this.#push({ type: "error", text: failure });
      if (kept) this.addNotice(kept);
      // Failed on a turn after a finished tool step (a stream that broke, an endpoint that refused):
      // the prompt and the step's results stay, so sending the prompt again would ask it twice —
      // the user is told what goes on from them instead, as a reopened session ending so is.
      const last = this.agent.messages.at(-1);
      if (status === "error" && last !== endedIn && fieldOf(last, "role") === "tool") {
        this.addNotice(FAILED_AFTER_TOOLS);
      }
      const unsent = status === "stopped" ? undefined : this.#dropQueued(status);
      if (unsent) this.addNotice(unsent);
      if (status === "stalled")
        this.addNotice("The run stopped: the model repeated itself without progress (stalled).");
      if (status === "maxTurns") {
        this.addNotice(`The run stopped: the model still asked for tools after ${this.maxTurns} tool turns.`);
      }
      if (this.#todos.length > 0 && this.#todos.every((t) => t.status === "completed")) this.#setTodos([]);
      return { status, reply, ...(status === "error" ? { error: failure } : {}) };
    } finally {
      this.#starting = undefined;
      const begun = this.#begun;
      this.#begun = false;
      if (begun) {
        this.#persist();
        this.#closeOpenTools();
        clearInterval(this.#ticker);
      }
      this.#running = false;
      if (begun) this.#emitMetrics();
      ended();
    }
  }

  /**
   * After a prompt that ended without the host's `shouldStopAfterTurn` stop: the messages still
   * queued with `agent.steer()`/`agent.followUp()` — queued before a stop, a failure, the turn budget
   * or a stall ended the run, or after its last delivery point — are dropped, so the next prompt is
   * not answered with them after its own answer. Returns the notice naming the host's (the session's
   * own open-todos nudge goes silently), if any.
   */
  #dropQueued(status: RunStatus | "terminated" | "closed"): string | undefined {
    const told = this.agent[TAKE_QUEUED]()
      .map(messageText)
      .filter((text) => text !== OPEN_TODOS_NOTE);
    if (told.length === 0) return undefined;
    const one = told.length === 1;
    const why =
      status === "closed"
        ? "the session was closed first"
        : status === "aborted"
          ? "the run was stopped first"
          : status === "error"
            ? "the run failed first"
            : status === "ok"
              ? "the run had ended by the time it was queued"
              : `the run ended first (${status})`;
    return `${one ? "The message" : "The messages"} ${told.map(quotedMessage).join(", ")} queued with steer() or followUp() ${one ? "was" : "were"} never sent (${why}), so not kept for the next prompt; send ${one ? "it" : "them"} again.`;
  }

  /**
   * After a run the host started on `agent` (`agent.prompt`, `agent.continue`) has settled, its
   * `agent_end` listeners included: what it left queued is dropped with a notice, as after the
   * session's own prompts (which drop it themselves), so the next `Session.prompt` is not answered
   * with it after its own answer; a run the host's `shouldStopAfterTurn` stopped keeps it queued.
   */
  #afterHostRun(result: AgentRunResult): void {
    if (this.#running || result.status === "stopped") return;
    const status =
      result.status === "error" && ToolIterationLimit.isInstance(result.cause) ? "maxTurns" : result.status;
    if (status === "aborted" || status === "error") this.#dropUnansweredNudges();
    const unsent = this.#dropQueued(status);
    if (unsent) this.addNotice(unsent);
  }

  /**
   * After a run the host started on `agent` was stopped or failed: the session's own open-todos
   * nudges (`OPEN_TODOS_NOTE`) it delivered that no turn answered — after the transcript's last
   * assistant message — are taken out of the transcript and the file, silently, as `Session.prompt`
   * takes them out after its own stopped or failed run (#settle). The nudge is the session's
   * follow-up to the run it was queued for; left in, the next `Session.prompt` went joined onto it,
   * the user's question sent as the tail of the session's reminder. Messages the host queued stay
   * (the agent keeps what a run it started was given, as an `Agent` does).
   */
  #dropUnansweredNudges(): void {
    const messages = [...this.agent.messages];
    const last = messages.findLastIndex((m) => fieldOf(m, "role") === "assistant");
    const kept = messages.filter(
      (m, at) => at <= last || fieldOf(m, "role") !== "user" || messageText(m) !== OPEN_TODOS_NOTE,
    );
    if (kept.length === messages.length) return;
    this.#replaceTranscript(kept);
  }

  /**
   * The agent's transcript replaced by `kept` and the file rewritten to it, after a stopped or failed
   * run. Stopped by close() or dispose(): the file is left ending in the messages no turn answered,
   * as a host stopped while it waited for the model leaves it, and the next open takes them out with
   * a notice quoting them, where the person sees it.
   */
  #replaceTranscript(kept: AgentMessage[]): void {
    const gone = nudgesIn(this.agent.messages) - nudgesIn(kept);
    this.#byItself(() => {
      this.agent.messages = kept;
    });
    if (gone > 0) this.#unshowNudges(gone);
    if (!this.#closed || this.#resync) {
      try {
        this.#rewrite(this.agent.messages, this.#todos, this.agent.loaded);
      } catch (error) {
        this.addError(errorText(error));
      }
    }
    this.#stored = this.agent.messages.length;
  }

  /**
   * The last `count` open-todos reminders taken off the timeline, after they were taken out of the
   * transcript unanswered: shown as user entries when delivered (as a follow-up is), they were text
   * the person never typed, and a reopened session, built from the transcript, shows none of them.
   */
  #unshowNudges(count: number): void {
    const entries = [...this.#timeline];
    for (let at = entries.length - 1; at >= 0 && count > 0; at--) {
      const entry = entries[at] as TimelineEvent;
      if (entry.type === "user" && entry.text === OPEN_TODOS_NOTE) {
        entries.splice(at, 1);
        count--;
      }
    }
    this.#setTimeline(entries, this.#shownTodos);
    this.#changed();
  }

  /** A run's turn budget and stall count, from nothing. */
  #freshRun(): void {
    this.#stalled = false;
    this.#lastCalls = "";
    this.#repeats = 0;
    this.#textOnly = 0;
    this.#toolTurns = 0;
    this.#before = 0;
  }

  /** The start of a prompt's run the host sees (its metrics, its user entry): after every check before the run. */
  #begin(asked: AgentMessage): void {
    this.#begun = true;
    this.#freshRun();
    this.#started = Date.now();
    this.#firstText = 0;
    this.#cut = "";
    this.#folded = false;
    this.#asked = asked;
    this.#metrics = { ...INITIAL_RUN_METRICS, running: true };
    this.#emitMetrics();
    this.#ticker = setInterval(() => this.#emitMetrics(), 1000);
    this.#ticker.unref?.();
    this.#push({ type: "user", text: messageText(asked) });
  }

  /**
   * Before each run of the agent (`prompt`, `continue`): refused once the session is closed, and
   * once its lock was found lost (`locked`); with
   * MCP servers, the catalogue brought up to date. Without them `agent.catalog` is the host's: the
   * `catalog` option, or what the host assigned since.
   */
  #beforeRun(method: string): void {
    // The run Session.prompt starts: refused as Session.prompt (what the host called), with nothing
    // shown yet — a lease that lapsed since its own check is found here, and leaves nothing behind.
    const by = this.#starting ? "Session.prompt" : method;
    if (this.#closed) throw closedError(by);
    this.#refuseLost(by);
    if (this.#mcp) {
      this.#byItself(() => {
        this.agent.catalog = this.#catalog();
      });
    }
  }

  /**
   * Once the agent's own checks of the prompt `Session.prompt` hands it passed (a system prompt
   * given twice, messages that leave the model nothing to answer), just before its run starts: the
   * run is shown (#begin) only now, so a prompt the agent refuses leaves no `user` entry behind.
   * The lock and the session are asked again first (the host's `convertToLlm` ran since), and once
   * more after: a listener of what #begin showed may close the session, and then no run starts and
   * the snapshot's timeline is put back as it was.
   */
  #beforeStart(): void {
    const starting = this.#starting;
    this.#starting = undefined;
    if (!starting) {
      // A run the host started on the agent (`agent.prompt`, `agent.continue`): a budget and a
      // stall count of its own, as a prompt's. Carried over, the turns of the prompt before counted
      // against it: after a prompt that ended `maxTurns`, `continue()` had none left and ended
      // `error` ("after 0 tool steps") on the model's first call.
      this.#freshRun();
      return;
    }
    if (this.#closed) throw closedError("Session.prompt");
    this.#refuseLost("Session.prompt");
    const shown = this.getSnapshot();
    this.#begin(starting);
    if (this.#closed) {
      // Closed by a listener of the entry: the snapshot left as it was before it.
      this.#setTimeline([...shown.timeline], shown.todos);
      this.#snapshot = shown;
      throw closedError("Session.prompt");
    }
  }

  /**
   * The catalogue a loading mode lists, with MCP servers: the host's servers (the `catalog`
   * option) as given; the session's own tools (built-in and the host's) that none of them lists as
   * one server `tools` — added to a host server of that name, left out when there are none — and
   * each connected MCP server under its name with the tools the session offers of it that none of
   * the host's servers lists (a server left with none is left out).
   */
  #catalog(): NonNullable<AgentOptions["catalog"]> {
    const host = this.#hostCatalog ?? [];
    const listed = new Set(host.flatMap((server) => server.tools.map((tool) => tool.name)));
    const own = this.agent.tools
      .list()
      .filter((tool) => !this.#mcpTools.has(tool.name) && !listed.has(tool.name))
      .map((tool) => {
        const given = setting(tool, "description");
        const description = typeof given === "string" ? (given.trim().split("\n")[0]?.trim() ?? "") : "";
        return description ? { name: tool.name, description } : { name: tool.name };
      });
    const into = host.findIndex((server) => server.name === "tools");
    return [
      ...host.map((server, at) => (at === into ? { ...server, tools: [...server.tools, ...own] } : server)),
      ...(into >= 0 || own.length === 0 ? [] : [{ name: "tools", tools: own }]),
      // An MCP tool the host lists is listed there only; a server left with none is left out.
      ...this.#mcpCatalog.flatMap((server) => {
        const tools = server.tools.filter((tool) => !listed.has(tool.name));
        return tools.length === 0 ? [] : [{ ...server, tools }];
      }),
    ];
  }

  /** Stops the running prompt; pending questions are answered with "" each. No-op when idle. */
  abort(): void {
    for (const { entry, resolve } of [...this.#pending.values()]) resolve(entry.questions.map(() => ""));
    this.agent.abort();
  }

  /**
   * Answers a pending question group: one entry per question (an offered label, a list of offered
   * labels for a multi-select question, "" to skip). Throws `AgentError` (`unknown-question`) for
   * an id that is not pending, (`invalid-input`) for the wrong number of answers or an answer the
   * question did not offer (naming its index); the group then still waits.
   */
  submitAnswer(id: string, answers: readonly AskAnswer[]): void {
    const pending = this.#pending.get(id);
    // Quoted, cut and escaped as other values in these errors are: an id of a megabyte, control
    // characters or a lone surrogate was echoed whole (and a symbol threw a TypeError instead).
    const shown = typeof id === "string" ? quotedEcho(id) : kindOf(id);
    if (!pending) {
      throw new AgentError("unknown-question", `No question group ${shown} is waiting for an answer.`);
    }
    if (!Array.isArray(answers) || answers.length !== pending.entry.questions.length) {
      throw new AgentError(
        "invalid-input",
        `Question group ${shown} has ${pending.entry.questions.length} question(s); submitAnswer got ${Array.isArray(answers) ? answers.length : "no list of"} answer(s).`,
      );
    }
    const questions = pending.entry.questions;
    answers.forEach((answer, at) => {
      const question = questions[at] as AskQuestion;
      const fault = answerFault(question, answer);
      if (fault) {
        throw invalid(
          `submitAnswer: question group ${shown}, answers[${at}] (${quotedEcho(question.question)}) ${fault}`,
        );
      }
    });
    // Copied: a host changing its lists afterwards changes neither the timeline nor what the model read.
    pending.resolve(answers.map((answer) => (Array.isArray(answer) ? [...answer] : answer)));
  }

  /** Adds a notice to the timeline. */
  addNotice(text: string): void {
    if (typeof text !== "string") {
      throw invalid(
        `Session.addNotice: the notice must be text, and was ${kindOf(text)}; nothing was added.`,
      );
    }
    this.#push({ type: "notice", text });
  }

  /** Adds an error entry to the timeline. */
  addError(text: string): void {
    if (typeof text !== "string") {
      throw invalid(`Session.addError: the error must be text, and was ${kindOf(text)}; nothing was added.`);
    }
    this.#push({ type: "error", text });
  }

  /**
   * Empties the conversation, the todos and the timeline (and the file). Throws `SessionBusyError`
   * while running, `AgentError` (`closed`) after `close()` or `dispose()` (the file is no longer held),
   * and (`locked`, saying why) once the file's lock was found lost, as `save()` rejects: the file is
   * another opener's, so it is not emptied, and neither is anything in memory. The file is emptied
   * first: a write that fails (`storage`) leaves the session as it was, too.
   */
  clear(): void {
    if (this.#closed) throw closedError("Session.clear");
    if (this.#running) throw new SessionBusyError("clear");
    // Asked first (past the lease since the last renewal it renews), as save() does.
    this.#lock?.check();
    if (this.#lockLost !== undefined) throw this.#lockedError("Session.clear", "nothing was cleared");
    // Refused as Agent.reset refuses it (a run the host started on the agent), before anything changes.
    if (this.agent.isRunning) throw new SessionBusyError("clear");
    this.#rewrite([], [], []);
    // Lost between the check and the write (it wrote nothing): memory stays as the file does.
    if (this.#lockLost !== undefined) throw this.#lockedError("Session.clear", "nothing was cleared");
    this.#byItself(() => this.agent.reset());
    this.#todos = frozen([]);
    this.#stored = 0;
    this.#setTimeline([], []);
    this.#early.clear();
    this.#emit({ type: "todos_changed", todos: [] });
    this.#changed();
  }

  /**
   * Before a run: throws `AgentError` (`locked`) once the file's lock was found lost — asked first,
   * so a loss the renewal timer had no turn to find yet (past the lease) is found —, as `save()`
   * rejects: a run would be sent, and its messages kept in memory only.
   */
  #refuseLost(method: string): void {
    this.#lock?.check();
    if (this.#lockLost !== undefined) throw this.#lockedError(method, "nothing was sent or written");
  }

  /**
   * Before the host changes the agent (a setter, `reset`, `steer`, `followUp`): throws `AgentError`
   * (`locked`) once the file's lock was found lost, as a run is refused, so memory stays as the file
   * this session last wrote. The session's own changes (its MCP catalogue, the open-todos follow-up,
   * what a stopped run keeps) pass (`#itself`).
   */
  #beforeChange(method: string): void {
    if (this.#itself) return;
    // A closed session runs no prompt again: a message queued now would never be sent.
    if (this.#closed && (method === "Agent.steer" || method === "Agent.followUp")) {
      throw new AgentError(
        "closed",
        `${method}: the session is closed (close() or dispose() was called); nothing was queued. Create a new session (with the same sessionDir and sessionId to resume its file) and send it there.`,
      );
    }
    this.#lock?.check();
    if (this.#lockLost !== undefined) throw this.#lockedError(method, "nothing was changed");
    // Appends carry on from the message the file holds last: a transcript the host edited (a
    // message taken out, the list replaced or emptied) is written whole instead.
    if (method === "Agent.messages" || method === "Agent.reset") this.#resync = true;
  }

  /** Runs `change`, a change the session makes to its own agent, past `#beforeChange`. */
  #byItself(change: () => void): void {
    const outer = this.#itself;
    this.#itself = true;
    try {
      change();
    } finally {
      this.#itself = outer;
    }
  }

  /** What a write refused once the file's lock was found lost throws (`locked`): `method`, what it did not do, and why. */
  #lockedError(method: string, what: string): AgentError {
    return new AgentError(
      "locked",
      `${method}: ${what}. ${this.#lockLost} The session file is no longer this session's; close this session, and open the file again once the other session has let go of it.`,
    );
  }

  /**
   * Rewrites the session file whole (atomically). Resolves at once without `sessionDir`. Rejects with
   * `AgentError` (`closed`) after `close()` or `dispose()`: the file is no longer held (another
   * process may have opened it since), so nothing is written; and with `AgentError` (`locked`, saying
   * why) once the file's lock was found lost (another opener took it over after this session's lease
   * lapsed): the file is that opener's, so nothing is written.
   */
  async save(): Promise<void> {
    if (this.#closed) throw closedError("Session.save");
    this.#lock?.check();
    if (this.#lockLost === undefined) {
      this.#persist();
      this.#rewrite(this.agent.messages, this.#todos, this.agent.loaded);
    }
    if (this.#lockLost !== undefined) throw this.#lockedError("Session.save", "nothing was written");
  }

  /**
   * Stops a running prompt, drops every listener, starts closing the MCP servers (see `close`) and
   * lets go of the file's lock (`<file>.lock`): at once when no run is going, else once the stopped
   * run has written its last messages (at most 5 s later, see `close`; await `close()` to know when).
   */
  dispose(): void {
    this.abort();
    // What the host queued (steer()/followUp() between runs, during the run just stopped, or left
    // queued by a `stopped` prompt) is never sent now: a stopped run delivers nothing more and a
    // closed session runs no prompt again. Said here, while the host's listeners still hear it.
    const unsent = this.#dropQueued("closed");
    if (unsent) this.addNotice(unsent);
    this.#eventListeners.clear();
    this.#viewListeners.clear();
    if (!this.#closed) void this.close();
  }

  /**
   * As `dispose`, and resolves once the file's lock is let go — at once when no run is going, else
   * once the stopped run has written its last messages, at most `CLOSE_WAIT_MS` (5 s) later — and
   * every MCP server has ended (stdio processes exited, HTTP sessions ended): a session of the same
   * file opened after it opens. A stopped run still going after 5 s (a host listener or hook that
   * never returns) writes nothing more: the file is no longer this session's. Every call returns the
   * one promise.
   */
  close(): Promise<void> {
    if (!this.#closing) {
      this.#closed = true;
      this.dispose();
      this.#closing = Promise.all([this.#letGo(), this.#mcp?.close().catch(() => {})]).then(() => {});
    }
    return this.#closing;
  }

  /**
   * Lets go of the file's lock: at once (synchronously) when no run is going, else once the stopped
   * run has settled (a prompt's, or one the host started on the agent, `session.agent.continue()`),
   * or `CLOSE_WAIT_MS` have passed; then the run writes no more (`#file` is dropped).
   */
  async #letGo(): Promise<void> {
    if (!this.#lock) return;
    if (this.#running || this.agent.isRunning) {
      this.#lock.closing();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settled = await Promise.race([
        this.#settled().then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), CLOSE_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
      if (!settled) {
        this.#file = undefined;
        this.addNotice(
          `The stopped run had not ended ${CLOSE_WAIT_MS / 1000} s after close(): the session file's lock was let go, and nothing the run does from now on is written to the file.`,
        );
      }
    }
    this.#lock?.release();
    this.#lock = undefined;
  }

  /** Resolves once no run is going: neither a prompt's nor one the host started on the agent. */
  async #settled(): Promise<void> {
    while (this.#running || this.agent.isRunning) {
      await (this.#running ? this.#runEnd : this.agent.waitForIdle());
    }
  }

  /**
   * The session's notice for another SDK's step limit in the config (`found`: `maxSteps`,
   * `maxTurns`, …), which its agent takes out of the loop's copy and tells once per set of fields
   * (`STEP_LIMIT_NOTICE`): the limit a session keeps is its `maxTurns` option. Neither the loop's
   * notice (at every run, pointing at `config.maxToolIterations` and `beforeStep`) nor the Agent's
   * (`config.maxToolIterations` and `shouldStopAfterTurn`) fits: a session replaces
   * `maxToolIterations` with what `maxTurns` leaves, so that advice changes nothing here.
   */
  #stepLimitNotice(found: readonly string[]): string {
    return (
      `${foreignStepLimitsUnread(found, "a session")}: this session allows ${this.maxTurns} tool turns per prompt, ` +
      "set by createSession's maxTurns option (config.maxToolIterations is replaced by it)."
    );
  }

  /**
   * Runs one loop run with the session's per-call time limit applied here rather than by the loop,
   * so the built-in AskUser is exempt: its question waits for the person (or the run's stop), never
   * for `toolTimeoutSeconds`. Every other call is stopped at the limit as the loop stops it — its
   * signal aborted with a `TimeoutError`, the model told in the loop's words. The loop's options are
   * copied with their getters (`parallel` is read as each step's calls start).
   */
  #timedRun(backend: AgentBackend, loopOptions: AgentLoopOptions, left: number): Promise<AgentLoopResult> {
    const options = Object.defineProperties({}, ownDescriptors(loopOptions)) as AgentLoopOptions;
    const limit = toolLimitMs(setting(loopOptions.config, "toolTimeoutSeconds"));
    // A value the loop refuses is left for it to refuse; no limit needs nothing of ours.
    const timed = limit !== false && limit !== undefined;
    // Another SDK's step limit is out of it already: the agent took it out, with the session's notice.
    options.config = configCopy(loopOptions.config, {
      with: timed ? { maxToolIterations: left, toolTimeoutSeconds: 0 } : { maxToolIterations: left },
    });
    if (!timed) return backend.run(options);
    const run = loopOptions.signal;
    const dispatch = loopOptions.dispatch;
    // No dispatch is a run with no tools (the loop refuses one with tools): nothing to time.
    if (dispatch === undefined) return backend.run(options);
    // One listener on the run's signal, however many calls are in flight.
    const calls = new Set<AbortController>();
    const onStop = () => {
      for (const call of calls) call.abort(run?.reason);
    };
    run?.addEventListener("abort", onStop, { once: true });
    options.dispatch = async (request, signal) => {
      if (this.#askUser && this.agent.tools.get(request.name) === this.#askUser) {
        return dispatch(request, signal);
      }
      const call = new AbortController();
      if (run?.aborted) call.abort(run.reason);
      calls.add(call);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          call.abort(new DOMException(`The ${request.name} tool ran out of time`, "TimeoutError"));
          reject(new Error(timedOutText(request.name, limit)));
        }, limit);
      });
      try {
        return await Promise.race([Promise.resolve().then(() => dispatch(request, call.signal)), timedOut]);
      } finally {
        clearTimeout(timer);
        calls.delete(call);
      }
    };
    return backend.run(options).finally(() => run?.removeEventListener("abort", onStop));
  }

  /**
   * Whether identical calls of a step may share one answer: the host's `dedupeToolCalls` where given,
   * else the config's policy; for an MCP tool, also when the pool's annotations allow it.
   */
  #dedupe(request: DispatchRequest, config: LoopConfig | undefined, host: DedupePolicy | undefined): boolean {
    const policy =
      host ?? (setting(config ?? this.agent.config, "dedupeToolCalls") as DedupePolicy | undefined);
    const allowed = typeof policy === "function" ? policy(request) : policy !== false;
    if (this.#mcp && this.#mcpTools.has(request.name)) {
      // The pool's word alone, as before, unless the host gave a policy of its own.
      return this.#mcp.dedupe(request) || (host !== undefined && allowed);
    }
    return allowed;
  }

  #queueMcpRefresh(): Promise<void> {
    this.#mcpRefresh = this.#mcpRefresh.then(() => this.#refreshMcp());
    return this.#mcpRefresh;
  }

  /** Registers the pool's tools as they are now, drops gone ones, and tells `mcp_changed` when anything moved. */
  async #refreshMcp(): Promise<void> {
    const pool = this.#mcp;
    if (!pool || this.#closed) return;
    let definitions: Awaited<ReturnType<McpPool["tools"]>> = [];
    let catalogued: CatalogServer[] = [];
    try {
      definitions = await pool.tools();
      catalogued = await pool.servers();
      this.#mcpServerOf = new Map(
        catalogued.flatMap((server) => server.tools.map((tool) => [tool.name, server.name])),
      );
    } catch (error) {
      this.addError(`MCP: ${errorText(error)}`);
    }
    if (this.#closed) return;
    // Gone ones first: a new tool may take the wire name a gone one had.
    const listed = new Set(definitions.map((definition) => definition.function.name));
    for (const name of this.#mcpTools) if (!listed.has(name)) this.agent.tools.unregister(name);
    const next = new Set<string>();
    for (const definition of definitions) {
      const name = definition.function.name;
      if (!this.#mcpTools.has(name) && this.agent.tools.get(name)) {
        this.addNotice(`MCP tool "${name}" is not offered: the session already has a tool of that name.`);
        continue;
      }
      try {
        this.agent.tools.register(
          {
            name,
            description: definition.function.description ?? "",
            parameters: definition.function.parameters,
            label: `MCP ${name}`,
            execute: (args, context) => pool.call(name, args, context.signal),
          },
          { replace: true },
        );
      } catch (error) {
        // Another tool is declared to the model under the name this one would be (`a.b` beside `a_b`).
        if (!AgentError.isInstance(error) || error.code !== "duplicate-tool") throw error;
        if (this.#mcpTools.has(name)) this.agent.tools.unregister(name);
        this.addNotice(`MCP tool "${name}" is not offered: ${error.message}`);
        continue;
      }
      next.add(name);
    }
    this.#mcpTools = next;
    this.#mcpCatalog = catalogued.map((server) => ({
      ...server,
      tools: server.tools.filter((tool) => next.has(tool.name)),
    }));
    this.#byItself(() => {
      this.agent.catalog = this.#catalog();
    });
    const servers = this.mcpServers;
    const shown = JSON.stringify(servers);
    if (shown === this.#mcpShown) return;
    this.#mcpShown = shown;
    this.#emit({ type: "mcp_changed", servers });
  }

  #emit(event: SessionEvent): void {
    for (const listener of [...this.#eventListeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  #changed(): void {
    for (const listener of [...this.#viewListeners]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own (a render that throws): the session's change goes on.
      }
    }
  }

  /** The timeline as `entries` (taken, not copied) and the snapshot's todos as `todos`, told to no one. */
  #setTimeline(entries: TimelineEvent[], todos: readonly Todo[]): void {
    this.#timeline = [];
    this.#openTools.clear();
    this.#questionAt.clear();
    for (const entry of entries) this.#append(entry);
    this.#shownTodos = frozen(todos);
    this.#snapshot = undefined;
  }

  /**
   * Appends `entry` to the timeline, told to no one. Frozen, as every entry is: the snapshots, the
   * `onEvent` listeners and `pendingQuestion` hand out the timeline's own entries, so a host that
   * wrote to one (an entry's text, a question's options) changed every snapshot, past and next.
   */
  #append(entry: TimelineEvent): void {
    frozen(entry);
    this.#place(entry, this.#timeline.push(entry) - 1);
    this.#snapshot = undefined;
  }

  /** Notes where `entry`, at `at`, stands when it is a running tool's or a question. */
  #place(entry: TimelineEvent, at: number): void {
    const index =
      entry.type === "tool" && entry.result === null
        ? this.#openTools
        : entry.type === "question"
          ? this.#questionAt
          : undefined;
    if (!index) return;
    const key = (entry as { id: string }).id;
    const places = index.get(key);
    if (places) places.push(at);
    else index.set(key, [at]);
  }

  #push(entry: TimelineEvent): void {
    this.#append(entry);
    this.#emit(entry);
    this.#changed();
  }

  /**
   * Replaces, with `next`, the running tool entries of call `id` (every running one where `id` is
   * undefined), or the question entries of `id`: found by where they stand, not by reading the
   * whole timeline (a step's thousands of calls, each ending, on a timeline of thousands).
   */
  #replace(
    kind: "tool" | "question",
    id: string | undefined,
    next: (entry: TimelineEvent) => TimelineEvent,
  ): void {
    const index = kind === "tool" ? this.#openTools : this.#questionAt;
    const keys = id === undefined ? [...index.keys()] : [id];
    let changed = false;
    for (const key of keys) {
      const places = index.get(key);
      if (!places) continue;
      index.delete(key);
      for (const at of places) {
        const entry = frozen(next(this.#timeline[at] as TimelineEvent));
        this.#timeline[at] = entry;
        this.#place(entry, at);
        changed = true;
      }
    }
    if (!changed) return;
    this.#snapshot = undefined;
    this.#changed();
  }

  #setTodos(todos: Todo[]): void {
    // Frozen: `todos` and the snapshot hand the list out, and a host's push went to the file.
    this.#todos = frozen(todos);
    this.#shownTodos = this.#todos;
    this.#snapshot = undefined;
    try {
      this.#write((file) => file.appendTodos(todos));
    } catch (error) {
      this.addError(errorText(error));
    }
    this.#emit({ type: "todos_changed", todos: [...todos] });
    this.#changed();
  }

  /**
   * After a prompt that was stopped or failed, so the next prompt is not sent after a user message no
   * answer follows (endpoints join the two into one question): stopped after answer text streamed,
   * that text (what the user saw) is kept as the assistant's message; stopped or failed before the
   * model finished any turn of the run (the loop's own preselection exchange is no turn), the prompt
   * is taken out of the transcript and the file; after the model's last answer, the user messages the
   * run added that no model turn answered (the open-todos follow-up, a steered or followed-up message)
   * are taken out too. Tool steps that finished stay (every call answered). Returns the notice to
   * show, if any.
   */
  #settle(stopped: boolean): string | undefined {
    const cut = this.#cut;
    this.#cut = "";
    const messages = this.agent.messages;
    if (stopped && cut.trim() !== "") {
      this.#byItself(() => {
        this.agent.messages = [...messages, { role: "assistant", content: cut }];
      });
      this.#push({ type: "assistant", text: cut });
      return KEPT_CUT;
    }
    const asked = this.#asked ? messages.lastIndexOf(this.#asked) : -1;
    // A fold mid-run (autoCompact) that took the prompt into its summary cut at a later user
    // message (a follow-up, a steered message): the turns before the cut are answered inside the
    // summary, and what follows it is judged as what follows the prompt.
    const start = asked >= 0 ? asked : this.#folded ? lastFold(messages) : -1;
    if (start < 0) return undefined; // the host replaced the transcript: it stands
    let answer = -1;
    for (let at = messages.length - 1; at > start; at--) {
      const m = messages[at] as ChatMessage;
      if (fieldOf(m, "role") === "assistant" && this.#answered.has(m)) {
        answer = at;
        break;
      }
    }
    let kept: AgentMessage[];
    let notice: string;
    if (answer < 0 && asked >= 0) {
      kept = messages.slice(0, asked);
      // A message the host steered before the prompt went with it: named, as it goes too.
      const told = messages
        .slice(asked + 1)
        .filter((m) => fieldOf(m, "role") === "user")
        .map(messageText)
        .filter((t) => t !== OPEN_TODOS_NOTE);
      const also =
        told.length === 0
          ? ""
          : `, nor ${told.length === 1 ? "the message" : "the messages"} ${told.map(quotedMessage).join(", ")} sent with it`;
      const them = told.length === 0 ? "it" : "them";
      notice = stopped
        ? `Stopped before the model answered: the prompt was not kept in the conversation${also}; send ${them} again.`
        : `The prompt was not kept in the conversation${also} (the run failed before the model answered): send ${them} again.`;
    } else {
      // The answer's own tool messages stay; from the first user message after it (after the fold's
      // summary when no turn after it answered), nothing was answered.
      const after = answer >= 0 ? answer : start;
      const from = messages.findIndex((m, at) => at > after && fieldOf(m, "role") === "user");
      if (from < 0) return undefined;
      const said = messages[after];
      const calls = new Set(fieldOf(said, "role") === "assistant" ? toolCallsOf(said).map((c) => c.id) : []);
      const dropped = messages.slice(from).filter((m) => fieldOf(m, "role") === "user");
      kept = [
        ...messages.slice(0, from),
        ...messages.slice(from).filter((m) => {
          const id = fieldOf(m, "tool_call_id");
          return fieldOf(m, "role") === "tool" && typeof id === "string" && calls.has(id);
        }),
      ];
      // The session's own open-todos nudge goes silently; a message the host sent is named.
      const told = dropped.map(messageText).filter((t) => t !== OPEN_TODOS_NOTE);
      notice =
        told.length === 0
          ? ""
          : `${told.length === 1 ? "The message" : "The messages"} ${told.map(quotedMessage).join(", ")} ${
              told.length === 1 ? "was" : "were"
            } never answered (the run ${stopped ? "was stopped" : "failed"} first), so not kept in the conversation; send it again.`;
    }
    // Stopped by close() or dispose(), the host's listeners are gone, so the notice would reach no
    // one, and the reopened session showed the question simply gone: the file keeps the unanswered
    // messages for the next open to take out with a notice ("… the model never answered …; send it
    // again").
    this.#replaceTranscript(kept);
    return notice || undefined;
  }

  /** Appends the messages the agent added since the last write (an answer written as its call finished, once). */
  #persist(): void {
    const messages = this.agent.messages;
    if (this.#resync && this.#writable()) {
      // A message put in too deep for the file is told and left out, as an append leaves it out.
      const fits = messages.filter((message, at) => {
        const deep = depthProblem(message);
        if (deep) {
          this.addError(
            `Message ${at} of the transcript (the ${describeMessage(message)}) was not written to the session file: it ${deep}.`,
          );
        }
        return deep === undefined;
      });
      try {
        this.#rewrite(fits, this.#todos, this.agent.loaded);
      } catch (error) {
        this.addError(errorText(error));
        return;
      }
      this.#resync = false;
      this.#stored = messages.length;
      return;
    }
    try {
      while (this.#stored < messages.length) {
        const file = this.#writable();
        if (!file) break;
        const message = messages[this.#stored] as AgentMessage;
        const early = this.#earlyOf(message);
        const deep = early ? undefined : depthProblem(message);
        if (early) this.#early.delete(early);
        else if (deep) {
          // Put into the transcript around the checks (pushed onto agent.messages): told, not written,
          // so the file stays one its reader takes whole (retrying would hold back every later message).
          this.addError(
            `Message ${this.#stored} of the transcript (the ${describeMessage(message)}) was not written to the session file: it ${deep}.`,
          );
        } else {
          this.#write(() => file.appendMessage(message));
          this.#track(message);
        }
        this.#stored++;
      }
      this.#write((file) => file.appendLoaded(this.agent.loaded));
    } catch (error) {
      // A failed write is told, never fatal to the run; the next write tries the rest again.
      this.addError(errorText(error));
      return;
    }
    this.#stored = messages.length;
  }

  /** The id under which `message`, a tool message, was written as its call finished; undefined for any other. */
  #earlyOf(message: AgentMessage): string | undefined {
    const id = fieldOf(message, "tool_call_id");
    if (fieldOf(message, "role") !== "tool" || typeof id !== "string") return undefined;
    return this.#early.has(id) ? id : undefined;
  }

  /** Keeps `#fileOpen` as the file's end stands after `message` was written. */
  #track(message: AgentMessage): void {
    const role = fieldOf(message, "role");
    if (typeof role !== "string" || !LLM_ROLES.has(role)) return; // app-only: never sent, ends no step
    if (role === "tool") {
      const id = fieldOf(message, "tool_call_id");
      if (typeof id === "string") this.#fileOpen.delete(id);
      return;
    }
    this.#fileOpen = new Set(role === "assistant" ? toolCallsOf(message).map((call) => call.id) : []);
    // Answers the transcript never took (none is expected) stay in the file, which they answer.
    this.#early.clear();
  }

  /**
   * A tool's answer in the file as soon as its call finished, not once the whole step has (a parallel
   * step's answers reach the transcript together): a host that dies mid-step leaves the answers of the
   * calls that finished, and a reopened session tells the model they ran. Only for a call of the last
   * assistant message in the file that has no answer there yet; the loop's own copy of the answer is
   * then not written again.
   */
  #persistResult(id: string, result: string): void {
    if (!this.#file) return;
    this.#persist();
    if (!this.#fileOpen.has(id)) return;
    const answer: ChatMessage = { role: "tool", tool_call_id: id, content: result };
    try {
      if (!this.#write((file) => file.appendMessage(answer))) return;
    } catch (error) {
      this.addError(errorText(error));
      return;
    }
    this.#fileOpen.delete(id);
    this.#early.set(id, answer);
  }

  /**
   * Writes the file whole with `messages`, then again each answer written as its call finished that
   * they do not hold yet (a `save()` mid-step), so the rewrite loses none.
   */
  #rewrite(messages: readonly AgentMessage[], todos: readonly Todo[], loaded: readonly string[]): void {
    const early = [...this.#early];
    if (!this.#write((file) => file.rewrite(this.sessionId, this.#createdAt, messages, todos, loaded), false))
      return;
    this.#fileOpen = new Set();
    for (const message of messages) this.#track(message);
    this.#early = new Map(early);
    for (const [id, answer] of early) {
      if (this.#fileOpen.has(id)) {
        if (!this.#write((file) => file.appendMessage(answer))) return;
        this.#fileOpen.delete(id);
      } else {
        this.#early.delete(id);
      }
    }
  }

  /**
   * The session file to write, or undefined when there is none or it is no longer this session's.
   * Asks the lock first (`SessionLock.check`: past the lease since its last renewal — the event loop
   * was blocked, the process stopped — it renews first), so a lock another opener took meanwhile lets
   * the file go, with the notice, before anything is written.
   */
  #writable(): SessionFile | undefined {
    if (this.#lock?.check() !== undefined) return undefined;
    return this.#file;
  }

  /**
   * Writes the session file with `write` when it is still this session's (see `#writable`), then
   * tells the lock how the file now stands (a later change by another writer is then told apart).
   * Returns false when nothing was written (no file, or no longer this session's).
   */
  #write(write: (file: SessionFile) => void, append = true): boolean {
    const file = this.#writable();
    if (!file) return false;
    // An append to a file deleted while the session is open would start a new one without its
    // header or the conversation before it (listSessions would not list it; it would resume from
    // the middle): it is written whole again first, from what the session had written.
    if (append && !this.#regrowing && !file.exists()) this.#regrow();
    try {
      write(file);
    } finally {
      this.#lock?.wrote();
    }
    return true;
  }

  /**
   * Writes the session file whole again, with the messages it held (`#stored` of them; one too deep
   * for the file is left out, as it was), the todos and what is loaded, after it was found deleted
   * while the session was open; a notice says so.
   */
  #regrow(): void {
    this.#regrowing = true;
    try {
      const held = this.agent.messages.slice(0, this.#stored).filter((message) => !depthProblem(message));
      this.#rewrite(held, this.#todos, this.agent.loaded);
      this.addNotice(
        `The session file ${this.filePath} was gone (deleted while this session was open); it was written again whole from the conversation this session holds, so it resumes from it.`,
      );
    } finally {
      this.#regrowing = false;
    }
  }

  #closeOpenTools(): void {
    this.#replace("tool", undefined, (e) => ({
      ...(e as Extract<TimelineEvent, { type: "tool" }>),
      result: "aborted",
      isError: true,
    }));
  }

  /**
   * Adds what the agent's run's side tasks cost since it last said (`sideUsage` is the run's totals
   * so far, told on its usage events and on `agent_end`) to the metrics; whether anything was added.
   */
  #addSide(side: RunUsage): boolean {
    const seen = this.#sideSeen ?? { prompt: 0, completion: 0, total: 0, cached: 0 };
    const cached = Math.max(0, side.cached - seen.cached);
    const prompt = Math.max(0, side.prompt - seen.prompt);
    const completion = Math.max(0, side.completion - seen.completion);
    this.#sideSeen = {
      prompt: side.prompt,
      completion: side.completion,
      total: side.total,
      cached: side.cached,
    };
    if (cached === 0 && prompt === 0 && completion === 0) return false;
    this.#metrics = {
      ...this.#metrics,
      sideCacheInputTokens: this.#metrics.sideCacheInputTokens + cached,
      sideMissInputTokens: this.#metrics.sideMissInputTokens + Math.max(0, prompt - cached),
      sideOutputTokens: this.#metrics.sideOutputTokens + completion,
    };
    return true;
  }

  #emitMetrics(): void {
    const now = Date.now();
    const elapsed = this.#started ? (now - this.#started) / 1000 : 0;
    const first = this.#firstText ? (this.#firstText - this.#started) / 1000 : elapsed;
    this.#metrics = {
      ...this.#metrics,
      running: this.#running,
      elapsed,
      thinkingElapsed: first,
      replyElapsed: this.#firstText ? (now - this.#firstText) / 1000 : 0,
    };
    this.#emit({ type: "run_metrics", ...this.#metrics });
  }

  #onAgentEvent(event: AgentEvent): void {
    switch (event.type) {
      case "agent_start":
        this.#sideSeen = undefined;
        break;
      case "agent_end":
        // Its own sideUsage only (an event with no side task has none): a polluted
        // `Object.prototype.sideUsage` made every run's side-task counts NaN in the metrics.
        if (ownSide(event) && this.#addSide(ownSide(event) as RunUsage)) this.#emitMetrics();
        break;
      case "compacted":
        if (this.#running) this.#folded = true;
        // The folded transcript replaces the stored one whole; appends continue after it.
        try {
          this.#rewrite(event.messages, this.#todos, this.agent.loaded);
          this.#stored = event.messages.length;
        } catch (error) {
          this.addError(errorText(error));
        }
        break;
      case "message_start":
        if (fieldOf(event.message, "role") === "assistant") this.#firstTextBefore = this.#firstText;
        break;
      case "message_retract":
        // All the text this message streamed was reasoning after all (a late </think>): its first
        // delta was no answer token, so the next answer delta (or an earlier turn's) marks it.
        if (messageText(event.message) === "") this.#firstText = this.#firstTextBefore;
        this.#emit({ type: "assistant_retract", chars: event.chars });
        break;
      case "thinking_retract":
        this.#emit({ type: "thinking_retract", chars: event.chars });
        break;
      case "message_update":
        if (event.delta.type === "text") {
          this.#firstText ||= Date.now();
          this.#emit({ type: "assistant_delta", text: event.delta.text });
        } else {
          this.#emit({ type: "thinking_delta", text: event.delta.text });
        }
        break;
      case "message_end": {
        const message = event.message as ChatMessage;
        const role = fieldOf(message, "role");
        // Looked for from the end, once: the message just ended is the last one added (or one of the
        // last), where `includes` read the whole transcript through its guard, twice per answer
        // (a 10^4-message session spent ~2 ms a message on it).
        const kept =
          (role === "assistant" || (role === "user" && message !== this.#asked)) &&
          this.agent.messages.lastIndexOf(message) >= 0;
        if (role === "assistant" && kept && messageText(message).trim() !== "") {
          this.#push({ type: "assistant", text: messageText(message) });
        }
        // The turn a stop or a failure cut short: what it had streamed, for #settle.
        if (role === "assistant" && !kept) this.#cut = messageText(message);
        // A message steered in or followed up during the run, as a resumed session shows it.
        if (role === "user" && kept) {
          this.#push({ type: "user", text: messageText(message) });
        }
        this.#persist();
        break;
      }
      case "tool_execution_start": {
        // Arguments that could not be read are shown as written, not as the `{}` they were read as.
        const read = JSON.stringify(event.args);
        const unread =
          read === "{}" && event.rawArgs !== undefined && !/^\s*(\{\s*\})?\s*$/.test(event.rawArgs);
        const argsSummary = summarize(unread ? (event.rawArgs as string) : read);
        this.#push({ type: "tool", id: event.toolCallId, name: event.toolName, argsSummary, result: null });
        this.#emit({ type: "tool_start", id: event.toolCallId, name: event.toolName, argsSummary });
        break;
      }
      case "tool_execution_end": {
        this.#persistResult(event.toolCallId, event.result);
        const resultSummary = summarize(event.result);
        this.#replace(
          "tool",
          event.toolCallId,
          (e) => ({ ...e, result: event.result, isError: event.isError, resultSummary }) as TimelineEvent,
        );
        this.#emit({
          type: "tool_end",
          id: event.toolCallId,
          name: event.toolName,
          result: event.result,
          isError: event.isError,
          resultSummary,
        });
        break;
      }
      case "turn_end":
        if (event.message) this.#answered.add(event.message);
        if (event.toolResults.length > 0) {
          this.#textOnly = 0;
          this.#toolTurns++;
        } else if (
          event.message &&
          this.#toolTurns < this.maxTurns &&
          this.#todos.some((t) => t.status !== "completed")
        ) {
          // Past the budget the answer was the reserved turn's: no nudge asks for more work.
          this.#textOnly++;
          if (this.#textOnly >= this.stallThreshold) this.#stalled = true;
          else this.#byItself(() => this.agent.followUp(OPEN_TODOS_NOTE));
        }
        break;
      case "usage":
        this.#metrics = {
          ...this.#metrics,
          cacheInputTokens: this.#metrics.cacheInputTokens + event.usage.cached,
          missInputTokens:
            this.#metrics.missInputTokens + Math.max(0, event.usage.prompt - event.usage.cached),
          outputTokens: this.#metrics.outputTokens + event.usage.completion,
        };
        if (ownSide(event)) this.#addSide(ownSide(event) as RunUsage);
        this.#emitMetrics();
        break;
      case "notice":
        this.addNotice(event.text);
        break;
      default:
        break;
    }
  }

  /** The model's view for a step: the reserved final turn and the last-fifth warning are told in-band, never stored. */
  #inBand(view: readonly AgentMessage[], step: number): AgentMessage[] {
    // Step 1's view is built just before its loop run starts (the backend notes the same count).
    if (step === 1) this.#before = this.#toolTurns;
    const taken = this.#before + step - 1;
    const left = this.maxTurns - taken;
    if (left <= 0) return [...view, { role: "user", content: FINAL_TURN_NOTE }];
    if (taken > 0 && left <= Math.ceil(this.maxTurns / 5)) {
      return [
        ...view,
        { role: "user", content: `[notice] ${left} tool turn(s) left for this request; plan to finish.` },
      ];
    }
    return [...view];
  }

  /** After a tool step: identical call sets in a row, past the threshold, stop the run. */
  #stallCheck(message: ChatMessage | undefined): boolean {
    const calls = (fieldOf(message, "role") === "assistant" ? toolCallsOf(message) : [])
      .map((c) => (c.type === "function" ? `${c.function.name}\u0000${c.function.arguments}` : c.id))
      .sort();
    const key = calls.join("\u0001");
    this.#repeats = key !== "" && key === this.#lastCalls ? this.#repeats + 1 : 1;
    this.#lastCalls = key;
    if (this.#repeats >= this.stallThreshold) this.#stalled = true;
    return this.#stalled;
  }

  #ask(questions: AskQuestion[], signal?: AbortSignal): Promise<AskAnswer[]> {
    const id = `q${++this.#questions}`;
    const entry: PendingQuestion = {
      type: "question",
      id,
      questions: questions.map((q) => ({ ...q, answer: null })),
    };
    const answered = new Promise<AskAnswer[]>((resolve) => {
      const finish = (answers: AskAnswer[]) => {
        if (!this.#pending.delete(id)) return;
        signal?.removeEventListener("abort", onAbort);
        this.#replace("question", id, (e) => ({
          ...(e as PendingQuestion),
          questions: (e as PendingQuestion).questions.map((q, i) => ({ ...q, answer: answers[i] ?? "" })),
        }));
        resolve(answers);
      };
      const onAbort = () => finish(questions.map(() => ""));
      this.#pending.set(id, { entry, resolve: finish });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    // Told after the question is pending, so a listener may answer at once.
    this.#push(entry);
    if (signal?.aborted) this.#pending.get(id)?.resolve(questions.map(() => ""));
    return answered;
  }
}

/**
 * The MCP servers the given spec(s) bundle, layered as `resolveAgentSpec` layers them (weakest
 * first): a later layer's server of a name replaces the earlier one in place, and `enabled: false`
 * switches it off. Joined as written, a stronger layer's switch-off left the weaker layer's server
 * running, and one redefining a server gave the pool two of one name, which it refused.
 */
function specServers(spec: AgentSpec | readonly AgentSpec[] | null | undefined): McpServerConfig[] {
  const specs: readonly AgentSpec[] = spec == null ? [] : Array.isArray(spec) ? spec : [spec as AgentSpec];
  if (!specs.some((one) => setting(setting(one, "bundle"), "mcpServers") !== undefined)) return [];
  try {
    return (resolveAgentSpec(specs).mcpServers ?? []) as McpServerConfig[];
  } catch (error) {
    throw new AgentError("invalid-input", `createSession: spec: ${errorText(error)}`, { cause: error });
  }
}

/**
 * `value` frozen with every object and list it holds (plain data the session made: a timeline
 * entry, a todo list), so what the session hands out cannot be changed under it. Returns `value`.
 */
function frozen<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const inner of Object.values(value)) frozen(inner);
  return value;
}

/** The last assistant text among messages, "" for none. */
function lastReply(messages: readonly AgentMessage[]): string {
  for (let at = messages.length - 1; at >= 0; at--) {
    const m = messages[at] as ChatMessage;
    if (fieldOf(m, "role") === "assistant" && messageText(m).trim() !== "") return messageText(m);
  }
  return "";
}

/**
 * Whether a stored tool result is a failure, as the live timeline marked it: a tool's error, or a
 * call the loop answered without a result (a stop, the step limit: "Not run: …").
 */
function failedResult(result: string): boolean {
  return (
    result.startsWith("Error:") ||
    result.startsWith("Not run:") ||
    result === STOPPED_DURING ||
    result === NOT_RECORDED
  );
}

/** How many of `messages` are the session's open-todos reminder (a user message of that text). */
function nudgesIn(messages: readonly AgentMessage[]): number {
  let count = 0;
  for (const m of messages) if (fieldOf(m, "role") === "user" && messageText(m) === OPEN_TODOS_NOTE) count++;
  return count;
}

/** The timeline a resumed transcript shows: its user, assistant and tool entries. */
function timelineOf(messages: readonly AgentMessage[]): TimelineEvent[] {
  const timeline: TimelineEvent[] = [];
  // Every field the message's own (or its class's), never a polluted Object.prototype's: an
  // inherited `tool_calls` showed a tool entry under every answer.
  const roles = messages.map((m) => setting(m, "role"));
  messages.forEach((m, at) => {
    const role = roles[at];
    if (role === "user") timeline.push({ type: "user", text: messageText(m) });
    if (role === "assistant") {
      if (messageText(m).trim() !== "") timeline.push({ type: "assistant", text: messageText(m) });
      // This step's answers only: those after it up to the next chat message that is no tool message
      // (a transcript from elsewhere may give a later step's call the same id).
      const results = new Map<string, string>();
      for (let next = at + 1; next < messages.length; next++) {
        const answer = messages[next] as AgentMessage;
        if (roles[next] === "tool") {
          const id = setting(answer, "tool_call_id");
          if (typeof id === "string" && !results.has(id)) results.set(id, messageText(answer));
        } else if (LLM_ROLES.has(roles[next] as string)) break;
      }
      const calls = setting(m, "tool_calls");
      for (const call of Array.isArray(calls) ? calls : []) {
        const id = setting(call, "id") as string;
        const result = results.get(id) ?? null;
        // A stored call without its type (or with a null one) is a function call, as the loop reads it.
        const custom = setting(call, "type") === "custom";
        const fn = setting(call, custom ? "custom" : "function");
        timeline.push({
          type: "tool",
          id,
          name: setting(fn, "name") as string,
          argsSummary: summarize(setting(fn, custom ? "input" : "arguments") as string),
          result,
          ...(result !== null ? { resultSummary: summarize(result), isError: failedResult(result) } : {}),
        });
      }
    }
  });
  return timeline;
}

/**
 * Makes a session (see `Session`). With `sessionDir`, resumes `<sessionDir>/<sessionId>.jsonl` when
 * it exists — a torn last line is dropped, and a tool step cut off mid-run kept with each call that has
 * no recorded result answered `NOT_RECORDED`, each with a notice — and
 * writes it whole. Throws `AgentError` (`invalid-input`) for bad options, (`storage`) for a file
 * that cannot be read or written.
 */
export async function createSession(options: SessionOptions): Promise<Session> {
  // A wait for another opener's takeover of a stale lock is done with timers, never blocking the
  // thread: the constructor throws `LockWait` before reading anything, the lock is taken here, and
  // the session is constructed again with it.
  const open: Opening = { options, lock: undefined };
  try {
    for (;;) {
      opening = open;
      try {
        return new Session(options);
      } catch (error) {
        if (!(error instanceof LockWait)) throw error;
        open.lock?.release();
        open.lock = undefined;
        open.lock = await error.wait();
      } finally {
        opening = undefined;
      }
    }
  } finally {
    // Taken for a file the session did not open after all (its options read otherwise the second time).
    open.lock?.release();
  }
}
