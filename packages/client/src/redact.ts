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
 * True for a query parameter name that carries a credential (`api-key`, `access_token`, `key`, …);
 * false for anything that is not a string.
 */
export function isCredentialParam(name: string): boolean {
  if (typeof name !== "string") return false;
  return CREDENTIAL_PARAMS.has(name.toLowerCase().replace(/[-_]/g, ""));
}

function unicodeEscape(c: string, upper = false): string {
  const hex = c.charCodeAt(0).toString(16).padStart(4, "0");
  return `\\u${upper ? hex.toUpperCase() : hex}`;
}

const ALPHANUMERIC = /[A-Za-z0-9]/;

/**
 * Which characters each JSON writer escapes besides `"`, `\` and control characters: none
 * (`JSON.stringify`), `/` and non-ASCII (PHP's `json_encode`), `<>&='` (Gson), `<>&` and U+2028/9
 * (Go), non-ASCII (Python), and everything but letters and digits (either case of hex).
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

/** `value` as JSON writers put it inside a string: a server echoing it in a JSON body writes these. */
function jsonForms(value: string): string[] {
  const plain = (c: string): string | undefined =>
    c === "\\" ? "\\\\" : c === '"' ? '\\"' : c < " " ? unicodeEscape(c) : undefined;
  return JSON_ESCAPES.map((extra) =>
    value
      .split("")
      .map((c) => plain(c) ?? extra(c) ?? c)
      .join(""),
  );
}

/** A header value that is an auth scheme and then the credentials: `Bearer <token>`, `Basic <base64>`. */
const AUTH_SCHEME = /^\s*(?:bearer|basic|token|bot|apikey|api-key|key|digest|dpop|mac|hmac)\s+(\S.*)$/is;

function addForms(out: Set<string>, value: string): void {
  const trimmed = value.trim();
  if (trimmed.length < MIN_SECRET_LENGTH || trimmed === NO_KEY) return;
  out.add(trimmed);
  // The same value as it appears percent-encoded in a URL or a query string, and escaped in a JSON
  // body: the redaction reads the raw text, before a parser would turn `\/` or `\u003d` back.
  for (const form of [encodeURIComponent(trimmed), safeDecode(trimmed), ...jsonForms(trimmed)]) {
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
 * as given, trimmed, percent-encoded or decoded, and as JSON writers escape it inside a string
 * (`\/`, `\u003d`, …). Values under `MIN_SECRET_LENGTH` characters
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
      if (url.username) addForms(out, url.username);
      if (url.password) addForms(out, url.password);
      for (const [name, value] of url.searchParams) if (isCredentialParam(name)) addForms(out, value);
    } catch {
      // Not a URL: nothing in it can be told apart as a credential.
    }
  }
  // Longest first, so a secret that contains another is replaced whole.
  return [...out].sort((a, b) => b.length - a.length);
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
