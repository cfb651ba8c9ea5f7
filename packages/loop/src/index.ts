export { runAgentLoop } from "./agent-loop.js";
export type { AgentLoopOptions, AgentLoopResult, LoopEvent } from "./agent-loop.js";
export { DEFAULT_MAX_TOOL_ITERATIONS } from "./config.js";
export type {
  AssistantToolCall,
  ChatMessage,
  Endpoint,
  LoopConfig,
  ModelParams,
  ToolDefinition,
  ToolPolicy,
} from "./config.js";
export { AgentLoopError, errorMessage, failedRun, ToolIterationLimit } from "./errors.js";
export type { RunState, RunUsage } from "./errors.js";
export { NOT_RUN, runCalls, STOPPED_DURING } from "./run-calls.js";
export type { CallResult, Dispatch, DispatchRequest, RunCallsOptions, RunCallsResult } from "./run-calls.js";
