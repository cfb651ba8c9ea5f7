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

const REASONS = new WeakMap<SpecIssue, string>();

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

const atPath = (path: string, text: string) => (path === "" ? text : `${path}: ${text}`);

/**
 * Makes an issue whose message is prefixed with its path. `consequence` (what `parseSpec` did
 * about it, e.g. "dropped") follows the reason in the message; `reasonOf` gives the message without it.
 */
export function issue(path: string, code: SpecIssueCode, reason: string, consequence?: string): SpecIssue {
  const found = new Issue(
    path,
    code,
    atPath(path, consequence === undefined ? reason : `${reason}; ${consequence}`),
  );
  REASONS.set(found, atPath(path, reason));
  return found;
}

/** The issue's message without what `parseSpec` did about it: how a refusing function words it. */
export function reasonOf(found: SpecIssue): string {
  return (REASONS.get(found) ?? found.message).replace(/\.+$/, "");
}

/** The kind of a value, never the value: "a string", "a number", "a list", "an object". */
export function describeKind(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
