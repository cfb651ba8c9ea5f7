import type { BeforeCompactInput } from "@loopwright/ledger";

/**
 * A point in a session where a host runs hooks. `sessionStart` and `beforeTurn` may add context to
 * the request; `afterTurn`, `beforeCompact`, `sessionEnd` and `sessionDelete` only read what happened
 * (a `beforeCompact` hook may also ask for the fold not to happen).
 */
export type HookEvent =
  | "sessionStart"
  | "beforeTurn"
  | "afterTurn"
  | "beforeCompact"
  | "sessionEnd"
  | "sessionDelete";

/** The events whose hooks may add context to the request: what `gather` runs. */
export type InjectingHookEvent = "sessionStart" | "beforeTurn";

/** The events whose hooks only read what happened: what `notify` runs. */
export type NotifyingHookEvent = Exclude<HookEvent, InjectingHookEvent>;

/** One message as `turnMessages` hands it to a hook: plain text, with a stable id. */
export interface HookMessage {
  /**
   * A UUID derived from the session and the message's stored index, so the same message has the
   * same uuid every time it is handed over, before a fold and after it.
   */
  uuid: string;
  /** The message's index in the host's stored transcript. */
  index: number;
  role: string;
  /**
   * The content's text (text parts joined; images and other media left out). An assistant's refusal
   * is its text: a `refusal` part, and the message's own `refusal` on a line after any content.
   */
  content: string;
  /** An assistant's tool calls: name and arguments as sent (arguments a host stored parsed, as their JSON). */
  toolCalls?: { id?: string; name: string; arguments: string }[];
  /** A tool result's call id. */
  toolCallId?: string;
}

/**
 * What the `sessionStart` and `beforeTurn` hooks are told. Every field is optional, here and in the
 * other inputs: `undefined` is taken as given (a hook server reads the input as JSON, where it is
 * absent), so a host hands over what it may not have without spreading it in.
 */
export interface TurnHookInput {
  /** The question as the user typed it. */
  prompt?: string | undefined;
  /** The turn's index, as `turnIndex` counts it. */
  turn?: number | undefined;
  /** The turn's messages, as `turnMessages` hands them over. */
  messages?: readonly HookMessage[] | undefined;
}

/** What the `afterTurn` hooks are told: the turn, and the reply it ended on. */
export interface AfterTurnHookInput extends TurnHookInput {
  /** The reply's text. */
  reply?: string | undefined;
}

/** What the `sessionEnd` and `sessionDelete` hooks are told. */
export interface SessionHookInput {
  /** Why the session ended, where the host knows. */
  reason?: string | undefined;
  /** The session's messages, where the host hands them over. */
  messages?: readonly HookMessage[] | undefined;
}

/**
 * What a runner is handed about the moment. `beforeCompact` gets the ledger's
 * `BeforeCompactInput` (what is being folded, by stored index) — the same object the ledger's
 * compaction hands the same runner. `gather`, `notify` and `consult` hand it on with each lone
 * surrogate in its text written U+FFFD: a copy where it holds one, else the host's object — but
 * `gather` given two events hands each a copy of its own, so one event's runner changing it in
 * place does not change what the other's hooks are told.
 */
export type HookInput = TurnHookInput | AfterTurnHookInput | BeforeCompactInput | SessionHookInput;

/**
 * One hook's outcome as a runner reports it. Every field is optional, so an outcome from any runner
 * passes straight through; what this package reads is listed here, and anything else is kept as it
 * came.
 */
export interface HookOutcome {
  /** The hook's id (a spec's `hooks[].id`). */
  id?: string | undefined;
  /** A display name, preferred to the id in notes. */
  name?: string | undefined;
  /** `false` when the hook failed; its context is not used and its veto is not read. */
  ok?: boolean | undefined;
  /**
   * Why it failed: a non-empty string, an `Error` or other object, `true` or a non-zero number (any
   * truthy value) counts as a failure, as `ok: false` does; `""`, `false`, `0` and `null` are no error.
   */
  error?: unknown | undefined;
  /** The hook ran past its own timeout (a runner reports this as a failure, with `ok: false`). */
  timedOut?: boolean | undefined;
  /** Text for the request, from a `sessionStart` or `beforeTurn` hook. */
  context?: string | undefined;
  /**
   * The most this hook's context may take, in tokens, inside the shared budget: a whole number above
   * 0. `0` or none is no limit of its own; anything else is read as left out, with a note.
   */
  maxTokens?: number | undefined;
  /** From a `beforeCompact` hook: asks for the compaction not to happen. */
  veto?: boolean | undefined;
  /** How long it took, in milliseconds. */
  ms?: number | undefined;
}

/**
 * Runs a host's hooks for one event and reports each hook's outcome, in the order they should be
 * read. This package never decides what a hook is or how it runs: an MCP pool's runner, or a host's
 * own function, is passed in. `context` is the host's (`{ session: { id } }`, say) and is handed
 * through untouched; `input` comes with each lone surrogate in its text written U+FFFD; `signal`
 * aborts when the caller stops waiting (its timeout, or the run's abort).
 *
 * Structural: a runner that fits this also fits the ledger's `CompactionHookRunner`, and a pool's
 * runner fits it without importing this package. It may throw, hang or answer junk; every caller here
 * turns that into a note.
 */
export type HookRunner<Context = unknown> = (
  event: HookEvent,
  input: HookInput,
  context: Context,
  signal?: AbortSignal,
) => PromiseLike<readonly HookOutcome[] | undefined> | readonly HookOutcome[] | undefined;

/** What `gather` hands back: the context to put on the question, the preface above it, and why. */
export interface Gathered {
  /** The `<context>` blocks, held to the budget; `""` when no hook added anything. */
  context: string;
  /**
   * The preface this request says above the blocks, each lone surrogate written U+FFFD as
   * `withContext` writes it; store it beside the question with `context`.
   */
  preface: string;
  /** Every outcome the runner reported, in order (anything that was not an object left out). */
  outcomes: HookOutcome[];
  /** What went wrong or was cut, one line each: a failed, hung or junk-answering hook, a cut block. */
  notes: string[];
}

/** What `notify` hands back: the outcomes, and the notes on what went wrong. */
export interface HookReport {
  outcomes: HookOutcome[];
  notes: string[];
}

/** What `consult` hands back: whether to compact, and which hook asked not to. */
export interface Consulted extends HookReport {
  /** Go ahead with the compaction: no hook that ran vetoed it, or it was forced. */
  proceed: boolean;
  /** The hook that vetoed, by name (else id), whether or not the veto was honoured. */
  vetoedBy?: string;
  /**
   * `true` when the caller's signal aborted, before or while the hooks ran: the run was stopped, so
   * `proceed` is false, `forced` or not. Absent otherwise.
   */
  stopped?: true;
}

/**
 * Options for `gather`. `null` in any of them, or in place of the whole object, reads as none given
 * (a nullable column comes back from JSON so).
 */
export interface GatherOptions {
  /** This request's budget in tokens, over the configured one; anything but a number above zero keeps that. */
  maxTokens?: number | null | undefined;
  /** This request's preface, over the configured one; `""` says none; anything but a string keeps that. */
  preface?: string | null | undefined;
  /** The run's signal: once it aborts, `gather` stops waiting and adds nothing. */
  signal?: AbortSignal | null | undefined;
  /** How long to wait for the runner, over the configured one. */
  timeoutMs?: number | null | undefined;
  /** Characters per token to size the blocks by (the ledger's `charsPerTokenFor`); 4 unless given. */
  charsPerToken?: number | null | undefined;
}

/**
 * Options for `notify`: no signal, since a reader leaving does not mean "forget this turn". `null`,
 * here or for the whole object, reads as none given.
 */
export interface NotifyOptions {
  /** How long to wait for the runner, over the configured one. */
  timeoutMs?: number | null | undefined;
}

/** Options for `consult`. `null` in any of them, or in place of the whole object, reads as none given. */
export interface ConsultOptions {
  /** The fold is needed (a request was already refused as too big): a veto is noted and not honoured. */
  forced?: boolean | null | undefined;
  /** The run's signal: once it aborts, `consult` stops waiting and answers `proceed: false`, `stopped: true`. */
  signal?: AbortSignal | null | undefined;
  /** How long to wait for the runner, over the configured one. */
  timeoutMs?: number | null | undefined;
}

/** Options for `assembleContext`. */
export interface AssembleOptions {
  /** Characters per token to size the blocks by; 4 unless given. */
  charsPerToken?: number | undefined;
  /** Told when a block is cut to fit or left out. */
  onNote?: ((note: string) => void) | undefined;
}
