export type { ToolArgumentsErrorKind, ToolCallsErrorCode } from "./errors.js";
export { ToolArgumentsError, ToolCallsError } from "./errors.js";
export type { ArgumentPath, InexactNumber, InexactNumberKind } from "./exact-numbers.js";
export { parseJson } from "./parse-json.js";
export type { ParsedToolArguments, ParseToolArgumentsOptions } from "./parse-tool-arguments.js";
export { MAX_REPAIR_ARGUMENT_CHARS, parseToolArguments } from "./parse-tool-arguments.js";
export type { RecoveredToolCalls, RecoverToolCallsOptions, ToolNameLike } from "./recover-tool-calls.js";
export { recoverToolCalls } from "./recover-tool-calls.js";
export type { ToolCallOutcome, ToolCallRequest, ToolCallResult, ToolCallSource } from "./types.js";
