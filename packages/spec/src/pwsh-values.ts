// Part of spec's secret reader (see find-spec-secrets.ts): PowerShell's `$env:NAME=value` in a command line: where the value's quotes are and what they hold.
import { isLiteral } from "./secret-signs.js";
import { type CommandWord, EXPANDS, SPACE, wholeNameTells } from "./shell-words.js";
import { plainLiteral } from "./shown-values.js";

/**
 * PowerShell's assignment to an environment variable, `$env:NAME=value` or `${env:NAME}=value`
 * (any case), or its name alone before ` = value`: the name, then `=` or nothing.
 */
export const PWSH_ENV =
  /^\$(?:env:(?=[A-Za-z_][A-Za-z0-9_]*(?:=|$))|\{env:(?=[A-Za-z_][A-Za-z0-9_]*\}(?:=|$)))([A-Za-z_][A-Za-z0-9_]*)\}?(=|$)/i;

/**
 * A pasted `command` that is one word in quotes (`"postgres://user:X@db/x"`, `'Server=db;…'`): read
 * as a line, as `withoutCommandLineSecrets` shows it, since the quotes hide it from a plain
 * string's reading (r49 F5).
 */
export const QUOTED_WHOLE = /^(["'])[\s\S]+\1$/;

/** True when `text` starts as PowerShell's `$env:NAME=` or `${env:NAME}=`: one word that is an assignment. */
export const pwshAssignment = (text: string) => PWSH_ENV.exec(text)?.[2] === "=";

/**
 * Where each PowerShell "…" string of a line ends, read as PowerShell reads one (r46 N2): for the
 * position `p` just after an opening `"`, `close[p]` is the index of its closing `"` (-1 when none),
 * a backtick escaping the character after it and `""` being one quote; `expands[p]` is 1 when a `$`
 * that PowerShell expands (`$name`, `$(…)`, `${…}`) stands unescaped before that close, and
 * `literal[p]` is 1 when written text other than spaces stands there beside those run-time parts
 * (`Sec`, an escape such as `` `$x ``, a `""`). One pass from the line's end after one pass pairing
 * parentheses, so reading every word's string costs the line's length a few times.
 */
export interface PwshQuotes {
  close: Int32Array;
  expands: Uint8Array;
  literal: Uint8Array;
}

/** A character of a PowerShell variable's name after `$` (`$x`, `$env:NAME`, `$_`, `$?`). */
export const PWSH_NAME = /[A-Za-z0-9_:?]/;

/** For each `(` of `line`, the index of the `)` closing it, counted without regard to quotes; -1 when none. */
function pairedParens(line: string): Int32Array {
  const closes = new Int32Array(line.length).fill(-1);
  const open: number[] = [];
  for (let i = 0; i < line.length; i += 1) {
    if (line[i] === "(") open.push(i);
    else if (line[i] === ")" && open.length > 0) closes[open.pop() as number] = i;
  }
  return closes;
}

export function pwshQuotes(line: string): PwshQuotes {
  const n = line.length;
  const close = new Int32Array(n + 2).fill(-1);
  const expands = new Uint8Array(n + 2);
  const literal = new Uint8Array(n + 2);
  // Where a `${…}` from here ends (its `}`, escapes read), and where a `$name` from here ends.
  const brace = new Int32Array(n + 2).fill(-1);
  const nameEnd = new Int32Array(n + 2).fill(n);
  const parens = pairedParens(line);
  for (let p = n - 1; p >= 0; p--) {
    const c = line[p] as string;
    nameEnd[p] = PWSH_NAME.test(c) ? (nameEnd[p + 1] as number) : p;
    const skip = c === "`" || (c === '"' && line[p + 1] === '"') ? 2 : 1;
    if (c === '"' && skip === 1) {
      close[p] = p;
      continue;
    }
    close[p] = close[p + skip] as number;
    brace[p] = c === "}" ? p : (brace[p + skip] as number);
    const next = line[p + 1] ?? "";
    const live = c === "$" && EXPANDS.test(next);
    expands[p] = live ? 1 : (expands[p + skip] as number);
    if (!live) {
      literal[p] = skip === 2 || !SPACE.test(c) ? 1 : (literal[p + 1] as number);
      continue;
    }
    // A run-time part is skipped whole; an unclosed one counts as written text (hidden, never kept).
    const ends = next === "(" ? (parens[p + 1] as number) : next === "{" ? (brace[p + 1] as number) : -2;
    // A `$(…)` is code of its own: a "…" inside it (`"ab$(a "$(b …)")"`) does not close the string.
    if (next === "(" && ends >= 0) close[p] = close[ends + 1] as number;
    const after = ends === -2 ? (PWSH_NAME.test(next) ? (nameEnd[p + 1] as number) : p + 2) : ends + 1;
    literal[p] = ends === -1 ? 1 : after > (close[p] as number) ? 0 : (literal[after] as number);
  }
  return { close, expands, literal };
}

/** What a PowerShell "…" string's text says: each backtick's character as itself, `""` as one quote. */
const PWSH_DOUBLE_ESCAPE = /`([\s\S])|""/g;

/**
 * PowerShell's `$env:NAME='value'` or `$env:NAME="value"` (or `$env:NAME = 'value'`) under a
 * telling name, read as PowerShell reads its quotes (r46 N2): in '…', `''` is one quote and nothing
 * is expanded; in "…", a backtick escapes the character after it (`` `$ ``, `` `` ``, `` `" ``), `""`
 * is one quote, and a value made only of unescaped `$name`, `$(…)` or `${…}` parts is read at run
 * time (no secret), while written text beside such a part makes the whole value the secret. The text
 * between its quotes as written (`it''s-secret-9x`, ``abc`$def``), `[start, end)` in `line`, and
 * `NAME`: that text is replaced where it stands, the quotes kept, and names its reference, so
 * filling it back gives the original bytes. Undefined for any other word, an empty value, or one
 * that reads as a reference or a variable (`'${API_KEY}'`, `"$token"`).
 */
export function pwshQuotedValue(
  line: string,
  word: CommandWord,
  previous: CommandWord | undefined,
  twoBefore: CommandWord | undefined,
  quotes: () => PwshQuotes,
): { start: number; end: number; name: string } | undefined {
  const written = line.slice(word.start, word.end);
  const env = PWSH_ENV.exec(written);
  const spaced = previous?.value === "=" && twoBefore ? PWSH_ENV.exec(twoBefore.value) : null;
  const [open, name] =
    env?.[2] === "=" ? [env[0].length, env[1] ?? ""] : spaced?.[2] === "" ? [0, spaced[1] ?? ""] : [0, ""];
  if (!wholeNameTells(name)) return undefined;
  const start = word.start + open + 1;
  if (line[start - 1] === '"') {
    // A shell reads a backtick as a substitution, so the word may end elsewhere: read the line.
    const { close, expands, literal } = quotes();
    const end = close[start] as number;
    if (end <= start || !/^(?:$|[\s;|&)}])/.test(line.slice(end + 1, end + 2))) return undefined;
    // Written text beside a run-time part is the secret, so the value is hidden whole (r49 F4).
    if (expands[start] === 1) return literal[start] === 1 ? { start, end, name } : undefined;
    const says = line.slice(start, end).replace(PWSH_DOUBLE_ESCAPE, (_, escaped?: string) => escaped ?? '"');
    return isLiteral(says) ? { start, end, name } : undefined;
  }
  const quoted = /^'((?:[^']|'')+)'$/.exec(written.slice(open));
  const inner = quoted?.[1] ?? "";
  if (inner === "" || !plainLiteral(inner.replace(/''/g, "'"))) return undefined;
  return { start, end: start + inner.length, name };
}
