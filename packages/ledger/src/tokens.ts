import { checkMessages, checkNumber, describe, LedgerError, setting } from "./errors.js";
import {
  imageTokens,
  isSystem,
  type MessageLike,
  messageChars,
  messageEstimate,
  type RequestBodyLike,
  toolsChars,
} from "./messages.js";

/** The divisor every estimate here uses until a calibrated one is given: characters per token. */
export const DEFAULT_CHARS_PER_TOKEN = 4;

/** Options shared by the estimates: the characters-per-token divisor, 4 unless given. */
export interface EstimateOptions {
  /**
   * Characters per token; `charsPerTokenFor` answers a calibrated one. A finite number, 0.01 or
   * more (a hundred tokens a character).
   */
  charsPerToken?: number | undefined;
}

/** The request cut four ways; the parts add up exactly to `total`. */
export interface ContextParts {
  /** System and developer messages. */
  system: number;
  /** The declared tool schemas. */
  tools: number;
  /** Every other message, tool-call arguments included. */
  history: number;
  /** The tool messages. */
  toolResults: number;
  /** The four parts added up. */
  total: number;
}

/** Options for {@link contextTokens}. */
export interface ContextTokensOptions extends EstimateOptions {
  /**
   * What the endpoint reported the prompt cost. Given (a number above zero), the total is this and
   * each part a share of it; zero or absent means not reported, and the total is `requestTokens`.
   */
  promptTokens?: number | undefined;
}

/**
 * The smallest `charsPerToken` taken: a hundred tokens a character. No tokenizer spends more (a
 * UTF-16 unit is at most 3 UTF-8 bytes); a smaller divisor counted a text past `Number.MAX_VALUE`
 * (`1e-320`, a denormal, made every count `Infinity`, and a context's total `null` in JSON).
 */
export const MIN_CHARS_PER_TOKEN = 0.01;

/**
 * `charsPerToken` checked: 4 when absent, else a finite number at least `MIN_CHARS_PER_TOKEN`
 * (`LedgerError` `invalid-option` naming it otherwise, as for 0 and NaN).
 */
export function checkedCharsPerToken(value: unknown, where: string): number {
  if (value === undefined) return DEFAULT_CHARS_PER_TOKEN;
  return checkNumber(value, "charsPerToken", where, { min: MIN_CHARS_PER_TOKEN });
}

/** An option's own value (or its class's): never one a polluted `Object.prototype` holds. */
function optionOf(options: unknown, name: string, where: string): unknown {
  try {
    return setting(options, name);
  } catch (cause) {
    throw new LedgerError("invalid-option", `${where}: the options could not be read (it threw when read).`, {
      cause,
    });
  }
}

function divisor(options: EstimateOptions | undefined, where: string): number {
  return checkedCharsPerToken(optionOf(options, "charsPerToken", where), where);
}

function checkBody(body: unknown, where: string): asserts body is RequestBodyLike {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new LedgerError(
      "invalid-messages",
      `${where} needs a request body ({ messages, tools? }), and was given ${describe(body)}.`,
    );
  }
  checkMessages((body as { messages?: unknown }).messages, where, "body.messages");
}

/**
 * Estimates the tokens of a text: its characters over `charsPerToken` (4 unless given), rounded up.
 * Four is deliberately low for what tool-using runs send (JSON packs closer to two or three
 * characters a token), which is why a calibrated divisor exists. Throws `LedgerError` for a
 * non-string text or a divisor that is not above zero.
 */
export function estimateTokens(text: string, options?: EstimateOptions): number {
  if (typeof text !== "string") {
    throw new LedgerError(
      "invalid-messages",
      `estimateTokens needs a string, and was given ${describe(text)}.`,
    );
  }
  return Math.ceil(text.length / divisor(options, "estimateTokens"));
}

/**
 * Estimates one message: the characters of its content's text, its replayed reasoning and its tool
 * calls' names and arguments, over `charsPerToken`, rounded up. A refusal part counts its
 * `refusal` text, as does an assistant message's own `refusal` field, and arguments a host stored as an object count as their JSON. Each image part adds
 * `IMAGE_TOKENS` (765), or 85 with `detail: "low"`; other media (audio, a file) add nothing.
 */
export function messageTokens(message: MessageLike, options?: EstimateOptions): number {
  checkMessages([message], "messageTokens", "message");
  return messageEstimate(message, divisor(options, "messageTokens"));
}

/** The estimated tokens of a tool array: its JSON's characters over the divisor, rounded up. */
export function toolTokens(tools: RequestBodyLike["tools"], options?: EstimateOptions): number {
  return Math.ceil(toolsChars(tools) / divisor(options, "toolTokens"));
}

/**
 * Estimates a whole request: every message (reasoning and tool-call arguments included) plus the
 * declared tools' JSON. It is the sum of `messageTokens` over the messages and `toolTokens` of the
 * tools, so the parts of `contextTokens` without a reported prompt add up to it.
 */
export function requestTokens(body: RequestBodyLike, options?: EstimateOptions): number {
  checkBody(body, "requestTokens");
  const perToken = divisor(options, "requestTokens");
  let total = Math.ceil(toolsChars(body.tools) / perToken);
  for (const message of body.messages) total += messageEstimate(message, perToken);
  return total;
}

/**
 * The exact characters under `contextTokens`' parts: system and developer messages, the tools'
 * JSON, tool messages, and everything else, with their total.
 */
export function contextChars(body: RequestBodyLike): ContextParts {
  checkBody(body, "contextChars");
  return charsOf(body);
}

/**
 * Which part a message fills, by its role. A role that throws when read (a getter, a revoked
 * Proxy) is a `LedgerError`, as a content that throws is: it escaped as the getter's own error.
 */
function partOf(message: MessageLike): "system" | "toolResults" | "history" {
  let role: unknown;
  try {
    role = setting(message, "role");
  } catch (cause) {
    throw new LedgerError("invalid-messages", "a message could not be read (its role threw when read).", {
      cause,
    });
  }
  return isSystem({ role } as MessageLike) ? "system" : role === "tool" ? "toolResults" : "history";
}

/** `contextChars` of a body already checked: one walk over its messages. */
function charsOf(body: RequestBodyLike): ContextParts {
  const parts = { system: 0, tools: toolsChars(body.tools), history: 0, toolResults: 0, total: 0 };
  for (const message of body.messages) parts[partOf(message)] += messageChars(message);
  parts.total = parts.system + parts.tools + parts.history + parts.toolResults;
  return parts;
}

const PART_KEYS = ["system", "tools", "history", "toolResults"] as const;

/**
 * Cuts a request into what fills the window: `system`, `tools`, `history` and `toolResults`, whose
 * sum is always exactly `total`.
 *
 * Given `promptTokens` (what the endpoint charged), the total is that (floored to whole tokens) and
 * each part a share of it by characters, the largest part absorbing the rounding. Without it the total is `requestTokens`
 * and each part is counted the way `requestTokens` counts it (so the tool block agrees with
 * `toolTokens`). The proportions are an estimate either way: no endpoint reports finer than the
 * prompt. Throws `LedgerError` for a body without a messages array, a divisor not above zero, or a
 * `promptTokens` that is negative, not a finite number, or past 2^53 - 1 (no count a server makes).
 */
export function contextTokens(body: RequestBodyLike, options?: ContextTokensOptions): ContextParts {
  checkBody(body, "contextTokens");
  const perToken = divisor(options, "contextTokens");
  const reported = optionOf(options, "promptTokens", "contextTokens") as number | undefined;
  // Past 2^53 no count is exact, and `total * chars` runs out of range: the parts came back NaN.
  if (reported !== undefined) {
    checkNumber(reported, "promptTokens", "contextTokens", { max: Number.MAX_SAFE_INTEGER });
  }
  // Tokens are whole: a fractional report is floored (rounding up would claim a token never
  // charged), and one under a token is no report.
  const total = reported === undefined ? 0 : Math.floor(reported);
  if (total === 0) {
    const parts = {
      system: 0,
      tools: Math.ceil(toolsChars(body.tools) / perToken),
      history: 0,
      toolResults: 0,
      total: 0,
    };
    for (const message of body.messages) parts[partOf(message)] += messageEstimate(message, perToken);
    parts.total = parts.system + parts.tools + parts.history + parts.toolResults;
    return parts;
  }
  // Shared by characters, an image weighing what its estimate does in characters (`IMAGE_TOKENS` at
  // the divisor): a screenshot's tokens go to the part that carries it, not to the others by their text.
  const chars = charsOf(body);
  for (const message of body.messages) {
    const images = imageTokens(message);
    if (images === 0) continue;
    const weight = images * perToken;
    chars[partOf(message)] += weight;
    chars.total += weight;
  }
  const parts = { system: 0, tools: 0, history: 0, toolResults: 0, total };
  // With nothing to divide by, the whole prompt is history: the part compaction would fold.
  let largest: (typeof PART_KEYS)[number] = "history";
  if (chars.total > 0) {
    for (const key of PART_KEYS) {
      parts[key] = Math.floor((total * chars[key]) / chars.total);
      if (chars[key] > chars[largest]) largest = key;
    }
  }
  parts[largest] += total - (parts.system + parts.tools + parts.history + parts.toolResults);
  return parts;
}
