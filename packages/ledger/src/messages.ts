import { LedgerError, setting } from "./errors.js";
/** One part of a message's content array: text, an image, or anything else a server takes. */
export interface ContentPartLike {
  type?: string;
  text?: string;
  /** An assistant refusal part's text (`{ type: "refusal", refusal }`). */
  refusal?: string;
  image_url?: unknown;
}

/** A tool call on an assistant message, as the chat-completions wire carries it. */
export interface ToolCallLike {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/**
 * The narrow shape of a chat message that this package reads (and, intersected, hands back: its
 * optional fields do not admit `undefined`, so a result still assigns to the `openai` SDK's message
 * types under `exactOptionalPropertyTypes`): its role, its content (a string or
 * content parts), an assistant's tool calls and replayed reasoning, and a tool message's call id.
 */
export interface MessageLike {
  role: string;
  content?: string | readonly ContentPartLike[] | null;
  tool_calls?: readonly ToolCallLike[] | null;
  tool_call_id?: string;
  reasoning_content?: string | null;
  reasoning?: string | null;
  name?: string;
}

/** The roles a message type spells out: `string` for one whose `role` is any string. */
type RolesOf<M> = M extends { role: infer Role } ? Role : never;

/** The tool message a loop adds to a transcript, as it writes it. */
type LoopToolMessage = { role: "tool"; tool_call_id: string; content: string };

/**
 * `true` when a member of `M` takes the loop's tool message written as an object literal: its
 * fields assign to the member, and the member names `tool_call_id` (a literal with a field its
 * type does not name is refused), else `never`.
 */
type TakesToolMessage<M> = M extends unknown
  ? LoopToolMessage extends M
    ? "tool_call_id" extends keyof M
      ? true
      : never
    : never
  : never;

/**
 * The type of the messages `pruneToolResults`, `applyCompaction` and `compactTranscript` hand back
 * for a transcript of `M`: `M` itself when it spells out its roles and takes the tool message a
 * loop adds (`{ role: "tool"; tool_call_id: string; content: string }`), as the `openai` SDK's
 * `ChatCompletionMessageParam` and a host's own closed union of messages do — and `MessageLike`
 * otherwise (a `role: string`, roles without `"tool"` such as `"user" | "assistant"`, or a
 * `"tool"` role with no `tool_call_id` field), as before those functions were generic, so such a
 * result still takes a tool message afterwards. A result stored as `MessageLike[]` takes any
 * message whatever `M` was.
 */
export type KeptMessage<M> =
  string extends RolesOf<M> ? MessageLike : true extends TakesToolMessage<M> ? M : MessageLike;

/** The parts of a request body this package reads: its messages and its declared tools. */
export interface RequestBodyLike {
  messages: readonly MessageLike[];
  tools?: readonly unknown[] | null | undefined;
}

/** Whether a message is a system prompt: the `system` and `developer` roles. */
export function isSystem(message: MessageLike): boolean {
  const role = setting(message, "role");
  return role === "system" || role === "developer";
}

/**
 * The characters of a message's content: text parts counted, images and other parts not. A part's
 * fields are its own (or its class's), never a polluted Object.prototype's: an inherited `text` made
 * every image part count its characters.
 */
export function contentChars(content: MessageLike["content"]): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let chars = 0;
  for (const part of content as readonly ContentPartLike[]) {
    const text = setting(part, "text");
    if (typeof text === "string") chars += text.length;
    // The openai SDK's assistant refusal part carries its text as `refusal`, and is sent as it is.
    else if (setting(part, "type") === "refusal") {
      const refusal = setting(part, "refusal");
      if (typeof refusal === "string") chars += refusal.length;
    }
  }
  return chars;
}

/** A message's content as text: a string as it is, text parts joined. */
export function contentText(content: MessageLike["content"]): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const part of content as readonly ContentPartLike[]) {
    const own = setting(part, "text");
    if (typeof own === "string") text += own;
  }
  return text;
}

/**
 * The tokens an estimate counts for an image part: OpenAI's documented count for a 1024×1024 image
 * at `detail: "high"` (85 tokens, and 170 for each of its four 512-pixel tiles). Other servers count
 * an image their own way (a LLaVA-1.5 image is 576 tokens, one resized for more tiles costs more), so
 * this is an estimate, as characters over a divisor are; what it replaces is 0.
 */
export const IMAGE_TOKENS = 765;

/** The tokens OpenAI documents for an image sent with `detail: "low"`, whatever its size. */
export const LOW_DETAIL_IMAGE_TOKENS = 85;

/** Whether a content part is an image: an `image_url` (or `input_image`, `image`) part or field. */
function isImagePart(record: Record<string, unknown>): boolean {
  const type = setting(record, "type");
  if (type === "image_url" || type === "input_image" || type === "image") return true;
  if (typeof type === "string") return false;
  return (
    setting(record, "image_url") != null ||
    setting(record, "input_image") != null ||
    setting(record, "image") != null
  );
}

/** Whether an image part asks for low detail (`image_url.detail` or the part's own `detail`). */
function lowDetail(record: Record<string, unknown>): boolean {
  const url = setting(record, "image_url");
  const detail = typeof url === "object" && url !== null ? setting(url, "detail") : setting(record, "detail");
  return detail === "low";
}

/**
 * The tokens a message's images count in an estimate: {@link IMAGE_TOKENS} each, or
 * {@link LOW_DETAIL_IMAGE_TOKENS} for one sent with `detail: "low"`. Other media (audio, a file) count
 * nothing. Throws `LedgerError` for content that throws when read.
 */
export function imageTokens(message: MessageLike): number {
  try {
    // Its own content, never one a polluted Object.prototype holds (an inherited image counted 765 on
    // every message without content).
    const content = setting(message, "content");
    if (!Array.isArray(content)) return 0;
    let tokens = 0;
    for (const part of content as readonly unknown[]) {
      if (typeof part !== "object" || part === null) continue;
      const record = part as Record<string, unknown>;
      if (isImagePart(record)) tokens += lowDetail(record) ? LOW_DETAIL_IMAGE_TOKENS : IMAGE_TOKENS;
    }
    return tokens;
  } catch (cause) {
    throw unreadable("a message", cause);
  }
}

/**
 * The estimated tokens of one message: its characters ({@link messageChars}) over `perToken`,
 * rounded up, and its images ({@link imageTokens}).
 */
export function messageEstimate(message: MessageLike, perToken: number): number {
  return Math.ceil(messageChars(message) / perToken) + imageTokens(message);
}

/**
 * The characters a message puts in front of a model: its content's text, an assistant's `refusal`,
 * replayed reasoning, and each tool call's name and arguments.
 */
export function messageChars(message: MessageLike): number {
  try {
    return countMessageChars(message);
  } catch (cause) {
    throw unreadable("a message", cause);
  }
}

/**
 * The typed error for a message or tool list that throws when read (a throwing getter, a revoked
 * Proxy) or cannot be written as JSON (a cycle, a BigInt): never a raw `TypeError`.
 */
function unreadable(what: string, cause: unknown): LedgerError {
  if (LedgerError.isInstance(cause)) return cause;
  const reason = cause instanceof Error ? cause.message : "it threw when read";
  return new LedgerError("invalid-messages", `${what} could not be read as JSON (${reason}).`, { cause });
}

function countMessageChars(message: MessageLike): number {
  // Each field the message's own (or its class's), never one a polluted Object.prototype holds: an
  // inherited `reasoning_content` of 400,000 characters made every message 100,000 tokens.
  let chars = contentChars(setting(message, "content") as MessageLike["content"]);
  // An assistant message's `refusal` (the openai SDK's `ChatCompletionAssistantMessageParam.refusal`,
  // as a response's message carries it) is sent back with the transcript, and costs what its text does.
  const refusal = setting(message, "refusal");
  if (typeof refusal === "string") chars += refusal.length;
  const reasoningContent = setting(message, "reasoning_content");
  const reasoning = setting(message, "reasoning");
  if (typeof reasoningContent === "string") chars += reasoningContent.length;
  else if (typeof reasoning === "string") chars += reasoning.length;
  const calls = setting(message, "tool_calls");
  if (Array.isArray(calls)) {
    // A call's fields, and its function's, are its own too: an inherited `arguments` of 40,000
    // characters counted 10,000 tokens on every call sent without arguments.
    for (const call of calls as readonly ToolCallLike[]) {
      const fn = setting(call, "function");
      const name = setting(fn, "name");
      if (typeof name === "string") chars += name.length;
      const args = setting(fn, "arguments");
      if (typeof args === "string") chars += args.length;
      // Arguments a host stored parsed (as an object) are sent as their JSON: counted so, not as nothing.
      else if (typeof args === "object" && args !== null) chars += JSON.stringify(args)?.length ?? 0;
    }
  }
  return chars;
}

/** The characters of a tool array as it is sent: its JSON. Zero for none. */
export function toolsChars(tools: RequestBodyLike["tools"]): number {
  try {
    if (!Array.isArray(tools) || tools.length === 0) return 0;
    return JSON.stringify(tools).length;
  } catch (cause) {
    throw unreadable("the tools", cause);
  }
}

/**
 * Content-part types that are text the characters here count. Every other typed part is media
 * (an image, audio, video, a file or an embedding) that the server counts in tokens and this
 * package not at all.
 */
const TEXT_PART_TYPES = new Set(["text", "input_text", "output_text", "refusal", "thinking"]);

/** Fields that carry media on a part whatever its `type` says. */
const MEDIA_FIELDS = [
  "image_url",
  "image",
  "input_image",
  "input_audio",
  "audio_url",
  "video_url",
  "video",
  "file",
] as const;

/** Whether a content part is media rather than text: an image, audio, video or a file. */
export function isMediaPart(part: unknown): boolean {
  if (typeof part !== "object" || part === null) return false;
  const type = setting(part, "type");
  if (typeof type === "string") return !TEXT_PART_TYPES.has(type);
  return MEDIA_FIELDS.some((field) => setting(part, field) != null);
}

/**
 * Whether any message carries media: an image above all, and equally audio, video or a file, whose
 * tokens the server counts and whose characters this package does not.
 */
export function hasMedia(messages: readonly MessageLike[]): boolean {
  for (const message of messages) {
    const content = setting(message, "content");
    if (!Array.isArray(content)) continue;
    for (const part of content as readonly unknown[]) if (isMediaPart(part)) return true;
  }
  return false;
}

/**
 * `value` as JSON with every object's keys in sorted order, so two writings of one value compare
 * equal: a store that keeps keys in its own order (Postgres' jsonb and MySQL's JSON put shorter keys
 * first) hands back the same text. With `dropNulls`, a top-level key whose value is null or absent is
 * left out, as a row store's empty column is no field at all. Throws what `JSON.stringify` would
 * (a cycle, a BigInt, a getter that throws).
 */
export function canonicalJson(value: unknown, dropNulls = false): string {
  // Written piece by piece into one list and joined once: a string made per level and copied into
  // its parent's was a copy of the whole value per level of nesting (3,000 levels over 100 kB of
  // text took 6 s).
  const out: string[] = [];
  const open = new Set<object>();
  /** Writes `item` to `out`; false (nothing written) where JSON leaves it out (undefined, a function). */
  const write = (item: unknown, top: boolean): boolean => {
    let v = item;
    if (typeof v === "object" && v !== null && typeof (v as { toJSON?: unknown }).toJSON === "function") {
      v = (v as { toJSON: () => unknown }).toJSON();
    }
    if (typeof v !== "object" || v === null) {
      const text = JSON.stringify(v) as string | undefined;
      if (text === undefined) return false;
      out.push(text);
      return true;
    }
    if (open.has(v)) throw new TypeError("a value refers to itself (a cycle)");
    open.add(v);
    try {
      if (Array.isArray(v)) {
        out.push("[");
        for (let at = 0; at < v.length; at++) {
          if (at > 0) out.push(",");
          if (!write(v[at], false)) out.push("null");
        }
        out.push("]");
        return true;
      }
      const record = v as Record<string, unknown>;
      out.push("{");
      let first = true;
      for (const key of Object.keys(record).sort()) {
        const field = record[key];
        if (top && dropNulls && (field === null || field === undefined)) continue;
        const mark = out.length;
        out.push(first ? "" : ",", `${JSON.stringify(key)}:`);
        // A field JSON leaves out takes its key and comma out with it.
        if (write(field, false)) first = false;
        else out.length = mark;
      }
      out.push("}");
      return true;
    } finally {
      open.delete(v);
    }
  };
  write(value, true);
  return out.join("");
}

/**
 * A message as JSON, for comparing one read back from storage with the one sent: keys in sorted
 * order and null fields left out, so a store that reorders keys or fills an absent column with null
 * hands back the same text. Throws `LedgerError` (`invalid-messages`) for one that cannot be written
 * (a cycle, a BigInt, a getter that throws), never a raw `TypeError`.
 */
export function messageJson(message: MessageLike): string {
  try {
    return canonicalJson(message, true);
  } catch (cause) {
    throw unreadable("a message", cause);
  }
}

/**
 * Whether two messages are the same message: the same object, or the same message written another
 * way — keys in another order, an absent top-level field given as `null` — as a transcript stored
 * as rows (Postgres `jsonb`, MySQL `JSON`) hands it back. Reads both, writes neither; `undefined`
 * equals only `undefined`. Throws a `LedgerError` (`invalid-messages`) for a message JSON cannot write
 * (a cycle, a bigint).
 */
export function sameMessage(a: MessageLike | undefined, b: MessageLike | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  // Written the same way is the common case (a copy, a store that keeps key order), and the
  // engine's own JSON is the quick way to see it.
  let plain: boolean;
  try {
    plain = JSON.stringify(a) === JSON.stringify(b);
  } catch (cause) {
    throw unreadable("a message", cause);
  }
  return plain || messageJson(a) === messageJson(b);
}
