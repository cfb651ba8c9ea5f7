import { endpointField, NO_KEY } from "./endpoint.js";
import { NOT_DATA, ownDataValue, ownDescriptor, protoless } from "./protoless.js";

/** The endpoint fields `secretsOf` reads. */
export interface SecretBearer {
  baseUrl?: string | undefined;
  apiKey?: string | undefined;
  headers?: Record<string, string> | undefined;
}

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/**
 * The shortest value treated as a secret. Shorter ones (a header `"1"`, a key `"x"`) cannot be told
 * from ordinary words, and replacing them would garble every message they occur in.
 */
export const MIN_SECRET_LENGTH = 6;

/** Query parameters whose values are credentials (compared without case, `-` and `_`). */
const CREDENTIAL_PARAMS = new Set([
  "apikey",
  "key",
  "token",
  "accesstoken",
  "authtoken",
  "auth",
  "secret",
  "clientsecret",
  "password",
  "pass",
  "sig",
  "signature",
  "code",
  "session",
  "sessiontoken",
  "jwt",
  "bearer",
  "xapikey",
  "subscriptionkey",
]);

/**
 * Names credentials are given under wherever they stand (`private_token`, `x-goog-api-key`,
 * `refresh_token`); not `max_tokens`. With {@link hasPassWord}, the rule of @loopwright/spec's
 * `looksSecretName`, which this package does not depend on (tools-mcp's parity test holds the
 * copies to one answer).
 */
const TELLING_NAME =
  /key|token(?!s)|secret|passw|passphrase|pwd|auth|credential|cookie|bearer|signature|private/i;

/** Where a name splits into words: at anything but a letter, and where a small letter meets a capital. */
const WORD_BREAK = /[^A-Za-z]+|(?<=[a-z])(?=[A-Z])/;

/** Short words for a credential that tell only as a word of their own (see {@link hasPassWord}). */
const PASS_WORDS = new Set(["pass", "pw", "cred", "creds"]);

/**
 * `pass`, `pw`, `cred` or `creds` as a word of a name of its own (`db_pass`, `SMTP-PASS`, `dbPass`,
 * `db_pw`, `db_creds`, `awsCreds`); not `bypass`, `passive`, `pwsh`, `credits` or `incredible`.
 */
function hasPassWord(name: string): boolean {
  return name.split(WORD_BREAK).some((word) => PASS_WORDS.has(word.toLowerCase()));
}

/**
 * True for a query parameter name that carries a credential (`api-key`, `access_token`, `key`,
 * `sig`, `private_token`, `db_pass`, …): one of the short names in the list, a name with a telling
 * part (`key`, `token`, `secret`, `passw`, `passphrase`, `auth`, …), or one with `pass`, `pw`,
 * `cred` or `creds` as a word of its own (`db_pass`, `dbPass`, `pw`, `creds`; not `bypass`, `credits`); false for anything that is not a string.
 */
export function isCredentialParam(name: string): boolean {
  if (typeof name !== "string") return false;
  return (
    CREDENTIAL_PARAMS.has(name.toLowerCase().replace(/[-_]/g, "")) ||
    TELLING_NAME.test(name) ||
    hasPassWord(name)
  );
}

function unicodeEscape(c: string, upper = false): string {
  const hex = c.charCodeAt(0).toString(16).padStart(4, "0");
  return `\\u${upper ? hex.toUpperCase() : hex}`;
}

const ALPHANUMERIC = /[A-Za-z0-9]/;

/**
 * Which characters each JSON writer escapes besides `"`, `\` and control characters: none
 * (`JSON.stringify`), `/` and non-ASCII (PHP's `json_encode`), `<>&='` (Gson), `<>&` and U+2028/9
 * (Go), non-ASCII (Python), and everything but letters and digits (either case of hex; `"` and `\`
 * as `\"` and `\\`, or as `\u0022` and `\u005c` too).
 */
const JSON_ESCAPES: readonly ((c: string) => string | undefined)[] = [
  () => undefined,
  (c) => (c === "/" ? "\\/" : c > "\x7e" ? unicodeEscape(c) : undefined),
  (c) => ("<>&='".includes(c) ? unicodeEscape(c) : undefined),
  (c) => ("<>&\u2028\u2029".includes(c) ? unicodeEscape(c) : undefined),
  (c) => (c > "\x7e" ? unicodeEscape(c) : undefined),
  (c) => (ALPHANUMERIC.test(c) ? undefined : unicodeEscape(c)),
  (c) => (ALPHANUMERIC.test(c) ? undefined : unicodeEscape(c, true)),
];

/** Writers that escape every character but letters and digits as `\u`, the quote and backslash included. */
const ALL_ESCAPED: readonly ((c: string) => string)[] = [
  (c) => (ALPHANUMERIC.test(c) ? c : unicodeEscape(c)),
  (c) => (ALPHANUMERIC.test(c) ? c : unicodeEscape(c, true)),
];

/** `value` as JSON writers put it inside a string: a server echoing it in a JSON body writes these. */
function jsonForms(value: string): string[] {
  const plain = (c: string): string | undefined =>
    c === "\\" ? "\\\\" : c === '"' ? '\\"' : c < " " ? unicodeEscape(c) : undefined;
  const chars = value.split("");
  return [
    ...JSON_ESCAPES.map((extra) => chars.map((c) => plain(c) ?? extra(c) ?? c).join("")),
    ...ALL_ESCAPED.map((write) => chars.map(write).join("")),
  ];
}

/** The shortest value also looked for base64-encoded: a shorter one's encoded core is a few characters ordinary text holds. */
const SHORTEST_ENCODED = 8;

/**
 * The base64 of `value` wherever it stands in an encoded text: for each of the three byte
 * alignments, the characters that depend on its bytes alone (the edges also carry the neighbours'
 * bits), standard and URL-safe.
 */
function base64Cores(value: string): string[] {
  const bytes = new TextEncoder().encode(value);
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = new Uint8Array(offset + bytes.length);
    padded.set(bytes, offset);
    let binary = "";
    for (const byte of padded) binary += String.fromCharCode(byte);
    const encoded = btoa(binary);
    const core = encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + bytes.length) * 8) / 6));
    cores.push(core, core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return cores;
}

/**
 * `value` percent-encoded as URL and form writers put it: either case of hex, `+` for a space. A
 * lone surrogate is encoded as the U+FFFD a writer (and `URLSearchParams`) puts in its place, so a
 * value holding one is looked for rather than thrown on.
 */
function percentForms(value: string): string[] {
  const lower = (text: string) => text.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());
  const component = encodeURIComponent(value.toWellFormed());
  const form = new URLSearchParams({ v: value }).toString().slice(2);
  return [component, lower(component), form, lower(form)];
}

/** A header value that is an auth scheme and then the credentials: `Bearer <token>`, `Basic <base64>`. */
const AUTH_SCHEME = /^\s*(?:bearer|basic|token|bot|apikey|api-key|key|digest|dpop|mac|hmac)\s+(\S.*)$/is;

/**
 * How one secret, or one form of it, is looked for in a text. `secretsOf` answers the `text`s;
 * the redactors read the rest.
 */
export interface Pattern {
  /** What is looked for. */
  readonly text: string;
  /**
   * Replaced only as a word of its own: where its first (last) character is a letter or digit, the
   * character before (after) it must not be one. A short secret (`123456`, `test-key`) is then
   * left alone inside `pid 1234567` or `test-keys.ts`.
   */
  readonly bounded: boolean;
  /** The secret as it reads (not an encoding of it): also looked for with every `%XX` of a text decoded. */
  readonly plain: boolean;
  /**
   * A long credential with no whitespace in it: also looked for cut short (a run that begins it
   * and reaches `SHORTEST_PIECE` characters past its family's public prefix — `sk-proj-`,
   * `sk-ant-`, `github_pat_`, a JWT's header — or a run of `SHORTEST_PIECE` characters or more
   * that ends it) and wrapped (a line break and indentation anywhere inside it).
   */
  readonly pieces: boolean;
}

/**
 * Secrets shorter than this are replaced only as words of their own (see `Pattern.bounded`): a
 * six-digit key is a number ordinary text holds inside longer ones.
 */
export const WHOLE_WORD_BELOW = 16;

/** The shortest credential also looked for cut short or wrapped across lines. */
export const CUT_SHORT_FROM = 20;

/** The shortest run of a long credential's first or last characters that is replaced on its own. */
export const SHORTEST_PIECE = 12;

/** `value`'s UTF-8 bytes in hex (either case) and every one of them percent-encoded (either case). */
function byteForms(value: string): string[] {
  const hex = [...new TextEncoder().encode(value)].map((byte) => byte.toString(16).padStart(2, "0"));
  const lower = hex.join("");
  const percent = hex.map((pair) => `%${pair}`).join("");
  return [lower, lower.toUpperCase(), percent, percent.toUpperCase()];
}

/**
 * What a value is: the endpoint's credential; a credential header's whole value that is a scheme
 * and its credentials (`Bearer <token>`, whose token is looked for cut short on its own); or only
 * another header's value (kept for logs).
 */
type Kind = "credential" | "schemed" | "other";

function addPattern(
  out: Map<string, Pattern>,
  text: string,
  bounded: boolean,
  plain: boolean,
  pieces: boolean,
) {
  if (!text || text.length < MIN_SECRET_LENGTH) return;
  const had = out.get(text);
  out.set(
    text,
    had
      ? { text, bounded: had.bounded && bounded, plain: had.plain || plain, pieces: had.pieces || pieces }
      : { text, bounded, plain, pieces },
  );
}

function addForms(out: Map<string, Pattern>, value: string, kind: Kind): void {
  const trimmed = value.trim();
  if (trimmed.length < MIN_SECRET_LENGTH || trimmed === NO_KEY || isPlaceholderKey(trimmed)) return;
  // Another header's value may be a secret under a name nothing tells (so logs lose it), or a word
  // (`openai`, `300000`): it is replaced only whole, as a word of its own.
  const bounded = (text: string) => kind === "other" || text.length < WHOLE_WORD_BELOW;
  // Cut-short matching is for tokens: a value holding whitespace (`Digest username="…", …`) is
  // looked for whole only, so its words never count as pieces of it.
  const pieces = (text: string) => kind === "credential" && text.length >= CUT_SHORT_FROM && !/\s/.test(text);
  addPattern(out, trimmed, bounded(trimmed), true, pieces(trimmed));
  const decoded = safeDecode(trimmed);
  if (decoded !== undefined) addPattern(out, decoded, bounded(decoded), true, pieces(decoded));
  // The same value as it appears percent-encoded in a URL or a query string, escaped in a JSON
  // body, base64-encoded, in hex and (a hex key) in capitals: the redaction reads the raw text,
  // before a parser would turn `\/` or `\u003d` back.
  for (const form of [...percentForms(trimmed), ...jsonForms(trimmed)]) {
    addPattern(out, form, bounded(trimmed), false, false);
  }
  if (trimmed.length >= SHORTEST_ENCODED) {
    if (/^[0-9a-f-]+$/i.test(trimmed) && /[a-f]/i.test(trimmed)) {
      addPattern(out, trimmed.toLowerCase(), bounded(trimmed), false, false);
      addPattern(out, trimmed.toUpperCase(), bounded(trimmed), false, false);
    }
    // Encodings stand inside longer runs of their alphabet: looked for anywhere.
    for (const form of [...base64Cores(trimmed), ...byteForms(trimmed)])
      addPattern(out, form, false, false, false);
  }
}

function safeDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/** A path segment written `name=value` or `name:value` (`/key=…`, `/api_key=…`, `/token:…`). */
const NAMED_SEGMENT = /^([^=:]+)[=:](.+)$/;

/** A run of 16 or more letters and digits, as a key holds and a word, version or date does not. */
const KEY_RUN = /[A-Za-z0-9]{16,}/g;

/**
 * The credentials in a base URL's path, as some relays take a key there (`/v1/sk-…/`, `/key=…/`):
 * the value of a segment written `name=value` or `name:value` under a credential's name
 * (`isCredentialParam`), and a whole segment holding a run of 16 or more letters and digits, letters
 * and digits both (`sk-abc123def456ghi789jkl`, an account's hex id) — not `gpt-4o-mini-2024-07-18`
 * nor `v1`. Each segment as written and percent-decoded.
 */
function pathCredentials(pathname: string): string[] {
  const found: string[] = [];
  for (const written of pathname.split("/")) {
    for (const segment of new Set([written, safeDecode(written) ?? written])) {
      const named = NAMED_SEGMENT.exec(segment);
      if (named?.[1] !== undefined && named[2] !== undefined && isCredentialParam(named[1].trim())) {
        found.push(named[2]);
      } else if ((segment.match(KEY_RUN) ?? []).some((run) => /[0-9]/.test(run) && /[A-Za-z]/.test(run))) {
        found.push(segment);
      }
    }
  }
  return found;
}

/**
 * The patterns `endpoint`'s secrets are looked for by: its key, URL credentials, the values of
 * headers under a credential's name and what follows an auth scheme under any name — and, unless
 * `credentialsOnly`, every other header's value (whole words only). Longest first.
 */
export function patternsOf(endpoint: SecretBearer | undefined, credentialsOnly = false): Pattern[] {
  const out = new Map<string, Pattern>();
  // Fields the endpoint holds itself (or its class): never one a polluted Object.prototype holds.
  const apiKey = endpointField(endpoint, "apiKey");
  const headers = endpointField(endpoint, "headers");
  const baseUrl = endpointField(endpoint, "baseUrl");
  if (typeof apiKey === "string") addForms(out, apiKey, "credential");
  if (headers && typeof headers === "object") {
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== "string") continue;
      // `Bearer <token>`, `Basic <base64>`: a server may quote the credential without its scheme.
      const credentials = AUTH_SCHEME.exec(value)?.[1];
      // `Bearer ollama` is no credential either.
      if (credentials !== undefined && isPlaceholderKey(credentials)) continue;
      const credentialName = isCredentialHeader(name);
      // Under a name that does not read as a credential's, `<scheme> <rest>` is one only when the
      // rest is one word: `X-Title: Bot Builder for Customer Support` is an app's name, and a token
      // never holds a space.
      const schemed = credentials !== undefined && (credentialName || !/\s/.test(credentials.trim()));
      if (credentialName) addForms(out, value, schemed ? "schemed" : "credential");
      else if (!credentialsOnly) addForms(out, value, "other");
      if (schemed && credentials) addForms(out, credentials, "credential");
    }
  }
  if (typeof baseUrl === "string") {
    try {
      const url = new URL(baseUrl.trim());
      // As the URL holds them (percent-encoded) and as they read.
      for (const part of [url.username, url.password]) {
        if (!part) continue;
        addForms(out, part, "credential");
        const decoded = safeDecode(part);
        if (decoded) addForms(out, decoded, "credential");
      }
      for (const [name, value] of url.searchParams) {
        if (isCredentialParam(name)) addForms(out, value, "credential");
      }
      for (const secret of pathCredentials(url.pathname)) addForms(out, secret, "credential");
    } catch {
      // Not a URL: nothing in it can be told apart as a credential.
    }
  }
  // Longest first, so a secret that contains another is replaced whole.
  return [...out.values()].sort((a, b) => b.text.length - a.text.length);
}

/**
 * The endpoint's secrets, as they may be quoted back: its API key (not `NO_KEY`, nor a local
 * server's placeholder such as `ollama`), every header value (and the credentials after an auth
 * scheme: `Bearer <token>`'s token), and the user name, password and credential query values of
 * its base URL and the credentials in its path (a segment `key=…` or `token:…` under a credential's
 * name, or one holding a run of 16 or more letters and digits mixed: `/v1/sk-abc123…/`) — each as given, trimmed, percent-encoded (either case of hex, as a form writes it,
 * or every byte) or decoded, as JSON writers escape it inside a string (`\/`, `\u003d`, …), and,
 * for values of 8 characters or more, base64-encoded at any alignment (standard or URL-safe), its
 * bytes in hex (either case) and a hex key in either case. Values under `MIN_SECRET_LENGTH`
 * characters are left out. Longest first. Reads only those fields; never throws (an unparseable URL
 * gives nothing). The redactors look for more than these strings: see `redactor`.
 */
export function secretsOf(endpoint: SecretBearer | undefined): string[] {
  return patternsOf(endpoint).map((pattern) => pattern.text);
}

/** A telling word of a header name other than `key` (which only counts as a word of its own, below). */
const TELLING_PART =
  /token(?!s)|secret|passw|passphrase|pwd|auth|credential|cookie|bearer|signature|private/i;

/** `key` as a word of a header name, alone or after what it is the key of (`apikey`, `subscription-key`). */
const KEY_PART =
  /^(?:x?api|access|secret|private|subscription|client|master|admin|service|virtual|session|license|account|app)?keys?$/i;

/**
 * True for a header name that reads as a credential's: one of its words (split at `-`, `_`, `.`)
 * is a credential name (`isCredentialParam`'s short list), holds a telling part (`auth`, `token`,
 * `secret`, …), has `pass` as a word of its own (`X-DbPass`) or is a key (`key`, `apikey`,
 * `virtual-key`). Words are read whole, so the `key` in a brand such as `x-portkey-provider` and the
 * `pass` in `x-bypass-cache` do not count.
 */
function isCredentialHeader(name: string): boolean {
  return name
    .split(/[-_.]/)
    .some(
      (part) =>
        part !== "" &&
        (CREDENTIAL_PARAMS.has(part.toLowerCase()) ||
          KEY_PART.test(part) ||
          TELLING_PART.test(part) ||
          hasPassWord(part)),
    );
}

/**
 * The credentials among `endpoint`'s secrets, for what a server answers successfully (a model
 * listing): the key, URL credentials, every header under a name that reads as a credential's
 * (`authorization`, `api-key`, `x-portkey-virtual-key`, `helicone-auth`, …) and the credentials
 * after an auth scheme under any name (`Bearer <token>`) — in `secretsOf`'s forms. A header under
 * any other name (`x-portkey-provider: mistral`, a tenant or region word) is routing, not a
 * credential: a listing naming it (`mistral-large-latest`) is left whole. Nor is an API key that is
 * a local server's documented placeholder (`ollama`, `lm-studio`, `EMPTY`, `sk-no-key-required`, …):
 * an answer or a tool's error saying `~/.ollama/models` is left whole too.
 */
export function credentialsOf(endpoint: SecretBearer | undefined): string[] {
  return patternsOf(endpoint, true).map((pattern) => pattern.text);
}

/**
 * Keys local servers document for a client that insists on one (Ollama's `ollama`, LM Studio's
 * `lm-studio`, vLLM's and llama.cpp's `EMPTY`, `sk-no-key-required`, …): no secret, and words a
 * model's answer or a tool's error uses (`~/.ollama/models`), which redacting would mangle.
 */
const PLACEHOLDER_KEYS: ReadonlySet<string> = new Set([
  "ollama",
  "lm-studio",
  "lmstudio",
  "empty",
  "none",
  "no-key",
  "nokey",
  "sk-no-key-required",
  "not-needed",
  "dummy",
  "placeholder",
  "local",
  "llama.cpp",
  "llamacpp",
  "vllm",
]);

/** True for a key that is a local server's documented placeholder (`PLACEHOLDER_KEYS`, any case, space around it). */
function isPlaceholderKey(key: string): boolean {
  return PLACEHOLDER_KEYS.has(key.trim().toLowerCase());
}

/** Patterns for strings given as they are (a caller's own list): each looked for exactly, anywhere. */
export function exactPatterns(secrets: readonly string[]): Pattern[] {
  return secrets.map((text) => ({ text, bounded: false, plain: false, pieces: false }));
}

/** A stretch of a text to replace: `[start, end)`. */
export type Stretch = readonly [number, number];

function isWordChar(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

/** True where `pattern`, found at `text[start, end)`, does not run on into more letters or digits. */
function standsAlone(text: string, start: number, end: number, pattern: string): boolean {
  if (start > 0 && isWordChar(pattern.charCodeAt(0)) && isWordChar(text.charCodeAt(start - 1))) return false;
  return !(
    end < text.length &&
    isWordChar(pattern.charCodeAt(pattern.length - 1)) &&
    isWordChar(text.charCodeAt(end))
  );
}

/** Every place `pattern` stands in `text` (whole words only where it is `bounded`), as `[start, end)`. */
function placesOf(text: string, pattern: Pattern, found: (start: number, end: number) => void): void {
  const { text: wanted, bounded } = pattern;
  let at = text.indexOf(wanted);
  while (at >= 0) {
    if (!bounded || standsAlone(text, at, at + wanted.length, wanted)) {
      found(at, at + wanted.length);
      at = text.indexOf(wanted, at + wanted.length);
    } else at = text.indexOf(wanted, at + 1);
  }
}

/**
 * A text as a secret may be hidden in it: every `%XX` of an ASCII character decoded and, with
 * `gaps`, every run of blanks holding a line break left out. `span(start, end)` is where the view's
 * `[start, end)` stands in the text.
 */
interface View {
  text: string;
  span: (start: number, end: number) => [number, number];
}

const isBlank = (code: number) => code === 32 || code === 9;

/**
 * The places a view differs from its text at: a line break (or a JSON string's `\n`, `\r`) with the
 * blanks after it, or a `%XX` of an ASCII character. Each alternative starts with its own
 * character, so nothing backtracks.
 */
const GAP_OR_ESCAPE = /(?:[\r\n]|\\[rn])(?:[ \t\r\n]|\\[rnt])*|%[0-7][0-9A-Fa-f]/g;
const ESCAPE = /%[0-7][0-9A-Fa-f]/g;
const LINE_BREAK = /[\r\n]|\\[rn]/;

/**
 * `text`'s view (see `View`), in one pass of a regular expression that cannot backtrack. The view
 * is kept as pieces: a run copied from the text, or one decoded `%XX`; a place in it is found by
 * halving over the pieces' starts.
 */
function viewOf(text: string, gaps: boolean): View {
  const parts: string[] = [];
  const viewStarts: number[] = [];
  const textStarts: number[] = [];
  const widths: number[] = [];
  let length = 0;
  let consumed = 0;
  const piece = (part: string, at: number, width: number) => {
    viewStarts.push(length);
    textStarts.push(at);
    widths.push(width);
    parts.push(part);
    length += part.length;
  };
  const copy = (from: number, to: number) => {
    if (to > from) piece(text.slice(from, to), from, 1);
  };
  const places = gaps ? GAP_OR_ESCAPE : ESCAPE;
  places.lastIndex = 0;
  for (let found = places.exec(text); found !== null; found = places.exec(text)) {
    const at = found.index;
    if (found[0].charCodeAt(0) === 37) {
      copy(consumed, at);
      piece(String.fromCharCode(Number.parseInt(found[0].slice(1), 16)), at, 3);
      consumed = at + 3;
    } else {
      // The blanks before the line break go with it.
      let start = at;
      while (start > consumed && isBlank(text.charCodeAt(start - 1))) start--;
      copy(consumed, start);
      consumed = at + found[0].length;
    }
  }
  copy(consumed, text.length);
  /** The text index of the view's `index`th character, and the end of that character there. */
  const locate = (index: number): [number, number] => {
    let low = 0;
    let high = viewStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((viewStarts[middle] as number) <= index) low = middle;
      else high = middle - 1;
    }
    const width = widths[low] as number;
    const at = (textStarts[low] as number) + (index - (viewStarts[low] as number)) * width;
    return [at, at + width];
  };
  return {
    text: parts.join(""),
    span: (start, end) => [locate(start)[0], locate(end - 1)[1]],
  };
}

/**
 * For each position `i` of `text`, how many characters from there agree with the start of
 * `wanted` (the Z-algorithm over `wanted`, a separator and `text`): linear in both lengths.
 */
function agreeingLengths(wanted: string, text: string): Int32Array {
  const n = wanted.length;
  const total = n + 1 + text.length;
  const at = (k: number) => (k < n ? wanted.charCodeAt(k) : k === n ? -1 : text.charCodeAt(k - n - 1));
  const z = new Int32Array(total);
  let left = 0;
  let right = 0;
  for (let k = 1; k < total; k++) {
    let length = k < right ? Math.min(right - k, z[k - left] as number) : 0;
    while (k + length < total && at(length) === at(k + length)) length++;
    z[k] = length;
    if (k + length > right) {
      left = k;
      right = k + length;
    }
  }
  return z.subarray(n + 1);
}

const reversed = (text: string) => text.split("").reverse().join("");

/** A JWT's first segment (its header, the same for every token signed alike) and the dot after it. */
const JWT_HEADER = /^eyJ[A-Za-z0-9_-]*\./;

/**
 * A key's first run of letters, `-` and `_` (within its first 16 characters), up to its last `-` or
 * `_`: `sk-proj-`, `sk-ant-`, `github_pat_`.
 */
const LEADING_WORDS = /^[A-Za-z_-]{0,15}[-_]/;

/**
 * How many of `secret`'s first characters may be its family's public prefix, the same for every
 * key of its kind: its first run of letters, `-` and `_` within its first 16 characters, up to the
 * last `-` or `_` in it (`sk-proj-`, `sk-ant-`, `github_pat_`; none for `AIza…`), or a JWT's whole
 * first segment (its header, the same for every token signed alike).
 */
function publicPrefixLength(secret: string): number {
  return (JWT_HEADER.exec(secret) ?? LEADING_WORDS.exec(secret))?.[0].length ?? 0;
}

/**
 * The runs of `view` that begin `secret` and reach `SHORTEST_PIECE` characters past its public
 * prefix (`publicPrefixLength`), or that end it and are `SHORTEST_PIECE` characters or more — the
 * whole of it included.
 */
function piecesIn(view: View, secret: string, found: (start: number, end: number) => void): void {
  const text = view.text;
  const head = text.includes(secret.slice(0, SHORTEST_PIECE));
  const tail = text.includes(secret.slice(secret.length - SHORTEST_PIECE));
  if (head) {
    // `sk-ant-api03-` or `github_pat_11` written alone (in code, in another key) is no piece of this one.
    const shortestHead = Math.min(secret.length, publicPrefixLength(secret) + SHORTEST_PIECE);
    const lengths = agreeingLengths(secret, text);
    for (let i = 0; i < lengths.length; i++) {
      const length = lengths[i] as number;
      if (length >= shortestHead) found(i, i + length);
    }
  }
  if (tail) {
    const lengths = agreeingLengths(reversed(secret), reversed(text));
    for (let r = 0; r < lengths.length; r++) {
      const length = lengths[r] as number;
      if (length >= SHORTEST_PIECE) found(text.length - r - length, text.length - r);
    }
  }
}

/**
 * Where `patterns` stand in `text`: each pattern as written; a plain one also in the text with its
 * `%XX` decoded; a long credential's also cut short or wrapped across lines. Sorted, overlaps merged.
 */
export function stretchesOf(text: string, patterns: readonly Pattern[]): Stretch[] {
  const found: [number, number][] = [];
  const add = (start: number, end: number) => found.push([start, end]);
  const percent = text.includes("%");
  const breaks = LINE_BREAK.test(text);
  let decoded: View | undefined;
  let unwrapped: View | undefined;
  for (const pattern of patterns) {
    placesOf(text, pattern, add);
    if (!pattern.plain) continue;
    if (pattern.pieces) {
      if (!percent && !breaks) piecesIn({ text, span: (start, end) => [start, end] }, pattern.text, add);
      else {
        unwrapped ??= viewOf(text, true);
        const view = unwrapped;
        piecesIn(view, pattern.text, (start, end) => add(...view.span(start, end)));
      }
    } else if (percent) {
      decoded ??= viewOf(text, false);
      const view = decoded;
      placesOf(view.text, pattern, (start, end) => add(...view.span(start, end)));
    }
  }
  if (found.length === 0) return found;
  found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const merged: [number, number][] = [];
  for (const stretch of found) {
    const last = merged[merged.length - 1];
    if (last && stretch[0] < last[1]) last[1] = Math.max(last[1], stretch[1]);
    else merged.push([stretch[0], stretch[1]]);
  }
  return merged;
}

/** How long a piece of `text`'s end is that is the start of one of `secrets` (shorter than it). */
function startAtEnd(text: string, secrets: readonly string[]): number {
  let hold = 0;
  for (const secret of secrets) {
    const from = Math.max(0, text.length - secret.length + 1);
    for (
      let at = text.indexOf(secret[0] as string, from);
      at >= 0;
      at = text.indexOf(secret[0] as string, at + 1)
    ) {
      if (text.length - at <= hold) break;
      if (secret.startsWith(text.slice(at))) {
        hold = text.length - at;
        break;
      }
    }
  }
  return hold;
}

/**
 * How long the longest end of `text` is that stands anywhere inside one of `secrets` (shorter than
 * it): a network read cut inside a key's last characters ends in the middle of the key, not at its
 * start, and the rest, read next, may be too short to count as a piece on its own.
 */
function insideAtEnd(text: string, secrets: readonly string[]): number {
  if (text.length === 0) return 0;
  const lastChar = text[text.length - 1] as string;
  let hold = 0;
  for (const secret of secrets) {
    const cap = Math.min(secret.length - 1, text.length);
    // From each place the text's last character stands in the secret, how far back the two agree.
    for (
      let end = secret.indexOf(lastChar);
      end >= 0 && hold < cap;
      end = secret.indexOf(lastChar, end + 1)
    ) {
      let length = 1;
      while (
        length < cap &&
        length <= end &&
        secret.charCodeAt(end - length) === text.charCodeAt(text.length - 1 - length)
      )
        length++;
      hold = Math.max(hold, length);
    }
  }
  return hold;
}

/** An escape cut short at the end of a text: `%`, `%7`, a JSON string's `\`. */
const PARTIAL_ESCAPE = /(?:%[0-9A-Fa-f]?|\\)$/;

/**
 * How much of `text`'s end could be the start of a secret, for a stream to hold back until the next
 * piece shows whether it is one: the start of a pattern as written, or of a plain one with its
 * `%XX` decoded and line breaks left out (with an escape cut short after it). Ordinary text ends in
 * no secret's first characters, so nothing is held and a stream is passed on as it arrives.
 */
export function heldBack(text: string, patterns: readonly Pattern[]): number {
  const long = patterns.filter((pattern) => pattern.pieces).map((pattern) => pattern.text);
  const hold = Math.max(
    startAtEnd(
      text,
      patterns.map((pattern) => pattern.text),
    ),
    insideAtEnd(text, long),
  );
  const plain = patterns.filter((pattern) => pattern.plain).map((pattern) => pattern.text);
  if (plain.length === 0) return hold;
  const partial = PARTIAL_ESCAPE.exec(text)?.[0].length ?? 0;
  const body = text.slice(0, text.length - partial);
  if (partial === 0 && !body.includes("%") && !LINE_BREAK.test(body)) return hold;
  const view = viewOf(body, true);
  const inView = Math.max(startAtEnd(view.text, plain), insideAtEnd(view.text, long));
  const start = inView > 0 ? view.span(view.text.length - inView, view.text.length)[0] : body.length;
  // An escape cut short is held even alone: it may be a secret's first character, encoded.
  return Math.max(hold, text.length - start);
}

/** `text[0, end)` with each of `stretches` (sorted, apart) that ends by `end` replaced by `REDACTED`. */
export function replaced(text: string, stretches: readonly Stretch[], end = text.length): string {
  let out = "";
  let at = 0;
  for (const [start, stop] of stretches) {
    if (stop > end) break;
    out += text.slice(at, start) + REDACTED;
    at = stop;
  }
  return out + text.slice(at, end);
}

/** `text` with every place of each pattern (see `stretchesOf`) replaced by `REDACTED`. */
export function redactText(text: string, patterns: readonly Pattern[]): string {
  const stretches = stretchesOf(text, patterns);
  return stretches.length === 0 ? text : replaced(text, stretches);
}

/**
 * A property a redactor found a secret in but could not write — a frozen error's `message` or
 * `stack`, a read-only field, a live class instance's field (never written), immutable `Headers`
 * whose holder could not take a redacted copy, a `String` object on a holder that cannot be written:
 * the object holding it, its key (a header's name; a `Map` key; a symbol key as it prints,
 * `Symbol(request)`; `""` for a `Set` item or the value given itself — every key redacted too),
 * and what it would read redacted (build what is shown from that, never from the property). A
 * property whose name holds a secret and could not be renamed (a symbol key, a live instance's
 * field, a frozen holder's) is listed under its redacted name, with its value's text redacted
 * (`"[object]"` for an object, which is walked on its own). What could not be read at all (a revoked
 * `Proxy`, a getter or trap that throws) reads `"[unreadable]"`; a `String` object longer than
 * `STRING_OBJECT_NAMES_UP_TO` reads `"[named properties not read]"` under `""`.
 */
export interface UnwrittenRedaction {
  readonly holder: object;
  readonly key: string;
  readonly redacted: string;
}

const unwrittenBy = new WeakMap<object, readonly UnwrittenRedaction[]>();

/**
 * What the last redaction of `value` (by `redactor`, `credentialRedactor` or a pooled client)
 * found but could not write, anywhere in it; `[]` when it wrote everything, and for anything never
 * redacted or not an object. A host that shows such an error builds the text from `redacted`.
 */
export function unwrittenRedactions(value: unknown): readonly UnwrittenRedaction[] {
  return (typeof value === "object" && value !== null && unwrittenBy.get(value)) || [];
}

/**
 * Makes a redactor for `endpoint`'s secrets (see `secretsOf`).
 *
 * Given a string, it answers the string with every secret replaced by `REDACTED`: each form
 * `secretsOf` lists, and the credentials also with any `%XX` of the text decoded (every byte
 * percent-encoded, or only a `-`); a credential of `CUT_SHORT_FROM` (20) characters or more with
 * no whitespace in it also cut short — a run that begins it and reaches `SHORTEST_PIECE` (12)
 * characters past its family's public prefix (its first run of letters, `-` and `_` up to the last
 * separator, within 16 characters: `sk-proj-`, `sk-ant-`, `github_pat_`; a JWT's first segment),
 * as an error quoting `sk-proj-Abc123Def456…` writes it, or a run of 12 characters or more that
 * ends it — and wrapped (a line break and indentation inside it). So `sk-ant-api03-` or
 * `github_pat_11` written in code, or the start of another key of the family, stays. A
 * secret under `WHOLE_WORD_BELOW` (16) characters, and the value of a header that is not a
 * credential's (kept so a log loses a secret under a name nothing tells, and a word such as
 * `openai` or `300000`), only as a word of its own: `pid 1234567` keeps its digits with a key
 * `123456`. Under such a header, `<scheme> <rest>` (`Bot …`, `Token …`) counts as a credential only
 * when the rest is one word: `X-Title: Bot Builder for Customer Support` is a title. A local
 * server's placeholder key (`ollama`, `sk-no-key-required`, …) is no secret.
 *
 * Given an error (or any object), it redacts it **in place** and answers the same value: an error's
 * `message`, `stack`, `cause` and every other own property, enumerable or not, symbol-keyed ones
 * included (reported under the symbol's name, `Symbol(request)`) (`AggregateError`'s `errors`);
 * every string, array (its items, named properties — a RegExp match's `input` — and symbol keys)
 * and plain object reachable from there (any
 * realm's); property names too — a plain object's or an error's own property named by a secret
 * (a cache of clients keyed by their key) is moved to the redacted name (`… (2)` where that is
 * taken), and a name that cannot be changed (a symbol's description, a live instance's or a frozen
 * holder's property) is reported under its redacted name; a `String` object's text — it cannot be
 * written, so each holder that may be written takes a redacted `String` in its place (one given
 * alone is answered by one, and what that answer still reaches unwritten is reported on it too)
 * and what cannot is reported; a `String` object's own fields, without listing its characters: its
 * symbol-keyed ones always, its named ones up to `STRING_OBJECT_NAMES_UP_TO` (64 Ki) characters of
 * text (a longer one is reported, `"[named properties not read]"`, and a copy of it keeps only
 * its symbol-keyed fields); `Map` keys
 * and values and `Set` values (any realm's), a `URL`'s `href` and `Headers`, names too — immutable ones (a
 * fetched response's, as an SDK error holds them) replaced on their holder by a redacted copy — so
 * whatever a host logs of it, however deep, holds no secret. A class instance (an SDK client, a
 * pool, a `Date`, a `Map` subclass) may be live and is never written, nor is anything reached
 * through it: its own data fields are read (its accessors are not run) and what they would lose is
 * reported — an object such an instance holds is never written, however else the value reaches it. Two `Map` keys
 * that redact alike stay two entries (`… (2)`); two `Set` strings that do are one. Typed arrays and
 * buffers are not read. Anything else is answered as is. Never throws: what it found but could not
 * write (a frozen error, a live instance's field, immutable `Headers` or a `String` object on a
 * frozen holder) is left as
 * it was and listed by `unwrittenRedactions(value)`, and what it could not read (a revoked `Proxy`,
 * a getter or trap that throws) is listed there as `"[unreadable]"` under its holder and key.
 */
export function redactor(endpoint: SecretBearer | undefined): <T>(value: T) => T {
  const patterns = patternsOf(endpoint);
  return <T>(value: T): T => redactDeep(value, patterns);
}

/**
 * `redactor` for text a model or a person reads rather than a log: only `endpoint`'s credentials
 * (`credentialsOf`: the key, URL credentials, headers under a credential's name and what follows
 * an auth scheme) are replaced by `REDACTED`, in every form `redactor` finds them in (cut short,
 * wrapped, percent-encoded, hex; short ones as words of their own). A routing header's value
 * (`x-portkey-provider: openai`, an `X-Title`, even one that starts `Bot …`) stays whole, so a tool
 * error that names the provider still reads. Strings, errors and objects are handled as `redactor`
 * handles them (a live class instance read and reported, never written). Never throws.
 */
export function credentialRedactor(endpoint: SecretBearer | undefined): <T>(value: T) => T {
  const patterns = patternsOf(endpoint, true);
  return <T>(value: T): T => redactDeep(value, patterns);
}

/** What an object's contents are to the walk (see `kindOf`). */
type Shape = "headers" | "url" | "array" | "map" | "set" | "string" | "object" | "unread";

/** An object still to visit: where it was found, and whether it may be written. */
interface Visit {
  readonly value: object;
  /** The object it was read from and under which key (the value given is its own holder, under `""`). */
  readonly holder: object;
  readonly key: string;
  /**
   * Reached through a live class instance (an SDK client, a pool, a socket): read, and what it
   * would lose reported, never written.
   */
  readonly live: boolean;
}

/** `redactor`'s work with the patterns already gathered (for this package's own fetch). */
export function redactDeep<T>(value: T, patterns: readonly Pattern[]): T {
  if (patterns.length === 0) return value;
  if (typeof value === "string") return redactText(value, patterns) as T;
  if (typeof value !== "object" || value === null) return value;
  // Walked with a list of objects still to visit, not by recursion: a server's error body may nest
  // deeper than the call stack goes.
  const seen = new WeakSet<object>();
  const pending: Visit[] = [];
  /**
   * `String` objects left in place (on a holder that could not take the redacted copy, or given
   * alone), read once all else is: what the copy shares with one (a field's object) is written by
   * the copy's walk first, and only what is left is reported.
   */
  const leftBoxes: Visit[] = [];
  const throughInstances = heldByInstances(value);
  const unwritten: UnwrittenRedaction[] = [];
  // A report's key is text a host shows too: a property name, a header's name or a symbol's
  // description may hold the secret.
  const leave = (holder: object, key: string, redacted: string) =>
    unwritten.push({ holder, key: redactText(key, patterns), redacted });
  /** `String` objects the walk made (redacted copies), and big ones already reported unlisted. */
  const made = new WeakSet<object>();
  const unlistedOnce = new WeakSet<object>();
  /** Immutable `Headers` met so far, and the redacted copy each holder gets instead. */
  const copies = new Map<object, Headers>();
  /** `String` objects whose text held a secret, and the redacted `String` each holder gets instead. */
  const boxes = new Map<object, object>();
  /** The patterns lowercased, gathered the first time a header's name is read. */
  let namePatterns: Pattern[] | undefined;
  const walk: Walk = {
    visit(current, holder, key, live) {
      if (typeof current === "string") return redactText(current, patterns);
      if (typeof current !== "object" || current === null) return current;
      // What a live instance also holds is live, however else the walk meets it.
      const held = live || (current !== value && throughInstances.has(current));
      // A `String` object's text cannot be written: its holder takes a redacted `String` instead;
      // a live holder (which is never written), or a `String` subclass's instance, has it reported.
      const text = boxedText(current);
      if (text !== undefined) {
        const clean = redactText(text, patterns);
        if (clean !== text) {
          if (!live && isPlainBox(current)) return boxes.get(current) ?? boxCopy(current, clean);
          leave(holder, key, clean);
        }
      }
      if (!seen.has(current)) {
        seen.add(current);
        // Headers hold only strings: redacted at once, so the holder can take a copy in their place.
        if (isHeaders(current)) redactHeaders(current, walk, held, copies);
        else pending.push({ value: current, holder, key, live: held });
      }
      return (!live && copies.get(current)) || current;
    },
    leave,
    unwritable(holder, key, clean, current) {
      if (typeof clean === "string") leave(holder, key, clean);
      else if (current !== null && typeof current === "object" && boxes.get(current) === clean) {
        leave(holder, key, String.prototype.valueOf.call(clean));
        // The `String` left in place is only read: what else it holds is reported.
        if (!seen.has(current)) {
          seen.add(current);
          leftBoxes.push({ value: current, holder, key, live: true });
        }
      } else if (current !== null && typeof current === "object" && copies.has(current)) {
        for (const [name, text] of copies.get(current) as Headers) {
          if (current instanceof Headers && current.get(name) !== text) leave(current, name, text);
        }
      }
    },
    redact: (text) => redactText(text, patterns),
    redactName(name) {
      namePatterns ??= caseless(patterns);
      return redactText(name, namePatterns);
    },
    unlisted(box) {
      if (made.has(box) || unlistedOnce.has(box)) return;
      unlistedOnce.add(box);
      leave(box, "", UNLISTED);
    },
  };
  /**
   * A new `String` of `clean` with `box`'s other own properties (not its characters), walked in
   * its place: what the walk hands every writable holder of `box`.
   */
  const boxCopy = (box: object, clean: string): object => {
    const copy = new String(clean);
    made.add(copy);
    if (String.prototype.valueOf.call(box).length > STRING_OBJECT_NAMES_UP_TO) walk.unlisted(box);
    for (const key of boxKeys(box)) {
      const descriptor = ownDescriptor(box, key);
      if (descriptor) Reflect.defineProperty(copy, key, descriptor);
    }
    boxes.set(box, copy);
    seen.add(copy);
    pending.push({ value: copy, holder: copy, key: "", live: false });
    return copy;
  };
  // The value given is its own holder, under no key: `Headers` given alone that cannot be written
  // are reported header by header.
  const top = walk.visit(value, value, "", false);
  if (top !== value) walk.unwritable(value, "", top, value);
  for (
    let next = pending.pop() ?? leftBoxes.pop();
    next !== undefined;
    next = pending.pop() ?? leftBoxes.pop()
  ) {
    try {
      redactOne(next, walk);
    } catch {
      // A revoked Proxy, a trap or a method that throws: what it holds cannot be told.
      leave(next.holder, next.key, UNREADABLE);
    }
  }
  if (unwritten.length > 0) unwrittenBy.set(value, unwritten);
  else unwrittenBy.delete(value);
  // A `String` given cannot be redacted in place: the redacted `String` is answered, and what the
  // one given still holds is reported on it. What the answer reaches but could not be written (a
  // frozen object both hold) is reported on the answer too.
  const answer = boxes.get(value);
  if (answer === undefined) return value;
  const onAnswer = unwritten.filter((entry) => entry.holder !== value);
  if (onAnswer.length > 0) unwrittenBy.set(answer, onAnswer);
  else unwrittenBy.delete(answer);
  return answer as T;
}

/**
 * Every object `value` reaches through a live class instance (see `kindOf`), the instances
 * included and `value` itself left out: only read by the walk, whichever way it meets them. Looks
 * at objects only (data properties; no accessor is run) and never throws.
 */
function heldByInstances(value: object): WeakSet<object> {
  const live = new WeakSet<object>();
  const seen = new WeakSet<object>([value]);
  const pending: [object, boolean][] = [[value, false]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [current, through] = next;
    let children: unknown[];
    let held = through;
    try {
      const [shape, instance] = kindOf(current);
      held ||= instance;
      children = objectsIn(current, shape);
    } catch {
      continue;
    }
    if (held && current !== value) live.add(current);
    for (const child of children) {
      if (typeof child !== "object" || child === null || child === value) continue;
      if (held ? live.has(child) : seen.has(child)) continue;
      // Met first outside an instance and later through one: looked at again, as live.
      if (held) live.add(child);
      else seen.add(child);
      pending.push([child, held]);
    }
  }
  return live;
}

/** The values `value` holds that the walk would visit (its data properties; a Map's keys and values; a Set's items). */
function objectsIn(value: object, shape: Shape): unknown[] {
  switch (shape) {
    case "headers":
    case "url":
    case "unread":
      return [];
    case "map":
      return [...(Map.prototype.entries.call(value) as Iterable<[unknown, unknown]>)].flat();
    case "set":
      return [...(Set.prototype.values.call(value) as Iterable<unknown>)];
    default:
      return (shape === "string" ? boxKeys(value) : ownKeys(value)).map((key) => {
        const found = ownDataValue(value, key);
        return found === NOT_DATA ? undefined : found;
      });
  }
}

/** What `unwrittenRedactions` lists for an object the walk could not read (a revoked Proxy). */
const UNREADABLE = "[unreadable]";

/**
 * The longest text of a `String` object whose own named properties (`box.note`) are read: listing
 * them lists every character's index too, so a longer one is read as its text and its
 * symbol-keyed properties only, and reported under `""` as {@link UNLISTED}.
 */
export const STRING_OBJECT_NAMES_UP_TO = 65_536;

/** What `unwrittenRedactions` lists for a `String` object longer than `STRING_OBJECT_NAMES_UP_TO`: its named properties were not read. */
const UNLISTED = "[named properties not read]";

/**
 * A `String` object's own keys that are not its characters or `length`: its symbols, and up to
 * `STRING_OBJECT_NAMES_UP_TO` characters of text, its named properties.
 */
function boxKeys(box: object): (string | symbol)[] {
  const length = String.prototype.valueOf.call(box).length;
  if (length > STRING_OBJECT_NAMES_UP_TO) return Object.getOwnPropertySymbols(box);
  return ownKeys(box).filter((key) => key !== "length" && !isIndex(key, length));
}

interface Walk {
  /**
   * The child `current` of `holder[key]` redacted (a string), a redacted copy of immutable
   * `Headers` (for a holder that may be written), or `current` itself, queued when it is an
   * object to visit.
   */
  visit(current: unknown, holder: object, key: string, live: boolean): unknown;
  /** Reports a string of `holder[key]` that was not written, and what it reads redacted. */
  leave(holder: object, key: string, redacted: string): void;
  /** Reports `clean` (from `visit(current)`) that could not be written to `holder[key]`. */
  unwritable(holder: object, key: string, clean: unknown, current: unknown): void;
  redact(text: string): string;
  /**
   * A header's name redacted. `Headers` lowercase every name, so a key with capitals stands in
   * one lowercased: names are matched against the patterns lowercased.
   */
  redactName(name: string): string;
  /** Reports, once, a `String` object longer than `STRING_OBJECT_NAMES_UP_TO` whose named properties were not read. */
  unlisted(box: object): void;
}

function isHeaders(value: object): value is Headers {
  try {
    return typeof Headers === "function" && value instanceof Headers;
  } catch {
    return false;
  }
}

/**
 * Redacts `headers` in place, or — where they are immutable (a fetched response's) — leaves them
 * and keeps a redacted copy in `copies` for their holder to take instead. Under a live instance
 * they are only read, and what they would lose reported.
 */
function redactHeaders(headers: Headers, walk: Walk, live: boolean, copies: Map<object, Headers>): void {
  const entries = [...headers];
  // A header's name may hold the secret too (`x-<key>`): it moves to the redacted name, made a
  // valid header name (`x-redacted`) where the redacted text is not one.
  const clean = entries.map(
    ([name, text]) => [headerName(walk.redactName(name)) ?? "redacted", walk.redact(text)] as const,
  );
  const changed = clean.filter(([name, text], i) => name !== entries[i]?.[0] || text !== entries[i]?.[1]);
  if (changed.length === 0) return;
  if (live) {
    for (const [name, text] of changed) walk.leave(headers, name, text);
    return;
  }
  try {
    for (const [i, [name, text]] of clean.entries()) {
      const raw = entries[i]?.[0] as string;
      if (name === raw) {
        if (text !== entries[i]?.[1]) headers.set(name, text);
      } else {
        headers.delete(raw);
        headers.append(name, text);
      }
    }
    return;
  } catch {
    // Immutable: the holder gets a copy.
  }
  const copy = new Headers();
  for (const [name, text] of clean) copy.append(name, text);
  copies.set(headers, copy);
}

/**
 * `patterns` with their text lowercased (the same length, so still longest first), those that
 * become one merged as `addPattern` merges them: for text that is all lowercase, as a header's
 * name always is, they find a secret whatever its case.
 */
function caseless(patterns: readonly Pattern[]): Pattern[] {
  const out = new Map<string, Pattern>();
  for (const pattern of patterns) {
    const text = pattern.text.toLowerCase();
    const had = out.get(text);
    out.set(
      text,
      had
        ? {
            text,
            bounded: had.bounded && pattern.bounded,
            plain: had.plain || pattern.plain,
            pieces: had.pieces || pattern.pieces,
          }
        : { ...pattern, text },
    );
  }
  return [...out.values()];
}

/**
 * `name` where it is a valid header name, else it without the characters a header name may not
 * hold (`x-[redacted]` → `x-redacted`), or `undefined` where nothing valid is left.
 */
function headerName(name: string): string | undefined {
  const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  if (token.test(name)) return name.toLowerCase();
  const stripped = name.replace(/[^!#$%&'*+\-.^_`|~0-9A-Za-z]/g, "");
  return stripped === "" ? undefined : stripped.toLowerCase();
}

/** Objects whose contents are not text a secret is written in, or not to be read: left alone. */
function unread(value: object): boolean {
  return (
    ArrayBuffer.isView(value) ||
    value instanceof ArrayBuffer ||
    (typeof SharedArrayBuffer === "function" && value instanceof SharedArrayBuffer) ||
    value instanceof Promise ||
    value instanceof WeakMap ||
    value instanceof WeakSet ||
    (typeof WeakRef === "function" && value instanceof WeakRef)
  );
}

/** True where `call` does not throw: a brand check (`Map.prototype.has.call(value)`), across realms. */
function holds(call: () => unknown): boolean {
  try {
    call();
    return true;
  } catch {
    return false;
  }
}

/** True for some realm's `Object.prototype` (or no prototype at all). */
function isRootPrototype(proto: object | null): boolean {
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/** True for an object whose prototype is `Map.prototype`'s or `Set.prototype`'s own kind: no subclass. */
function isOwnKind(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto !== null && isRootPrototype(Object.getPrototypeOf(proto) as object | null);
}

function isError(value: object): boolean {
  return value instanceof Error || Object.prototype.toString.call(value) === "[object Error]";
}

/**
 * What `value` is to the walk — `Headers`; a `URL`; an array, a `Map` or a `Set` (any realm's);
 * another object; or something not read at all (buffers, promises, weak collections) — and whether
 * it is a live class instance, read but never written: anything but a plain object (any realm's),
 * an error (any subclass), and an array, `Map` or `Set` that is no subclass's.
 */
function kindOf(value: object): [Shape, boolean] {
  if (isHeaders(value)) return ["headers", false];
  if (typeof URL === "function" && value instanceof URL) return ["url", false];
  if (unread(value)) return ["unread", false];
  if (Array.isArray(value)) return ["array", !isOwnKind(value)];
  // Plain objects and errors first: most of what is walked, and no brand check to throw for them.
  if (isRootPrototype(Object.getPrototypeOf(value) as object | null) || isError(value))
    return ["object", false];
  if (boxedText(value) !== undefined) return ["string", !isPlainBox(value)];
  if (value instanceof Map || holds(() => Map.prototype.has.call(value, undefined)))
    return ["map", !isOwnKind(value)];
  if (value instanceof Set || holds(() => Set.prototype.has.call(value, undefined)))
    return ["set", !isOwnKind(value)];
  return ["object", true];
}

/**
 * Writes `clean` to `record[key]` — by assignment, or for a read-only property that can still be
 * redefined (`Object.defineProperty`'s default is not writable) by defining it again — answering
 * whether it now holds it.
 */
function wrote(record: Record<PropertyKey, unknown>, key: PropertyKey, clean: unknown): boolean {
  try {
    record[key] = clean;
    if (record[key] === clean) return true;
  } catch {
    // Read-only: redefined below where it may be.
  }
  try {
    Object.defineProperty(record, key, protoless({ value: clean }));
    return record[key] === clean;
  } catch {
    return false;
  }
}

/** A Map key as `unwrittenRedactions` names it: a string redacted, anything else by its type. */
function keyName(key: unknown, walk: Walk): string {
  return typeof key === "string" ? walk.redact(key) : `[${typeof key}]`;
}

/**
 * A key for `map` that reads as `clean` and is not already one of its keys: `clean`, or `clean (2)`,
 * `clean (3)`, … — two keys that redact alike stay two entries.
 */
function freeKey(map: Map<unknown, unknown>, clean: unknown): unknown {
  if (typeof clean !== "string" || !Map.prototype.has.call(map, clean)) return clean;
  for (let n = 2; ; n++) {
    const candidate = `${clean} (${n})`;
    if (!Map.prototype.has.call(map, candidate)) return candidate;
  }
}

/**
 * Redacts the strings held directly by `entry.value` (through `walk.visit`), queueing the objects
 * it holds; where it may not write (a live instance, or what one holds), reports them instead.
 */
function redactOne(entry: Visit, walk: Walk): void {
  const { value } = entry;
  const [shape, instance] = kindOf(value);
  // What a live instance holds is read, never written.
  const live = entry.live || instance;
  switch (shape) {
    case "unread":
    case "headers":
      return;
    case "url": {
      const url = value as URL;
      const href = url.href;
      const clean = walk.redact(href);
      if (clean === href) return;
      if (!live) {
        try {
          url.href = clean;
        } catch {
          // Not a URL once redacted: reported below.
        }
      }
      // The URL writes `[redacted]` its own way (percent-encoded in a password): read back, it must hold no secret.
      if (walk.redact(url.href) !== url.href) walk.leave(url, "href", clean);
      return;
    }
    case "map": {
      const map = value as Map<unknown, unknown>;
      const entries = [...Map.prototype.entries.call(map)] as [unknown, unknown][];
      for (const [key, item] of entries) {
        const name = keyName(key, walk);
        const cleanKey = walk.visit(key, map, name, live);
        const cleanItem = walk.visit(item, map, name, live);
        if (cleanKey === key && cleanItem === item) continue;
        if (live) {
          walk.unwritable(
            map,
            name,
            cleanItem === item ? cleanKey : cleanItem,
            cleanItem === item ? key : item,
          );
          continue;
        }
        if (cleanKey !== key) {
          Map.prototype.delete.call(map, key);
          Map.prototype.set.call(map, freeKey(map, cleanKey), cleanItem);
        } else Map.prototype.set.call(map, key, cleanItem);
      }
      // A subclass's own fields are read below.
      if (!instance) return;
      break;
    }
    case "set": {
      const set = value as Set<unknown>;
      for (const item of [...Set.prototype.values.call(set)]) {
        const clean = walk.visit(item, set, "", live);
        if (clean === item) continue;
        if (live) walk.unwritable(set, "", clean, item);
        else {
          // Two items that redact alike are one item of the Set once redacted.
          Set.prototype.delete.call(set, item);
          Set.prototype.add.call(set, clean);
        }
      }
      // A subclass's own fields are read below.
      if (!instance) return;
      break;
    }
    default:
      break;
  }
  // Every own key, symbols included — but an array's items by index (holes read as `undefined`),
  // then its named keys (a RegExp match's `input`, an `arr.note`) and symbol keys, and not a
  // `String` object's characters (its text was redacted by its holder).
  let keys: PropertyKey[];
  let indices = -1;
  if (shape === "array" && !instance) {
    const length = (value as unknown[]).length;
    indices = length;
    keys = Array.from({ length }, (_, i) => String(i));
    for (const key of ownKeys(value)) if (key !== "length" && !isIndex(key, length)) keys.push(key);
  } else if (shape === "string") {
    if (String.prototype.valueOf.call(value).length > STRING_OBJECT_NAMES_UP_TO) walk.unlisted(value);
    keys = boxKeys(value);
  } else {
    keys = ownKeys(value);
    if (isError(value))
      for (const key of ["message", "stack", "cause"]) if (!keys.includes(key)) keys.push(key);
  }
  const record = value as Record<PropertyKey, unknown>;
  // A property name may hold the secret too (an object of clients keyed by their key): a writable
  // holder that is no live instance has the property moved to the redacted name.
  const renamable = !live && (shape === "object" || shape === "string" || indices >= 0);
  for (const key of keys) {
    // A symbol key is reported as it prints, `Symbol(request)`; an array's index is no text.
    const raw = String(key);
    const name = indices >= 0 && isIndex(key, indices) ? raw : walk.redact(raw);
    let current: unknown;
    try {
      if (live) {
        // A live instance's own accessors are not run: only its data is read.
        const found = ownDataValue(value, key);
        if (found === NOT_DATA) continue;
        current = found;
      } else current = record[key];
    } catch {
      walk.leave(value, name, UNREADABLE);
      continue;
    }
    const clean = walk.visit(current, value, name, live);
    if (name !== raw && renamable && typeof key === "string" && renamed(value, key, name, clean)) continue;
    const written = clean === current || (!live && wrote(record, key, clean));
    if (!written) walk.unwritable(value, name, clean, current);
    if (name === raw) continue;
    // The name could not be changed (a symbol, a live instance's field, a frozen holder): reported
    // under the redacted name, unless the value's own report already is.
    const valueReported =
      typeof clean === "string" ||
      (typeof clean === "object" && clean !== null && boxedText(clean) !== undefined);
    if (!written && valueReported) continue;
    walk.leave(value, name, shownAs(written ? clean : current, walk));
  }
}

/**
 * Moves `holder[key]` (a data property) to `name` — or `name (2)`, `name (3)`, … where `holder`
 * already has that — with `clean` as its value, answering whether it did: not for an accessor, a
 * property that cannot be removed or a holder that takes no new property.
 */
function renamed(holder: object, key: string, name: string, clean: unknown): boolean {
  try {
    const descriptor = ownDescriptor(holder, key);
    if (!descriptor || !("value" in descriptor) || !descriptor.configurable) return false;
    if (!Object.isExtensible(holder)) return false;
    let to = name;
    for (let n = 2; Object.hasOwn(holder, to); n++) to = `${name} (${n})`;
    if (!Reflect.defineProperty(holder, to, protoless({ ...descriptor, value: clean }))) return false;
    if (Reflect.deleteProperty(holder, key)) return true;
    Reflect.deleteProperty(holder, to);
    return false;
  } catch {
    return false;
  }
}

/** What a property whose name could not be redacted holds, as its report reads: its text, redacted, or its type. */
function shownAs(value: unknown, walk: Walk): string {
  if (typeof value === "string") return walk.redact(value);
  if (typeof value === "object" && value !== null) {
    const text = boxedText(value);
    return text === undefined ? "[object]" : walk.redact(text);
  }
  return walk.redact(String(value));
}

/** `value`'s own keys, symbols last (as `Reflect.ownKeys` lists them, at less cost where there are none). */
function ownKeys(value: object): (string | symbol)[] {
  const names: (string | symbol)[] = Object.getOwnPropertyNames(value);
  const symbols = Object.getOwnPropertySymbols(value);
  return symbols.length === 0 ? names : names.concat(symbols);
}

/** True for a `String` object's character's index below `length`. */
function isIndex(key: PropertyKey, length: number): boolean {
  return typeof key === "string" && /^(?:0|[1-9]\d*)$/.test(key) && Number(key) < length;
}

/**
 * The text of a `String` object (any realm's, a subclass's instance included), or `undefined` for
 * anything else. Never throws.
 */
function boxedText(value: object): string | undefined {
  try {
    // No brand check thrown for what is plainly no `String` (most of what is walked): plain
    // objects, arrays, and anything whose tag is another's (an error, a `Date`).
    const proto = Object.getPrototypeOf(value) as object | null;
    if (proto !== null && Object.getPrototypeOf(proto) === null) return undefined;
    if (Array.isArray(value)) return undefined;
    if (!(value instanceof String) && Object.prototype.toString.call(value) !== "[object String]")
      return undefined;
    return String.prototype.valueOf.call(value);
  } catch {
    return undefined;
  }
}

/** True for a `String` object that is no subclass's instance (which is a class instance like any other). */
function isPlainBox(value: object): boolean {
  try {
    const proto = Object.getPrototypeOf(value) as object | null;
    return proto === null || isRootPrototype(Object.getPrototypeOf(proto) as object | null);
  } catch {
    return false;
  }
}
