/**
 * The `lmstudio` personality: LM Studio's server — `GET /api/v0/models` and its plain-string
 * `{"error": "…"}` refusals, from `models/lmstudio-api-v0-models.docs-example.json` and
 * `errors/lmstudio/`.
 */
import { readFixture } from "../fixtures.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply } from "../replies.js";
import { nonEmptyString, type OptionRule, ownOptions, positiveWhole } from "./options.js";
import type { Personality, PersonalityContext } from "./personality.js";
import { includeUsageRequested, isRecord, jsonError, requestedMaxTokens, swap } from "./recorded.js";

/** Options of {@link lmstudioPersonality}. */
export interface LmstudioPersonalityOptions {
  /** The loaded context length; longer prompts are refused (default 4096). */
  contextLength?: number | null | undefined;
  /** The loaded model id; marked `loaded` with this `loaded_context_length` in `/api/v0/models` when it is listed. */
  model?: string | null | undefined;
}

const F = {
  models: "models/lmstudio-api-v0-models.docs-example.json",
  jsonObject: "errors/lmstudio/response-format-json-object-rejected.json",
  overflow: "errors/lmstudio/context-overflow-error-string.jsobject.txt",
} as const;

/** Every fixture the lmstudio personality reads, for the README and tests. */
export const LMSTUDIO_FIXTURES: readonly string[] = Object.values(F);

/** The `error: '…'` string of the recorded JS object literal. */
function recordedOverflowMessage(): string {
  const text = readFixture(F.overflow);
  const match = text.match(/error: '([^']*)'/);
  return match?.[1] ?? swap(text, [["error: '", ""]], F.overflow);
}

/** What each option of {@link lmstudioPersonality} must be. */
const LMSTUDIO_OPTION_RULES: Record<keyof LmstudioPersonalityOptions, OptionRule> = {
  contextLength: positiveWhole,
  model: nonEmptyString,
};

/**
 * Makes the `lmstudio` personality.
 *
 * Refuses `response_format: {type: "json_object"}` (recorded 400 body) and prompts longer than
 * `contextLength` (the recorded "Trying to keep the first N tokens…" string as `{"error": "…"}`,
 * status 400 — the status was not recorded). `GET /api/v0/models` answers the documented listing.
 */
export function lmstudioPersonality(given: LmstudioPersonalityOptions = {}): Personality {
  const options = ownOptions("lmstudio personality", given, LMSTUDIO_OPTION_RULES);
  const contextLength = options.contextLength ?? 4096;

  const check = (request: RecordedRequest, ctx: PersonalityContext): ErrorReply | undefined => {
    const body = request.body;
    if (!isRecord(body)) return undefined;
    if (isRecord(body.response_format) && body.response_format.type === "json_object") {
      return jsonError(400, readFixture(F.jsonObject));
    }
    if (ctx.promptTokens > contextLength) {
      const message = swap(
        recordedOverflowMessage(),
        [
          ["first 14538 tokens", `first ${ctx.promptTokens} tokens`],
          ["only 2048 tokens", `only ${contextLength} tokens`],
        ],
        F.overflow,
      );
      return jsonError(400, JSON.stringify({ error: message }));
    }
    return undefined;
  };

  return {
    name: "lmstudio",
    check,
    lmstudioModels() {
      const body = JSON.parse(readFixture(F.models)) as { data: Record<string, unknown>[] };
      for (const m of body.data) {
        if (m.id === options.model)
          Object.assign(m, { state: "loaded", loaded_context_length: contextLength });
      }
      return body;
    },
    completionBudget: (request, ctx) => requestedMaxTokens(request) ?? contextLength - ctx.promptTokens,
    streamsUsage: includeUsageRequested,
  };
}
