import { held } from "./held.js";
import type { SignalLike } from "./watcher.js";

const EVENTS_ERROR = Symbol.for("@loopwright/events.EventsError");

/** What kind of bad input an {@link EventsError} reports. */
export type EventsErrorCode = "invalid-run-id" | "invalid-event" | "invalid-signal" | "invalid-argument";

/**
 * Thrown when `emit`, `watch`, `history` or `endRun` is handed something that is not a run id, not
 * an event, or (to `watch`) not a signal, and when `runMetrics` is handed events that are not
 * iterable or options that are not an object, or settings that throw when read (`invalid-argument`). `code` says which; the message
 * names the value's type and what to pass instead.
 */
export class EventsError extends Error {
  override readonly name: string = "EventsError";
  readonly [EVENTS_ERROR] = true;
  /** Which input was wrong. */
  readonly code: EventsErrorCode;

  constructor(code: EventsErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for an `EventsError` from any installed copy of this package. */
  static isInstance(value: unknown): value is EventsError {
    return (
      typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[EVENTS_ERROR] === true
    );
  }
}

/**
 * What a wrong argument was, for a message ending "and was given …": `null`, `undefined` (an unset
 * variable), a kind for objects, strings and functions (never their contents), the value for a number
 * or a boolean.
 */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value === "" ? "an empty string" : "a string";
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

/** Checks a run id, throwing an `EventsError` that names the function it was passed to. */
export function checkRunId(runId: unknown, where: string): asserts runId is string {
  if (typeof runId !== "string" || runId === "") {
    throw new EventsError(
      "invalid-run-id",
      `${where} needs a run id as a non-empty string, and was given ${describe(runId)}. ` +
        "Pass the id the run's events are emitted under.",
    );
  }
}

/**
 * Checks an event, throwing an `EventsError` when it has no string `kind` of its own: an own enumerable
 * field, as the copy a bus stores holds (a class's getter was left out of it, and the event stored
 * with no kind), never one a polluted `Object.prototype` holds (with `Object.prototype.kind = "done"`,
 * `{}` was stored with no kind and ended its run).
 */
export function checkEvent(event: unknown, where: string): void {
  let own = false;
  try {
    // Every field read once: a throwing getter or a revoked Proxy is refused here, not mid-store.
    Object.assign({}, event);
    own =
      typeof event === "object" &&
      event !== null &&
      Object.prototype.propertyIsEnumerable.call(event, "kind");
  } catch (cause) {
    throw new EventsError(
      "invalid-event",
      `${where} needs an event object it can read; reading this one threw (a throwing getter or a revoked Proxy).`,
      { cause },
    );
  }
  if (
    typeof event !== "object" ||
    event === null ||
    Array.isArray(event) ||
    !own ||
    typeof (event as { kind?: unknown }).kind !== "string"
  ) {
    throw new EventsError(
      "invalid-event",
      `${where} needs an event object with a string \`kind\` (such as { kind: "output", text }), ` +
        `and was given ${describe(event)}${
          typeof event === "object" && event !== null ? " without a string kind" : ""
        }.`,
    );
  }
}

/** What `watch` reads of a signal. */
const SIGNAL_FIELDS = ["aborted", "addEventListener", "removeEventListener"] as const;

/**
 * Checks `watch`'s signal: absent, or an object with `aborted` and the two listener methods, each
 * held by the object itself or a prototype of its own (an `AbortSignal`'s, on `AbortSignal.prototype`
 * and `EventTarget.prototype`), never only by `Object.prototype`: a polluted `aborted = true` is no
 * signal's. Throws an `EventsError` (`invalid-signal`) that names `where` (the function it was passed to).
 */
export function checkSignal(signal: unknown, where: string): asserts signal is SignalLike | undefined {
  if (signal === undefined) return;
  const like = signal as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  let fits = false;
  try {
    fits =
      typeof signal === "object" &&
      signal !== null &&
      SIGNAL_FIELDS.every((field) => held(signal, field)) &&
      typeof like.aborted === "boolean" &&
      typeof like.addEventListener === "function" &&
      typeof like.removeEventListener === "function";
  } catch {
    // A getter that throws, a revoked Proxy: not a signal this can read.
  }
  if (!fits) {
    throw new EventsError(
      "invalid-signal",
      `${where} takes an AbortSignal (or an object with its own \`aborted\`, \`addEventListener\` and ` +
        `\`removeEventListener\`) as its signal, or none, and was given ${describe(signal)}. ` +
        "Pass the request's signal (request.signal), not the request.",
    );
  }
}

/**
 * Checks that `events`, the list `where` (`fold`, `runMetrics`) reads, is iterable. Throws an
 * `EventsError` (`invalid-argument`) naming what it was given.
 */
export function checkEventList(where: string, events: unknown): void {
  let iterable = false;
  try {
    iterable =
      typeof events === "object" &&
      events !== null &&
      typeof (events as { [Symbol.iterator]?: unknown })[Symbol.iterator] === "function";
  } catch {
    // A revoked Proxy: not something to iterate.
  }
  if (!iterable) {
    throw new EventsError(
      "invalid-argument",
      `${where} needs its events as a list (or any iterable) of run events, and was given ${describe(events)}. ` +
        "Pass what history(runId) returns, or the events a watcher read.",
    );
  }
}

/**
 * Checks `runMetrics`'s arguments: `events` iterable, `options` an object or absent. Throws an
 * `EventsError` (`invalid-argument`) naming the argument.
 */
export function checkMetricsArguments(events: unknown, options: unknown): number | undefined {
  checkEventList("runMetrics", events);
  if (options === undefined) return undefined;
  let isArray: boolean;
  try {
    isArray = Array.isArray(options);
  } catch (cause) {
    // A revoked Proxy: Array.isArray throws on one.
    throw new EventsError(
      "invalid-argument",
      "runMetrics could not read its options (they threw when read).",
      {
        cause,
      },
    );
  }
  if (typeof options !== "object" || options === null || isArray) {
    throw new EventsError(
      "invalid-argument",
      `runMetrics takes its options as an object ({ contextLength? }) or nothing, and was given ${describe(options)}.`,
    );
  }
  // Read once, here: one that throws when read (a getter, a revoked Proxy) is the caller's mistake,
  // named as such rather than escaping as its own error.
  let contextLength: unknown;
  try {
    // Its own (or its class's), never one a polluted Object.prototype holds: an inherited
    // contextLength set every largest prompt's share against a window nobody gave.
    if (held(options, "contextLength"))
      contextLength = (options as { contextLength?: unknown }).contextLength;
  } catch (cause) {
    throw new EventsError(
      "invalid-argument",
      "runMetrics could not read options.contextLength (it threw when read).",
      {
        cause,
      },
    );
  }
  if (contextLength === undefined) return undefined;
  if (typeof contextLength !== "number" || !Number.isFinite(contextLength) || contextLength <= 0) {
    // NaN, a negative, 0 or Infinity gave a run with no share at all, said nowhere.
    throw new EventsError(
      "invalid-argument",
      `runMetrics needs options.contextLength as the model's window in tokens (a finite number above 0) or left out, and was given ${describe(contextLength)}.`,
    );
  }
  return contextLength as number;
}
