import { quotedEcho } from "./echo.js";

const AGENT_ERROR = Symbol.for("@loopwright/agent.AgentError");
const SESSION_BUSY_ERROR = Symbol.for("@loopwright/agent.SessionBusyError");

function marked(value: unknown, marker: symbol): boolean {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/**
 * What went wrong with an agent or a session:
 * - `busy`: `prompt`, `continue` or `reset` was called while a run was going;
 * - `invalid-input`: an argument was not what the method takes (an empty prompt, a bad option);
 * - `cannot-continue`: `continue()` with nothing to answer (the transcript ends in an assistant reply);
 * - `duplicate-tool`: two tools registered under one name, or under names the model would be shown as one;
 * - `unknown-question`: `submitAnswer` named a question that is not pending;
 * - `storage`: a session file could not be read or written;
 * - `closed`: `prompt`, `save`, `clear` or `continue` on a session (or its agent) after `close()` or `dispose()`;
 * - `locked`: `createSession` for a session file another process (or another open session of this
 *   one) holds: its lock `<file>.lock` names a holder that still runs. The message names the file
 *   and the holder's pid.
 */
export type AgentErrorCode =
  | "busy"
  | "invalid-input"
  | "cannot-continue"
  | "duplicate-tool"
  | "unknown-question"
  | "storage"
  | "closed"
  | "locked";

/** The error of this package. `code` says which kind; `cause` is the underlying failure where there is one. */
export class AgentError extends Error {
  override readonly name: string = "AgentError";
  readonly [AGENT_ERROR] = true;
  /** Which kind of failure. */
  readonly code: AgentErrorCode;

  constructor(code: AgentErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for an `AgentError` (or `SessionBusyError`) from any installed copy of this package. */
  static isInstance(value: unknown): value is AgentError {
    return marked(value, AGENT_ERROR);
  }
}

/**
 * Thrown by a session's driver methods (`prompt`, `compact`, `clear`) while a run is going: a
 * session runs one prompt at a time and does not queue. A host maps it to HTTP 409.
 */
export class SessionBusyError extends AgentError {
  override readonly name: string = "SessionBusyError";
  readonly [SESSION_BUSY_ERROR] = true;

  constructor(method: string) {
    super(
      "busy",
      `Session.${method}() was called while a run is in progress. Wait for it to settle (check session.running), or abort() it first.`,
    );
  }

  /** True for a `SessionBusyError` from any installed copy of this package. */
  static override isInstance(value: unknown): value is SessionBusyError {
    return marked(value, SESSION_BUSY_ERROR);
  }
}

/** A caught unknown as one line of text. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * What a refused value was, for an error message: its kind, with a short scalar's value ("a string
 * (\"5\")"); a string quoted as `quotedEcho` writes it — cut at 60 characters with its length said,
 * half a surrogate pair U+FFFD, each control, U+2028/2029 and bidirectional mark `\uXXXX` (quoted
 * by `JSON.stringify` and cut at 40, a right-to-left override in it was left raw).
 */
export function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "a list";
  switch (typeof value) {
    case "string":
      return `a string (${quotedEcho(value)})`;
    case "number":
    case "bigint":
    case "boolean":
      return `a ${typeof value} (${String(value)})`;
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    default:
      return "an object";
  }
}

/**
 * The loop words a broken stream's error for the host of `runAgentLoop`, who holds the
 * `AgentLoopError` and re-runs from `failedRun(error).messages`. An `Agent`'s host reads the text as
 * `result.error` (a string: the loop's error is `result.cause`) and resumes with `continue()`, its
 * transcript already holding what the run kept.
 */
const LOOP_PARTIAL = "The reply so far is on this error's `cause.partial` and not in the run's transcript;";
const LOOP_AGAIN = "; run again from `failedRun(error).messages`.";
const AGENT_PARTIAL = "The reply so far is not in the transcript (it is on `result.cause.cause.partial`);";
const AGENT_AGAIN = "; continue() asks again.";

/** A loop error's text as an `Agent`'s host reads it (see `LOOP_PARTIAL`). */
export function forTheAgentsHost(text: string): string {
  if (!text.includes(LOOP_PARTIAL)) return text;
  return text.replace(LOOP_PARTIAL, AGENT_PARTIAL).replace(LOOP_AGAIN, AGENT_AGAIN);
}

/**
 * An agent's error text as a session's user reads it: a `PromptResult` has no `cause`, and what to
 * do next the session's own notice says (a prompt no turn answered is taken out, "send it again").
 */
export function forTheSessionsUser(text: string): string {
  if (!text.includes(AGENT_PARTIAL)) return text;
  return text
    .replace(`${AGENT_PARTIAL} continue() asks again.`, "The reply so far was not kept.")
    .replace(AGENT_PARTIAL, "The reply so far was not kept;");
}
