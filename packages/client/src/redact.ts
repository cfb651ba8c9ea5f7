import { NO_KEY } from "./endpoint.js";

/** The endpoint fields `secretsOf` reads. */
export interface SecretBearer {
  baseUrl?: string;
  apiKey?: string;
  headers?: Record<string, string>;
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

/** `pass` as a word of a name of its own (`db_pass`, `SMTP-PASS`, `dbPass`); not `bypass` or `passive`. */
function hasPassWord(name: string): boolean {
  return name.split(WORD_BREAK).some((word) => word.toLowerCase() === "pass");
}

/**
 * True for a query parameter name that carries a credential (`api-key`, `access_token`, `key`,
 * `sig`, `private_token`, `db_pass`, …): one of the short names in the list, a name with a telling
 * part (`key`, `token`, `secret`, `passw`, `passphrase`, `auth`, …), or one with `pass` as a word
 * of its own (`db_pass`, `dbPass`; not `bypass`); false for anything that is not a string.
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

/** `value` percent-encoded as URL and form writers put it: either case of hex, `+` for a space. */
function percentForms(value: string): string[] {
  const lower = (text: string) => text.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());
  const component = encodeURIComponent(value);
  const form = new URLSearchParams({ v: value }).toString().slice(2);
  return [component, lower(component), form, lower(form)];
}

/** A header value that is an auth scheme and then the credentials: `Bearer <token>`, `Basic <base64>`. */
const AUTH_SCHEME = /^\s*(?:bearer|basic|token|bot|apikey|api-key|key|digest|dpop|mac|hmac)\s+(\S.*)$/is;

function addForms(out: Set<string>, value: string): void {
  const trimmed = value.trim();
  if (trimmed.length < MIN_SECRET_LENGTH || trimmed === NO_KEY) return;
  out.add(trimmed);
  // The same value as it appears percent-encoded in a URL or a query string, escaped in a JSON
  // body, base64-encoded and (a hex key) in capitals: the redaction reads the raw text, before a
  // parser would turn `\/` or `\u003d` back.
  const forms = [...percentForms(trimmed), safeDecode(trimmed), ...jsonForms(trimmed)];
  if (trimmed.length >= SHORTEST_ENCODED) {
    forms.push(...base64Cores(trimmed));
    if (/^[0-9a-f-]+$/i.test(trimmed) && /[a-f]/i.test(trimmed))
      forms.push(trimmed.toLowerCase(), trimmed.toUpperCase());
  }
  for (const form of forms) {
    if (form && form !== trimmed && form.length >= MIN_SECRET_LENGTH) out.add(form);
  }
}

function safeDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/**
 * The endpoint's own credentials, as they may be quoted back: its API key (not `NO_KEY`), every
 * header value (and the credentials after an auth scheme: `Bearer <token>`'s token), and the user
 * name, password and credential query values of its base URL — each
 * as given, trimmed, percent-encoded (either case of hex, or as a form writes it) or decoded, as
 * JSON writers escape it inside a string (`\/`, `\u003d`, …), and, for values of 8 characters or
 * more, base64-encoded at any alignment (standard or URL-safe) and a hex key in either case.
 * Values under `MIN_SECRET_LENGTH` characters
 * are left out. Reads only those fields; never throws (an unparseable URL gives nothing).
 */
export function secretsOf(endpoint: SecretBearer | undefined): string[] {
  const out = new Set<string>();
  if (typeof endpoint?.apiKey === "string") addForms(out, endpoint.apiKey);
  if (endpoint?.headers && typeof endpoint.headers === "object") {
    for (const value of Object.values(endpoint.headers)) {
      if (typeof value !== "string") continue;
      addForms(out, value);
      // `Bearer <token>`, `Basic <base64>`: a server may quote the credential without its scheme.
      const credentials = AUTH_SCHEME.exec(value)?.[1];
      if (credentials) addForms(out, credentials);
    }
  }
  if (typeof endpoint?.baseUrl === "string") {
    try {
      const url = new URL(endpoint.baseUrl.trim());
      // As the URL holds them (percent-encoded) and as they read.
      for (const part of [url.username, url.password]) {
        if (!part) continue;
        addForms(out, part);
        const decoded = safeDecode(part);
        if (decoded) addForms(out, decoded);
      }
      for (const [name, value] of url.searchParams) if (isCredentialParam(name)) addForms(out, value);
    } catch {
      // Not a URL: nothing in it can be told apart as a credential.
    }
  }
  // Longest first, so a secret that contains another is replaced whole.
  return [...out].sort((a, b) => b.length - a.length);
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
  const headers: Record<string, string> = {};
  if (endpoint?.headers && typeof endpoint.headers === "object") {
    for (const [name, value] of Object.entries(endpoint.headers)) {
      if (typeof value !== "string") continue;
      if (isCredentialHeader(name)) headers[name] = value;
      else {
        const credentials = AUTH_SCHEME.exec(value)?.[1];
        if (credentials) headers[name] = credentials;
      }
    }
  }
  // A placeholder is no credential however it was given: as the key, after `Bearer`, as a header's value.
  return secretsOf({ baseUrl: endpoint?.baseUrl, apiKey: endpoint?.apiKey, headers }).filter(
    (secret) => !isPlaceholderKey(secret),
  );
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

/** `text` with every occurrence of each secret replaced by `REDACTED`. */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * Makes a redactor for `endpoint`'s credentials (see `secretsOf`).
 *
 * Given a string, it answers the string with every credential replaced by `REDACTED`. Given an
 * error (or any object), it redacts it **in place** and answers the same value: an error's
 * `message` and `stack`, every string, array and plain object reachable from its own properties
 * (the SDK's `error` body and `headers` included), and its `cause` chain — so whatever a host logs
 * of it, however deep, holds no credential. Anything else is answered as is. Never throws; a
 * property that cannot be written is left as it was.
 */
export function redactor(endpoint: SecretBearer | undefined): <T>(value: T) => T {
  const secrets = secretsOf(endpoint);
  return <T>(value: T): T => redactDeep(value, secrets);
}

/**
 * `redactor` for text a model or a person reads rather than a log: only `endpoint`'s credentials
 * (`credentialsOf`: the key, URL credentials, headers under a credential's name and what follows
 * an auth scheme) are replaced by `REDACTED`. A routing header's value (`x-portkey-provider:
 * openai`, an `X-Title`) stays whole, so a tool error that names the provider still reads. Strings,
 * errors and objects are handled as `redactor` handles them. Never throws.
 */
export function credentialRedactor(endpoint: SecretBearer | undefined): <T>(value: T) => T {
  const secrets = credentialsOf(endpoint);
  return <T>(value: T): T => redactDeep(value, secrets);
}

/** `redactor`'s work with the secrets already gathered (for this package's own fetch). */
export function redactDeep<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  if (typeof value === "string") return redactText(value, secrets) as T;
  if (typeof value !== "object" || value === null) return value;
  // Walked with a list of objects still to visit, not by recursion: a server's error body may nest
  // deeper than the call stack goes.
  const seen = new WeakSet<object>([value]);
  const pending: object[] = [value];
  /** The child `current` redacted (a string), or `current` itself, queued when it is an object to visit. */
  const visit = (current: unknown): unknown => {
    if (typeof current === "string") return redactText(current, secrets);
    if (typeof current === "object" && current !== null && !seen.has(current)) {
      seen.add(current);
      pending.push(current);
    }
    return current;
  };
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) redactOne(next, visit);
  return value;
}

/** Redacts the strings held directly by `value` (through `visit`), queueing the objects it holds. */
function redactOne(value: object, visit: (current: unknown) => unknown): void {
  if (value instanceof Headers) {
    for (const [name, text] of [...value]) {
      const clean = visit(text) as string;
      if (clean !== text) value.set(name, clean);
    }
    return;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const clean = visit(value[i]);
      if (clean !== value[i]) value[i] = clean;
    }
    return;
  }
  const proto = Object.getPrototypeOf(value);
  if (!(value instanceof Error) && proto !== Object.prototype && proto !== null) return;
  const keys = new Set<string>(Object.keys(value));
  if (value instanceof Error) for (const key of ["message", "stack", "cause"]) keys.add(key);
  const record = value as Record<string, unknown>;
  for (const key of keys) {
    let current: unknown;
    try {
      current = record[key];
    } catch {
      continue;
    }
    const clean = visit(current);
    if (clean !== current) {
      try {
        record[key] = clean;
      } catch {
        // A read-only property: left as it was.
      }
    }
  }
}
