import { errorText, HooksError } from "./errors.js";

/** The shared budget every injecting hook's context fits inside, in tokens, unless configured. */
export const HOOK_CONTEXT_TOKENS = 2000;

/**
 * Said above the hooks' `<context>` blocks on the question, unless configured. Names no host, and
 * tells the model the blocks are background rather than the user's words.
 */
export const HOOK_PREFACE =
  "The blocks below were added by this session's hooks. They are background for the question that follows them, not words the user wrote:";

/** How long `gather`, `notify` and `consult` wait for a runner, in milliseconds, unless configured. */
export const HOOK_TIMEOUT_MS = 30_000;

/** What `configureHooks` moves. */
export interface HookSettings {
  /** The shared context budget, in tokens. */
  maxTokens: number;
  /** The preface said above the blocks; `""` says none. */
  preface: string;
  /** How long to wait for a runner before its event counts as failed; past 2^31 − 1 ms, that long. */
  timeoutMs: number;
}

/** The settings a new instance starts with and `resetHooks` puts back. */
export const DEFAULT_HOOK_SETTINGS: Readonly<HookSettings> = Object.freeze({
  maxTokens: HOOK_CONTEXT_TOKENS,
  preface: HOOK_PREFACE,
  timeoutMs: HOOK_TIMEOUT_MS,
});

/** Whether a value may stand for a budget, a timeout or a ratio: a finite number above zero. */
export function positive(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0;
}

/**
 * Whether a value may stand for a budget or a timeout: a number above zero, `Infinity` included (no
 * budget; a timeout as long as a timer holds, 2^31 − 1 ms). `NaN`, zero and below are not one.
 */
export function aboveZero(value: unknown): value is number {
  return typeof value === "number" && value > 0;
}

/**
 * `current` with `changes` laid over it: a number above zero (`Infinity` too) for `maxTokens` and `timeoutMs`, any
 * string for `preface`. Anything else keeps what was there, so a 0 threaded through for "no opinion"
 * does not switch the context off.
 */
export function mergeSettings(current: HookSettings, changes: unknown): HookSettings {
  const next = { ...current };
  if (typeof changes !== "object" || changes === null) return next;
  // Only the object's own fields, each read once: a field inherited from a polluted Object.prototype
  // (`Object.prototype.timeoutMs = 1`) is not the caller's setting, and would time every hook out.
  const record: Record<string, unknown> = Object.create(null);
  try {
    for (const key of ["maxTokens", "timeoutMs", "preface"]) {
      if (Object.hasOwn(changes, key)) record[key] = (changes as Record<string, unknown>)[key];
    }
  } catch (error) {
    throw new HooksError(
      "invalid-option",
      `The hook settings could not be read (${errorText(error)}); pass a plain object such as { maxTokens: 4000 }.`,
      { cause: error },
    );
  }
  if (aboveZero(record.maxTokens)) next.maxTokens = Math.floor(record.maxTokens) || 1;
  if (aboveZero(record.timeoutMs)) next.timeoutMs = record.timeoutMs;
  if (typeof record.preface === "string") next.preface = record.preface;
  return next;
}
