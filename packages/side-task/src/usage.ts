import type { TurnUsage } from "@loopwright/stream";

/** Which side task made a request: the function the host called. */
export type SideTaskKind = "ask" | "askReply" | "askJson" | "summariser" | "preselect";

/**
 * What one side-task request cost, as `onUsage` is told it: once for every answer a server sent back
 * (a summary asked again after its window ran out, a request sent again past a refusal: each answer
 * its own report).
 */
export interface SideTaskUsage {
  /** The side task that made the request. */
  task: SideTaskKind;
  /** The model the request was sent to, as the endpoint knows it. */
  model: string;
  /**
   * The server's token counts, read as `@loopwright/stream` reads a turn's (`TurnUsage`): `prompt`,
   * `completion`, `total` and `cached` always there, zero where the server reported none; `uncached`
   * and `reasoningTokens` only where it counted them.
   */
  usage: TurnUsage;
}

/** A token count: a number from 0 to 2^53 − 1, or none (as `@loopwright/stream` counts). */
function count(value: unknown): number | undefined {
  return typeof value === "number" && value >= 0 && value <= Number.MAX_SAFE_INTEGER ? value : undefined;
}

function field(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/**
 * A completion's `usage` read into a `TurnUsage`, by the rules `@loopwright/stream` reads a streamed
 * turn's with: the chat spellings, else the Responses ones (`input_tokens`, `output_tokens`); the
 * total as reported, else the sum; the cache count from `prompt_tokens_details.cached_tokens`,
 * DeepSeek's `prompt_cache_hit_tokens` or a top-level `cached_tokens`; anything missing zero.
 */
export function readSideUsage(raw: unknown): TurnUsage {
  const prompt = count(field(raw, "prompt_tokens")) ?? count(field(raw, "input_tokens")) ?? 0;
  const completion = count(field(raw, "completion_tokens")) ?? count(field(raw, "output_tokens")) ?? 0;
  const total = count(field(raw, "total_tokens")) ?? prompt + completion;
  const details = field(raw, "prompt_tokens_details") ?? field(raw, "input_tokens_details");
  const cached =
    count(field(details, "cached_tokens")) ??
    count(field(raw, "prompt_cache_hit_tokens")) ??
    count(field(raw, "cached_tokens"));
  const usage: TurnUsage = { prompt, completion, total, cached: cached ?? 0 };
  const miss = count(field(raw, "prompt_cache_miss_tokens"));
  if (miss !== undefined) usage.uncached = miss;
  else if (cached !== undefined) usage.uncached = Math.max(0, prompt - cached);
  const completionDetails = field(raw, "completion_tokens_details") ?? field(raw, "output_tokens_details");
  const reasoning =
    count(field(completionDetails, "reasoning_tokens")) ?? count(field(raw, "reasoning_tokens"));
  if (reasoning !== undefined) usage.reasoningTokens = reasoning;
  return usage;
}
