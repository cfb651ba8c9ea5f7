export type {
  McpHttpServer,
  McpJsonDocument,
  McpJsonServers,
  McpServerConfig,
  McpServerEntry,
  McpServersInput,
  McpServersOptions,
  McpStdioServer,
} from "./config.js";
export { mcpServers, readMcpJson } from "./config.js";
export type { McpElicitation, McpElicitationAnswer, ServerState, ServerStatus } from "./connection.js";
export type {
  CallToolResultLike,
  ImagePart,
  McpToolOutput,
  TextPart,
  ToolContentPart,
  ToolImage,
} from "./content.js";
export { EMPTY_RESULT, toolOutput } from "./content.js";
export type { McpPoolErrorCode } from "./errors.js";
export { McpPoolError } from "./errors.js";
export type { HookEvent, HookOutcome, HookRunner, McpHookSpec } from "./hooks.js";
export type {
  CatalogServer,
  CatalogTool,
  McpCallOutput,
  McpPool,
  McpPoolOptions,
  McpToolDefinition,
  McpToolPolicy,
} from "./pool.js";
export { createMcpPool } from "./pool.js";
