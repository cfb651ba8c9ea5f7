import { readError } from "./error-shape.js";

const OVERFLOW_MARK = Symbol.for("@loopwright/negotiate.ContextOverflow");
const SNAPSHOT_MARK = Symbol.for("@loopwright/negotiate.CapabilitySnapshotError");

function marked(value: unknown, mark: symbol): boolean {
  try {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[mark] === true;
  } catch {
    return false; // a Proxy whose traps throw is no error of ours
  }
}

/** `String(value)`, or a stand-in where that throws (a null-prototype object, a Proxy). */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return "the endpoint refused the request as too long for the context window";
  }
}

/** The server's words ending as a sentence does (llama.cpp's end "…try increasing it", no stop). */
function asSentence(words: string): string {
  const trimmed = words.trimEnd();
  return /[.!?…:;]["')\]]*$/.test(trimmed) || trimmed === "" ? trimmed : `${trimmed}.`;
}

/**
 * A request too big for the model's context window, as the endpoint (or a size guard) said so.
 *
 * `serverMessage` is the endpoint's own wording, kept so an operator reads what the server said
 * rather than a paraphrase; `cause` is the original error. Not a capability `negotiate` can answer
 * and not transient: retrying the same body fails the same way. Shrink the transcript (prune tool
 * results, compact) or raise the window.
 */
export class ContextOverflow extends Error {
  override readonly name: string = "ContextOverflow";
  /** The endpoint's own words for the overflow (or the size guard's, when nothing was sent). */
  readonly serverMessage: string;

  constructor(serverMessage: string, options?: { cause?: unknown }) {
    super(
      `The request does not fit the model's context window: ${asSentence(serverMessage)} ` +
        "Shorten the transcript (prune tool results or compact it) or raise the window, then send again.",
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.serverMessage = serverMessage;
    Object.defineProperty(this, OVERFLOW_MARK, { value: true });
  }

  /** True for a `ContextOverflow` from any installed copy of this package. */
  static isInstance(value: unknown): value is ContextOverflow {
    return marked(value, OVERFLOW_MARK);
  }

  /**
   * The `ContextOverflow` for an endpoint's refusal (one `isOverflow` accepts): its own message as
   * `serverMessage` (the body's, not the client's "400 …" line) and the error as `cause`.
   */
  static fromError(error: unknown): ContextOverflow {
    if (ContextOverflow.isInstance(error)) return error;
    const said = readError(error).primary || safeString(error);
    return new ContextOverflow(said, { cause: error });
  }
}

/** Why a capability snapshot could not be imported. */
export type CapabilitySnapshotErrorCode = "version" | "malformed";

/**
 * A capability snapshot that `importCapabilities` refused, before changing anything.
 *
 * `code` is `"version"` for a snapshot written by another snapshot version and `"malformed"` for
 * one that is not the shape a snapshot has; `path` names the first offending place.
 */
export class CapabilitySnapshotError extends Error {
  override readonly name: string = "CapabilitySnapshotError";
  /** `"version"` or `"malformed"`. */
  readonly code: CapabilitySnapshotErrorCode;
  /** Where in the snapshot the problem is, as a JSON-ish path (`endpoints[2].models["gpt-5"]`). */
  readonly path: string;

  constructor(
    code: CapabilitySnapshotErrorCode,
    path: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = path;
    Object.defineProperty(this, SNAPSHOT_MARK, { value: true });
  }

  /** True for a `CapabilitySnapshotError` from any installed copy of this package. */
  static isInstance(value: unknown): value is CapabilitySnapshotError {
    return marked(value, SNAPSHOT_MARK);
  }
}
