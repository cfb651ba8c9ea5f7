const MCP_POOL_ERROR = Symbol.for("@loopwright/tools-mcp.McpPoolError");

/**
 * What went wrong, as a {@link McpPoolError} reports it:
 * - `invalid-config`: a server entry (or a `.mcp.json`) that cannot describe a server.
 * - `connect-failed`: a server that could not be started or reached; the message carries its stderr tail.
 * - `unknown-tool`: a call to a name no connected server offers.
 * - `tool-error`: the tool ran and answered with `isError`; the message is its text.
 * - `timeout`: the call took longer than its timeout (the server was told to cancel it).
 * - `aborted`: the caller's signal stopped the call (the server was told to cancel it).
 * - `server-died`: the server stopped while the call was running.
 * - `call-failed`: the server refused the call (bad arguments, a protocol error) or could not be
 *   reached, or its answer was larger than the pool's `maxMessageBytes` (the message names the size).
 * - `closed`: the pool was closed.
 */
export type McpPoolErrorCode =
  | "invalid-config"
  | "connect-failed"
  | "unknown-tool"
  | "tool-error"
  | "timeout"
  | "aborted"
  | "server-died"
  | "call-failed"
  | "closed";

/**
 * Every failure this package reports. `message` is written for the model as much as for a person
 * (the loop hands a thrown message to the model), `code` says which kind, `server` and `tool` name
 * where, and `cause` is the original failure. Never carries a server's `env` or `headers`.
 */
export class McpPoolError extends Error {
  override readonly name: string = "McpPoolError";
  readonly [MCP_POOL_ERROR] = true;
  /** Which kind of failure. */
  readonly code: McpPoolErrorCode;
  /** The server concerned, by its configured name. */
  readonly server?: string;
  /** The tool concerned, by the name the server gave it. */
  readonly tool?: string;

  constructor(
    code: McpPoolErrorCode,
    message: string,
    options: { cause?: unknown; server?: string; tool?: string } = {},
  ) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.code = code;
    if (options.server !== undefined) this.server = options.server;
    if (options.tool !== undefined) this.tool = options.tool;
  }

  /** True for a `McpPoolError` from any installed copy of this package. */
  static isInstance(value: unknown): value is McpPoolError {
    return (
      typeof value === "object" &&
      value !== null &&
      (value as Record<symbol, unknown>)[MCP_POOL_ERROR] === true
    );
  }
}

/** Names a value's kind for an error message, never the value itself (it may be a credential). */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value === "" ? "an empty string" : "a string";
  return typeof value === "object" ? "an object" : typeof value;
}

/** The message of anything thrown. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === "string" ? error : String(error);
}

/** How much of a tool's name a message gives: the rest is left out, its length said. */
const ECHOED_CHARS = 60;

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidirectional marks,
 * embeddings, overrides and isolates: what {@link echoedName} writes as `\uXXXX`.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * A tool's name as a message gives it — one the model wrote, or a server's own: whole up to 60
 * characters, else cut there (never inside a character) with its length said; half a surrogate
 * pair written U+FFFD; and each control character (a terminal's escape, a line break, a NUL, a
 * right-to-left override) written `\uXXXX`. Either name can be any size and hold anything, and a
 * message is a tool result the model is sent again on every later step, and may be logged or
 * shown in a terminal.
 */
export function echoedName(given: string): string {
  if (typeof given !== "string") return String(given);
  // Half a surrogate pair in the name (JSON's "\ud83d" decodes to one) as U+FFFD: the error goes
  // back to the model in the next request, which llama.cpp would refuse.
  const name = given.toWellFormed();
  const escaped = (text: string) =>
    text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (name.length <= ECHOED_CHARS) return escaped(name);
  return `${escaped(headOf(name, ECHOED_CHARS))}… (${name.length} characters)`;
}

/** The first `max` characters of `text`, one fewer where the cut would split a surrogate pair. */
export function headOf(text: string, max: number): string {
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
