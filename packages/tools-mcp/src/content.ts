import { echoedName } from "./errors.js";
import { ownJsonCopy } from "./own-json.js";

/** A text part of a tool result, as an OpenAI content part. */
export interface TextPart {
  type: "text";
  text: string;
}

/** An image part of a tool result, as an OpenAI content part (a `data:` URL). */
export interface ImagePart {
  type: "image_url";
  image_url: { url: string };
}

/** A part of a tool result where the model takes parts. */
export type ToolContentPart = TextPart | ImagePart;

/** An image a tool returned: base64 data and its type. */
export interface ToolImage {
  mimeType: string;
  data: string;
}

/**
 * One tool call's result in the forms a host needs: `text` for a model that reads only text
 * (images and audio described, resource links and embedded resources written out, structured
 * content as JSON), `parts` with the images kept for a model that takes them, and the raw pieces.
 */
export interface McpToolOutput {
  /** False when the tool answered `isError`. */
  ok: boolean;
  /** Everything the tool returned, as the text a model reads. */
  text: string;
  /** The same as content parts, images as `image_url` parts instead of a description. */
  parts: ToolContentPart[];
  /** The images, as the server sent them. */
  images: ToolImage[];
  /** The tool's `structuredContent`, where it returned one. */
  structured?: Record<string, unknown>;
}

/** The fields of an MCP `CallToolResult` this module reads. */
export interface CallToolResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  toolResult?: unknown;
}

type Item = Record<string, unknown>;

function size(base64: string): string {
  // The '=' padding counted from the end by a loop: a regex such as /=+$/ backtracks from every
  // '=' of a long run that is not at the end, which takes quadratic time.
  let end = base64.length;
  while (end > 0 && base64.charCodeAt(end - 1) === 61) end--;
  const bytes = Math.floor((end * 3) / 4);
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} kB` : `${bytes} bytes`;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function resourceText(item: Item): string {
  const resource = (item.resource ?? {}) as Item;
  const uri = str(resource.uri) ?? "(no uri)";
  const type = str(resource.mimeType);
  if (typeof resource.text === "string")
    return `[resource ${uri}${type ? ` (${type})` : ""}]\n${resource.text}`;
  if (typeof resource.blob === "string")
    return `[resource ${uri}: ${type ?? "binary"}, ${size(resource.blob)}; not shown]`;
  return `[resource ${uri}]`;
}

function linkText(item: Item): string {
  const name = str(item.title) ?? str(item.name) ?? "resource";
  const type = str(item.mimeType);
  const description = str(item.description);
  return `[resource link] ${name}: ${String(item.uri)}${type ? ` (${type})` : ""}${description ? ` — ${description}` : ""}`;
}

function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}

/** What a model reads for a tool that returned nothing. */
export const EMPTY_RESULT = "(the tool returned no content)";

/**
 * Turns an MCP tool result into what a model reads. Text stays text; an image becomes a
 * description in `text` and an `image_url` part in `parts`; audio and binary resources are
 * described; a resource link is written out with its URI; an embedded text resource is given with
 * its URI; `structuredContent` is added as JSON where the result has no text of its own.
 * Never throws for a result read from JSON, whatever its shape, but for one whose
 * `structuredContent` (or old-style `toolResult`) is nested too deep for `JSON.stringify` (the pool
 * answers that call with `call-failed`); a value built in code may also be one `JSON.stringify`
 * refuses (circular, a BigInt), and then it throws what that throws.
 */
export function toolOutput(given: CallToolResultLike): McpToolOutput {
  // Read as the server wrote it: a result from elsewhere is read through a copy holding its own fields.
  const result = ownJsonCopy(given);
  const items = Array.isArray(result?.content) ? (result.content as unknown[]) : [];
  const texts: string[] = [];
  const parts: ToolContentPart[] = [];
  const images: ToolImage[] = [];
  const addText = (text: string) => {
    texts.push(text);
    parts.push({ type: "text", text });
  };
  for (const raw of items) {
    if (typeof raw !== "object" || raw === null) continue;
    const item = raw as Item;
    switch (item.type) {
      case "text":
        if (typeof item.text === "string") addText(item.text);
        break;
      case "image": {
        const data = typeof item.data === "string" ? item.data : "";
        const mimeType = str(item.mimeType) ?? "image/png";
        images.push({ mimeType, data });
        texts.push(`[image: ${mimeType}, ${size(data)}]`);
        parts.push({ type: "image_url", image_url: { url: `data:${mimeType};base64,${data}` } });
        break;
      }
      case "audio": {
        const data = typeof item.data === "string" ? item.data : "";
        addText(`[audio: ${str(item.mimeType) ?? "audio"}, ${size(data)}; not shown]`);
        break;
      }
      case "resource_link":
        addText(linkText(item));
        break;
      case "resource":
        addText(resourceText(item));
        break;
      default:
        // A type MCP has not, named as the server wrote it: cut to 60 characters, its control and
        // bidirectional characters escaped, as a tool's name is echoed (the model reads it on
        // every later step, and a host may show it in a terminal).
        addText(
          `[${typeof item.type === "string" ? echoedName(item.type) : String(item.type)} content; not shown]`,
        );
    }
  }
  const structured =
    typeof result?.structuredContent === "object" &&
    result.structuredContent !== null &&
    !Array.isArray(result.structuredContent)
      ? (result.structuredContent as Record<string, unknown>)
      : undefined;
  // A server that wrote text wrote it for the model; the structured copy is for programs. Only a
  // result with no text of its own (or one whose text is not already this JSON) is given it.
  const hasText = items.some((i) => typeof i === "object" && i !== null && (i as Item).type === "text");
  if (structured && !hasText && !texts.some((t) => sameJson(t, structured)))
    addText(JSON.stringify(structured));
  if (items.length === 0 && !structured && result?.toolResult !== undefined) {
    // The 2024-10-07 protocol's shape.
    addText(typeof result.toolResult === "string" ? result.toolResult : JSON.stringify(result.toolResult));
  }
  const text = texts.join("\n");
  return {
    ok: result?.isError !== true,
    text: text === "" ? EMPTY_RESULT : text,
    parts: parts.length ? parts : [{ type: "text", text: EMPTY_RESULT }],
    images,
    ...(structured ? { structured } : {}),
  };
}
