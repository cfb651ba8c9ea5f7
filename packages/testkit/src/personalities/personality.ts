import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply, TurnReply } from "../replies.js";
import type { WireUsage } from "../sse.js";

/** What the server tells a personality about a chat request it is about to answer. */
export interface PersonalityContext {
  /** Tokens of the rendered prompt by the testkit's token rule. */
  promptTokens: number;
  /** Milliseconds since the server started. */
  uptimeMs: number;
}

/** What the server tells a personality's `chunks` and `completion` hooks about the scripted turn it is sending. */
export interface TurnFacts {
  /** Which scripted completion of this server this is, counted from 1. */
  completion: number;
  /**
   * The usage the turn reports (scripted numbers, else computed), also where a stream carries no
   * usage chunk; undefined when the turn says `usage: false`.
   */
  usage?: WireUsage | undefined;
  /** The chat request being answered (llama.cpp echoes a trailing assistant message from it). */
  request?: RecordedRequest | undefined;
  /**
   * The tool call the completion-token budget cut before its name was whole (the turn goes out
   * without it, `finish_reason: "length"`), and the tokens that were left for it; undefined when
   * no call was cut there.
   */
  cutCall?: { name: string; tokensLeft: number; text?: string | undefined } | undefined;
}

/** A plain HTTP answer: status, body (JSON, or verbatim when a string) and optional headers. */
export interface HttpAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string> | undefined;
}

/**
 * A server personality: the refusals and routes of one real server kind, built from recorded bodies.
 *
 * Every hook is optional; a personality never answers a valid chat request itself — the script does.
 */
export interface Personality {
  /** Personality name, e.g. `"llamacpp"`. */
  readonly name: string;
  /** Answers ANY request before routing (e.g. llama.cpp's 503 while loading); undefined lets it through. */
  intercept?(request: RecordedRequest, uptimeMs: number): ErrorReply | undefined;
  /** Refuses a chat-completions request (body may be unparsed) the real server would refuse; undefined lets it through. */
  check?(request: RecordedRequest, context: PersonalityContext): ErrorReply | undefined;
  /** Default body of `GET /v1/models`. */
  models?(): unknown;
  /** Default body of `GET /props` (llama.cpp). */
  props?(): unknown;
  /** Default body of `GET /api/v0/models` (LM Studio). */
  lmstudioModels?(): unknown;
  /** Answers a route the server does not know (e.g. llama.cpp's `/health`); undefined: 404. A HEAD request arrives here as GET. */
  route?(request: RecordedRequest): HttpAnswer | undefined;
  /**
   * The answer for a path nobody serves, or a method the path does not take (`allowed` lists the
   * methods it does take; empty for an unknown path), in this server's own words. Undefined: the
   * testkit's 404, or 405 with an `allow` header.
   */
  notFound?(request: RecordedRequest, allowed: readonly string[]): HttpAnswer | undefined;
  /** Completion tokens the server would generate at most for this request (max_tokens, room left in the context); a scripted turn is cut to it with `finish_reason: "length"`. */
  completionBudget?(request: RecordedRequest, context: PersonalityContext): number | undefined;
  /**
   * The tokens a model writes for a tool call up to the end of its name, where the server has it
   * write calls as text and parses them (llama.cpp's `<tool_call>` markup): under a completion
   * budget the call goes out only when all of them fit, else those that fit are `cutCall.text`.
   * Undefined: only the name's tokens count.
   */
  toolCallTokens?(name: string): string[];
  /**
   * Headers this server puts on its answers (e.g. llama.cpp's `Server: llama.cpp`), given the
   * answer's content type and status; may replace the content type itself. Added to JSON, text and
   * scripted stream answers; replays and raw replies keep exactly their own headers. A server that
   * closes the connection after an error answer says so here with `connection: close` (Node then
   * ends the socket once the answer is out).
   */
  headers?(contentType: string, status: number): Record<string, string>;
  /**
   * The id of the `index`-th tool call of the `completion`-th scripted turn, where the script gives
   * none (default `call_sim<completion>_<index>`); Mistral's are nine letters and digits.
   */
  toolCallId?(completion: number, index: number): string;
  /**
   * The chunk objects of a scripted streamed turn as this server would send them (Mistral puts each
   * tool call whole, and the usage, on the finish chunk); replays and raw replies are not reshaped.
   */
  chunks?(chunks: object[], facts: TurnFacts): object[];
  /**
   * The body of a scripted plain (non-streamed) completion as this server would send it (llama.cpp
   * names its own model and adds `timings`); error, replay and raw replies are not reshaped.
   */
  completion?(body: object, facts: TurnFacts): object;
  /**
   * Refuses a scripted turn this server could never send (llama.cpp never emits a tool call
   * without a name) by throwing a `TestkitError` `invalid-reply` naming the field; runs wherever
   * the testkit checks a reply (the queue, `enqueue`, a reply function's answer).
   */
  checkReply?(reply: TurnReply): void;
  /** Whether a streamed reply ends with a usage chunk for this request (default: always). */
  streamsUsage?(request: RecordedRequest): boolean;
  /**
   * How many choices this server answers the request with (OpenAI and vLLM: its `n`, see
   * `requestedChoices`); a personality without this hook answers with one.
   */
  choices?(request: RecordedRequest): number;
}

/** OpenAI's most choices per request (`n` from 1 to 128). */
export const MAX_CHOICES = 128;

/**
 * The choices a request's `n` asks for: a whole number from 1, at most 128 (OpenAI's most); any
 * other `n` (absent, `null`, `0`, `2.5`, `"2"`) is one choice.
 */
export function requestedChoices(request: RecordedRequest): number {
  const body = request.body as { n?: unknown } | undefined;
  const n = body && typeof body === "object" ? body.n : undefined;
  return typeof n === "number" && Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_CHOICES) : 1;
}
