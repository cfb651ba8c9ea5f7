// An agent spec document loaded from the page: validated with `parseSpec` (every warning kept with its
// path, so the page can show it beside the field), resolved with `resolveAgentSpec` over the
// playground's own settings, and turned into the loop config and system prompt of the next runs.
import type { LoopConfig } from "@loopwright/loop";
import {
  findSpecSecrets,
  looksLikeKey,
  looksSecretName,
  parseSpec,
  resolveAgentSpec,
  type SecretHide,
  SPEC_TOKEN,
  withoutArgSecrets,
  withoutCommandLineSecrets,
  withoutProseSecrets,
  withoutSecrets,
} from "@loopwright/spec";

/** One leaf of the loaded document, as the page lists it. */
export interface SpecField {
  path: string;
  /**
   * The value as JSON, cut to 120 characters; {@link HIDDEN} where it may be a credential; a
   * shell's own command spec reports as JSON with its secrets' values as references, then
   * {@link SHELL_MARK}.
   */
  value: string;
}

/** A reported script as the page shows it: the value read at its path, and the text shown for it. */
interface ShownShell {
  value: string;
  shown: string;
  /** `shown` is a note said in place of the value (not the value rewritten): shown as it is, not quoted. */
  note?: true;
}

/** What the page is shown in place of a value that may be a credential. */
export const HIDDEN = "(hidden: may be a credential)";

/** How the page hides a value it shows a command around: {@link HIDDEN}, in place. */
const hideInView: SecretHide = () => HIDDEN;

/**
 * What is shown after a shell's own command (the argument after `sh -c`, `bash -lc`, `cmd /c`,
 * `pwsh -Command`, …) that spec reports as one that may hold a credential. The command itself is
 * shown, its secrets' values hidden where they are written: what the reader found may not be all.
 */
export const SHELL_MARK = "(may hold a credential: read the file)";

/** The names spec gives a shell's own command it replaces whole (`SHELL_COMMAND`, `SHELL_COMMAND_2`, …). */
const SHELL_COMMAND_NAME = /^SHELL_COMMAND(?:_\d+)?$/;

/**
 * The words of a server's `command` as spec reads them before its args to decide which argument
 * is a program's own command (`node -e …`, `ssh host …`, `pwsh -Command …`): the command itself,
 * or, when it holds whitespace (a pasted `npx -y pkg`), its words split as a shell splits them
 * (quotes read; an unclosed quote runs to the end). Never throws.
 */
export function commandLead(command: string | undefined): string[] {
  if (command === undefined) return [];
  if (!/\s/.test(command)) return [command];
  const words: string[] = [];
  let word = "";
  let quote = "";
  let started = false;
  for (const ch of command) {
    if (quote !== "") {
      if (ch === quote) quote = "";
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      started = true;
    } else if (/\s/.test(ch)) {
      if (started) words.push(word);
      word = "";
      started = false;
    } else {
      word += ch;
      started = true;
    }
  }
  if (started) words.push(word);
  return words;
}

/**
 * A server's `args` as spec's `withoutArgSecrets` shows them, read with the words of its
 * `command` before them ({@link commandLead}), so a program's text and ssh's remote command are
 * known by their program as `findSpecSecrets` knows them (`node -e`, `ssh box …`, `pwsh -Com`),
 * not only a shell's by its flag; one for one with `args`. Never throws.
 */
export function withoutServerArgSecrets(
  command: string | undefined,
  args: readonly string[],
  hide?: SecretHide,
): string[] {
  const lead = commandLead(command);
  return withoutArgSecrets([...lead, ...args], hide).slice(lead.length);
}

/** A reported script's place in its argument: what is written before it (`-c`, `--eval=`, or nothing), and the script. */
export interface ReportedScript {
  prefix: string;
  script: string;
}

/**
 * Which of `args` hold a shell's own command or a program's text that spec reports
 * (`findSpecSecrets` points at it), read with `command`'s words before them
 * ({@link withoutServerArgSecrets}): those spec's `withoutArgSecrets` replaces whole rather than
 * rewrites inside (exportSpec writes such a command as one `${<SERVER>_COMMAND}` reference). Told
 * apart by what `hide` is asked to hide under a `SHELL_COMMAND` name: the whole argument, or the part
 * after a flag written tight to it (`-cCODE`, `--eval=CODE`, `/cCMD`, `-Command:CMD`), kept as
 * `prefix`. Never throws.
 */
export function reportedShellScripts(args: readonly string[], command?: string): Map<number, ReportedScript> {
  const whole = new Map<string, string>();
  const out = withoutServerArgSecrets(command, args, (secret, name) => {
    if (name === undefined || !SHELL_COMMAND_NAME.test(name)) return "";
    // A mark no argument can be (arguments never hold NUL on any platform).
    const mark = `\u0000${whole.size}\u0000`;
    whole.set(mark, secret);
    return mark;
  });
  const found = new Map<number, ReportedScript>();
  out.forEach((arg, index) => {
    const written = args[index];
    if (written === undefined) return;
    const mark = [...whole.keys()].find((m) => arg.endsWith(m));
    const script = mark === undefined ? undefined : whole.get(mark);
    if (mark === undefined || script === undefined) return;
    const prefix = arg.slice(0, arg.length - mark.length);
    if (!prefix.includes("\u0000") && prefix + script === written) found.set(index, { prefix, script });
  });
  return found;
}

/** The indexes {@link reportedShellScripts} finds. Never throws. */
export function reportedShellCommands(args: readonly string[], command?: string): Set<number> {
  return new Set(reportedShellScripts(args, command).keys());
}

/**
 * The runs of reported arguments that are one command given as several words (ssh's remote
 * command, `ssh box srv --token X`): consecutive indexes each reported whole (no prefix), as
 * `[first, last]` pairs, longest first kept; a single reported argument is a run of one.
 */
export function reportedRuns(found: ReadonlyMap<number, ReportedScript>): [number, number][] {
  const runs: [number, number][] = [];
  for (const index of [...found.keys()].sort((a, b) => a - b)) {
    const last = runs[runs.length - 1];
    if (last && last[1] === index - 1 && found.get(index)?.prefix === "" && found.get(last[0])?.prefix === "")
      last[1] = index;
    else runs.push([index, index]);
  }
  return runs;
}

/** A `$NAME`, `$1`, `$$` (or `$?`, `$#`, `$*`, `$@`, `$!`, `$-`) at `lastIndex`, past its `$`. Sticky. */
const PARAMETER = /[A-Za-z_][A-Za-z0-9_]*|[0-9$!?#*@-]/y;

/**
 * Where the `quote` closing a quote opened before `from` stands, or -1 when none does; a backslash
 * escapes the next character unless the quote is '…' (`escapes` false).
 */
function quoteClose(text: string, from: number, quote: string, escapes = quote !== "'"): number {
  for (let i = from; i < text.length; i++) {
    if (text[i] === "\\" && escapes) i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}

/**
 * Where a `$(…)`, `$[…]` or `${…}` whose bracket is at `open` ends (past its closing bracket, quotes
 * and nested brackets inside read), or -1 when it is left open.
 */
function substitutionEnd(text: string, open: number): number {
  const [opener, closer] = text[open] === "(" ? ["(", ")"] : text[open] === "{" ? ["{", "}"] : ["[", "]"];
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "\\") i++;
    else if (c === "'" || c === '"' || c === "`") {
      i = quoteClose(text, i + 1, c);
      if (i < 0) return -1;
    } else if (c === opener) depth++;
    else if (c === closer && --depth === 0) return i + 1;
  }
  return -1;
}

/** A `${NAME`, `${#NAME`, `${1`, `${NAME[i]` at `lastIndex`, then the operator after it, if any. Sticky. */
const BRACED =
  /\$\{[#!]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[[^\]]*\])?(?::?[-=+?]|##?|%%?|\/[/#%]?|\^\^?|,,?|:|@)?/y;

/**
 * The text a shell reads at run time in `text`, read as a command line: each `$NAME`, `$1`, `$$`
 * (and `$?`, `$#`, …), closed `$(…)`, `$[…]` and backtick, `[start, end)` in order; none inside
 * '…' or `$'…'`, where a `$` is literal. A `${NAME}` is one part; in any other `${…}` the name and
 * its operator (`${X:-`, `${X:+`, `${X/`) are one part and the closing `}` another, and what is
 * written between them is read as text of its own: literal text (a default, a pattern, a
 * replacement) with any run-time part in it. A substitution, a `${…}` or a quote left open, and all
 * after it, are left to spec's reader. Never throws.
 */
function runTimeParts(text: string): { start: number; end: number }[] {
  const parts: { start: number; end: number }[] = [];
  // The `}` of each open `${…}` being read, innermost last.
  const closes: number[] = [];
  let double = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const next = text[i + 1];
    if (i === closes[closes.length - 1]) {
      closes.pop();
      parts.push({ start: i, end: i + 1 });
    } else if (c === "\\") i++;
    else if (c === '"') double = !double;
    else if ((c === "'" && !double) || (c === "$" && next === "'" && !double)) {
      const close = quoteClose(text, c === "$" ? i + 2 : i + 1, "'", c === "$");
      if (close < 0) break;
      i = close;
    } else if (c === "`" || (c === "$" && (next === "(" || next === "["))) {
      const end = c === "`" ? quoteClose(text, i + 1, "`") + 1 : substitutionEnd(text, i + 1);
      // Left open: the reader reads the rest itself (read again), so nothing after it stands in.
      if (end <= 0) break;
      parts.push({ start: i, end });
      i = end - 1;
    } else if (c === "$" && next === "{") {
      BRACED.lastIndex = i;
      if (!BRACED.test(text)) continue;
      const head = BRACED.lastIndex;
      const close = substitutionEnd(text, i + 1) - 1;
      if (close < 0) break;
      if (close === head) {
        parts.push({ start: i, end: close + 1 });
        i = close;
      } else {
        parts.push({ start: i, end: head });
        closes.push(close);
        i = head - 1;
      }
    } else if (c === "$") {
      PARAMETER.lastIndex = i + 1;
      if (PARAMETER.test(text)) {
        parts.push({ start: i, end: PARAMETER.lastIndex });
        i = PARAMETER.lastIndex - 1;
      }
    }
  }
  return parts;
}

/**
 * A run-time part as it may be shown, read alone as a command line by spec's reader (a `$(…)`'s own
 * values hidden); a backtick's command is read inside its backticks.
 */
function shownAlone(part: string, hide: SecretHide): string {
  if (part.length >= 2 && part.startsWith("`") && part.endsWith("`"))
    return `\`${withoutCommandLineSecrets(part.slice(1, -1), hide)}\``;
  return withoutCommandLineSecrets(part, hide);
}

/**
 * `text` (a value found, its run-time parts standing in as `mark`s) as it may be shown: each mark
 * kept, and each stretch of literal text around or between them hidden in place by `hide` — with
 * `quotes`, a `'`, `"` or `$'` kept as written (a `\` and the character after it are literal text),
 * so the line shown is still the command the shell runs, a payload in it visible. `text` itself when
 * it has no literal text (only run-time text, `$(cat f)`, `"$TOKEN"`).
 */
function literalHidden(
  text: string,
  mark: RegExp,
  hide: (literal: string) => string,
  quotes: boolean,
): string {
  const parts = [...text.matchAll(mark)].map((found) => ({
    start: found.index,
    end: found.index + found[0].length,
  }));
  let out = "";
  let literal = "";
  const flush = () => {
    if (literal !== "") out += hide(literal);
    literal = "";
  };
  let part = 0;
  for (let i = 0; i < text.length; i++) {
    const at = parts[part];
    if (at !== undefined && at.start === i) {
      flush();
      out += text.slice(at.start, at.end);
      part++;
      i = at.end - 1;
    } else if (quotes && (text[i] === "'" || text[i] === '"' || text.startsWith("$'", i))) {
      flush();
      out += text[i] === "$" ? "$'" : text[i];
      if (text[i] === "$") i++;
    } else if (quotes && text[i] === "\\") {
      literal += text.slice(i, i + 2);
      i++;
    } else literal += text[i];
  }
  flush();
  return out;
}

/**
 * A remote word as read before the line is: a word that is JSON (an object or a list) with its
 * telling keys' string values hidden inside their quotes (spec's `withoutArgSecrets`): the literal
 * text of a value hidden, each run-time part in it (`$(…)`, `$TOKEN`, a backtick) shown as read
 * alone, so a value that is only run-time text is kept; never hidden whole. Any other word as written.
 */
function jsonWord(word: string, hide: SecretHide): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(word);
  } catch {
    return word;
  }
  if (parsed === null || typeof parsed !== "object") return word;
  // Each run-time part stands in as `U+E000 k U+E000` while the word is read, so spec's reader reads
  // the literal text of a `${X:+…}` as text; a word holding U+E000 itself is read as written.
  const parts = word.includes(PART_EDGE) ? [] : runTimeParts(word);
  let masked = "";
  let kept = 0;
  parts.forEach((part, index) => {
    masked += `${word.slice(kept, part.start)}${PART_EDGE}${index}${PART_EDGE}`;
    kept = part.end;
  });
  masked += word.slice(kept);
  const shownPart = (index: string | number) => {
    const part = parts[Number(index)];
    return part ? shownAlone(word.slice(part.start, part.end), hide) : "";
  };
  const shownValue: SecretHide = (secret, name) =>
    secret.replace(PART_MARK, "") === secret
      ? hide(secret, name)
      : literalHidden(secret, PART_MARK, (literal) => hide(literal, name), false);
  const out = withoutArgSecrets([masked], shownValue)[0] ?? masked;
  return out.replace(PART_MARK, (_, index: string) => shownPart(index));
}

/** The edge of a run-time part standing in while a JSON word is read (a private-use character). */
const PART_EDGE = "\uE000";

/** A run-time part standing in while a JSON word is read: `U+E000 k U+E000`. */
const PART_MARK = /\uE000(\d+)\uE000/g;

/**
 * Where each of `values` (values spec's reader found in `line`, in order, as it gives them: quotes
 * read, a backslash's character alone, an escaped `'` as `'\''`) is written in `line`: `[start, end)`, the quotes and
 * backslashes just around it included; undefined for one not found in a single word as the shell
 * reads it. Never throws.
 */
function writtenSpans(
  line: string,
  values: readonly string[],
): ({ start: number; end: number } | undefined)[] {
  // The line's words as the shell reads them: each character read, and where it is written.
  const words: { read: string; at: number[]; start: number; end: number }[] = [];
  let word: { read: string; at: number[]; start: number; end: number } | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (/\s/.test(c)) {
      if (word) words.push({ ...word, end: i });
      word = undefined;
      continue;
    }
    const into = word ?? { read: "", at: [], start: i, end: i };
    word = into;
    const add = (j: number) => {
      into.read += line[j] ?? "";
      into.at.push(j);
    };
    if (c === "\\") {
      if (++i < line.length) add(i);
    } else if (c === "'" || c === '"') {
      const close = quoteClose(line, i + 1, c);
      const end = close < 0 ? line.length : close;
      for (let j = i + 1; j < end; j++) {
        if (c === '"' && line[j] === "\\" && /[$`"\\\n]/.test(line[j + 1] ?? "")) j++;
        add(j);
      }
      i = end;
    } else add(i);
  }
  if (word) words.push({ ...word, end: line.length });
  // The values come in order and the cursor only moves forward, so the first word with a character
  // at or past it, and that character, are kept and only moved forward (each value does not rescan
  // every word before it).
  let cursor = 0;
  let onWord = 0;
  let onChar = 0;
  return values.map((given) => {
    // The reader gives a `\'` written outside quotes as `'\''`.
    const value = given.replaceAll("'\\''", "'");
    if (value === "") return undefined;
    for (; onWord < words.length; onWord++, onChar = 0) {
      const { at } = words[onWord] as { at: number[] };
      while (onChar < at.length && (at[onChar] as number) < cursor) onChar++;
      if (onChar < at.length) break;
    }
    for (let w = onWord; w < words.length; w++) {
      const { read, at, start, end } = words[w] as (typeof words)[number];
      // A later word is all past the cursor (a word with no character read is never searched).
      const from = w === onWord ? onChar : at.length > 0 ? 0 : -1;
      const index = from < 0 ? -1 : read.indexOf(value, from);
      if (index < 0) continue;
      const first = index === 0 ? start : (at[index - 1] as number) + 1;
      const last = index + value.length === read.length ? end : (at[index + value.length] as number);
      cursor = last;
      return { start: first, end: last };
    }
    return undefined;
  });
}

/**
 * Whether a word's end (each of `bounds`, in order) lies in one of `places` before its end: a
 * value written across the space after a word. One pass over the places sorted by start and the
 * ends.
 */
function acrossBounds(
  places: readonly ({ start: number; end: number } | undefined)[],
  bounds: readonly { end: number }[],
): boolean {
  const sorted = places
    .filter((place): place is { start: number; end: number } => place !== undefined)
    .sort((a, b) => a.start - b.start);
  let bound = 0;
  for (const { start, end } of sorted) {
    while (bound < bounds.length && (bounds[bound] as { end: number }).end < start) bound++;
    if (bound === bounds.length) return false;
    if ((bounds[bound] as { end: number }).end < end) return true;
  }
  return false;
}

/**
 * The marks put in the line while it is read, `NUL digits NUL` for a value the reader found,
 * `NUL t digits NUL` for a run-time part standing in as literal text and `NUL v digits NUL` for a
 * value already shown in place (no argument holds NUL).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the mark's edge, as no argument holds one.
const MARK = /\u0000([tv]?)(\d+)\u0000/g;

/**
 * ssh's remote command given as words, as it may be shown: the words joined with spaces (the one
 * line ssh sends) and read once by spec's `withoutCommandLineSecrets`, each value it finds replaced
 * by `hide(secret, name)` where it is written (a JSON word's telling values inside their quotes too),
 * every other byte kept. The reader keeps whole a value written with run-time text in it (`$PW`,
 * `$(…)`, a backtick), so the line is read with each run-time part ({@link runTimeParts}) standing in
 * as literal text: in a value found, the literal text around and between its run-time parts is hidden
 * in place and each part is shown as the reader shows it read alone (`--token (hidden)$(curl …|sh)`,
 * `TOKEN=$X'(hidden)'`: a payload stays in view, the quotes as written, a `$(…)`'s own values
 * hidden); a value that is only run-time text (`TOKEN=$(cat f)`, `"$TOKEN"`) is kept as written, and
 * one with no run-time part is hidden whole by `hide`. A value whose place cannot be found is shown
 * as the reader gives it, its literal text hidden the same way (its quotes may be read). A JSON
 * word's values are read the same way ({@link jsonWord}).
 * `words`: the words rewritten, one for one, when each value found lies inside one
 * word as written there; otherwise `line`: the joined line with its values replaced (never a word or
 * a span hidden because the reading could not be placed). Never throws.
 */
export function shownRemoteWords(
  words: readonly string[],
  hide: SecretHide,
): { words: string[]; line?: undefined } | { line: string; words?: undefined } {
  const read = words.map((word) => jsonWord(word, hide));
  const joined = read.join(" ");
  const parts = runTimeParts(joined);
  const runTime = parts.map((part) => joined.slice(part.start, part.end));
  const shownRunTime = runTime.map((text) => shownAlone(text, hide));
  // `joined` from `from` to `to` with each run-time part in it standing in; undefined when a part
  // runs across either end (a `$(…)` written over two words).
  let next = 0;
  const standIn = (from: number, to: number): string | undefined => {
    let text = "";
    let kept = from;
    for (; next < parts.length && (parts[next] as { start: number }).start < to; next++) {
      const part = parts[next] as { start: number; end: number };
      if (part.start < from || part.end > to) return undefined;
      text += `${joined.slice(kept, part.start)}\u0000t${next}\u0000`;
      kept = part.end;
    }
    return text + joined.slice(kept, to);
  };
  let masked: string[] = [];
  let from = 0;
  for (const word of read) {
    const text = standIn(from, from + word.length);
    if (text === undefined) break;
    masked.push(text);
    from += word.length + 1;
  }
  let byWord = masked.length === read.length;
  next = 0;
  let line = byWord ? masked.join(" ") : (standIn(0, joined.length) as string);
  // What a value with literal text around its run-time parts is shown as, standing in as `NUL v k NUL`.
  const inPlace: string[] = [];
  const unmask = (text: string) =>
    text.replace(
      MARK,
      (mark, kind: string, index: string) =>
        (kind === "t" ? shownRunTime : kind === "v" ? inPlace : [])[Number(index)] ?? mark,
    );
  // A value's literal text hidden in place, each mark in it kept.
  const literalOf = (text: string, name: string | undefined) =>
    literalHidden(text, MARK, (literal) => hide(literal, name), true);
  // The reader gives a value with its quotes read: each value with both run-time parts and literal
  // text in it is found where it is written and shown there (`$X'(hidden)'`), its quotes kept.
  const mixed: { secret: string; name: string | undefined }[] = [];
  withoutCommandLineSecrets(line, (secret, name) => {
    if (secret.replace(MARK, "") !== secret && literalOf(secret, name) !== secret)
      mixed.push({ secret, name });
    return secret;
  });
  if (mixed.length > 0) {
    const places = writtenSpans(
      line,
      mixed.map((value) => value.secret),
    );
    const bounds: { start: number; end: number; text: string; kept: number }[] = [];
    let start = 0;
    for (const word of byWord ? masked : [line]) {
      bounds.push({ start, end: start + word.length, text: "", kept: start });
      start += word.length + 1;
    }
    // A value across a space between two words (an escaped space) is shown in the line read whole.
    if (acrossBounds(places, bounds)) {
      byWord = false;
      bounds.splice(0, bounds.length, { start: 0, end: line.length, text: "", kept: 0 });
    }
    let word = 0;
    places.forEach((place, k) => {
      const value = mixed[k];
      if (place === undefined || value === undefined) return;
      while (word < bounds.length && (bounds[word] as { end: number }).end <= place.start) word++;
      const into = bounds[word];
      if (into === undefined || place.start < into.kept || place.end > into.end) return;
      into.text += `${line.slice(into.kept, place.start)}\u0000v${inPlace.length}\u0000`;
      inPlace.push(unmask(literalOf(line.slice(place.start, place.end), value.name)));
      into.kept = place.end;
    });
    const rewritten = bounds.map((into) => into.text + line.slice(into.kept, into.end));
    if (byWord) masked = rewritten;
    line = rewritten.join(" ");
  }
  // What a value found is shown as: its literal text hidden, each run-time part shown as read alone.
  const shownValue: SecretHide = (secret, name) =>
    secret.replace(MARK, "") === secret ? hide(secret, name) : literalOf(secret, name);
  const unplaced = { line: unmask(withoutCommandLineSecrets(line, shownValue)) };
  if (!byWord) return unplaced;
  const found: { secret: string; name: string | undefined }[] = [];
  const out = withoutCommandLineSecrets(line, (secret, name) => {
    found.push({ secret, name });
    return `\u0000${found.length - 1}\u0000`;
  });
  // Place each value in the line: the output is the line with values replaced in place (a value
  // rewritten otherwise, as an escaped space requoted, is not placed).
  const spans: { start: number; end: number; text: string }[] = [];
  let at = 0;
  let last = 0;
  for (const mark of out.matchAll(MARK)) {
    if (mark[1] !== "") continue;
    const before = out.slice(last, mark.index);
    const value = found[Number(mark[2])];
    if (value === undefined || line.slice(at, at + before.length) !== before) return unplaced;
    at += before.length;
    if (line.slice(at, at + value.secret.length) !== value.secret) return unplaced;
    spans.push({ start: at, end: at + value.secret.length, text: shownValue(value.secret, value.name) });
    at += value.secret.length;
    last = mark.index + mark[0].length;
  }
  if (line.slice(at) !== out.slice(last)) return unplaced;
  const shown: string[] = [];
  let wordStart = 0;
  let span = 0;
  for (const word of masked) {
    const wordEnd = wordStart + word.length;
    let text = "";
    let kept = wordStart;
    for (; span < spans.length && (spans[span] as { start: number }).start <= wordEnd; span++) {
      const value = spans[span] as { start: number; end: number; text: string };
      // A value across a space between two words cannot be shown word by word.
      if (value.start < wordStart || value.end > wordEnd) return unplaced;
      text += line.slice(kept, value.start) + value.text;
      kept = value.end;
    }
    shown.push(unmask(text + line.slice(kept, wordEnd)));
    wordStart = wordEnd + 1;
  }
  return span === spans.length ? { words: shown } : unplaced;
}

/**
 * A server's `args` as they may be shown with {@link SHELL_MARK}s, each reported script shown in
 * place (`prefix` + {@link shownShellCommand}) and a run of reported words shown as one command
 * line read whole, then one mark; every other argument as `safe` has it. Each entry is one
 * word of the shown line, not yet escaped, with `mark` set on those that stand for a mark.
 */
export function shownServerArgs(
  args: readonly string[],
  command: string | undefined,
  safe: readonly string[],
  hide?: SecretHide,
): { text: string; mark?: true }[] {
  const found = reportedShellScripts(args, command);
  const runs = new Map(reportedRuns(found).map(([a, b]) => [a, b]));
  const out: { text: string; mark?: true }[] = [];
  for (let index = 0; index < args.length; index++) {
    const end = runs.get(index);
    const script = found.get(index);
    if (end === undefined || script === undefined) {
      out.push({ text: safe[index] ?? "" });
      continue;
    }
    // A run of words is the one line ssh sends, read once (a JSON word's values inside it too).
    const remote = end > index ? shownRemoteWords(args.slice(index, end + 1), hide ?? hideInView) : undefined;
    const line = remote
      ? (remote.line ?? remote.words.join(" "))
      : script.prefix + shownShellCommand(script.script, hide);
    out.push({ text: line }, { text: SHELL_MARK, mark: true });
    index = end;
  }
  return out;
}

/**
 * A shell's own command as it may be shown (never run, never exported): spec's
 * `withoutCommandLineSecrets`, the command read in place as a command line, each secret's value
 * the reader finds replaced where it is written — by a `${NAME}` reference, or what `hide`
 * returns — and every other character kept as written (quotes, operators, comments, heredocs, the
 * payload around it); a URL's credentials and each key shape too. This is not the export's rule
 * (spec replaces such a command whole when it may hold a credential, so the export keeps every
 * script the same command): shown whole, a command spec reports is shown with {@link SHELL_MARK}
 * after it, since what the reader found may not be all.
 */
export function shownShellCommand(script: string, hide?: SecretHide): string {
  return withoutCommandLineSecrets(script, hide);
}

/**
 * A URL as the page or the terminal may show it: without `user:password@`, query or fragment (a
 * `redis://` URL too, whose `origin` the URL parser calls "null").
 */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.username || parsed.password || parsed.search || parsed.hash
      ? `${parsed.protocol}//${parsed.host}${parsed.pathname}`
      : url;
  } catch {
    return url;
  }
}

/**
 * A URL written in a text: a run of scheme characters, `://`, and what follows up to whitespace, a
 * quote or an angle bracket. The match starts only where a run of scheme characters starts (not
 * again inside the run, which would rescan it from each of its characters: quadratic on a long
 * word); digits and `+.-` before the run's first letter are not the scheme's (`-http://…`).
 */
const URL_IN_TEXT = /(?<![A-Za-z0-9+.-])[A-Za-z0-9+.-]*:\/\/[^\s"'`<>]+/g;

/** Characters that end a sentence or close a bracket after a URL, rather than belong to it. */
const TRAILING = new Set([...").,;:!?]}"]);

/**
 * A URL the URL parser refuses (`http://me:pa#ss@host/`, `http://${HOST}:${PORT}/v1`), cut as
 * written: without what comes before its last `@` (the userinfo, unless that `@` follows a path,
 * as in `http://${HOST}:${PORT}/@scope/pkg`) and without a query or fragment.
 */
function shownLooseUrl(url: string): string {
  const start = url.indexOf("//") + 2;
  let rest = url.slice(start);
  const at = rest.lastIndexOf("@");
  const authority = /^[^/?#]*/.exec(rest)?.[0] ?? "";
  // `host:port/…@…`: the `@` is the path's (or the query's) when a port or a `${PORT}` to fill is
  // all that follows the colon before the path.
  const hostAndPort = /^[^:@]*(?::(?:\d|\$\{[^{}]*\})*)?$/.test(authority) && !authority.includes("@");
  if (at >= 0 && !hostAndPort) rest = rest.slice(at + 1);
  return url.slice(0, start) + rest.replace(/[?#][\s\S]*$/, "");
}

/**
 * A text as the page may show it: each URL in it, wherever it stands (the whole string, or inside
 * prose), without its `user:password@`, query and fragment ({@link shownUrl}; a URL the parser
 * refuses is cut as written), and each key-shaped part (spec's `looksLikeKey`, in a URL's path
 * too) as `${SECRET}` (spec's `withoutSecrets`). Punctuation that ends a sentence after a URL
 * without a query is kept.
 */
export function shownText(text: string): string {
  return withoutSecrets(withoutUrlCredentials(text));
}

function withoutUrlCredentials(text: string): string {
  return text.replace(URL_IN_TEXT, (match) => {
    const lead = /^[0-9+.-]*/.exec(match)?.[0] ?? "";
    const found = match.slice(lead.length);
    let end = found.length;
    while (end > 0 && TRAILING.has(found[end - 1] as string)) end -= 1;
    const [url, trail] = [found.slice(0, end), found.slice(end)];
    let parsed = true;
    try {
      new URL(url);
    } catch {
      parsed = false;
    }
    // Punctuation after a query or fragment may be its end: it goes with them.
    return lead + (parsed ? shownUrl(url) : shownLooseUrl(url)) + (/[?#]/.test(url) ? "" : trail);
  });
}

/** What the page is told about a loaded document. */
export interface SpecReport {
  /** The document's faults: when any, nothing was applied. */
  errors: string[];
  /** Fields dropped, each with its path (`model.temperature`) and the reason. */
  warnings: { path: string; message: string }[];
  /** Every leaf of the document as written, in order. */
  fields: SpecField[];
  /** What the next runs use, when the document was applied. */
  applied?: { name?: string; model: string; baseUrl?: string; system: boolean; maxToolIterations: number };
}

/** What a loaded spec changes for the next runs. */
export interface AppliedSpec {
  config: Partial<LoopConfig>;
  system?: string;
}

/**
 * Every leaf of the document. A string where a credential may be is hidden: a bundled server's
 * `env` and `headers` values, a value under a key named like one (spec's `looksSecretName`), a
 * key-shaped value (spec's `looksLikeKey`), each place `findSpecSecrets` points at (one that is a
 * URL is shown without its userinfo and query, unless a key shape is left in it). Every other
 * string, and every path (a key may be a URL too), is shown through {@link shownText}: a URL
 * anywhere in it loses its userinfo and query whether or not the place was flagged (`baseURL`, a
 * misspelt `baseUrl`, or a URL in the instructions' prose). A bundled server's shell command that
 * spec reports (`shells`, by path, with the value it read there) is shown, never hidden whole: its
 * secrets' values as references where they are written ({@link shownShellCommand}), then {@link SHELL_MARK}.
 */
function leaves(
  value: unknown,
  path: string,
  out: SpecField[],
  flagged: ReadonlySet<string>,
  shells: ReadonlyMap<string, ShownShell>,
  key = "",
  parent = "",
): SpecField[] {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [`${path}[${i}]`, v, key] as const)
      : Object.entries(value).map(([k, v]) => [path ? `${path}.${k}` : k, v, k] as const);
    if (entries.length === 0) out.push({ path: shownText(path), value: Array.isArray(value) ? "[]" : "{}" });
    for (const [p, v, k] of entries)
      leaves(v, p, out, flagged, shells, k, Array.isArray(value) ? parent : key);
    return out;
  }
  const shell = shells.get(path);
  if (typeof value === "string" && shell?.value === value) {
    // The payload is shown, so a telling word in it cannot blank what the server runs; the mark
    // after it (never cut off) says what the reader found may not be all.
    const text = shell.shown === HIDDEN || shell.note ? shell.shown : JSON.stringify(shownText(shell.shown));
    out.push({
      path: shownText(path),
      value: `${text.length > 120 ? `${text.slice(0, 120)}…` : text} ${SHELL_MARK}`,
    });
    return out;
  }
  if (
    typeof value === "string" &&
    flagged.has(path) &&
    /\s/.test(value) &&
    parent !== "env" &&
    parent !== "headers" &&
    !looksSecretName(key)
  ) {
    // Free text findSpecSecrets flagged (a prompt's prose, a description): shown as exportSpec
    // writes it, its secrets as references, unless something still reads as one.
    const shown = shownText(withoutProseSecrets(value));
    const clean = shown !== value && !looksLikeKey(shown) && withoutProseSecrets(shown) === shown;
    const text = JSON.stringify(shown);
    out.push({
      path: shownText(path),
      value: !clean ? HIDDEN : text.length > 120 ? `${text.slice(0, 120)}…` : text,
    });
    return out;
  }
  if (
    typeof value === "string" &&
    (parent === "env" ||
      parent === "headers" ||
      looksSecretName(key) ||
      looksLikeKey(value) ||
      flagged.has(path))
  ) {
    const shown = shownUrl(value);
    out.push({
      path: shownText(path),
      value: shown !== value && !looksLikeKey(shown) ? JSON.stringify(shown) : HIDDEN,
    });
    return out;
  }
  const text = JSON.stringify(typeof value === "string" ? shownText(value) : value) ?? String(value);
  out.push({ path: shownText(path), value: text.length > 120 ? `${text.slice(0, 120)}…` : text });
  return out;
}

/** How deep a loaded document may go (the format's deepest place is about six levels down). */
const MAX_DEPTH = 64;

/** Whether `value` has objects or lists nested more than `limit` deep; without recursion. */
function deeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (item === null || typeof item !== "object") continue;
    if (depth >= limit) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The paths `findSpecSecrets` points at, bundled servers included; and of those, each bundled
 * server's shell command spec reports ({@link reportedShellCommands}), with the value read there.
 */
function secretPaths(value: unknown): { flagged: Set<string>; shells: Map<string, ShownShell> } {
  const { spec } = parseSpec(value, { bundle: true });
  const shells = new Map<string, ShownShell>();
  try {
    const flagged = new Set(spec ? findSpecSecrets(spec).map((hint) => hint.path) : []);
    (spec?.bundle?.mcpServers ?? []).forEach((server, index) => {
      const args = server.args ?? [];
      const found = reportedShellScripts(args, server.command);
      for (const [first, last] of reportedRuns(found)) {
        // ssh's remote command given as words is read as the one line ssh sends: each word is
        // shown with the values that reading finds hidden where they are written, with the mark;
        // when a value cannot be placed in one word, the first word's entry shows the line.
        const words = args.slice(first, last + 1);
        const remote = last > first ? shownRemoteWords(words, hideInView) : undefined;
        let lineAt: number | undefined;
        words.forEach((word, k) => {
          const path = `bundle.mcpServers[${index}].args[${first + k}]`;
          const script = found.get(first + k);
          if (!flagged.has(path) || script === undefined) return;
          if (remote?.line !== undefined && lineAt !== undefined) {
            const shown = `(shown in args[${lineAt}]: ssh sends these words as one line)`;
            shells.set(path, { value: word, shown, note: true });
            return;
          }
          if (remote?.line !== undefined) lineAt = first + k;
          const shown = remote?.line ?? remote?.words[k] ?? script.prefix + shownShellCommand(script.script);
          shells.set(path, { value: word, shown });
        });
      }
    });
    return { flagged, shells };
  } catch {
    return { flagged: new Set(), shells };
  }
}

/**
 * What the client (`@loopwright/client`'s check of a base URL) refuses in a spec's endpoint URL, said
 * without its value: a user name or password, a query, a fragment. Undefined for a URL it takes (or
 * one that does not parse, which `parseSpec` has already reported).
 */
export function unusableBaseUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return undefined;
  }
  const parts = [
    ...(url.username || url.password ? ["a user name or password (user:secret@host)"] : []),
    ...(url.search !== "" ? ["a query (?…)"] : []),
    ...(url.hash !== "" ? ["a fragment (#…)"] : []),
  ];
  return parts.length > 0 ? parts.join(" and ") : undefined;
}

/**
 * Reads a document's text: JSON, then `parseSpec`, then `resolveAgentSpec` over `base` (the
 * playground's endpoint and model, the weakest layer). Never throws: a document that is not JSON or
 * not a spec comes back with `errors` and nothing applied.
 */
export function checkSpec(text: string, base: LoopConfig): { report: SpecReport; applied?: AppliedSpec } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the text around the fault, which may be a credential: say less.
    return {
      report: {
        errors: [
          "not JSON: the text does not parse as JSON (its parser's message is left out: it quotes the text).",
        ],
        warnings: [],
        fields: [],
      },
    };
  }
  // Every reader after this one walks the document recursively: a deep one is refused by name here.
  if (deeperThan(value, MAX_DEPTH)) {
    return {
      report: {
        errors: [
          `too deeply nested: the document goes more than ${MAX_DEPTH} levels deep, and an agent spec is a few levels deep.`,
        ],
        warnings: [],
        fields: [],
      },
    };
  }
  const { flagged, shells } = secretPaths(value);
  const fields = leaves(value, "", [], flagged, shells);
  const { spec, errors, warnings } = parseSpec(value);
  // A fault or warning may quote a key or a value of the document: its URLs are shown as a field's are.
  const report: SpecReport = {
    errors: errors.map((e) => shownText(String(e))),
    warnings: warnings.map((w) => ({ path: shownText(w.path), message: shownText(w.message) })),
    fields,
  };
  if (!spec) return { report };
  const settings = {
    spec: SPEC_TOKEN,
    model: { name: base.model, endpoint: { baseUrl: base.baseUrl } },
    limits: { maxToolIterations: base.maxToolIterations ?? 8 },
  };
  const resolved = resolveAgentSpec([settings, spec]);
  const config: Partial<LoopConfig> = {
    model: resolved.model,
    maxToolIterations: resolved.maxToolIterations,
  };
  // The playground's own endpoint and its key stay unless the document names another endpoint,
  // which is sent no key: the host's key belongs to the endpoint it was given for, never to a URL
  // a pasted document chose.
  if (resolved.baseUrl && resolved.baseUrl !== base.baseUrl) {
    // A URL the client refuses for every request is refused here, where the page shows the spec's
    // errors: before, it was reported applied — shown without its userinfo and query, so nothing on
    // the page said what was wrong — and every run after failed at once.
    const unusable = unusableBaseUrl(resolved.baseUrl);
    if (unusable) {
      report.errors.push(
        `model.endpoint.baseUrl carries ${unusable}, which the client refuses (a network error would print it): no run could use it. Give the URL without it; the playground sends an endpoint a spec names no key.`,
      );
      return { report };
    }
    config.baseUrl = resolved.baseUrl;
    config.apiKey = "";
  }
  for (const key of ["temperature", "maxTokens", "reasoningEffort", "contextLength", "maxRetries"] as const) {
    if (resolved[key] !== undefined) Object.assign(config, { [key]: resolved[key] });
  }
  const system = resolved.prompt.map((p) => p.text).join("\n\n") || undefined;
  report.applied = {
    ...(resolved.name ? { name: shownText(resolved.name) } : {}),
    model: shownText(resolved.model),
    ...(config.baseUrl ? { baseUrl: shownText(config.baseUrl) } : {}),
    system: system !== undefined,
    maxToolIterations: resolved.maxToolIterations,
  };
  return { report, applied: { config, ...(system ? { system } : {}) } };
}
