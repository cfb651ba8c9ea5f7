/** Helpers the personalities share to turn recorded bodies into replies. */
import { TestkitError } from "../errors.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply } from "../replies.js";

/**
 * Replaces recorded specifics in `text` (each `from`, first occurrence) by the live request's values.
 * Throws a `TestkitError` when a `from` is missing, so a changed fixture fails loudly.
 */
export function swap(text: string, pairs: readonly (readonly [string, string])[], source: string): string {
  let out = text;
  for (const [from, to] of pairs) {
    const at = out.indexOf(from);
    if (at < 0) {
      throw new TestkitError(
        "fixture-not-found",
        `Fixture "${source}" no longer contains ${JSON.stringify(from)}; the personality that reads it needs updating.`,
      );
    }
    out = out.slice(0, at) + to + out.slice(at + from.length);
  }
  return out;
}

/** An error reply whose body is sent exactly as `bodyText`, as JSON. */
export function jsonError(
  status: number,
  bodyText: string,
  headers: Record<string, string> = {},
): ErrorReply {
  return {
    type: "error",
    status,
    body: bodyText,
    headers: { "content-type": "application/json", ...headers },
  };
}

/** `'a', 'b', and 'c'` — how OpenAI lists supported values in its messages. */
export function quotedList(values: readonly string[]): string {
  const q = values.map((v) => `'${v}'`);
  if (q.length <= 2) return q.join(" and ");
  return `${q.slice(0, -1).join(", ")}, and ${q.at(-1)}`;
}

/** True for a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** True when the request asked for a usage chunk (`stream_options.include_usage: true`). */
export function includeUsageRequested(request: RecordedRequest): boolean {
  const body = request.body;
  return isRecord(body) && isRecord(body.stream_options) && body.stream_options.include_usage === true;
}

/** The request's `max_completion_tokens`, else `max_tokens`, when it is a number. */
export function requestedMaxTokens(request: RecordedRequest): number | undefined {
  const body = request.body;
  if (!isRecord(body)) return undefined;
  const value = body.max_completion_tokens ?? body.max_tokens;
  return typeof value === "number" ? value : undefined;
}
