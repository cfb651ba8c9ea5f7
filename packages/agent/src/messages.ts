import type { ChatMessage } from "@loopwright/loop";
import { quotedEcho } from "./echo.js";
import { kindOf } from "./errors.js";
import { setting } from "./own.js";

/**
 * App-only message types, added by declaration merging: each property's type is one more member
 * of `AgentMessage`. The model never sees them unless `convertToLlm` turns them into chat messages.
 *
 * ```ts
 * declare module "@loopwright/agent" {
 *   interface CustomAgentMessages { notification: { role: "notification"; text: string } }
 * }
 * ```
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging.
export interface CustomAgentMessages {}

/** A message of an agent's transcript: a chat message the endpoint takes, or an app-only one. */
export type AgentMessage = ChatMessage | CustomAgentMessages[keyof CustomAgentMessages];

export const LLM_ROLES: ReadonlySet<string> = new Set(["system", "developer", "user", "assistant", "tool"]);

/**
 * The default conversion from an agent's transcript to what the model is sent: chat messages pass
 * as they are, every other role (an app-only message) is left out. Never throws.
 */
export function defaultConvertToLlm(messages: readonly AgentMessage[]): ChatMessage[] {
  return messages.filter(
    (m): m is ChatMessage =>
      typeof m === "object" && m !== null && LLM_ROLES.has(setting(m, "role") as string),
  );
}

/** A tool call as an assistant message holds it. */
export type MessageToolCall = NonNullable<Extract<ChatMessage, { role: "assistant" }>["tool_calls"]>[number];

/**
 * A message's `role`, `content` or `tool_call_id` where the message holds it itself (or its class
 * does), never a polluted `Object.prototype`'s: with `Object.prototype.tool_call_id` set, every
 * message read as answering that call. `undefined` for anything that is not an object.
 */
export function fieldOf(message: unknown, name: "role" | "content" | "tool_call_id"): unknown {
  return setting(message, name);
}

/**
 * A message's own tool calls (or its class's), `[]` where it holds none or not a list: an
 * assistant answer in text holds no `tool_calls`, and `Object.prototype.tool_calls` gave every one
 * a call nothing answered (the agent appended a "Not run" answer to it, for the endpoint to refuse).
 */
export function toolCallsOf(message: unknown): MessageToolCall[] {
  const calls = setting(message, "tool_calls");
  return Array.isArray(calls) ? (calls as MessageToolCall[]) : [];
}

/** Whether `message` is an assistant message with at least one tool call of its own. */
export function hasCalls(message: unknown): boolean {
  return setting(message, "role") === "assistant" && toolCallsOf(message).length > 0;
}

/** A user message with the given text. */
export function userMessage(text: string): ChatMessage {
  return { role: "user", content: text };
}

/** The text of a chat message's content (parts joined), "" for none. */
export function messageText(message: AgentMessage): string {
  const content = setting(message, "content");
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => {
        const text = setting(part, "text");
        return typeof text === "string" ? text : "";
      })
      .join("");
  }
  return "";
}

/**
 * The longest prefix of a transcript in which every assistant tool call is answered by a tool
 * message before the next chat message that is not one (or the end). Returns its length. The
 * transcript is read as the model is sent it: an app-only message (a role other than system,
 * developer, user, assistant or tool) between a call and its answer is skipped, so the Agent's own
 * order `assistant (call), app-only note, tool` counts as answered.
 */
export function answeredPrefix(messages: readonly AgentMessage[]): number {
  let good = 0;
  let open = new Set<string>();
  for (let at = 0; at < messages.length; at++) {
    // Each field the message's own (or its class's), never a polluted Object.prototype's: an
    // inherited `tool_calls` left every answer unanswered.
    const m = messages[at];
    const role = setting(m, "role");
    if (!LLM_ROLES.has(role as string)) {
      // Never sent: it neither ends an open step nor needs an answer.
    } else if (role === "assistant") {
      if (open.size > 0) break;
      const calls = setting(m, "tool_calls");
      open = new Set(Array.isArray(calls) ? calls.map((c: unknown) => setting(c, "id") as string) : []);
    } else if (role === "tool") {
      const id = setting(m, "tool_call_id");
      if (typeof id !== "string" || !open.has(id)) break;
      open.delete(id);
    } else if (open.size > 0) {
      break;
    }
    if (open.size === 0) good = at + 1;
  }
  return good;
}

/** A content part an endpoint takes the shape of: a string `type`, and a text part's text or an image part's url. */
export function isPart(part: unknown): boolean {
  const type = setting(part, "type");
  if (!isRecord(part) || typeof type !== "string") return false;
  if (type === "text") return typeof setting(part, "text") === "string";
  if (type === "image_url") {
    const image = setting(part, "image_url");
    return isRecord(image) && typeof setting(image, "url") === "string";
  }
  return true;
}

/**
 * `text`'s first `max` UTF-16 code units, never ending inside a character: a surrogate pair (an
 * emoji) the cut would split is left out whole, so what is shown holds no lone surrogate.
 */
export function cutText(text: string, max: number): string {
  const cut = text.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  const next = text.charCodeAt(max);
  return last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? cut.slice(0, -1) : cut;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What is wrong with one tool call of an assistant message, or undefined. */
export function callProblem(call: unknown): string | undefined {
  // Its own fields (or its class's), never a polluted Object.prototype's.
  const id = setting(call, "id");
  if (!isRecord(call) || typeof id !== "string") return "a tool call without a string id";
  // The loop's rule: a function call (its type absent or null read as one) or a custom one.
  const kind = setting(call, "type");
  if (kind !== undefined && kind !== null && kind !== "function" && kind !== "custom") {
    const type = typeof kind === "string" ? `type ${quotedEcho(kind)}` : "a type that is no string";
    return `tool call ${quotedEcho(id)} with ${type} (a call's type is "function" or "custom")`;
  }
  const fn = setting(call, kind === "custom" ? "custom" : "function");
  const body = kind === "custom" ? "input" : "arguments";
  if (!isRecord(fn) || typeof setting(fn, "name") !== "string" || typeof setting(fn, body) !== "string") {
    return `tool call ${quotedEcho(id)} without a string name and ${body}`;
  }
  return undefined;
}

/**
 * What keeps a value from being a message of a transcript (said as "is …" / "has …", without quoting
 * it), or undefined for one: an object with a non-empty string `role`; for a chat message, content
 * that is text or a list of parts an endpoint takes (`needContent`: present, except on an assistant
 * message), a tool message's `tool_call_id`, an assistant message's well-formed `tool_calls`. An
 * app-only message (any other role) is checked for its role only.
 */
export function messageProblem(message: unknown, needContent: boolean): string | undefined {
  if (!isRecord(message)) return `is not a message (an object with a role); got ${kindOf(message)}`;
  // Its own fields (or its class's), never a polluted Object.prototype's: an inherited
  // `tool_call_id` let a tool message without one through, for the endpoint to refuse.
  const role = setting(message, "role");
  const content = setting(message, "content");
  if (typeof role !== "string" || role === "") return `has no role (a non-empty string); got ${kindOf(role)}`;
  if (!LLM_ROLES.has(role)) return undefined;
  const absent = content === undefined || content === null;
  if (absent ? needContent && role !== "assistant" : typeof content !== "string" && !Array.isArray(content)) {
    return `has content that is neither text nor a list of parts; got ${kindOf(content)}`;
  }
  if (Array.isArray(content) && !content.every(isPart)) {
    return "has a content part that is not { type, … } (a text part without its text, an image part without its url)";
  }
  const toolCallId = setting(message, "tool_call_id");
  if (role === "tool" && typeof toolCallId !== "string") {
    return `is a tool message without its tool_call_id (a string); got ${kindOf(toolCallId)}`;
  }
  const calls = setting(message, "tool_calls");
  if (role === "assistant" && calls !== undefined && calls !== null) {
    if (!Array.isArray(calls)) return `has tool_calls that is not a list; got ${kindOf(calls)}`;
    for (const call of calls) {
      const problem = callProblem(call);
      if (problem) return `has ${problem}`;
    }
  }
  return undefined;
}
