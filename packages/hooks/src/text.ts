/**
 * `text` with each lone surrogate written U+FFFD. A request carrying one is refused by llama.cpp's
 * JSON reader (and serde_json's), and hook context stored beside its question would fail every turn.
 */
export function wellFormed(text: string): string {
  return text.toWellFormed();
}

/** `text` cut to at most `chars` UTF-16 units, never between the two halves of a surrogate pair. */
export function cutTo(text: string, chars: number): string {
  if (text.length <= chars) return text;
  let end = Math.max(0, chars);
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

/** `text` on one line: each run of control characters and line or paragraph separators one space. */
export function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]+/gu, " ");
}
