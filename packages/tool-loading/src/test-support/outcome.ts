import { ToolLoadingError } from "../errors.js";

/**
 * What calling `fn` came to, as one line a test can match: `"<code>: <message>"` for a
 * `ToolLoadingError`, `"bare <error>"` for anything else thrown, `"answered"` when it returned.
 */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return ToolLoadingError.isInstance(error) ? `${error.code}: ${error.message}` : `bare ${String(error)}`;
  }
  return "answered";
}
