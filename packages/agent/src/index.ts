// The sibling types that appear in this package's signatures, so a host installed with only
// @loopwright/agent (pnpm, or npm --install-strategy=linked) can name every one of them.
// scripts/check-reexports.mjs holds this.
export type { TurnUsage } from "@loopwright/events";
export type {
  AgentLoopOptions,
  AgentLoopResult,
  ChatMessage,
  DedupePolicy,
  DispatchRequest,
  LoopConfig,
  Runtime,
  SideUsage,
  ToolChoice,
  ToolDefinition,
} from "@loopwright/loop";
export type { AgentSpec } from "@loopwright/spec";
export type {
  McpJsonDocument,
  McpPoolOptions,
  McpServerConfig,
  McpServerEntry,
  McpServersInput,
  ServerState,
} from "@loopwright/tools-mcp";
export type { AgentOptions, QueueMode, TransformContextInfo } from "./agent.js";
export { Agent } from "./agent.js";
export type {
  AfterToolCallContext,
  AfterToolCallResult,
  AgentEvent,
  AgentListener,
  AgentRunResult,
  AgentRunStatus,
  BeforeToolCallContext,
  BeforeToolCallResult,
} from "./agent-events.js";
export type { AgentBackend } from "./backend.js";
export { loopBackend } from "./backend.js";
export type { AskAnswer, AskedQuestion, AskQuestion } from "./builtin-tools.js";
export { askUserTool, todoWriteTool } from "./builtin-tools.js";
export type { AgentErrorCode } from "./errors.js";
export { AgentError, SessionBusyError } from "./errors.js";
export type { AgentMessage, CustomAgentMessages } from "./messages.js";
export { answeredPrefix, defaultConvertToLlm, messageText } from "./messages.js";
export type {
  McpServerInfo,
  PendingQuestion,
  PromptResult,
  RunMetrics,
  RunStatus,
  SessionEvent,
  SessionOptions,
  SessionView,
  StreamEvent,
  TimelineEvent,
} from "./session.js";
export { createSession, FINAL_TURN_NOTE, INITIAL_RUN_METRICS, OPEN_TODOS_NOTE, Session } from "./session.js";
export type { LoadedSession, SessionMeta, Todo, TodoStatus } from "./session-file.js";
export {
  listSessions,
  MAX_RECORD_DEPTH,
  NOT_RECORDED,
  readSessionFile,
  sessionPath,
} from "./session-file.js";
export type { TypedToolArgs, TypedToolLike } from "./to-agent-tool.js";
export { toAgentTool } from "./to-agent-tool.js";
export type { AgentTool, AgentToolContext, ToolExecutionMode } from "./tools.js";
export { defineTool, ToolRegistry } from "./tools.js";
