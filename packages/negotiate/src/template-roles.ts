import type { ModelCapabilities } from "./capabilities.js";
import { own } from "./own.js";

/**
 * The text of the assistant message `withTemplateRoles` puts between a tool result and the user
 * message after it, for a model that takes no user message there (`userAfterTool: false`): short,
 * and saying only what happened (the results were there to read).
 */
export const TOOL_RESULTS_READ = "(Tool results read.)";

type Message = Record<string, unknown>;

function isRecord(value: unknown): value is Message {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function roleOf(message: unknown): unknown {
  return isRecord(message) ? own(message, "role") : undefined;
}

/**
 * The text a system message holds: its string content, or its text parts joined by a blank line;
 * `""` for anything else (a system message holds no image a template could show in a user turn).
 */
function systemText(message: Message): string {
  const content = own(message, "content");
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) =>
      isRecord(part) && typeof own(part, "text") === "string" ? (own(part, "text") as string) : "",
    )
    .filter((text) => text !== "")
    .join("\n\n");
}

/** `message` (a user message) with `text` at the head of its content, a blank line between. */
function headedBy(message: Message, text: string): Message {
  const content = own(message, "content");
  if (typeof content === "string")
    return { ...message, content: content === "" ? text : `${text}\n\n${content}` };
  if (Array.isArray(content)) return { ...message, content: [{ type: "text", text }, ...content] };
  return { ...message, content: text };
}

/**
 * The messages with every `system` message's text moved into a user message: the system messages
 * before a user message at the head of its content (a blank line after each), those with no user
 * message after them before the next message as a user message of their own.
 */
function foldSystem(messages: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  let pending: string[] = [];
  const flush = () => {
    if (pending.length > 0) out.push({ role: "user", content: pending.join("\n\n") });
    pending = [];
  };
  for (const message of messages) {
    const role = roleOf(message);
    if (role === "system" && isRecord(message)) {
      const text = systemText(message);
      if (text !== "") pending.push(text);
      continue;
    }
    if (role === "user" && isRecord(message) && pending.length > 0) {
      out.push(headedBy(message, pending.join("\n\n")));
      pending = [];
      continue;
    }
    flush();
    out.push(message);
  }
  flush();
  return out;
}

/** The messages with an assistant message saying {@link TOOL_RESULTS_READ} between each tool message and a user message right after it. */
function bridged(messages: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const message of messages) {
    if (roleOf(message) === "user" && roleOf(out.at(-1)) === "tool") {
      out.push({ role: "assistant", content: TOOL_RESULTS_READ });
    }
    out.push(message);
  }
  return out;
}

/** The id of a tool call as an assistant message lists it, if it has one. */
function callId(call: unknown): unknown {
  return isRecord(call) ? own(call, "id") : undefined;
}

/**
 * The messages with each assistant message that carries more than one tool call written as one
 * assistant message per call, each followed by the tool messages answering that call. The tool
 * messages are those right after the assistant message (the run a transcript answers a step in);
 * one that answers none of its calls stays after the last. The first piece keeps the message's
 * other fields (its text, its reasoning); the others carry only the call.
 */
function oneCallEach(messages: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    const calls =
      isRecord(message) && roleOf(message) === "assistant" ? own(message, "tool_calls") : undefined;
    if (!isRecord(message) || !Array.isArray(calls) || calls.length < 2) {
      out.push(message);
      continue;
    }
    let end = i + 1;
    while (end < messages.length && roleOf(messages[end]) === "tool") end++;
    const results = messages.slice(i + 1, end);
    // The results by the id they answer, each read once: matching every call against every result
    // made a step of n calls n² reads on every request of the run (8,000 calls: seconds a request).
    const answering = new Map<unknown, unknown[]>();
    for (const result of results) {
      const id = isRecord(result) ? own(result, "tool_call_id") : undefined;
      if (id === undefined) continue;
      const answers = answering.get(id);
      if (answers) answers.push(result);
      else answering.set(id, [result]);
    }
    const placed = new Set<unknown>();
    calls.forEach((call, index) => {
      out.push(
        index === 0
          ? { ...message, tool_calls: [call] }
          : { role: "assistant", content: null, tool_calls: [call] },
      );
      const id = callId(call);
      const answers = id === undefined ? undefined : answering.get(id);
      if (answers === undefined) return;
      // A second call with the same id takes none: the first took them.
      answering.delete(id);
      for (const result of answers) {
        placed.add(result);
        out.push(result);
      }
    });
    for (const result of results) if (!placed.has(result)) out.push(result);
    i = end - 1;
  }
  return out;
}

/**
 * The messages as a model whose chat template refused a role order takes them; `messages` as they
 * are for any other model (and for none).
 *
 * With `model.systemRole === false` (its template takes no `system` message: Gemma 2, Mistral
 * v0.1), each system message's text goes at the head of the next user message, a blank line
 * between (a system message with no user message after it goes as a user message of its own).
 * With `model.userAfterTool === false` (Mistral's API and `mistral_common` refuse a `user` message
 * straight after a `tool` message), an assistant message saying {@link TOOL_RESULTS_READ} goes
 * between them. With `model.parallelCalls === false` (Llama 3.1's template takes one tool call per
 * assistant message), an assistant message with several calls goes as one per call, each followed
 * by its result. Returns a new array; messages it changes are copied, the others are the caller's
 * objects. Never mutates `messages`; never throws for a message of any shape (one that is not an
 * object, or has no `role`, goes as it is). `buildBody` applies it; a host building its own request
 * applies it to what it sends, and keeps its transcript as it was. Generic in the message type,
 * as `shortToolCallIds` is.
 */
export function withTemplateRoles<M>(messages: readonly M[], model: ModelCapabilities | undefined): M[] {
  if (!Array.isArray(messages)) {
    throw new TypeError("withTemplateRoles: messages must be an array of chat messages.");
  }
  let out: readonly unknown[] = messages;
  if (model?.systemRole === false) out = foldSystem(out);
  if (model?.userAfterTool === false) out = bridged(out);
  if (model?.parallelCalls === false) out = oneCallEach(out);
  // A copy holds the caller's fields, a role and text content: still the caller's message type.
  return [...out] as M[];
}
