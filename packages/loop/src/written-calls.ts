import { stripThinking, type Turn } from "@loopwright/stream";
import { recoverToolCalls, type ToolCallRequest, type ToolNameLike } from "@loopwright/tool-calls";
import { ownField } from "./own.js";

/** What {@link recoverWrittenCalls} made of a turn's text. */
export type WrittenCalls =
  /**
   * Calls recovered: the turn's `content` and `reasoning` without them. With none (`calls` empty),
   * the reply ran past its end (`Sure.<|eot_id|>` and a turn the model went on to invent, gpt-oss's
   * final-channel header served raw): `content` is the reply up to where it ends.
   */
  | { calls: ToolCallRequest[]; turn: Turn }
  /** Calls found in the text that cannot be read as written: left in the answer, not run. */
  | { unread: number };

/**
 * The calls a server's parser left in a turn's text, read from what the model wrote, and the reply
 * up to where it ends: the text after an end-of-turn token the server should have stopped at (a
 * turn the model went on to invent, its user's words or its next call included) is no part of it
 * (`recoverToolCalls`' reading), whether or not a call was found before it.
 *
 * The stream moved text between `<think>` and `</think>` into `reasoning` wherever it stood — also
 * inside a call's string argument (a model writing a chat template or notes about reasoning
 * models). So where the fences took something out (`turn.rawContent`), the calls are read from the
 * raw text, and the turn's `content` and `reasoning` are what the same fences make of that text
 * without them: a call reaches its tool with exactly the arguments written, and the answer holds
 * no piece of it. Should the turn's split not be the one the default fences give (never, for a turn
 * the loop streamed), calls found in the raw text are not run: `unread` counts them.
 */
export function recoverWrittenCalls(turn: Turn, tools: readonly ToolNameLike[]): WrittenCalls | undefined {
  const options = { finishReason: turn.finishReason };
  const written = ownField(turn, "rawContent");
  if (written === undefined) {
    const { calls, text } = recoverToolCalls(turn.content, tools, options);
    return calls.length === 0 && text === turn.content
      ? undefined
      : { calls, turn: { ...turn, content: text } };
  }
  const { calls, text } = recoverToolCalls(written, tools, options);
  if (calls.length === 0 && text === written) return undefined;
  const before = stripThinking(written);
  if (before.content !== turn.content) return calls.length === 0 ? undefined : { unread: calls.length };
  const after = stripThinking(text);
  // The reasoning the fences found in the content comes last in `reasoning` unless a reasoning
  // field streamed after it; then it stays as streamed.
  const reasoning = turn.reasoning.endsWith(before.reasoning)
    ? turn.reasoning.slice(0, turn.reasoning.length - before.reasoning.length) + after.reasoning
    : turn.reasoning;
  const { rawContent: _, ...rest } = turn;
  const content = after.content.trim();
  return {
    calls,
    turn: { ...rest, content, reasoning, ...(text !== content ? { rawContent: text } : {}) },
  };
}
