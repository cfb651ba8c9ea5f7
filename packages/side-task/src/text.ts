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
