import { type Calibration, createCalibration, type EndpointKey } from "./calibration.js";
import type { RequestBodyLike } from "./messages.js";

export type { Calibration, CalibrationOptions, EndpointKey } from "./calibration.js";
export {
  createCalibration,
  DEFAULT_MAX_CALIBRATED_ENDPOINTS,
  DEFAULT_MAX_CALIBRATED_MODELS,
} from "./calibration.js";
export type { LedgerErrorCode } from "./errors.js";
export { LedgerError } from "./errors.js";
export type { LedgerEntry, LedgerRequest, MessageEstimate, RecordedLedgerRequest } from "./ledger.js";
export { estimateFrom, rebaseLedger, recordRequest, tokensBetween } from "./ledger.js";
export type { ContentPartLike, KeptMessage, MessageLike, RequestBodyLike, ToolCallLike } from "./messages.js";
export { canonicalJson, IMAGE_TOKENS, LOW_DETAIL_IMAGE_TOKENS, sameMessage } from "./messages.js";
export type { CompactionPlan, PlanCompactionOptions } from "./plan-compaction.js";
export { planCompaction, SUMMARY_LEAD } from "./plan-compaction.js";
export type { PruneOptions } from "./prune.js";
export { pruneToolResults } from "./prune.js";
export type {
  AbortSignalLike,
  BeforeCompactInput,
  CompactionHookRunner,
  CompactionHooks,
  Fold,
  HookOutcomeLike,
  RunCompactionOptions,
  Summarise,
  SummaryMessage,
} from "./run-compaction.js";
export {
  applyCompaction,
  compactTranscript,
  requestIndex,
  runCompaction,
  vetoedBy,
  vetoNote,
} from "./run-compaction.js";
export type { ContextParts, ContextTokensOptions, EstimateOptions } from "./tokens.js";
export {
  contextChars,
  contextTokens,
  DEFAULT_CHARS_PER_TOKEN,
  estimateTokens,
  MIN_CHARS_PER_TOKEN,
  messageTokens,
  requestTokens,
  toolTokens,
} from "./tokens.js";

/** The calibration store the top-level functions use; `createCalibration()` makes another. */
export const defaultCalibration: Calibration = createCalibration();

/**
 * Takes a characters-per-token reading for (endpoint, model) into the default store: the body's
 * characters over the prompt tokens the endpoint reported for it.
 *
 * Returns the divisor `charsPerTokenFor` now answers, or `undefined` when the reading was not taken
 * (the body carries an image or other media, the count is not above zero, or the ratio is outside
 * 1 to 8). Throws `LedgerError` for an endpoint that is neither an object nor a string, or a body
 * without messages.
 */
export function calibrate(
  endpoint: EndpointKey,
  model: string | undefined,
  body: RequestBodyLike,
  promptTokens: number,
): number | undefined {
  return defaultCalibration.calibrate(endpoint, model, body, promptTokens);
}

/**
 * The characters per token to size the next request to (endpoint, model) by: the highest of its
 * last four readings in the default store — the lowest token count, since a count that comes out
 * high refuses a run that would have fit — and 4 until a reading exists.
 */
export function charsPerTokenFor(endpoint: EndpointKey, model?: string): number {
  return defaultCalibration.charsPerTokenFor(endpoint, model);
}

/** Forgets every reading in the default calibration store. */
export function resetCalibration(): void {
  defaultCalibration.reset();
}
