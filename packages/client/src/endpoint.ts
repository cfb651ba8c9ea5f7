import { EndpointConfigError } from "./errors.js";

/**
 * The endpoint fields this package reads.
 *
 * Any settings row, resolved agent or zod-inferred config
 * with these fields satisfies it structurally.
 */
export interface Endpoint {
  /** The OpenAI-compatible base URL, e.g. `http://127.0.0.1:8080/v1` or `https://api.openai.com/v1`. */
  baseUrl: string;
  /** The API key; absent or empty sends `NO_KEY` (never `$OPENAI_API_KEY`). */
  apiKey?: string;
  /** Extra headers sent on every request to this endpoint. */
  headers?: Record<string, string>;
  /** How long a non-streamed call may take, and the idle allowance of a stream; absent or 0 waits forever. */
  requestTimeoutSeconds?: number;
  /** How long the first chunk of a stream may take (prefill); absent: five times `requestTimeoutSeconds`. */
  firstTokenSeconds?: number;
}

/** An endpoint plus the model whose window is asked for (`contextLimitFor`, `servedWindow`). */
export interface WindowSettings extends Endpoint {
  /** The model's name at the endpoint; absent matches a listing with exactly one model. */
  model?: string;
}

/**
 * The API key sent to a keyless server, so the SDK never falls back to `$OPENAI_API_KEY`.
 *
 * Explicit, so the `openai` client never falls back
 * to `$OPENAI_API_KEY` and sends the operator's key somewhere it was not meant to go.
 */
export const NO_KEY = "no-key";

function seconds(
  endpoint: Partial<Endpoint>,
  field: "requestTimeoutSeconds" | "firstTokenSeconds",
): number | undefined {
  const value = endpoint?.[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new EndpointConfigError(
      field,
      `${field} must be a number of seconds (0 or more), got ${String(value)}.`,
    );
  }
  return value === 0 ? undefined : value;
}

/**
 * The longest timer Node holds: 2,147,483,647 ms (about 24.8 days). A longer one fires after 1 ms
 * instead, so every timeout is clamped to this.
 */
const MAX_TIMER_MS = 2_147_483_647;

/** Milliseconds, clamped to what a Node timer can hold (see {@link MAX_TIMER_MS}). */
function timerMs(ms: number): number {
  return Math.min(ms, MAX_TIMER_MS);
}

/**
 * `requestTimeoutSeconds` in milliseconds, or `undefined` (wait forever) where it is absent or 0.
 * Reads only that field. Clamped to `MAX_TIMER_MS` (about 24.8 days), the longest timer Node can
 * hold, so the answer is always finite. Throws `EndpointConfigError` for a negative or non-numeric value.
 */
export function timeoutMs(endpoint: Pick<Endpoint, "requestTimeoutSeconds">): number | undefined {
  const s = seconds(endpoint, "requestTimeoutSeconds");
  return s === undefined ? undefined : timerMs(s * 1000);
}

/**
 * How long the first chunk of a stream may take, in ms.
 *
 * `firstTokenSeconds`, else five
 * times `requestTimeoutSeconds`, else `undefined` (wait forever). Prefill of a long prompt on a
 * local GPU takes tens of seconds, so the first wait gets its own allowance. Clamped, as
 * `timeoutMs` is, to `MAX_TIMER_MS`, so always finite.
 */
export function firstTokenMs(
  endpoint: Pick<Endpoint, "requestTimeoutSeconds" | "firstTokenSeconds">,
): number | undefined {
  const first = seconds(endpoint, "firstTokenSeconds");
  if (first !== undefined) return timerMs(first * 1000);
  const request = seconds(endpoint, "requestTimeoutSeconds");
  return request === undefined ? undefined : timerMs(request * 5000);
}

/** The base URL, checked and without trailing slashes; throws `EndpointConfigError` when unusable. */
export function checkedBaseUrl(endpoint: Partial<Endpoint> | undefined): string {
  const raw = endpoint?.baseUrl;
  if (typeof raw !== "string" || raw.trim() === "") {
    throw new EndpointConfigError(
      "baseUrl",
      "The endpoint has no baseUrl: give the server's base URL, e.g. http://127.0.0.1:8080/v1.",
    );
  }
  const trimmed = raw.trim().replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch (cause) {
    throw new EndpointConfigError("baseUrl", `The endpoint's baseUrl ${JSON.stringify(raw)} is not a URL.`, {
      cause,
    });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new EndpointConfigError(
      "baseUrl",
      `The endpoint's baseUrl must be http or https, got ${JSON.stringify(raw)}.`,
    );
  }
  return trimmed;
}
