import { type ArgumentPath, formatPath, shownText } from "./exact-numbers.js";

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidirectional marks,
 * embeddings, overrides and isolates: what an echo of the model's text writes as `\uXXXX` — the
 * set `@loopwright/tools` keeps as `CONTROLS` (tool-calls does not depend on tools;
 * `review-r104d.test.ts` holds this copy to that one).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
export const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** `text` with each character of {@link CONTROLS} written `\uXXXX`. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A path into the arguments as a refusal echoes it (`a`, `items[2]`, `["a key"]`): written as
 * {@link formatPath} writes it, cut as {@link shownText} cuts it (a key of 100,000 characters is not
 * repeated whole), and each control character — a terminal's escape, a line break, a right-to-left
 * override the model put in a key — written `\uXXXX`. A refusal is a tool result the model is sent
 * again on every later step, and a host may log it or show it in a terminal.
 */
export function echoedPath(path: ArgumentPath): string {
  return escapeControls(shownText(formatPath(path)));
}
