import { ToolArgumentsError } from "../errors.js";
import { parseToolArguments } from "../parse-tool-arguments.js";

/**
 * What parseToolArguments made of `raw` for a `read_file` call: the compact JSON, or the error's
 * kind and message (any other error is thrown).
 */
export function readOf(
  raw: string,
  finishReason?: string,
): { json?: string; kind?: string; message?: string } {
  try {
    return { json: parseToolArguments(raw, { finishReason, name: "read_file" }).json };
  } catch (error) {
    if (!ToolArgumentsError.isInstance(error)) throw error;
    return { kind: error.kind, message: error.message };
  }
}
