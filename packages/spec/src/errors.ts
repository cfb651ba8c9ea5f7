import type { SpecIssue } from "./issues.js";
import { protoless } from "./protoless.js";

const MARKER = Symbol.for("@loopwright/spec.AgentSpecError");

/** What kind of value an `AgentSpecError` was thrown for. */
export type AgentSpecErrorCode = "not-a-list" | "not-a-spec";

/**
 * Thrown when a function that takes a parsed spec is handed something that is not one.
 *
 * `parseSpec` never throws; `resolveAgentSpec`, `exportSpec` and `findSpecSecrets` throw this when
 * a value would not pass `parseSpec` unchanged. `issues` lists what was wrong with it.
 */
export class AgentSpecError extends Error {
  override readonly name = "AgentSpecError";
  readonly code: AgentSpecErrorCode;
  /** The problems `parseSpec` found in the value, errors first. */
  readonly issues: readonly SpecIssue[];

  constructor(
    code: AgentSpecErrorCode,
    message: string,
    options: { issues?: readonly SpecIssue[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.issues = options.issues ?? [];
    Object.defineProperty(this, MARKER, protoless({ value: true }));
  }

  /** True for an `AgentSpecError` from any installed copy of this package. */
  static isInstance(value: unknown): value is AgentSpecError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}
