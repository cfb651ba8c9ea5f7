import { sanitizeTools } from "@loopwright/schema-compat";
import type { ChatCompletionMessageToolCall } from "openai/resources/chat/completions";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { LoopOptionError } from "./errors.js";
import { ownField } from "./own.js";

/**
 * A run's tools as every request declares them — sanitized (`sanitizeTools`), names made legal —
 * and the names between the host's and the wire's, both ways. Only renamed tools are in the maps.
 */
export interface DeclaredTools {
  tools: ToolDefinition[];
  toHost: ReadonlyMap<string, string>;
  toWire: ReadonlyMap<string, string>;
  /**
   * What `sanitizeTools` said it changed in a way the host should hear of (a part no value satisfies
   * sent without it, in words; refs expanded less than they could be), each after the tool's name.
   */
  notices: readonly string[];
}

/**
 * Sanitizes the host's tools for the wire, keeping the name map. Names are made legal by
 * `sanitizeTools`: a name of printable ASCII has its punctuation made `_` (`fs.read` → `fs_read`),
 * a swap that makes look-alikes one name on purpose, so they are refused rather than told apart by
 * chance; a name holding anything else (`検索`, `café`, `🙂`) goes as its legal letters and digits
 * and a hash of the whole name, the same on every run and resume. Throws `LoopOptionError`
 * (`tool-name-collision`) naming both tools when two names become one on the wire (`fs.read` and
 * `fs_read`), or a name is declared twice: a call to it could not be told apart.
 */
export function declareTools(tools: readonly ToolDefinition[]): DeclaredTools {
  const toWire = new Map<string, string>();
  const toHost = new Map<string, string>();
  const seen = new Map<string, string>(); // wire name → host name
  const declared: ToolDefinition[] = [];
  const notices: string[] = [];
  const onNotice = (text: string) => notices.push(text);
  for (const tool of tools) {
    // One at a time: a name is legalised alone, so a collision shows instead of becoming `fs_read_2`.
    const legal = sanitizeTools([tool], { onNotice })[0] as ToolDefinition;
    if (legal.type !== "function") {
      declared.push(legal);
      continue;
    }
    const host = tool.function.name;
    const name = legal.function.name;
    declared.push(legal);
    const other = seen.get(name);
    if (other !== undefined) {
      throw new LoopOptionError(
        "tool-name-collision",
        `${other}, ${host}`,
        other === host
          ? `Two tools are named "${host}"; a call to it could not be told apart. Declare each tool once.`
          : `The tools "${other}" and "${host}" would both be declared as "${name}" (a tool name on the wire is ` +
              "letters, digits, _ and - only), so a call to one could not be told from a call to the other. Rename one of them.",
      );
    }
    seen.set(name, host);
    if (name !== host) {
      toWire.set(host, name);
      toHost.set(name, host);
    }
  }
  return { tools: declared, toHost, toWire, notices };
}

/** The calls with every name the map holds replaced; the others as they were. */
export function renameCalls<T extends ChatCompletionMessageToolCall>(
  calls: readonly T[],
  names: ReadonlyMap<string, string>,
): T[] {
  return calls.map((call) => {
    if (call.type !== "function") return call;
    const name = names.get(call.function.name);
    return name === undefined ? call : ({ ...call, function: { ...call.function, name } } as T);
  });
}

/**
 * Whether a message is an assistant message that says nothing: no tool calls, and no text (a reply
 * that was all scratchpad, or cut off inside one). Endpoints that check the transcript refuse one
 * ("either content or tool_calls"), and it tells the model nothing.
 */
function saysNothing(message: ChatMessage): boolean {
  if (
    message.role !== "assistant" ||
    (ownField(message, "tool_calls")?.length ?? 0) > 0 ||
    ownField(message, "refusal")
  )
    return false;
  const { content } = message;
  if (content === null || content === undefined) return true;
  if (typeof content === "string") return content.trim() === "";
  return (
    Array.isArray(content) &&
    content.every(
      (part) => part?.type === "text" && (typeof part.text !== "string" || part.text.trim() === ""),
    )
  );
}

type UserMessage = Extract<ChatMessage, { role: "user" }>;
type UserPart = Exclude<UserMessage["content"], string>[number];

function userParts(content: UserMessage["content"]): UserPart[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : [...content];
}

/** Two questions as one, the first's words first: what a user who asked twice in a row said. */
function joinQuestions(first: UserMessage, second: UserMessage): UserMessage {
  if (typeof first.content === "string" && typeof second.content === "string") {
    return { ...first, content: `${first.content}\n\n${second.content}` };
  }
  return {
    ...first,
    content: [...userParts(first.content), { type: "text", text: "\n\n" }, ...userParts(second.content)],
  };
}

/**
 * An assistant message stored with `tool_calls: []` (vLLM's non-streamed message, an older openai
 * SDK's parse) without the empty array, which OpenAI (`empty_array`), DashScope and DeepSeek refuse.
 */
function withoutNoCalls(message: ChatMessage): ChatMessage {
  if (message.role !== "assistant") return message;
  const calls = ownField(message, "tool_calls");
  if (!Array.isArray(calls) || calls.length > 0) return message;
  const { tool_calls: _none, ...rest } = message;
  return rest;
}

/**
 * The transcript as a request carries it: the host's tool names in assistant tool calls replaced by
 * the wire's, an empty `tool_calls` array left off, and assistant messages that say nothing left
 * out. User messages side by side (around a left-out answer, or a question a failed or stopped run
 * never answered before the next) go as one: chat templates that make roles alternate (Gemma's,
 * Mistral's) refuse two in a row, as endpoints that check the transcript refuse the empty answer.
 * Two with different `name`s (two speakers in a group chat) stay apart: joined, the second
 * speaker's words would go under the first's name.
 */
export function wireMessages(
  messages: readonly ChatMessage[],
  toWire: ReadonlyMap<string, string>,
): ChatMessage[] {
  const said: ChatMessage[] = [];
  for (const message of messages) {
    if (saysNothing(message)) continue;
    const before = said[said.length - 1];
    if (before?.role === "user" && message.role === "user" && before.name === message.name) {
      said[said.length - 1] = joinQuestions(before, message);
    } else said.push(withoutNoCalls(message));
  }
  const distinct = distinctAcrossMessages(said);
  if (toWire.size === 0) return distinct;
  return distinct.map((message) => {
    const calls = message.role === "assistant" ? ownField(message, "tool_calls") : undefined;
    return calls?.some((call) => call.type === "function" && toWire.has(call.function.name))
      ? { ...message, tool_calls: renameCalls(calls, toWire) }
      : message;
  });
}

/**
 * The transcript with a tool-call id an earlier assistant message already used given, in the later
 * message and in the tool messages right after it that answer it, an id no message holds
 * (`<id>_2`, `<id>_3` …). A host's transcript may reuse one (a client that numbers each step's calls
 * from `call_0`, two stored conversations joined); endpoints that check the transcript (Anthropic's,
 * behind OpenAI-compatible relays) refuse an id used twice, and the pairs are told apart by place
 * alone. The same transcript gives the same ids on every request (a prompt cache keeps hitting);
 * messages that need no change are the caller's objects, and a transcript with none is returned as
 * it was.
 */
function distinctAcrossMessages(messages: ChatMessage[]): ChatMessage[] {
  const used = new Set<string>();
  let again = false;
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    const ids = (ownField(message, "tool_calls") ?? []).map((call) => call.id);
    if (ids.some((id) => used.has(id))) again = true;
    for (const id of ids) used.add(id);
  }
  if (!again) return messages;
  // Each message's ids are chosen from what the messages before it sent alone, so a request that
  // appends keeps every earlier id as the last request sent it.
  const sent = new Set<string>();
  /** The renaming of the last assistant message's calls, for the tool messages that answer them. */
  let renamed = new Map<string, string>();
  // The first suffix each id may still take: every one below it is taken, and stays taken (the ids
  // sent only grow), so 10,000 steps each reusing `call_0` cost one look each, not one per earlier
  // step (6.6 s a request, measured, with a search from `_2` each time).
  const nextSuffix = new Map<string, number>();
  return messages.map((message) => {
    if (message.role === "tool") {
      const id = renamed.get(message.tool_call_id);
      return id === undefined ? message : { ...message, tool_call_id: id };
    }
    renamed = new Map();
    const calls = message.role === "assistant" ? ownField(message, "tool_calls") : undefined;
    if (!calls?.length) return message;
    const own = new Set(calls.map((call) => call.id));
    for (const call of calls) {
      if (!sent.has(call.id)) continue;
      let n = nextSuffix.get(call.id) ?? 2;
      while (sent.has(`${call.id}_${n}`) || own.has(`${call.id}_${n}`)) n++;
      nextSuffix.set(call.id, n + 1);
      const id = `${call.id}_${n}`;
      own.add(id);
      renamed.set(call.id, id);
    }
    for (const call of calls) sent.add(renamed.get(call.id) ?? call.id);
    if (renamed.size === 0) return message;
    return {
      ...message,
      tool_calls: calls.map((call) => {
        const id = renamed.get(call.id);
        return id === undefined ? call : { ...call, id };
      }),
    };
  });
}

/**
 * The text of a system message that is all text — a string, or a list of text parts (joined, as an
 * endpoint reads them) — or `undefined` for one that holds anything else.
 */
function systemText(message: ChatMessage): string | undefined {
  if (message.role !== "system") return undefined;
  const { content } = message;
  if (typeof content === "string") return content;
  if (
    !Array.isArray(content) ||
    !content.every((part) => part?.type === "text" && typeof part.text === "string")
  ) {
    return undefined;
  }
  return content.map((part) => part.text).join("");
}

/**
 * A request's messages: the system prompt first, as one system message with the system messages
 * the transcript opens with (a compaction's summary, a host's own; text, or a list of text parts),
 * joined by a blank line. Chat templates that make roles alternate (Gemma's, Mistral's, on
 * llama.cpp: a 400) refuse two system messages in a row, and the loop's own fold puts its summary
 * first. A lone one is sent as it is; a leading system message with a part that is not text stops
 * the joining.
 */
export function withSystem(system: string, transcript: readonly ChatMessage[]): ChatMessage[] {
  const texts = system === "" ? [] : [system];
  let lead = 0;
  for (; lead < transcript.length; lead++) {
    const text = systemText(transcript[lead] as ChatMessage);
    if (text === undefined) break;
    if (text !== "") texts.push(text);
  }
  if (lead === 0)
    return system === "" ? [...transcript] : [{ role: "system", content: system }, ...transcript];
  if (system === "" && lead === 1) return [...transcript];
  return [{ role: "system", content: texts.join("\n\n") }, ...transcript.slice(lead)];
}
