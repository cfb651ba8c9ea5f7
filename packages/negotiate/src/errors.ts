import { escapeControls } from "./controls.js";
import { readError } from "./error-shape.js";
import { own } from "./own.js";
import { protoless } from "./protoless.js";

const OVERFLOW_MARK = Symbol.for("@loopwright/negotiate.ContextOverflow");
const SNAPSHOT_MARK = Symbol.for("@loopwright/negotiate.CapabilitySnapshotError");

function marked(value: unknown, mark: symbol): boolean {
  try {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[mark] === true;
  } catch {
    return false; // a Proxy whose traps throw is no error of ours
  }
}

/** `String(value)`, or a stand-in where that throws (a null-prototype object, a Proxy). */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return "the endpoint refused the request as too long for the context window";
  }
}

/** The most of the server's words a message quotes: a 1 MB error page is not a sentence. */
const QUOTED_CHARS = 300;

/**
 * The server's words as a message quotes them: on one line (each run of blanks holding a line break
 * — CR, LF, a vertical tab, a form feed, NEL, U+2028 or U+2029 — is one space, and so is a tab),
 * well formed (a lone surrogate half is U+FFFD), each other control character (an ESC, a NUL, a
 * bidi mark or override) written `\uXXXX`, so an error or notice shown in a terminal or a log
 * cannot clear the screen or turn the rest of its line round, and cut to {@link QUOTED_CHARS}
 * characters and `…`, never inside a character or an escape. The whole text stays on the error's
 * `cause`.
 */
function quoted(words: string): string {
  // Only the head is read: the blanks are collapsed in time bound by it, however long the page.
  const head = words.length > 4 * QUOTED_CHARS ? words.slice(0, 4 * QUOTED_CHARS) : words;
  const line = escapeControls(
    head
      .replace(/\s*[\r\n\t\v\f\u0085\u2028\u2029]\s*/g, " ")
      .trim()
      .toWellFormed(),
  );
  if (line.length <= QUOTED_CHARS && head === words) return line;
  let end = Math.min(line.length, QUOTED_CHARS);
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  // An escape the cut would split goes whole: "\u00" is no character.
  end -= /\\(?:u[0-9a-f]{0,3})?$/.exec(line.slice(Math.max(0, end - 5), end))?.[0].length ?? 0;
  return `${line.slice(0, end).trimEnd()}…`;
}

/** The server's words ending as a sentence does (llama.cpp's end "…try increasing it", no stop). */
function asSentence(words: string): string {
  const trimmed = words.trimEnd();
  return /[.!?…:;]["')\]]*$/.test(trimmed) || trimmed === "" ? trimmed : `${trimmed}.`;
}

/** A whole number of tokens above zero, or `undefined`. */
function tokenCount(value: unknown): number | undefined {
  const n = typeof value === "string" && /^\d{1,12}$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * The window a refusal names, in each server's words: llama.cpp's "available context size (1024
 * tokens)"; OpenAI's, vLLM's and OpenRouter's "maximum context length is 8192 tokens"; LM Studio's
 * "context length of only 2048 tokens"; a plain "context window of 8192 tokens"; vLLM V1's "longer
 * than the maximum model length of 4096", its older "too long to fit into the model (context length
 * 4096)" and its scheduler's "is too long and exceeds limit of 4096"; SGLang's "longer than the
 * model's context length (40960 tokens)"; Mistral's "too large for model with 32768 maximum context
 * length"; TGI's and Together's "`inputs` tokens + `max_new_tokens` must be <= 4096"; Cerebras's
 * "Current length is 9000 while limit is 8192"; and LM Studio's llama.cpp-derived "Cannot truncate prompt
 * with n_keep (15028) >= n_ctx (7424)" (its `n_keep` is the part of the prompt kept on truncation, not
 * the prompt, so it is not read as the prompt). Each is anchored to its whole phrase, so no other
 * number in the message (the prompt, the completion, a draft count) is read as the window; a limit on
 * the input alone ("the configured limit of", "exceeds the limit of") is not the window and is not read.
 */
const WINDOW_WORDS: readonly RegExp[] = [
  /available context size \((\d+) tokens\)/i,
  /maximum context length is (\d+) tokens/i,
  /context length of only (\d+) tokens/i,
  /context (?:window|length|size) (?:is|of) (\d+) tokens/i,
  /longer than the maximum model length of (\d+)/i,
  /too long to fit into the model \(context length (\d+)\)/i,
  /is too long and exceeds limit of (\d+)/i,
  /longer than the model's context length \((\d+) tokens\)/i,
  /too large for model with (\d+) maximum context length/i,
  /`inputs` tokens \+ `max_new_tokens` must be <= (\d+)/i,
  /Current length is \d+ while limit is (\d+)/i,
  /\bn_ctx \((\d+)\)/i,
];

/**
 * The refused prompt's size in each server's words: llama.cpp's "request (1104 tokens)"; OpenAI's
 * "your messages resulted in 4294 tokens"; vLLM 0.10's "your request has 8203 input tokens" and its
 * older "you requested 6029 tokens in the messages"; LM Studio's "keep the first 14538 tokens";
 * OpenRouter's "7884 of text input"; OpenAI's and vLLM's "(3130 in the messages" (see `promptOf`
 * for the whole request less its completion, which counts the functions too); vLLM V1's "decoder
 * prompt (length 5000)" and "Prompt length of 5000", its older "prompt (total length 5000)" and its
 * scheduler's "Input prompt (5000 tokens)"; SGLang's "The input (61709 tokens)"; Mistral's "Prompt
 * contains 40000 tokens"; and TGI's "Given: 4000 `inputs` tokens". Cerebras's "Current length is
 * 9000" is not read: it may count the reply asked for too.
 */
const PROMPT_WORDS: readonly RegExp[] = [
  /request \((\d+) tokens\)/i,
  /resulted in (\d+) tokens/i,
  /request has (\d+) input tokens/i,
  /requested (\d+) tokens in the messages/i,
  /keep the first (\d+) tokens/i,
  // The look-behind starts the number where its digits start: tried at every digit of a long run,
  // `(\d+)` would read the rest of the run from each one (quadratic; 64 KiB of digits took 8 s).
  /(?<!\d)(\d+) of text input/i,
  /\((\d+) in the messages/i,
  /prompt \((?:total )?length (\d+)\)/i,
  /Prompt length of (\d+) is longer/i,
  /Input prompt \((\d+) tokens\)/i,
  /The input \((\d+) tokens\) is longer/i,
  /Prompt contains (\d+) tokens/i,
  /Given: (\d+) `inputs` tokens/i,
];

function firstCount(text: string, patterns: readonly RegExp[]): number | undefined {
  for (const re of patterns) {
    const found = tokenCount(re.exec(text)?.[1]);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The prompt a refusal counted: "requested 8213 tokens (…, 800 in the completion)" less the completion, else its words. */
function promptOf(text: string): number | undefined {
  const whole = /requested (?:about )?(\d+) tokens \(([^)]{0,200})\)/i.exec(text);
  if (whole) {
    const total = tokenCount(whole[1]);
    const completion = tokenCount(/(?<!\d)(\d+) in the (?:completion|output)/i.exec(whole[2] ?? "")?.[1]);
    if (total !== undefined && completion !== undefined && completion < total) return total - completion;
  }
  return firstCount(text, PROMPT_WORDS);
}

/** What a refusal says of the window and of the prompt it refused, where it says. */
function overflowSizes(error: unknown): { window?: number; promptTokens?: number } {
  const facts = readError(error);
  // llama.cpp's body carries both as numbers: `n_ctx` and `n_prompt_tokens`.
  const body = facts.objects.find((o) => tokenCount(o.n_ctx) !== undefined);
  const window = tokenCount(body?.n_ctx) ?? firstCount(facts.text, WINDOW_WORDS);
  const promptTokens = tokenCount(body?.n_prompt_tokens) ?? promptOf(facts.text);
  return {
    ...(window !== undefined ? { window } : {}),
    ...(promptTokens !== undefined ? { promptTokens } : {}),
  };
}

/** What a `ContextOverflow` is made with besides the server's words. */
export interface ContextOverflowOptions {
  /** The original error. */
  cause?: unknown | undefined;
  /** The context window in tokens, where the refusal named one. */
  window?: number | undefined;
  /** The refused prompt's size in tokens as the endpoint counted it, where it said. */
  promptTokens?: number | undefined;
}

/**
 * A request too big for the model's context window, as the endpoint (or a size guard) said so.
 *
 * `serverMessage` is the endpoint's own wording, kept so an operator reads what the server said
 * rather than a paraphrase; `cause` is the original error. `window` is the context window the
 * refusal names, where it names one — llama.cpp's `n_ctx` (also its "available context size (1024
 * tokens)"), OpenAI's and vLLM's "maximum context length is 8192 tokens", LM Studio's "context
 * length of only 2048 tokens" and "n_keep (15028) >= n_ctx (7424)", vLLM V1's "maximum model length of 4096", Mistral's, TGI's and
 * Cerebras's wordings — which can be smaller than the window a host configured;
 * `promptTokens` is the prompt the endpoint counted, where it said. Not a capability `negotiate`
 * can answer and not transient: retrying the same body fails the same way. Shrink the transcript
 * (prune tool results, compact) or raise the window.
 */
export class ContextOverflow extends Error {
  override readonly name: string = "ContextOverflow";
  /** The endpoint's own words for the overflow (or the size guard's, when nothing was sent). */
  readonly serverMessage: string;
  /**
   * The context window in tokens the refusal names (llama.cpp's `n_ctx`, "maximum context length is
   * N tokens"), or `undefined` where it names none (Ollama's "exceeded max context length by 4
   * tokens", the loop's own size guard).
   */
  declare readonly window?: number;
  /** The refused prompt's size in tokens as the endpoint counted it (llama.cpp's `n_prompt_tokens`), where it said. */
  declare readonly promptTokens?: number;

  constructor(serverMessage: string, options?: ContextOverflowOptions) {
    if (typeof serverMessage !== "string") {
      // Read before `super`: its sentence is made from these words.
      throw new TypeError(
        `ContextOverflow: serverMessage must be the endpoint's words as a string; got ${serverMessage === null ? "null" : typeof serverMessage}.`,
      );
    }
    super(
      `The request does not fit the model's context window: ${asSentence(quoted(serverMessage))} ` +
        "Shorten the transcript (prune tool results or compact it) or raise the window, then send again.",
      own(options, "cause") === undefined ? undefined : { cause: own(options, "cause") },
    );
    this.serverMessage = serverMessage;
    // Its own sizes, never a polluted Object.prototype's (an inherited `window: 1` on every overflow).
    const window = tokenCount(own(options, "window"));
    const promptTokens = tokenCount(own(options, "promptTokens"));
    if (window !== undefined) this.window = window;
    if (promptTokens !== undefined) this.promptTokens = promptTokens;
    Object.defineProperty(this, OVERFLOW_MARK, protoless({ value: true }));
  }

  /** True for a `ContextOverflow` from any installed copy of this package. */
  static isInstance(value: unknown): value is ContextOverflow {
    return marked(value, OVERFLOW_MARK);
  }

  /**
   * The `ContextOverflow` for an endpoint's refusal (one `isOverflow` accepts): its own message as
   * `serverMessage` (the body's, not the client's "400 …" line; on one line, cut to 300 characters
   * and `…`), the error as `cause`, and the
   * window and prompt sizes the refusal names as `window` and `promptTokens`.
   */
  static fromError(error: unknown): ContextOverflow {
    if (ContextOverflow.isInstance(error)) return error;
    // Quoted as a message quotes it (one line, 300 characters): a proxy's 1 MB error page is not
    // carried whole into every notice and error that names the overflow; `cause` keeps it.
    const said = quoted(readError(error).primary || safeString(error));
    return new ContextOverflow(said, { cause: error, ...overflowSizes(error) });
  }
}

/** Why a capability snapshot could not be imported. */
export type CapabilitySnapshotErrorCode = "version" | "malformed";

/**
 * A capability snapshot that `importCapabilities` refused, before changing anything.
 *
 * `code` is `"version"` for a snapshot written by another snapshot version and `"malformed"` for
 * one that is not the shape a snapshot has; `path` names the first offending place.
 */
export class CapabilitySnapshotError extends Error {
  override readonly name: string = "CapabilitySnapshotError";
  /** `"version"` or `"malformed"`. */
  readonly code: CapabilitySnapshotErrorCode;
  /** Where in the snapshot the problem is, as a JSON-ish path (`endpoints[2].models["gpt-5"]`). */
  readonly path: string;

  constructor(
    code: CapabilitySnapshotErrorCode,
    path: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, own(options, "cause") === undefined ? undefined : { cause: own(options, "cause") });
    this.code = code;
    this.path = path;
    Object.defineProperty(this, SNAPSHOT_MARK, protoless({ value: true }));
  }

  /** True for a `CapabilitySnapshotError` from any installed copy of this package. */
  static isInstance(value: unknown): value is CapabilitySnapshotError {
    return marked(value, SNAPSHOT_MARK);
  }
}
