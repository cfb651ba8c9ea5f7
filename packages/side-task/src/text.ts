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
 * `text` with `each` characters kept at either end and the middle replaced by a line saying how many
 * characters went (`[… 120 characters left out …]`, the words after the number `what`); never cuts
 * inside a character.
 */
export function keepEnds(text: string, each: number, what = "characters left out"): string {
  const head = headOf(text, each);
  const tail = tailOf(text, text.length - each);
  return `${head}\n[… ${text.length - head.length - tail.length} ${what} …]\n${tail}`;
}
