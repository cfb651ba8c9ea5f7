const SCHEMA_COMPAT_ERROR = Symbol.for("@loopwright/schema-compat.SchemaCompatError");

/** What kind of bad input a {@link SchemaCompatError} reports. */
export type SchemaCompatErrorCode = "invalid-tools" | "invalid-order";

/**
 * Thrown when `sanitizeTools`, `relaxTools` or `orderTools` is handed something that is not a tool
 * array, or an order that is neither `true`, `false` nor a comparator. `code` says which. Schemas
 * themselves never cause it: `sanitizeSchema` reads any value.
 */
export class SchemaCompatError extends Error {
  override readonly name: string = "SchemaCompatError";
  readonly [SCHEMA_COMPAT_ERROR] = true;
  /** Which input was wrong. */
  readonly code: SchemaCompatErrorCode;

  constructor(code: SchemaCompatErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for a `SchemaCompatError` from any installed copy of this package. */
  static isInstance(value: unknown): value is SchemaCompatError {
    return (
      typeof value === "object" &&
      value !== null &&
      (value as Record<symbol, unknown>)[SCHEMA_COMPAT_ERROR] === true
    );
  }
}

/** Names a value's kind for an error message. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value === "" ? "an empty string" : "a string";
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}
