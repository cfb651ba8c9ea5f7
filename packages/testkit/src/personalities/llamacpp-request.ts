/**
 * llama-server's refusals of an ill-formed chat request: the checks b9749 makes of `messages`,
 * `tools`, `tool_choice`, `continue_final_message` and `stream` before it renders a prompt, each
 * with the capture (`llamacpp-live/40-…` to `49-…`, or a recorded body in `errors/llamacpp/`) it
 * answers with and the words of the capture to put this request's values in place of.
 */
import { isRecord } from "./recorded.js";

/** A refusal: the recorded answer to send and the words of its `error.message` to replace. */
export interface ShapeRefusal {
  /** The fixture holding the answer (a `curl -i` capture, or a JSON body). */
  fixture: string;
  /** `[recorded words, this request's words]`, each replaced once in `error.message`. */
  swaps?: readonly (readonly [string, string])[];
}

/** The fixtures the checks answer with, for the personality's list of what it reads. */
export const SHAPE_FIXTURES = {
  messagesMissing: "llamacpp-live/40-messages-missing.response.txt",
  messagesNotArray: "llamacpp-live/41-messages-not-array.response.txt",
  contentNotString: "llamacpp-live/42-content-not-string.response.txt",
  contentMissing: "llamacpp-live/43-message-without-content.response.txt",
  assistantEmpty: "llamacpp-live/44-assistant-without-content.response.txt",
  toolsNotArray: "llamacpp-live/45-tools-not-array.response.txt",
  toolChoice: "llamacpp-live/46-tool-choice-invalid.response.txt",
  continueAlone: "llamacpp-live/47-continue-final-message-alone.response.txt",
  streamNotBoolean: "llamacpp-live/48-stream-not-boolean.response.txt",
  partType: "llamacpp-live/49-content-part-type-unknown.response.txt",
  parseMessages: "errors/llamacpp/failed-to-parse-messages-500-b9749.json",
  imageInput: "errors/llamacpp/image-input-not-supported-no-mmproj-500-b9749.json",
} as const;

/** The recorded message of `parseMessages`, after its lead "Failed to parse messages: ". */
const RECORDED_MISSING_ROLE = `Missing 'role' in message: {"content":"x"}`;

/** nlohmann's name for a JSON value's type, as its `type_error.302` messages word it. */
export function jsonTypeName(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "object") return "object";
  return typeof value === "boolean" ? "boolean" : typeof value === "number" ? "number" : "string";
}

/** True when `value` is an object holding `key` itself (a parsed body's field, not an inherited one). */
function holds(value: unknown, key: string): boolean {
  return isRecord(value) && Object.hasOwn(value, key);
}

/**
 * The first content part llama-server refuses in a message's content array: an `image_url` or
 * `input_audio` part on a server without a projector (its 500 "image input is not supported",
 * "audio input is not supported"; taken with `mmproj`), any type but `text` (400 "unsupported
 * content[].type"; a part that is not an object has no type).
 */
function partRefusal(parts: readonly unknown[], mmproj: boolean): ShapeRefusal | undefined {
  for (const part of parts) {
    const type = isRecord(part) && typeof part.type === "string" ? part.type : "";
    if (type === "image_url" || type === "input_audio") {
      if (mmproj) continue;
      return type === "image_url"
        ? { fixture: SHAPE_FIXTURES.imageInput }
        : { fixture: SHAPE_FIXTURES.imageInput, swaps: [["image input", "audio input"]] };
    }
    if (type !== "text") return { fixture: SHAPE_FIXTURES.partType };
  }
  return undefined;
}

/**
 * The refusal b9749 gives the request's `messages`, `tools`, `tool_choice` and
 * `continue_final_message`, in the order it checks them (found by sending it requests wrong in two
 * ways at once): `messages` absent (also any body that is JSON but not an object) or not an array
 * (`null` too), 400; then each message in turn: one without `content` that is not an assistant's
 * (a message that is not an object has no role), 400; an assistant's with neither `content` nor
 * `tool_calls`, 400; `content` not a string, null or array, 400; a content part it does not take
 * (see `partRefusal`). Then each message again as the template reads it: no `role`, 500 "Failed to
 * parse messages: Missing 'role' in message: <the message as JSON>"; a `role` that is not a
 * string, 500 "…type must be string, but is number"; a `text` part without its `text`, 500 "…key
 * 'text' not found". Then `tools` that is not an array (null is absent), 500 "Failed to parse tools:
 * Expected 'tools' to be an array, got <it>; tools = <it, indented>"; a string `tool_choice` other
 * than auto, none and required (a non-string one is read as auto), 400 "Invalid tool_choice: any";
 * `continue_final_message: true` without `add_generation_prompt: false`, 400 "Cannot set both
 * add_generation_prompt and continue_final_message to true.". Values are written as JSON.stringify
 * writes them (nlohmann writes `1e21` as `1e+21`; nothing else seen differs).
 */
export function messagesRefusal(body: unknown, mmproj: boolean): ShapeRefusal | undefined {
  if (!holds(body, "messages")) return { fixture: SHAPE_FIXTURES.messagesMissing };
  const request = body as Record<string, unknown>;
  const messages = request.messages;
  if (!Array.isArray(messages)) return { fixture: SHAPE_FIXTURES.messagesNotArray };
  for (const message of messages) {
    const role = isRecord(message) && typeof message.role === "string" ? message.role : "";
    if (role !== "assistant" && !holds(message, "content")) return { fixture: SHAPE_FIXTURES.contentMissing };
    if (role === "assistant" && !holds(message, "content")) {
      if (!holds(message, "tool_calls")) return { fixture: SHAPE_FIXTURES.assistantEmpty };
      continue;
    }
    const content = (message as Record<string, unknown>).content;
    if (typeof content === "string" || content === null) continue;
    if (!Array.isArray(content)) return { fixture: SHAPE_FIXTURES.contentNotString };
    const part = partRefusal(content, mmproj);
    if (part) return part;
  }
  for (const message of messages as Record<string, unknown>[]) {
    const lead = (to: string): ShapeRefusal => ({
      fixture: SHAPE_FIXTURES.parseMessages,
      swaps: [[RECORDED_MISSING_ROLE, to]],
    });
    if (!Object.hasOwn(message, "role")) return lead(`Missing 'role' in message: ${JSON.stringify(message)}`);
    if (typeof message.role !== "string") {
      return lead(
        `[json.exception.type_error.302] type must be string, but is ${jsonTypeName(message.role)}`,
      );
    }
    if (Array.isArray(message.content)) {
      const textless = message.content.some((p) => isRecord(p) && p.type === "text" && !holds(p, "text"));
      if (textless) return lead("[json.exception.out_of_range.403] key 'text' not found");
    }
  }
  const tools = request.tools;
  if (tools !== undefined && tools !== null && !Array.isArray(tools)) {
    const once = JSON.stringify(tools);
    const indented = JSON.stringify(tools, null, 2);
    return {
      fixture: SHAPE_FIXTURES.toolsNotArray,
      swaps: [["got {}; tools = {}", `got ${once}; tools = ${indented}`]],
    };
  }
  const choice = request.tool_choice;
  if (typeof choice === "string" && !["auto", "none", "required"].includes(choice)) {
    return {
      fixture: SHAPE_FIXTURES.toolChoice,
      swaps: [["Invalid tool_choice: any", `Invalid tool_choice: ${choice}`]],
    };
  }
  if (request.continue_final_message === true && request.add_generation_prompt !== false) {
    return { fixture: SHAPE_FIXTURES.continueAlone };
  }
  return undefined;
}

/**
 * b9749's 400 for a `stream` that is not a boolean (null is absent): "Field 'stream':
 * [json.exception.type_error.302] type must be boolean, but is string". It reads `stream` before
 * the token budget and `n`, after the grammar.
 */
export function streamRefusal(body: Record<string, unknown>): ShapeRefusal | undefined {
  const stream = body.stream;
  if (stream === undefined || stream === null || typeof stream === "boolean") return undefined;
  return {
    fixture: SHAPE_FIXTURES.streamNotBoolean,
    swaps: [["but is string", `but is ${jsonTypeName(stream)}`]],
  };
}
