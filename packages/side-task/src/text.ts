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
