// What to do about an endpoint's failure, said under the error line at the terminal. The loop's
// error is the endpoint's own words ("Connection error. (ECONNREFUSED)", "404 File Not Found"),
// which name neither the URL asked nor the setting to change.
import { shownUrl } from "./web/spec.js";

/**
 * A line of advice for an error `message` from a run against `baseUrl` (OPENAI_BASE_URL), or
 * undefined where the message is not one of the endpoint being wrong or away: nothing answering
 * there, a 404 (a base URL without its `/v1`, or another path), a 401/403 (the key).
 */
export function endpointHint(message: string, baseUrl: string): string | undefined {
  const url = shownUrl(baseUrl);
  if (/^Connection error\b|\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ECONNRESET)\b/.test(message))
    return `Nothing answered at ${url}: is the server running there, and does OPENAI_BASE_URL name it?`;
  if (/^404\b/.test(message))
    return `${url} has no such route (404): check OPENAI_BASE_URL; an OpenAI-compatible server's base URL usually ends in /v1.`;
  if (/^40[13]\b/.test(message)) return `${url} refused the key: check OPENAI_API_KEY.`;
  return undefined;
}
