// Part of spec's secret reader (see find-spec-secrets.ts): the shell reader: a command line split into its words as a shell splits them (quotes, escapes, substitutions read to a bounded depth, heredocs, operators), each word's value mapped back to where it is written.
import { scriptTells } from "./script-places.js";
import {
  DEFAULT_OPEN,
  literalDefaults,
  looksProseSecretName,
  runTimeOpenerAt,
  type SecretSign,
  withoutReferences,
} from "./secret-signs.js";

/**
 * One word of a command line: where it is written (`start`, `end`), what it says once its quotes
 * are read (`value`), where each of its characters is written (`at`), whether it is a shell
 * operator (`;`, `|`, `&&`, `>`, `<<<`, `(`, …) and whether a `$` or a backtick makes it read at
 * run time. A word read again (a quote or a substitution holding whitespace, or the text after an
 * opener left open) is `data`: split at whitespace with no quote read, and read with the words of
 * its own line only (see `dataSpans`). `defaults` are the literal defaults of the
 * `${NAME:-word}` forms written in it: where each stands in `value`, and its `NAME`.
 */
export interface CommandWord {
  start: number;
  end: number;
  value: string;
  at: number[];
  operator: boolean;
  dynamic: boolean;
  data?: boolean;
  /** A data word's line (a quote's, a substitution's, or one read again after an unclosed opener): its words are read with each other only. */
  group?: number;
  /** A quoted string's data word (`echo "… --token X"`, a nested `bash -c '…'`): every value it gives must read as a credential. */
  quoted?: boolean;
  defaults?: Fallback[];
  /** A word of a substitution's own command (`$(d --password X)`, a backtick's), read apart (see `commandWords`). */
  nested?: true;
  /** A substitution too deep to read (past `SUBSTITUTION_DEPTH`): hidden whole, or in the display kept when no word in it tells (see `deepTells`). */
  deep?: true;
}

/** The literal `word` of `${NAME:-word}` (or `-`, `:=`, `=`) in a word's value: `[start, end)` and `NAME`. */
interface Fallback {
  start: number;
  end: number;
  name: string;
  /** For a stretch of a word mixing literal text and run-time parts (see `mixedDefault`): the whole word's `[start, end)`. */
  mixed?: { start: number; end: number };
}

export const SPACE = /\s/;

/**
 * How deep substitutions inside substitutions (`$(… $(…) …)`, backticks) are read: as words by
 * `commandWords`, and as parts shown in place by the display (`deeper`). Deeper, the export hides a
 * substitution whole; the display keeps it in sight, payload included, unless a flat scan of its
 * text finds a word that tells of a secret (see `deepTells`), and then hides it whole (r56 R56-2).
 */
export const SUBSTITUTION_DEPTH = 4;

/** curl's `-u`/`--user` and a URL's userinfo (`://user:X@`): shapes that give a credential with no telling word. */
const DEEP_TELL_SHAPE = /(?:^|[\s(`'"])(?:-u|--user(?![\w-]))|:\/\/[^\s/@]*@/;

/**
 * Whether the text of a substitution past `SUBSTITUTION_DEPTH` may say a credential, read flat in
 * one pass (no quote, substitution or word read): a telling word or shape anywhere in it
 * (`--password`, `TOKEN=`, `secret`, `sudo -S`, … as `scriptTells` reads a shell's command), curl's
 * `-u`, or a URL's userinfo. Such a text is hidden whole; any other is shown, its key shapes hidden in place.
 */
export function deepTells(text: string): boolean {
  return scriptTells(text) || DEEP_TELL_SHAPE.test(text);
}

/** A substitution's command inside a word (see `commandWords`): `[from, to)` of the line, whether it is a backtick's, and whether it stands in "…". */
interface NestedCommand {
  from: number;
  to: number;
  backtick: boolean;
  quoted: boolean;
}

/** Characters that end an unquoted word and make an operator of their own: `;`, `|`, `&`, `<`, `>`, `(`, `)`. */
const OPERATOR = /[;|&<>()]/;
/** The length of a line continuation at `i` of `line` (a backslash, then `\n` or `\r\n`), 0 for none. */
const continuation = (line: string, i: number): number =>
  line[i + 1] === "\n" ? 2 : line[i + 1] === "\r" && line[i + 2] === "\n" ? 3 : 0;
/** A markdown fence's line from its start: three or more backticks, a language or none, to the line's end. */
const FENCE_LINE = /[ \t]*```+[^`\r\n]*(?=[\r\n]|$)/y;
/**
 * What, after a `$`, makes bash read something at run time: a name's character, `{`, `(`, `[`
 * (arithmetic) or one of its special parameters (`$$ $! $? $# $* $@ $-`, digits). Any other
 * `$` (`Passw0rd$`, `x$%y`) is the character itself.
 */
export const EXPANDS = /[A-Za-z0-9_{([$!?#*@-]/;
/**
 * `${NAME:-word}`, `${NAME-word}`, `${NAME:=word}` or `${NAME=word}` whose `word` is literal: no
 * `$`, backtick, quote, backslash or brace in it, or all of it one `'…'`, or one `"…"` with no `$`,
 * backtick or backslash in it. Bash uses the `word` when `NAME` is unset. Sticky: tried only where
 * a `${` starts, and what it reads a failed try's `expansionEnd` reads too, so a line is read once.
 */
const LITERAL_DEFAULT = /\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-=])(?:([^$`'"\\{}]+)|'([^']*)'|"([^$`"\\]*)")\}/y;
/** `${NAME:-` (or `-`, `:=`, `=`) whose default is itself a `${…}`: `${DB_PASSWORD:-${DB_PASS:-X}}`. Sticky. */
const OPEN_DEFAULT = /\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-=])(?=\$\{)/y;
/** A `$` or a backtick bash expands, in a data word (its quotes unread). */
export const EXPANSION = /\$[A-Za-z0-9_{([$!?#*@-]|`/;

/**
 * The default opening at `at` of `line` whose word mixes literal text and run-time parts bash reads
 * (`${V:-J${X}}`, `${V:-Q9$(id)}`, `${V:-a$X}`), quotes and escapes included (`${V:-"Q9"$(id)}`,
 * `${V:-Q9`id`\"}`), or is literal text with a quote or an escape in it (`${V:-'Q9'x}`,
 * `${V:-Q9\x}`): its `NAME`, where its word starts (`from`) and ends (`end`, at its `}`), each
 * closed run-time part in it (none for a literal word), and each quote character bash removes there
 * (`quotes`: kept where they stand, out of the literal stretches). Quotes are read as bash reads
 * them in the word: `'…'` literal whole (outside `"…"`; inside it, `'` is a character), `"…"`
 * literal but for its run-time parts, a backslash and the character after it literal. Undefined
 * when the word holds a bare `{`, a `}` in a quote, a `${` bash refuses (read as before), a part or
 * quote left open, or no literal text that says something (`LITERAL_DEFAULT` reads a plain word, or
 * one all in one quote; fix177: a mixed word was read at run time whole, its literal text kept in
 * clear; fix178: one holding a quote or a backslash still was; fix179: so was a literal word
 * holding them that `LITERAL_DEFAULT` does not read, `${T:-'Q9sec'ret}`). A default nested in the
 * word outside a quote (`${V:-${W:-TOKEN=QJ}x}`) is no run-time part: its word is read as this one's,
 * its `${W:-` and `}` listed (`nested`). `quoted`: the default stands in `"…"`. Each part is passed
 * over once (see `expansionEnd`).
 */
function mixedDefault(
  line: string,
  at: number,
  quoted = false,
):
  | {
      name: string;
      from: number;
      end: number;
      parts: { start: number; end: number }[];
      quotes: number[];
      nested: NestedDefault[];
    }
  | undefined {
  DEFAULT_OPEN.lastIndex = at;
  const head = DEFAULT_OPEN.exec(line);
  if (!head) return undefined;
  const from = DEFAULT_OPEN.lastIndex;
  const parts: { start: number; end: number }[] = [];
  const quotes: number[] = [];
  // Defaults nested in the word, outside any quote (`${W:-…}` of `${V:-${W:-TOKEN=QJ}x}`), in the
  // order they open; `open`: those not closed yet, innermost last.
  const nested: NestedDefault[] = [];
  const open: NestedDefault[] = [];
  let literal = false;
  // The quote open at `k`: `'`, `"` or none.
  let inQuote = "";
  let k = from;
  while (k < line.length && (inQuote !== "" || line[k] !== "}" || open.length > 0)) {
    const c = line[k] as string;
    const next = line[k + 1];
    DEFAULT_OPEN.lastIndex = k;
    const inner = inQuote === "" && c === "$" && next === "{" ? DEFAULT_OPEN.exec(line) : null;
    if (inner) {
      // A default nested in the word, its own word read as this one's (r74d: `${V:-${W:-TOKEN=QJ}x}`
      // and `${V:-${W:-TOKEN=Q\${X}J}}` were read at run time whole, kept in clear): its `${W:-` and
      // its `}` are the shell's syntax, kept as written out of the literal stretches.
      const opened = { start: k, from: DEFAULT_OPEN.lastIndex, end: -1, name: inner[1] ?? "" };
      nested.push(opened);
      open.push(opened);
      k = opened.from;
    } else if (inQuote === "" && c === "}") {
      (open.pop() as NestedDefault).end = k;
      k += 1;
    } else if (inQuote === "'") {
      if (c === "'") {
        quotes.push(k);
        inQuote = "";
      } else if (c === "}") return undefined;
      else if (!SPACE.test(c)) literal = true;
      k += 1;
    } else if (c === "{" || (c === "}" && inQuote !== "")) return undefined;
    else if (c === "\\") {
      if (next === undefined) return undefined;
      literal = true;
      // `\${`: the `{` after an escaped `$` is literal text too (`${V:-Q\${X}J}`: bash reads
      // `Q${X` as the word, closed by the `}` after `X`; fix187: it was refused, kept in clear).
      k += next === "$" && line[k + 2] === "{" ? 3 : 2;
    } else if (c === '"' || (c === "'" && !quoted && inQuote === "")) {
      quotes.push(k);
      inQuote = inQuote === "" ? c : "";
      k += 1;
    } else if (c === "`" || (c === "$" && (next === "(" || next === "[" || next === "{"))) {
      if (c === "$" && next === "{" && runTimeOpenerAt(line, k) === "") return undefined;
      const { end, closed } = expansionEnd(line, k);
      if (!closed) return undefined;
      parts.push({ start: k, end });
      k = end;
    } else if (c === "$" && next !== undefined && /[A-Za-z_]/.test(next)) {
      let end = k + 1;
      while (end < line.length && /[A-Za-z0-9_]/.test(line[end] as string)) end += 1;
      parts.push({ start: k, end });
      k = end;
    } else if (c === "$" && next !== undefined && EXPANDS.test(next)) {
      parts.push({ start: k, end: k + 2 });
      k += 2;
    } else {
      if (!SPACE.test(c)) literal = true;
      k += 1;
    }
  }
  if (k >= line.length || inQuote !== "" || !literal) return undefined;
  return { name: head[1] ?? "", from, end: k, parts, quotes, nested };
}

/** A default nested in a mixed default's word (see `mixedDefault`): where its `${` is, where its word starts (`from`) and its `}` (`end`), its `NAME`. */
interface NestedDefault {
  start: number;
  from: number;
  end: number;
  name: string;
}

/** Where bash's `$'…'` whose text starts at `from` ends (past its closing `'`): a backslash escapes the next character. */
function ansiQuoteEnd(line: string, from: number): number {
  let i = from;
  while (i < line.length && line[i] !== "'") i += line[i] === "\\" ? 2 : 1;
  return i + 1;
}

/** True when the character at `i` starts a word: the line's start, or after whitespace or an operator. */
function startsWord(line: string, i: number): boolean {
  return i === 0 || /[\s;|&<>()]/.test(line[i - 1] as string);
}

/** A heredoc whose body starts after the current line: its delimiter, and whether `<<-` strips the body's tabs. */
interface Heredoc {
  delimiter: string;
  tabs: boolean;
}

/**
 * Skips the bodies of `heredocs` opened inside a `$(…)`, one after the other, from the line after
 * the newline at `from`: each up to the line that is its delimiter (its leading tabs set aside
 * after `<<-`, a trailing `\r` set aside on both sides, so a CRLF script's `EOF\r` closes it), or
 * the end. Returns where reading goes on (the newline after the last delimiter's line, or the end).
 */
function heredocBodies(line: string, from: number, heredocs: readonly Heredoc[]): number {
  let at = from + 1;
  for (const heredoc of heredocs) {
    const { tabs } = heredoc;
    // A CRLF script's delimiter line is `EOF\r`: a trailing `\r` is set aside on both sides.
    const delimiter = heredoc.delimiter.replace(/\r$/, "");
    while (at < line.length) {
      const eol = line.indexOf("\n", at);
      const stop = eol < 0 ? line.length : eol;
      const text = line.slice(at, stop).replace(/\r$/, "");
      if ((tabs ? text.replace(/^\t+/, "") : text) === delimiter) {
        at = stop;
        break;
      }
      at = stop + 1;
    }
  }
  return Math.min(at, line.length);
}

/** A heredoc's delimiter word after `<<` inside `$(…)`: `-` (tabs stripped), then the word as written (`'WORD'`, `\WORD`, `W"OR"D`). Sticky. */
const HEREDOC_WORD = /(-?)[ \t]*((?:[^\s;|&<>()'"\\]|\\[^\n]|'[^'\n]*'|"[^"\n]*")+)/y;

/**
 * A heredoc's delimiter as bash takes it from the word written after `<<`: its quotes removed
 * and a backslash's next character kept (`\EOF`, `'EOF'`, `"EOF"`, `E"O"F` are all `EOF`). One pass.
 */
function delimiterOf(word: string): string {
  let out = "";
  let quote = "";
  for (let k = 0; k < word.length; k += 1) {
    const c = word[k] as string;
    const next = word[k + 1];
    if (quote === "'") {
      if (c === "'") quote = "";
      else out += c;
    } else if (c === quote) quote = "";
    else if (c === "\\" && next !== undefined && (quote === "" || /["\\$`]/.test(next))) {
      out += next;
      k += 1;
    } else if (quote === "" && (c === "'" || c === '"')) quote = c;
    else out += c;
  }
  return out;
}

/** Where a substitution, quote or arithmetic ends (past its close), and whether it was closed before the line's end. */
interface Closed {
  end: number;
  closed: boolean;
}

/**
 * Where the `$(…)`, `${…}`, `$[…]` or `` `…` `` that opens at `from` ends (past its close; the line's end
 * when it is unclosed), found as bash finds it; with `arithmetic`, bash's arithmetic command
 * `((…))` opening at `from`. In `$(…)` and `${…}`, `'…'`, `$'…'` (its
 * backslashes escaping), `"…"` and a backslash's next character are skipped, and a nested
 * substitution is read whole; in `$(…)` a bare `(` opens a group (`((` arithmetic) and a `#` that starts a word runs
 * to the end of its line, and a heredoc's body (after `<<WORD`, up to the line `WORD`) is skipped;
 * `$((…))` and `((…))` close at their `))` (their `<<` a shift, their `#` no comment), `$[…]` at its `]`;
 * `${…}` closes at its first `}` outside those (a bare `{` opens nothing);
 * in `"…"` a backslash escapes and substitutions nest; in backticks a backslash escapes the next
 * character and nothing else is read. One pass with a stack of what closes each open part, no recursion.
 */
export function expansionEnd(line: string, from: number, arithmetic = false): Closed {
  // What closes each open part, innermost last: `)`, `}`, `]`, a backtick, `"`, or for arithmetic
  // (`$((…))`, `((…))`) `A`, closed by `))`, and `a`, a group inside it closed by `)`.
  const stack: string[] = [];
  let heredocs: Heredoc[] = [];
  let i = from;
  // `$(`, `$((`, `${` or `$[` at `at`: what closes it pushed, and `i` past it.
  const open = (at: number) => {
    if (line[at + 1] === "(" && line[at + 2] === "(") {
      stack.push("A");
      i = at + 3;
    } else {
      const c = line[at + 1];
      stack.push(c === "(" ? ")" : c === "[" ? "]" : "}");
      i = at + 2;
    }
  };
  if (arithmetic) {
    stack.push("A");
    i += 2;
  } else if (line[i] === "`") {
    stack.push("`");
    i += 1;
  } else open(i);
  while (i < line.length && stack.length > 0) {
    const close = stack[stack.length - 1] as string;
    const c = line[i] as string;
    const next = line[i + 1];
    const arithmetic = close === "A" || close === "a";
    if (c === "\\") i += 2;
    else if (close === "A" && c === ")" && next === ")") {
      stack.pop();
      i += 2;
    } else if (c === close || (close === "a" && c === ")")) {
      stack.pop();
      i += 1;
    } else if (close === "`") i += 1;
    else if (c === "`") {
      stack.push("`");
      i += 1;
    } else if (c === "$" && (next === "(" || next === "{" || next === "[")) open(i);
    else if (close === '"') i += 1;
    else if (c === '"') {
      stack.push('"');
      i += 1;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      i = end < 0 ? line.length : end + 1;
    } else if (c === "$" && next === "'") i = ansiQuoteEnd(line, i + 2);
    else if (close === ")" && c === "(" && next === "(") {
      // Bash's arithmetic command inside a substitution: `$(((n <<= 2)); …)`, `$(for ((…)))`.
      stack.push("A");
      i += 2;
    } else if ((close === ")" || arithmetic) && c === "(") {
      stack.push(arithmetic ? "a" : ")");
      i += 1;
    } else if (close === "]" && c === "[") {
      stack.push("]");
      i += 1;
    } else if (close === ")" && c === "#" && startsWord(line, i)) {
      const end = line.indexOf("\n", i);
      i = end < 0 ? line.length : end;
    } else if (close === ")" && c === "<" && next === "<") {
      // A heredoc's operator (not `<<<`, a here-string): its delimiter read, its body after this line.
      HEREDOC_WORD.lastIndex = i + 2;
      const word = line[i + 2] === "<" ? null : HEREDOC_WORD.exec(line);
      if (word) heredocs.push({ delimiter: delimiterOf(word[2] ?? ""), tabs: word[1] === "-" });
      i = word ? HEREDOC_WORD.lastIndex : i + (line[i + 2] === "<" ? 3 : 2);
    } else if (close === ")" && c === "\n" && heredocs.length > 0) {
      i = heredocBodies(line, i, heredocs);
      heredocs = [];
    } else i += 1;
  }
  return { end: Math.min(i, line.length), closed: stack.length === 0 };
}

/**
 * A command line split into words as a shell reads it: at unquoted whitespace and operators
 * (`;`, `|`, `&`, `<`, `>`, `(`, `)`), with `'…'` taken literally, bash's `$'…'` reading `\\`, `\'`,
 * `\"` and `\?` as the character (any other escape kept as written) and closing only at an
 * unescaped `'`, `"…"` (and bash's `$"…"`) reading `\"`, `\\`, `\$`
 * and `` \` `` as the character, a backslash outside quotes escaping a space, a quote or a
 * backslash (any other is kept, so a Windows path reads as written), and `$(…)`, `${…}`, `$[…]` and
 * `` `…` `` kept inside the word they are written in, up to the close bash finds (see
 * `expansionEnd`: quotes and escapes in them read, so their spaces, operators and quoted closers
 * do not end them); bash's arithmetic command `((…))` (`for ((…))`, `if ((…))`) is an operator
 * of its own, no heredoc or quote read in it. The literal default of `${NAME:-word}` is read as the word's value there (a
 * `Fallback`), not as run time, also one a level or more down (`${A:-${B:-word}}`).
 * A `#` is a character like any other, and a heredoc's body is read as command words (a shell's own
 * command is never read apart: see `shellScript`). The command of a `$(…)` or backtick
 * substitution holding whitespace is read besides, as words of their own where they are written
 * (`b $(c $(d --password X))`, a backtick's escapes read: r55 R55-6), `depth` levels down to
 * `SUBSTITUTION_DEPTH`; deeper, the substitution is one `deep` word. A quote or a
 * substitution left open at the end of the line is likely a mis-read (bash refuses such a line),
 * so the text after its opener is read again as data besides (fail safe). One pass over the line.
 */
export function commandWords(line: string, depth = 0, nested = false): CommandWord[] {
  const words: CommandWord[] = [];
  // Each line of data is a group of its own.
  let group = 0;
  // The command of the substitution written at `[from, to)` (its text inside its opener and
  // closer), read as words of their own: a backtick's text as its command reads it (`\\`, `` \` ``
  // and `\$`, and `\"` inside "…", read as the character), each word where it is written on `line`.
  // Each command between its operators is a group of its own. Past `SUBSTITUTION_DEPTH`, the substitution is
  // one word to hide whole.
  const nestedWords = ({ from, to, backtick, quoted }: NestedCommand) => {
    if (depth >= SUBSTITUTION_DEPTH) {
      const start = from - (backtick ? 1 : 2);
      const at: number[] = [];
      for (let k = start; k <= to; k += 1) at.push(k);
      group += 1;
      const value = line.slice(start, to + 1);
      words.push({
        start,
        end: to + 1,
        value,
        at,
        operator: false,
        dynamic: true,
        data: true,
        group,
        deep: true,
      });
      return;
    }
    let text = line.slice(from, to);
    let map: number[] | undefined;
    if (backtick && text.includes("\\")) {
      text = "";
      map = [];
      for (let k = from; k < to; k += 1) {
        const after = line[k + 1];
        if (
          line[k] === "\\" &&
          k + 1 < to &&
          (after === "\\" || after === "`" || after === "$" || (quoted && after === '"'))
        )
          k += 1;
        text += line[k];
        map.push(k);
      }
    }
    const place = (k: number) => (map ? (map[k] as number) : from + k);
    group += 1;
    let plain = group;
    const groups = new Map<number, number>();
    for (const word of commandWords(text, depth + 1, true)) {
      if (word.operator) {
        group += 1;
        plain = group;
        continue;
      }
      // A word of a substitution inside this one keeps to its own command's group.
      if (word.group !== undefined && !groups.has(word.group)) {
        group += 1;
        groups.set(word.group, group);
      }
      const own = word.group === undefined ? plain : (groups.get(word.group) as number);
      words.push({
        ...word,
        start: place(word.start),
        end: place(word.end - 1) + 1,
        at: word.at.map(place),
        data: true,
        group: own,
        nested: true,
      });
    }
  };
  // The words of `[start, end)`, each line's split at whitespace, no quote read.
  const data = (start: number, end: number, quoted = false) => {
    let k = start;
    group += 1;
    while (k < end) {
      const c = line[k] as string;
      if (c === "\n") group += 1;
      if (SPACE.test(c)) {
        k += 1;
        continue;
      }
      const from = k;
      while (k < end && !SPACE.test(line[k] as string)) k += 1;
      const value = line.slice(from, k);
      const at: number[] = [];
      for (let j = from; j < k; j += 1) at.push(j);
      const defaults = literalDefaults(value);
      words.push({
        start: from,
        end: k,
        value,
        at,
        operator: false,
        dynamic: EXPANSION.test(withoutReferences(value)),
        data: true,
        group,
        ...(quoted ? { quoted } : {}),
        ...(defaults.length > 0 ? { defaults } : {}),
      });
    }
    group += 1;
  };
  let i = 0;
  // Where a word whose reading of a refused default (see `substitution`) is undone starts: read
  // again there without it, once.
  let plainAt = -1;
  // The next `'` and the next line break at or after a place, found once and reused while ahead
  // (see `wordApostrophe`): each search starts past the last one's find, so the line is read once.
  let quoteAhead = -1;
  let breakAhead = -1;
  /**
   * Whether the `'` at `k` is an apostrophe inside a word of prose (`Don't`, `it's`, `O'Brien`): a
   * letter on each side, no `'` after it on its line, and a line after it (on the last line, a quote
   * left open is read as one, see below). Read as a quote it would run over the
   * lines below (r92g: in a document holding prose, `Don't commit this.` left the lines after it one
   * quoted word, read again as data, so `Primary key: user_id123` lost its value and
   * `The token: ask for it later` its `ask`); bash would read on, but no one writes a script so.
   */
  const wordApostrophe = (k: number): boolean => {
    if (!/[A-Za-z]/.test(line[k - 1] ?? "") || !/[A-Za-z]/.test(line[k + 1] ?? "")) return false;
    if (quoteAhead <= k) {
      quoteAhead = line.indexOf("'", k + 1);
      if (quoteAhead < 0) quoteAhead = line.length;
    }
    if (breakAhead <= k) {
      breakAhead = k + 1;
      while (breakAhead < line.length && line[breakAhead] !== "\n" && line[breakAhead] !== "\r")
        breakAhead += 1;
    }
    return breakAhead < line.length && quoteAhead > breakAhead;
  };
  while (i < line.length) {
    const first = line[i] as string;
    // A markdown fence (a line of three or more backticks, perhaps a language after them) is a
    // code block's edge, not a substitution: read as a blank line, the lines between two fences
    // read as the commands and data they are (r92g: its backticks opened a substitution that ran
    // to the next fence, its lines read again as data, `Primary key: user_id123` losing its value).
    const lineBreak = first === "\n" || first === "\r";
    if (i === 0 || lineBreak) {
      FENCE_LINE.lastIndex = lineBreak ? i + 1 : 0;
      if (FENCE_LINE.exec(line)) {
        i = FENCE_LINE.lastIndex;
        continue;
      }
    }
    // Whitespace, and a backslash before a newline (a line continuation: bash reads neither). A
    // Windows line's `\r\n` after it too: bash would read a `\r` argument, then a new command, but
    // such a script was written as one command (r92g: `mysql -u root \` then `-pX` on the next
    // line, the lines ending `\r\n`, kept `-pX` in clear once a line break ended a command).
    const continued = first === "\\" ? continuation(line, i) : 0;
    if (SPACE.test(first) || continued > 0) {
      i += continued || 1;
      continue;
    }
    const start = i;
    if (first === "(" && line[i + 1] === "(") {
      // Bash's arithmetic command (`((n <<= 2))`, `for ((…))`): its `<<` is a shift, its quotes none.
      const { end } = expansionEnd(line, i, true);
      words.push({ start, end, value: "((", at: [], operator: true, dynamic: true });
      i = end;
      // Its words read as data besides (fail safe: a `((` bash reads as two subshells, or left open).
      data(start + 2, end);
      continue;
    }
    if (OPERATOR.test(first)) {
      i += 1;
      if (first !== "(" && first !== ")") while (i < line.length && /[;|&<>]/.test(line[i] as string)) i += 1;
      const value = line.slice(start, i);
      words.push({ start, end: i, value, at: [], operator: true, dynamic: false });
      continue;
    }
    let value = "";
    const at: number[] = [];
    let dynamic = false;
    let defaults: Fallback[] | undefined;
    // The commands of this word's substitutions, read after it (see `nestedWords`).
    const commands: NestedCommand[] = [];
    // Whether a quote or a substitution is left open at the line's end.
    let unclosed = false;
    const leftOpen = () => {
      unclosed = true;
    };
    // Whether a refused default was read as a literal default's word (see `substitution`).
    let refusedRead = false;
    const put = (index: number) => {
      value += line[index];
      at.push(index);
    };
    // `$(…)`, `${…}`, `$[…]` or `` `…` `` from `i`: kept as written, up to its close; a literal default's
    // word (`${NAME:-word}`, `${NAME:-${OTHER:-word}}`) is read as what the word says there, inside its quotes if it has any
    // (kept as written: inside `"…"` bash keeps a `'…'` default's quotes as characters).
    const substitution = (quoted = false) => {
      if (line[i] === "$" && line[i + 1] === "{") {
        // The innermost of nested defaults, found by iterating: each outer one yields to it while unset.
        let p = i;
        let depth = 0;
        const names: string[] = [];
        LITERAL_DEFAULT.lastIndex = p;
        let fallback = LITERAL_DEFAULT.exec(line);
        while (!fallback) {
          OPEN_DEFAULT.lastIndex = p;
          const outer = OPEN_DEFAULT.exec(line);
          if (!outer) break;
          names.push(outer[1] ?? "");
          depth += 1;
          p = OPEN_DEFAULT.lastIndex;
          LITERAL_DEFAULT.lastIndex = p;
          fallback = LITERAL_DEFAULT.exec(line);
        }
        // The default of the innermost being a `${…}` a shell refuses (`${X:-${-  %VQ}}`, see
        // `runTimeOpenerAt`): no reference a reader fills, its text is the default's literal word, read
        // to its close as a shell reads it (fix176: the word was read at run time, kept in clear).
        let refused: { from: number; end: number } | undefined;
        if (
          !fallback &&
          depth > 0 &&
          start !== plainAt &&
          line[p] === "$" &&
          line[p + 1] === "{" &&
          runTimeOpenerAt(line, p) === ""
        ) {
          const { end, closed } = expansionEnd(line, p);
          if (closed) refused = { from: p, end };
          refusedRead ||= closed;
        }
        // A default whose word mixes literal text and run-time parts (`${V:-J${X}}`, see `mixedDefault`).
        // Tried at the innermost default, then at the outermost (`${V:-${X}QJ}`: `${X}` is no default).
        let mixed = !fallback && !refused ? mixedDefault(line, p, quoted) : undefined;
        if (!fallback && !refused && !mixed && p !== i) {
          mixed = mixedDefault(line, i, quoted);
          if (mixed) {
            depth = 0;
            names.length = 0;
          }
        }
        let close = fallback ? p + fallback[0].length : (refused?.end ?? (mixed ? mixed.end + 1 : -1));
        let found = fallback !== null || refused !== undefined || mixed !== undefined;
        for (let k = 0; found && k < depth; k += 1) {
          if (line[close] !== "}") found = false;
          close += 1;
        }
        // The innermost default closed before its outer one's word ends (`${V:-${W:-TOKEN=QJ}x}`,
        // `${V:-${W:-TOKEN=Q\${X}J}}`): the outermost read as a mixed default, the inner ones
        // nested in its word (see `mixedDefault`).
        if (!found && !refused && p !== i) {
          mixed = mixedDefault(line, i, quoted);
          if (mixed) {
            fallback = null;
            depth = 0;
            names.length = 0;
            close = mixed.end + 1;
            found = true;
          }
        }
        if (found && mixed) {
          // Its word read as written, each literal stretch a default's word (under the innermost
          // name that names a credential, as below, a default nested in the word's included),
          // each run-time part read at run time, each nested default's `${NAME:-` and `}` kept out.
          names.push(mixed.name);
          const nameAt = (position: number) => {
            const around = names.concat(
              mixed.nested
                .filter((inner) => inner.from <= position && position < inner.end)
                .map((inner) => inner.name),
            );
            for (let k = around.length - 1; k >= 0; k -= 1)
              if (wholeNameTells(around[k] as string)) return around[k] as string;
            return around[around.length - 1] as string;
          };
          defaults ??= [];
          const whole = { start: value.length, end: value.length };
          let k = mixed.from;
          const stretch = (to: number) => {
            const begin = value.length;
            const name = nameAt(k);
            for (; k < to; k += 1) put(k);
            if (/\S/.test(value.slice(begin)))
              defaults?.push({ start: begin, end: value.length, name, mixed: whole });
          };
          // Each quote bash removes is kept where it stands, out of the stretches (`${V:-"•"$(id)}`).
          let quote = 0;
          const stretchTo = (to: number) => {
            for (; quote < mixed.quotes.length && (mixed.quotes[quote] as number) < to; quote += 1) {
              stretch(mixed.quotes[quote] as number);
              put(k);
              k += 1;
            }
            stretch(to);
          };
          // The nested defaults' `${NAME:-` and `}`, in order, each passed over as the shell's syntax.
          const syntax = mixed.nested
            .flatMap((inner) => [
              { start: inner.start, end: inner.from },
              { start: inner.end, end: inner.end + 1 },
            ])
            .sort((a, b) => a.start - b.start);
          let skip = 0;
          const partsTo = (to: number) => {
            for (; skip < syntax.length && (syntax[skip] as { start: number }).start < to; skip += 1) {
              const { start: begin, end } = syntax[skip] as { start: number; end: number };
              stretchTo(begin);
              k = end;
            }
            stretchTo(to);
          };
          for (const part of mixed.parts) {
            partsTo(part.start);
            dynamic = true;
            if (
              line[k + 1] === "(" &&
              line[k + 2] !== "(" &&
              /[\s;&|=]/.test(line.slice(k + 2, part.end - 1))
            )
              commands.push({ from: k + 2, to: part.end - 1, backtick: false, quoted });
            else if (line[k] === "`" && /[\s;&|=]/.test(line.slice(k + 1, part.end - 1)))
              commands.push({ from: k + 1, to: part.end - 1, backtick: true, quoted });
            for (; k < part.end; k += 1) put(k);
          }
          partsTo(mixed.end);
          whole.end = value.length;
          i = close;
          return;
        }
        if (found) {
          const text = fallback ? (fallback[3] ?? fallback[4] ?? fallback[5] ?? "") : "";
          const from = fallback
            ? p + fallback[0].length - 1 - (fallback[3] !== undefined ? 0 : 1) - text.length
            : (refused?.from ?? p);
          const to = fallback ? from + text.length : (refused?.end ?? p);
          const begin = value.length;
          for (let k = from; k < to; k += 1) put(k);
          // Under the innermost name that names a credential, else the innermost.
          if (fallback) names.push(fallback[1] ?? "");
          let name = names[names.length - 1] as string;
          for (let k = names.length - 1; k >= 0; k -= 1)
            if (wholeNameTells(names[k] as string)) {
              name = names[k] as string;
              break;
            }
          defaults ??= [];
          defaults.push({ start: begin, end: value.length, name });
          i = close;
          return;
        }
      }
      // A `${…}` a shell refuses as a bad substitution (`${-  %VQ}`, see `runTimeOpenerAt`) runs
      // nothing: read to its close as a shell reads it, its text is the word's literal text (fix175).
      // Bash's `$[…]` (arithmetic, no run-time part `runTimeOpenerAt` names) is read at run time.
      if (runTimeOpenerAt(line, i) !== "" || line[i + 1] === "[") dynamic = true;
      const { end, closed } = expansionEnd(line, i);
      if (!closed) leftOpen();
      // A command's substitution (`$(…)`, not `$((…))`; a backtick's) holding whitespace, an operator
      // or an `=`: its command read too (`$(PASSWORD=X)` and `$(x;PASSWORD=X)` were never read: r59).
      const backtick = line[i] === "`";
      const from = i + (backtick ? 1 : 2);
      if (
        closed &&
        (backtick || (line[i + 1] === "(" && line[i + 2] !== "(")) &&
        /[\s;&|=]/.test(line.slice(from, end - 1))
      )
        commands.push({ from, to: end - 1, backtick, quoted });
      while (i < end) {
        put(i);
        i += 1;
      }
    };
    const expands = (c: string, next: string | undefined) =>
      c === "`" || (c === "$" && (next === "(" || next === "{" || next === "["));
    while (i < line.length && !SPACE.test(line[i] as string) && !OPERATOR.test(line[i] as string)) {
      const c = line[i] as string;
      const next = line[i + 1];
      if (c === "$" && next === "'") {
        // Bash's ANSI-C quoting: `\\`, `\'`, `\"` and `\?` read as the character (so `\'` does not
        // close it); any other escape (`\n`, `\x41`) is kept as written, both characters.
        i += 2;
        while (i < line.length && line[i] !== "'") {
          const after = line[i + 1];
          if (line[i] === "\\" && after !== undefined && /['"\\?]/.test(after)) {
            i += 1;
            put(i);
          } else if (line[i] === "\\" && after !== undefined) {
            put(i);
            i += 1;
            put(i);
          } else put(i);
          i += 1;
        }
        if (i >= line.length) leftOpen();
        i += 1;
      } else if (c === "'" && i > start && wordApostrophe(i)) {
        put(i);
        i += 1;
      } else if (c === "'") {
        i += 1;
        while (i < line.length && line[i] !== "'") {
          put(i);
          i += 1;
        }
        if (i >= line.length) leftOpen();
        i += 1;
      } else if (c === '"' || (c === "$" && next === '"')) {
        // `"…"`, and bash's `$"…"` (a locale's translation of the same text): a double quote.
        i += c === "$" ? 2 : 1;
        while (i < line.length && line[i] !== '"') {
          const after = line[i + 1];
          if (line[i] === "\\" && after === "\n") i += 2;
          else if (line[i] === "\\" && after !== undefined && /["\\$`]/.test(after)) {
            i += 1;
            put(i);
            i += 1;
          } else if (expands(line[i] as string, after)) substitution(true);
          else {
            if (line[i] === "$" && after !== undefined && EXPANDS.test(after)) dynamic = true;
            put(i);
            i += 1;
          }
        }
        if (i >= line.length) leftOpen();
        i += 1;
      } else if (c === "\\" && continuation(line, i) > 0) i += continuation(line, i);
      else if (c === "\\" && next !== undefined && /[\s'"\\;|&<>()$`]/.test(next)) {
        put(i + 1);
        i += 2;
      } else if (expands(c, next)) substitution();
      else if (c === "$" && next === "$") {
        // `$$` (the shell's process id), so a `'` after it opens a plain quote, not a `$'…'`.
        dynamic = true;
        put(i);
        put(i + 1);
        i += 2;
      } else {
        if (c === "$" && next !== undefined && EXPANDS.test(next)) dynamic = true;
        put(i);
        i += 1;
      }
    }
    // On a line that leaves an opener open, such a default is read at run time as before (its word
    // would be written apart from the rest of the value, and a value written apart on such a line is
    // kept as written: see `commandLineSecrets`): the word is read again from its start.
    if (unclosed && refusedRead) {
      plainAt = start;
      i = start;
      continue;
    }
    const end = Math.min(i, line.length);
    words.push({ start, end, value, at, operator: false, dynamic, ...(defaults ? { defaults } : {}) });
    // Read again as data: what an opener that never closes may have hidden, and the words inside a
    // quote or a substitution holding whitespace (a nested `bash -c '…'`, `$(get-token --password X)`).
    // (A substitution's own command is not: its text is read so with the line's word it is written in.)
    if (!nested && unclosed) data(start, end);
    else if (!nested && SPACE.test(line.slice(start, end))) data(start, end, true);
    // Then each substitution's own command (after the data words: what they hide stays hidden).
    for (const command of commands) nestedWords(command);
  }
  return words;
}

/** A name's words: split at anything but a letter and where a small letter meets a capital (`dbMaxToken` → db, Max, Token). */
export function nameWords(name: string): string[] {
  return name.split(/[^A-Za-z]+|(?<=[a-z])(?=[A-Z])/).filter((word) => word !== "");
}

/**
 * True when a flag's, variable's or header's whole name names a credential — its last word is
 * one (`--password`, `--api-key`, `--token`, `GITHUB_TOKEN`, `X-Api-Key`) — rather than a
 * setting about one or another word that starts like one (`--token-budget`, `--tokenizer`,
 * `--keyword`, `--password-file`, `--auth-type`). How a shell's command is read.
 */
export function wholeNameTells(name: string): boolean {
  const words = nameWords(name);
  const last = words[words.length - 1];
  return last !== undefined && looksProseSecretName(name) && looksProseSecretName(last);
}

/** A part of a text to replace: `[start, end)`, the secret's name (none for a key shape) and the sign. */
export interface Span {
  start: number;
  end: number;
  name: string | undefined;
  sign: SecretSign;
  /** What to write instead, when it is not the named reference (a URL without its credentials). */
  with?: string;
  /** What to write instead, exactly (a JSON word's string, written back escaped: see `jsonEdits`). */
  put?: string;
  /**
   * The line's `[start, end)` to replace instead, read as written: a program's expression whose
   * quotes the shell reads (`process.env.TOKEN='a'+'b'` as the line itself), which may run past the word.
   */
  written?: { start: number; end: number };
  /** For the display: what to write over `written` instead of one reference (see `shownInPlace`). */
  shown?: string;
  /** A quoted command's own value (`sh -c 'TOKEN=abc$(…) srv'`), which the shell running it reads partly at run time. */
  inner?: true;
}

/**
 * Where the word a shell reads at `from` of `text` (a quoted command's own text) ends: at a blank
 * or one of the shell's operators `; & | < >` outside its quotes, escapes and substitutions
 * (see `expansionEnd`; r54 G7: `DB_PASSWORD="a b";curl …` ends before the `;`), or at the end.
 * Not at `(` or `)`: a shell has none inside a word, and the text read here may be another
 * language's program (`node -e "process.env.TOKEN=String('x'); …"`), where a call after a name,
 * `String('x')` or `f(x, 'y')`, or a group, `(a || 'x')`, is all one value, read to its `)` (see
 * `callEnd`; r56-1, r57-3). Inside `"…"` a `\\` escapes the character after it. One pass over the word.
 */
export function innerWordEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length && !/[\s;&|<>]/.test(text[i] as string)) {
    const c = text[i] as string;
    if (c === "\\") i += 2;
    else if (c === "`" || (c === "$" && /[{([]/.test(text[i + 1] ?? "")))
      i = Math.max(i + 1, expansionEnd(text, i).end);
    else if (c === "(") i = callEnd(text, i);
    else if (c === "'") {
      const close = text.indexOf(c, i + 1);
      i = close < 0 ? text.length : close + 1;
    } else if (c === '"') {
      let close = i + 1;
      while (close < text.length && text[close] !== '"') close += text[close] === "\\" ? 2 : 1;
      i = close + 1;
    } else i += 1;
  }
  return Math.min(i, text.length);
}

/**
 * Just past the `)` that closes the call opened at `open` of `text` (`String('x')`, `f(x, 'y')`:
 * another language's program read as a quoted command, where a call is all one value, blanks and
 * all), passing over its quotes; the end of `text` when it is never closed, so that what follows
 * stays in the value (hidden, never shown as a word of its own). One pass.
 */
function callEnd(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i += 1) {
    const c = text[i] as string;
    if (c === "\\") i += 1;
    else if (c === "'" || c === '"' || c === "`") {
      let close = i + 1;
      while (close < text.length && text[close] !== c) close += text[close] === "\\" ? 2 : 1;
      i = close;
    } else if (c === "(") depth += 1;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  return text.length;
}
