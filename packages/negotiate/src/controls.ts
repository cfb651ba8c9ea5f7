/**
 * Characters a message or notice repeating a server's words writes as `\uXXXX` rather than as
 * themselves: C0 and C1 controls and DEL (a terminal's escape, a line break, a NUL), the line and
 * paragraph separators, and the bidi marks, embeddings, overrides and isolates.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * `text` with each character of `CONTROLS` written `\uXXXX`: a server's words shown in a terminal or
 * a run's log say what the server wrote, and cannot clear the screen, start a line of their own or
 * turn the rest of the line round.
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
