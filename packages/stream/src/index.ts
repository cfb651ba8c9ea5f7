export { listenForAbort } from "./abort-listeners.js";
export type {
  ChoiceLike,
  ChunkLike,
  ContentPartLike,
  DeltaLike,
  ReasoningDetailLike,
  TimingsLike,
  ToolCallDeltaLike,
  UsageLike,
} from "./chunk.js";
export type { EndpointSilentCode, StreamErrorCode } from "./errors.js";
export { EndpointSilent, StreamError } from "./errors.js";
export type { Fence, FenceOptions, FenceSplit } from "./fences.js";
export { ALL_FENCES, DEFAULT_FENCES, FenceSplitter, stripThinking } from "./fences.js";
export type {
  ChatBody,
  ChatClientLike,
  ProducedBox,
  RequestOptionsLike,
  StreamTurnOptions,
} from "./stream-turn.js";
export { streamTurn } from "./stream-turn.js";
export type { ToolCallProgress } from "./tool-call-assembler.js";
export type { DiscardedCount, ToolCall, Turn, TurnTimings, TurnUsage } from "./turn.js";
export { FinishReason } from "./turn.js";
export { readUsage } from "./usage.js";
