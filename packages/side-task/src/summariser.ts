import type { Endpoint } from "@loopwright/client";
import { checkOptions, checkTarget, type SideTaskOptions, sideCall } from "./call.js";
import { describeValue, errorText, isPlainObject, SideTaskError } from "./errors.js";
import { headOf, tailOf } from "./text.js";

/** The summariser's reply ceiling when none is given. */
export const SUMMARY_MAX_TOKENS = 1024;

/** The most characters of one message the summariser is shown; a longer one is cut in the middle. */
export const SUMMARY_MESSAGE_CHARS = 4000;

/** The system prompt the summariser writes with. */
export const SUMMARISER_SYSTEM = [
  "You keep the working notes of a conversation between a user and an assistant that uses tools.",
  "The conversation below is being removed to save space; your notes replace it, so write down",
  "everything the assistant will need to carry on: what the user asked for and their constraints,",
  "decisions made, facts learned from tool results (names, paths, values, errors), what is done and",
  "what is still open. Be concise and concrete. Write only the notes, with no preamble.",
].join(" ");

/** A transcript message as the summariser reads it (structurally any chat message). */
export interface SummaryMessageLike {
  role: string;
  content?: unknown;
  name?: string;
  tool_call_id?: string;
  tool_calls?: readonly { function?: { name?: string; arguments?: string } }[] | null;
}

/** The narrow `AbortSignal` shape ledger's compaction hands a summariser. */
export interface SummarySignalLike {
  readonly aborted: boolean;
}

/** A summarise function as `@loopwright/ledger`'s `runCompaction` and `compactTranscript` take one. */
export type SummariseFunction = (
  messages: readonly SummaryMessageLike[],
  previous: string | undefined,
  signal?: SummarySignalLike,
) => Promise<string | undefined>;

/** Options of `summariser`: those of every side task, and the system prompt to write with. */
export interface SummariserOptions extends SideTaskOptions {
  /** Replaces `SUMMARISER_SYSTEM`. */
  system?: string;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        const p = part as { type?: unknown; text?: unknown } | null;
        if (p && typeof p.text === "string") return p.text;
        return p && p.type === "image_url" ? "[image]" : "";
      })
      .join("\n");
  }
  return "";
}

function cut(text: string): string {
  if (text.length <= SUMMARY_MESSAGE_CHARS) return text;
  const half = Math.floor(SUMMARY_MESSAGE_CHARS / 2);
  const head = headOf(text, half);
  const tail = tailOf(text, text.length - half);
  return `${head}\n[… ${text.length - head.length - tail.length} characters left out …]\n${tail}`;
}

/**
 * A line of a message that reads like one of the transcript's block headers (`[user]`,
 * `[tool result from x]`, `[assistant called y]`) is shown with a backslash before it, so text a
 * tool brought back cannot pass itself off as the user or the assistant.
 */
function escapeHeaders(text: string): string {
  return text.replace(/^([ \t]*\\*)(\[[^[\]\n]*\][ \t\r]*)$/gm, "$1\\$2");
}

/** A call's arguments as stored: the model's JSON text, or the object a host parsed it into. */
function argumentsText(args: unknown): string {
  if (typeof args === "string") return args;
  if (args === undefined || args === null) return "";
  try {
    return JSON.stringify(args) ?? "";
  } catch {
    return "";
  }
}

/** The folded stretch as plain text, one block per message, for the summariser to read. */
export function transcriptText(messages: readonly SummaryMessageLike[]): string {
  const blocks: string[] = [];
  for (const message of messages) {
    if (!isPlainObject(message)) continue;
    const text = cut(escapeHeaders(contentText(message.content).trim()));
    const role = String(message.role);
    if (role === "tool") {
      const name = typeof message.name === "string" && message.name ? ` from ${message.name}` : "";
      blocks.push(`[tool result${name}]\n${text}`);
      continue;
    }
    if (text) blocks.push(`[${role}]\n${text}`);
    const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
    for (const call of calls) {
      const named = call?.function?.name;
      const name = typeof named === "string" && named ? named : "a tool";
      blocks.push(
        `[${role} called ${name}]\n${cut(escapeHeaders(argumentsText(call?.function?.arguments)))}`,
      );
    }
  }
  return blocks.join("\n\n");
}

/**
 * A summarise function for `@loopwright/ledger`'s compaction, written by a side task.
 *
 * For `runCompaction` and `compactTranscript`: it shows `model` at `endpoint` the folded stretch as text (each message cut to
 * `SUMMARY_MESSAGE_CHARS`), with the earlier notes to continue where there are some, and answers
 * the new notes. Defaults: ceiling `SUMMARY_MAX_TOKENS`, temperature 0.3, the no-thinking hints.
 *
 * The function it returns never throws for a failed side task: it answers `undefined` (which the
 * compaction reads as "no fold", leaving the transcript as it was) and tells `onNotice` why,
 * including for a summary cut off at the ceiling and an empty one. It throws `SideTaskError` (`invalid-input`) only
 * for messages that are not an array; an entry that is not a message is passed over. `summariser`
 * itself throws `invalid-input` for a missing endpoint or model, or options that are not an object
 * or hold an option of the wrong type (a non-function `onNotice`, a `signal` that is not one).
 */
export function summariser(
  endpoint: Endpoint,
  model: string,
  options: SummariserOptions = {},
): SummariseFunction {
  checkTarget(endpoint, model, "summariser");
  checkOptions(options, "summariser");
  const { system = SUMMARISER_SYSTEM, ...rest } = options;
  return async (messages, previous, signal) => {
    if (!Array.isArray(messages)) {
      throw new SideTaskError(
        "invalid-input",
        `summariser: the messages to fold must be an array, and were ${describeValue(messages)}.`,
      );
    }
    const notice = rest.onNotice ?? (() => {});
    const stretch = transcriptText(messages);
    if (!stretch.trim()) return undefined;
    const notes = typeof previous === "string" ? previous.trim() : "";
    const input = notes
      ? `Notes so far:\n${notes}\n\nContinue these notes with what happened next:\n\n${stretch}`
      : `The conversation to take notes of:\n\n${stretch}`;
    const callerSignal = rest.signal ?? (signal instanceof AbortSignal ? signal : undefined);
    try {
      const reply = await sideCall(
        endpoint,
        model,
        system,
        input,
        { ...rest, ...(callerSignal ? { signal: callerSignal } : {}) },
        { maxTokens: SUMMARY_MAX_TOKENS, temperature: 0.3 },
        "summariser",
      );
      if (reply.finishReason === "length") {
        notice(
          `The summary from ${model} was cut off at its reply ceiling; the transcript was left as it was.`,
        );
        return undefined;
      }
      if (reply.text === "") {
        // A thinking model can spend the whole reply in its scratchpad, which is taken out.
        notice(
          `${model} wrote an empty summary (nothing outside its scratchpad); the transcript was left as it was.`,
        );
        return undefined;
      }
      return reply.text;
    } catch (error) {
      if (SideTaskError.isInstance(error) && error.code === "invalid-input") throw error;
      notice(`The summary could not be written, so the transcript was left as it was: ${errorText(error)}`);
      return undefined;
    }
  };
}
