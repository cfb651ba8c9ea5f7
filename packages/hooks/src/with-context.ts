import type { ContentPartLike, MessageLike } from "@loopwright/ledger";
import { arrayOrRevoked, describe, HooksError } from "./errors.js";
import { wellFormed } from "./text.js";

/** Throws `invalid-messages` unless `messages` is an array of message objects. */
export function checkMessages(messages: unknown, where: string): asserts messages is readonly MessageLike[] {
  // A revoked Proxy first (Array.isArray throws on one); the second test only narrows the type.
  if (arrayOrRevoked(messages) !== true || !Array.isArray(messages)) {
    throw new HooksError(
      "invalid-messages",
      `${where}: messages must be an array of chat messages, and was ${describe(messages)}.`,
    );
  }
  // By index, not forEach: a hole (`delete messages[i]`) is a message missing, said here, rather than
  // skipped here and read as `undefined` further in.
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    // arrayOrRevoked: a revoked Proxy entry is refused here by its place, not a bare TypeError.
    if (typeof message !== "object" || message === null || arrayOrRevoked(message) !== false) {
      throw new HooksError(
        "invalid-messages",
        `${where}: messages[${i}] must be a message object ({ role, content }), and was ${i in messages ? describe(message) : "a hole (no entry at all)"}.`,
      );
    }
  }
}

/**
 * A copy of `messages` with `context` (and `preface` above it) leading the question at `index`.
 * The preface is already resolved: the caller's own, or the configured one.
 */
export function putContext<Message extends MessageLike>(
  messages: readonly Message[],
  index: number,
  context: string | null | undefined,
  preface: string,
): Message[] {
  checkMessages(messages, "withContext");
  if (!Number.isInteger(index) || index < 0 || index >= messages.length) {
    throw new HooksError(
      "invalid-index",
      `withContext: index must point at a message of the ${messages.length} given (0 to ${messages.length - 1}), and was ${describe(index)}.`,
    );
  }
  if (context !== undefined && context !== null && typeof context !== "string") {
    throw new HooksError(
      "invalid-text",
      `withContext: context must be the string gather (or the loop) handed back, and was ${describe(context)}.`,
    );
  }
  if (!context) return messages.slice();
  const message = messages[index] as Message;
  if (message.role !== "user") {
    throw new HooksError(
      "invalid-index",
      `withContext puts context on a question, and messages[${index}] is a ${JSON.stringify(message.role)} message, not a "user" one.`,
    );
  }
  const typed = message.content;
  if (typed !== undefined && typed !== null && typeof typed !== "string" && !Array.isArray(typed)) {
    throw new HooksError(
      "invalid-messages",
      `withContext: messages[${index}].content must be text, an array of content parts, or null, and was ${describe(typed)}; putting context on it would overwrite the question.`,
    );
  }
  // Written well-formed: a lone surrogate in a preface or a stored context would have every later
  // request refused by a strict JSON reader (llama.cpp's), turn after turn. The same text in, the
  // same text out, so a question rebuilt from what was stored is the one sent before.
  const lead = wellFormed(preface === "" ? context : `${preface}\n\n${context}`);
  let content: MessageLike["content"];
  if (typeof message.content === "string") content = `${lead}\n\n${message.content}`;
  else if (Array.isArray(message.content)) {
    const part: ContentPartLike = { type: "text", text: `${lead}\n\n` };
    content = [part, ...(message.content as readonly ContentPartLike[])];
  } else content = lead;
  const out = messages.slice();
  out[index] = { ...message, content } as Message;
  return out;
}
