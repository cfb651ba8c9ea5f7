// Part of spec's secret reader (see find-spec-secrets.ts): a JSON argument's telling values (strings and numbers under a key that names a credential), found in one pass and replaced in place.
import {
  type ArgFound,
  type ArgRules,
  LINE_BREAK,
  literalNamer,
  pastedScript,
  readArg,
  reference,
  scanArgs,
} from "./find-spec-secrets.js";
import { type SecretHide, SecretSign } from "./secret-signs.js";
import { nameWords, wholeNameTells } from "./shell-words.js";

/** An argument that is one JSON object or array, alone or as the value of a `--flag=` or `NAME=`. */
export const JSON_ARG = /^(?:--?[A-Za-z][\w.-]*=|[A-Za-z_][A-Za-z0-9_.-]*=)?(?=\s*[{[])/;

/** A replacement in a text: `[start, end)` written as `safe`. */
interface Edit {
  start: number;
  end: number;
  safe: string;
}

/** The whitespace JSON allows between its tokens. */
const JSON_BLANK = new Set([" ", "\t", "\n", "\r"]);

/** One open JSON object or array while a JSON text is read (see `jsonEdits`). */
interface JsonFrame {
  array: boolean;
  /** In an object, the key the next value is given under. */
  key?: string;
  /**
   * That key as the values under it are named after: as the export writes it, a credential in it
   * replaced by its reference (`PASSWORD=${PASSWORD}`, not `PASSWORD=X`), so no reference name
   * carries the credential (r83d: `{"--api-key=X":"v"}` was written `${API_KEY_X}`).
   */
  name?: string;
  /** The name every string under this container is a credential under: a telling key above it (`{"auth":{…}}`), else none. */
  telling?: string;
  /** In an array outside a telling key: its entries in order, a string's value and where its raw text is (a non-string as `""`). */
  entries?: { value: string; raw?: [number, number] }[];
  /** In such an array, whether an entry that is no string or container (`5`, `true`) is being read: it is counted at its `,` or `]`. */
  primitive?: boolean;
}

/**
 * One line of JSON (an object or array, valid as a whole) read by its string values, each where
 * it is written: every literal string under a telling key (see `looksSecretName`), at any depth
 * (`{"password":"X"}`, `{"password":["X"]}`, `{"auth":{"user":"a"}}`), becomes a reference named
 * after its own key when that tells, else after the telling key and its own (`${AUTH_USER}`); an
 * array's strings are read as argv, by the rules for args (`{"args":["--api-key","X"]}`, see
 * `scanArgs`); any other string is read as an argument is (see `readArg`): a command line when it
 * holds whitespace (`{"cmd":"mysql -pX db"}`, kept or replaced whole when it holds a shell's own
 * command, see `pastedScript`; one starting with a telling assignment too, `PGPASSWORD=X psql`:
 * only X hidden, see `ArgRules.lines`), a list of pairs (`a=1&password=X`, see `listPairs`), a URL's credentials, a key shape, a nested JSON; a key is read as
 * such a string is (`{"PASSWORD=X":1}`), and one telling by a pair after others has each telling
 * pair's value replaced (`{"a=1&password=X":1}`, see `keyPairs`). A replacement is
 * written JSON-escaped inside the string's quotes; a string written with escapes is replaced
 * whole, as its parts are not where they are read. A number under a key that tells (see
 * `numberTells`; in an array, the key the array is written under, `{"password":[12345678]}`)
 * becomes its reference written bare, `{"password":${PASSWORD}}`, which filled back as text is
 * the number again; such a bare `${NAME}` is read as a value. Null when `text` is no
 * such JSON; undefined when nothing is flagged. One pass over the text after one `JSON.parse`.
 */
export function jsonEdits(
  text: string,
  rules: ArgRules,
  hide: SecretHide | undefined,
  scriptName: () => string,
): { sign: SecretSign; edits: Edit[] } | undefined | null {
  try {
    const parsed: unknown = JSON.parse(withBareReferencesAsNumbers(text));
    if (typeof parsed !== "object" || parsed === null) return null;
  } catch {
    return null;
  }
  const named = literalNamer(hide);
  let sign: SecretSign | undefined;
  const edits: Edit[] = [];
  // What reading a string found, written back inside its quotes (`[start, end)` its raw text).
  const put = (start: number, end: number, read: ArgFound, name: string | undefined) => {
    sign ??= read.sign;
    const raw = text.slice(start, end);
    const safe = !raw.includes("\\")
      ? JSON.stringify(read.safe).slice(1, -1)
      : hide
        ? hide(raw, name)
        : reference(name ?? "");
    edits.push({ start, end, safe });
  };
  // A string outside a telling key and an array: a pasted command line, else read as an argument is.
  // A short word of letters, digits and `_` (`mode`, `apiKey`, `k12`: most keys and many values)
  // holds none of what the reader flags (a key shape is longer, a flag starts with `-`, a pair holds
  // `=` or `:`), so it is not read (r83d: half of an entry's cost where its value is a number).
  // One starting with a telling assignment is a command line too (`PGPASSWORD=X psql -h db`: only X
  // hidden; r85a: the words after X were taken with it, lost from a key and a value alike).
  const lines: ArgRules = { ...rules, lines: true };
  const readString = (value: string) =>
    PLAIN_WORD.test(value)
      ? undefined
      : ((/\s/.test(value) ? pastedScript(value, hide, scriptName) : null) ??
        readArg(value, undefined, lines, hide, scriptName));
  const stack: JsonFrame[] = [];
  // The name a value about to be read is a credential under, given the container it is in.
  const tellingFor = (frame: JsonFrame | undefined): string | undefined => {
    if (frame === undefined) return undefined;
    if (frame.array) return frame.telling;
    const name = frame.name ?? "";
    // A reference in a key tells nothing (`{"${SECRET}":"admin"}`, an export's own): its name is
    // the variable's, not the key's (r83d: `{"mysql -uroot -pX db":{"mode":"fast"}}` was written
    // `-p${PASSWORD}` in the export's first round and `fast` taken out in its second).
    if (rules.telling(withoutNamedReferences(frame.key ?? ""))) return name;
    return frame.telling === undefined ? undefined : `${frame.telling}_${name}`;
  };
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    const top = stack[stack.length - 1];
    if (top?.entries) {
      // An entry that is no string or container (`5`, `true`) still takes its place in argv.
      if (c === "," || c === "]") {
        if (top.primitive) top.entries.push({ value: "" });
        top.primitive = false;
      } else if (!JSON_BLANK.has(c) && c !== '"' && c !== "{" && c !== "[") top.primitive = true;
    }
    BARE_VALUE.lastIndex = i;
    const bare = c === "$" || c === "-" || (c >= "0" && c <= "9") ? BARE_VALUE.exec(text) : null;
    if (bare) {
      // A number (or a `${NAME}` an export wrote in its place) is one value: its braces open nothing.
      const end = i + bare[0].length;
      // In an array, the key the array is written under (`{"password":[12345678]}`), as its strings
      // are read; its plural names one of them (`{"api_keys":[…]}` as `api_key`).
      const key = top === undefined ? "" : top.array ? (top.telling ?? "") : (top.name ?? "");
      const tells = top?.array
        ? numberTells(key.replace(/([^sS])[sS]$/, "$1"), bare[0])
        : numberTells(withoutNamedReferences(top?.key ?? ""), bare[0]);
      if (c !== "$" && tells) {
        sign ??= SecretSign.Flag;
        edits.push({ start: i, end, safe: named(bare[0], key) });
      }
      i = end - 1;
      continue;
    }
    if (c === "{" || c === "[") {
      const telling = tellingFor(stack[stack.length - 1]);
      const array = c === "[";
      stack.push({
        array,
        ...(telling !== undefined ? { telling } : {}),
        ...(array && telling === undefined ? { entries: [] } : {}),
      });
      continue;
    }
    if (c === "}" || c === "]") {
      const frame = stack.pop();
      const parent = stack[stack.length - 1];
      parent?.entries?.push({ value: "" });
      const entries = frame?.entries;
      if (entries === undefined || entries.length === 0) continue;
      // An array's strings are argv: read as a server's args are.
      const name = parent && !parent.array ? parent.name : undefined;
      scanArgs(
        "",
        entries.map((entry) => entry.value),
        (_path, found, index, safe) => {
          const raw = entries[index]?.raw;
          if (raw) put(raw[0], raw[1], { sign: found, safe }, name);
        },
        hide,
        scriptName,
      );
      continue;
    }
    if (c !== '"') continue;
    let end = i + 1;
    while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
    const start = i + 1;
    const raw = text.slice(start, end);
    const value = raw.includes("\\") ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
    i = end;
    let next = end + 1;
    while (JSON_BLANK.has(text[next] as string)) next += 1;
    const frame = stack[stack.length - 1];
    if (frame === undefined) continue;
    if (!frame.array && text[next] === ":") {
      frame.key = value;
      frame.name = value;
      // A key is read as any other string is (a URL's credentials, a key shape, `-uuser:X`, a
      // command line): the argument is not read again as a whole once it is JSON (r81: a credential
      // in a key was found only by reading the whole JSON as a command line, which cost as much
      // again and rewrote it into text that no longer parsed).
      // A pair the reader takes only at a word's start, written after others in a key
      // (`{"a=1&password=X":…}`, `{"\"password\":\"X\"":…}`: r84a, kept in clear and lent to the
      // names under it): its value replaced as a value under a telling key is.
      const read = readString(value);
      const key = keyPairs(read?.safe ?? value, rules, named) ?? read;
      if (key) {
        put(start, end, key, undefined);
        frame.name = key.safe;
      }
      continue;
    }
    const telling = tellingFor(frame);
    if (telling !== undefined) {
      if (!rules.literal(value)) continue;
      sign ??= SecretSign.Flag;
      edits.push({ start, end, safe: named(text.slice(start, end), telling) });
      continue;
    }
    if (frame.entries) {
      frame.entries.push({ value, raw: [start, end] });
      continue;
    }
    const read = readString(value);
    if (read) put(start, end, read, frame.name);
  }
  if (sign === undefined) return undefined;
  // An array's edits are made when it closes, after those of the strings inside it: in the order written.
  edits.sort((a, b) => a.start - b.start);
  return { sign, edits };
}

/**
 * A telling pair in a key: a name, `=` or `:` (quotes and blanks around it as a JSON or a config
 * writes them), a value, the pair set apart by a query string's `&`, a connection string's `;`, a
 * `,`, a `?`, a quote or a blank from what is around it (`a=1&password=X`, `"password":"X"`). A
 * name is tried only where its run starts, so a long run with no `=` or `:` after it is read once,
 * not once from each of its characters (its square in time).
 */
const KEY_PAIR = /(?<![^\s&;,?=:"'{}])([^\s&;,?=:"'{}]+)(["']?\s*[=:]\s*["']?)([^\s&;,?"']+)/g;

/**
 * `key` (a JSON argument's key, as the reader wrote it back) with the value of each telling pair
 * in it (see `KEY_PAIR`) written as `named` writes a value under its name, when the key tells
 * still (see `ArgRules.telling`: a word of it names a credential, its `${NAME}` references left
 * out). Undefined when it does not, or holds no telling pair with a literal value.
 */
function keyPairs(
  key: string,
  rules: ArgRules,
  named: (secret: string, name: string) => string,
): ArgFound | undefined {
  if (!(key.includes("=") || key.includes(":")) || !rules.telling(withoutNamedReferences(key)))
    return undefined;
  let found = false;
  const safe = key.replace(KEY_PAIR, (pair, name: string, between: string, value: string) => {
    if (!rules.telling(name) || !rules.literal(value) || /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value))
      return pair;
    found = true;
    return name + between + named(value, name);
  });
  return found ? { sign: SecretSign.Flag, safe } : undefined;
}

/** A word no rule of the argument reader flags: up to 13 letters, digits and `_`, not starting with a digit. */
const PLAIN_WORD = /^[A-Za-z_][A-Za-z0-9_]{0,12}$/;

/** `key` without the `${NAME}` references in it (a default's `${NAME:-word}` kept: its word is the key's). */
const withoutNamedReferences = (key: string) =>
  key.includes("${") ? key.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, "") : key;

/** A JSON number, or a `${NAME}` reference written bare where a value goes (as an export writes a number it took out). */
const BARE_VALUE = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\$\{[A-Za-z_][A-Za-z0-9_]*\}/y;

/**
 * Words that, before a key's last word, make a number under it a setting rather than the
 * credential the last word names: a count or limit (`max_token`, `prompt_token`, `num_token`), a
 * size or kind (`rsa_key`, `key_bits`), a toggle (`no_auth`, `use_auth`, `basic_auth`).
 */
const SETTING_WORDS = new Set([
  "max",
  "maximum",
  "min",
  "minimum",
  "num",
  "number",
  "count",
  "total",
  "limit",
  "len",
  "length",
  "size",
  "bits",
  "bit",
  "prompt",
  "completion",
  "completions",
  "context",
  "input",
  "output",
  "cached",
  "reasoning",
  "ttl",
  "timeout",
  "expiry",
  "expires",
  "lifetime",
  "retry",
  "retries",
  "rsa",
  "dsa",
  "ecdsa",
  "ec",
  "use",
  "no",
  "enable",
  "enabled",
  "disable",
  "disabled",
  "allow",
  "require",
  "required",
  "skip",
  "basic",
  "is",
  "has",
]);

/**
 * True when `number`, given under `key`, is a credential: the key's last word names one
 * (`password`, `api_key`, `apiKey`, `token`, `pw`, `DB_PASS`; see `wholeNameTells`), the word
 * right before it does not make the key a count, limit, size, kind or toggle (see `SETTING_WORDS`:
 * `max_token`, `prompt_token`, `rsa_key`, `no_auth`, `use_auth`; a password's or secret's own word,
 * `enable_password`, `basic_auth_password`, is one whatever comes before it), the key is not a reference an export wrote in
 * its place, and the number is a whole number of at least four digits without a sign (a PIN's
 * length and more: `1234`, `98765432`). So `0`, `1`, `-1`, `4096` under `max_token`, a float and a
 * number with an exponent stay, as flags, limits and sizes are written so. A setting about a
 * credential (`password_min_length`, `token_limit`, `max_tokens`, `auth_ttl`) does not end in a
 * credential's word, so its number stays, as does one under a plain key (`port`) or only inside
 * a telling object (`{"auth":{"timeout":30}}`).
 */
export function numberTells(key: string, number: string): boolean {
  if (!/^\d{4,}$/.test(number) || /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(key) || !wholeNameTells(key))
    return false;
  const words = nameWords(key).map((word) => word.toLowerCase());
  const last = words[words.length - 1] ?? "";
  // A password's or secret's own word is one whatever comes before it (`enable_password`,
  // `basic_auth_password`, `EC2_PASSWORD`, `input_password`: r54 G3); a token, key or auth is a
  // setting's subject only when the word right before it says so (`max_token`, `rsa_key`).
  if (SECRET_OWN_WORDS.has(last)) return true;
  return !SETTING_WORDS.has(words[words.length - 2] ?? "");
}

/** Last words of a key that name a password or a secret itself, never a setting's subject (see `numberTells`). */
const SECRET_OWN_WORDS = new Set(["password", "passwd", "passphrase", "pass", "pw", "pwd", "secret"]);

/** A `${NAME}` reference, read where it starts. */
const BARE_REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/y;

/**
 * `text` with each `${NAME}` written outside a JSON string (where a value goes) read as the number
 * `0`: an export writes a number under a telling key as a bare reference (`{"password":${PASSWORD}}`,
 * which fills back to the number), and that is still JSON to read. Strings are copied as written;
 * a string never closed gives `text` back as it is (no JSON, as `JSON.parse` then says). One pass
 * that follows where strings start and end, so a text of unclosed escaped quotes takes no longer
 * than its length.
 */
function withBareReferencesAsNumbers(text: string): string {
  if (!text.includes("${")) return text;
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      if (i >= text.length) return text;
      continue;
    }
    if (c !== "$") continue;
    BARE_REFERENCE.lastIndex = i;
    const reference = BARE_REFERENCE.exec(text);
    if (reference === null) continue;
    out += `${text.slice(from, i)}0`;
    from = i + reference[0].length;
    i = from - 1;
  }
  return out + text.slice(from);
}

/**
 * One line of JSON given as an argument (`{"apiKey":"X"}`, `--config={"password":"X"}`,
 * `MCP_CONFIG={"token":"X"}`), read by its string values and its numbers under a telling key (see
 * `jsonEdits`), every other character kept as written, so the result still parses (a bare
 * reference read as a value) and, filled back, is the argument again; `readArg` does not read
 * such an argument again as a command line. Null when
 * the argument is no such JSON (or holds a line break: a script, see `lineSecrets`); undefined
 * when nothing is flagged.
 */
export function jsonArgSecrets(
  arg: string,
  rules: ArgRules,
  hide: SecretHide | undefined,
  scriptName: () => string,
): ArgFound | undefined | null {
  const lead = JSON_ARG.exec(arg);
  if (lead === null || LINE_BREAK.test(arg)) return null;
  const text = arg.slice(lead[0].length);
  const found = jsonEdits(text, rules, hide, scriptName);
  if (!found) return found;
  let out = lead[0];
  let from = 0;
  for (const edit of found.edits) {
    out += text.slice(from, edit.start) + edit.safe;
    from = edit.end;
  }
  return { sign: found.sign, safe: out + text.slice(from) };
}
