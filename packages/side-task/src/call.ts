import { defaultClientPool, type Endpoint, EndpointConfigError, timeoutMs } from "@loopwright/client";
import {
  buildBody,
  checkExtraBody,
  defaultCapabilityStore,
  type EndpointCapabilities,
  isModelLoading,
  type ModelCapabilities,
  type ModelParams,
  modelCapabilitiesFor,
  negotiate,
  readRefusal,
} from "@loopwright/negotiate";
import { ALL_FENCES, readUsage, stripThinking, type UsageLike } from "@loopwright/stream";
import { replyText } from "@loopwright/tool-calls";
import { describeValue, errorText, isPlainObject, SideTaskError } from "./errors.js";
import {
  checkInput,
  hasImages,
  IMAGE_URL_LEFT_OUT,
  isRemoteImage,
  type SideTaskInput,
  textOnly,
} from "./input.js";
import { ownData, ownField, ownView } from "./own.js";
import { headOf, wellFormed } from "./text.js";
import type { SideTaskKind, SideTaskUsage } from "./usage.js";

/** The narrow client a side task calls: `chat.completions.create`, as the `openai` SDK has it. */
export interface SideTaskClient {
  chat: {
    completions: {
      create(body: never, options?: { signal?: AbortSignal; timeout?: number }): PromiseLike<unknown>;
    };
  };
}

/** Where a side task gets its client: `@loopwright/client`'s pool, or anything with its `getClient`. */
export interface SideTaskClients {
  getClient(endpoint: Endpoint): SideTaskClient;
}

/** Where a side task reads and latches refusals: `@loopwright/negotiate`'s store, or its shape. */
export interface SideTaskCapabilities {
  capabilitiesFor(
    baseUrl: string,
    apiKey?: string,
    headers?: Readonly<Record<string, string>>,
  ): EndpointCapabilities;
}

/**
 * Options every side task takes. Anything absent is the side task's own default, never the agent's;
 * `null` in any of them reads as absent (a nullable column comes back from JSON so).
 */
export interface SideTaskOptions {
  /**
   * Reply ceiling in tokens, a whole number; `0` sends none. Default: the task's own (ask 512,
   * summariser 1024, preselect 256).
   */
  maxTokens?: number | null | undefined;
  /** Sampling temperature. Default: the task's own (0.3; preselect 0). */
  temperature?: number | null | undefined;
  /**
   * Absent or `"off"`: the no-thinking hints are sent (`NO_THINKING_HINTS`). A level (`"low"`,
   * `"high"`…) is sent as `reasoning_effort` in their place.
   */
  reasoningEffort?: string | null | undefined;
  /**
   * Fields merged into the body after the temperature (sampler settings a model card asks for).
   * Each key is droppable: a field the model refuses by name is latched off for it and the
   * request sent again without it. A `chat_template_kwargs` here is merged with the no-thinking
   * hint's, so only an `enable_thinking` of its own replaces the hint.
   */
  extraBody?: Record<string, unknown> | null | undefined;
  /**
   * Abandons the side task; it then rejects with `SideTaskError` (`aborted`), the signal's reason on
   * `cause`. The reason is never read as the server's answer, whatever it is.
   */
  signal?: AbortSignal | null | undefined;
  /**
   * The time bound in ms. Default: the endpoint's `requestTimeoutSeconds`, else
   * `SIDE_TASK_TIMEOUT_MS`. `0` here, or a `requestTimeoutSeconds` of `0`, waits for as long as the
   * server takes; a bound past what a timer holds (about 24.8 days), `Infinity` too, is held to that. A response
   * begun by then (its headers in, after one more round of the event loop) gets a second more for
   * its body.
   */
  timeoutMs?: number | null | undefined;
  /**
   * Told, in words, when a request is changed to get past a refusal in a way that costs or drops
   * something: `negotiate`'s latches in its words, the side task's own in these (not the ceiling
   * renamed `max_completion_tokens`, which loses nothing). What it throws (or, async, rejects with)
   * is ignored: the request is still sent again, and the answer stands.
   */
  onNotice?: ((message: string) => void) | null | undefined;
  /**
   * Told what each request cost: called once for every answer a server sent back (a request sent
   * again after a refusal or a window that ran out reports each answer), with the side task, the
   * model and the server's token counts (`SideTaskUsage`; zero where it reported none). A request
   * refused or never answered reports nothing. What it throws (or, async, rejects with) is ignored.
   */
  onUsage?: ((report: SideTaskUsage) => void) | null | undefined;
  /** The capability latches to read and write; default `@loopwright/negotiate`'s default store. */
  capabilities?: SideTaskCapabilities | null | undefined;
  /** The clients to call through; default `@loopwright/client`'s default pool. */
  clients?: SideTaskClients | null | undefined;
}

/** A side task's reply: the answer text and the finish reason the server sent (`undefined` where none). */
export interface SideTaskReply {
  /** The answer, with any fenced scratchpad (`<think>…</think>` and the like) taken out. */
  text: string;
  /** `finish_reason` as sent: `"stop"`, `"length"` for a reply cut off at the ceiling, … */
  finishReason: string | undefined;
  /**
   * The model's refusal, where it sent one in place of content (OpenAI's `message.refusal`), trimmed;
   * absent otherwise. `text` is then usually `""`.
   */
  refusal?: string;
}

/**
 * The body fields a side task sends to keep a thinking model from thinking.
 *
 * What it sends to keep a thinking model from deliberating over a small job: llama.cpp,
 * vLLM and SGLang render the chat template with thinking off. A server that refuses the field
 * has it latched off for that model, like any `extraBody` key.
 */
export const NO_THINKING_HINTS: Readonly<Record<string, unknown>> = Object.freeze({
  chat_template_kwargs: Object.freeze({ enable_thinking: false }),
});

/** The time bound of a side task on an endpoint with no `requestTimeoutSeconds`: two minutes. */
export const SIDE_TASK_TIMEOUT_MS = 120_000;

/** A structured answer being asked for: the schema as sent, and how to say it in words. */
export interface JsonShape {
  name: string;
  /** The schema normalised for strict servers (`sanitizeSchema`). */
  strictSchema: Record<string, unknown>;
  /** The lesser form for a server that could not build a grammar (`relaxSchema`). */
  relaxedSchema: Record<string, unknown>;
  strict: boolean;
}

/** Per (endpoint, model): a model that refused an image part. Lives on the store's own objects. */
const refusesImages = new WeakSet<ModelCapabilities>();
/**
 * Per (endpoint, model): a model whose endpoint refused an image given by URL ("Image URLs are not
 * supported") and takes images only inline, as `data:` URLs. Lives on the store's own objects.
 */
const refusesImageUrls = new WeakSet<ModelCapabilities>();

/** The `response_format` lesser forms, as the latches allow: json_schema, json_object, then none. */
function responseFormat(
  shape: JsonShape,
  supports: EndpointCapabilities,
  model: ModelCapabilities,
): Record<string, unknown> | undefined {
  if (model.structuredOutput) {
    const schema = supports.strictSchemas ? shape.strictSchema : shape.relaxedSchema;
    const strict = shape.strict && supports.strictSchemas;
    return { type: "json_schema", json_schema: { name: shape.name, schema, ...(strict ? { strict } : {}) } };
  }
  if (!model.droppedFields.includes("response_format")) return { type: "json_object" };
  return undefined;
}

/** A non-array object; false for a revoked Proxy (which `Array.isArray` throws on), never a throw. */
function isObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  try {
    return !Array.isArray(value);
  } catch {
    return false;
  }
}

function statusOf(error: unknown): number | undefined {
  const status = isObject(error) ? error.status : undefined;
  return typeof status === "number" ? status : undefined;
}

/** Every message-like string an SDK error carries, for matching a refusal's wording. */
function errorWords(error: unknown): string {
  const parts: string[] = [errorText(error)];
  if (isObject(error)) {
    const body = error.error;
    if (typeof body === "string") parts.push(body);
    else if (isObject(body)) parts.push(JSON.stringify(body));
  }
  return parts.join("\n");
}

const IMAGE_REFUSALS = [
  /\bimages?(?:_url| input| inputs| content| parts?)?\b[^\n]{0,80}\b(?:not supported|unsupported|only supported|not allowed|not enabled)/i,
  /(?:does not|doesn't|cannot|can't) (?:support|accept|take|process|handle) (?:images?|image inputs?|vision|multimodal)/i,
  /\bnot a multimodal model\b/i,
  /\bAt most 0 image/i, // vLLM with the image limit at zero
  /\bmmproj\b/i, // llama.cpp without a projector
  /\bcontent must be a string\b/i, // servers that take no content parts at all
  /\bOnly ['"`]?text['"`]? content(?: type| parts?)? (?:is|are) (?:supported|allowed)/i, // mlx_lm.server, a 404
  /\bunknown variant [`'"]?image_url\b/i, // DeepSeek: serde reading the body ("expected `text`")
  /\bmissing data required for image input\b/i, // Ollama, a model with no vision tower
  /\bNo endpoints found that support image input\b/i, // OpenRouter, a 404
];

/**
 * A refusal of images given by URL, not of images: "Image URLs are not supported" (Moonshot's Kimi;
 * Bedrock's Anthropic models, "remote image URLs are not supported"), which take a `data:` URL. The
 * same words read as a refusal of images (`IMAGE_REFUSALS`) when no image was sent by URL.
 */
const IMAGE_URL_REFUSALS = [
  /\bimage urls\b[^\n]{0,40}\b(?:not supported|unsupported|not allowed)/i,
  /\b(?:remote|external|http|https|public|web) (?:image )?urls?\b[^\n]{0,40}\b(?:not supported|unsupported|not allowed)/i,
];

/** A 4xx refusing images given by URL (asked only of an attempt that sent one). */
function isImageUrlRefusal(error: unknown): boolean {
  const status = statusOf(error);
  if (status === undefined || status < 400 || status >= 500 || status === 429) return false;
  const words = errorWords(error);
  return IMAGE_URL_REFUSALS.some((re) => re.test(words));
}

/**
 * A refusal of the image parts: a 4xx, or a 5xx (llama.cpp's, Ollama's) that names them. Asked only
 * of an attempt that carried an image.
 */
function isImageRefusal(error: unknown): boolean {
  const status = statusOf(error);
  if (status === undefined || status < 400 || status === 429) return false;
  const words = errorWords(error);
  return IMAGE_REFUSALS.some((re) => re.test(words));
}

/** A refusal of `response_format` itself, after `json_object` was sent (LM Studio takes only json_schema or text). */
function isResponseFormatRefusal(error: unknown): boolean {
  const status = statusOf(error);
  if (status === undefined || status < 400 || status >= 500 || status === 429) return false;
  return /response_format/i.test(errorWords(error));
}

/** How much of a server's error a `request-failed` message quotes; the whole error is its `cause`. */
const ERROR_WORDS_CHARS = 2000;

/**
 * The server's words for a refusal, as a message quotes them: the first `ERROR_WORDS_CHARS`, and how
 * many more there were (llama.cpp's "Failed to parse messages: …" echoes the message it could not
 * read, an image's data URL and all).
 */
function serverWords(error: unknown): string {
  return quoted(errorText(error), "the whole error is the cause");
}

/**
 * What reading `value` as an error is read throws, or `undefined` where it throws nothing: its
 * prototype (`instanceof`), and its `message`, `status`, `code` and `error`. A host's client may
 * throw a revoked Proxy or an object whose getters throw; a `SideTaskError` names it rather than
 * a `TypeError` of the reading reaching the caller.
 */
function readingThrows(value: unknown): unknown {
  try {
    void (value instanceof Error);
    if ((typeof value === "object" && value !== null) || typeof value === "function") {
      for (const key of ["message", "status", "code", "error"]) void Reflect.get(value, key);
    }
    return undefined;
  } catch (error) {
    return error ?? new Error("it threw undefined");
  }
}

/** The HTTP status an error carries (the `openai` SDK's `APIError`), if any; never throws. */
function httpStatus(error: unknown): number | undefined {
  try {
    const status = ownField(error, "status");
    return typeof status === "number" ? status : undefined;
  } catch {
    return undefined;
  }
}

/** `words` as a message quotes them: the first `ERROR_WORDS_CHARS`, and how many more there were. */
function quoted(words: string, whole: string): string {
  if (words.length <= ERROR_WORDS_CHARS) return words;
  const head = headOf(words, ERROR_WORDS_CHARS);
  return `${head}… [${words.length - head.length} more characters; ${whole}]`;
}

/**
 * What a successful (200) answer with no message says went wrong, in the server's words: its own
 * `error`, a string or an object's `message` (with its `code`, where it gives one), else the object
 * as JSON. OpenRouter answers so for an error met once the model has begun (the upstream provider
 * down, or rate limiting it): `{"error":{"code":502,"message":"…"}}` with status 200. `undefined`
 * where the answer holds no error.
 */
function errorInAnswer(completion: unknown): string | undefined {
  const error = ownField(completion, "error");
  if (typeof error === "string") return error.trim() === "" ? undefined : error.trim();
  if (!isObject(error)) return undefined;
  const message = ownField(error, "message");
  const code = ownField(error, "code");
  const said = typeof message === "string" && message.trim() !== "" ? message.trim() : JSON.stringify(error);
  return typeof code === "number" || (typeof code === "string" && code.trim() !== "")
    ? `${said} (code ${typeof code === "string" ? JSON.stringify(code.trim().slice(0, 60)) : code})`
    : said;
}

/** The message text of a non-streamed completion, content parts joined. */
function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (isObject(part) && typeof part.text === "string" ? part.text : "")).join("");
  }
  return "";
}

/**
 * A reply as a side task reads it: `SideTaskReply`, and the refusal the model answered in place of
 * content where the server sent one (OpenAI's `message.refusal`, with structured outputs).
 */
export interface SideCallReply extends SideTaskReply {
  /** The prompt and completion tokens the server counted, where its `usage` said (each a whole number). */
  usage?: { prompt?: number; completion?: number };
  /**
   * The error a 200 answer held in place of a message, in the server's words (`errorInAnswer`): the
   * side task throws `request-failed` with them once the negotiation is over. Not thrown from inside
   * it, where the server's words would be read as a refusal to answer by sending again.
   */
  failed?: string;
}

/** A whole token count of 0 or more, or `undefined`. */
function tokens(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function readReply(completion: unknown, model: string): SideCallReply {
  const choices = isObject(completion) ? completion.choices : undefined;
  const choice = Array.isArray(choices) ? choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice.message)) {
    const failed = errorInAnswer(completion);
    if (failed !== undefined) {
      return Object.assign(Object.create(null) as SideCallReply, {
        text: "",
        finishReason: undefined,
        failed,
      });
    }
    throw new SideTaskError(
      "no-reply",
      `${model} answered without a message (${describeValue(completion)} with no choices[0].message).`,
    );
  }
  // The reply up to where it ends: a turn the model went on to invent past an end-of-turn token the
  // server did not stop at (its user's words, say) is no part of an answer or a summary.
  const { content } = stripThinking(replyText(messageText(choice.message.content)), { fences: ALL_FENCES });
  const finish = ownField(choice, "finish_reason");
  // No prototype: a `refusal` or `usage` only a polluted Object.prototype holds is never read as the model's.
  const reply: SideCallReply = Object.assign(Object.create(null) as SideCallReply, {
    text: content.trim(),
    finishReason: typeof finish === "string" ? finish : undefined,
  });
  const refusal = ownField(choice.message, "refusal");
  if (typeof refusal === "string" && refusal.trim() !== "") reply.refusal = refusal.trim();
  const given = ownData(ownField(completion, "usage"));
  const usage = isObject(given) ? given : undefined;
  const prompt = tokens(usage?.prompt_tokens);
  const generated = tokens(usage?.completion_tokens);
  if (prompt !== undefined || generated !== undefined) {
    reply.usage = {
      ...(prompt !== undefined ? { prompt } : {}),
      ...(generated !== undefined ? { completion: generated } : {}),
    };
  }
  return reply;
}

/**
 * Tells `onUsage` what an answer cost (zeros where the server counted nothing). What the host's
 * sink throws is ignored: the answer is still read.
 */
function tellUsage(
  onUsage: SideTaskOptions["onUsage"],
  task: SideTaskKind,
  model: string,
  completion: unknown,
): void {
  if (typeof onUsage !== "function") return;
  let raw: unknown;
  try {
    // Its own fields only: the reader below follows the chain (a polluted `.cached_tokens`).
    raw = ownData(ownField(completion, "usage"));
  } catch {
    raw = undefined;
  }
  try {
    const told: unknown = onUsage({ task, model, usage: readUsage(raw as UsageLike | undefined) });
    // An async sink that rejects would be an unhandled rejection (which ends a Node process).
    if (typeof (told as { then?: unknown } | null)?.then === "function") {
      Promise.resolve(told).catch(() => {});
    }
  } catch {
    // The report was the host's to take; the side task's answer stands.
  }
}

/**
 * `onNotice` as a side task tells it: what the host's sink throws, or (async) rejects with, is
 * ignored, as `onUsage`'s is. A notice is only told: the side task's answer stands, and so does the
 * request sent again past a refusal it tells of (a sink that threw there failed the task as the
 * model refusing it, in the sink's words, and the request was never sent again).
 */
export function noticeTeller(onNotice: SideTaskOptions["onNotice"]): (message: string) => void {
  return (message) => {
    if (typeof onNotice !== "function") return;
    try {
      const told: unknown = onNotice(message);
      // An async sink that rejects would be an unhandled rejection (which ends a Node process).
      if (typeof (told as { then?: unknown } | null)?.then === "function")
        Promise.resolve(told).catch(() => {});
    } catch {
      // The notice was the host's to take; the side task goes on.
    }
  };
}

/** Checks the endpoint and model every side task is handed. */
export function checkTarget(endpoint: unknown, model: unknown, where: string): asserts endpoint is Endpoint {
  if (!isObject(endpoint) || typeof endpoint.baseUrl !== "string" || endpoint.baseUrl.trim() === "") {
    // An object's fault is its baseUrl: say which (the openai SDK's `baseURL` is the usual one),
    // where "and was an object" left the host to guess.
    const other = isObject(endpoint)
      ? ["baseURL", "baseurl", "base_url", "url"].find((key) => Object.hasOwn(endpoint, key))
      : undefined;
    const why = !isObject(endpoint)
      ? `was ${describeValue(endpoint)}`
      : other !== undefined && endpoint.baseUrl == null
        ? `had no baseUrl (it names the URL as ${other}; the field is spelled baseUrl)`
        : endpoint.baseUrl == null
          ? "had no baseUrl"
          : `had a baseUrl that is ${typeof endpoint.baseUrl === "string" ? "blank" : describeValue(endpoint.baseUrl)}`;
    throw new SideTaskError(
      "invalid-input",
      `${where}: the endpoint must be an object with a baseUrl (e.g. { baseUrl: "http://127.0.0.1:8080/v1" }), and ${why}.`,
    );
  }
  if (typeof model !== "string" || model.trim() === "") {
    throw new SideTaskError(
      "invalid-input",
      `${where}: the model must be the non-empty name the endpoint knows it by, and was ${describeValue(model)}.`,
    );
  }
}

/**
 * Checks a number option; `null` reads as absent (a nullable column comes back from JSON so).
 * `Infinity` only where `unbounded` (a time bound past any timer is held to the longest one).
 */
function checkNumber(value: unknown, name: string, where: string, unbounded = false): void {
  if (value == null || (unbounded && value === Number.POSITIVE_INFINITY)) return;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    // "must be a number of 0 or more" told a host passing Infinity that Infinity was not one.
    throw new SideTaskError(
      "invalid-input",
      `${where}: ${name} must be a finite number of 0 or more, and was ${describeValue(value)}.`,
    );
  }
}

/** Checks a count of tokens: a safe whole number of 0 or more, or absent (`null` too). */
function checkCount(value: unknown, name: string, where: string): void {
  if (value != null && (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: ${name} must be a whole number of 0 or more, and was ${describeValue(value)}.`,
    );
  }
}

/** The defaults of one kind of side task. */
export interface TaskDefaults {
  maxTokens: number;
  temperature: number;
}

/**
 * The longest timer Node holds (about 24.8 days). A longer one fires after 1 ms instead, so a bound
 * past it is held to it, and it is what "no bound" asks of the client.
 */
const MAX_TIMER_MS = 2_147_483_647;

/** How often a side task asks again while the server is loading the model. */
const LOADING_POLL_MS = 1000;

/** The longest a side task waits for a model to load, whatever its time bound: runTurn's default. */
const LOADING_WAIT_MS = 120_000;

/** Resolves after `ms`, or at once when `signal` fires (the next request then fails as abandoned). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * How long a request whose response has begun (its headers are in) may take over the time bound to
 * hand over its body, read whole before the SDK answers.
 */
const BODY_GRACE_MS = 1000;

/**
 * A side task's time bound in ms, `0` for none: `timeoutMs`, else the endpoint's
 * `requestTimeoutSeconds` (absent: `SIDE_TASK_TIMEOUT_MS`), held to what a timer holds. The
 * request's bound, and `askJson`'s for its whole call (the request and the schema's check after it).
 */
export function sideTaskLimit(options: SideTaskOptions, endpoint: Endpoint): number {
  const absent = endpoint.requestTimeoutSeconds === undefined || endpoint.requestTimeoutSeconds === null;
  // The endpoint's requestTimeoutSeconds: 0 is "wait for ever" (timeoutMs reads it as undefined).
  const fromEndpoint = absent ? SIDE_TASK_TIMEOUT_MS : (timeoutMs(endpoint) ?? 0);
  return Math.min(options.timeoutMs ?? fromEndpoint, MAX_TIMER_MS);
}

/**
 * Signals the request is sent with: the caller's, and the time bound — `timeoutMs`, else the
 * endpoint's `requestTimeoutSeconds` (absent: `SIDE_TASK_TIMEOUT_MS`), `0` in either for none.
 *
 * When the bound falls due, the request is given one round of the event loop first: a timer that
 * comes due while the host's loop was held up (a long synchronous task) runs before the reads that
 * came meanwhile, the server's answer among them. If by then the response has begun (`answering`:
 * its headers are in), its body gets `BODY_GRACE_MS` more; otherwise it is timed out then.
 */
function bound(options: SideTaskOptions, endpoint: Endpoint) {
  const limit = sideTaskLimit(options, endpoint);
  const controller = new AbortController();
  let timedOut = false;
  let answering = () => false;
  const expire = () => {
    timedOut = true;
    controller.abort(new Error(`timed out after ${limit} ms`));
  };
  let grace: ReturnType<typeof setTimeout> | undefined;
  let round: ReturnType<typeof setImmediate> | undefined;
  const timer =
    limit > 0
      ? setTimeout(() => {
          round = setImmediate(() => {
            round = undefined;
            if (answering()) grace = setTimeout(expire, BODY_GRACE_MS);
            else expire();
          });
        }, limit)
      : undefined;
  const caller = options.signal;
  const onAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    limit,
    timedOut: () => timedOut,
    /** Tells the bound how to see whether the request in flight is answering (its response begun). */
    watch(answered: () => boolean) {
      answering = answered;
    },
    done() {
      if (timer) clearTimeout(timer);
      if (round) clearImmediate(round);
      if (grace) clearTimeout(grace);
      caller?.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * Sets `answered` once the response to `request` has begun: its headers are in. The SDK's promise
 * tells it (`asResponse`); a client whose promise has no such thing never says so.
 */
function whenAnswering(request: PromiseLike<unknown>, answered: () => void): void {
  try {
    const asResponse = (request as { asResponse?: unknown }).asResponse;
    if (typeof asResponse !== "function") return;
    Promise.resolve(asResponse.call(request)).then(answered, () => {});
  } catch {
    // A client's promise whose field cannot be read is only not watched.
  }
}

/**
 * A plain object's own fields, each read once, in an object with no prototype (a `"__proto__"` key
 * stays a key, for `checkExtraBody` to refuse); `undefined` for anything else, and where a field
 * throws when read, for `checkExtraBody` to read `given` itself and name what threw.
 */
function fieldsOf(given: unknown): Record<string, unknown> | undefined {
  try {
    if (typeof given !== "object" || given === null || Array.isArray(given)) return undefined;
    const proto = Object.getPrototypeOf(given);
    if (proto !== Object.prototype && proto !== null) return undefined;
    const fields: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(given)) fields[key] = (given as Record<string, unknown>)[key];
    return fields;
  } catch {
    return undefined;
  }
}

/**
 * `extraBody` as it will be sent: a copy made through JSON of each field as read once (its top
 * fields, by {@link fieldsOf}). Held to negotiate's `checkExtraBody`, the one rule `buildBody` holds a run's extraBody to
 * (so the two cannot drift), its refusal thrown as `SideTaskError` (`invalid-input`) with its
 * words after `where` (`ask: extraBody.stop[1] is undefined, which JSON writes as null… Nothing
 * was sent.`), the check's error as its `cause`: a value that is not a plain object of body fields
 * (a Map, a class's instance), a `"__proto__"` key, a field the request is built with of its own
 * (`OWNED_BODY_FIELDS`: `model`, `messages`, `stream`, `tools`; one set to `undefined` is let be,
 * as it sends nothing), and at any depth what JSON cannot send as written — a BigInt, a cycle,
 * `NaN` and `±Infinity` (written as `null`), a `Map` or a `Set` (written as `{}`), a function or a
 * symbol, `undefined` in an array, a field that cannot be read. `buildBody` refuses those too, but
 * inside the negotiation, where its error read as the model's refusal (`request-failed`, "m
 * refused the side task") of a request never sent. A `stream_options` (a run's config may carry
 * vLLM's) is let through here and left out of the request, which goes unstreamed.
 */
export function sendableExtraBody(given: unknown, where: string): Record<string, unknown> | undefined {
  if (given == null) return undefined;
  // Each field is read once here, and what was read is checked and copied.
  const fields = fieldsOf(given) ?? (given as Record<string, unknown>);
  try {
    checkExtraBody(fields);
  } catch (error) {
    throw new SideTaskError("invalid-input", `${where}: ${errorText(error)} Nothing was sent.`, {
      cause: error,
    });
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) {
    let text: string | undefined;
    try {
      text = JSON.stringify(fields[key]);
    } catch (error) {
      // Checked, it threw only now: a getter or a toJSON that answers differently a second time.
      throw new SideTaskError(
        "invalid-input",
        `${where}: extraBody.${key.length <= 60 ? key : `${key.slice(0, 60)}…`} could not be written as JSON (${errorText(error)}). Nothing was sent.`,
        { cause: error },
      );
    }
    // A field set to undefined is not sent.
    if (text !== undefined) out[key] = JSON.parse(text);
  }
  return out;
}

/**
 * An endpoint the client cannot use (`EndpointConfigError`: a key HTTP cannot send, a base URL that
 * is not http(s), a negative timeout…) as the `invalid-input` it is; anything else `what` threw as
 * `request-failed`.
 */
function setupError(error: unknown, what: string, where: string): SideTaskError {
  if (SideTaskError.isInstance(error)) return error;
  if (readingThrows(error) === undefined && EndpointConfigError.isInstance(error)) {
    return new SideTaskError("invalid-input", `${where}: ${errorText(error)} Nothing was sent.`, {
      cause: error,
    });
  }
  return new SideTaskError("request-failed", `${where}: ${what} threw: ${errorText(error)}`, {
    cause: error,
  });
}

/**
 * `work`, or a rejection with the signal's reason as soon as it fires, so the time bound and a stop
 * hold whatever the client does with the signal it is handed. The listener goes when either wins;
 * a late rejection of `work` is handled.
 */
export function untilAborted<T>(work: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  const settled = Promise.resolve(work);
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      settled.catch(() => {});
      reject(signal.reason);
    };
    if (signal.aborted) return stop();
    signal.addEventListener("abort", stop, { once: true });
    settled.then(
      (value) => {
        signal.removeEventListener("abort", stop);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

/**
 * What an attempt throws once the time bound or the caller's signal stopped it, in place of the stop's
 * reason (kept on `reason`): the reason is whatever the host aborted with — the main turn's refusal, another
 * side task's `SideTaskError`, a Proxy — and read as the server's answer, negotiate latched a field
 * off for the model, a `SideTaskError` was thrown on as this task's, and one that throws when read
 * escaped as a bare TypeError.
 */
class Stopped extends Error {
  /** The stop's reason. Not `cause`: negotiate reads a refusal off an error's cause as well. */
  readonly reason: unknown;
  constructor(reason: unknown) {
    super("stopped by the time bound or the caller's signal");
    this.reason = reason;
  }
}

/**
 * Checks the options every side task takes, throwing `SideTaskError` (`invalid-input`) naming the
 * one of the wrong type, before anything is sent. `null` in any of them reads as absent.
 */
export function checkOptions(given: unknown, where: string): asserts given is SideTaskOptions {
  if (!isPlainObject(given)) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: options must be an object, and was ${describeValue(given)}.`,
    );
  }
  const options = given as SideTaskOptions;
  checkCount(options.maxTokens, "maxTokens", where);
  checkNumber(options.temperature, "temperature", where);
  checkNumber(options.timeoutMs, "timeoutMs", where, true);
  const effort = options.reasoningEffort as unknown;
  if (effort != null && typeof effort !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `${where}: reasoningEffort must be a string such as "low" ("off" or absent for the no-thinking hints), and was ${describeValue(effort)}.`,
    );
  }
  sendableExtraBody(options.extraBody, where);
  const capabilities = options.capabilities as unknown;
  if (
    capabilities != null &&
    !(isObject(capabilities) && typeof capabilities.capabilitiesFor === "function")
  ) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: capabilities must be a capability store with a capabilitiesFor function (as @loopwright/negotiate's createCapabilityStore makes), and was ${describeValue(capabilities)}.`,
    );
  }
  const clients = options.clients as unknown;
  if (clients != null && !(isObject(clients) && typeof clients.getClient === "function")) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: clients must be a client pool with a getClient function (as @loopwright/client's createClientPool makes), and was ${describeValue(clients)}.`,
    );
  }
  if (options.onUsage != null && typeof options.onUsage !== "function") {
    throw new SideTaskError(
      "invalid-input",
      `${where}: onUsage must be a function (report) => void, and was ${describeValue(options.onUsage)}.`,
    );
  }
  if (options.onNotice != null && typeof options.onNotice !== "function") {
    throw new SideTaskError(
      "invalid-input",
      `${where}: onNotice must be a function (message) => void, and was ${describeValue(options.onNotice)}.`,
    );
  }
  const signal = options.signal as unknown;
  if (
    signal != null &&
    !(
      isObject(signal) &&
      typeof signal.aborted === "boolean" &&
      typeof signal.addEventListener === "function" &&
      typeof signal.removeEventListener === "function"
    )
  ) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: signal must be an AbortSignal, and was ${describeValue(options.signal)}.`,
    );
  }
}

/**
 * One side-task request: the body built like a turn's (`buildBody` from the latches, through
 * `negotiate`), sent without streaming, read back as text. Refused images and a refused
 * `response_format` are answered here by sending less; everything else goes to the caller as a
 * `SideTaskError`.
 */
export async function sideCall(
  endpoint: Endpoint,
  model: string,
  system: string,
  input: SideTaskInput,
  options: SideTaskOptions,
  defaults: TaskDefaults,
  where: string,
  shape?: JsonShape,
  task: SideTaskKind = where as SideTaskKind,
): Promise<SideCallReply> {
  // Read as the host wrote them: never a field only a polluted Object.prototype holds.
  endpoint = ownView(endpoint);
  options = ownView(options);
  checkTarget(endpoint, model, where);
  if (typeof system !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `${where}: the system prompt must be a string ("" for none), and was ${describeValue(system)}.`,
    );
  }
  checkInput(input, where);
  checkOptions(options, where);
  const given = sendableExtraBody(options.extraBody, where);
  const notice = noticeTeller(options.onNotice);
  const store = options.capabilities ?? defaultCapabilityStore;
  let supports: EndpointCapabilities;
  let client: SideTaskClient;
  try {
    // Keyed as the loop keys a turn (its headers too), so a task on the agent's endpoint shares its latches.
    supports = store.capabilitiesFor(endpoint.baseUrl, endpoint.apiKey, endpoint.headers);
  } catch (error) {
    throw setupError(error, "capabilities.capabilitiesFor", where);
  }
  if (!isObject(supports)) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: capabilities.capabilitiesFor answered ${describeValue(supports)}, not an endpoint's capabilities.`,
    );
  }
  try {
    client = (options.clients ?? defaultClientPool).getClient(endpoint);
  } catch (error) {
    throw setupError(error, "clients.getClient", where);
  }
  let create: unknown;
  try {
    create = (client as { chat?: { completions?: { create?: unknown } } } | null)?.chat?.completions?.create;
  } catch (error) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: clients.getClient answered ${describeValue(client)} whose chat.completions.create could not be read: ${errorText(error)}.`,
      { cause: error },
    );
  }
  if (typeof create !== "function") {
    throw new SideTaskError(
      "invalid-input",
      `${where}: clients.getClient answered ${describeValue(client)} with no chat.completions.create function.`,
    );
  }
  const latches = modelCapabilitiesFor(supports, model);
  const effort = options.reasoningEffort;
  // Absent (null reads as absent), "" or "off": the no-thinking hints.
  const thinkingOff = effort == null || effort === "" || effort === "off";
  const extraBody: Record<string, unknown> = {
    ...(thinkingOff ? NO_THINKING_HINTS : {}),
    ...given,
  };
  const kwargs = given?.chat_template_kwargs;
  if (thinkingOff && isPlainObject(kwargs)) {
    // Template arguments a model card asks for sit beside the hint; only one that sets it replaces it.
    extraBody.chat_template_kwargs = {
      ...(NO_THINKING_HINTS.chat_template_kwargs as Record<string, unknown>),
      ...(kwargs as Record<string, unknown>),
    };
  }
  // On no prototype: with thinking off it holds no reasoningEffort, and a polluted
  // `Object.prototype.reasoningEffort = true` was read as the one asked (every side task refused).
  const params: ModelParams = Object.assign(Object.create(null) as ModelParams, {
    model,
    maxTokens: options.maxTokens ?? defaults.maxTokens,
    temperature: options.temperature ?? defaults.temperature,
    ...(thinkingOff ? {} : { reasoningEffort: effort }),
    extraBody,
  });
  let timing: ReturnType<typeof bound>;
  try {
    timing = bound(options, endpoint);
  } catch (error) {
    throw setupError(error, "the endpoint's time bound", where);
  }
  // negotiate tells the latches it makes (a JSON schema refused, the schema relaxed — once the
  // negotiation is over and only where that latch held —, a temperature refused…) through the
  // onNotice handed to it; this tells only what the side task itself changes (images, its own
  // json_object refused, a model loading).
  try {
    // Each round answers one refusal negotiate leaves to its caller; each latches, so three is enough.
    let round = 0;
    let loadingSince: number | undefined;
    for (;;) {
      // What the last attempt sent, and the model record it was built from: a latch goes on that
      // record, the one the next attempt reads (the store may have forgotten `latches` meanwhile).
      const sent: { images: boolean; byUrl: boolean; format: string; caps: ModelCapabilities } = {
        images: false,
        byUrl: false,
        format: "",
        caps: latches,
      };
      // The body and error of this negotiation's last attempt: a latch negotiate turns for a refusal
      // can change nothing a side task sends (a grammar of the caller's own in extraBody, a tool-call
      // id it has none of), and that body sent again draws the same refusal, a 500 as well.
      let last: { body: string; error: unknown } | undefined;
      try {
        const reply = await negotiate(
          supports,
          async (supports, _produced, caps) => {
            const modelCaps = caps ?? latches;
            sent.caps = modelCaps;
            const images = hasImages(input) && !refusesImages.has(modelCaps);
            // An endpoint that takes images only inline: those given by URL are left out, said so.
            const inlineOnly = refusesImageUrls.has(modelCaps);
            const format = shape ? responseFormat(shape, supports, modelCaps) : undefined;
            sent.format = typeof format?.type === "string" ? format.type : "";
            // A lone surrogate anywhere in the text has a server reading UTF-8 refuse the request whole.
            const content =
              images && typeof input !== "string"
                ? input.map((part) =>
                    part.type === "text"
                      ? { ...part, text: wellFormed(part.text) }
                      : inlineOnly && isRemoteImage(part)
                        ? { type: "text" as const, text: IMAGE_URL_LEFT_OUT }
                        : part,
                  )
                : wellFormed(textOnly(input));
            sent.images = typeof content !== "string" && content.some((part) => part.type === "image_url");
            sent.byUrl = typeof content !== "string" && content.some(isRemoteImage);
            const messages = [
              ...(system.trim() ? [{ role: "system", content: wellFormed(system) }] : []),
              { role: "user", content },
            ];
            const { stream_options: _usage, ...built } = buildBody(params, supports, modelCaps, messages);
            const body = { ...built, stream: false, ...(format ? { response_format: format } : {}) };
            const text = JSON.stringify(body);
            if (last?.body === text) throw last.error;
            // Each attempt has a signal of its own, linked to the bound only while it is in flight,
            // so what the client attaches to it goes with it (a model loading for minutes is asked
            // again every second: one signal for all would pile up listeners).
            const attempt = new AbortController();
            const link = () => attempt.abort(timing.signal.reason);
            if (timing.signal.aborted) link();
            else timing.signal.addEventListener("abort", link, { once: true });
            try {
              const request = client.chat.completions.create(body as never, {
                signal: attempt.signal,
                // The bound is ours; the client's own timer (the endpoint's, or two minutes) must not cut it short.
                timeout: timing.limit > 0 ? Math.min(timing.limit + 1000, MAX_TIMER_MS) : MAX_TIMER_MS,
              });
              let answered = false;
              timing.watch(() => answered);
              whenAnswering(request, () => {
                answered = true;
              });
              const completion = await untilAborted(request, attempt.signal);
              tellUsage(options.onUsage, task, model, completion);
              return readReply(completion, model);
            } catch (error) {
              // Stopped by the time bound or the caller's signal: whatever the stop's reason is (a
              // host may abort with the main turn's refusal, another side task's error, anything at
              // all), it is no answer of the server's, and negotiate must not read it as a refusal
              // and latch a field off for the model. The reason ends on the SideTaskError's `cause`.
              if (attempt.signal.aborted) throw new Stopped(error);
              // A host's client that threw what cannot be read (a revoked Proxy, an error whose
              // getters throw): said as it is now, as nothing after this can ask it what it is.
              const unreadable = readingThrows(error);
              if (unreadable !== undefined) {
                throw new SideTaskError(
                  "request-failed",
                  `${where}: the client's chat.completions.create threw ${errorText(error)}, which cannot be read as an error (reading it threw ${errorText(unreadable)}).`,
                  { cause: error },
                );
              }
              last = { body: text, error };
              // The field itself refused by name ("Unrecognized request argument supplied:
              // response_format"): json_object is that field too, and would be refused alike, one
              // request spent for nothing. negotiate latches the schema off as it answers this
              // refusal; latching the field here too sends the next request in words.
              if (sent.format === "json_schema" && !modelCaps.droppedFields.includes("response_format")) {
                const refusal = readRefusal(error);
                if (refusal?.kind === "structured-output" && refusal.name === "response_format") {
                  modelCaps.droppedFields.push("response_format");
                  notice(`${model} refused response_format; asking it for JSON in words from now on.`);
                }
              }
              throw error;
            } finally {
              timing.watch(() => false);
              timing.signal.removeEventListener("abort", link);
            }
          },
          {
            model,
            droppable: Object.keys(extraBody),
            onNotice: notice,
            reasoningEffort: params.reasoningEffort,
          },
        );
        if (reply.failed !== undefined) {
          throw new SideTaskError(
            "request-failed",
            `${where}: ${model} answered with an error in place of a reply (status 200): ${quoted(reply.failed, "the answer's error was longer")}`,
          );
        }
        return reply;
      } catch (thrown) {
        // A stop's own reason goes on `cause`, as it did before it was wrapped.
        const error = thrown instanceof Stopped ? thrown.reason : thrown;
        if (!(thrown instanceof Stopped) && SideTaskError.isInstance(error)) throw error;
        if (timing.timedOut()) {
          throw new SideTaskError(
            "timeout",
            `${where}: ${model} did not answer within ${timing.limit} ms. Raise timeoutMs (or the endpoint's requestTimeoutSeconds) for a slow model.`,
            { cause: error },
          );
        }
        if (timing.signal.aborted) {
          throw new SideTaskError("aborted", `${where}: abandoned by the caller's signal.`, { cause: error });
        }
        // A server still loading the model (llama.cpp's 503, a router swapping to this model) is
        // waited for within the time bound, as a turn waits for it, rather than failing the task.
        if (isModelLoading(error)) {
          const now = Date.now();
          const first = loadingSince === undefined;
          loadingSince ??= now;
          if (now - loadingSince < LOADING_WAIT_MS) {
            if (first)
              notice(
                `The server is loading the model ${model}; the side task waits for it, within its time bound.`,
              );
            await pause(LOADING_POLL_MS, timing.signal);
            continue;
          }
        }
        if (round < 3 && sent.byUrl && isImageUrlRefusal(error)) {
          round++;
          refusesImageUrls.add(sent.caps);
          notice(
            `${model} refused an image given by URL in a side task; sending images only inline (data: URLs) from now on, those given by URL left out.`,
          );
          continue;
        }
        if (round < 3 && sent.images && isImageRefusal(error)) {
          round++;
          refusesImages.add(sent.caps);
          notice(`${model} refused the image in a side task; sending it the text alone from now on.`);
          continue;
        }
        if (round < 3 && sent.format === "json_object" && isResponseFormatRefusal(error)) {
          round++;
          sent.caps.droppedFields.push("response_format");
          notice(`${model} refused response_format; asking it for JSON in words from now on.`);
          continue;
        }
        // A success whose body is not JSON (a proxy's login page, a web UI answering every path) is
        // the SDK's SyntaxError: not the model refusing anything, and not said to be.
        // No HTTP status at all (nothing listening at the URL, a connection cut before or while
        // the answer came): no refusal either, and not said to be one.
        const what =
          error instanceof SyntaxError
            ? "answered with something that is not JSON (a proxy's or a web page's answer?)"
            : httpStatus(error) === undefined
              ? "gave no answer (the request failed before a status came back: nothing answering at the URL, or the connection was cut)"
              : "refused the side task";
        throw new SideTaskError("request-failed", `${where}: ${model} ${what}: ${serverWords(error)}`, {
          cause: error,
        });
      }
    }
  } finally {
    timing.done();
  }
}
