import { describeValue, SideTaskError } from "./errors.js";

/** A piece of text in a user turn. */
export interface SideTaskTextPart {
  type: "text";
  text: string;
}

/** An image in a user turn, as an OpenAI-compatible server takes one: a URL or a `data:` URL. */
export interface SideTaskImagePart {
  type: "image_url";
  image_url: { url: string; detail?: "auto" | "low" | "high" | undefined };
}

/** One content part of a side task's user turn. */
export type SideTaskPart = SideTaskTextPart | SideTaskImagePart;

/**
 * A side task's user turn: text, or content parts (text and images).
 *
 * Plain text, or content parts — text and images — for a model that can
 * see. Parts are sent as given while the model takes them.
 */
export type SideTaskInput = string | readonly SideTaskPart[];

/** Checks a user turn, throwing `SideTaskError` (`invalid-input`) naming what is wrong. */
export function checkInput(input: unknown, where: string): asserts input is SideTaskInput {
  if (typeof input === "string") return;
  if (!Array.isArray(input)) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: the user turn must be a string or an array of content parts, and was ${describeValue(input)}.`,
    );
  }
  input.forEach((part: unknown, index) => {
    const p = part as { type?: unknown; text?: unknown; image_url?: { url?: unknown } | null } | null;
    const ok =
      typeof p === "object" &&
      p !== null &&
      ((p.type === "text" && typeof p.text === "string") ||
        (p.type === "image_url" &&
          typeof p.image_url === "object" &&
          p.image_url !== null &&
          typeof p.image_url.url === "string" &&
          p.image_url.url !== ""));
    if (!ok) {
      throw new SideTaskError(
        "invalid-input",
        `${where}: content part ${index} must be { type: "text", text } or { type: "image_url", image_url: { url } }, and was ${describeValue(part)}.`,
      );
    }
  });
}

/** True when the user turn carries an image. */
export function hasImages(input: SideTaskInput): boolean {
  return typeof input !== "string" && input.some((part) => part.type === "image_url");
}

/** Said in place of each image sent to a model that cannot take one. */
export const IMAGE_LEFT_OUT = "[An image was attached here, but this model cannot take images.]";

/**
 * Said in place of each image given by a URL other than `data:` (an `http(s)` address), sent to a
 * model whose endpoint takes images only inline ("Image URLs are not supported": Moonshot's Kimi,
 * Bedrock's Anthropic models): its `data:` images are still sent.
 */
export const IMAGE_URL_LEFT_OUT =
  "[An image was attached here by URL, but this model takes images only inline (as data: URLs).]";

/** True for an image part given by an address to fetch (`http(s)://…`), not inline as a `data:` URL. */
export function isRemoteImage(part: SideTaskPart): boolean {
  return part.type === "image_url" && !/^data:/i.test(part.image_url.url.trimStart());
}

/**
 * The user turn as text alone, for a model that refused images: the text parts joined, with a
 * marker where each image was so the model knows something is missing.
 */
export function textOnly(input: SideTaskInput): string {
  if (typeof input === "string") return input;
  return input.map((part) => (part.type === "text" ? part.text : IMAGE_LEFT_OUT)).join("\n\n");
}

/** The user turn's text, for prompts that reason about it (keyword matching). */
export function inputText(input: SideTaskInput): string {
  if (typeof input === "string") return input;
  return input
    .filter((part): part is SideTaskTextPart => part.type === "text")
    .map((part) => part.text)
    .join("\n");
}
