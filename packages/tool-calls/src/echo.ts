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
