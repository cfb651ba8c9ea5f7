// @loopwright/tools: a tool written once — zod input schema, description, execute — declared to the
// model from that schema and run by a dispatcher that checks the arguments first. zod is a peer.

export type { ArgumentIssue, ToolInputErrorCode } from "./errors.js";
export { ToolInputError } from "./errors.js";
export type { ObjectSchema, Tool, ToolContext, ToolDeclaration, ToolSpec } from "./tool.js";
export { defineTool, MAX_ARGUMENT_DEPTH } from "./tool.js";
export type { ToolCall, Toolset } from "./toolset.js";
export { createToolset } from "./toolset.js";
