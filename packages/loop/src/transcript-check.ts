import type { ChatMessage } from "./config.js";
import { LoopOptionError } from "./errors.js";
import { ownField } from "./own.js";
import { NOT_RUN } from "./run-calls.js";

/**
 * The roles a chat message has: the `openai` SDK's (`function` is its deprecated one). A host's
 * app-only messages (a UI notification) are left out before the run, as `@loopwright/agent`'s
 * `convertToLlm` does.
 */
const ROLES: ReadonlySet<unknown> = new Set(["system", "developer", "user", "assistant", "tool", "function"]);

/** How many faults one refusal lists before it counts the rest. */
const LISTED = 3;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What a value is, in a few words, for a refusal (never the value itself: it may be long or private). */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return "a string";
  return typeof value === "undefined" ? "nothing" : `a ${typeof value}`;
}

/** What is wrong with one content part, or undefined: a `{ type, … }` object, a text part with its text, an image part with its url. */
function partFault(part: unknown): string | undefined {
  if (!isObject(part) || typeof part.type !== "string") return `is ${kindOf(part)}, not a { type, … } part`;
  const foreign = aiSdkPartFault(part.type);
  if (foreign) return foreign;
  if (part.type === "text" && typeof part.text !== "string") return "is a text part without a string text";
  if (part.type === "image_url" && !(isObject(part.image_url) && typeof part.image_url.url === "string")) {
    return "is an image_url part without a string image_url.url";
  }
  return undefined;
}

/**
 * The Vercel AI SDK's transcript (`ModelMessage`, what `response.messages` holds) carries a call
 * and its result as content parts. Every chat-completions server refuses them (llama.cpp b9749:
 * "400 unsupported content[].type", naming no message), so a port that stored that transcript is
 * told here which message, and how the endpoint takes it.
 */
function aiSdkPartFault(type: string): string | undefined {
  if (type === "tool-call") {
    return 'is a "tool-call" part (the AI SDK\'s transcript form), which no chat-completions endpoint takes: write the call in the assistant message\'s tool_calls, { id, type: "function", function: { name, arguments } } with the arguments as JSON text';
  }
  if (type === "tool-result") {
    return 'is a "tool-result" part (the AI SDK\'s transcript form), which no chat-completions endpoint takes: answer the call with a tool message, { role: "tool", tool_call_id, content } with the result as text';
  }
  return undefined;
}

/** Whether `content` is a list holding one of the AI SDK's call or result parts. */
function holdsAiSdkPart(content: unknown): boolean {
  if (!Array.isArray(content)) return false;
  // By index, as contentFault reads it: not the array's own `some`, which a given array may shadow.
  for (let at = 0; at < content.length; at++) {
    const part: unknown = content[at];
    if (isObject(part) && typeof part.type === "string" && aiSdkPartFault(part.type) !== undefined)
      return true;
  }
  return false;
}

/** What is wrong with a message's content, or undefined: text, or a list of parts (`null` or absent where `optional`). */
function contentFault(role: string, content: unknown, optional: boolean): string | undefined {
  if (typeof content === "string") return undefined;
  if (optional && (content === null || content === undefined)) return undefined;
  if (!Array.isArray(content)) {
    return `has content that is ${kindOf(content)}; a ${role} message's content is text or a list of content parts${
      optional ? " (or null)" : ""
    }`;
  }
  for (let at = 0; at < content.length; at++) {
    const fault = partFault(content[at]);
    if (fault) return `has content part ${at} that ${fault}`;
  }
  return undefined;
}

/**
 * Whether a call is a function call stored without its type: `type` absent or `null` (a stored
 * row's empty column) beside a `function` object. It is read, and sent, as `type: "function"`.
 */
function untypedFunctionCall(call: Record<string, unknown>): boolean {
  return (call.type === undefined || call.type === null) && isObject(call.function);
}

/**
 * `messages` with each function call stored without its type (`untypedFunctionCall`) given
 * `type: "function"`, as the endpoint takes it and as the rest of the run reads a call. Only an
 * assistant message holding such a call is copied; the others, and the array given, are left as
 * they are. Takes a transcript `messageFaults` found nothing wrong with.
 */
export function withCallTypes(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map((message) => {
    const given = message.role === "assistant" ? ownField(message, "tool_calls") : undefined;
    if (!Array.isArray(given)) return message;
    const calls = given as unknown as Record<string, unknown>[];
    if (!calls.some(untypedFunctionCall)) return message;
    const typed = calls.map((call) => (untypedFunctionCall(call) ? { ...call, type: "function" } : call));
    return { ...message, tool_calls: typed } as unknown as ChatMessage;
  });
}

/** What is wrong with one tool call of an assistant message, or undefined. */
function callFault(call: unknown): string | undefined {
  const shape = '{ id, type: "function", function: { name, arguments } } with strings';
  if (!isObject(call)) return `is ${kindOf(call)}, not ${shape}`;
  if (typeof call.id !== "string") return `has no string id; a call is ${shape}`;
  if (call.type === "custom") {
    // The SDK's other kind of call: a custom tool's, its input free text.
    const custom = call.custom;
    return isObject(custom) && typeof custom.name === "string" && typeof custom.input === "string"
      ? undefined
      : "is a custom call without a string custom.name and custom.input";
  }
  if (call.type !== "function" && !untypedFunctionCall(call)) {
    const type = typeof call.type === "string" ? `type ${JSON.stringify(call.type)}` : "no string type";
    return `has ${type}; a call is ${shape}`;
  }
  const fn = call.function;
  if (!isObject(fn)) {
    return `has ${fn === undefined ? "no function" : `a function that is ${kindOf(fn)}`}; a call is ${shape}`;
  }
  if (typeof fn.name !== "string") return `has a function.name that is ${kindOf(fn.name)}, not a string`;
  if (typeof fn.arguments !== "string") {
    return `has function.arguments that are ${kindOf(fn.arguments)}; arguments are the JSON text of the object`;
  }
  return undefined;
}

/**
 * What keeps one message of a transcript from being a chat message an endpoint takes — said
 * without quoting it — or undefined. A stored row's empty columns as `null` (`name`, `refusal`,
 * an assistant's `tool_calls`, a call's `type` beside its `function`) are taken as absent; a call
 * without its type is a function call (`withCallTypes`).
 */
function messageFault(message: unknown): string | undefined {
  if (!isObject(message)) return `is ${kindOf(message)}, not a message object { role, content, … }`;
  const { role } = message;
  if (!ROLES.has(role)) {
    return `has role ${typeof role === "string" ? JSON.stringify(role) : kindOf(role)}; a chat message's role is system, developer, user, assistant, tool or function (an app-only message is left out before the run)`;
  }
  switch (role) {
    case "assistant": {
      const fault = contentFault("assistant", message.content, true);
      if (fault) return fault;
      // Its own calls: a text answer holds none, whatever a polluted Object.prototype.tool_calls says.
      const calls = ownField(message, "tool_calls");
      if (calls === undefined || calls === null) return undefined;
      if (!Array.isArray(calls)) return `has tool_calls that is ${kindOf(calls)}, not an array of calls`;
      for (let at = 0; at < calls.length; at++) {
        const problem = callFault(calls[at]);
        if (problem) return `has tool_calls[${at}] that ${problem}`;
      }
      return undefined;
    }
    case "tool":
      // The AI SDK's tool message has no tool_call_id (its parts carry toolCallId): say what it is.
      if (holdsAiSdkPart(message.content)) return contentFault("tool", message.content, false);
      if (typeof ownField(message, "tool_call_id") !== "string") {
        return `is a tool message whose tool_call_id is ${kindOf(ownField(message, "tool_call_id"))}, not the string id of the call it answers`;
      }
      return contentFault("tool", message.content, false);
    case "function":
      if (typeof message.name !== "string") return "is a function message without a string name";
      return message.content === null ? undefined : contentFault("function", message.content, false);
    default:
      return contentFault(role as string, message.content, false);
  }
}

/** Each message of `messages` that is not a chat message, as `messages[i] <what is wrong>`. */
export function messageFaults(messages: readonly unknown[]): string[] {
  const faults: string[] = [];
  for (let at = 0; at < messages.length; at++) {
    const fault = messageFault(messages[at]);
    if (fault) faults.push(`messages[${at}] ${fault}`);
  }
  return faults;
}

/** The first few of `faults` listed, the rest counted. */
export function listFaults(faults: readonly string[]): string {
  const listed = faults.slice(0, LISTED).join("; ");
  return faults.length > LISTED ? `${listed}; and ${faults.length - LISTED} more` : listed;
}

/** The refusal for a transcript's faults: the first few listed, the rest counted. */
function refusal(faults: readonly string[], advice: string): LoopOptionError {
  return new LoopOptionError("invalid-option", "messages", `runAgentLoop: ${listFaults(faults)}. ${advice}`);
}

/**
 * Refuses a transcript a message of which is not a chat message (`LoopOptionError`,
 * `invalid-option`, option `messages`, naming each such message's index and what is wrong): it would
 * otherwise fail deep inside the run, be sent for the endpoint to refuse, or be dropped.
 */
export function checkMessages(messages: readonly unknown[]): asserts messages is readonly ChatMessage[] {
  const faults = messageFaults(messages);
  if (faults.length > 0) {
    throw refusal(
      faults,
      "Give each message as the endpoint takes it (the openai SDK's ChatCompletionMessageParam).",
    );
  }
}

/** What an endpoint refuses in a transcript's pairing of tool calls and tool messages. */
export interface Unpaired {
  /**
   * Calls the run of tool messages right after their assistant message does not answer: each id,
   * and the index its answer belongs at (after that run's answers).
   */
  missing: Array<{ id: string; at: number }>;
  /**
   * Tool messages that answer no call of the assistant message right before their run, or one
   * already answered (`repeat`): each id and the message's index.
   */
  stray: Array<{ id: string; at: number; repeat: boolean }>;
  /**
   * Ids two calls of one assistant message share: each id once, and the assistant message's index.
   * Such calls cannot each be answered (one tool message answers the id, a second answers it again).
   */
  shared: Array<{ id: string; at: number }>;
}

/** What an endpoint refuses in a transcript's pairing, by id and index (see `Unpaired`). */
export function unpaired(messages: readonly ChatMessage[]): Unpaired {
  const missing: Unpaired["missing"] = [];
  const stray: Unpaired["stray"] = [];
  const shared: Unpaired["shared"] = [];
  let asked = new Set<string>();
  let answered = new Set<string>();
  const close = (at: number) => {
    for (const id of asked) if (!answered.has(id)) missing.push({ id, at });
    asked = new Set();
    answered = new Set();
  };
  for (let at = 0; at < messages.length; at++) {
    const message = messages[at] as ChatMessage;
    if (message.role === "tool") {
      const id = message.tool_call_id;
      if (asked.has(id) && !answered.has(id)) answered.add(id);
      else stray.push({ id, at, repeat: answered.has(id) }); // no such call, or one already answered
      continue;
    }
    close(at);
    if (message.role !== "assistant") continue;
    const calls = ownField(message, "tool_calls") ?? [];
    asked = new Set(calls.map((call) => call.id));
    if (asked.size < calls.length) {
      const seen = new Set<string>();
      for (const { id } of calls) {
        if (seen.has(id) && !shared.some((s) => s.at === at && s.id === id)) shared.push({ id, at });
        seen.add(id);
      }
    }
  }
  close(messages.length);
  return { missing, stray, shared };
}

/**
 * The caller's transcript as a run starts from it. A call no tool message answers — a run that
 * stopped after its host stored the assistant message (`onMessage`) and before the tools ran — is
 * answered `NOT_RUN` right after its assistant message's other answers: an endpoint refuses a call
 * left unanswered, and running a call of an earlier run unasked could repeat an effect. A tool
 * message answering no call right before it, a call answered twice, or two calls of one assistant
 * message sharing an id, cannot be repaired without guessing which answer is meant: refused (`LoopOptionError`, `invalid-option`, option `messages`,
 * naming the index and the id). A function call stored without its type is given
 * `type: "function"` (`withCallTypes`). Returns a copy, the ids answered so, and `read`: the given
 * transcript with those types filled in and nothing answered, index for index (what a given ledger
 * is moved from).
 */
export function startingTranscript(given: readonly ChatMessage[]): {
  messages: ChatMessage[];
  answered: string[];
  read: readonly ChatMessage[];
} {
  const messages = withCallTypes(given);
  const { missing, stray, shared } = unpaired(messages);
  if (shared.length > 0) {
    throw refusal(
      shared.map(({ id, at }) => `messages[${at}] holds two tool calls with the id ${JSON.stringify(id)}`),
      "An endpoint refuses that, and which answer is meant for which call cannot be told: give each call of an assistant message an id of its own.",
    );
  }
  if (stray.length > 0) {
    throw refusal(
      stray.map(({ id, at, repeat }) =>
        repeat
          ? `messages[${at}] answers the tool call ${JSON.stringify(id)} a second time`
          : `messages[${at}] is a tool message for ${JSON.stringify(id)}, which no call of the assistant message right before it made`,
      ),
      "An endpoint refuses that, and which answer is meant cannot be told: keep one tool message per call, right after the assistant message that made it.",
    );
  }
  if (missing.length === 0) return { messages: [...messages], answered: [], read: messages };
  const repaired: ChatMessage[] = [];
  let next = 0;
  for (let at = 0; at <= messages.length; at++) {
    for (; next < missing.length && (missing[next] as { at: number }).at === at; next++) {
      repaired.push({ role: "tool", tool_call_id: (missing[next] as { id: string }).id, content: NOT_RUN });
    }
    if (at < messages.length) repaired.push(messages[at] as ChatMessage);
  }
  return { messages: repaired, answered: missing.map(({ id }) => id), read: messages };
}
