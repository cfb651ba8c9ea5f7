// Shared by the loop's tests; not published (package.json `files` leaves src/test-support out).
import { type Personality, readFixture } from "@loopwright/testkit";
import type { ChatMessage, ToolDefinition } from "../config.js";

/** A tool the model can call with two numbers. */
export const ADD_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "add",
    description: "Add two numbers",
    parameters: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
  },
};

/** The question most tests ask. */
export const QUESTION: ChatMessage[] = [{ role: "user", content: "What is 2 + 3?" }];

/** The ids of assistant tool calls in a transcript that no tool message answers. */
export function unanswered(messages: ReadonlyArray<ChatMessage>): string[] {
  const asked = messages.flatMap((m) =>
    m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [],
  );
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
  return asked.filter((id) => !answered.has(id));
}

type Wire = {
  role?: unknown;
  content?: unknown;
  tool_calls?: { id?: unknown; function?: { arguments?: unknown } }[];
  tool_call_id?: unknown;
};

/**
 * What a strict endpoint refuses in a transcript, as one line each (empty when it would take it):
 * an assistant message's calls not each answered once by the tool messages right after it, a tool
 * message answering no call of the assistant message it follows, an id used twice, arguments that
 * are not JSON, and an assistant message with neither text nor calls.
 */
export function transcriptFaults(messages: ReadonlyArray<unknown>): string[] {
  const faults: string[] = [];
  const ids = new Set<unknown>();
  const list = messages as Wire[];
  for (let at = 0; at < list.length; at++) {
    const message = list[at] ?? {};
    if (message.role === "tool") {
      faults.push(`tool message ${String(message.tool_call_id)} at ${at} answers no call before it`);
      continue;
    }
    if (message.role !== "assistant") continue;
    const calls = message.tool_calls ?? [];
    const text = typeof message.content === "string" ? message.content.trim() : "";
    if (calls.length === 0 && text === "") faults.push(`assistant message at ${at} is empty`);
    const answers = new Map<unknown, number>();
    for (const call of calls) {
      if (ids.has(call.id)) faults.push(`tool-call id ${String(call.id)} is used twice`);
      ids.add(call.id);
      answers.set(call.id, 0);
      try {
        JSON.parse(String(call.function?.arguments));
      } catch {
        faults.push(`the arguments of ${String(call.id)} are not JSON`);
      }
    }
    while (list[at + 1]?.role === "tool") {
      at++;
      const id = list[at]?.tool_call_id;
      const count = answers.get(id);
      if (count === undefined) faults.push(`tool message ${String(id)} at ${at} answers no call before it`);
      else answers.set(id, count + 1);
    }
    for (const [id, count] of answers) {
      if (count !== 1) faults.push(`tool call ${String(id)} is answered ${count} times`);
    }
  }
  return faults;
}

/**
 * A testkit personality that refuses, with a 400 naming each fault, a request whose transcript a
 * strict endpoint would refuse (`transcriptFaults`). Sending a run's transcript to a server started
 * with it is the check that the transcript can be sent again.
 */
export const STRICT_TRANSCRIPT: Personality = {
  name: "strict-transcript",
  check(request) {
    const messages = (request.body as { messages?: unknown } | undefined)?.messages;
    const faults = transcriptFaults(Array.isArray(messages) ? messages : []);
    return faults.length === 0
      ? undefined
      : {
          type: "error",
          status: 400,
          body: { error: { message: faults.join("; "), type: "invalid_request_error" } },
        };
  },
};

/**
 * A testkit personality that refuses, as llama.cpp does under a chat template that makes roles
 * alternate (Gemma's, Mistral's), a request with two user messages in a row, or two system messages
 * in a row: the 400 the real server (b9749) answered, recorded in
 * `errors/llamacpp/roles-must-alternate-jinja-b9749.json` (the live test sees it for both).
 */
export const ALTERNATING_ROLES: Personality = {
  name: "alternating-roles",
  check(request) {
    const messages = (request.body as { messages?: { role?: unknown }[] } | undefined)?.messages ?? [];
    const at = messages.findIndex(
      (m, i) => i > 0 && (m?.role === "user" || m?.role === "system") && messages[i - 1]?.role === m?.role,
    );
    if (at === -1) return undefined;
    const recorded = JSON.parse(readFixture("errors/llamacpp/roles-must-alternate-jinja-b9749.json"));
    return { type: "error", status: 400, body: recorded };
  },
};
