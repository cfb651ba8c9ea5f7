import { protoless } from "./protoless.js";

const MARKER = Symbol.for("@loopwright/testkit.TestkitError");

/** What kind of misuse a {@link TestkitError} reports. */
export type TestkitErrorCode =
  | "fixtures-dir-not-found"
  | "fixture-not-found"
  | "invalid-option"
  | "invalid-reply"
  | "server-fault";

/**
 * The one error the testkit throws: bad options, a bad scripted reply, a missing fixture, or
 * (`server-fault`, inside a running server, sent to the client as a 500) a reply function or a
 * personality hook that failed.
 *
 * `code` says which; `cause` carries the underlying failure (a filesystem error, for example).
 * `TestkitError.isInstance(value)` works across two installed copies of the package.
 */
export class TestkitError extends Error {
  override readonly name = "TestkitError";
  readonly code: TestkitErrorCode;

  constructor(code: TestkitErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    Object.defineProperty(this, MARKER, protoless({ value: true }));
  }

  /** True when `value` is a TestkitError from any copy of this package. */
  static isInstance(value: unknown): value is TestkitError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}
