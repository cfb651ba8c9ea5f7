import type { MessageLike } from "@loopwright/ledger";
import { createHooks, type Hooks } from "./create-hooks.js";
import type { HookSettings } from "./settings.js";
import type {
  AssembleOptions,
  Consulted,
  ConsultOptions,
  Gathered,
  GatherOptions,
  HookInput,
  HookOutcome,
  HookReport,
  HookRunner,
  InjectingHookEvent,
  NotifyingHookEvent,
  NotifyOptions,
} from "./types.js";

export type { Hooks } from "./create-hooks.js";
export { createHooks } from "./create-hooks.js";
export type { HooksErrorCode } from "./errors.js";
export { HooksError } from "./errors.js";
export type { HookSettings } from "./settings.js";
export { DEFAULT_HOOK_SETTINGS, HOOK_CONTEXT_TOKENS, HOOK_PREFACE, HOOK_TIMEOUT_MS } from "./settings.js";
export { turnIndex, turnMessages } from "./turn-messages.js";
export type {
  AfterTurnHookInput,
  AssembleOptions,
  Consulted,
  ConsultOptions,
  Gathered,
  GatherOptions,
  HookEvent,
  HookInput,
  HookMessage,
  HookOutcome,
  HookReport,
  HookRunner,
  InjectingHookEvent,
  NotifyingHookEvent,
  NotifyOptions,
  SessionHookInput,
  TurnHookInput,
} from "./types.js";
export type { UntrustedOptions } from "./untrusted.js";
export { ANGLE_LOOKALIKES, UNTRUSTED_PREFACE, untrusted } from "./untrusted.js";

/** The hooks instance the top-level functions use; `createHooks()` makes another. */
export const defaultHooks: Hooks = createHooks();

/**
 * Runs the `sessionStart` and/or `beforeTurn` hooks (one event or several; each runner call in
 * parallel) and assembles what they add into `<context>` blocks for the question.
 *
 * Reads each outcome's `context` text, in order, held to the shared budget (`maxTokens` here, else
 * the configured one, `HOOK_CONTEXT_TOKENS` by default) and each hook to its own `maxTokens` inside
 * it. An event named twice in `event` is run once. Given two events, each event's runner call is
 * handed a copy of `input` of its own (its arrays and plain objects copied): a runner that changes
 * what it was told changes neither what the other event's hooks are told nor `input`. Returns `{ context, preface, outcomes, notes }`: put `context` on the question with
 * `withContext(messages, index, context, preface)` and store both beside the question.
 *
 * Never rejects for a hook's sake: a runner that throws, rejects, hangs past `timeoutMs` or answers
 * junk, and a hook that failed, costs only its own context and becomes a line in `notes`. A
 * `signal` that aborts makes it stop waiting and add nothing. Rejects with `HooksError` only for a
 * caller's mistake: `run` not a function, an event that is not `sessionStart` or `beforeTurn`, or a
 * `signal` that is not an `AbortSignal` (`invalid-option`).
 */
export function gather<Context>(
  run: HookRunner<Context>,
  event: InjectingHookEvent | readonly InjectingHookEvent[],
  input: HookInput,
  context: Context,
  options?: GatherOptions | null,
): Promise<Gathered> {
  return defaultHooks.gather(run, event, input, context, options);
}

/**
 * Tells the hooks of an event that only reads — `afterTurn`, `beforeCompact`, `sessionEnd`,
 * `sessionDelete` — and resolves with their outcomes and notes once they answer (or the timeout
 * passes). Takes no signal: a reader leaving once the turn is answered has not asked for the turn to
 * be forgotten. Never rejects for a hook's sake; rejects with `HooksError` for a runner that is not a
 * function or an event that is not one of the four.
 */
export function notify<Context>(
  run: HookRunner<Context>,
  event: NotifyingHookEvent,
  input: HookInput,
  context: Context,
  options?: NotifyOptions | null,
): Promise<HookReport> {
  return defaultHooks.notify(run, event, input, context, options);
}

/**
 * Runs the `beforeCompact` hooks and waits on them, for a host that compacts its own way: `proceed`
 * is false when a hook that ran set `veto` (one that failed vetoes nothing), with `vetoedBy` naming
 * it. `forced: true` (the request was already refused as too big) proceeds anyway and notes the veto.
 * The same rule, and the same notes, as the ledger's `runCompaction` with `honourVeto`. A runner that
 * throws or hangs vetoes nothing. A `signal` that has aborted, before or while the hooks ran, answers
 * `proceed: false` with `stopped: true`, forced or not: a stopped run folds nothing. Rejects with
 * `HooksError` only for a runner that is not a function, or a `signal` that is not an `AbortSignal`
 * (`invalid-option`).
 */
export function consult<Context>(
  run: HookRunner<Context>,
  input: HookInput,
  context: Context,
  options?: ConsultOptions | null,
): Promise<Consulted> {
  return defaultHooks.consult(run, input, context, options);
}

/**
 * A new array with `context` leading the question at `index`: `preface`, a blank line, the blocks, a
 * blank line, then what the user typed (for content parts, one text part in front). `messages` is
 * not written to, so a host that stores the typed question never stores the context as the user's.
 *
 * `preface` given as a string wins for this call (`""` says none: the blocks lead on their own);
 * anything else uses the configured one. Called with the `context` and `preface` a request was sent
 * with, it rebuilds that question byte for byte whatever `configureHooks` has since been told — which
 * is what keeps the next request the last one with its tail added, and the server's prefix cache warm.
 * An empty (or absent) context gives back a copy of `messages` unchanged. A lone surrogate in the
 * preface or the context is written U+FFFD (a strict JSON reader, llama.cpp's, refuses a request
 * holding one), the same way every time, so the rebuilt question is still the one sent.
 *
 * Throws `HooksError`: messages not an array of objects (a hole included), `index` outside them, context not a string,
 * or context for a message that is not a `user` one or whose content is neither text, parts nor null
 * (it would be overwritten).
 */
export function withContext<Message extends MessageLike>(
  messages: readonly Message[],
  index: number,
  context: string | null | undefined,
  preface?: string,
): Message[] {
  return defaultHooks.withContext(messages, index, context, preface);
}

/**
 * The outcomes' `context` as `<context hook="id">` blocks, in order, held to `maxTokens` in all
 * (else the configured budget) and each hook to its own `maxTokens`. Sizes are characters over
 * `charsPerToken` (4 unless given), as the ledger's `estimateTokens` counts, so the result never
 * estimates above the budget. A block cut to fit ends in " […]" (never cut inside a character or an
 * escape; an `untrusted` fence the cut falls in is closed before the mark); one with no room is left out;
 * `onNote` hears of both. A `<context` tag inside a hook's text (any case or spacing, invisible characters in it: format and other default-ignorable ones) is disarmed (`&lt;`) so a block cannot
 * be closed early. Outcomes without text, and failed ones (`ok: false`, an `error`, `timedOut`), are
 * skipped, and so is an outcome that throws when read (noted); never throws.
 */
export function assembleContext(
  outcomes: readonly HookOutcome[],
  maxTokens?: number,
  options?: AssembleOptions,
): string {
  return defaultHooks.assembleContext(outcomes, maxTokens, options);
}

/**
 * Moves the default instance's settings — `maxTokens` (the shared budget), `preface`, `timeoutMs` —
 * and returns the whole set. A number that is not above zero, or a preface that is not a string,
 * keeps what was there, so a 0 passed for "no opinion" does not switch the context off.
 */
export function configureHooks(changes: Partial<HookSettings>): HookSettings {
  return defaultHooks.configure(changes);
}

/** Puts the default instance's settings back to `DEFAULT_HOOK_SETTINGS` and returns them. */
export function resetHooks(): HookSettings {
  return defaultHooks.reset();
}

/** The ledger's types this package's signatures name (what a `beforeCompact` hook is given; a chat message in the shape the ledger reads), re-exported so a host can name them with this package alone. */
export type { BeforeCompactInput, MessageLike } from "@loopwright/ledger";
