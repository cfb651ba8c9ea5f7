// A YAML, JSON, `.env`, TOML or INI document given as one value (a whole config file in one env
// variable or `extraBody` string), read a line at a time for what a credential-like name holds:
// a one-line pair, a block scalar's lines, a pair inside a one-line flow mapping. It reads the
// value as given, before the command-line reader reads what it wrote (see `namedValueSecrets`), so
// each credential is named once. Linear: each line is read once, and a flow mapping's text once.
import { KEPT_LINE, NO_VALUE } from "./find-spec-secrets.js";
import { numberTells } from "./json-args.js";
import { isLiteral, looksSecretName } from "./secret-signs.js";
import { wholeNameTells } from "./shell-words.js";

/** What a credential found under `name` is written as (a reference, or what a caller's `hide` returns). */
export type DataWrite = (value: string, name: string) => string;

/**
 * A line starting with a name and its `:` or `=`: indentation, a list's `- ` and a `.env` line's
 * `export ` before it, the name bare or quoted, the blanks around the separator, then the rest.
 */
const KEY_LINE =
  /^([ \t]*(?:-[ \t]+)?(?:export[ \t]+)?)(?:"([A-Za-z_][\w.-]*)"|'([A-Za-z_][\w.-]*)'|([A-Za-z_][\w.-]*))([ \t]*)([:=])([ \t]*)(.*)$/;

/** What may end a value on its line: a JSON `,`, then a ` # comment`. */
const TAIL = /^,?(?:[ \t]+#.*)?[ \t]*$/;
const DOUBLE_QUOTED = /^"((?:[^"\\]|\\.)*)"/;
const SINGLE_QUOTED = /^'((?:[^']|'')*)'/;
/** A block scalar's header (`|`, `>-`, `|2`), perhaps with a comment after it. */
const BLOCK_HEADER = /^[|>][-+0-9]*(?:[ \t]+#.*)?[ \t]*$/;
/** A YAML anchor, alias or tag (`&a`, `*a`, `!secret db_password`: a name, no value of its own). */
const NOT_A_VALUE = /^[&*!]/;
/** A value that ends a sentence: prose ("Password: ask the user for it."), not a passphrase. */
const SENTENCE_END = /[.!?:]$/;

/**
 * Lines of a data document that are neither a pair nor a block's lines: blank, a comment, a
 * document marker, an INI or TOML section, brackets alone, a list item of one word, a quoted
 * string or a collection, a JSON array's string or number. A markdown bullet of several words
 * (`- Be kind.`) is none: a text holding one is prose. The trailing blanks go with a kind of line
 * (each starts with a mark): leading and trailing blanks both optional around nothing were tried
 * against each other, a line of blanks then a word costing its length squared (30 ms a line).
 */
const OTHER_DATA_LINE =
  /^[ \t]*(?:(?:(?:#|;|\/\/).*|---|\.\.\.|\[\[?[^[\]]*\]\]?|[[\]{}]+,?|-|-[ \t]+(?:[^\s"'{[]\S*|["'{[].*)|"(?:[^"\\]|\\.)*",?|-?\d[\d.eE+-]*,?)[ \t]*)?$/;

/** The leading blanks' count: a YAML line's indentation. */
const indentation = (line: string): number => /^[ \t]*/.exec(line)?.[0].length ?? 0;

/** An edit to a line: `[start, end)` of it, replaced by what `write` gives the value under `name`. */
interface Edit {
  start: number;
  end: number;
  name: string;
  value: string;
}

/**
 * True when `value`, written under `name`, is a credential to take out: a literal (not only
 * `${VAR}` references), no YAML word of no value (`null`, `true`, `~`, `<your key>`), no anchor,
 * alias or tag. One word or a quoted string under a name that tells by any word of it (`password`,
 * `api_key`); several bare words only under one whose last word names a credential (`secret`,
 * `API_KEY`, not `password_hint`) and not ending as a sentence does. `whole`: an assignment's
 * name (`.env`'s, TOML's), read as a shell reads one, by its last word (`KEY_ID=a1` says no key).
 */
function tells(name: string, value: string, quoted: boolean, whole = false): boolean {
  if (value === "" || NO_VALUE.test(value) || NOT_A_VALUE.test(value) || !isLiteral(value)) return false;
  if (whole && !wholeNameTells(name)) return false;
  if (quoted || !/\s/.test(value)) return looksSecretName(name);
  return wholeNameTells(name) && !SENTENCE_END.test(value);
}

/**
 * The pairs under a telling name in the flow collection (`{…}` or `[…]`) at `from` of `line`, each
 * value's `[start, end)` inside its quotes; a collection inside another read too (to a depth of
 * 32). `{user: bob, password: hunter2}`, `{"API_KEY": "X", "MODE": "y"}`. A plain value runs to the
 * next `,`, `}` or `]` (a `${…}` in it whole). Undefined when the text there is no collection
 * closed on this line; otherwise where it ends.
 */
function flowEdits(line: string, from: number, edits: Edit[], depth = 0): number | undefined {
  const close = line[from] === "{" ? "}" : "]";
  const mapping = close === "}";
  let i = from + 1;
  const blanks = () => {
    while (line[i] === " " || line[i] === "\t") i += 1;
  };
  /** A scalar at `i`: its text, where it starts and ends inside any quotes, and past it. */
  const scalar = (
    key: boolean,
  ): { text: string; start: number; end: number; quoted: boolean } | undefined => {
    const quote = line[i];
    if (quote === '"' || quote === "'") {
      // Sticky, from `i`: the quoted string's own characters, read once.
      const pattern = quote === '"' ? /"((?:[^"\\]|\\.)*)"/y : /'((?:[^']|'')*)'/y;
      pattern.lastIndex = i;
      const quoted = pattern.exec(line);
      if (!quoted) return undefined;
      const start = i + 1;
      i += quoted[0].length;
      return { text: quoted[1] as string, start, end: i - 1, quoted: true };
    }
    const start = i;
    while (i < line.length) {
      const c = line[i] as string;
      if (c === "$" && line[i + 1] === "{") {
        const end = line.indexOf("}", i + 2);
        if (end < 0) return undefined;
        i = end + 1;
        continue;
      }
      if (c === "," || c === close || c === "{" || c === "[" || c === "]" || c === "}") break;
      if (c === "#" && /[ \t]/.test(line[i - 1] ?? "")) return undefined;
      if (key && c === ":" && /[\s,}\]]/.test(line[i + 1] ?? " ")) break;
      i += 1;
    }
    let end = i;
    while (end > start && /[ \t]/.test(line[end - 1] as string)) end -= 1;
    return { text: line.slice(start, end), start, end, quoted: false };
  };
  /** A value at `i`: a nested collection, read in turn, or a scalar; false when malformed. */
  const value = (name: string | undefined): boolean => {
    blanks();
    if (line[i] === "{" || line[i] === "[") {
      if (depth >= 32) return false;
      const end = flowEdits(line, i, edits, depth + 1);
      if (end === undefined) return false;
      i = end;
      return true;
    }
    const read = scalar(false);
    if (!read) return false;
    // A bare number in a flow mapping (JSON's, mostly) is read as the JSON reader reads one: a
    // PIN's four digits and more under the credential's own key, never `max_token: 4096`.
    const number = !read.quoted && /^-?\d[\d.eE+-]*$/.test(read.text);
    if (name !== undefined && (number ? numberTells(name, read.text) : tells(name, read.text, read.quoted)))
      edits.push({ start: read.start, end: read.end, name, value: read.text });
    return true;
  };
  for (;;) {
    blanks();
    if (line[i] === close) return i + 1;
    if (i >= line.length) return undefined;
    if (mapping) {
      const key = scalar(true);
      if (!key) return undefined;
      blanks();
      if (line[i] === ":") {
        i += 1;
        const name = /^[A-Za-z_][\w.-]*$/.test(key.text) ? key.text : undefined;
        if (!value(name)) return undefined;
      }
    } else if (!value(undefined)) return undefined;
    blanks();
    if (line[i] === ",") i += 1;
    else if (line[i] !== close) return undefined;
  }
}

/** What one line holds, read alone: its pair's edits, a block scalar it starts, whether it is data. */
interface LineRead {
  edits: Edit[];
  /** Edits to make only when the whole text is data (a value of several words, a TOML/INI `a = b`). */
  dataEdits: Edit[];
  /** A block scalar starts after this line, its lines more indented than this column; its name when it tells. */
  block?: { column: number; name: string | undefined } | undefined;
  data: boolean;
}

function readLine(line: string): LineRead {
  // `block` its own, unset: a polluted `Object.prototype.block` started a block on every line, and
  // the lines of a document that names no credential became one reference.
  const read: LineRead = { edits: [], dataEdits: [], data: false, block: undefined };
  const pair = KEY_LINE.exec(line);
  if (!pair) {
    read.data = OTHER_DATA_LINE.test(line);
    // A list item or a line that is a flow collection (`- {user: bob, password: X}`).
    const at = /^[ \t]*(?:-[ \t]+)?(?=[{[])/.exec(line);
    if (at) {
      const end = flowEdits(line, at[0].length, read.edits);
      if (end === undefined || !TAIL.test(line.slice(end))) read.edits = [];
      else read.data = true;
    }
    return read;
  }
  const [, lead, dq, sq, bare, before, separator, gap, rest] = pair as unknown as string[];
  const name = (dq ?? sq ?? bare) as string;
  const start = line.length - (rest as string).length;
  const equals = separator === "=";
  // A quoted name is JSON's or YAML's, with a `:`; `export` is a `.env` line's, with a `=`.
  if ((dq !== undefined || sq !== undefined) && equals) return read;
  if (/export[ \t]/.test((lead as string).trimStart()) && !equals) return read;
  // A bare name needs a blank after its colon, as YAML reads it (`token:x` is one word), or nothing.
  if (!equals && bare !== undefined && gap === "" && rest !== "") return read;
  read.data = true;
  // A `.env` line's `=` is read so too (a shell's `TOKEN=x cmd` sets TOKEN for cmd alone).
  const put = (edit: Edit, words: boolean) => (words || equals ? read.dataEdits : read.edits).push(edit);
  if (rest === "") return read;
  if (!equals && BLOCK_HEADER.test(rest as string)) {
    read.block = { column: (lead as string).length, name: wholeNameTells(name) ? name : undefined };
    return read;
  }
  if (rest?.startsWith("{") || rest?.startsWith("[")) {
    const edits: Edit[] = [];
    const end = flowEdits(line, start, edits);
    if (end !== undefined && TAIL.test(line.slice(end))) read.edits.push(...edits);
    else read.data = false;
    return read;
  }
  const quoted = DOUBLE_QUOTED.exec(rest as string) ?? SINGLE_QUOTED.exec(rest as string);
  if (quoted) {
    if (!TAIL.test((rest as string).slice(quoted[0].length))) return { ...read, data: false };
    const value = quoted[1] as string;
    if (tells(name, value, true, equals))
      put({ start: start + 1, end: start + 1 + value.length, name, value }, false);
    return read;
  }
  // A bare value: to a ` #` comment, a trailing `,` and blanks left out.
  const comment = /[ \t]#/.exec(rest as string);
  let value = comment ? (rest as string).slice(0, comment.index) : (rest as string);
  // Read from the end: an unanchored `/,?[ \t]*$/` tried each blank of a run as its start.
  let end = value.length;
  while (end > 0 && (value[end - 1] === " " || value[end - 1] === "\t")) end -= 1;
  if (value[end - 1] === ",") end -= 1;
  value = value.slice(0, end);
  // A `#` right after the separator starts a comment (`password: # set later`): no value.
  if (/^["'#]/.test(value)) return { ...read, data: /^#/.test(value) };
  // A call (`secret = os.urandom(32)`) is a program's, and a `$(…)` or backtick is run, not written.
  if (equals && /[(`]/.test(value)) return { ...read, data: false };
  if (tells(name, value, false, equals)) {
    const edit = { start, end: start + value.length, name, value };
    // A `.env` line of one word (`DB_PASSWORD=p@ss.w0rd`, no blank around its `=`) is read in any
    // text, as a YAML pair is: it is the same assignment on a shell's line (r92b: after a prose line
    // with an apostrophe, the command-line reader read it inside that quote, as text, and kept a
    // value holding code characters in clear).
    if (equals && bare !== undefined && before === "" && gap === "" && !/\s/.test(value))
      read.edits.push(edit);
    else put(edit, /\s/.test(value));
  }
  return read;
}

/**
 * `text` with what each line says under a telling name taken out, the rest kept byte for byte;
 * undefined when nothing is. On any line: one pair's value, one word or one quoted string
 * (`password: X`, `"api_key": "X",`, `  - token: X # ci`); each telling pair of a one-line flow
 * collection (`env: {API_KEY: X, MODE: y}`, `- {user: bob, password: X}`); a block scalar under a
 * telling name (`password: |` or `>-`, the lines below it more indented), its lines written as
 * one line, at the first one's indentation. When every line of `text` is a data line (a pair, a
 * block's line, a comment, a section, a list item of one word), also a value of several words
 * (`secret: correct horse battery staple`, `.env`'s `API_KEY=abc def` as dotenv reads it) and a
 * TOML or INI `token = X`: a line of prose among them ("Then go on.") makes the text prose, where
 * "Password: ask the user." is a sentence.
 */
export function dataDocumentSecrets(text: string, write: DataWrite): string | undefined {
  return readDataDocument(text, write).safe;
}

/**
 * `text` read as `dataDocumentSecrets` reads it: `safe` what it returns, `data` whether every line
 * of `text` is a data line (a YAML, `.env`, TOML, INI or JSON document, no prose nor script).
 */
export function readDataDocument(
  text: string,
  write: DataWrite,
): { safe: string | undefined; data: boolean } {
  const parts = text.split(/(\r\n|\n|\r)/);
  const reads: (LineRead | undefined)[] = [];
  /** Block scalars under a telling name: the first and last of their lines holding text. */
  const blocks: { first: number; last: number; name: string }[] = [];
  let data = true;
  let block: { column: number; name: string | undefined; first: number; last: number } | undefined;
  const endBlock = () => {
    if (block?.name !== undefined && block.first >= 0)
      blocks.push({ first: block.first, last: block.last, name: block.name });
    block = undefined;
  };
  for (let index = 0; index < parts.length; index += 2) {
    const line = parts[index] as string;
    if (block) {
      if (/^[ \t]*$/.test(line)) continue;
      if (indentation(line) > block.column) {
        if (block.first < 0) block.first = index;
        block.last = index;
        // A block under a name that tells nothing is often a file in its own right (a ConfigMap's
        // `application.yml: |`, a `.env: |`): its one-line pairs are read as any line's are, its
        // prose counting for nothing (it is the block's text), its words and blocks left as they are.
        if (block.name === undefined && line.length <= KEPT_LINE) {
          const inner = readLine(line);
          if (inner.edits.length > 0) reads[index] = { edits: inner.edits, dataEdits: [], data: true };
        }
        continue;
      }
      endBlock();
    }
    const read = line.length <= KEPT_LINE ? readLine(line) : undefined;
    reads[index] = read;
    if (!read?.data) data = false;
    if (read?.block) block = { ...read.block, first: -1, last: -1 };
  }
  endBlock();
  let changed = false;
  for (const [index, read] of reads.entries()) {
    if (!read) continue;
    const edits = data ? [...read.edits, ...read.dataEdits] : read.edits;
    if (edits.length === 0) continue;
    edits.sort((a, b) => a.start - b.start);
    const line = parts[index] as string;
    let out = "";
    let from = 0;
    for (const edit of edits) {
      out += line.slice(from, edit.start) + write(edit.value, edit.name);
      from = edit.end;
    }
    parts[index] = out + line.slice(from);
    changed = true;
  }
  // A block's lines, from its first holding text to its last, become one line: the reference
  // (the first part written over, the others emptied, so the text is rebuilt once).
  for (const { first, last, name } of blocks) {
    const column = indentation(parts[first] as string);
    const value = parts
      .slice(first, last + 1)
      .filter((_, at) => at % 2 === 0)
      .map((line) => line.slice(Math.min(column, indentation(line))))
      .join("\n");
    if (!isLiteral(value) || NO_VALUE.test(value.trim())) continue;
    parts[first] = (parts[first] as string).slice(0, column) + write(value, name);
    parts.fill("", first + 1, last + 1);
    changed = true;
  }
  return { safe: changed ? parts.join("") : undefined, data };
}
