import type { UsageLike } from "./chunk.js";
import { jsonText } from "./errors.js";
import type { DiscardedCount, TurnUsage } from "./turn.js";

/**
 * A token count: a number from 0 to 2^53 - 1. Anything else is none — a count past 2^53 - 1 is no
 * count a server makes (two `1e308`s summed to a total of `Infinity`, `null` in JSON).
 */
function count(value: unknown): number | undefined {
  return typeof value === "number" && value >= 0 && value <= Number.MAX_SAFE_INTEGER ? value : undefined;
}

const COUNTS = [
  "prompt_tokens",
  "completion_tokens",
  "total_tokens",
  "input_tokens",
  "output_tokens",
  "prompt_cache_hit_tokens",
  "prompt_cache_miss_tokens",
  "cached_tokens",
  "reasoning_tokens",
] as const;
const DETAILS = [
  ["prompt_tokens_details", "cached_tokens"],
  ["input_tokens_details", "cached_tokens"],
  ["completion_tokens_details", "reasoning_tokens"],
  ["output_tokens_details", "reasoning_tokens"],
] as const;

/**
 * Whether `value` at `field` of a usage object is a token count: a count where `field` is one of
 * {@link COUNTS}, a details object holding one where it is one of {@link DETAILS}; any other
 * field is not one this package reads, and always counts.
 */
function reportsCount(field: string, value: unknown): boolean {
  if ((COUNTS as readonly string[]).includes(field)) return count(value) !== undefined;
  const inner = DETAILS.find(([name]) => name === field)?.[1];
  if (inner === undefined) return true;
  return (
    !!value && typeof value === "object" && count((value as Record<string, unknown>)[inner]) !== undefined
  );
}

/** Whether `raw` is a usage object with at least one token count in it (`{}` reports nothing). */
export function reportsUsage(raw: unknown): raw is UsageLike {
  if (!raw || typeof raw !== "object") return false;
  const usage = raw as Record<string, unknown>;
  if (COUNTS.some((field) => count(usage[field]) !== undefined)) return true;
  return DETAILS.some(([field, inner]) => {
    const details = usage[field];
    return (
      !!details &&
      typeof details === "object" &&
      count((details as Record<string, unknown>)[inner]) !== undefined
    );
  });
}

/**
 * The fields that spell one count — the chat spelling, the Responses-API one, other servers' — in
 * the order {@link readUsage} prefers them within one usage object.
 */
const SAME_COUNT = [
  ["prompt_tokens", "input_tokens"],
  ["completion_tokens", "output_tokens"],
  ["prompt_tokens_details", "input_tokens_details", "prompt_cache_hit_tokens", "cached_tokens"],
  ["completion_tokens_details", "output_tokens_details", "reasoning_tokens"],
] as const;

/**
 * The usage a turn has read once `next` arrives after `before`: `next`'s counts where it reports them,
 * `before`'s where it does not — a relay that splits the counts over two chunks (the prompt's in an
 * early one, the completion's at the end, as Portkey's Anthropic translation did) keeps both; only
 * the last one was kept, and the prompt read as 0. A total is kept only from the object that brings
 * the counts it adds up, so one that leaves it out has it summed again. A server that sends the
 * whole usage every time (cumulative) reads as its last.
 */
export function laterUsage(before: UsageLike | undefined, next: UsageLike): UsageLike {
  if (!before) return next;
  // No prototype: a `__proto__` key a later object carries as data (JSON.parse keeps it so) is
  // written as a field of its own, never as the prototype its counts would be read from.
  const merged: Record<string, unknown> = Object.assign(Object.create(null), before);
  // A count `next` reports in one spelling is the turn's latest for it: an earlier one in another
  // spelling (`prompt_tokens` before a later `input_tokens`) would be read first and win.
  for (const fields of SAME_COUNT) {
    if (!fields.some((field) => reportsCount(field, next[field]))) continue;
    for (const field of fields) if (!reportsCount(field, next[field])) delete merged[field];
    // DeepSeek's miss count goes with its hit count: a later cache count in another spelling
    // leaves no earlier miss to read the uncached count from.
    if (fields[0] === "prompt_tokens_details" && count(next.prompt_cache_miss_tokens) === undefined)
      delete merged.prompt_cache_miss_tokens;
  }
  for (const [field, value] of Object.entries(next)) {
    if (value === undefined || value === null) continue;
    // A count that is none (`-5`, `"12"`, `1e308`) reports nothing, as a missing one: it never
    // replaces a count an earlier object reported (a prompt of 100 read as 0).
    if (!reportsCount(field, value) && reportsCount(field, merged[field])) continue;
    merged[field] = value;
  }
  if (count(next.total_tokens) === undefined) delete merged.total_tokens;
  return merged as UsageLike;
}

/** The most of a discarded value's text a {@link DiscardedCount} quotes. */
const SENT_CHARS = 40;

/**
 * A value a server sent as a count, as JSON text cut to {@link SENT_CHARS} characters and `…`:
 * never inside a character, and well formed (a lone surrogate half is U+FFFD). A long string is
 * cut before it is written out, so a megabyte sent on every chunk costs a few characters each time.
 */
function sentText(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value.slice(0, SENT_CHARS + 1)) : jsonText(value);
  if (text.length <= SENT_CHARS) return text.toWellFormed();
  let end = SENT_CHARS;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`.toWellFormed();
}

/**
 * Notes in `noted` each count field of the usage object `raw` whose value is no token count (not
 * `null`, which is a count left out): `prompt_tokens` for a top-level one,
 * `prompt_tokens_details.cached_tokens` for one in a details object, `prompt_tokens_details` for
 * a details field that is no object. The last value a field was sent is kept, as text.
 */
export function noteDiscarded(noted: Map<string, string>, raw: unknown): void {
  if (!raw || typeof raw !== "object") return;
  const usage = raw as Record<string, unknown>;
  for (const field of COUNTS) {
    const value = usage[field];
    if (value !== undefined && value !== null && count(value) === undefined)
      noted.set(field, sentText(value));
  }
  for (const [field, inner] of DETAILS) {
    const details = usage[field];
    if (details === undefined || details === null) continue;
    if (typeof details !== "object" || Array.isArray(details)) {
      noted.set(field, sentText(details));
      continue;
    }
    const value = (details as Record<string, unknown>)[inner];
    if (value !== undefined && value !== null && count(value) === undefined)
      noted.set(`${field}.${inner}`, sentText(value));
  }
}

/**
 * Of the fields `noted` holds, those the usage a turn read (`usage`) has no count for: a count
 * sent before or after the discarded value (in another usage object) leaves nothing lost.
 */
export function discardedOf(noted: Map<string, string>, usage: UsageLike | undefined): DiscardedCount[] {
  const read = (usage ?? {}) as Record<string, unknown>;
  const out: DiscardedCount[] = [];
  for (const [path, sent] of noted) {
    const [field = path] = path.split(".", 1);
    if (!reportsCount(field, read[field])) out.push({ field: path, sent });
  }
  return out;
}

/** Usage of a turn whose server reported nothing: every always-present count at zero. */
export function emptyUsage(): TurnUsage {
  return { prompt: 0, completion: 0, total: 0, cached: 0 };
}

/** The count `details` (a usage details object, or whatever was sent there) holds at `inner`, if any. */
function detailCount(details: unknown, inner: string): number | undefined {
  return details && typeof details === "object"
    ? count((details as Record<string, unknown>)[inner])
    : undefined;
}

/**
 * Reads a server's usage object into a {@link TurnUsage}.
 *
 * The cache count comes from `prompt_tokens_details.cached_tokens`, DeepSeek's
 * `prompt_cache_hit_tokens` or a top-level `cached_tokens`, in that order; `uncached` is set only
 * when one of them (or DeepSeek's `prompt_cache_miss_tokens`) was reported. `reasoningTokens` comes
 * from `completion_tokens_details.reasoning_tokens` or a top-level `reasoning_tokens`, and only
 * when reported. The Responses-API spellings (`input_tokens`, `output_tokens` and their details)
 * that some relays pass through are read where the chat ones are missing or hold no count (a
 * negative or string count in `prompt_tokens_details` leaves a good `input_tokens_details` one). Missing or non-numeric
 * counts read as zero (a streamed turn names the ones it discarded, `Turn.discardedUsage`);
 * `total` falls back to the sum.
 */
export function readUsage(raw: UsageLike | null | undefined): TurnUsage {
  if (!raw || typeof raw !== "object") return emptyUsage();
  const prompt = count(raw.prompt_tokens) ?? count(raw.input_tokens) ?? 0;
  const completion = count(raw.completion_tokens) ?? count(raw.output_tokens) ?? 0;
  const total = count(raw.total_tokens) ?? prompt + completion;
  // Each spelling on its own: a bad count in one (`{cached_tokens: -3}`, `"40"`) leaves the other's.
  const cachedReported =
    detailCount(raw.prompt_tokens_details, "cached_tokens") ??
    detailCount(raw.input_tokens_details, "cached_tokens") ??
    count(raw.prompt_cache_hit_tokens) ??
    count(raw.cached_tokens);
  const usage: TurnUsage = { prompt, completion, total, cached: cachedReported ?? 0 };
  const miss = count(raw.prompt_cache_miss_tokens);
  if (miss !== undefined) usage.uncached = miss;
  else if (cachedReported !== undefined) usage.uncached = Math.max(0, prompt - cachedReported);
  const reasoning =
    detailCount(raw.completion_tokens_details, "reasoning_tokens") ??
    detailCount(raw.output_tokens_details, "reasoning_tokens") ??
    count(raw.reasoning_tokens);
  if (reasoning !== undefined) usage.reasoningTokens = reasoning;
  return usage;
}
