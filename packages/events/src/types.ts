/**
 * The events a run emits, as one tagged union on `kind`. The loop emits them; a host forwards
 * them to `emit`, and a watcher reads them back from `watch` with a `seq` added.
 *
 * These are structural: nothing here imports the stream or loop packages, so a host with its own
 * loop can emit the same shapes.
 */

/**
 * A turn's token counts as its endpoint reported them. The four counts are always present and
 * zero where the server sent nothing; every other field is present only where something measured
 * it.
 */
export interface TurnUsage {
  /** Prompt tokens. */
  prompt: number;
  /** Completion tokens. */
  completion: number;
  /** Prompt plus completion, as reported. */
  total: number;
  /** Prompt tokens served from the server's prompt cache. */
  cached: number;
  /** The prompt less `cached`: present only where a cache count was reported at all. */
  uncached?: number;
  /** Reasoning tokens inside `completion`, where the server counted them. */
  reasoningTokens?: number;
}

/**
 * How long a turn took, where something measured it. Servers such as llama.cpp report prefill and
 * decode times and speculative-decoding counts; a client measures time to first token.
 */
export interface TurnTimings {
  /** Milliseconds spent reading the prompt (prefill). */
  prefillMs?: number;
  /** Milliseconds spent generating the reply (decode). */
  decodeMs?: number;
  /** Milliseconds from sending the request to the first chunk that carried something. */
  firstTokenMs?: number;
  /** Milliseconds from sending the request to the end of the reply. */
  totalMs?: number;
  /** Tokens a draft model proposed (speculative decoding). */
  draftTokens?: number;
  /** Of `draftTokens`, how many the main model accepted. */
  draftAccepted?: number;
}

/**
 * The request of one step cut four ways: shares of the prompt the endpoint reported for it, adding
 * up exactly to `total`, or an estimate where it reported none.
 */
export interface ContextBreakdown {
  /** System and developer messages. */
  system: number;
  /** The declared tool schemas. */
  tools: number;
  /** Every other message, tool-call arguments included. */
  history: number;
  /** The tool messages. */
  toolResults: number;
  /** The four parts added up. */
  total: number;
}

/**
 * Why a turn's prompt cache hit fell short, read off the request against the one before:
 * the tool array changed, the system prompt changed, earlier history was rewritten, or the request
 * only appended and the server dropped the cache on its own (`none-known`).
 */
export type CacheBreakReason = "tools-changed" | "system-changed" | "history-rewritten" | "none-known";

/** One entry of the token ledger a usage event carries: `{ through, prompt, epoch }`. */
export interface LedgerEntryLike {
  /** Index of the request's last message. */
  through: number;
  /** The prompt tokens the endpoint reported for it. */
  prompt: number;
  /** Changes whenever a request did more than append to the one before. */
  epoch: number;
}

/** What one turn cost and how it ended, as the usage event's `turn` carries it. */
export interface TurnMetrics {
  /** The turn's own token counts. */
  usage: TurnUsage;
  /**
   * `"stop"`, `"tool_calls"`, `"length"` (cut off: at the ceiling, the server's own limit or a full
   * window), or `""` where the server never said.
   */
  finishReason: string;
  /**
   * The model the turn's request named (`@loopwright/loop`: `config.model`, or the one the step's
   * plan named), so a watcher can tell which model each turn's tokens went to; absent from a writer
   * that does not say.
   */
  model?: string;
  /** Where the turn's time went, where measured. */
  timings?: TurnTimings;
  /** The request cut into system / tools / history / toolResults. */
  context?: ContextBreakdown;
  /** How many tools the request declared. */
  toolsDeclared?: number;
  /** The estimated tokens of the declared tool schemas. */
  toolSchemaTokens?: number;
  /**
   * From the second request on, where it named the model the request before named: the previous
   * prompt plus its reply, which a warm cache would hold. Absent after a change of model, a step
   * back to a model an earlier step used included (whether that model's prefix is still held depends
   * on the server's slots, which the loop cannot see).
   */
  cacheExpected?: number;
  /**
   * Where a cache count was reported and `cacheExpected` is set: the hit fell short of 90% of the
   * previous prompt.
   */
  cacheBroken?: boolean;
  /** Why, where `cacheBroken` is true. */
  cacheBreakReason?: CacheBreakReason;
  /**
   * Set where the run was stopped (its host's signal) during this turn, so it ended in this usage
   * event rather than in an answer. `usage` is then only what the endpoint reported before the stop
   * (a cut-off reply's first piece that a continuation was carrying on; zero where the stream was
   * stopped before its usage came, though the server may have billed part of the prompt and reply),
   * `finishReason` is `""`, and `context`, where the request had been built, is the estimate of it.
   */
  stopped?: true;
  /**
   * Set where the turn failed without a stop — its stream dropped or went silent, the server
   * refused or erred past the retries, the request did not fit the window — so it ended in this
   * usage event, and the run's `error` event follows. As with `stopped`: `usage` is only what the
   * endpoint reported before the failure (a cut-off reply's first piece that a continuation was
   * carrying on; else zero, though the server may have billed part of it), `finishReason` is `""`,
   * and `context`, where the request had been built, is the estimate of it.
   */
  failed?: true;
}

/** Token totals of a run so far. */
export interface RunUsageTotals {
  prompt: number;
  completion: number;
  total: number;
  cached: number;
}

/**
 * What a run's side tasks cost so far, apart from its turns' `usage`: the sum of every side request,
 * and the same for the compaction summaries (`summary`) and the preselection (`preselect`). The
 * `sideUsage` that `@loopwright/loop` writes on its `usage` and `error` events (its `SideUsage`), so a
 * watcher reads it from the event `watch` hands it, with no cast.
 */
export interface SideUsageTotals extends RunUsageTotals {
  /** The compaction summaries. */
  summary: RunUsageTotals;
  /** The tool preselection. */
  preselect: RunUsageTotals;
}

/** Answer text as it streams, one delta per event. */
export interface OutputEvent {
  kind: "output";
  text: string;
}

/** Reasoning (the model's scratchpad) as it streams, one delta per event. */
export interface ThinkingEvent {
  kind: "thinking";
  text: string;
}

/**
 * The last `chars` characters of answer text already sent as `output` turned out to be reasoning
 * (a lone closing `</think>`: the chat template opened the scratchpad in the prompt). A display
 * takes them back from the end of the answer it drew; the same text follows as `thinking`.
 *
 * The count is within the current turn: it may span several of the turn's `output` runs (text
 * broken by reasoning, or an answer cut off at the ceiling and carried on after a notice), never
 * the turn before, a tool call or anything earlier. `fold` takes it from the turn's text blocks
 * back to front and stops at the turn's start, a tool card or a gap notice (a watcher that missed
 * some of the turn's `output` takes back only what it drew after the gap).
 */
export interface RetractEvent {
  kind: "retract";
  /** How many characters (UTF-16 code units, as `String#length` counts) to take back. */
  chars: number;
}

/**
 * The last `chars` characters of reasoning already sent as `thinking` in the current turn were not
 * the turn's reasoning after all: a tool call the model wrote as text, with a `<think>` or `</think>`
 * inside its arguments, was drawn as reasoning before the loop recovered the call. A display takes
 * them back from the end of the reasoning it drew; the reasoning the transcript keeps in their place,
 * if any, follows as `thinking`.
 *
 * Within the current turn as `retract` is (its reasoning blocks back to front, never past the turn's
 * start, a tool card or a gap notice), but it touches only reasoning, never the answer: a watcher
 * that does not know this kind may ignore it and only keeps drawing reasoning the transcript does
 * not hold.
 */
export interface ThinkingRetractEvent {
  kind: "thinking-retract";
  /** How many characters (UTF-16 code units, as `String#length` counts) to take back. */
  chars: number;
}

/** A step's request is about to be sent: the start of a turn. */
export interface TurnEvent {
  kind: "turn";
  /** The step number, from 1. */
  step: number;
}

/** The model asked for a tool. `args` is the arguments as text, possibly cut short for display. */
export interface ToolCallEvent {
  kind: "tool-call";
  /** The call's id: distinct within a step, and the same on its `tool-result`. */
  id: string;
  name: string;
  args: string;
}

/** A tool call's answer. `content` is the text the model reads, possibly cut short for display. */
export interface ToolResultEvent {
  kind: "tool-result";
  /** The id of the `tool-call` this answers. */
  id: string;
  name: string;
  /** False where the tool failed (its error is what the model reads). */
  ok: boolean;
  content: string;
  /** How long the tool ran, in milliseconds, where measured. */
  ms?: number;
}

/**
 * Every turn ends in one, whether or not the endpoint reported tokens — a turn the run was stopped
 * during too, marked `turn.stopped`, and one that failed, marked `turn.failed`.
 */
export interface UsageEvent {
  kind: "usage";
  /** The run's totals so far. */
  usage: RunUsageTotals;
  /** This turn's own usage, finish reason, timings and context breakdown. */
  turn: TurnMetrics;
  /** The token ledger so far, where the loop keeps one. */
  ledger?: readonly LedgerEntryLike[];
  /**
   * What the run's side tasks cost so far, apart from `usage` and `turn` (which are the turns' own);
   * absent until a side task was answered. Written by `@loopwright/loop`.
   */
  sideUsage?: SideUsageTotals;
}

/** Something a person watching should be told: a retry, a cut-off reply, a gap in the stream. */
export interface NoticeEvent {
  kind: "notice";
  text: string;
  /**
   * Set on the notice `watch` inserts for a slow watcher: how many events it skipped. Its `seq` is
   * that of the last skipped event, so it is unique only within that watcher. Only a watcher sets
   * it: `emit` leaves it out of a host's notice (as it sets `seq` itself), so a notice read from a
   * bus, or from the JSON of one, with `dropped` is a gap notice.
   */
  dropped?: number;
}

/** The run failed. */
export interface ErrorEvent {
  kind: "error";
  /** One line describing the failure. */
  message: string;
  /**
   * What the run's side tasks cost in all by its end, where they cost anything (absent where it is
   * all zero). Written by `@loopwright/loop`, as `failedRun(error).sideUsage` says.
   */
  sideUsage?: SideUsageTotals;
}

/** The run is over: the last event a watcher receives. */
export interface DoneEvent {
  kind: "done";
  /**
   * True where the run ended because its host or user stopped it (an abort), not because the model
   * answered or the run failed; `runMetrics` then gives the outcome `stopped`. Absent otherwise.
   */
  stopped?: true;
}

/** Every event a run emits, tagged by `kind`. */
export type RunEvent =
  | OutputEvent
  | ThinkingEvent
  | RetractEvent
  | ThinkingRetractEvent
  | TurnEvent
  | ToolCallEvent
  | ToolResultEvent
  | UsageEvent
  | NoticeEvent
  | ErrorEvent
  | DoneEvent;

/** An event as `emit` stored it: the same fields plus `seq`, the run's counter from 1. */
export type SequencedEvent<E extends { kind: string } = RunEvent> = E & { readonly seq: number };
