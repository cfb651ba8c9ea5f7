/**
 * Cutting a scripted turn to a completion-token budget, the way a server stops generating at
 * `max_tokens` or at the end of its context: reasoning, then content, then tool calls, each cut at
 * a token boundary, and `finish_reason` becomes `"length"`.
 */
import { TestkitError } from "./errors.js";
import { tokenize } from "./prefix-cache.js";
import type { ScriptedToolCall, TurnReply } from "./replies.js";

/** Cuts `text` to at most `budget` tokens; returns the kept text and the tokens used. */
function cut(text: string, budget: number): { kept: string; used: number; cutShort: boolean } {
  const tokens = tokenize(text);
  if (tokens.length <= budget) return { kept: text, used: tokens.length, cutShort: false };
  return { kept: tokens.slice(0, Math.max(0, budget)).join(""), used: Math.max(0, budget), cutShort: true };
}

/**
 * Cuts a scripted turn to `maxTokens` completion tokens, as a server stopping at its limit does.
 *
 * Returns `turn` itself when it fits (by the token rule). Generation order is reasoning, content, then each tool call's name and arguments; a call
 * whose name does not fit is dropped, one whose arguments are cut keeps the partial arguments (as a
 * real server cut off mid-call sends them). A cut turn gets `finishReason: "length"`. A negative
 * `maxTokens` is 0; `NaN` or a value that is not a number throws `TestkitError` `invalid-option`.
 */
export function limitTurn(turn: TurnReply, maxTokens: number): TurnReply {
  return cutTurn(turn, maxTokens).turn;
}

/** A tool call the budget cut before its name was whole, and the tokens the budget had left for it. */
export interface CutCall {
  /** The call's whole name, as scripted. */
  name: string;
  /** The completion tokens left when the call began (fewer than its name needs). */
  tokensLeft: number;
  /** The call's text that fit (its markup tokens that fit), when the server writes the call as text. */
  text?: string | undefined;
}

/**
 * {@link limitTurn}, also saying which tool call (if any) was dropped because its name did not
 * fit, so a personality can send what its server sends for a call cut there (llama-server's plain
 * reply carries the raw markup so far in `content`, captures 51 and 52).
 */
export function cutTurn(
  turn: TurnReply,
  maxTokens: number,
  callTokens?: (name: string) => string[],
): { turn: TurnReply; cutCall?: CutCall } {
  // NaN would cut everything (no count is "at most NaN"); a personality's completionBudget that
  // returns it is a mistake to name, not an empty answer.
  if (typeof maxTokens !== "number" || Number.isNaN(maxTokens)) {
    throw new TestkitError(
      "invalid-option",
      `limitTurn: maxTokens must be a number of tokens (Infinity: no limit), got ${typeof maxTokens === "number" ? "NaN" : typeof maxTokens}.`,
    );
  }
  let budget = Math.max(0, Math.floor(maxTokens));
  let truncated = false;
  let cutCall: CutCall | undefined;
  const out: TurnReply = { ...turn };
  for (const field of ["reasoning", "content"] as const) {
    const text = turn[field];
    if (text === undefined) continue;
    const r = cut(text, budget);
    out[field] = r.kept;
    budget -= r.used;
    truncated ||= r.cutShort;
  }
  if (turn.toolCalls) {
    const calls: ScriptedToolCall[] = [];
    for (const call of turn.toolCalls) {
      // A server that has the model write each call as text (llama-server's `<tool_call>` markup)
      // sees a call only once its text is whole up to the end of the name.
      const written = callTokens?.(call.name);
      const name = written
        ? { used: written.length, cutShort: written.length > budget }
        : cut(call.name, budget);
      if (name.cutShort || (budget === 0 && call.name !== "")) {
        truncated = true;
        cutCall = {
          name: call.name,
          tokensLeft: budget,
          ...(written ? { text: written.slice(0, budget).join("") } : {}),
        };
        break;
      }
      budget -= name.used;
      const args = cut(call.arguments, budget);
      budget -= args.used;
      calls.push({ ...call, arguments: args.kept });
      if (args.cutShort) {
        truncated = true;
        break;
      }
    }
    out.toolCalls = calls;
  }
  if (!truncated) return { turn };
  out.finishReason = "length";
  return cutCall ? { turn: out, cutCall } : { turn: out };
}
