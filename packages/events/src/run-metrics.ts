import { checkMetricsArguments } from "./errors.js";
import { held } from "./held.js";
import type { CacheBreakReason, RunEvent, RunUsageTotals, TurnMetrics } from "./types.js";

/** How a run ended, as far as its events say. */
export type RunOutcome = "completed" | "failed" | "stopped" | "unfinished";

/**
 * What a run cost, added up from its events. The counts, `tokens` and `outcome` are always
 * present; every other field is absent where no event reported what it is made of.
 */
export interface RunMetrics {
  /**
   * Turns: one per `usage` event. A turn its host stopped ends in one too (`turn.stopped`), and one
   * that failed (`turn.failed`), with the tokens its endpoint reported before that, so a stopped or
   * failed run's `tokens` are what it says it cost.
   */
  turns: number;
  /** `tool-call` events. */
  toolCalls: number;
  /** `tool-result` events with `ok: false`. */
  toolErrors: number;
  /** Turns that stopped at the token ceiling (`finishReason: "length"`). */
  cutOff: number;
  /** Turns whose prompt cache broke (`cacheBroken`). */
  cacheBreaks: number;
  /** `notice` events. */
  notices: number;
  /** `error` events. */
  errors: number;
  /** Each turn's own token counts, added up (zero where nothing was reported). */
  tokens: RunUsageTotals;
  /**
   * `stopped` after a `done` marked `stopped: true` (the run was stopped by its host or user, whatever
   * came before), else `failed` after an `error` event, `completed` after a `done` without one,
   * `unfinished` otherwise.
   */
  outcome: RunOutcome;
  /** Reasoning tokens, over the turns that reported them. */
  reasoningTokens?: number;
  /** Cached over prompt tokens, over the turns that reported a cache count. */
  cacheHitRatio?: number;
  /** Cache breaks counted by reason, where any turn gave one. */
  cacheBreaksByReason?: Partial<Record<CacheBreakReason, number>>;
  /** Prefill time summed over the turns that reported it. */
  prefillMs?: number;
  /** Decode time summed over the turns that reported it. */
  decodeMs?: number;
  /** Tool time summed over the results that reported it. */
  toolMs?: number;
  /** The longest turn (`turn` counts from 1), by its total time or else prefill plus decode. */
  slowestTurn?: { turn: number; ms: number };
  /** Mean time to first token over the turns that reported it. */
  meanFirstTokenMs?: number;
  /** Accepted over drafted tokens, where speculative decoding was reported. */
  draftAcceptance?: number;
  /** The turn with the largest prompt; `share` of `contextLength` where one was given. */
  largestPrompt?: { turn: number; tokens: number; share?: number };
  /** Failed tool results counted by tool name. */
  toolErrorsByName?: Record<string, number>;
}

/** Options for {@link runMetrics}. */
export interface RunMetricsOptions {
  /** The window, to put the largest prompt against. Ignored unless a positive number. */
  contextLength?: number | undefined;
}

/**
 * What the metrics being counted hold so far under `key`: their own field, never one a polluted
 * `Object.prototype` holds (`toolMs = "x"` made every run's tool time a string).
 */
function so<K extends keyof RunMetrics>(metrics: RunMetrics, key: K): RunMetrics[K] | undefined {
  return Object.hasOwn(metrics, key) ? metrics[key] : undefined;
}

function count(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** `String(value)`, or a stand-in where that throws (a symbol, a null-prototype object, a Proxy). */
function safeString(value: unknown): string {
  try {
    return typeof value === "symbol" ? value.toString() : String(value);
  } catch {
    return "(unnamed)";
  }
}

/**
 * A count or a duration as reported: a number from 0 to 2^53 - 1. A negative one (a server's -1
 * for "not counted") would be subtracted from the run's totals, and sums of ones past 2^53 (1e308)
 * reach Infinity; neither is a reading, so neither is counted.
 */
const num = (value: unknown): number | undefined =>
  typeof value === "number" && value >= 0 && value <= Number.MAX_SAFE_INTEGER ? value : undefined;

/**
 * Adds a run up from its events: tokens, cache hit ratio and breaks by reason, prefill, decode and
 * tool time, the slowest turn, mean time to first token, draft acceptance, the largest prompt
 * (against `contextLength`), turns cut off, tool errors by name, and an outcome. Pure; never
 * throws on malformed events (what it cannot read is not counted, nor is a count or a time that is
 * negative or past 2^53 - 1; an event that throws while it is read, at any depth read, counts for
nothing at all, and each field is read once). A stopped run is told by its
 * `done` (`stopped: true`, as the host that stopped it marks it); whether the host compacted is not in
 * the events. Throws
 * `EventsError` (`invalid-argument`) when `events` is not iterable, `options` is given and is
 * not an object (`null` included) or throws when read, or `contextLength` is given and is not a
 * finite number above 0.
 */
export function runMetrics(events: Iterable<RunEvent>, options?: RunMetricsOptions): RunMetrics {
  // contextLength read once, there: a getter that throws is the caller's error, not a malformed event to skip.
  const window = checkMetricsArguments(events, options);
  const metrics: RunMetrics = {
    turns: 0,
    toolCalls: 0,
    toolErrors: 0,
    cutOff: 0,
    cacheBreaks: 0,
    notices: 0,
    errors: 0,
    tokens: { prompt: 0, completion: 0, total: 0, cached: 0 },
    outcome: "unfinished",
  };
  let done = false;
  let stopped = false;
  let cacheCached = 0;
  let cachePrompt = 0;
  let cacheReported = false;
  let firstTokenSum = 0;
  let firstTokenCount = 0;
  let drafted = 0;
  let accepted = 0;
  let draftReported = false;
  // Counted in Maps: a tool named `toString` or `__proto__` is a name like any other.
  const errorsByName = new Map<string, number>();
  const breaksByReason = new Map<string, number>();

  for (const event of events) {
    let read: RunEvent;
    try {
      read = readEvent(event);
    } catch {
      // An event a getter or Proxy will not let be read is not counted: read whole before any of it
      // is, so none of it is (a usage event's turn was counted before its tokens threw).
      continue;
    }
    countEvent(read);
  }

  function countEvent(event: RunEvent): void {
    switch (event?.kind) {
      case "usage": {
        metrics.turns++;
        // No prototype: a turn left out has no fields, not a polluted Object.prototype's.
        const turn = (event.turn ?? Object.create(null)) as Partial<TurnMetrics>;
        addTurn(metrics, turn, metrics.turns, window, breaksByReason);
        const usage = turn.usage;
        // `uncached` is there wherever a cache count was reported, zero included; a host with its
        // own loop may send only `cached`, which counts as reported once it is above zero.
        if (usage && (num(usage.uncached) !== undefined || (num(usage.cached) ?? 0) > 0)) {
          cacheReported = true;
          cacheCached += num(usage.cached) ?? 0;
          cachePrompt += num(usage.prompt) ?? 0;
        }
        const timings = turn.timings;
        const firstToken = num(timings?.firstTokenMs);
        if (firstToken !== undefined) {
          firstTokenSum += firstToken;
          firstTokenCount++;
        }
        const draftTokens = num(timings?.draftTokens);
        if (draftTokens !== undefined) {
          draftReported = true;
          drafted += draftTokens;
          accepted += num(timings?.draftAccepted) ?? 0;
        }
        break;
      }
      case "tool-call":
        metrics.toolCalls++;
        break;
      case "tool-result": {
        const ms = num(event.ms);
        if (ms !== undefined) metrics.toolMs = (so(metrics, "toolMs") ?? 0) + ms;
        if (event.ok === false) {
          metrics.toolErrors++;
          count(errorsByName, typeof event.name === "string" ? event.name : safeString(event.name));
        }
        break;
      }
      case "notice":
        metrics.notices++;
        break;
      case "error":
        metrics.errors++;
        break;
      case "done":
        done = true;
        if ((event as { stopped?: unknown }).stopped === true) stopped = true;
        break;
      default:
        break;
    }
  }

  // Object.fromEntries defines own properties, so `__proto__` stays a key.
  if (errorsByName.size > 0) metrics.toolErrorsByName = Object.fromEntries(errorsByName);
  if (breaksByReason.size > 0) {
    metrics.cacheBreaksByReason = Object.fromEntries(breaksByReason) as Partial<
      Record<CacheBreakReason, number>
    >;
  }
  if (cacheReported && cachePrompt > 0) metrics.cacheHitRatio = cacheCached / cachePrompt;
  if (firstTokenCount > 0) metrics.meanFirstTokenMs = firstTokenSum / firstTokenCount;
  if (draftReported && drafted > 0) metrics.draftAcceptance = accepted / drafted;
  metrics.outcome = stopped ? "stopped" : metrics.errors > 0 ? "failed" : done ? "completed" : "unfinished";
  return metrics;
}

/** The fields `runMetrics` reads, at each depth of an event. */
const EVENT_FIELDS = ["kind", "turn", "ms", "ok", "name", "stopped"] as const;
const TURN_FIELDS = ["usage", "timings", "finishReason", "cacheBroken", "cacheBreakReason"] as const;
const USAGE_FIELDS = ["prompt", "completion", "total", "cached", "uncached", "reasoningTokens"] as const;
const TIMING_FIELDS = [
  "prefillMs",
  "decodeMs",
  "totalMs",
  "firstTokenMs",
  "draftTokens",
  "draftAccepted",
] as const;

/**
 * `value`'s `fields` (its own, or its class's: see {@link held}) read once into an object with no
 * prototype, so a field left out reads as `undefined`; `undefined` when `value` is not an object or a
 * function: a field read on a number or a string (a `turn: 5`) is its wrapper's, and so a polluted
 * Object.prototype's (`finishReason = "length"` cut off every turn sent so).
 */
function pick(value: unknown, fields: readonly string[]): unknown {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return undefined;
  const copy = Object.create(null) as Record<string, unknown>;
  for (const field of fields) {
    if (!held(value, field)) continue;
    const read = (value as Record<string, unknown>)[field];
    if (read !== undefined) copy[field] = read;
  }
  return copy;
}

/**
 * Every field `runMetrics` reads of `event`, read once into plain objects; throws what a getter or a
 * revoked Proxy throws, before anything of the event is counted.
 */
function readEvent(event: unknown): RunEvent {
  const read = pick(event, EVENT_FIELDS) as Record<string, unknown> | null | undefined;
  if (typeof read !== "object" || read === null || read.kind !== "usage") return read as unknown as RunEvent;
  const turn = pick(read.turn, TURN_FIELDS);
  if (typeof turn === "object" && turn !== null) {
    const fields = turn as Record<string, unknown>;
    if ("usage" in fields) fields.usage = pick(fields.usage, USAGE_FIELDS);
    if ("timings" in fields) fields.timings = pick(fields.timings, TIMING_FIELDS);
  }
  return Object.assign(Object.create(null) as Record<string, unknown>, read, { turn }) as unknown as RunEvent;
}

function addTurn(
  metrics: RunMetrics,
  turn: Partial<TurnMetrics>,
  index: number,
  window: number | undefined,
  breaksByReason: Map<string, number>,
): void {
  const usage = turn.usage;
  const prompt = num(usage?.prompt) ?? 0;
  metrics.tokens.prompt += prompt;
  metrics.tokens.completion += num(usage?.completion) ?? 0;
  metrics.tokens.total += num(usage?.total) ?? 0;
  metrics.tokens.cached += num(usage?.cached) ?? 0;
  const reasoning = num(usage?.reasoningTokens);
  if (reasoning !== undefined) metrics.reasoningTokens = (so(metrics, "reasoningTokens") ?? 0) + reasoning;

  if (turn.finishReason === "length") metrics.cutOff++;
  if (turn.cacheBroken === true) {
    metrics.cacheBreaks++;
    if (typeof turn.cacheBreakReason === "string") count(breaksByReason, turn.cacheBreakReason);
  }

  const timings = turn.timings;
  const prefill = num(timings?.prefillMs);
  const decode = num(timings?.decodeMs);
  if (prefill !== undefined) metrics.prefillMs = (so(metrics, "prefillMs") ?? 0) + prefill;
  if (decode !== undefined) metrics.decodeMs = (so(metrics, "decodeMs") ?? 0) + decode;
  const ms =
    num(timings?.totalMs) ??
    (prefill !== undefined || decode !== undefined ? (prefill ?? 0) + (decode ?? 0) : undefined);
  const slowest = so(metrics, "slowestTurn");
  if (ms !== undefined && (!slowest || ms > slowest.ms)) {
    metrics.slowestTurn = { turn: index, ms };
  }

  if (usage && num(usage.prompt) !== undefined && prompt > 0) {
    const largest = so(metrics, "largestPrompt");
    if (!largest || prompt > largest.tokens) {
      metrics.largestPrompt = {
        turn: index,
        tokens: prompt,
        ...(window !== undefined && window > 0 ? { share: prompt / window } : {}),
      };
    }
  }
}
