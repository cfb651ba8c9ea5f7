// Shared by the ledger's property tests; not published (package.json `files` leaves src/test-support out).
import type { MessageLike } from "../messages.js";

/**
 * Why an endpoint would refuse this transcript, or undefined: a tool message first (after the
 * system prompts), a tool message that answers no call made before it in its exchange, or a call
 * left unanswered before the next question or answer.
 */
export function refusal(messages: readonly MessageLike[]): string | undefined {
  let i = 0;
  while (i < messages.length && (messages[i]?.role === "system" || messages[i]?.role === "developer")) i++;
  if (messages[i]?.role === "tool") return `message ${i} is a tool result with nothing before it`;
  let open = new Set<string>();
  let anonymous = 0;
  for (; i < messages.length; i++) {
    const m = messages[i] as MessageLike;
    if (m.role === "tool") {
      const id = m.tool_call_id;
      if (typeof id === "string" && open.has(id)) open.delete(id);
      else if (anonymous > 0) anonymous--;
      else return `message ${i} answers a call that is not open`;
      continue;
    }
    if (m.role === "user") continue; // an interjection between a call and its answer
    if (open.size > 0 || anonymous > 0) return `a call before message ${i} was never answered`;
    open = new Set();
    anonymous = 0;
    for (const call of m.tool_calls ?? []) {
      if (typeof call.id === "string" && call.id !== "") open.add(call.id);
      else anonymous++;
    }
  }
  return open.size > 0 || anonymous > 0 ? "the last calls were never answered" : undefined;
}
