/** `text` up to `end`, one code unit short where `end` would split a surrogate pair (an emoji). */
export function headOf(text: string, end: number): string {
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end);
}

/** `text` from `start`, one code unit on where `start` would split a surrogate pair. */
export function tailOf(text: string, start: number): string {
  const code = text.charCodeAt(start);
  return text.slice(code >= 0xdc00 && code <= 0xdfff ? start + 1 : start);
}

/**
 * `text` with each lone surrogate (a host's cut inside an emoji) written U+FFFD: a request holding
 * one, even escaped, is refused whole by a server reading UTF-8 (llama.cpp answers a 500).
 */
export function wellFormed(text: string): string {
  return text.toWellFormed();
}

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidirectional marks,
 * embeddings, overrides and isolates: the set `@loopwright/tools` writes as `\uXXXX` in what it
 * echoes of a model's text (its `CONTROLS`; `review-r103d.test.ts` holds the two to one set).
 * A copy, as this package does not depend on that one.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** `text` with each character of `CONTROLS` written `\uXXXX`. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Text a model wrote (a tool's name, a refusal) as a notice or an error quotes it: a JSON string,
 * its quotes and backslashes escaped so its end is plain, and each character `JSON.stringify`
 * leaves raw that a log or a terminal reads as a line break or a change of direction (U+2028,
 * U+2029, the bidirectional controls, DEL and C1 controls) written `\uXXXX` too.
 */
export function quotedText(text: string): string {
  return escapeControls(JSON.stringify(text));
}
