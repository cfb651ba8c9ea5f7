import { headOf, tailOf } from "./text.js";

/**
 * The first character of a line that is not a blank or a backslash (what may stand before a
 * header's bracket): spaces of any kind (`\p{Zs}`: U+00A0, U+3000 …), invisible format characters
 * (`\p{Cf}`: U+200B, U+FEFF …), tabs. A line terminator is none of them, so the search stops
 * within its line.
 */
const NOT_LEAD = /[^\t\v\f\p{Zs}\p{Cf}\\]/gu;

/** The first bracket or line end after a header's opening bracket. */
const BRACKET_OR_END = /[[\]\n\r\u2028\u2029]/g;

/** The first character after a header's closing bracket that is not a blank (as {@link NOT_LEAD}). */
const NOT_BLANK = /[^\t\v\f\p{Zs}\p{Cf}]/gu;

/** The characters that end a line: `\n`, `\r` (alone or before `\n`), U+2028 and U+2029. */
const LINE_END = /[\n\r\u2028\u2029]/;
const NEXT_LINE_END = /[\n\r\u2028\u2029]/g;

/** Whether the UTF-16 unit `code` ends a line (as {@link LINE_END}). */
function endsLine(code: number): boolean {
  return code === 10 || code === 13 || code === 0x2028 || code === 0x2029;
}

/** Where `pattern` (global) next matches in `text` from `from`; `text.length` where it does not. */
function next(pattern: RegExp, text: string, from: number): number {
  pattern.lastIndex = from;
  return pattern.exec(text)?.index ?? text.length;
}

/**
 * `text` with a backslash before the bracket of every line that reads like one of the transcript's
 * block headers (`[user]`, `[tool result from x]`, `[assistant called y]`): blanks and backslashes,
 * a bracket, words with no bracket in them, the closing bracket and blanks, on a line of its own
 * (lines end at `\n`, `\r`, U+2028 and U+2029, which a model may read as line breaks too). So
 * text a tool brought back cannot pass itself off as the user or the assistant.
 *
 * Only lines holding a bracket are looked at, each by searches that never step back, so a line of
 * millions of blanks before a bracket never closed takes time in proportion to it (a pattern reading
 * it backtracked over the whole run: its time grew faster than the run from about a million
 * characters, and past some eight to ten million it threw a RangeError).
 */
export function escapeHeaders(text: string): string {
  let shown = "";
  let copied = 0;
  // Every line that starts before `from` has been looked at; `from` is the start of a line.
  let from = 0;
  for (;;) {
    const open = text.indexOf("[", from);
    if (open < 0) break;
    let line = open;
    while (line > from && !endsLine(text.charCodeAt(line - 1))) line--;
    if (next(NOT_LEAD, text, line) === open) {
      const close = next(BRACKET_OR_END, text, open + 1);
      if (text[close] === "]") {
        const after = next(NOT_BLANK, text, close + 1);
        if (after === text.length || LINE_END.test(text[after] as string)) {
          shown += `${text.slice(copied, open)}\\`;
          copied = open;
        }
      }
    }
    const end = next(NEXT_LINE_END, text, open);
    if (end === text.length) break;
    from = end + 1;
  }
  return shown === "" ? text : shown + text.slice(copied);
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
