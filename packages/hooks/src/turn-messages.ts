import { createHash } from "node:crypto";
import type { ContentPartLike, MessageLike, ToolCallLike } from "@loopwright/ledger";
import { describe, HooksError } from "./errors.js";
import { wellFormed } from "./text.js";
import type { HookMessage } from "./types.js";
import { checkMessages } from "./with-context.js";

function checkOffset(offset: unknown, where: string, count = 0): asserts offset is number {
  // Safe with the messages after it: past 2^53, offset + place rounds, and two messages would share
  // an index and a uuid (a memory server de-duplicating on it would file one and drop the other).
  if (
    !Number.isSafeInteger(offset) ||
    (offset as number) < 0 ||
    !Number.isSafeInteger((offset as number) + count)
  ) {
    throw new HooksError(
      "invalid-option",
      `${where}: offset must be a whole number, 0 or more and below 2^53 with the messages after it (the stored index of the array's first message), and was ${describe(offset)}.`,
    );
  }
}

/** A version-8 UUID from a SHA-256 of the session and the stored index: the same pair, the same uuid. */
function messageUuid(session: string, index: number): string {
  const hex = createHash("sha256")
    .update(`loopwright.hook-message\u0000${session}\u0000${index}`)
    .digest("hex");
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * What a message said, as text: its content (a string, or its text parts joined — an assistant's
 * refusal part `{ type: "refusal", refusal }` is what it said too), then the assistant's own
 * `refusal` (the openai SDK's message field, where a refusal comes with `content: null`), on a line
 * of its own after any content.
 */
function text(message: MessageLike): string {
  const content = message.content;
  let out = "";
  if (typeof content === "string") out = content;
  else if (Array.isArray(content)) {
    for (const part of content as readonly ContentPartLike[]) {
      if (part && typeof part.text === "string") out += part.text;
      else if (part?.type === "refusal" && typeof part.refusal === "string") out += part.refusal;
    }
  }
  const refusal: unknown = (message as { refusal?: unknown }).refusal;
  if (typeof refusal === "string" && refusal !== "") out = out === "" ? refusal : `${out}\n${refusal}`;
  return out;
}

/**
 * A tool call's arguments as sent: a string as it is, arguments a host stored parsed (an object) as
 * their JSON, anything else none. Throws `invalid-messages` for an object that cannot be written as
 * JSON (a cycle, a BigInt), which no server could be sent either.
 */
function argumentsText(args: unknown, place: number, call: number): string {
  if (typeof args === "string") return args;
  if (typeof args !== "object" || args === null) return "";
  try {
    return JSON.stringify(args) ?? "";
  } catch (cause) {
    throw new HooksError(
      "invalid-messages",
      `turnMessages: messages[${place}].tool_calls[${call}].function.arguments could not be written as JSON (${cause instanceof Error ? cause.message : "it threw"}); store them as the JSON text the model sent.`,
      { cause },
    );
  }
}

/**
 * `messages` as a hook is handed them: each a `HookMessage` with its text, its stored index
 * (`offset` + its place in the array) and a uuid made from `session` and that index. System and
 * developer messages (the operator's prompt, a fold's summary) are left out; tool calls and tool call
 * ids are kept. An assistant's refusal (a `refusal` part, or the message's `refusal` field) is its
 * text, and tool-call arguments a host stored parsed are handed over as their JSON.
 *
 * Pass `offset` when the array does not start at the stored transcript's first message — after a
 * fold, or for one turn's slice — so a message keeps the uuid it had before, and a memory server
 * de-duplicating on it files each message once. Throws `HooksError` for messages that are not an
 * array of objects (or one whose `role` is not a string, or whose parsed tool-call arguments cannot
 * be written as JSON), a session that is not a string, or an offset that is not a whole number ≥ 0.
 */
export function turnMessages(messages: readonly MessageLike[], session: string, offset = 0): HookMessage[] {
  checkMessages(messages, "turnMessages");
  if (typeof session !== "string") {
    throw new HooksError(
      "invalid-option",
      `turnMessages: session must be the session's id as a string, and was ${describe(session)}.`,
    );
  }
  checkOffset(offset, "turnMessages", messages.length);
  const out: HookMessage[] = [];
  messages.forEach((message, place) => {
    if (typeof message.role !== "string") {
      // A hook handed role "undefined" (or "[object Object]") would file the message as nobody's.
      throw new HooksError(
        "invalid-messages",
        `turnMessages: messages[${place}].role must be a string ("user", "assistant", "tool"…), and was ${describe(message.role)}.`,
      );
    }
    if (message.role === "system" || message.role === "developer") return;
    const index = offset + place;
    // Text well-formed: a hook hands it on (a memory server, a model), and a lone surrogate (a cut
    // inside an emoji) has a strict JSON reader refuse the request whole.
    const entry: HookMessage = {
      uuid: messageUuid(session, index),
      index,
      role: wellFormed(message.role),
      content: wellFormed(text(message)),
    };
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      entry.toolCalls = (message.tool_calls as readonly ToolCallLike[]).map((call, at) => ({
        ...(typeof call?.id === "string" ? { id: wellFormed(call.id) } : {}),
        name: typeof call?.function?.name === "string" ? wellFormed(call.function.name) : "",
        arguments: wellFormed(argumentsText(call?.function?.arguments, place, at)),
      }));
    }
    if (typeof message.tool_call_id === "string") entry.toolCallId = wellFormed(message.tool_call_id);
    out.push(entry);
  });
  return out;
}

/**
 * The index of the turn a transcript ends in, counting from 0: one turn per user message, so the
 * last question's turn. `offset` is how many turns came before the array (the ones a fold took out).
 * A transcript with no question yet is at turn `offset`. Throws `HooksError` for messages that are
 * not an array of objects, or an offset that is not a whole number ≥ 0.
 */
export function turnIndex(messages: readonly MessageLike[], offset = 0): number {
  checkMessages(messages, "turnIndex");
  checkOffset(offset, "turnIndex");
  let questions = 0;
  for (const message of messages) if (message.role === "user") questions++;
  return offset + Math.max(0, questions - 1);
}
