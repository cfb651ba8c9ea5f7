// The sibling types that appear in this package's signatures, so a host installed with only
// @loopwright/side-task can name them. scripts/check-reexports.mjs holds this.
export type { Endpoint } from "@loopwright/client";
export type { EndpointCapabilities } from "@loopwright/negotiate";
export type { TurnUsage } from "@loopwright/stream";
export type { AskJsonOptions } from "./ask.js";
export { ASK_MAX_TOKENS, ASK_TEMPERATURE, ask, askJson, askReply } from "./ask.js";
export type {
  SideTaskCapabilities,
  SideTaskClient,
  SideTaskClients,
  SideTaskOptions,
  SideTaskReply,
} from "./call.js";
export { NO_THINKING_HINTS, SIDE_TASK_TIMEOUT_MS } from "./call.js";
export type { CatalogServerLike, CatalogToolLike } from "./catalog.js";
export { PRESELECT_MAX } from "./catalog.js";
export type { SideTaskErrorCode } from "./errors.js";
export { SideTaskError } from "./errors.js";
export type { SideTaskImagePart, SideTaskInput, SideTaskPart, SideTaskTextPart } from "./input.js";
export { IMAGE_LEFT_OUT, IMAGE_URL_LEFT_OUT } from "./input.js";
export type { KeywordOptions, KeywordPreselection, KeywordScore } from "./keywords.js";
export { KEYWORD_DROPOFF, KEYWORD_MIN_SCORE, preselectByKeywords } from "./keywords.js";
export type { PreselectOptions } from "./preselect.js";
export {
  PRESELECT_ENUM_MAX,
  PRESELECT_MAX_TOKENS,
  PRESELECT_SCHEMA,
  PRESELECTED_NOTICE,
  preselect,
  preselectInput,
  preselection,
  preselectSchema,
  preselectSystem,
} from "./preselect.js";
export type {
  SummariseFunction,
  SummariserOptions,
  SummaryMessageLike,
  SummarySignalLike,
} from "./summariser.js";
export {
  SUMMARISER_SYSTEM,
  SUMMARY_MAX_TOKENS,
  SUMMARY_MESSAGE_CHARS,
  summariser,
} from "./summariser.js";
export type { TaskCall, TaskCallOptions, TaskEndpoint, TaskSettings } from "./task-call.js";
export { taskCall } from "./task-call.js";
export type { StandardJsonSchema, StandardOutput } from "./typed-schema.js";
export type { SideTaskKind, SideTaskUsage } from "./usage.js";
export { FUNCTION_WORDS } from "./words.js";
