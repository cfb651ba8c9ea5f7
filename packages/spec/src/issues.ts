/**
 * Why `parseSpec` refused a document or dropped part of it.
 *
 * Errors (the document is refused): `not-object`, `spec`, `requires`, `container`.
 * Warnings (the part is dropped, the rest kept): `unknown-field`, `credential`, `invalid-value`,
 * `incomplete`, `duplicate-id`, `null-entry`, `bundle-ignored`.
 */
export type SpecIssueCode =
  | "not-object"
  | "spec"
  | "requires"
  | "container"
  | "unknown-field"
  | "credential"
  | "invalid-value"
  | "incomplete"
  | "duplicate-id"
  | "null-entry"
  | "bundle-ignored";

/** One problem `parseSpec` found: where, what kind, and a sentence a person can act on. */
export interface SpecIssue {
  /** Where, e.g. `model.temperature`, `prompt[2].id`, `bundle.mcpServers[0].args[1]`; `""` is the document. */
  readonly path: string;
  readonly code: SpecIssueCode;
  /**
   * Starts with the path. Quotes names (field names, feature names) but never a string value from
   * the document, so a credential pasted in the wrong place is not echoed into a log.
   */
  readonly message: string;
  /** The message, so `errors.join("\n")` reads as text. */
  toString(): string;
}

class Issue implements SpecIssue {
  constructor(
    readonly path: string,
    readonly code: SpecIssueCode,
    readonly message: string,
  ) {}

  toString(): string {
    return this.message;
  }
}

/** Makes an issue whose message is prefixed with its path. */
export function issue(path: string, code: SpecIssueCode, text: string): SpecIssue {
  return new Issue(path, code, path === "" ? text : `${path}: ${text}`);
}

/** Describes a value for a message without quoting it: numbers and booleans shown, strings only measured. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return `a list of ${value.length}`;
  switch (typeof value) {
    case "string":
      if (value === "") return "an empty string";
      return value.length === 1 ? "a string of 1 character" : `a string of ${value.length} characters`;
    case "number":
    case "boolean":
      return String(value);
    case "object":
      return "an object";
    case "undefined":
      return "undefined";
    default:
      return `a ${typeof value}`;
  }
}
