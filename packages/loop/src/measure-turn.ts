import type { CacheBreakReason, TurnMetrics } from "@loopwright/events";
import {
  type Calibration,
  contextTokens,
  type LedgerEntry,
  type LedgerRequest,
  type RequestBodyLike,
  rebaseLedger,
  recordRequest,
  toolTokens,
} from "@loopwright/ledger";
import type { EndpointCapabilities, RequestBody } from "@loopwright/negotiate";
import type { Turn } from "@loopwright/stream";
import type { ChatMessage } from "./config.js";

/** The previous request of a run, as the cache and ledger bookkeeping compare against it. */
interface Sent {
  system: string;
  tools: string;
  messages: readonly ChatMessage[];
  prompt: number;
  completion: number;
}

/** Why the prompt cache missed, read off this request against the one before. */
function breakReason(
  previous: Sent,
  system: string,
  tools: string,
  messages: readonly ChatMessage[],
): CacheBreakReason {
  if (tools !== previous.tools) return "tools-changed";
  if (system !== previous.system) return "system-changed";
  const kept =
    previous.messages.length <= messages.length &&
    previous.messages.every((m, i) => m === messages[i] || JSON.stringify(m) === JSON.stringify(messages[i]));
  return kept ? "none-known" : "history-rewritten";
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
}

/**
 * A run's measurements across its steps: the token ledger, the cache expectation against the
 * previous request, the calibration reading, and the context breakdown. Kept apart from the loop
 * so the loop's body is orchestration only.
 */
export class RunMeasure {
  private previous: Sent | undefined;
  private previousForLedger: LedgerRequest | undefined;
  /** The ledger so far: one `{ through, prompt, epoch }` per measured request. */
  ledger: LedgerEntry[];

  constructor(
    ledger: readonly LedgerEntry[],
    private readonly calibration: Pick<Calibration, "calibrate">,
    private readonly supports: EndpointCapabilities,
    private readonly model: string,
    private readonly system: string,
  ) {
    // The run's first request starts an epoch: the loop cannot see what the run before it sent.
    this.ledger = [...ledger];
  }

  /** Moves the ledger onto a transcript `beforeStep` rewrote. */
  rebase(before: readonly ChatMessage[], after: readonly ChatMessage[]): void {
    this.ledger = rebaseLedger(this.ledger, before, after);
  }

  /** Fills `metrics` with the step's cache, context and tool-block fields and records the step. */
  measure(step: MeasuredStep, metrics: TurnMetrics): void {
    const { firstUsage: reported, answeredBody: answered, charsPerToken } = step;
    const transcript = [...step.transcript];
    const toolsText = JSON.stringify(answered.tools ?? []);
    const previous = this.previous;
    if (previous) {
      metrics.cacheExpected = previous.prompt + previous.completion;
      if (reported.uncached !== undefined && previous.prompt > 0) {
        metrics.cacheBroken = reported.cached < 0.9 * previous.prompt;
        if (metrics.cacheBroken) {
          metrics.cacheBreakReason = breakReason(previous, this.system, toolsText, transcript);
        }
      }
    }
    const request: LedgerRequest = {
      messages: transcript as LedgerRequest["messages"],
      tools: answered.tools ?? [],
    };
    this.ledger = recordRequest(this.ledger, this.previousForLedger, {
      ...request,
      prompt: reported.prompt,
      ...(reported.uncached !== undefined ? { cached: reported.cached } : {}),
    });
    this.previousForLedger = request;
    this.previous = {
      system: this.system,
      tools: toolsText,
      messages: transcript,
      prompt: reported.prompt,
      completion: step.turn.usage.completion,
    };
    // The messages are ChatMessages; the ledger package reads them structurally.
    if (reported.prompt > 0) {
      this.calibration.calibrate(
        this.supports,
        this.model,
        answered as unknown as RequestBodyLike,
        reported.prompt,
      );
    }
    metrics.context = contextTokens(step.firstBody as unknown as RequestBodyLike, {
      charsPerToken,
      ...(reported.prompt > 0 ? { promptTokens: reported.prompt } : {}),
    });
    if (answered.tools?.length) {
      metrics.toolsDeclared = answered.tools.length;
      metrics.toolSchemaTokens = toolTokens(answered.tools, { charsPerToken });
    }
  }
}
