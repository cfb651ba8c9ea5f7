// Re-exported so a host that runs through the loop reads its events without depending on
// @loopwright/events itself (no phantom dependency).

// The sibling types that appear in this package's signatures, so a host installed with only
// @loopwright/loop (pnpm, or npm --install-strategy=linked) can name every one of them, and a
// library built on it can emit declarations (no TS2742). scripts/check-reexports.mjs holds this.
export type { ClientPool, ClientPoolOptions } from "@loopwright/client";
// Every member of `RunEvent` too, so a watcher's `switch (event.kind)` can name each case's type.
export type {
  DisplayBlock,
  DoneEvent,
  ErrorEvent,
  EventBus,
  EventsErrorCode,
  EventsSettings,
  NoticeEvent,
  OutputEvent,
  RetractEvent,
  RunEvent,
  RunMetrics,
  RunMetricsOptions,
  SequencedEvent,
  SideUsageTotals,
  ThinkingEvent,
  ThinkingRetractEvent,
  ToolCallEvent,
  ToolResultEvent,
  TurnEvent,
  TurnMetrics,
  UsageEvent,
} from "@loopwright/events";
// `EventsError`, `EndpointSilent` and `StreamError` (with their codes) are causes a failed run
// carries (README: a refused `runId`, a silent endpoint, a cut or garbled stream): a host with only
// this package installed can `isInstance` them and switch on `code` without a sibling of its own.
export { EventsError, fold, runMetrics } from "@loopwright/events";
export type { HookEvent, HookInput, HookReport, HookRunner, HookSettings, Hooks } from "@loopwright/hooks";
export type { Calibration, CalibrationOptions, LedgerEntry } from "@loopwright/ledger";
export type {
  BackoffOptions,
  CapabilityStore,
  CapabilityStoreOptions,
  EndpointCapabilities,
  ModelCapabilities,
  RequestBody,
} from "@loopwright/negotiate";
// A value: the base class of AgentLoopOverflow, so `e instanceof ContextOverflow` needs no sibling.
export { ContextOverflow } from "@loopwright/negotiate";
export type {
  ChatClientLike,
  EndpointSilentCode,
  StreamErrorCode,
  StreamTurnOptions,
  Turn,
} from "@loopwright/stream";
export { EndpointSilent, StreamError } from "@loopwright/stream";
export type {
  ToolCallOutcome,
  ToolCallRequest,
  ToolCallResult,
  ToolCallSource,
} from "@loopwright/tool-calls";
export type { CatalogServer, PreselectRouting } from "@loopwright/tool-loading";
export type {
  AgentLoopOptions,
  AgentLoopResult,
  BeforeStepContext,
  HookResult,
  LoopHooks,
  LoopHooksService,
  LoopRequest,
  LoopServices,
  StepPlan,
} from "./agent-loop.js";
export { preview, runLoop } from "./agent-loop.js";
export type {
  AgentParts,
  AssistantMessage,
  AssistantToolCall,
  ChatMessage,
  DedupePolicy,
  Endpoint,
  LoopConfig,
  ModelParams,
  RetryPolicy,
  ToolChoice,
  ToolDefinition,
  ToolOrder,
  ToolPolicy,
} from "./config.js";
export { DEFAULT_MAX_TOOL_ITERATIONS } from "./config.js";
export type { ContinuedTurn, ContinueTurnOptions } from "./continue-turn.js";
export { continueTurn, isContinuable } from "./continue-turn.js";
export type {
  LoopErrorEvent,
  LoopOptionErrorCode,
  LoopUsageEvent,
  OverflowBreakdown,
  RunState,
  RunUsage,
  SideUsage,
} from "./errors.js";
export {
  AgentLoopError,
  AgentLoopOverflow,
  errorMessage,
  failedRun,
  LoopOptionError,
  ToolIterationLimit,
  UNREADABLE_ERROR,
} from "./errors.js";
export type { LoopOption, OptionHandling } from "./loop-options.js";
export {
  FOREIGN_STEP_LIMITS,
  foreignStepLimitsIn,
  foreignStepLimitsUnread,
  LOOP_OPTIONS,
} from "./loop-options.js";
export type {
  CallResult,
  CallRouting,
  Dispatch,
  DispatchRequest,
  RunCallsOptions,
  RunCallsResult,
} from "./run-calls.js";
export {
  DEFAULT_TOOL_TIMEOUT_MS,
  NOT_RUN,
  replayable,
  runCalls,
  STOPPED_DURING,
  WITHHELD,
} from "./run-calls.js";
export type { BuildRequest, RunTurnOptions } from "./run-turn.js";
export { DEFAULT_MAX_RETRY_WAIT_MS, RATE_LIMIT_RETRIES, runTurn } from "./run-turn.js";
export type { RunOptions, Runtime, RuntimeOptions, RuntimeStores } from "./runtime.js";
export { createRuntime, defaultRuntime, resetAll, runAgentLoop } from "./runtime.js";
export type { ToolLoadMetrics } from "./tool-discovery.js";
