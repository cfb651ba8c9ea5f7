export type { TestkitErrorCode } from "./errors.js";
export { TestkitError } from "./errors.js";
export { fixturePath, fixturesDir, readFixture, readFixtureBytes, readFixtureJson } from "./fixtures.js";
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
export type { ModelListing, ReplyFunction, ServerOptions, TestServer } from "./server.js";
export { startServer } from "./server.js";
export { splitFrames } from "./sse.js";
