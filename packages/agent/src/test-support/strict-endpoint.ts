// A testkit personality that refuses what a strict chat endpoint refuses in a request's messages, so
// a run that sends a malformed transcript ends in a 400 the tests can see (shared by the agent's
// property tests; src/test-support is not published).
import type { Personality } from "@loopwright/testkit";

type WireMessage = {
  role?: unknown;
  content?: unknown;
  tool_calls?: Array<{ id?: unknown; function?: { name?: unknown; arguments?: unknown } }>;
  tool_call_id?: unknown;
};

/**
 * Each fault a strict endpoint would refuse in `messages`, one line each; empty when it takes them.
 * Roles: a system message only at the head; the first message after it a user message; a tool
 * message only in the run of answers right after an assistant message with calls, answering one of
 * its calls, each call answered exactly once there; call ids unique over the request; arguments JSON;
 * an assistant message with text or calls; the request ending in a user or tool message.
 */
export function requestFaults(messages: readonly unknown[]): string[] {
  const faults: string[] = [];
  const list = messages as WireMessage[];
  const seenIds = new Set<unknown>();
  let at = 0;
  while (list[at]?.role === "system") at++;
  if (list.length > at && list[at]?.role !== "user") {
    faults.push(`the first message after the system prompt is a ${String(list[at]?.role)} message`);
  }
  for (; at < list.length; at++) {
    const message = list[at] ?? {};
    const role = message.role;
    if (role === "system") faults.push(`system message at ${at} is not at the head`);
    else if (role === "tool") faults.push(`tool message at ${at} follows no assistant message with calls`);
    else if (role !== "user" && role !== "assistant")
      faults.push(`message at ${at} has role ${String(role)}`);
    if (role === "user" && (typeof message.content !== "string" || message.content === "")) {
      faults.push(`user message at ${at} has no text`);
    }
    if (role !== "assistant") continue;
    const calls = message.tool_calls ?? [];
    const text = typeof message.content === "string" ? message.content : "";
    if (calls.length === 0 && text.trim() === "") faults.push(`assistant message at ${at} says nothing`);
    const open = new Map<unknown, number>();
    for (const call of calls) {
      if (typeof call.id !== "string" || call.id === "") faults.push(`a call at ${at} has no id`);
      if (seenIds.has(call.id)) faults.push(`call id ${String(call.id)} is used twice`);
      seenIds.add(call.id);
      open.set(call.id, 0);
      try {
        JSON.parse(String(call.function?.arguments));
      } catch {
        faults.push(`the arguments of call ${String(call.id)} are not JSON`);
      }
    }
    while (list[at + 1]?.role === "tool") {
      at++;
      const answered = list[at]?.tool_call_id;
      const count = open.get(answered);
      if (count === undefined)
        faults.push(`tool message at ${at} answers ${String(answered)}, no call before it`);
      else open.set(answered, count + 1);
      if (typeof list[at]?.content !== "string") faults.push(`tool message at ${at} has no text`);
    }
    for (const [id, count] of open)
      if (count !== 1) faults.push(`call ${String(id)} answered ${count} times`);
  }
  const last = list.at(-1)?.role;
  if (last !== "user" && last !== "tool") faults.push(`the request ends in a ${String(last)} message`);
  return faults;
}

/** Refuses, with a 400 naming each fault, a request `requestFaults` finds fault with. */
export const STRICT_ENDPOINT: Personality = {
  name: "strict-endpoint",
  check(request) {
    const messages = (request.body as { messages?: unknown } | undefined)?.messages;
    const faults = requestFaults(Array.isArray(messages) ? messages : []);
    if (faults.length === 0) return undefined;
    return {
      type: "error",
      status: 400,
      body: { error: { message: faults.join("; "), type: "invalid_request_error" } },
    };
  },
};
