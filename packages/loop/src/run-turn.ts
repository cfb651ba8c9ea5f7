import {
  type Calibration,
  contextChars,
  defaultCalibration,
  type RequestBodyLike,
  requestTokens,
  toolTokens,
} from "@loopwright/ledger";
import {
  type BackoffOptions,
  backoffMs,
  ContextOverflow,
  type EndpointCapabilities,
  isModelLoading,
  isOverflow,
  isTransient,
  type ModelCapabilities,
  modelCapabilitiesFor,
  negotiate,
  type RequestBody,
  retryAfterMs,
} from "@loopwright/negotiate";
import { isGrammarError } from "@loopwright/schema-compat";
import {
  type ChatClientLike,
  EndpointSilent,
  listenForAbort,
  type StreamTurnOptions,
  streamTurn,
  type Turn,
} from "@loopwright/stream";
import { errorMessage, type OverflowBreakdown } from "./errors.js";
import { ownField, ownView } from "./own.js";

/** Builds one attempt's body from what the endpoint and the model have refused so far. */
export type BuildRequest = (
  supports: EndpointCapabilities,
  model: ModelCapabilities | undefined,
) => RequestBody;

/** Options of `runTurn`: the stream's own, plus the retry, loading and sizing policy. */
export interface RunTurnOptions extends Omit<StreamTurnOptions, "produced"> {
  /** The model's name at the endpoint: turns on the model-level latches. */
  model?: string | undefined;
  /** extraBody keys the endpoint may refuse by name and the request can do without. */
  droppable?: readonly string[] | undefined;
  /**
   * The `reasoning_effort` the body asks for (the loop's `askedEffort`: an `extraBody` one, the
   * config's or a step's plan's, where there is one, else `reasoningEffort`): a request that goes out
   * with a higher rung because the model refuses the one asked is said so in a notice naming both
   * (once per model and climb).
   */
  reasoningEffort?: string | undefined;
  /**
   * Re-sends after a transient failure (a dropped connection, a 5xx, a 429, a silent stream) where
   * nothing was produced. Default 2. A silent endpoint is re-sent at most once of these; a 429 or
   * 503 that says when to come back (`retry-after`) is waited for without spending them, up to
   * `RATE_LIMIT_RETRIES` times and `backoff.maxHintMs` in all (then the ordinary budget applies).
   */
  maxRetries?: number | undefined;
  /** How long to wait for a server still loading the model, polling every `loadingPollMs`; 0 turns it off. Default 120 000. */
  loadingTimeoutMs?: number | undefined;
  /** Interval between polls of a loading server. Default 3000. */
  loadingPollMs?: number | undefined;
  /**
   * Backoff tuning (base, ceiling, jitter source) for transient failures. `maxHintMs` (default
   * `DEFAULT_MAX_RETRY_WAIT_MS`, 120 000) caps a server's `retry-after`: each wait, and the sum of
   * the waits a turn spends on them. `Infinity` waits as long as the server asks, however long (past
   * the 24.8 days one timer takes, too), until `signal` aborts.
   */
  backoff?: BackoffOptions | undefined;
  /** The window to size the request against before sending; absent or 0 sends unsized. */
  contextLimit?: number | undefined;
  /**
   * Characters per token for that sizing; absent, what `calibration` has learnt for this endpoint
   * and model (4, deliberately low, until it has a reading).
   */
  charsPerToken?: number | undefined;
  /**
   * Where characters-per-token readings are kept: read for the size guard, and handed each answered
   * request's body with the prompt the endpoint reported for it. Default: the default calibration
   * (`@loopwright/ledger`'s `calibrate`).
   */
  calibration?: Pick<Calibration, "calibrate" | "charsPerTokenFor"> | undefined;
  /** Told, in words, of every retry, wait and downgrade. */
  onNotice?: ((message: string) => void) | undefined;
}

/** The longest delay one Node timer takes; a longer one fires after 1 ms (`TimeoutOverflowWarning`). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Waits `ms` (a loading poll, a backoff, a server's `retry-after`), rejecting with `signal.reason`
 * as soon as `signal` aborts. The wait is made in steps of at most `maxStepMs` (default and ceiling:
 * the longest one timer takes, about 24.8 days), so a longer one — a `retry-after` let through by
 * `maxHintMs: Infinity` — is waited for in full instead of ending at once, and `Infinity` waits
 * until the abort. The abort is honoured in every step, and leaves no timer behind.
 */
export function sleep(ms: number, signal: AbortSignal | undefined, maxStepMs = MAX_TIMER_MS): Promise<void> {
  const most = maxStepMs >= 1 ? Math.min(maxStepMs, MAX_TIMER_MS) : MAX_TIMER_MS;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    let left = ms;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stop = signal
      ? listenForAbort(signal, () => {
          clearTimeout(timer);
          reject(signal.reason);
        })
      : undefined;
    const done = (): void => {
      stop?.();
      resolve();
    };
    const step = (): void => {
      // Always one timer, even for 0 (or NaN, as Node reads it): a retry is never sent in the same tick.
      const now = Math.min(left, most);
      left -= now;
      timer = setTimeout(left > 0 ? step : done, now);
    };
    step();
  });
}

/** How many 429s and 503s that say when to come back one turn waits through (besides `maxRetries`). */
export const RATE_LIMIT_RETRIES = 10;

/** The default cap on a server's `retry-after`: per wait, and summed over one turn's waits. */
export const DEFAULT_MAX_RETRY_WAIT_MS = 120_000;

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A server's hint as it said it: whole seconds as such, anything finer to a tenth. */
function asking(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : seconds(ms);
}

/** The reply ceiling a body asks for; 0 for none. */
export function ceilingOf(body: RequestBody): number {
  // The body's own fields: one that sets no ceiling read a polluted Object.prototype.max_tokens as
  // its ceiling (NaN for a string, and every compacting run refused by planCompaction).
  return ownField(body, "max_completion_tokens") ?? ownField(body, "max_tokens") ?? 0;
}

/**
 * What a body takes of the window as the size guard counts it: the prompt estimate
 * (`requestTokens` at `charsPerToken`) plus the reply ceiling. Compaction reads the same number, so
 * a request the guard would refuse is one a fold is planned for.
 */
export function requestSize(body: RequestBody, charsPerToken: number): number {
  return requestTokens(body as unknown as RequestBodyLike, { charsPerToken }) + ceilingOf(body);
}

/** What each overflow `runTurn` threw measured, for the loop's `AgentLoopOverflow` to say. */
const breakdowns = new WeakMap<object, OverflowBreakdown>();

/** The breakdown `runTurn` measured for this overflow, or undefined (one it did not throw). */
export function overflowBreakdown(overflow: unknown): OverflowBreakdown | undefined {
  return typeof overflow === "object" && overflow !== null ? breakdowns.get(overflow) : undefined;
}

/** Records on `overflow` where the room of `body` went; never throws (a breakdown is only told). */
function measureOverflow(
  overflow: ContextOverflow,
  body: RequestBody,
  charsPerToken: number,
  window: number | undefined,
): void {
  try {
    const tools = toolTokens((body as unknown as RequestBodyLike).tools, { charsPerToken });
    const total = requestTokens(body as unknown as RequestBodyLike, { charsPerToken });
    breakdowns.set(overflow, {
      ...(window !== undefined && window > 0 ? { window } : {}),
      tools,
      transcript: Math.max(0, total - tools),
      reply: ceilingOf(body),
    });
  } catch {
    // A body the estimate cannot read: the overflow is told without a breakdown.
  }
}

/** A step's first body as `runTurn` builds it: with what this model has refused, not as if it were unknown. */
export function firstBody(
  build: BuildRequest,
  supports: EndpointCapabilities,
  model: string | undefined,
): RequestBody {
  return build(supports, model ? modelCapabilitiesFor(supports, model) : undefined);
}

/**
 * `turn` with its usage held to what token counts can be, each change told through `onNotice`
 * (and `turn` itself when nothing needed one): a count that is not whole (a relay that averaged or
 * scaled it) rounded; a cache count above the prompt it is part of, or a reasoning count above the
 * completion, cut to it (the cache hit ratio read 500 % and the uncached part 0); a total below the
 * prompt and completion it adds up raised to their sum; and a count the stream read as none because
 * the server sent no count there (a negative, a string: `turn.discardedUsage`) named with the value
 * sent. The run's usage, metrics, the ledger and the size guard's calibration all read the held counts.
 */
function heldUsage(turn: Turn, onNotice: ((message: string) => void) | undefined): Turn {
  const given = turn.usage;
  const usage = { ...given };
  const said: string[] = [];
  const fractional: string[] = [];
  for (const key of ["prompt", "completion", "total", "cached", "uncached", "reasoningTokens"] as const) {
    const value = ownField(usage, key);
    if (value !== undefined && !Number.isInteger(value)) {
      fractional.push(`${key} ${value}`);
      usage[key] = Math.round(value);
    }
  }
  if (fractional.length > 0)
    said.push(`counts that are not whole numbers (${fractional.join(", ")}) were rounded`);
  if (usage.cached > usage.prompt) {
    said.push(
      `its cached count (${usage.cached}) is more than the prompt it is part of (${usage.prompt}), so it was cut to it`,
    );
    usage.cached = usage.prompt;
    if (ownField(usage, "uncached") !== undefined) usage.uncached = 0;
  }
  const reasoningTokens = ownField(usage, "reasoningTokens");
  if (reasoningTokens !== undefined && reasoningTokens > usage.completion) {
    said.push(
      `its reasoning count (${reasoningTokens}) is more than the completion it is part of (${usage.completion}), so it was cut to it`,
    );
    usage.reasoningTokens = usage.completion;
  }
  if (usage.total < usage.prompt + usage.completion) {
    said.push(
      `its total (${usage.total}) is less than the prompt and completion it adds up (${usage.prompt} + ${usage.completion}), so it was taken as their sum`,
    );
    usage.total = usage.prompt + usage.completion;
  }
  const discarded = ownField(turn, "discardedUsage") ?? [];
  if (discarded.length > 0) {
    said.push(
      `${discarded.length === 1 ? "a count" : "counts"} no token count can be (${discarded
        .map(({ field, sent }) => `${field} ${sent}`)
        .join(", ")}) ${discarded.length === 1 ? "was" : "were"} read as none`,
    );
  }
  if (said.length === 0) return turn;
  onNotice?.(`The server's token usage for this turn was not one it can be: ${said.join("; ")}.`);
  return { ...turn, usage };
}

/**
 * One turn against an endpoint: the retry loop around the negotiation around the stream.
 *
 * Each attempt's body comes from `build`, so whatever `negotiate` latched is left out of the next.
 * A transient failure before anything was produced is re-sent up to `maxRetries` times after
 * `backoffMs`; a server still loading the model is polled on its own clock without spending them.
 * Nothing is re-sent once the model started answering — except a grammar failure (`isGrammarError`)
 * after tool-call pieces alone, nothing shown yet: that is sent once more with relaxed tools, latched
 * at the endpoint (`strictSchemas: false`). A request that cannot fit `contextLimit`
 * (prompt estimate plus the body's reply ceiling) throws `ContextOverflow` before it is sent, and
 * an endpoint's own context-exceeded refusal is rethrown as `ContextOverflow` with its words.
 * The size guard divides by what `calibration` learnt for this endpoint and model, and an answered
 * request whose prompt the endpoint counted is a new reading for it.
 */
export async function runTurn(
  client: ChatClientLike,
  supports: EndpointCapabilities,
  build: BuildRequest,
  options: RunTurnOptions = {},
): Promise<Turn> {
  // Its own fields only (never one a polluted Object.prototype holds: an inherited `contextLimit`).
  options = ownView(options);
  const calibration = options.calibration ?? defaultCalibration;
  if (options.contextLimit && options.contextLimit > 0) {
    // Sized once: a downgraded re-send is never larger, and the transcript does not change between retries.
    // Built as the first attempt will be: with what this model has refused, not as if it were unknown.
    const first = firstBody(build, supports, options.model);
    const charsPerToken =
      options.charsPerToken ?? calibration.charsPerTokenFor(supports, options.model ?? first.model);
    const needed = requestSize(first, charsPerToken);
    if (needed > options.contextLimit) {
      const overflow = new ContextOverflow(
        `the request needs about ${needed} tokens (prompt estimate plus the reply ceiling) and the window is ${options.contextLimit}.`,
      );
      measureOverflow(overflow, first, charsPerToken, options.contextLimit);
      throw overflow;
    }
  }
  // The body each attempt sent: the one answered is the last, and its prompt is a reading.
  let sent: RequestBody | undefined;
  const track: BuildRequest = (supports, model) => {
    sent = build(supports, model);
    return sent;
  };
  // What negotiate latches it tells through onNotice itself (stream_options, a temperature, relaxed
  // schemas…); the turn tells only what it changes on its own (relaxed tools after a grammar
  // failure mid-stream).
  let answered: Turn;
  try {
    answered = await attempts(client, supports, track, options);
  } catch (error) {
    // The endpoint's refusal measured on the body it refused, against the window it named.
    if (sent && ContextOverflow.isInstance(error) && !breakdowns.has(error)) {
      try {
        const model = options.model ?? sent.model;
        const charsPerToken = options.charsPerToken ?? calibration.charsPerTokenFor(supports, model);
        measureOverflow(error, sent, charsPerToken, error.window ?? options.contextLimit);
      } catch {
        // A calibration that throws: the overflow is told without a breakdown.
      }
    }
    throw error;
  }
  const turn = heldUsage(answered, options.onNotice);
  if (sent && turn.usage.prompt > 0) {
    const model = options.model ?? sent.model;
    // A count the tools cannot be in says the template left them out: no reading of the text.
    if (toolsUnseen(sent, turn, supports, model, options.onNotice)) return turn;
    calibration.calibrate(supports, model, sent as unknown as RequestBodyLike, turn.usage.prompt);
  }
  return turn;
}

/**
 * More characters of the tools' JSON than any rendering of them puts in one token: tokenizers hold
 * 2.5–4 characters of JSON a token, and a template that writes the tools more tersely than JSON
 * (gpt-oss's TypeScript-like namespace) halves the characters at most. A prompt counted at fewer
 * tokens than the tools' characters over this did not hold them.
 */
const MOST_CHARS_PER_TOKEN = 12;

/** Endpoints (each model apart) already told their template shows no tools, in this process. */
const toldToolsUnseen = new WeakMap<EndpointCapabilities, Set<string>>();

/**
 * True when the endpoint counted fewer prompt tokens than the request's tool definitions alone
 * must take: its chat template did not render them (llama.cpp's or vLLM's with a template that
 * takes no tools — `--chat-template chatml`, a GGUF's old template), so the model never saw them and
 * cannot call them; or it cut the prompt to a context smaller than the request (Ollama's `num_ctx`,
 * silently). Told once per endpoint and model in a process. Only a count with nothing read from the
 * cache is judged: a server that counts only what it prefilled counts less.
 */
function toolsUnseen(
  sent: RequestBody,
  turn: Turn,
  supports: EndpointCapabilities,
  model: string,
  onNotice: ((message: string) => void) | undefined,
): boolean {
  if (!sent.tools?.length || turn.usage.cached > 0) return false;
  const chars = contextChars({ messages: [], tools: sent.tools } as unknown as RequestBodyLike).tools;
  const least = Math.floor(chars / MOST_CHARS_PER_TOKEN);
  if (turn.usage.prompt >= least) return false;
  const told = toldToolsUnseen.get(supports) ?? new Set<string>();
  toldToolsUnseen.set(supports, told);
  if (!told.has(model)) {
    told.add(model);
    onNotice?.(
      `The server counted ${turn.usage.prompt} prompt tokens for a request whose ${sent.tools.length} tool definition(s) alone are ${chars} characters (at least ${least} tokens in any tokenizer): the model never saw the tools and cannot call them. Either its chat template does not show the tools to ${model} — llama.cpp and vLLM render tools only through a template that takes them (llama.cpp's /props says so in chat_template_caps.supports_tools): serve the model's own tool-calling template (llama.cpp: --jinja, without --chat-template chatml) — or the server cut the prompt to a context smaller than the request (Ollama's num_ctx does so without a word).`,
    );
  }
  return true;
}

/**
 * What an attempt stopped by the turn's signal throws in place of its error, so negotiate reads no
 * refusal off it: the stream throws the signal's reason, which is whatever the host aborted with.
 * The error is held in a private field: negotiate reads a refusal off an error's `cause`, `error`
 * and other fields, never off one of these.
 */
class Stopped extends Error {
  readonly #thrown: unknown;
  constructor(thrown: unknown) {
    super("stopped by the turn's signal");
    this.#thrown = thrown;
  }
  /** What the stopped attempt threw. */
  thrown(): unknown {
    return this.#thrown;
  }
}

/** The retry loop of `runTurn`: re-sends, waits for a loading model, and rethrows what it cannot answer. */
async function attempts(
  client: ChatClientLike,
  supports: EndpointCapabilities,
  build: BuildRequest,
  options: RunTurnOptions,
): Promise<Turn> {
  const { maxRetries = 2, loadingTimeoutMs = 120_000, loadingPollMs = 3000, onNotice, signal } = options;
  const { model, droppable, backoff, reasoningEffort } = options;
  // Whether the user has seen anything: tool-call pieces are produced but never shown.
  let shown = false;
  const stream: StreamTurnOptions = {
    signal,
    idleMs: options.idleMs,
    firstChunkMs: options.firstChunkMs,
    onOutput: (text) => {
      shown = true;
      options.onOutput?.(text);
    },
    onRetract: options.onRetract,
    onScratchpadClosed: options.onScratchpadClosed,
    onThinking: (text) => {
      shown = true;
      options.onThinking?.(text);
    },
    onToolCallDelta: options.onToolCallDelta,
    fences: options.fences,
    startInReasoning: options.startInReasoning,
  };
  // Set once this turn relaxed the tools itself, after a grammar failure mid-stream (and said so).
  const told = { relaxed: false };
  let retries = 0;
  // Silent attempts re-sent (at most one), and the time spent on servers' retry-after.
  let silences = 0;
  let hinted = 0;
  let hintedRetries = 0;
  const capMs = backoff?.maxHintMs ?? DEFAULT_MAX_RETRY_WAIT_MS;
  let loadingSince: number | undefined;
  for (;;) {
    const produced = { value: false };
    try {
      return await negotiate(
        supports,
        (supports, produced, modelCaps, sent) => {
          const body = build(supports, modelCaps);
          // Handed back so a refusal of the format is told by what was sent (json_object or a schema).
          sent.body = body;
          return streamTurn(client, body, { ...stream, produced }).catch((error: unknown) => {
            // Stopped: whatever the signal was aborted with (another request's refusal, a side
            // task's error, any value) is no answer of this server's, and negotiate must not read
            // it as a refusal, latch a field off for the model and re-send without it.
            throw signal?.aborted ? new Stopped(error) : error;
          });
        },
        { model, droppable, onNotice, produced, reasoningEffort },
      );
    } catch (thrown) {
      // A stop's own error, as it was thrown before it was wrapped.
      const error = thrown instanceof Stopped ? thrown.thrown() : thrown;
      if (signal?.aborted) throw error;
      if (isOverflow(error)) {
        // The body's own words (not the client's "400 …" line), the original error as cause.
        throw ContextOverflow.fromError(error);
      }
      if (produced.value) {
        if (told.relaxed && isGrammarError(error)) {
          // The same failure with relaxed tools: the schemas do not explain it. Said, so the host
          // looks at the server rather than its tools.
          onNotice?.(
            `The server failed the same way with relaxed tools (${errorMessage(error)}): its tool-call parser could not read the model's output, which the schemas do not explain — a llama.cpp server started with --special prints end-of-turn tokens that parser does not expect, and a chat template that is not the model's own makes output it cannot read.`,
          );
          throw error;
        }
        // llama.cpp's grammar let the model out of a string and its parser failed mid-stream: the
        // schemas are what failed, so a request nobody saw is sent once more with relaxed tools.
        if (shown || !supports.strictSchemas || !isGrammarError(error)) throw error;
        // Set once this turn relaxed the tools after a grammar failure mid-stream (and said so).
        supports.strictSchemas = false;
        told.relaxed = true;
        onNotice?.(
          `The server failed on the tool schemas' grammar (${errorMessage(error)}); sending relaxed tools from now on.`,
        );
        continue;
      }
      if (loadingTimeoutMs > 0 && isModelLoading(error)) {
        const now = Date.now();
        if (loadingSince === undefined) {
          loadingSince = now;
          onNotice?.(
            `The server is loading the model; waiting up to ${Math.round(loadingTimeoutMs / 1000)} s.`,
          );
        }
        if (now - loadingSince < loadingTimeoutMs) {
          await sleep(Math.min(loadingPollMs, loadingTimeoutMs - (now - loadingSince)), signal);
          continue;
        }
        throw error;
      }
      if (maxRetries === 0 || !isTransient(error)) throw error;
      const status = (error as { status?: unknown } | null)?.status;
      const asked = status === 429 || status === 503 ? retryAfterMs(error) : undefined;
      if (asked !== undefined && hintedRetries < RATE_LIMIT_RETRIES) {
        // The server said when to come back: waited on its own budget, not maxRetries.
        const wait = Math.min(asked, capMs);
        if (hinted + wait > capMs) {
          onNotice?.(
            `${errorMessage(error)} — the server asked to wait ${asking(asked)}; this turn has already waited ${seconds(hinted)} on such requests, and the most it waits is ${seconds(capMs)} (maxRetryWaitSeconds): giving up.`,
          );
          throw error;
        }
        hinted += wait;
        hintedRetries++;
        onNotice?.(
          `${errorMessage(error)} — the server asked to wait ${asking(asked)} (retry-after); waiting ${seconds(wait)}${
            wait < asked ? `, the most this waits (maxRetryWaitSeconds)` : ""
          }, then retrying.`,
        );
        await sleep(wait, signal);
        continue;
      }
      const silent = EndpointSilent.isInstance(error);
      if (retries >= maxRetries || (silent && silences >= 1)) throw error;
      const wait = backoffMs(retries, error, backoff);
      retries++;
      if (silent) silences++;
      onNotice?.(
        silent
          ? `${errorMessage(error)} — sending it once more in ${seconds(wait)}; a second silence ends the turn.`
          : `${errorMessage(error)} — retrying in ${seconds(wait)} (${retries} of ${maxRetries}).`,
      );
      await sleep(wait, signal);
    }
  }
}
