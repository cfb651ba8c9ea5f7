/**
 * The `vllm` personality: vLLM's OpenAI-compatible server — `max_model_len` in `/v1/models` and its
 * top-level `{"object":"error"}` refusals, from `models/vllm.json` and `errors/vllm/`.
 */
import { readFixture } from "../fixtures.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply } from "../replies.js";
import type { Personality, PersonalityContext } from "./personality.js";
import { includeUsageRequested, isRecord, jsonError, requestedMaxTokens, swap } from "./recorded.js";

/** Options of {@link vllmPersonality}. */
export interface VllmPersonalityOptions {
  /** The server's `--max-model-len` (default 8096, as recorded). */
  maxModelLen?: number;
  /** The served model id (default the recorded `meta-llama/Meta-Llama-3.1-8B-Instruct`). */
  model?: string;
  /** Started with `--enable-auto-tool-choice --tool-call-parser` (default true). */
  autoToolChoice?: boolean;
}

const F = {
  models: "models/vllm.json",
  overflow: "errors/vllm/context-length-legacy-top-level-object-error.json",
  autoTool: "errors/vllm/auto-tool-choice-requires-flags.json",
  maxTokens: "errors/vllm/max-tokens-negative-legacy-top-level.json",
} as const;

/** Every fixture the vllm personality reads, for the README and tests. */
export const VLLM_FIXTURES: readonly string[] = Object.values(F);

function withMessage(rel: string, pairs: readonly (readonly [string, string])[]): ErrorReply {
  const body = JSON.parse(readFixture(rel)) as Record<string, unknown>;
  body.message = swap(String(body.message), pairs, rel);
  return jsonError(400, JSON.stringify(body));
}

/**
 * Makes the `vllm` personality.
 *
 * Refuses, in order: `max_tokens` below 1 (recorded body), tools with `tool_choice` auto (or none
 * given) when `autoToolChoice` is false, and a request whose prompt tokens plus `max_tokens`
 * (or `max_completion_tokens`; 0 when neither is sent) exceed `maxModelLen` — the recorded
 * "maximum context length … (N in the messages, M in the completion)" body. `GET /v1/models` is
 * the recorded listing with `max_model_len` and the id set from the options.
 */
export function vllmPersonality(options: VllmPersonalityOptions = {}): Personality {
  const maxModelLen = options.maxModelLen ?? 8096;

  const check = (request: RecordedRequest, ctx: PersonalityContext): ErrorReply | undefined => {
    const body = request.body;
    if (!isRecord(body)) return undefined;
    const maxTokens = body.max_tokens ?? body.max_completion_tokens;
    if (typeof maxTokens === "number" && maxTokens < 1) {
      return withMessage(F.maxTokens, [["got -186", `got ${maxTokens}`]]);
    }
    const toolChoice = body.tool_choice ?? "auto";
    if (options.autoToolChoice === false && Array.isArray(body.tools) && toolChoice === "auto") {
      return jsonError(400, readFixture(F.autoTool));
    }
    const completion = typeof maxTokens === "number" ? maxTokens : 0;
    if (ctx.promptTokens + completion > maxModelLen) {
      return withMessage(F.overflow, [
        ["maximum context length is 6048 tokens", `maximum context length is ${maxModelLen} tokens`],
        ["you requested 6616 tokens", `you requested ${ctx.promptTokens + completion} tokens`],
        [
          "(568 in the messages, 6048 in the completion)",
          `(${ctx.promptTokens} in the messages, ${completion} in the completion)`,
        ],
      ]);
    }
    return undefined;
  };

  return {
    name: "vllm",
    check,
    models() {
      const body = JSON.parse(readFixture(F.models)) as { data: Record<string, unknown>[] };
      for (const m of body.data) {
        m.max_model_len = maxModelLen;
        if (options.model) Object.assign(m, { id: options.model, root: options.model });
      }
      return body;
    },
    completionBudget: (request, ctx) => requestedMaxTokens(request) ?? maxModelLen - ctx.promptTokens,
    streamsUsage: includeUsageRequested,
  };
}
