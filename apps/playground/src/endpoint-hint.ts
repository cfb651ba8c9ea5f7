// What to do about an endpoint's failure, said under the error line at the terminal and on the page
// (the web server sends it as a notice after the run's error). The loop's error is the endpoint's
// own words ("Connection error. (ECONNREFUSED)", "404 File Not Found"), which name neither the URL
// asked nor the setting to change.
import { shownUrl } from "./web/spec.js";

/**
 * The settings a hint tells the user to check: what named the run's URL, its model and its key. The
 * terminal's are the environment's; on the page a loaded spec may have named the endpoint or the
 * model, and an endpoint a spec names is sent no key, so advice naming OPENAI_BASE_URL or
 * OPENAI_API_KEY there sent the user to a setting that run never used.
 */
export interface HintSettings {
  /** What names the URL. */
  url: string;
  /** What names the model. */
  model: string;
  /** What gives the key; `undefined` where the endpoint is sent none. */
  key: string | undefined;
}

/** The terminal's settings (and the page's, where no spec named the endpoint or the model). */
export const ENV_SETTINGS: HintSettings = {
  url: "OPENAI_BASE_URL",
  model: "LOOPWRIGHT_MODEL (or --model)",
  key: "OPENAI_API_KEY",
};

/**
 * A line of advice for an error `message` from a run against `baseUrl`, or undefined where the
 * message is not one of the endpoint being wrong or away: nothing answering there, a 404 naming the
 * model (`model`, not served there), another 404 (a base URL without its `/v1`, or another path), a
 * 401/403 (the key). `settings` names where the URL, the model and the key came from.
 */
export function endpointHint(
  message: string,
  baseUrl: string,
  model: string,
  settings: HintSettings = ENV_SETTINGS,
): string | undefined {
  const url = shownUrl(baseUrl);
  // An answer with a status came from a server at the URL: a proxy's 502 whose body says its own
  // upstream refused (`connect ECONNREFUSED 10.0.0.5:8000`) is not the URL being wrong.
  const answered = /^\d{3}\b/.test(message);
  if (
    !answered &&
    /^Connection error\b|\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ECONNRESET)\b/.test(message)
  )
    return `Nothing answered at ${url}: is the server running there, and does ${settings.url} name it?`;
  // OpenAI, vLLM, Groq and Ollama answer a model they do not serve with a 404 that names the model:
  // the URL is right, and sending the user to it would mislead.
  if (/^404\b/.test(message) && /\bmodel\b/i.test(message))
    return `${url} serves no model ${JSON.stringify(model)}: check ${settings.model}; GET ${url}/models lists the ones it serves.`;
  if (/^404\b/.test(message))
    return `${url} has no such route (404): check ${settings.url}; an OpenAI-compatible server's base URL usually ends in /v1.`;
  if (/^40[13]\b/.test(message)) {
    return settings.key === undefined
      ? `${url} refused the request: the playground sends an endpoint a spec names no key (OPENAI_API_KEY goes to OPENAI_BASE_URL only).`
      : `${url} refused the key: check ${settings.key}.`;
  }
  return undefined;
}
