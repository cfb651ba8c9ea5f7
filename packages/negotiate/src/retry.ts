import { readError } from "./error-shape.js";
import { ContextOverflow } from "./errors.js";
import { own, ownOptions } from "./own.js";
import { GRAMMAR_WORDINGS, ROLE_WORDINGS, TOOL_CALL_ID_WORDINGS } from "./refusal.js";

// Every server's wording for "the request does not fit the window". Patterns are on meaning (a
// prompt/input/request that is too long/large/exceeds a context/window/length/limit), not on one
// string; the table tests in retry-wordings.test.ts cite where each real wording came from.
const OVERFLOW_WORDINGS = [
  // OpenAI, Azure, vLLM (old and new), DeepSeek, Together, Groq, OpenRouter ("This endpoint's …").
  /maximum context (?:length|limit) (?:is|of) \d+/i,
  /maximum context length has been exceeded/i, // OpenAI, when it names no number
  /reduce the length of the (?:messages|prompt|input)/i, // Groq, Cerebras, OpenAI
  /exceeds? the available context size/i, // llama.cpp (all builds since 2024)
  /context the overflows|context overflows?\b|context (?:window|length|size) (?:overflow|exceeded)/i, // LM Studio
  /Cannot truncate prompt with n_keep/i, // LM Studio / llama.cpp-derived
  /Input is too large to process/i, // llama.cpp with context shift off (2024)
  /input is larger than the max context size/i, // llama.cpp, embeddings and rerank
  /prompt is too big compared to KV size/i, // ik_llama.cpp
  /Requested tokens \(\d+\) exceed context window/i, // llama-cpp-python
  /`inputs` tokens \+ `max_new_tokens` must be <=/i, // TGI (Together, Hugging Face router)
  /`?inputs`? must have less than \d+ tokens/i, // TGI, the prompt alone too long (InputLength)
  /longer than the (?:maximum model length|model's context length)/i, // vLLM V1, SGLang
  /too long to fit into the model/i, // vLLM ("The prompt (total length …) is too long to fit into the model")
  /Input prompt \(\d+ tokens\) is too long and exceeds limit/i, // vLLM scheduler
  /\b(?:input|prompt|request)\b[^.\n]{0,40}exceeds? the maximum (?:allowed )?(?:length|context)/i, // SGLang, Volcano Ark
  /input token count[^.\n]{0,30}exceeds the maximum number of tokens/i, // Gemini
  /too large for model with \d+ maximum context length/i, // Mistral
  /prompt is too long|input is too long(?: for (?:the |requested )?model)?/i, // Anthropic, Bedrock, Fireworks
  /input length and `?max_tokens`? exceed context limit/i, // Anthropic
  /Input tokens exceed the configured limit/i, // Azure OpenAI (Responses-era models)
  /Current length is \d+ while limit is \d+/i, // Cerebras
  /prompt token count of \d+ exceeds the limit/i, // GitHub Copilot
  /Requested token count exceeds the model's maximum context length/i, // SGLang
  /maximum prompt length is \d+/i, // xAI ("… but the request contains N tokens")
  /\binput_too_large\b/i, // xAI gRPC-era code
  /exceeded model token limit|model max length exceeded/i, // Moonshot (Kimi), new and old
  /Range of input length should be \[/i, // Qwen / DashScope
  /\b(?:prompt|input) exceeds (?:the )?max(?:imum)? (?:length|tokens|context)/i, // Zhipu GLM ("Prompt exceeds max length")
  /context[_ ]length[_ ]exceeded|context[_ ]window[_ ]exceeded|ContextWindowExceeded/i, // codes, LiteLLM
  // Ollama "prompt too long; exceeded max context length by 4 tokens"; oMLX "… exceeds max context window".
  /exceed(?:s|ed)? (?:the )?(?:model'?s? )?(?:max(?:imum)? )?context (?:window|length|limit|size)/i,
];

// A rate or quota limit borrows the overflow's words ("Request too large … tokens per min") and
// means the opposite: waiting helps, shortening the history does not.
const OVERFLOW_CODES = new Set([
  "context_length_exceeded", // OpenAI, Azure, Groq
  "context_window_exceeded",
  "exceed_context_size_error", // llama.cpp
  "ContextWindowExceededError", // LiteLLM
]);

const RATE_LIMIT =
  /tokens per (?:min|minute|hour|day)|requests per (?:min|minute|day)|\b(?:TPM|RPM|TPD|RPD)\b|rate.?limit|quota|RESOURCE_EXHAUSTED/i;

/**
 * True when the error says the request is too big for the model's context window.
 *
 * Reads every server's wording on meaning (a prompt, input or request too long for, or exceeding, a
 * context, window, length or limit) and the codes that say it (`context_length_exceeded`,
 * llama.cpp's `exceed_context_size_error`, LiteLLM's `ContextWindowExceededError`), wherever the
 * words sit: a body's `error`, a top-level message, a relay's JSON inside a string, a stream's
 * in-band error. Never true for a 429, a `rate_limit_exceeded`, or anything about tokens or requests
 * per minute/day or a quota — OpenAI's 429 "Request too large … tokens per min" and Groq's 413
 * "Request too large … (TPM)" borrow the words and mean a rate limit. A `ContextOverflow` is one.
 */
export function isOverflow(error: unknown): boolean {
  if (ContextOverflow.isInstance(error)) return true;
  const facts = readError(error);
  if (facts.status === 429 || facts.code === "rate_limit_exceeded" || RATE_LIMIT.test(facts.text))
    return false;
  if (OVERFLOW_CODES.has(String(facts.code)) || OVERFLOW_CODES.has(String(facts.type))) return true;
  return OVERFLOW_WORDINGS.some((re) => re.test(facts.text));
}

// "Still loading, ask again shortly", in each server's words: llama.cpp's "Loading model" (also a
// router build while it swaps), Hugging Face's "Model x is currently loading" (with
// estimated_time), TGI and proxies' "model is (still) loading", llama-swap's "swapping model".
const LOADING_WORDINGS =
  /\bloading model\b|\bmodel\b[^.\n]{0,120}\b(?:is|still) (?:currently |still )?loading\b|\bmodel (?:is )?(?:currently |still )?(?:loading|being loaded)\b|\bswapping models?\b|\bmodel (?:is )?warming up\b/i;

/**
 * True for a server still loading the model (llama.cpp's 503 "Loading model").
 *
 * A 503 whose words say the model is loading: llama.cpp's "Loading model" (type
 * `unavailable_error`, also what a router build answers while it swaps models), Hugging Face's
 * "Model … is currently loading" (which carries `estimated_time`), and a proxy's "swapping model".
 * A 503 that says nothing about loading is false: it stays on the ordinary backoff. A model that
 * failed to load, or one that is not loaded at all (LM Studio's 404 "No models loaded"), is false.
 */
export function isModelLoading(error: unknown): boolean {
  const facts = readError(error);
  if (facts.status !== 503) return false;
  if (/\bfailed to load\b|\bunable to (?:start|load)\b|\berror loading model\b/i.test(facts.text))
    return false;
  return (
    LOADING_WORDINGS.test(facts.text) ||
    facts.objects.some((o) => typeof own(o, "estimated_time") === "number")
  );
}

// Errors that are the same however often they are sent, though the status says "server error".
const DETERMINISTIC_5XX = [
  /tools param requires --jinja/i, // llama.cpp started without --jinja
  /requires more system memory/i, // Ollama cannot load the model at all
  /json\.exception\.parse_error/i, // the body we sent did not parse
  // llama.cpp (recorded from b9749): a request whose tools or messages it could not read ("Failed to
  // parse tools: Unsupported tool type", "Failed to parse messages: Missing 'role'"), and an image or
  // audio part sent to a model loaded without its projector ("image input is not supported - hint: …
  // provide the mmproj"), each a 500 with type server_error.
  /Failed to parse (?:tools|messages)\b/i,
  /\b(?:image|audio) input is not supported\b/i,
  // llama.cpp: a request with `n` other than 1 ("Only one completion choice is allowed", a 500
  // server_error in b3000-era builds, "Illegal param: only one …" in older ones).
  /\bonly one completion choice is allowed\b/i,
  // A schema no grammar could be built from (an older llama.cpp's 500, vLLM's xgrammar, a chat
  // template's parser): `readRefusal` reads it as a refusal under a 5xx too, and a resend fails alike.
  ...GRAMMAR_WORDINGS,
  /unable to start process|upstream command exited/i, // llama-swap: the model's server would not start
  // oMLX: a tool-call id the model's tokenizer refuses (mistral_common), the same on every resend.
  ...TOOL_CALL_ID_WORDINGS,
  // A chat template that takes no system message (SGLang's 500), a user message after a tool one,
  // or several tool calls in one assistant message.
  ...ROLE_WORDINGS.map((wording) => wording.re),
];

// The `type` or `code` of a server's error that says "a fault of ours, or too many requests: ask
// again": llama.cpp's and OpenAI's `server_error` (recorded), OpenAI's `rate_limit_exceeded`
// (recorded), and `internal_error` / `internal_server_error`, `overloaded` / `overloaded_error`.
const TRANSIENT_KINDS = new Set([
  "server_error",
  "internal_error",
  "internal_server_error",
  "overloaded",
  "overloaded_error",
  "rate_limit_exceeded",
]);

// The `code` or `type` of a 429 that no wait ends: OpenAI's "You exceeded your current quota, please
// check your plan and billing details" (`insufficient_quota`). Only the code: Gemini words a
// per-minute quota the same way, and that one does pass.
const OUT_OF_CREDIT = new Set(["insufficient_quota"]);

// A gateway or upstream that ran out of time, in the words a proxy writes into the stream.
const GATEWAY_TIMEOUT =
  /\b(?:upstream|gateway|proxy)\b[^.\n]{0,40}\b(?:timed out|timeout)\b|\bgateway time-?out\b/i;

function kindWord(value: unknown): string {
  return typeof value === "string" ? value.toLowerCase() : "";
}

/** An error's kind: its `name`, or its class name where the class left `name` as "Error" (openai-node). */
function kindOf(error: unknown): string {
  try {
    return kindOfUnsafe(error);
  } catch {
    return ""; // a Proxy whose traps throw has no kind
  }
}

function kindOfUnsafe(error: unknown): string {
  if (typeof error !== "object" || error === null) return "";
  const name = (error as { name?: unknown }).name;
  if (typeof name === "string" && name !== "Error") return name;
  const ctor = (error as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof ctor === "string" ? ctor : "";
}

function isAbort(error: unknown): boolean {
  const kind = kindOf(error);
  return kind === "AbortError" || kind === "APIUserAbortError";
}

/**
 * True when sending the same request again may succeed.
 *
 * That is: a lost connection or a timeout (no
 * status), an endpoint that went silent (`EndpointSilent`), 408, 409, 425, 429 (every 429 but
 * OpenAI's `insufficient_quota`, an account out of credit that no wait ends; the
 * "Request too large … tokens per min" one included: it is waited through, never read as an
 * overflow), and 5xx other than a few that are the same every time (llama.cpp's "tools param
 * requires --jinja flag", "Failed to parse tools" / "Failed to parse messages", and "image input is
 * not supported" for a model loaded without its projector, "Only one completion choice is allowed"
 * for an `n` other than 1, Ollama's out-of-memory load failure, a
 * body the server could not parse, a schema no grammar could be built from — every wording `readRefusal` reads as a grammar
 * failure —, oMLX's refusal of a tool-call id that is not nine letters and digits). An error with no status
 * (one a server sent inside a stream) whose `type` or `code` is `server_error`, `internal_error`,
 * `internal_server_error`, `overloaded`, `overloaded_error` or `rate_limit_exceeded` is read as that
 * 5xx or 429 would be, and so is `@loopwright/stream`'s `"server-error"` for a gateway's words in the
 * stream ("upstream request timed out", "Gateway Timeout"), the 504 it stands for.
 * Never true for an abort, an overflow, or any other 4xx.
 */
export function isTransient(error: unknown): boolean {
  try {
    return transient(error);
  } catch {
    return false; // a Proxy whose traps throw: nothing says a resend would help
  }
}

function transient(error: unknown): boolean {
  // An overflow is never transient, whatever its status (a 408/409/425 can carry overflow words).
  if (isAbort(error) || isOverflow(error)) return false;
  const kind = kindOf(error);
  if (kind === "EndpointSilent" || kind === "TimeoutError") return true;
  // @loopwright/stream's error for a stream whose connection dropped before it finished.
  if (kind === "StreamError" && (error as { code?: unknown }).code === "connection-lost") return true;
  const facts = readError(error);
  const status = facts.status;
  // A gateway's error sent inside the stream in words ("upstream request timed out", "Gateway
  // Timeout"): the 504 it stands for, whatever status-less shape carried it.
  if (
    status === undefined &&
    kind === "StreamError" &&
    (error as { code?: unknown }).code === "server-error" &&
    GATEWAY_TIMEOUT.test(facts.text)
  ) {
    return true;
  }
  if (status === undefined) {
    if (typeof error !== "object" || error === null) return false;
    // An error a server sent inside a stream often names no status, only what kind it is: the same
    // fault as a 5xx or a 429, spelled in words.
    if (
      facts.objects.some(
        (o) => TRANSIENT_KINDS.has(kindWord(o.type)) || TRANSIENT_KINDS.has(kindWord(o.code)),
      )
    ) {
      return !DETERMINISTIC_5XX.some((re) => re.test(facts.text));
    }
    const e = error as { code?: unknown; cause?: { code?: unknown } };
    const code = typeof e.code === "string" ? e.code : typeof e.cause?.code === "string" ? e.cause.code : "";
    return (
      kind === "APIConnectionError" ||
      kind === "APIConnectionTimeoutError" ||
      /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EAI_AGAIN|UND_ERR_SOCKET|UND_ERR_CONNECT_TIMEOUT)$/.test(
        code,
      ) ||
      /socket hang up|fetch failed|terminated|other side closed/i.test(facts.text)
    );
  }
  // OpenAI's 429 for an account out of credit: billing, not load — no wait ends it.
  if (
    status === 429 &&
    facts.objects.some((o) => OUT_OF_CREDIT.has(kindWord(o.code)) || OUT_OF_CREDIT.has(kindWord(o.type)))
  ) {
    return false;
  }
  if (status === 429 || status === 408 || status === 409 || status === 425) return true;
  if (status >= 500) {
    return !DETERMINISTIC_5XX.some((re) => re.test(facts.text));
  }
  return false;
}

/** Options for `backoffMs`. */
export interface BackoffOptions {
  /** The first wait before jitter (default 1000 ms), a finite number from 0; doubles per attempt. */
  baseMs?: number | undefined;
  /** The longest computed wait (default 30 000 ms), a finite number from 0. */
  maxMs?: number | undefined;
  /**
   * The longest wait a server's own hint is honoured up to (default 120 000 ms), a number from 0;
   * `Infinity` honours any hint in full.
   */
  maxHintMs?: number | undefined;
  /** A source of numbers in [0, 1), for jitter (default `Math.random`). */
  random?: (() => number) | undefined;
  /**
   * The current time in ms, for an HTTP-date `retry-after` on a response without a `Date` header
   * (default `Date.now`); with one, the date is measured against the server's own clock.
   */
  now?: (() => number) | undefined;
}

/**
 * A header's number, or the first of a list of numbers: a header sent twice reaches us joined
 * (`"2, 2"`), and read whole that is neither a number nor, as an HTTP date, a time still ahead.
 * `undefined` for anything else (an HTTP date has letters in it).
 */
function firstNumber(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+(\.\d+)?\s*(,\s*\d+(\.\d+)?\s*)*$/.test(value)) return undefined;
  const first = Number(value.split(",")[0]);
  // Four hundred digits read as Infinity: no wait a server meant.
  return Number.isFinite(first) ? first : undefined;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const MONTH = "(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)";
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
// RFC 9110's three forms of an HTTP date, each followed by the end or by another copy (", …"):
// IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", obsolete RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT",
// and asctime "Sun Nov  6 08:49:37 1994" (which is GMT too). Only these: `Date.parse` reads almost
// anything as some date ("-1" as 2001), and a malformed value is no hint.
const IMF_FIXDATE = new RegExp(
  `^(?:mon|tue|wed|thu|fri|sat|sun), (\\d{1,2}) ${MONTH} (\\d{4}) ${TIME} GMT(?=\\s*(?:,|$))`,
  "i",
);
const RFC_850 = new RegExp(
  `^(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT(?=\\s*(?:,|$))`,
  "i",
);
const ASCTIME = new RegExp(
  `^(?:mon|tue|wed|thu|fri|sat|sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})(?=\\s*(?:,|$))`,
  "i",
);

/**
 * The first HTTP date in a header value, in ms since the epoch, or `undefined` when the value is not
 * one of RFC 9110's three forms (or names no real day and time). A two-digit RFC 850 year is the
 * one nearest `reference` that is not more than 50 years ahead of it, as RFC 9110 says.
 */
function httpDate(value: string | undefined, reference: number): number | undefined {
  if (value === undefined) return undefined;
  const parts = dateParts(value.trim(), reference);
  if (!parts) return undefined;
  const { year, month, day, hour, minute, second } = parts;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const at = Date.UTC(year, MONTHS.indexOf(month.toLowerCase()), day, hour, minute, Math.min(second, 59));
  // 31 Feb rolls over into March: no such day.
  return new Date(at).getUTCDate() === day ? at : undefined;
}

interface DateParts {
  year: number;
  month: string;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** The fields of one of the three HTTP-date forms at the start of `text`, or `undefined`. */
function dateParts(text: string, reference: number): DateParts | undefined {
  const clock = (m: RegExpExecArray, at: number) => ({
    hour: Number(m[at]),
    minute: Number(m[at + 1]),
    second: Number(m[at + 2]),
  });
  const imf = IMF_FIXDATE.exec(text);
  if (imf) {
    return { day: Number(imf[1]), month: imf[2] as string, year: Number(imf[3]), ...clock(imf, 4) };
  }
  const rfc850 = RFC_850.exec(text);
  if (rfc850) {
    const thisYear = new Date(Number.isFinite(reference) ? reference : Date.now()).getUTCFullYear();
    let year = 2000 + Number(rfc850[3]);
    while (year > thisYear + 50) year -= 100;
    return { day: Number(rfc850[1]), month: rfc850[2] as string, year, ...clock(rfc850, 4) };
  }
  const asctime = ASCTIME.exec(text);
  if (asctime) {
    return {
      month: asctime[1] as string,
      day: Number(asctime[2]),
      year: Number(asctime[6]),
      ...clock(asctime, 3),
    };
  }
  return undefined;
}

/**
 * The server's own "wait this long" in ms: `retry-after-ms`, `retry-after`, "try again in 644ms", or
 * "retry after 20 seconds". A wait past a double once in ms (`estimated_time: 1e306`, 309 digits of
 * seconds) is no wait a server meant, and no hint: `Infinity` would reach `setTimeout`, which runs it
 * at once.
 */
function hintMs(error: unknown, now: () => number): number | undefined {
  const ms = statedMs(error, now);
  return ms !== undefined && Number.isFinite(ms) ? ms : undefined;
}

/** {@link hintMs} before the finite check. */
function statedMs(error: unknown, now: () => number): number | undefined {
  const facts = readError(error);
  const ms = firstNumber(facts.headers?.("retry-after-ms"));
  if (ms !== undefined) return ms;
  const after = facts.headers?.("retry-after");
  if (after !== undefined) {
    const seconds = firstNumber(after);
    if (seconds !== undefined) return seconds * 1000;
    // A date is on the server's clock: measured against the response's own Date header where it
    // sent one (a server whose clock is behind ours still gets the wait it asked for), else ours.
    const local = now();
    const date = httpDate(after, local);
    if (date !== undefined) return Math.max(0, date - (httpDate(facts.headers?.("date"), local) ?? local));
  }
  // Hugging Face's loading 503: { error: "Model … is currently loading", estimated_time: 20.0 } (seconds).
  // The body's own field, never a polluted Object.prototype's (an inherited one was every error's wait).
  const estimated = facts.objects.map((o) => own(o, "estimated_time")).find((t) => typeof t === "number");
  if (typeof estimated === "number" && Number.isFinite(estimated) && estimated >= 0) return estimated * 1000;
  // OpenAI "Please try again in 644ms" / "in 20s", Groq "in 1m23.5s", "in 2h1m".
  // Each part read by this one match: searched for again in what it matched, a part's `\d+` was
  // tried from every digit of a long run (quadratic; 64 KiB of digits took 16 s).
  const said = /try again in (?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)(ms|s))?/i.exec(facts.text);
  if (said?.[1] !== undefined || said?.[2] !== undefined || said?.[3] !== undefined) {
    const [, hours = "0", minutes = "0", amount = "0", unit] = said;
    const ms =
      Number(hours) * 3_600_000 +
      Number(minutes) * 60_000 +
      Number(amount) * (unit?.toLowerCase() === "ms" ? 1 : 1000);
    if (ms > 0 || /^0/.test(said[1] ?? said[2] ?? said[3] ?? "")) return ms;
  }
  // Azure's 429 (and relays' copies of it, which drop the header): "Please retry after 60 seconds."
  const words =
    /\b(?:retry after|try again in) (\d+(?:\.\d+)?) ?(milliseconds?|ms|seconds?|secs?|minutes?|mins?)\b/i.exec(
      facts.text,
    );
  if (words) {
    const unit = (words[2] as string).toLowerCase();
    const scale = unit === "ms" || unit.startsWith("milli") ? 1 : unit.startsWith("s") ? 1000 : 60_000;
    return Number(words[1]) * scale;
  }
  return statedReset(facts);
}

// Go's duration units, longest first as a duration prints them ("1h2m3.5s", "20ms", "6m0s").
const DURATION_UNITS: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ns: 1e-6,
};
const DURATION_ORDER = ["h", "m", "s", "ms", "us", "ns"];
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|us|µs|μs|ns|h|m|s)/y;

/**
 * A duration as OpenAI's `x-ratelimit-reset-*` headers print it (Go's form: `1s`, `6m0s`, `20ms`,
 * `1h2m3.5s`) in ms, or `undefined` for anything else: parts of a whole or decimal number and a unit
 * (`h`, `m`, `s`, `ms`, `us`/`µs`, `ns`), each unit at most once and longest first, nothing around
 * them (a sign, a space, a bare number, an exponent), at most 64 characters, and a finite sum.
 */
function resetDurationMs(value: string | undefined): number | undefined {
  if (value === undefined || value.length === 0 || value.length > 64) return undefined;
  let at = 0;
  let last = -1;
  let ms = 0;
  while (at < value.length) {
    DURATION_PART.lastIndex = at;
    const part = DURATION_PART.exec(value);
    if (!part) return undefined;
    const unit = part[2] as string;
    const rank = DURATION_ORDER.indexOf(unit === "µs" || unit === "μs" ? "us" : unit);
    if (rank <= last) return undefined;
    last = rank;
    ms += Number(part[1]) * (DURATION_UNITS[unit] as number);
    at = DURATION_PART.lastIndex;
  }
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * OpenAI's own "when the limit resets" on a 429 that carries no `retry-after` / `retry-after-ms`:
 * `x-ratelimit-reset-requests` where `x-ratelimit-remaining-requests` is 0, `-tokens` where
 * `x-ratelimit-remaining-tokens` is 0, the larger where both or neither say so. A malformed reset
 * (or one of 0: a limit that has reset refuses nothing, and Azure sends 0 beside a remaining of -1)
 * is no hint.
 */
function statedReset(facts: ReturnType<typeof readError>): number | undefined {
  const header = facts.headers;
  if (facts.status !== 429 || !header) return undefined;
  if (header("retry-after") !== undefined || header("retry-after-ms") !== undefined) return undefined;
  const kinds = ["requests", "tokens"];
  const exhausted = kinds.filter((kind) => /^\s*0+\s*$/.test(header(`x-ratelimit-remaining-${kind}`) ?? ""));
  let most: number | undefined;
  for (const kind of exhausted.length > 0 ? exhausted : kinds) {
    const ms = resetDurationMs(header(`x-ratelimit-reset-${kind}`)?.trim());
    if (ms !== undefined && ms > 0 && (most === undefined || ms > most)) most = ms;
  }
  return most;
}

/**
 * The wait the server asked for, in ms, uncapped; `undefined` where it asked for none (or for a
 * wait past what a number holds in ms, which is no wait a server meant).
 *
 * Reads `retry-after-ms`, `retry-after` (seconds, or an HTTP date in one of RFC 9110's three forms
 * — IMF-fixdate, RFC 850, asctime — measured against the response's own `Date` header, else `now`,
 * default `Date.now`; any other value, such as `-1`, is no hint), Hugging Face's `estimated_time`, "Please try again in 644ms" or Azure's "Please
 * retry after 20 seconds" in the message, and, on a 429 with no `retry-after` / `retry-after-ms`,
 * OpenAI's `x-ratelimit-reset-requests` / `-tokens` (Go durations: `20ms`, `6m0s`, `1h2m3.5s`) —
 * the reset of what `x-ratelimit-remaining-*: 0` says ran out, else the larger; a malformed or
 * zero reset is no hint —
 * the same hints `backoffMs` honours. A caller that caps the wait compares this with its cap to
 * tell the user what was asked and what it will wait. Never throws for any error it is given; a
 * `now` that throws is the caller's own exception, and is passed on.
 */
export function retryAfterMs(
  error: unknown,
  options: { now?: (() => number) | undefined } = {},
): number | undefined {
  const now = own(options, "now") as (() => number) | undefined;
  const hint = hintMs(error, now ?? Date.now);
  return hint === undefined ? undefined : Math.ceil(hint);
}

/**
 * A `backoffMs` option in ms: its default when absent, else a number from 0 (`Infinity` only where
 * `unbounded`). A NaN or negative wait would fire at once and turn the backoff into a tight loop,
 * so anything else throws `RangeError` naming the option.
 */
function msOption(name: string, value: unknown, fallback: number, unbounded: boolean): number {
  if (value === undefined) return fallback;
  if (typeof value === "number" && value >= 0 && (unbounded || Number.isFinite(value))) return value;
  throw new RangeError(
    `backoffMs: ${name} must be ${unbounded ? "a number of ms from 0 (Infinity: no cap)" : "a finite number of ms from 0"}, got ${String(value)}.`,
  );
}

/**
 * How long to wait before a retry, in ms: the server's hint, else exponential backoff with jitter.
 *
 * For retry number `attempt` (0 for the first retry): the server's own hint
 * when the error carries one (`retry-after-ms`, `retry-after` in seconds or as an HTTP date read as
 * `retryAfterMs` reads it, or OpenAI's
 * "Please try again in 644ms", Azure's "Please retry after 20 seconds", or on a 429 without a
 * retry-after OpenAI's `x-ratelimit-reset-requests` / `-tokens`), capped at `maxHintMs`; otherwise exponential from `baseMs` with
 * equal jitter (between half and all of `baseMs · 2^attempt`, capped at `maxMs`). Throws
 * `RangeError` for an `attempt` that is not a whole number from 0, and for a `baseMs` or `maxMs`
 * that is not a finite number from 0 or a `maxHintMs` that is not a number from 0 (`Infinity`
 * honours any hint in full), naming it; `null` options are none.
 */
export function backoffMs(attempt: number, error?: unknown, given: BackoffOptions = {}): number {
  if (!Number.isInteger(attempt) || attempt < 0) {
    throw new RangeError(`backoffMs: attempt must be a whole number from 0, got ${String(attempt)}.`);
  }
  // A null options object is no options; its own fields only, never a polluted Object.prototype's
  // (an inherited `now` or `random` that is no function threw inside).
  const options = ownOptions<BackoffOptions>(given, ["baseMs", "maxMs", "maxHintMs", "random", "now"]);
  const baseMs = msOption("baseMs", options.baseMs, 1000, false);
  const maxMs = msOption("maxMs", options.maxMs, 30_000, false);
  const maxHintMs = msOption("maxHintMs", options.maxHintMs, 120_000, true);
  const random = options.random ?? Math.random;
  const hint = error === undefined ? undefined : hintMs(error, options.now ?? Date.now);
  if (hint !== undefined) return Math.min(Math.ceil(hint), maxHintMs);
  // 2^1024 is Infinity, and 0 · Infinity is NaN: past 2^64 the wait is at its ceiling anyway.
  const ceiling = Math.min(baseMs * 2 ** Math.min(attempt, 64), maxMs);
  const r = random();
  const jitter = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0.5;
  return Math.round(ceiling / 2 + (ceiling / 2) * jitter);
}
