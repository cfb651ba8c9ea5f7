import { createHash } from "node:crypto";
import { own } from "./own.js";

/** Exactly nine ASCII letters and digits: the one id form every server takes. */
const SHORT_ID = /^[A-Za-z0-9]{9}$/;
const DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SPAN = 62n ** 9n;

/** True for an id of exactly nine ASCII letters and digits (`gSIMJiOkT`). Never throws. */
export function isShortToolCallId(id: unknown): id is string {
  return typeof id === "string" && SHORT_ID.test(id);
}

/** The `attempt`-th nine-character id derived from `id`: a SHA-256 of it, as base 62. */
function derived(id: string, attempt: number): string {
  const digest = createHash("sha256")
    .update(attempt === 0 ? id : `${id}\u0000${attempt}`)
    .digest();
  let n = digest.readBigUInt64BE(0) % SPAN;
  let out = "";
  for (let i = 0; i < 9; i++) {
    out = DIGITS[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A message's `tool_calls` and `tool_call_id`, a call's `id`: where the object (or its class) holds
 * them, never a polluted Object.prototype's (an inherited `tool_call_id` went onto every user
 * message, renamed).
 */
function callsOf(message: Record<string, unknown>): unknown[] | undefined {
  const calls = own(message, "tool_calls");
  return Array.isArray(calls) ? calls : undefined;
}
function idOf(value: unknown, name: "id" | "tool_call_id"): string | undefined {
  const id = own(value, name);
  return typeof id === "string" ? id : undefined;
}

/** Every id in the transcript, in order of appearance: assistant `tool_calls[].id`, tool `tool_call_id`. */
function idsOf(messages: readonly unknown[]): string[] {
  const ids: string[] = [];
  for (const message of messages) {
    if (!isRecord(message)) continue;
    for (const call of callsOf(message) ?? []) {
      const id = isRecord(call) ? idOf(call, "id") : undefined;
      if (id !== undefined) ids.push(id);
    }
    const answered = idOf(message, "tool_call_id");
    if (answered !== undefined) ids.push(answered);
  }
  return ids;
}

/**
 * The wire id for each id of a transcript that is not already nine letters and digits.
 *
 * Valid ids are kept and reserved first; each other id, in order of appearance, gets the first of
 * its derived ids that no kept id and no earlier id holds.
 */
function idMap(messages: readonly unknown[]): Map<string, string> {
  const ids = idsOf(messages);
  const taken = new Set(ids.filter((id) => SHORT_ID.test(id)));
  const map = new Map<string, string>();
  for (const id of ids) {
    if (taken.has(id) || map.has(id)) continue;
    let attempt = 0;
    let wire = derived(id, attempt);
    while (taken.has(wire)) wire = derived(id, ++attempt);
    taken.add(wire);
    map.set(id, wire);
  }
  return map;
}

/**
 * A transcript whose tool-call ids are all nine ASCII letters and digits, for a model that takes no
 * other (Mistral's API and tokenizer, its v3 chat templates) or an endpoint that caps their length.
 *
 * Reads each assistant message's `tool_calls[].id` and each tool message's `tool_call_id` (strings;
 * anything else is left as it is). An id already of that form is kept. Any other id becomes nine
 * characters derived from it by SHA-256 in base 62, so the same transcript gives the same ids on
 * every call and in every process (a prompt cache keeps hitting), a call and its result still pair
 * (one id, one wire id), and two different ids never share one: a derived id that a kept id or an
 * earlier id holds is passed over for the next, in order of appearance. Returns a new array;
 * messages it changes are copied (and their `tool_calls`), the others are the caller's objects.
 * Never mutates `messages`; never throws for a message of any shape. `buildBody` applies it once
 * the model refused an id (`anyToolCallIds: false`); a host building its own request applies it
 * to what it sends and keeps its transcript as it was. Generic in the message type: a copy differs
 * only in its ids, so an `openai` SDK `ChatCompletionMessageParam[]` comes back as one.
 */
export function shortToolCallIds<M>(messages: readonly M[]): M[] {
  if (!Array.isArray(messages)) {
    throw new TypeError("shortToolCallIds: messages must be an array of chat messages.");
  }
  const map = idMap(messages);
  if (map.size === 0) return [...messages];
  return messages.map((message) => {
    if (!isRecord(message)) return message;
    let copy: Record<string, unknown> | undefined;
    const calls = callsOf(message);
    const renamed = (call: unknown): string | undefined => {
      const id = isRecord(call) ? idOf(call, "id") : undefined;
      return id === undefined ? undefined : map.get(id);
    };
    if (calls?.some((call) => renamed(call) !== undefined)) {
      copy = {
        ...message,
        tool_calls: calls.map((call) => {
          const wire = renamed(call);
          return wire === undefined ? call : { ...(call as object), id: wire };
        }),
      };
    }
    const answered = idOf(message, "tool_call_id");
    if (answered !== undefined && map.has(answered)) {
      copy = { ...(copy ?? message), tool_call_id: map.get(answered) };
    }
    // A copy differs from its message only in string ids: still the caller's message type.
    return (copy ?? message) as M;
  });
}
