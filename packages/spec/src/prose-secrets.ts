// Part of spec's secret reader (see find-spec-secrets.ts): credentials in free text (a description, a prompt part): key shapes, `Bearer X`, and the argument rules read a word at a time.
import { naming, PROSE_RULES, readArg, reference } from "./find-spec-secrets.js";
import {
  isLiteral,
  looksLikeKey,
  looksPasswordName,
  looksProseSecretName,
  type SecretHide,
  SecretSign,
  urlSign,
  withoutReferences,
  withoutUrlSecrets,
} from "./secret-signs.js";

/** Where a word of free text starts and ends once the quotes, brackets and closing punctuation around it are set aside. */
export function bare(word: string): [number, number] {
  let start = 0;
  let end = word.length;
  while (start < end && OPENERS.has(word[start] as string)) start += 1;
  while (end > start && CLOSERS.has(word[end - 1] as string)) end -= 1;
  return [start, end];
}

/** The characters of an `Authorization` value's token (RFC 6750's token68), padding at the end. */
const TOKEN68 = /^[A-Za-z0-9._~+/-]+=*$/;

/** A UUID, which some services hand out as an API key. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True for the word after `Bearer`, `Basic` or `Token` (`scheme`) in free text when it reads as a
 * credential rather than a word, its `${VAR}` references left out: written in a token's characters
 * and holding a run of at least 16 letters and digits mixed with no `-`, `.`, `_` or `~` inside it
 * (a hex or alphanumeric key with no vendor prefix; not a model's name such as
 * `Qwen2.5-Coder-32B-Instruct`), a UUID, or base64 with its padding; after `Basic`, also base64
 * (letters of both cases or digits in it) of a `user:password`. So "Token accounting helper" and
 * "Basic research assistant" are not flagged, and "Bearer 3f2a9c0d7e1b4a6f8c2d5e7a9b0c1d2e" is.
 */
export function schemeToken(scheme: string, value: string): boolean {
  const word = withoutReferences(value);
  if (!TOKEN68.test(word)) return false;
  const mixed = (run: string) => run.length >= 16 && /[A-Za-z]/.test(run) && /\d/.test(run);
  if (word.split(/[-._~]+/).some(mixed) || UUID.test(word)) return true;
  if (word.length >= 8 && word.length % 4 === 0 && /^[A-Za-z0-9+/_-]+={1,2}$/.test(word)) return true;
  if (!/^basic$/i.test(scheme) || word.length < 8 || !/[A-Z0-9+/_-]/.test(word.slice(1))) return false;
  const decoded = fromBase64(word);
  return decoded !== undefined && /^[\x20-\x39\x3b-\x7e]+:[\x20-\x7e]*$/.test(decoded);
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** The bytes base64 (or base64url, padded or not) says, one character a byte; undefined when it is not base64. */
function fromBase64(text: string): string | undefined {
  const digits = text.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  if (digits.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(digits)) return undefined;
  let out = "";
  let bits = 0;
  let count = 0;
  for (const digit of digits) {
    bits = (bits << 6) | BASE64.indexOf(digit);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += String.fromCharCode((bits >> count) & 0xff);
      bits &= (1 << count) - 1;
    }
  }
  return out;
}

/**
 * Marks set around a word in free text that are not part of it: quotes, brackets, markdown, a
 * sentence's end. Not braces, which close a `${VAR}` reference (prose sets aside a JSON object's
 * braces, see `proseWithoutKeys`).
 */
const OPENERS = new Set(["(", '"', "'", "`", "<", "[", "*"]);
const CLOSERS = new Set([")", '"', "'", "`", ">", "]", "*", ".", ",", ";", "!", "?"]);

/** What a credential taken out of free text becomes: a reference named after its flag, header or parameter, else `${SECRET}`. */
export const proseHide: SecretHide = (secret, name) =>
  naming ? naming.hide(secret, name) : reference(name ?? "");

/**
 * True for a value after a telling name in free text (`--api-key X`, `API_KEY=X`, `password: X`)
 * that reads as a credential rather than a word: at least 8 characters holding a letter and a
 * digit, not a path, a URL or a `<placeholder>`, and not only `${VAR}` references; nor a version
 * (`v20.11.1`), code (a value holding `(`, `)`, `[`, `]` or `,`, or a dotted name: `os.urandom(32`,
 * `config.secret2`), a resource's path (`projects/123/secrets/db-pass`), a plain identifier
 * (`user_id123`, `alpha1234`, `oauth2_pkce`, `cl100k_base`: see `plainIdentifier`), a date, a
 * digest (`sha256:…`), an assignment or a flag of its own (`TOKEN_LIMIT=4096`, `--max-tokens`), or
 * a query (`?page=3&sort=desc`). Prose says "set --token to your key" where a command line would
 * not, so args take any literal value instead.
 */
export function proseCredential(value: string): boolean {
  const literal = withoutReferences(value);
  return (
    isLiteral(value) &&
    literal.length >= 8 &&
    /[A-Za-z]/.test(literal) &&
    /\d/.test(literal) &&
    !/[<>()[\],]/.test(literal) &&
    !/^(?:~?\.{0,2}\/|[A-Za-z][A-Za-z0-9+.-]*:\/\/)/.test(literal) &&
    !/^v?\d+(?:\.\d+)+/i.test(literal) &&
    !/^[A-Za-z_]\w*(?:\.\w+)+$/.test(literal) &&
    !RESOURCE_PATH.test(literal) &&
    !plainIdentifier(literal) &&
    !/^\d{4}-\d{2}-\d{2}/.test(literal) &&
    !DIGEST.test(literal) &&
    !/^(?:[A-Za-z_][\w.-]*=|--?[A-Za-z]|[?&#@])/.test(literal)
  );
}

/** A digest written with its algorithm's name (`sha256:3f2a…`, `md5:…`, `blake2b:…`): data, never a credential, even where a `user:password` would stand (`-u sha256:…`). */
const DIGEST = /^(?:sha\d*|md5|blake\w*):/i;

/** A whole word that is a digest: an algorithm's name, `:`, and 16 or more hex digits. */
const DIGEST_WORD = /^(?:sha\d*|md5|blake\w*):[0-9a-f]{16,}$/i;

/** A resource's path with no scheme: `projects/123/secrets/db-pass`, `users/Alice/keys` (each part lowercase after its first letter). */
const RESOURCE_PATH = /^[A-Za-z0-9_.-][a-z0-9_.-]*(?:\/[A-Za-z0-9_.-][a-z0-9_.-]*)+\/?$/;

/** One part of an identifier: letters, then at most one run of digits and two letters (`oauth2`, `cl100k`, `v2`, `4o`, `3`). */
const IDENTIFIER_PART = /^(?:[a-z]+\d*[a-z]{0,2}|\d+[a-z]{0,2})$/;

/**
 * True for a lowercase identifier with digits: parts of letters with at most one run of digits
 * each (`user_id123`, `alpha1234`, `oauth2_pkce`, `cl100k_base`, `google-oauth2`,
 * `text-embedding-3-small`), under 16 characters when it is one part, under 32 when joined by `_`
 * or `-`. A password with its letters swapped for digits (`s3cr3t`, `t0k3n`, `hunter2x9`) is not.
 */
function plainIdentifier(word: string): boolean {
  if (!/^[a-z0-9_-]+$/.test(word) || word.length >= 32) return false;
  const parts = word.split(/[_-]/);
  if (parts.length === 1 && word.length >= 16) return false;
  return parts.every((part) => part === "" || IDENTIFIER_PART.test(part));
}

/** Names that say only "a credential", a word alone (`Token:`, `Key:`, `Auth:`): a model's, an algorithm's or an encoding's name follows them as often as a credential does. */
export const GENERIC_NAME =
  /^(?:token|key|secret|auth|authorization|signature|bearer|cookie|credential|credentials)$/i;

/**
 * True for a value a word or two after a header-like name in prose (`Token: X`, `"api_key": "X"`,
 * `secret = X`) that reads as a credential (`proseCredential`); after a word alone that says only
 * "a credential" (`Token:`, `Key:`, `Signature:`, `Auth:`), besides, shaped like a key or read as a
 * token (`schemeToken`: a run of 16 letters and digits mixed, a UUID, padded base64), so
 * `Token: Llama-3-8B`, `Key: AES-256-GCM` and `Signature: HMAC-SHA256` stay words. After a
 * password's name (`password:`) any credential-like word is one.
 */
export function headerCredential(value: string, name: string): boolean {
  if (!proseCredential(value)) return false;
  if (!GENERIC_NAME.test(name) || looksPasswordName(name)) return true;
  return looksLikeKey(value) || schemeToken("", value);
}

/**
 * A query written without its URL (`?api_key=X`, `/v1/items?token=X`, `&access_token=X`, `a=1&token=X`)
 * with each telling parameter's value hidden as a URL's is, or undefined when it holds none.
 */
function bareQueryWithoutSecrets(word: string): string | undefined {
  if (!word.includes("=") || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(word)) return undefined;
  const cut = word.indexOf("?");
  if (cut < 0 && !word.includes("&")) return undefined;
  const head = word.slice(0, cut + 1);
  const query = word.slice(cut + 1);
  const lead = /^&*/.exec(query)?.[0] ?? "";
  const base = "x://h/?";
  const url = base + query.slice(lead.length);
  if (urlSign(url) !== SecretSign.Query) return undefined;
  return head + lead + withoutUrlSecrets(url, proseHide).slice(base.length);
}

/** A header's name written as a word of its own, before its value: `Authorization:`, `X-Api-Key:`, a JSON pair's `"api_key":`, also as a flag's value (`--header="X-Api-Key:`). */
const HEADER_NAME = /^(?:--?[A-Za-z][\w.-]*=["']?)?([A-Za-z][\w.-]*)["']?:$/;
/** A header's name and its scheme written with no space between them: `Authorization:Bearer`. */
const HEADER_SCHEME = /^([A-Za-z][\w-]*):(?:Bearer|Basic|Token)$/i;
/** A name alone, before a lone `=` or `:`: the `aws_secret_access_key` of `aws_secret_access_key = X`. */
const BARE_NAME = /^([A-Za-z_][\w.-]*)$/;
/** A client named on a line whose password flag is read: MySQL's (`-pX`), redis-cli's (`-a X`), or none. */
type Client = "" | "mysql" | "redis";
/**
 * MySQL's and MariaDB's clients and tools, which all take a password written tight after `-p`:
 * a fixed list, not every name that starts `mysql` or `mariadb` (`mysql-mcp-server`, a server of
 * that name, may take a port there).
 */
export const PASSWORD_P =
  /^(?:mysql(?:dump|admin|import|show|check|sh|binlog|pump|slap|_upgrade)?|mariadb(?:-(?:admin|binlog|check|dump|import|show|slap|upgrade))?)$/;
/** A MySQL client's `-pX`, also after its options that take no value in one cluster (`-vpX`, `-NspX`): where the password starts. */
export const MYSQL_TIGHT_P = /^-[BCEHNVXfinqrstvw]*p(?=[\s\S])/;

/** A JSON (or Python) pair written in prose, name and value quoted: `"api_key": "X"`, `'password':'X'`. */
const JSON_PAIR = /(["'])([A-Za-z][\w.-]*)\1(\s*:\s*)(["'])([^"'\s]{1,512})\4/g;
export const SCHEME = /^(?:Bearer|Basic|Token)$/i;
/** A flag or an assignment whose value opens with a quote: `--token="`, `DB_SECRET='`. */
const QUOTED_VALUE = /^((?:--?[A-Za-z][\w.-]*|[A-Za-z_][\w.-]*)=)["'`]/;

/**
 * Free text with what reads as a credential in it redacted, or undefined when nothing does. It is
 * read a word at a time (split at whitespace, a word's quotes, brackets, a JSON object's braces and
 * closing punctuation set aside, a markdown link's word read from its URL) with the rules for args:
 * a key shape, a URL's userinfo or telling query value (also after any `NAME=`), and a telling
 * flag, assignment or header with its value (`--api-key X`, `--token=X`, `API_KEY=X`,
 * `X-Api-Key:X`, `--env=API_KEY=X`, a connection string's `Password=X`, `curl -u user:X` or
 * `-uuser:X`), where a name tells by its words (`looksProseSecretName`) and the value must also
 * read as a credential (`proseCredential`). Besides, a header's value may stand a word or two after
 * its name (`Authorization: Bearer X`, `Authorization:Bearer X`, `"api_key": "X"`,
 * `spring.datasource.password: X`), a name's a word after a lone `=` (`aws_secret_access_key = X`),
 * there judged by `headerCredential`; `mysql … -pX` and `redis-cli … -a X` are read, a
 * JSON pair written tight (`{"password":"X"}`) is read whole, a word after
 * `Bearer`, `Basic` or `Token` is a credential when it reads as a token (`schemeToken`, as free text
 * reads it), and a query written without its URL is read as one. Each credential becomes a reference (`${SECRET}`, or one
 * named after its flag, header or parameter); every other character is kept as written. One pass,
 * each word read with the two before it.
 */
export function proseWithoutKeys(original: string): string | undefined {
  const paired = jsonWithoutSecrets(original);
  const text = paired ?? original;
  let out = "";
  let at = 0;
  let flagged = paired !== undefined;
  let before = "";
  let last = "";
  // After `mysql` on the same line (and command), `-pX` is a password.
  let client: Client = "";
  let gap = 0;
  for (const match of text.matchAll(/\S+/g)) {
    let start = match.index;
    let end = start + match[0].length;
    // A new line, or a `;`, `|` or `&&` (alone or ending the word before), ends the command; a
    // backslash ending the word before a new line continues it (r92g: `mysql -u root \` then `-pX`
    // on the next line kept `-pX` in clear).
    let between = text.slice(Math.max(gap - 1, 0), start);
    if (between.startsWith("\\\n")) between = between.slice(2);
    else if (between.startsWith("\\\r\n")) between = between.slice(3);
    const ends = /[\n;|]/.test(between) || /^(?:&&|\|\|?)$/.test(match[0]);
    if (ends) client = "";
    gap = end;
    // A JSON object's braces are set aside too, but not the `}` that closes a `${VAR}` reference.
    while (start < end && (OPENERS.has(text[start] as string) || text[start] === "{")) start += 1;
    // (Counted once: each `}` set aside leaves one fewer unopened.)
    let unopened = -braceDepth(text.slice(start, end));
    while (end > start) {
      const c = text[end - 1] as string;
      if (c === "}" && unopened > 0) unopened -= 1;
      else if (!CLOSERS.has(c)) break;
      end -= 1;
    }
    // A markdown link's or a call's URL (`[the dashboard](https://…)`, `fetch(https://…)`) is read from the URL.
    const link = /\((?=[A-Za-z][A-Za-z0-9+.-]*:\/\/)/.exec(text.slice(start, end));
    if (link) start += link.index + 1;
    const word = text.slice(start, end);
    const safe = proseWord(word, last, before, client);
    // A long flag's value (`--name mysql`, `--driver mysql`) names no client; a flag ending the
    // command before (`srv --verbose` then `mysql -pX` on the next line) takes no value there
    // (r92b: that `-pX` was kept in clear).
    const value = !ends && /^--[A-Za-z][\w.-]*$/.test(last);
    if (!value && PASSWORD_P.test(word)) client = "mysql";
    else if (!value && word === "redis-cli") client = "redis";
    before = last;
    last = word;
    if (safe === undefined) continue;
    flagged = true;
    out += text.slice(at, start) + safe;
    at = end;
  }
  return flagged ? out + text.slice(at) : paired;
}

/** A word's `{` less its `}`: below 0, its last `}`s close something opened before it, not a `${VAR}` reference. */
function braceDepth(word: string): number {
  let depth = 0;
  for (const c of word) depth += c === "{" ? 1 : c === "}" ? -1 : 0;
  return depth;
}

/**
 * Prose with each JSON pair (`"api_key": "X"`, `{"password":"X"}`, `{"db.password": "X"}`) whose
 * name tells (`looksProseSecretName`) and whose value reads as a credential (`headerCredential`)
 * given a reference named after it instead; undefined when there is none.
 */
function jsonWithoutSecrets(text: string): string | undefined {
  let flagged = false;
  const out = text.replace(
    JSON_PAIR,
    (pair, quote: string, name: string, colon: string, open: string, value: string) => {
      if (!looksProseSecretName(name) || !headerCredential(value, name)) return pair;
      flagged = true;
      return `${quote}${name}${quote}${colon}${open}${proseHide(value, name)}${open}`;
    },
  );
  return flagged ? out : undefined;
}

/**
 * A prose text (a prompt part's `text`, a `description`) as `exportSpec` writes it: each
 * credential it holds — a key-shaped word, a URL's `user:password@` or a telling query parameter
 * (also after `DATABASE_URL=`), a flag or assignment with its value (`--api-key X`, `API_KEY=X`), a
 * header or a JSON pair with its value (`Authorization: Bearer X`, `"api_key": "X"`), a connection
 * string's `Password=X`, `curl -u user:X`, `mysql -pX`, `redis-cli -a X` — a `${NAME}` reference,
 * every other character as written. A telling name is one of words (`api_key`, not `primary_key`,
 * `monkey` or `auth_type`), and a version, code (`os.urandom(32)`), a path or a plain identifier
 * (`oauth2_pkce`) is no credential, nor a name such as `Llama-3-8B` or `AES-256-GCM` after a
 * word alone such as `Token:` or `Key:`, so fewer ordinary instructions are rewritten; SPEC.md's
 * "Secrets" lists the forms read and the ones missed. A text
 * holding none comes back as it is. For a form or a page that shows a spec's prose without its
 * secrets.
 */
export function withoutProseSecrets(text: string): string {
  if (typeof text !== "string") return text;
  return proseWithoutKeys(text) ?? text;
}

/**
 * One word of prose redacted (see `proseWithoutKeys`), given the two words before it and whether a
 * MySQL client was named before it on its line; undefined when it is not flagged.
 */
function proseWord(word: string, last: string, before: string, client: Client = ""): string | undefined {
  // Most words of prose cannot be flagged by any rule (no key shape is shorter than 14 characters,
  // and every other sign needs a digit, a flag's dash or one of `=:/@?&`): they are not read.
  // (A word after `Bearer`, `Basic` or `Token` is read for a token, which may be shorter.)
  if (word.length < 14 && !word.startsWith("-") && !/[\d=:/@?&]/.test(word) && !SCHEME.test(last))
    return undefined;
  // A quoted value (`DB_SECRET='…'`, `--token="…"`; its closing quote is set aside as punctuation)
  // is read without its opening quote, which is kept.
  const quoted = QUOTED_VALUE.exec(word);
  if (quoted) {
    const [open, assign = ""] = quoted;
    const inner = proseWord(assign + word.slice(open.length), last, before, client);
    return inner?.startsWith(assign) ? open + inner.slice(assign.length) : inner;
  }
  // The args rules, with the word before it when that is a flag (`--api-key X`, `-u user:X`).
  // A digest (`sha256:3f2a…`) is data even after a flag that takes `user:password` (`-u`).
  let safe = DIGEST_WORD.test(word)
    ? undefined
    : readArg(word, last.startsWith("-") ? last : undefined, PROSE_RULES, proseHide)?.safe;
  safe ??= bareQueryWithoutSecrets(word);
  // `Authorization: Bearer X`, `password: X`, `"api_key": "X"`: the header's name a word (or a
  // scheme) before its value; `Authorization:Bearer X`; `aws_secret_access_key = X`.
  if (safe === undefined && proseCredential(word)) {
    // After a scheme (`Authorization: Bearer X`) the word is the credential whatever the header's name.
    const schemed = (SCHEME.test(last) ? HEADER_NAME.exec(before) : null) ?? HEADER_SCHEME.exec(last);
    const header = HEADER_NAME.exec(last) ?? (last === "=" || last === ":" ? BARE_NAME.exec(before) : null);
    const name = (schemed ?? header)?.[1] ?? "";
    if (looksProseSecretName(name) && (schemed || headerCredential(word, name))) safe = proseHide(word, name);
  }
  // `mysql -u root -pX` (or `-p'X'`): the password, after a MySQL client named on the line.
  const short = /^-p(['"]?)(.+)$/.exec(word);
  if (safe === undefined && client === "mysql" && short && proseCredential(short[2] ?? ""))
    safe = `-p${short[1]}${proseHide(short[2] ?? "", "password")}`;
  // `redis-cli -a X`: the password, after redis-cli named on the line.
  if (safe === undefined && client === "redis" && last === "-a" && proseCredential(word))
    safe = proseHide(word, "REDISCLI_AUTH");
  // `Bearer 3f2a9c0d…` with no header before it: the token, as free text reads it (`schemeToken`).
  if (safe === undefined && SCHEME.test(last) && schemeToken(last, word)) safe = proseHide(word, undefined);
  if (safe === undefined) return undefined;
  return safe === word || looksLikeKey(safe) || urlSign(safe) ? proseHide(word, undefined) : safe;
}
