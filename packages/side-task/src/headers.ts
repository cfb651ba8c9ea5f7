import { headOf, tailOf } from "./text.js";

/**
 * What may stand around a header's brackets and still leave the line reading as one: spaces of any
 * kind (`\p{Zs}`: U+00A0, U+3000 …), invisible format characters (`\p{Cf}`: U+200B, U+FEFF …), tabs
 * and a carriage return.
 */
const BLANK = String.raw`[\t\v\f\r\p{Zs}\p{Cf}]`;

/**
 * {@link BLANK} without the carriage return: what may stand before a header's bracket. It must hold
 * no line terminator. `^` already stands after every lone `\r`, so a prefix that could read one would
 * read the rest of a run of them again from each of its characters (time growing as the square of
 * the run); with none, each line's prefix is read once.
 */
const LEAD = String.raw`[\t\v\f\p{Zs}\p{Cf}]`;

/**
 * A line that reads like one of the transcript's block headers (`[user]`, `[tool result from x]`,
 * `[assistant called y]`): blanks and backslashes before the bracket (`$1`), the bracketed words and
 * blanks after them (`$2`). `^` and `$` also stand at U+2028, U+2029 and a lone `\r`, which a model
 * may read as line breaks too.
 */
const HEADER_LINE = new RegExp(String.raw`^((?:${LEAD}|\\)*)(\[[^[\]\n\r\u2028\u2029]*\]${BLANK}*)$`, "gmu");

/** The characters that end a line, for `^` and `$` in {@link HEADER_LINE}. */
const LINE_END = /[\n\r\u2028\u2029]/;

/**
 * `text` with a backslash before the bracket of every line that reads like a block header, so text a
 * tool brought back cannot pass itself off as the user or the assistant.
 */
export function escapeHeaders(text: string): string {
  return text.replace(HEADER_LINE, "$1\\$2");
}

/** The most characters of a name (a tool's, a role) written into a header. */
export const HEADER_NAME_CHARS = 64;

/**
 * A name the transcript holds (a tool the model named, a role), as written into a header: on one
 * line, without brackets (each run of line breaks, control characters and brackets a single space),
 * cut to {@link HEADER_NAME_CHARS} with an ellipsis. So a made-up name cannot close its header and
 * open one of its own.
 */
export function headerName(name: string): string {
  const flat = name.replace(/[\p{Cc}\u2028\u2029[\]]+/gu, " ").trim();
  return flat.length <= HEADER_NAME_CHARS ? flat : `${headOf(flat, HEADER_NAME_CHARS - 1)}…`;
}

/** `head` with its last line escaped where the cut at the end of `head` fell inside that line. */
function escapeCutEnd(head: string, next: string | undefined): string {
  if (next === undefined || LINE_END.test(next)) return head;
  let at = head.length;
  while (at > 0 && !LINE_END.test(head[at - 1] as string)) at--;
  return head.slice(0, at) + escapeHeaders(head.slice(at));
}

/** `tail` with its first line escaped where the cut before `tail` fell inside that line. */
function escapeCutStart(tail: string, before: string | undefined): string {
  if (before === undefined || LINE_END.test(before)) return tail;
  const found = tail.search(LINE_END);
  const end = found < 0 ? tail.length : found;
  return escapeHeaders(tail.slice(0, end)) + tail.slice(end);
}

/**
 * `text` (its header-like lines already escaped) with `each` characters kept at either end and the
 * middle replaced by a line saying how many characters went (`[… 120 characters left out …]`, the
 * words after the number `what`); never cuts inside a character. The cut makes a line start where
 * the kept tail begins and a line end where the kept head stops, so the part of a line either cut
 * leaves is escaped too (a line the cut did not split is left as it was): each end may grow by a
 * backslash.
 */
export function keepEndsEscaped(text: string, each: number, what = "characters left out"): string {
  const head = headOf(text, each);
  const tail = tailOf(text, text.length - each);
  const start = text.length - tail.length;
  const shownHead = escapeCutEnd(head, text[head.length]);
  const shownTail = escapeCutStart(tail, start > 0 ? text[start - 1] : undefined);
  return `${shownHead}\n[… ${text.length - head.length - tail.length} ${what} …]\n${shownTail}`;
}
