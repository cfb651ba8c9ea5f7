export type { Work } from "./count-work.js";
export { countWork } from "./count-work.js";
export type { TestkitErrorCode } from "./errors.js";
export { TestkitError } from "./errors.js";
export type { CaptureParts, RecordedResponse } from "./fixtures.js";
export {
  fixturePath,
  fixturesDir,
  readFixture,
  readFixtureBytes,
  readFixtureJson,
  readRecordedResponse,
  recordedError,
  recordedErrorBody,
  splitCapture,
} from "./fixtures.js";
export { bestTimes, cpuTimeMs, growth } from "./growth.js";
export type { LiveOptions, LiveServer } from "./live-llama.js";
export { liveServerPath, startLive } from "./live-llama.js";
export type { LlamacppPersonalityOptions } from "./personalities/llamacpp.js";
export {
  LLAMACPP_FIXTURES,
  llamacppFormatTypeRefusal,
  llamacppPersonality,
} from "./personalities/llamacpp.js";
export type { LmstudioPersonalityOptions } from "./personalities/lmstudio.js";
export { LMSTUDIO_FIXTURES, lmstudioPersonality } from "./personalities/lmstudio.js";
export type { MistralPersonalityOptions } from "./personalities/mistral.js";
export { MISTRAL_FIXTURES, mistralPersonality } from "./personalities/mistral.js";
export type { OpenAiPersonalityOptions } from "./personalities/openai.js";
export { OPENAI_CHAT_PARAMS, OPENAI_FIXTURES, openaiPersonality } from "./personalities/openai.js";
export type {
  HttpAnswer,
  Personality,
  PersonalityContext,
  TurnFacts,
} from "./personalities/personality.js";
export { MAX_CHOICES, requestedChoices } from "./personalities/personality.js";
export type { PersonalityConfig, PersonalityName, PersonalitySpec } from "./personalities/resolve.js";
export type { VllmPersonalityOptions } from "./personalities/vllm.js";
export { VLLM_FIXTURES, vllmPersonality } from "./personalities/vllm.js";
export { withPollutedPrototype } from "./pollute.js";
export type { PrefixCache, PromptCount, PromptLike } from "./prefix-cache.js";
export {
  commonPrefixLength,
  countTokens,
  createPrefixCache,
  renderPrompt,
  TOKEN_PATTERN,
  tokenize,
} from "./prefix-cache.js";
export type { RecordedRequest } from "./recorded-request.js";
export type {
  ErrorReply,
  RawReply,
  ReplayReply,
  Reply,
  ScriptedToolCall,
  ScriptedUsage,
  TurnReply,
} from "./replies.js";
export { validateReply } from "./replies.js";
export type { ScriptedModelOptions, ScriptedModelRequest } from "./scripted-model.js";
export { extractExpression, extractPath, scriptedModel } from "./scripted-model.js";
export type { ModelListing, ReplyFunction, ServerOptions, TestServer } from "./server.js";
export { startServer } from "./server.js";
export type { WireUsage } from "./sse.js";
export { splitFrames } from "./sse.js";
export { limitTurn } from "./token-budget.js";
