// What to do about an endpoint's failure, said under the error line at the terminal and on the page
// (the web server sends it as a notice after the run's error). The loop's error is the endpoint's
// own words ("Connection error. (ECONNREFUSED)", "404 File Not Found"), which name neither the URL
// asked nor the setting to change.
import { shownUrl } from "./web/spec.js";

/**
 * A line of advice for an error `message` from a run against `baseUrl` (OPENAI_BASE_URL), or
 * undefined where the message is not one of the endpoint being wrong or away: nothing answering
 * there, a 404 naming the model (`model`, not served there), another 404 (a base URL without its
 * `/v1`, or another path), a 401/403 (the key).
 */
export function endpointHint(message: string, baseUrl: string, model: string): string | undefined {
  const url = shownUrl(baseUrl);
  // An answer with a status came from a server at the URL: a proxy's 502 whose body says its own
  // upstream refused (`connect ECONNREFUSED 10.0.0.5:8000`) is not the URL being wrong.
  const answered = /^\d{3}\b/.test(message);
  if (
    !answered &&
    /^Connection error\b|\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ECONNRESET)\b/.test(message)
  )
    return `Nothing answered at ${url}: is the server running there, and does OPENAI_BASE_URL name it?`;
  // OpenAI, vLLM, Groq and Ollama answer a model they do not serve with a 404 that names the model:
  // the URL is right, and sending the user to it would mislead.
  if (/^404\b/.test(message) && /\bmodel\b/i.test(message))
    return `${url} serves no model ${JSON.stringify(model)}: check LOOPWRIGHT_MODEL (or --model); GET ${url}/models lists the ones it serves.`;
  if (/^404\b/.test(message))
    return `${url} has no such route (404): check OPENAI_BASE_URL; an OpenAI-compatible server's base URL usually ends in /v1.`;
  if (/^40[13]\b/.test(message)) return `${url} refused the key: check OPENAI_API_KEY.`;
  return undefined;
}
