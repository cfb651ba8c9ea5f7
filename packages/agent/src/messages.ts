import type { ChatMessage } from "@loopwright/loop";

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

const LLM_ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

/**
 * The default conversion from an agent's transcript to what the model is sent: chat messages pass
 * as they are, every other role (an app-only message) is left out. Never throws.
 */
export function defaultConvertToLlm(messages: readonly AgentMessage[]): ChatMessage[] {
  return messages.filter(
    (m): m is ChatMessage =>
      typeof m === "object" && m !== null && LLM_ROLES.has((m as { role?: unknown }).role as string),
  );
}

/** A user message with the given text. */
export function userMessage(text: string): ChatMessage {
  return { role: "user", content: text };
}

/** The text of a chat message's content (parts joined), "" for none. */
export function messageText(message: AgentMessage): string {
  const content = (message as ChatMessage).content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        typeof part === "object" && part && "text" in part && typeof part.text === "string" ? part.text : "",
      )
      .join("");
  }
  return "";
}

/**
 * The longest prefix of a transcript in which every assistant tool call is answered by a tool
 * message before the next assistant message (or the end). Returns its length.
 */
export function answeredPrefix(messages: readonly AgentMessage[]): number {
  let good = 0;
  let open = new Set<string>();
  for (let at = 0; at < messages.length; at++) {
    const m = messages[at] as ChatMessage;
    if (m.role === "assistant") {
      if (open.size > 0) break;
      open = new Set((m.tool_calls ?? []).map((c) => c.id));
    } else if (m.role === "tool") {
      if (typeof m.tool_call_id !== "string" || !open.has(m.tool_call_id)) break;
      open.delete(m.tool_call_id);
    } else if (open.size > 0) {
      break;
    }
    if (open.size === 0) good = at + 1;
  }
  return good;
}
