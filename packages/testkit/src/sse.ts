/**
 * Turning a scripted turn into wire shapes: the chunk objects of a streamed completion, the
 * body of a plain one, and SSE framing.
 */
import { countTokens } from "./prefix-cache.js";
import type { ScriptedToolCall, TurnReply } from "./replies.js";

/** Per-response facts the shapes need, decided by the server. */
export interface TurnContext {
  /** Completion id (`chatcmpl-…`). */
  id: string;
  /** Model name echoed back (the request's `model`, else `"sim"`). */
  model: string;
  /** Unix seconds. */
  created: number;
  /** Prompt tokens of the rendered request. */
  promptTokens: number;
  /** Cached prompt tokens when the prefix cache is on, else undefined. */
  cachedTokens?: number | undefined;
  /** Makes the default id of the n-th tool call of this turn. */
  toolCallId: (index: number) => string;
  /**
   * How many choices to answer with (the request's `n` where the server honours it; default 1):
   * each the same scripted turn, at `index` 0..choices-1, its default tool-call ids numbered on
   * from the choice before's.
   */
  choices?: number | undefined;
}

/** The number of choices a context asks for: a whole number from 1, else 1. */
function choiceCount(ctx: TurnContext): number {
  const n = ctx.choices;
  return typeof n === "number" && Number.isInteger(n) && n >= 1 ? n : 1;
}

/** Usage object as OpenAI sends it. */
export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens_details?: { reasoning_tokens: number };
}

/** Splits `text` into pieces of at most `size` characters (code points), never empty pieces. */
export function splitChars(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

function reasoningTarget(turn: TurnReply): "reasoning_content" | "reasoning" | "fence" {
  return turn.reasoningAs ?? "reasoning_content";
}

/** The content the turn sends, with reasoning fenced in when `reasoningAs` is `"fence"`. */
function visibleContent(turn: TurnReply): string | undefined {
  if (turn.reasoning !== undefined && reasoningTarget(turn) === "fence") {
    return `<think>${turn.reasoning}</think>${turn.content ?? ""}`;
  }
  return turn.content;
}

/** The turn's tool calls with their ids decided, for choice `choice` (its default ids after the choices before it). */
function resolvedCalls(turn: TurnReply, ctx: TurnContext, choice = 0): Required<ScriptedToolCall>[] {
  const calls = turn.toolCalls ?? [];
  return calls.map((c, i) => ({
    id: c.id ?? ctx.toolCallId(choice * calls.length + i),
    name: c.name,
    arguments: c.arguments,
  }));
}

/** A turn's usage when it scripts none: holds no number, whatever `Object.prototype` holds. */
const NO_USAGE: Exclude<TurnReply["usage"], false | undefined> = Object.freeze(Object.create(null));

/**
 * The usage a turn reports: scripted numbers win; missing ones are computed — prompt tokens from the
 * rendered request, completion tokens from reasoning + content + tool names and arguments by the
 * token rule, cached tokens from the prefix cache when it is on.
 */
export function turnUsage(turn: TurnReply, ctx: TurnContext): WireUsage | undefined {
  if (turn.usage === false) return undefined;
  const u = turn.usage ?? NO_USAGE;
  const generated =
    (turn.reasoning ?? "") +
    (turn.content ?? "") +
    (turn.toolCalls ?? []).map((c) => c.name + c.arguments).join("");
  // A computed number never contradicts a scripted one (`validateReply` refuses scripted numbers
  // that contradict each other): a computed whole is at least its scripted part, a computed part
  // at most its scripted whole, so cached ≤ prompt and reasoning ≤ completion always hold.
  // Every choice is generated, and counted: n choices of the turn are n times its tokens.
  const n = choiceCount(ctx);
  const prompt = u.prompt_tokens ?? Math.max(ctx.promptTokens, u.cached_tokens ?? 0);
  const completion = u.completion_tokens ?? Math.max(n * countTokens(generated), u.reasoning_tokens ?? 0);
  const reasoningTokens =
    u.reasoning_tokens ??
    (turn.reasoning ? Math.min(n * countTokens(turn.reasoning), completion) : undefined);
  const usage: WireUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  const cached =
    u.cached_tokens ?? (ctx.cachedTokens === undefined ? undefined : Math.min(ctx.cachedTokens, prompt));
  if (cached !== undefined) usage.prompt_tokens_details = { cached_tokens: cached };
  if (reasoningTokens !== undefined) usage.completion_tokens_details = { reasoning_tokens: reasoningTokens };
  return usage;
}

function defaultFinish(turn: TurnReply): string | null {
  if (turn.finishReason !== undefined) return turn.finishReason;
  return turn.toolCalls && turn.toolCalls.length > 0 ? "tool_calls" : "stop";
}

type Delta = Record<string, unknown>;

/** The deltas of one tool call: id, type and the first name piece first, then the rest. */
function toolCallDeltas(
  call: Required<ScriptedToolCall>,
  index: number,
  size: number,
  splitNames: boolean,
): Delta[] {
  const names = splitNames ? splitChars(call.name, size) : [call.name];
  const args = splitChars(call.arguments, size);
  const deltas: Delta[] = [];
  deltas.push({ index, id: call.id, type: "function", function: { name: names[0] ?? "", arguments: "" } });
  for (const piece of names.slice(1)) deltas.push({ index, function: { name: piece } });
  for (const piece of args) deltas.push({ index, function: { arguments: piece } });
  return deltas;
}

/** Round-robin merge: one item from each list in turn until all are used. */
function interleave<T>(lists: T[][]): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lists.map((l) => l.length));
  for (let i = 0; i < longest; i++) for (const l of lists) if (i < l.length) out.push(l[i] as T);
  return out;
}

/**
 * The chunk objects of a streamed turn, in order: optional role opener, reasoning deltas, content
 * deltas, tool-call deltas, the finish chunk, and a usage chunk (`choices: []`) unless usage is off.
 * With more than one choice (`ctx.choices`), each chunk carries one choice, the choices' chunks
 * taken in turn (0, 1, …, 0, 1, …), and the one usage chunk comes last.
 */
export function turnChunks(turn: TurnReply, ctx: TurnContext, options: { includeUsage: boolean }): object[] {
  const perChoice = Array.from({ length: choiceCount(ctx) }, (_, choice) => choiceChunks(turn, ctx, choice));
  const out = interleave(perChoice);
  const usage = options.includeUsage ? turnUsage(turn, ctx) : undefined;
  if (usage) {
    out.push({
      id: ctx.id,
      object: "chat.completion.chunk",
      created: ctx.created,
      model: ctx.model,
      choices: [],
      usage,
    });
  }
  return out;
}

/** The chunks of one choice of a streamed turn, its finish chunk last. */
function choiceChunks(turn: TurnReply, ctx: TurnContext, choice: number): object[] {
  const size = turn.chunkChars ?? 8;
  const chunk = (delta: Delta, finish: string | null = null): object => ({
    id: ctx.id,
    object: "chat.completion.chunk",
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: choice, delta, logprobs: null, finish_reason: finish }],
  });
  const out: object[] = [];
  if (turn.roleChunk !== false) out.push(chunk({ role: "assistant", content: "" }));
  const target = reasoningTarget(turn);
  if (turn.reasoning !== undefined && target !== "fence") {
    for (const piece of splitChars(turn.reasoning, size)) out.push(chunk({ [target]: piece }));
  }
  const content = visibleContent(turn);
  if (content !== undefined)
    for (const piece of splitChars(content, size)) out.push(chunk({ content: piece }));
  const perCall = resolvedCalls(turn, ctx, choice).map((c, i) =>
    toolCallDeltas(c, i, size, turn.splitNames !== false),
  );
  const toolDeltas = turn.interleave ? interleave(perCall) : perCall.flat();
  for (const d of toolDeltas) out.push(chunk({ tool_calls: [d] }));
  const finish = defaultFinish(turn);
  if (finish !== null) out.push(chunk({}, finish));
  return out;
}

/** The body of a plain (non-streamed) completion for a turn: one choice per `ctx.choices`. */
export function turnCompletion(turn: TurnReply, ctx: TurnContext): object {
  const choice = (index: number) => {
    const message: Record<string, unknown> = { role: "assistant", content: visibleContent(turn) ?? null };
    const target = reasoningTarget(turn);
    if (turn.reasoning !== undefined && target !== "fence") message[target] = turn.reasoning;
    const calls = resolvedCalls(turn, ctx, index);
    if (calls.length > 0) {
      message.tool_calls = calls.map((c) => ({
        id: c.id,
        type: "function",
        function: { name: c.name, arguments: c.arguments },
      }));
    }
    return { index, message, logprobs: null, finish_reason: defaultFinish(turn) };
  };
  const body: Record<string, unknown> = {
    id: ctx.id,
    object: "chat.completion",
    created: ctx.created,
    model: ctx.model,
    choices: Array.from({ length: choiceCount(ctx) }, (_, index) => choice(index)),
  };
  const usage = turnUsage(turn, ctx);
  if (usage) body.usage = usage;
  return body;
}

/** One SSE frame: `data: <payload>` and a blank line. Objects are JSON-encoded. */
export function sseFrame(payload: object | string): string {
  return `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`;
}

/**
 * Splits a recorded SSE body into frames, cutting just after each blank line.
 *
 * Works on bytes and reads lines the way the SSE spec does: a line ends with CRLF, a lone LF or a
 * lone CR (a CR followed by LF is one ending, not two). A frame ends just after an empty line that
 * follows at least one line of that frame, so `\n\n`, `\r\n\r\n` and `\r\r` all close a frame, and
 * concatenating the frames gives back exactly the input. A body that ends in a lone CR is cut there
 * even though its LF might have come in the next read; a recorded body has no next read.
 */
export function splitFrames(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  let lineStart = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b !== 0x0a && b !== 0x0d) continue;
    const end = b === 0x0d && bytes[i + 1] === 0x0a ? i + 2 : i + 1;
    if (i === lineStart && lineStart > start) {
      out.push(bytes.subarray(start, end));
      start = end;
    }
    lineStart = end;
    i = end - 1;
  }
  if (start < bytes.length) out.push(bytes.subarray(start));
  return out;
}
