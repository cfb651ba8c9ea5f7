/**
 * The `vllm` personality: vLLM's OpenAI-compatible server — `max_model_len` in `/v1/models` and its
 * refusals, from `models/vllm.json` and `errors/vllm/`: the legacy top-level `{"object":"error"}`
 * bodies by default, or the nested `{"error": {…}}` bodies of newer releases.
 */
import { readFixture } from "../fixtures.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply } from "../replies.js";
import { flag, nonEmptyString, type OptionRule, oneOf, ownOptions, positiveWhole } from "./options.js";
import {
  type HttpAnswer,
  type Personality,
  type PersonalityContext,
  requestedChoices,
} from "./personality.js";
import { includeUsageRequested, isRecord, jsonError, requestedMaxTokens, swap } from "./recorded.js";

/** Options of {@link vllmPersonality}. */
export interface VllmPersonalityOptions {
  /** The server's `--max-model-len` (default 8096, as recorded). */
  maxModelLen?: number | null | undefined;
  /** The served model id (default the recorded `meta-llama/Meta-Llama-3.1-8B-Instruct`). */
  model?: string | null | undefined;
  /** Started with `--enable-auto-tool-choice --tool-call-parser` (default true). */
  autoToolChoice?: boolean | null | undefined;
  /**
   * Error bodies: `"legacy"` (default) — top-level `{"object":"error", message, type, param, code}`
   * as recorded from vLLM before 0.10; `"nested"` — `{"error": {message, type, param, code}}` with the
   * newer overflow wordings (vLLM 0.10 and later).
   */
  errorFormat?: "legacy" | "nested" | null | undefined;
  /**
   * Refuse a request whose `model` is not the served id with vLLM's 404 "The model `x` does not
   * exist." (`NotFoundError`, code 404). Default false, so scripts may name any model.
   */
  refuseUnknownModels?: boolean | null | undefined;
}

const F = {
  models: "models/vllm.json",
  overflow: "errors/vllm/context-length-legacy-top-level-object-error.json",
  autoTool: "errors/vllm/auto-tool-choice-requires-flags.json",
  maxTokens: "errors/vllm/max-tokens-negative-legacy-top-level.json",
} as const;

/** Every fixture the vllm personality reads, for the README and tests. */
export const VLLM_FIXTURES: readonly string[] = Object.values(F);

/** The recorded legacy body with its message replaced (`pairs` swapped into the recorded one). */
function recordedBody(rel: string, message: (recorded: string) => string): Record<string, unknown> {
  const body = JSON.parse(readFixture(rel)) as Record<string, unknown>;
  body.message = message(String(body.message));
  return body;
}

/** What each option of {@link vllmPersonality} must be. */
const VLLM_OPTION_RULES: Record<keyof VllmPersonalityOptions, OptionRule> = {
  maxModelLen: positiveWhole,
  model: nonEmptyString,
  autoToolChoice: flag,
  errorFormat: oneOf("legacy", "nested"),
  refuseUnknownModels: flag,
};

/**
 * Makes the `vllm` personality.
 *
 * Refuses, in order: an unknown model (with `refuseUnknownModels`), `max_tokens` below 1 (recorded body), tools with `tool_choice` auto (or none
 * given) when `autoToolChoice` is false, and a context overflow. With `max_completion_tokens` or
 * `max_tokens` sent, prompt + that > `maxModelLen` is refused with the recorded "you requested N
 * tokens (P in the messages, M in the completion)"; with neither, a prompt of `maxModelLen` tokens
 * or more gets vLLM's "you requested P tokens in the messages, Please reduce the length of the
 * messages." The `nested` format uses the newer wordings ("your request has P input tokens",
 * "'max_tokens' or 'max_completion_tokens' is too large"). `GET /v1/models` is the recorded listing
 * with `max_model_len` and the id set from the options. Unknown routes answer FastAPI's
 * `{"detail":"Not Found"}` (404) or `{"detail":"Method Not Allowed"}` (405).
 */
export function vllmPersonality(given: VllmPersonalityOptions = {}): Personality {
  const options = ownOptions("vllm personality", given, VLLM_OPTION_RULES);
  const maxModelLen = options.maxModelLen ?? 8096;
  const nested = options.errorFormat === "nested";

  /** A legacy body as sent, or its fields moved under `error` for the nested format. */
  const refuse = (body: Record<string, unknown>, verbatim?: string, status = 400): ErrorReply => {
    if (!nested) return jsonError(status, verbatim ?? JSON.stringify(body));
    const { object: _object, ...fields } = body;
    return jsonError(status, JSON.stringify({ error: fields }));
  };

  const servedId = (): string => {
    if (options.model) return options.model;
    const listed = JSON.parse(readFixture(F.models)) as { data: { id: string }[] };
    return listed.data[0]?.id ?? "";
  };

  const overflow = (prompt: number, completion: number | undefined): ErrorReply => {
    if (completion === undefined) {
      // vLLM <0.10 serving_engine.py (_validate_input, max_tokens None): "… However, you requested
      // {token_num} tokens in the messages, Please reduce the length of the messages." (comma sic);
      // vLLM 0.10+: "… However, your request has {token_num} input tokens. Please reduce the length
      // of the input messages." (quoted in vllm-project/vllm issues and client tests).
      const tail = nested
        ? ` However, your request has ${prompt} input tokens. Please reduce the length of the input messages.`
        : ` However, you requested ${prompt} tokens in the messages, Please reduce the length of the messages.`;
      return refuse(
        recordedBody(F.overflow, (m) => {
          const head = swap(
            m,
            [["maximum context length is 6048 tokens", `maximum context length is ${maxModelLen} tokens`]],
            F.overflow,
          );
          return head.slice(0, head.indexOf(" However,")) + tail;
        }),
      );
    }
    if (nested) {
      // vLLM 0.10+ (e.g. as quoted in andrewcho-dev/opsconductor-ng@vLLM_transition/TOKEN_LIMIT_FIX.md).
      const message = `'max_tokens' or 'max_completion_tokens' is too large: ${completion}. This model's maximum context length is ${maxModelLen} tokens and your request has ${prompt} input tokens (${completion} > ${maxModelLen} - ${prompt}).`;
      return refuse(recordedBody(F.overflow, () => message));
    }
    return refuse(
      recordedBody(F.overflow, (m) =>
        swap(
          m,
          [
            ["maximum context length is 6048 tokens", `maximum context length is ${maxModelLen} tokens`],
            ["you requested 6616 tokens", `you requested ${prompt + completion} tokens`],
            [
              "(568 in the messages, 6048 in the completion)",
              `(${prompt} in the messages, ${completion} in the completion)`,
            ],
          ],
          F.overflow,
        ),
      ),
    );
  };

  const check = (request: RecordedRequest, ctx: PersonalityContext): ErrorReply | undefined => {
    const body = request.body;
    if (!isRecord(body)) return undefined;
    if (options.refuseUnknownModels && body.model !== servedId()) {
      // vllm-project/vllm@0030b9ff:vllm/entrypoints/openai/serving_engine.py (_check_model).
      const message = `The model \`${String(body.model)}\` does not exist.`;
      return refuse(
        { object: "error", message, type: "NotFoundError", param: null, code: 404 },
        undefined,
        404,
      );
    }
    const maxTokens = requestedMaxTokens(request);
    if (maxTokens !== undefined && maxTokens < 1) {
      return refuse(
        recordedBody(F.maxTokens, (m) => swap(m, [["got -186", `got ${maxTokens}`]], F.maxTokens)),
      );
    }
    const toolChoice = body.tool_choice ?? "auto";
    if (options.autoToolChoice === false && Array.isArray(body.tools) && toolChoice === "auto") {
      const text = readFixture(F.autoTool);
      return refuse(JSON.parse(text) as Record<string, unknown>, text);
    }
    const tooLong =
      maxTokens === undefined ? ctx.promptTokens >= maxModelLen : ctx.promptTokens + maxTokens > maxModelLen;
    if (tooLong) return overflow(ctx.promptTokens, maxTokens);
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
    // vLLM's routes are FastAPI's: Starlette answers an unknown path and a wrong method itself.
    notFound: (_request, allowed): HttpAnswer =>
      allowed.length > 0
        ? { status: 405, body: { detail: "Method Not Allowed" }, headers: { allow: allowed.join(", ") } }
        : { status: 404, body: { detail: "Not Found" } },
    completionBudget: (request, ctx) => requestedMaxTokens(request) ?? maxModelLen - ctx.promptTokens,
    streamsUsage: includeUsageRequested,
    choices: requestedChoices,
  };
}
