import type { CacheBreakReason, TurnMetrics } from "@loopwright/events";
import {
  contextTokens,
  type LedgerEntry,
  type LedgerRequest,
  type RequestBodyLike,
  rebaseLedger,
  recordRequest,
  toolTokens,
} from "@loopwright/ledger";
import type { RequestBody } from "@loopwright/negotiate";
import type { Turn } from "@loopwright/stream";
import type { ChatMessage } from "./config.js";
import { ownField } from "./own.js";

/** The previous request of a run, as the cache and ledger bookkeeping compare against it. */
interface Sent {
  /** The system prompt and the transcript's leading system messages, as one comparable string. */
  system: string;
  tools: string;
  /** The transcript after its leading system messages. */
  history: readonly ChatMessage[];
  prompt: number;
  completion: number;
  /** The model the request named: another model shares no prompt cache with it. */
  model: string;
}

/** Why the prompt cache missed, read off this request against the one before. */
function breakReason(previous: Sent, now: Sent): CacheBreakReason {
  if (now.tools !== previous.tools) return "tools-changed";
  if (now.system !== previous.system) return "system-changed";
  const kept =
    previous.history.length <= now.history.length &&
    previous.history.every(
      (m, i) => m === now.history[i] || JSON.stringify(m) === JSON.stringify(now.history[i]),
    );
  return kept ? "none-known" : "history-rewritten";
}

/**
 * The system part of a request: the run's system prompt and the system (or developer) messages the
 * transcript opens with — a host's `beforeStep` may rewrite those — and the history after them.
 */
function splitSystem(
  system: string,
  transcript: readonly ChatMessage[],
): { system: string; history: ChatMessage[] } {
  let lead = 0;
  while (
    lead < transcript.length &&
    (transcript[lead]?.role === "system" || transcript[lead]?.role === "developer")
  ) {
    lead++;
  }
  return {
    system: JSON.stringify([system, ...transcript.slice(0, lead).map((m) => m.content)]),
    history: transcript.slice(lead),
  };
}

/** One step's request and what came back, as `RunMeasure.measure` reads them. */
export interface MeasuredStep {
  /** The turn as answered (a continued turn's usage is the sum of its pieces). */
  turn: Turn;
  /** What the first request of the step reported: what the ledger, cache check and calibration read. */
  firstUsage: Turn["usage"];
  /** The body as first built (what `onRequest` saw; `context` is cut from it). */
  firstBody: RequestBody;
  /** The body the endpoint answered (after a refusal, a lesser one than the first). */
  answeredBody: RequestBody;
  /** The transcript the request carried, without the system prompt. */
  transcript: readonly ChatMessage[];
  /** The divisor the request was sized with. */
  charsPerToken: number;
  /** The model the request named (a step's plan may name another than the config's). */
  model: string;
}

/**
 * A run's measurements across its steps: the token ledger, the cache expectation against the
 * previous request, and the context breakdown (the calibration reading is `runTurn`'s). Kept apart
 * from the loop so the loop's body is orchestration only.
 */
export class RunMeasure {
  private previous: Sent | undefined;
  private previousForLedger: { request: LedgerRequest; model: string } | undefined;
  /** The ledger so far: one `{ through, prompt, epoch }` per measured request. */
  ledger: LedgerEntry[];

  constructor(
    ledger: readonly LedgerEntry[],
    private readonly system: string,
  ) {
    // The run's first request starts an epoch: the loop cannot see what the run before it sent.
    this.ledger = [...ledger];
  }

  /** Moves the ledger onto a transcript `beforeStep` rewrote. */
  rebase(before: readonly ChatMessage[], after: readonly ChatMessage[]): void {
    this.ledger = rebaseLedger(this.ledger, before, after);
  }

  /**
   * Fills `metrics` with the step's cache, context and tool-block fields and records the step. A
   * request to another model than the one before shares no prompt cache with it (each model's cache
   * is its own): no cache is expected of it, none is said to have broken, and its ledger entry
   * starts a new epoch — its prompt was counted by another tokenizer, so no difference is taken
   * across the change.
   */
  measure(step: MeasuredStep, metrics: TurnMetrics): void {
    const { firstUsage: reported, answeredBody: answered, charsPerToken, model } = step;
    const transcript = [...step.transcript];
    const now: Sent = {
      ...splitSystem(this.system, transcript),
      tools: JSON.stringify(answered.tools ?? []),
      prompt: reported.prompt,
      completion: step.turn.usage.completion,
      model,
    };
    const previous = this.previous;
    if (previous && previous.model === model) {
      metrics.cacheExpected = previous.prompt + previous.completion;
      if (ownField(reported, "uncached") !== undefined && previous.prompt > 0) {
        metrics.cacheBroken = reported.cached < 0.9 * previous.prompt;
        if (metrics.cacheBroken) metrics.cacheBreakReason = breakReason(previous, now);
      }
    }
    const request: LedgerRequest = {
      messages: transcript as LedgerRequest["messages"],
      tools: answered.tools ?? [],
    };
    const before = this.previousForLedger;
    const recorded = recordRequest(this.ledger, before?.model === model ? before.request : undefined, {
      ...request,
      prompt: reported.prompt,
      ...(ownField(reported, "uncached") !== undefined ? { cached: reported.cached } : {}),
    });
    // `previous` is the request the last entry was recorded from: a step with no entry (its prompt
    // not reported) leaves it, so a rewrite made at that step still starts a new epoch.
    if (recorded.length > this.ledger.length) this.previousForLedger = { request, model };
    this.ledger = recorded;
    this.previous = now;
    this.estimate(step.firstBody, charsPerToken, reported.prompt, metrics, answered);
  }

  /**
   * Fills `metrics` with the request's context breakdown (shares of `prompt` where it is above zero,
   * else the estimate) and its tool-block fields, recording nothing: what a step the run was stopped
   * during is given, as well as what `measure` gives an answered one.
   */
  estimate(
    firstBody: RequestBody,
    charsPerToken: number,
    prompt: number,
    metrics: TurnMetrics,
    answered: RequestBody = firstBody,
  ): void {
    metrics.context = contextTokens(firstBody as unknown as RequestBodyLike, {
      charsPerToken,
      ...(prompt > 0 ? { promptTokens: prompt } : {}),
    });
    if (answered.tools?.length) {
      metrics.toolsDeclared = answered.tools.length;
      metrics.toolSchemaTokens = toolTokens(answered.tools, { charsPerToken });
    }
  }
}
