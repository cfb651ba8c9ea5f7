import { protoless } from "./protoless.js";

const MARKER = Symbol.for("@loopwright/tools.ToolInputError");

/** What was wrong with a call a toolset was handed. */
/**
 * - `invalid-arguments`: the arguments do not match the tool's input schema;
 * - `unknown-tool`: the set holds no tool of that name;
 * - `invalid-tool`: `defineTool`/`createToolset` was given something that is not a tool;
 * - `invalid-call`: `dispatch` was handed something that is not a call `{ id, name, args }`.
 */
export type ToolInputErrorCode = "invalid-arguments" | "unknown-tool" | "invalid-tool" | "invalid-call";

/** One argument that did not match a tool's input schema: where, and what the schema wants. */
export interface ArgumentIssue {
  /** The argument's path, e.g. `path` or `filters[0].field`; `""` is the arguments object itself. */
  path: string;
  /** What the schema says there, in zod's words. */
  message: string;
}

/**
 * Thrown by a toolset's `dispatch` before `execute` runs: the model named a tool the set does not
 * hold, or its arguments do not match the tool's input schema. A loop answers the call with the
 * message (`runAgentLoop` sends `Error: <message>`), so the model reads what to fix and the run
 * goes on. Also thrown by `defineTool`/`createToolset` for a tool that is not one (`invalid-tool`).
 */
export class ToolInputError extends Error {
  override readonly name = "ToolInputError";
  readonly code: ToolInputErrorCode;
  /** The tool the call named. */
  readonly tool: string;
  /** The arguments that did not match, for `invalid-arguments`; empty otherwise. */
  readonly issues: readonly ArgumentIssue[];

  constructor(
    code: ToolInputErrorCode,
    tool: string,
    message: string,
    options: { issues?: readonly ArgumentIssue[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.tool = tool;
    this.issues = options.issues ?? [];
    Object.defineProperty(this, MARKER, protoless({ value: true }));
  }

  /** True for a `ToolInputError` from any installed copy of this package. */
  static isInstance(value: unknown): value is ToolInputError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}
