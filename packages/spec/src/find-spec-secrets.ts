import { asSpec } from "./as-spec.js";
import { child, isPlainObject } from "./json.js";
import {
  hideLiteral,
  isLiteral,
  literalDefaults,
  looksLikeKey,
  looksPasswordName,
  looksProseSecretName,
  looksSecretName,
  type SecretHide,
  SecretSign,
  urlSign,
  withoutKeys,
  withoutReferences,
  withoutUrlSecrets,
} from "./secret-signs.js";
import type { AgentSpec, BundledServer, EndpointSpec } from "./types.js";

/** A place in a spec that may hold a credential: where, in which bundled server, why, and the references an export writes there. Never the value. */
export interface SecretHint {
  /** e.g. `bundle.mcpServers[0].args[2]`, `model.endpoint.baseUrl`, `tasks.title.extraBody.api_key`. */
  path: string;
  /** The bundled server's name, for a place inside `bundle.mcpServers`. */
  server?: string;
  sign: SecretSign;
  /**
   * The `${NAME}` references `exportSpec` writes at this place, in the order written, one per
   * distinct credential across the spec (the same credential elsewhere gets the same reference);
   * absent where it writes none (a URL losing its credentials, a server's `env` and `headers`, which it removes).
   */
  references?: string[];
}

/**
 * @internal One place found: the hint, and how to write a value there that no longer says the
 * credential (`safe`, a `${NAME}` reference or the string with the credential taken out).
 */
export type SecretVisit = (hint: SecretHint, replace: (next: string) => void, safe: string) => void;

/**
 * Lists the places in a spec that may hold a credential, so a host can warn before calling it safe to share.
 *
 * Reads bundled servers (url, command, args, env, headers), endpoint URLs, and `extraBody` at any depth;
 * any other string field is a `Value` when it is shaped like a key. A field holding whitespace (a
 * `name` such as "Token accounting helper") is free text, read a word at a time, so only a word
 * that is itself shaped like a key is flagged, or one after `Bearer`, `Basic` or `Token` that reads
 * as a token rather than a word ("Bearer 3f2a9c0d…"); a prompt part's `text` and a `description` are read
 * so too, with the rules for args besides: a URL's credentials (also after any `NAME=`), a telling
 * flag, assignment, header, JSON pair or connection-string pair with a value that reads as a
 * credential, `curl -u user:X`, `mysql -pX`, `redis-cli -a X` (see `proseWithoutKeys`); there a
 * name tells by its words (`looksProseSecretName`). An argument is read as what it holds:
 * `--env=NAME=X` as the assignment, `Server=db;Password=X;` (each `;`-part a `key=value` pair) a
 * pair at a time, and one holding whitespace (a libpq `host=db password=X`, `exec A=X a;b`) a word
 * at a time. A shell's own command (after `sh -c`, `bash -lc`, `bash -ce`, `cmd /c`, `pwsh
 * -command`, …), a program's text (`node -e`, `perl -e`, …), ssh's remote command, and any other
 * argument or `command` that is a script (a line break or a heredoc's `<<` in it), are reported
 * once when they may hold a credential: the reader finds one in it, or it holds a key shape, a
 * heredoc, or a telling word, fragment or shape other than a reference's name (`pass`, `token`,
 * `key`, `auth`, `netrc`, `sudo -S`, …: `SecretSign.Script`); a PowerShell `-EncodedCommand`
 * always. A `command` holding whitespace is read as a pasted command line — whole, as above, when
 * it holds such a command — else split into words as a shell splits it, each read as an argument
 * is, and reported once at `command`.
 * A hint is a place and a reason, never the value; it is a guess both ways. A `${VAR}` reference is
 * not a credential and is not reported. A hint lists the references `exportSpec` writes at its
 * place (`references`: one per distinct credential across the spec, see `exportSpec`), none where
 * the export drops the credential (a URL's) or removes the field (`env`, `headers`). Throws
 * `AgentSpecError` when `spec` is not a parsed spec.
 */
export function findSpecSecrets(spec: AgentSpec): SecretHint[] {
  const hints: SecretHint[] = [];
  const at = new Map<string, number>();
  const checked = asSpec(spec, "findSpecSecrets");
  const names = referenceNames(withoutServerCredentials(checked));
  // Redacted as `exportSpec` redacts, round after round: what a later round writes at a place is
  // listed with the references the first wrote there.
  redactInRounds(checked, names, (hint, round, written) => {
    if (round === 0) {
      at.set(hint.path, hints.length);
      hints.push(hint);
      return;
    }
    const index = at.get(hint.path);
    if (index === undefined) return;
    const first = hints[index] as SecretHint;
    const had = first.references ?? [];
    const more = names
      .given(written)
      .map((name) => `\${${name}}`)
      .filter((ref) => !had.includes(ref));
    if (more.length > 0) hints[index] = { ...first, references: [...had, ...more] };
  });
  return hints;
}

// A redaction can uncover a second sign in the same string (a URL's path shaped like a key once
// its userinfo is gone), so the scan repeats; past this many rounds a place is replaced whole.
const ROUNDS = 4;

/**
 * @internal Redacts `copy` in place as `exportSpec` does: each place `visitSecrets` reports is
 * written safe, round after round until a round finds nothing (at most `ROUNDS`; in the last, a
 * place still flagged is replaced whole, see `lastResort`), every round naming by `names`.
 * `report` hears each place, its round (from 0) and what was written there.
 */
export function redactInRounds(
  copy: AgentSpec,
  names: ReferenceNames,
  report?: (hint: SecretHint, round: number, written: string) => void,
): void {
  for (let round = 0; round < ROUNDS; round += 1) {
    let found = false;
    const last = round === ROUNDS - 1;
    visitSecrets(
      copy,
      (hint, replace, safe) => {
        found = true;
        const written = last ? lastResort(hint.path, safe, names) : safe;
        replace(written);
        report?.(hint, round, written);
      },
      names,
    );
    if (!found) break;
  }
}

/** A place still flagged after every round: a URL keeps only its scheme and host, anything else becomes a reference of its own. */
function lastResort(path: string, safe: string, names: ReferenceNames): string {
  if (!/(?:baseUrl|\.url)$/.test(path)) return `\${${names.fresh("SECRET")}}`;
  try {
    return new URL(safe).origin;
  } catch {
    return "http://redacted.invalid";
  }
}

/**
 * Names the environment always defines (a shell's, a login's, Windows'): a reference named so
 * would be filled in silently with the working directory, the home folder, …, never refused.
 */
const ALWAYS_SET = new Set([
  "PWD",
  "OLDPWD",
  "HOME",
  "PATH",
  "USER",
  "USERNAME",
  "LOGNAME",
  "SHELL",
  "TMPDIR",
  "TMP",
  "TEMP",
  "LANG",
  "LANGUAGE",
  "TERM",
  "HOSTNAME",
  "HOST",
  "MAIL",
  "PS1",
  "PS2",
  "IFS",
  "SHLVL",
  "UID",
  "EUID",
  "PPID",
  "RANDOM",
  "SECONDS",
  "LINENO",
  "OSTYPE",
  "HOSTTYPE",
  "MACHTYPE",
  "DISPLAY",
  "EDITOR",
  "PAGER",
  "TZ",
  "USERPROFILE",
  "APPDATA",
  "LOCALAPPDATA",
  "SYSTEMROOT",
  "WINDIR",
  "COMSPEC",
  "PATHEXT",
  "COMPUTERNAME",
  "OS",
]);

/**
 * A `${NAME}` reference named after a flag, field or variable: what a host fills in. Never a
 * name the environment always defines (`--pwd X` gives `${PWD_SECRET}`, not `${PWD}`), so a host
 * expanding references from its environment refuses it while unset.
 */
export function reference(name: string): string {
  const upper = name
    .replace(/^-+/, "")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toUpperCase();
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
  if (upper === "") return "${SECRET}";
  // A name must not start with a digit (`1password` → `${_1PASSWORD_COMMAND}`): no shell or host could set it.
  const valid = /^[0-9]/.test(upper) ? `_${upper}` : upper;
  return `\${${ALWAYS_SET.has(valid) || valid.startsWith("LC_") ? `${valid}_SECRET` : valid}}`;
}

/**
 * @internal The spec as an export shares it: every bundled server's `env` and `headers` (where the
 * format puts a server's credentials) removed, the rest the same objects.
 */
export function withoutServerCredentials(spec: AgentSpec): AgentSpec {
  const servers = spec.bundle?.mcpServers;
  if (!spec.bundle || !servers) return spec;
  return {
    ...spec,
    bundle: {
      ...spec.bundle,
      mcpServers: servers.map(({ env: _env, headers: _headers, ...rest }): BundledServer => rest),
    },
  };
}

/** While `visitSecrets` runs, the names it gives; free text and prose are named by them too (`proseHide`). */
let naming: ReferenceNames | undefined;

/**
 * @internal Calls `visit` for each place `findSpecSecrets` reports, in the same order; `spec` must
 * be a fresh copy it may change. Each credential written as a reference is named by `names` (see
 * `ReferenceNames`; by default a namer of its own, blind to the `env` and `headers` an export
 * removes), and a hint lists the references written at its place (none at a server's `env` or
 * `headers`, which an export removes).
 */
export function visitSecrets(
  checked: AgentSpec,
  visit: SecretVisit,
  names: ReferenceNames = referenceNames(withoutServerCredentials(checked)),
): void {
  const outer = naming;
  naming = names;
  try {
    visitNamed(checked, visit, names);
  } finally {
    naming = outer;
  }
}

function visitNamed(checked: AgentSpec, report: SecretVisit, names: ReferenceNames): void {
  const visit: SecretVisit = (hint, replace, safe) => {
    const references = names.given(safe).map((name) => `\${${name}}`);
    report(references.length > 0 ? { ...hint, references } : hint, replace, safe);
  };
  const hide = names.hide;
  const endpoint = (at: string, value: EndpointSpec | undefined) => {
    const url = value?.baseUrl;
    if (value === undefined || url === undefined) return;
    const sign = stringSign(url, false);
    if (sign)
      visit(
        { path: child(at, "baseUrl"), sign },
        (next) => (value.baseUrl = next),
        safeString(url, sign, undefined, hide),
      );
  };
  // A shell's command replaced whole gets a reference of its own: named after its server (by `hide`).
  const scriptName = (server: string | undefined) => `${server ?? "shell"}_command`;
  endpoint("model.endpoint", checked.model?.endpoint);
  if (checked.model?.extraBody) scanFree("model.extraBody", checked.model.extraBody, undefined, visit, hide);
  for (const [key, task] of Object.entries(checked.tasks ?? {})) {
    const at = child("tasks", key);
    endpoint(child(at, "endpoint"), task.endpoint);
    if (task.extraBody) scanFree(child(at, "extraBody"), task.extraBody, undefined, visit, hide);
  }
  (checked.bundle?.mcpServers ?? []).forEach((server, index) => {
    const at = child("bundle.mcpServers", index);
    // A name shaped like a key is itself flagged (below), and never handed back as `server`.
    const name = holdsKey(server.name) ? undefined : server.name;
    const found = (
      path: string,
      sign: SecretSign,
      replace: (next: string) => void,
      safe: string,
      to: SecretVisit = visit,
    ) => to({ path, ...(name !== undefined ? { server: name } : {}), sign }, replace, safe);
    const url = server.url;
    if (url !== undefined) {
      const sign = stringSign(url, false);
      if (sign)
        found(child(at, "url"), sign, (next) => (server.url = next), safeString(url, sign, undefined, hide));
    }
    // A command is a program, but a pasted one is sometimes a whole command line (or a script, or
    // a connection string): read as an argument holding whitespace is (see `lineSecrets`), and the
    // place is named once however many of its parts are flagged. One holding a program's own
    // command (`sh -c '…'`, `ssh host '…'`, `node -e '…'`) is kept or replaced whole, as that
    // command is in args (`pastedScript`: null when it holds none).
    const command = server.command;
    const pasted =
      command !== undefined && /\s/.test(command)
        ? pastedScript(command, hide, () => scriptName(name))
        : null;
    const line =
      pasted !== null
        ? pasted
        : command !== undefined &&
            (/[\s;]/.test(command) || pwshAssignment(command) || QUOTED_WHOLE.test(command))
          ? lineSecrets(command, hide, () => scriptName(name), true)
          : undefined;
    if (line) found(child(at, "command"), line.sign, (next) => (server.command = next), line.safe);
    else if (command !== undefined && pasted === null) {
      const sign = stringSign(command, false);
      if (sign)
        found(
          child(at, "command"),
          sign,
          (next) => (server.command = next),
          safeString(command, sign, undefined, hide),
        );
    }
    const args = server.args ?? [];
    scanArgs(
      child(at, "args"),
      args,
      (path, sign, argIndex, safe) =>
        found(path, sign, (next) => ((args as string[])[argIndex] = next), safe),
      hide,
      () => scriptName(name),
      command,
    );
    for (const field of ["env", "headers"] as const) {
      const entries = server[field] ?? {};
      for (const key of Object.keys(entries)) {
        const value = entries[key] as string;
        const sign = stringSign(value, looksSecretName(key));
        if (sign)
          found(
            child(child(at, field), key),
            sign,
            (next) => (entries[key] = next),
            safeString(value, sign, key),
            report,
          );
      }
    }
  });
  scanRest("", checked, undefined, distinctIdentifiers(checked, visit, hide));
}

/** The places read above, by path: an endpoint's `baseUrl`, `extraBody`, and a bundled server's url, command, args, env and headers. */
const COVERED =
  /^(?:model\.endpoint\.baseUrl|model\.extraBody|tasks(?:\.[A-Za-z_$][\w$]*|\[[^\]]*\])\.(?:endpoint\.baseUrl|extraBody)|bundle\.mcpServers\[\d+\]\.(?:url|command|args|env|headers))$/;

/**
 * True when a string the places above do not read holds a key: the whole of a string with no
 * whitespace (a model name, a tool name), or in one with whitespace (free text) a word shaped like
 * a key or the token of a `Bearer <token>` written across two words (read as `freeWithoutKeys` reads it).
 */
function holdsKey(value: string): boolean {
  return freeWithoutKeys(value) !== undefined;
}

/** Prose: a prompt part's `text` and any `description`, read for credentials as a sentence writes them (`proseWithoutKeys`). */
const PROSE = /(?:^prompt\[\d+\]\.text|(?:^|\.)description)$/;

/**
 * Every string of the spec the places above do not read: a key-shaped value in it (the whole of a
 * `model`, a hook's `tool`) is a `Value`. A string that holds whitespace is free text, whatever its
 * field (a prompt part's `text`, a `description`, an agent's or a task's `name`): it is read a word
 * at a time, so the shapes that span a space (`Bearer …`, `Token …`) do not take ordinary words for
 * a key ("Token accounting helper"); the word after `Bearer`, `Basic` or `Token` is flagged only
 * when it reads as a token (`schemeToken`). Its safe form redacts only the flagged words, each other
 * word and the spacing kept. A prompt part's `text` and a `description` are prose, read so with
 * the rules for args besides (see `proseWithoutKeys`). A field whose value is a header (a bundled
 * server's `headers`) is read above, whole.
 */
function scanRest(at: string, value: unknown, server: string | undefined, visit: SecretVisit): void {
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : isPlainObject(value)
      ? Object.entries(value)
      : [];
  for (const [key, item] of entries) {
    const path = child(at, key);
    if (COVERED.test(path)) continue;
    // A place inside a bundled server names the server, as the places read above do.
    const inServer =
      server ??
      (/^bundle\.mcpServers\[\d+\]$/.test(path) &&
      isPlainObject(item) &&
      typeof item.name === "string" &&
      !holdsKey(item.name)
        ? item.name
        : undefined);
    const container = value as Record<string | number, unknown>;
    if (typeof item === "string") {
      const safe = PROSE.test(path) ? proseWithoutKeys(item) : freeWithoutKeys(item, proseHide);
      if (safe !== undefined)
        visit(
          { path, ...(inServer !== undefined ? { server: inServer } : {}), sign: SecretSign.Value },
          (next) => (container[key] = next),
          safe,
        );
    } else if (Array.isArray(item) || isPlainObject(item)) {
      scanRest(path, item, inServer, visit);
    }
  }
}

/** A string with its key-shaped parts as what `hide` gives for each; the whole of it when a part is still flagged. */
function keyless(value: string, hide: SecretHide): string {
  const out = withoutKeys(value, hide);
  return looksLikeKey(out) ? hide(value, undefined) : out;
}

/**
 * A string with each word (a run of non-whitespace) that looks like a key redacted (see
 * `keyless`), and each token of an `Authorization` value written across two words (`Bearer
 * <token>`, see `rewriteFree`) as `${SECRET}` (or what `hide` gives); or undefined when nothing
 * is. A string with no whitespace is one word: tested whole.
 */
function freeWithoutKeys(text: string, hide: SecretHide = () => reference("")): string | undefined {
  let flagged = false;
  const out = rewriteFree(
    text,
    (word) => {
      flagged = true;
      return keyless(word, hide);
    },
    (value) => {
      flagged = true;
      return hide(value, undefined);
    },
  );
  return flagged ? out : undefined;
}

/**
 * Free text with its flagged words rewritten, every other word and all spacing kept as written: a
 * word shaped like a key becomes `key(word)`, and a word after `Bearer`, `Basic` or `Token` that
 * reads as a token rather than a word (see `schemeToken`) becomes `token(value)`, the quotes,
 * brackets and closing punctuation around it kept. So "Bearer 3f2a9c0d…" is found where "Token
 * accounting helper" is not. Each word is read with the one before it, once.
 */
function rewriteFree(text: string, key: (word: string) => string, token: (value: string) => string): string {
  let last = "";
  return text.replace(/\S+/g, (word) => {
    const scheme = last;
    const [start, end] = bare(word);
    last = word.slice(start, end);
    if (looksLikeKey(word)) return key(word);
    if (!SCHEME.test(scheme) || !schemeToken(scheme, last)) return word;
    return word.slice(0, start) + token(last) + word.slice(end);
  });
}

/** Where a word of free text starts and ends once the quotes, brackets and closing punctuation around it are set aside. */
function bare(word: string): [number, number] {
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
function schemeToken(scheme: string, value: string): boolean {
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
const proseHide: SecretHide = (secret, name) => (naming ? naming.hide(secret, name) : reference(name ?? ""));

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
function proseCredential(value: string): boolean {
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
const GENERIC_NAME =
  /^(?:token|key|secret|auth|authorization|signature|bearer|cookie|credential|credentials)$/i;

/**
 * True for a value a word or two after a header-like name in prose (`Token: X`, `"api_key": "X"`,
 * `secret = X`) that reads as a credential (`proseCredential`); after a word alone that says only
 * "a credential" (`Token:`, `Key:`, `Signature:`, `Auth:`), besides, shaped like a key or read as a
 * token (`schemeToken`: a run of 16 letters and digits mixed, a UUID, padded base64), so
 * `Token: Llama-3-8B`, `Key: AES-256-GCM` and `Signature: HMAC-SHA256` stay words. After a
 * password's name (`password:`) any credential-like word is one.
 */
function headerCredential(value: string, name: string): boolean {
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

/** A header's name written as a word of its own, before its value: `Authorization:`, `X-Api-Key:`, a JSON pair's `"api_key":`. */
const HEADER_NAME = /^([A-Za-z][\w.-]*)["']?:$/;
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
const PASSWORD_P =
  /^(?:mysql(?:dump|admin|import|show|check|sh|binlog|pump|slap|_upgrade)?|mariadb(?:-(?:admin|binlog|check|dump|import|show|slap|upgrade))?)$/;
/** A MySQL client's `-pX`, also after its options that take no value in one cluster (`-vpX`, `-NspX`): where the password starts. */
const MYSQL_TIGHT_P = /^-[BCEHNVXfinqrstvw]*p(?=[\s\S])/;

/** A JSON (or Python) pair written in prose, name and value quoted: `"api_key": "X"`, `'password':'X'`. */
const JSON_PAIR = /(["'])([A-Za-z][\w.-]*)\1(\s*:\s*)(["'])([^"'\s]{1,512})\4/g;
const SCHEME = /^(?:Bearer|Basic|Token)$/i;
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
function proseWithoutKeys(original: string): string | undefined {
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
    // A new line, or a `;`, `|` or `&&` (alone or ending the word before), ends the command.
    if (/[\n;|]/.test(text.slice(Math.max(gap - 1, 0), start)) || /^(?:&&|\|\|?)$/.test(match[0]))
      client = "";
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
    // A long flag's value (`--name mysql`, `--driver mysql`) names no client.
    const value = /^--[A-Za-z][\w.-]*$/.test(last);
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

/** The fields that name an entry: prompt and hook ids, bundled servers' names, and the places that name a server. */
const IDENTIFIER =
  /^(?:(?:prompt|hooks)\[\d+\]\.id|hooks\[\d+\]\.server|bundle\.mcpServers\[\d+\]\.name|tools\.servers\[\d+\])$/;

/**
 * `visit`, with an identifier (see `IDENTIFIER`) the scan flagged redacted as free text is (each
 * word holding a key, the rest kept), each key by the reference `hide` gives it (one per distinct
 * key: `${SECRET}`, `${SECRET_2}`, `${SECRET_3}`, …). A value whose redaction would still be
 * flagged, or would equal another identifier's value or redaction, is replaced whole by a
 * reference of its own. So two ids redacted stay two ids (a repeated id would replace the other
 * entry when the export is read back), and a server's name and the places that name it are
 * redacted alike.
 */
function distinctIdentifiers(spec: AgentSpec, visit: SecretVisit, hide: SecretHide): SecretVisit {
  let values: Map<string, string> | undefined;
  const redacted = new Map<string, string>();
  const taken = new Set<string>();
  const read = (): Map<string, string> => {
    const found = new Map<string, string>();
    const add = (path: string, value: unknown) => {
      if (typeof value !== "string") return;
      found.set(path, value);
      taken.add(value);
    };
    for (const [index, entry] of (spec.prompt ?? []).entries())
      add(child(child("prompt", index), "id"), entry.id);
    for (const [index, hook] of (spec.hooks ?? []).entries()) {
      add(child(child("hooks", index), "id"), hook.id);
      add(child(child("hooks", index), "server"), hook.server);
    }
    for (const [index, server] of (spec.bundle?.mcpServers ?? []).entries())
      add(child(child("bundle.mcpServers", index), "name"), server.name);
    for (const [index, name] of (spec.tools?.servers ?? []).entries())
      add(child("tools.servers", index), name);
    return found;
  };
  // One reference per distinct text (a key, or a whole value).
  const refFor = (text: string): string => hide(text, undefined);
  const redact = (value: string): string => {
    const known = redacted.get(value);
    if (known !== undefined) return known;
    let out = rewriteFree(
      value,
      (word) => {
        const safe = withoutKeys(word, (key) => refFor(key));
        return looksLikeKey(safe) ? refFor(word) : safe;
      },
      refFor,
    );
    // Still flagged is read as the scan reads it (free text a word at a time): "Bearer ${SECRET} notes"
    // is not a key, though `Bearer` and a word of 8 letters after the reference is, whole.
    if (out === value || holdsKey(out) || taken.has(out)) out = refFor(value);
    redacted.set(value, out);
    taken.add(out);
    return out;
  };
  return (hint, replace, safe) => {
    if (!IDENTIFIER.test(hint.path)) return visit(hint, replace, safe);
    values ??= read();
    const value = values.get(hint.path);
    visit(hint, replace, value === undefined ? safe : redact(value));
  };
}

/** The sign of a string at a place whose name may already tell. */
function stringSign(value: string, tellingName: boolean): SecretSign | undefined {
  const url = urlSign(value);
  if (url) return url;
  if (tellingName && isLiteral(value)) return SecretSign.Field;
  if (looksLikeKey(value)) return SecretSign.Value;
  return undefined;
}

/**
 * What to write instead of a string `stringSign` flagged: by default a `${NAME}` reference for a
 * named place, the URL without its credentials, `${SECRET}` for a key shape; with `hide`, what it
 * returns in place of each credential.
 */
function safeString(value: string, sign: SecretSign, name: string | undefined, hide?: SecretHide): string {
  // A URL may carry a key in its path as well as in its userinfo or query.
  // An export's names (`naming`) drop a URL's credentials, as the default does.
  if (sign === SecretSign.Userinfo || sign === SecretSign.Query)
    return withoutKeys(withoutUrlSecrets(value, hide === naming?.hide ? undefined : hide), hide);
  // A literal default's word alone, when that is all it says in clear (`${DB_PASSWORD:-${DB_PASSWORD}}`).
  if (sign === SecretSign.Field)
    return hideLiteral(value, (secret) => (hide ? hide(secret, name) : reference(name ?? "")));
  return withoutKeys(value, hide);
}

/**
 * A string as it may be shown or shared: with what `findSpecSecrets` would flag in it taken out —
 * the whole value when `name` (the field, variable or header it is given under) is named like a
 * credential and the value is not only `${VAR}` references (of one whose only literal text is a
 * literal default's word, `${DB_PASSWORD:-X}`, just that word); else a URL's userinfo and telling
 * query values, and each key-shaped part. The rest is kept as written. By default a taken-out
 * credential becomes a `${NAME}` reference (`${SECRET}` for a key shape), a URL's part is dropped;
 * with `hide`, each becomes what `hide(secret, name)` returns. Never throws; a non-string is returned as it is.
 */
export function withoutSecrets(value: string, name?: string, hide?: SecretHide): string {
  if (typeof value !== "string") return value;
  const sign = stringSign(value, name !== undefined && looksSecretName(name));
  return sign ? safeString(value, sign, name, hide) : value;
}

/**
 * A command line's arguments as they may be shown or shared, one for one: with what
 * `findSpecSecrets` flags in a bundled server's `args` taken out — the value of a flag, assignment
 * or header named like a credential (`--token X`, `--api-key=X`, `-e GITHUB_TOKEN=X`,
 * `--env=GITHUB_TOKEN=X`, `X-Api-Key: X`), a connection string's telling pair
 * (`Server=db;Password=X;`), curl's `-u user:X`, a URL's userinfo and telling query values, each
 * key-shaped part — and the rest kept as written. A shell's own command (after `sh -c`, `bash
 * -lc`, `cmd /c`, `pwsh -Command`, …; a program's text and ssh's remote command when `args` name
 * the program), and any other argument that is a script (it holds a line break or a heredoc's
 * `<<`), is kept byte for byte, or, when it may hold a credential (see
 * {@link findSpecSecrets}), replaced whole: `${SHELL_COMMAND}` (`_2`, `_3`, … for more), or what
 * `hide(command, "SHELL_COMMAND")` returns (ssh's remote command given as several words: each word
 * by a reference of its own). One line of JSON has its telling keys' string values replaced inside
 * their quotes, still JSON. One connection string (each `;`-part a `key=value`
 * pair) has its telling pairs' values replaced; any other argument holding whitespace is read as a
 * command line and kept byte for byte but for each secret's value. One pass: what it returns,
 * given again, comes back as it is. Replacements as {@link withoutSecrets}. Never throws; never
 * changes `args`.
 */
export function withoutArgSecrets(args: readonly string[], hide?: SecretHide): string[] {
  const out = [...args];
  const names = referenceNames(args);
  scanArgs(
    "args",
    args,
    (_path, _sign, index, safe) => (out[index] = safe),
    hide,
    () => names.fresh("SHELL_COMMAND"),
  );
  return out;
}

/**
 * @internal The names of the references an export writes, one per distinct credential: `hide(secret,
 * name)` is the reference for `secret` given under `name` (its flag, field or variable; none for a
 * key shape, `${SECRET}`), named after `name` (see `reference`), then `_2`, `_3`, … when that name
 * is taken; the same `secret` given again, under any name, gets the reference it got first.
 * `fresh(name)` is a name of its own (a whole script's, `${GITHUB_COMMAND}`). A name given is never
 * one a `${…}` in `document` already writes, nor one given before (the environment's own names are
 * `reference`'s concern). `given(text)` lists the names given that `text` writes, in order, once each.
 */
export interface ReferenceNames {
  hide: SecretHide;
  fresh(name: string): string;
  given(text: string): string[];
}

/** @internal See `ReferenceNames`: the names `document` writes are read once, here. */
export function referenceNames(document: unknown): ReferenceNames {
  const used = new Set<string>();
  for (const match of (JSON.stringify(document) ?? "").matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g))
    used.add(match[1] as string);
  const given = new Set<string>();
  const bySecret = new Map<string, string>();
  // Per name, the suffix to try next: k credentials sharing a name cost k look-ups, not k²/2.
  const next = new Map<string, number>();
  const fresh = (base: string): string => {
    let name = base;
    if (used.has(name)) {
      let n = next.get(base) ?? 2;
      while (used.has(`${base}_${n}`)) n += 1;
      name = `${base}_${n}`;
      next.set(base, n + 1);
    }
    used.add(name);
    given.add(name);
    return name;
  };
  const hide: SecretHide = (secret, name) => {
    let ref = bySecret.get(secret);
    if (ref === undefined) {
      ref = `\${${fresh(reference(name ?? "").slice(2, -1))}}`;
      bySecret.set(secret, ref);
    }
    return ref;
  };
  const written = (text: string) =>
    new Set(Array.from(text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g), (match) => match[1] as string));
  return { hide, fresh, given: (text) => [...written(text)].filter((name) => given.has(name)) };
}

/**
 * Words and fragments that may name a credential, anywhere in a shell's command (case-insensitive,
 * inside longer words too: `api_key`, `apikey`, `-key`, `DB_PASS`, `$env:TOKEN`, `.netrc`, `mysql
 * -pX`, `redis-cli -a X`, `docker login -p X`, `DB_PW`, `--creds`, `HMAC`). Broad on purpose:
 * `keyboard` and `bypass` are read so too, and a command that says one is exported as a reference
 * rather than rewritten inside. `pw` counts as a word part only (`-pw`, `_pw`, `pw=`), not inside
 * a word.
 */
const SCRIPT_TELLS =
  /pass|pwd|secret|token|key|auth|bearer|cred|hmac|private|netrc|cookie|session|signature|login|mysql|mariadb|redis|(?<![a-z])pw(?![a-z])/i;

/**
 * Shapes that give a password without a telling word: `sudo -S` (read from stdin), a database
 * client's `-p`/`-P` with a value (`sqlcmd -P X`, `mongosh -p X`), a `user%password` (`smbclient -U admin%X`,
 * `-Uadmin%X`, `--user=admin%X`).
 */
const SCRIPT_TELL_SHAPES: readonly (readonly [RegExp, RegExp])[] = [
  [/\bsudo\b/, /\s-[A-Za-z]*S\b/],
  [
    /\b(?:sqlcmd|bcp|isql|osql|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|cqlsh|sshpass|sqlplus|vsql|snowsql|clickhouse-client)\b/,
    /\s-[pP](?:\s+[^\s-]|[^\s])/,
  ],
  // Each gap is read by one quantifier only (`\s+` then `\s*` split a run of spaces every way: quadratic).
  [/(?:^|\s)(?:-U|--user\b)/, /(?:^|\s)(?:-U\s*|--user(?:=\s*|\s+))["']?[^\s%"'$]+%[^\s%"']+/],
];

/** Whether one simple command (a part of the text between `;`, `&`, `|` and newlines) holds a shape: its program word and its flag both (one pass each). */
function holdsTellShape(text: string): boolean {
  return text
    .split(/[;&|\n]/)
    .some((part) => SCRIPT_TELL_SHAPES.some(([word, flag]) => word.test(part) && flag.test(part)));
}

/**
 * A reference to a variable, as a shell, cmd or PowerShell writes it: `${NAME` (of `${NAME}`,
 * `${NAME:-…}`), `$NAME`, `%NAME%`, `$env:NAME` — not one assigned to (`$env:API_KEY='X'`, a
 * PowerShell or Perl `$token = 'X'`, or compound: `$env:API_KEY ??= 'X'`, PHP `$key ??= 'X'`,
 * `||=`, `.=`, `+=`, …): that one says the name of what follows.
 */
const SCRIPT_REFERENCE =
  /\$env:[A-Za-z_][A-Za-z0-9_]*(?!\w|\s*(?:\?\?|\|\||&&|\/\/|\*\*|[.+\-*/%|&^])?=(?!=))|\$\{[A-Za-z_][A-Za-z0-9_]*|\$[A-Za-z_][A-Za-z0-9_]*(?![\w:]|\s*(?:\?\?|\|\||&&|\/\/|\*\*|[.+\-*/%|&^])?=(?!=))|%[A-Za-z_][A-Za-z0-9_]*%/gi;

/**
 * A flag, assignment or header whose value is a reference (already written as `\uE000`), after
 * quotes or brackets only: `--token "$T"`, `TOKEN=${T}`, `token=[${T}]`, `Authorization: Bearer $T`.
 */
const GIVEN_BY_REFERENCE =
  /(?<![\w.-])(?:--?[A-Za-z][\w.-]*(?:=|\s+)|[A-Za-z_][\w.]*=|[A-Za-z][\w-]*:\s*(?:(?:bearer|basic|token)\s+)?)["'[({<]*\uE000/gi;

/** `pwd` as a command (`cd /x && pwd`): it prints a folder. */
const PWD_COMMAND = /(^|[;&|(`\n]\s*)pwd(?=\s*(?:$|[;&|)`\n]))/gi;

/**
 * Whether a shell's command says a telling word or shape other than by naming a variable: each
 * reference (`${GITHUB_TOKEN}`, `$env:TOKEN`, `%TOKEN%`), with a flag, assignment or header it is
 * the whole value of (`--token ${GITHUB_TOKEN}`), and `pwd` as a command, are left out first.
 */
function scriptTells(script: string): boolean {
  const text = script
    .replace(SCRIPT_REFERENCE, "\uE000")
    .replace(GIVEN_BY_REFERENCE, "\uE000")
    .replace(PWD_COMMAND, "$1");
  return SCRIPT_TELLS.test(text) || holdsTellShape(text);
}

/** A heredoc's operator, `<<` or `<<-` (not the here-string `<<<`); an arithmetic shift `1<<2` too (fail safe). */
const HEREDOC = /(?:^|[^<])<<(?!<)/;

/**
 * A shell's own command (the argument after `sh -c`, `bash -lc`, `cmd /c`, `pwsh -Command`), or
 * a program's text (`node -e`, `perl -e`, …), kept byte for byte or replaced whole: when it may
 * hold a credential — the command-line reader finds one in it (its sign), a key shape (`Value`),
 * or it holds a heredoc or a telling word, fragment or shape other than in a reference
 * (`scriptTells`; `Script`) — it becomes one reference named by `scriptName` (or what `hide`
 * returns for the whole command), for the host to supply from its environment. Rewriting inside a
 * script (its quotes, heredocs, nested commands, programs in other languages) cannot keep every
 * script the same command; a reference can. Undefined when nothing says so. With `always` (a
 * base64 `-EncodedCommand`, which cannot be read), it is replaced whole whatever it says.
 */
function shellScript(
  script: string,
  hide: SecretHide | undefined,
  scriptName: () => string,
  always = false,
): ArgFound | undefined {
  const sign =
    commandLineSecrets(script)?.sign ??
    (looksLikeKey(script)
      ? SecretSign.Value
      : always || HEREDOC.test(script) || scriptTells(script) || runsEncodedPowerShell(script)
        ? SecretSign.Script
        : undefined);
  if (sign === undefined) return undefined;
  const name = scriptName();
  return { sign, safe: hide ? hide(script, name) : reference(name) };
}

/**
 * What a word after a program and its flag is: its own command or program text, a base64
 * `-EncodedCommand`, or one word of ssh's remote command (the remote shell joins them).
 */
type ScriptKind = "script" | "encoded" | "remote";

/** A place holding a script: what it is, and where in its word the script starts (past a tight flag, `--eval=`). */
interface ScriptPlace {
  kind: ScriptKind;
  at: number;
}

/** A program's name from a word that runs it: `/usr/bin/bash` → `bash`, `PowerShell.exe` → `powershell`. */
function programName(word: string): string {
  return (word.split(/[\\/]/).pop() ?? "").toLowerCase().replace(/\.exe$/, "");
}

/** PowerShell reads a parameter in any case and by any prefix it alone starts: `-c`, `-Com`, `-command`. */
const PWSH_COMMAND = /^[-/](?:c|co|com|comm|comma|comman|command)$/i;
/** PowerShell's `-EncodedCommand` (`-e`, `-ec`, `-enc`, …): base64 that cannot be read. */
const PWSH_ENCODED =
  /^[-/](?:e|ec|en|enc|enco|encod|encode|encoded|encodedc|encodedco|encodedcom|encodedcomm|encodedcomma|encodedcomman|encodedcommand)$/i;
/** `-EncodedCommand:B64` (any prefix PowerShell takes, any case): where the base64 starts, past the colon. */
const PWSH_ENCODED_TIGHT =
  /^[-/](?:e|ec|en|enc|enco|encod|encode|encoded|encodedc|encodedco|encodedcom|encodedcomm|encodedcomma|encodedcomman|encodedcommand):(?=[\s\S])/i;
/** A word with the quotes around it taken off (`'pwsh`, `-e:B64'`, `"powershell.exe"`), in linear time. */
function unquoted(word: string): string {
  let start = 0;
  let end = word.length;
  while (start < end && (word[start] === "'" || word[start] === '"')) start++;
  while (end > start && (word[end - 1] === "'" || word[end - 1] === '"')) end--;
  return word.slice(start, end);
}

/** PowerShell's `-File` (any prefix it takes, any case): the words after it are the script's own arguments. */
const PWSH_FILE = /^[-/](?:f|fi|fil|file)$/i;
/** What an encoded command's base64 looks like (UTF-16LE text, so at least 8 characters): not `dev`, not `$ENC`. */
const BASE64_TEXT = /^[A-Za-z0-9+/]{8,}={0,2}$/;

/**
 * Whether `script` runs PowerShell with an `-EncodedCommand` (`cmd /c powershell -enc B64`,
 * `sh -c 'pwsh -e:B64'`): base64 that cannot be read, so the script may hold a credential. Read a
 * command at a time (split at `;`, `&`, `|` and parentheses) and word by word: a PowerShell
 * program, then its options up to `-File` or `-Command` (after which the words are the script's),
 * one of them `-EncodedCommand` (any prefix, tight after a colon or as the next word) with base64
 * text. So `which pwsh; grep -e foo`, `pwsh -File s.ps1 -e dev` and `pwsh -e $ENC` are not.
 */
function runsEncodedPowerShell(script: string): boolean {
  for (const command of script.split(/[;&|()]+/)) {
    let pwsh = false;
    let encoded = false;
    for (const raw of command.split(/\s+/)) {
      const word = unquoted(raw);
      if (word === "") continue;
      if (!pwsh) {
        const program = programName(word);
        pwsh = program === "pwsh" || program === "powershell";
      } else if (encoded) {
        if (BASE64_TEXT.test(word)) return true;
        encoded = false;
      } else if (PWSH_ENCODED_TIGHT.test(word)) {
        if (BASE64_TEXT.test(word.slice(word.indexOf(":") + 1))) return true;
      } else if (PWSH_ENCODED.test(word)) {
        encoded = true;
      } else if (PWSH_FILE.test(word) || PWSH_COMMAND.test(word)) {
        break;
      }
    }
  }
  return false;
}

/** A POSIX shell's flags holding `c` (`-c`, `-lc`, `-ce`, `-xc`): its first operand is the command. */
const POSIX_COMMAND = /^-[A-Za-z]*c[A-Za-z]*$/;
const POSIX_SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash", "fish", "busybox"]);
/** ssh's options that take a value (`-p 22`, `-i key`): the value is the next word unless written tight. */
const SSH_VALUED = "BbcDEeFIiJLlmOoPpQRSWw";

/**
 * Whether `flag`, given to `program`, is followed by that program's own command or program text:
 * a shell's (`sh -c`, `bash -ce`, `cmd /c`, `cmd /k`, `pwsh -command`, `-Com`, `-EncodedCommand`)
 * or an interpreter's (`node -e`/`-p`, `perl -e`/`-E`, `ruby -e`, `python -c`, `deno eval`,
 * `bun -e`, `php -r`, `osascript -e`).
 */
function scriptAfter(program: string, flag: string): ScriptKind | undefined {
  if (POSIX_SHELLS.has(program)) return POSIX_COMMAND.test(flag) ? "script" : undefined;
  if (program === "cmd") return /^\/[cCkK]$/.test(flag) ? "script" : undefined;
  if (program === "pwsh" || program === "powershell")
    return PWSH_COMMAND.test(flag) ? "script" : PWSH_ENCODED.test(flag) ? "encoded" : undefined;
  const program_ = /^python[0-9.]*$|^pypy[0-9.]*$/.test(program) ? "python" : program;
  const flags: Record<string, RegExp> = {
    python: /^-[A-Za-z]*c$/,
    node: /^(?:-e|-p|-pe|--eval|--print)$/,
    bun: /^(?:-e|-p|--eval|--print)$/,
    perl: /^-[A-Za-z]*[eE]$/,
    ruby: /^-[A-Za-z]*e$/,
    deno: /^eval$/,
    php: /^-r$/,
    osascript: /^-e$/,
  };
  return flags[program_]?.test(flag) ? "script" : undefined;
}

/**
 * A program's text or a shell's command written tight to its flag, in one word: node's and bun's
 * `--eval=CODE`/`--print=CODE`, python's `-cCODE` (`-IcCODE`), perl's `-eCODE` (`-leCODE`,
 * `-ECODE`), ruby's `-eCODE`, php's `-rCODE`, osascript's `-eCODE`, cmd's `/cCOMMAND`, fish's
 * `--command=CMD`, PowerShell's `-Command:CMD`: where in `word` the text starts, or 0 when it is
 * no such form.
 */
function tightScriptAt(program: string, word: string): number {
  const program_ = /^python[0-9.]*$|^pypy[0-9.]*$/.test(program) ? "python" : program;
  const forms: Record<string, RegExp> = {
    python: /^-[bBdEhiIOPqsSuvVx]*c(?=[\s\S])/,
    node: /^--(?:eval|print)=(?=[\s\S])/,
    bun: /^--(?:eval|print)=(?=[\s\S])/,
    perl: /^-[acnpsStTuUwWlX]*[eE](?=[\s\S])/,
    ruby: /^-[acdlnpswWvy]*e(?=[\s\S])/,
    php: /^-r(?=[\s\S])/,
    osascript: /^-e(?=[\s\S])/,
    cmd: /^\/[cCkK](?=[\s\S])/,
    fish: /^--command=(?=[\s\S])/,
    // Read on the safe side: a colon after PowerShell's `-Command` (`-Command:…`, `-c:…`).
    pwsh: /^[-/](?:c|co|com|comm|comma|comman|command):(?=[\s\S])/i,
    powershell: /^[-/](?:c|co|com|comm|comma|comman|command):(?=[\s\S])/i,
  };
  return forms[program_]?.exec(word)?.[0].length ?? 0;
}

/**
 * The places in `words` (a command's words, then its args) that hold a program's own command or
 * program text (see `scriptAfter`; `bash -c -- …` skips the `--`; one tight to its flag, see
 * `tightScriptAt`), and each word after ssh's destination (the remote command, run by the remote
 * shell). One pass.
 */
/** A program other than a POSIX shell that runs its own command or program text (see `scriptAfter`). */
const SCRIPT_PROGRAM =
  /^(?:cmd|pwsh|powershell|node|bun|perl|ruby|deno|php|osascript|python[0-9.]*|pypy[0-9.]*)$/;

function scriptPlaces(words: readonly string[]): Map<number, ScriptPlace> {
  const places = new Map<number, ScriptPlace>();
  let program = "";
  // ssh: -1 not seen, 0 reading options, 1 the destination read (the rest is the remote command).
  let ssh = -1;
  let skip = false;
  words.forEach((word, index) => {
    if (ssh === 1) {
      places.set(index, { kind: "remote", at: 0 });
      return;
    }
    if (ssh === 0) {
      if (skip) skip = false;
      else if (word === "--") ssh = 0;
      else if (/^-./.test(word)) {
        for (let i = 1; i < word.length; i += 1)
          if (SSH_VALUED.includes(word[i] as string)) {
            skip = i === word.length - 1;
            break;
          }
      } else ssh = 1;
      return;
    }
    const previous = words[index - 1];
    const flag = previous === "--" && index > 1 && POSIX_SHELLS.has(program) ? words[index - 2] : previous;
    const kind = program !== "" && flag !== undefined ? scriptAfter(program, flag) : undefined;
    if (kind !== undefined && word !== "--") {
      places.set(index, { kind, at: 0 });
      // `cmd /c powershell -EncodedCommand B64` as separate words: PowerShell's options follow,
      // read as they are where it is the command itself.
      const runs = programName(word);
      program = runs === "pwsh" || runs === "powershell" ? runs : "";
      return;
    }
    const encoded = program === "pwsh" || program === "powershell" ? PWSH_ENCODED_TIGHT.exec(word) : null;
    const at = encoded ? encoded[0].length : program !== "" ? tightScriptAt(program, word) : 0;
    if (at > 0) {
      places.set(index, { kind: encoded ? "encoded" : "script", at });
      program = "";
      return;
    }
    const name = programName(word);
    if (name === "ssh") {
      ssh = 0;
      program = "";
    } else if (POSIX_SHELLS.has(name) || SCRIPT_PROGRAM.test(name)) program = name;
  });
  return places;
}

const FLAG = /^--?([A-Za-z][\w.-]*)(?:=([\s\S]*))?$/;

/** What one argument's scan found: the first sign, and the argument with every flagged part redacted. */
interface ArgFound {
  sign: SecretSign;
  safe: string;
}

/**
 * How an argument's parts are judged: `literal` for a value after a telling name (any literal
 * value in args, one that reads as a credential in prose), `header` for a header's value given as
 * `Name: value`, `telling` for a name; `words` when an argument holding whitespace (a `sh -c`
 * command) is read a word at a time.
 */
interface ArgRules {
  literal: (value: string) => boolean;
  header: (value: string, name: string) => boolean;
  telling: (name: string) => boolean;
  words: boolean;
}

const ARG_RULES: ArgRules = {
  literal: isLiteral,
  header: (value) => isLiteral(value),
  telling: looksSecretName,
  words: true,
};

/** Prose's rules: a name tells by its words, and a value must read as a credential. */
const PROSE_RULES: ArgRules = {
  literal: proseCredential,
  header: headerCredential,
  telling: looksProseSecretName,
  words: false,
};

/**
 * One word of a command line: where it is written (`start`, `end`), what it says once its quotes
 * are read (`value`), where each of its characters is written (`at`), whether it is a shell
 * operator (`;`, `|`, `&&`, `>`, `<<<`, `(`, …) and whether a `$` or a backtick makes it read at
 * run time. A word read again (a quote or a substitution holding whitespace, or the text after an
 * opener left open) is `data`: split at whitespace with no quote read, and read with the words of
 * its own line only (see `dataSpans`). `defaults` are the literal defaults of the
 * `${NAME:-word}` forms written in it: where each stands in `value`, and its `NAME`.
 */
interface CommandWord {
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
}

const SPACE = /\s/;

/**
 * How deep substitutions inside substitutions (`$(… $(…) …)`, backticks) are read: as words by
 * `commandWords`, and as parts shown in place by the display (`deeper`). Deeper, the export hides a
 * substitution whole; the display keeps it in sight, payload included, unless a flat scan of its
 * text finds a word that tells of a secret (see `deepTells`), and then hides it whole (r56 R56-2).
 */
const SUBSTITUTION_DEPTH = 4;

/** curl's `-u`/`--user` and a URL's userinfo (`://user:X@`): shapes that give a credential with no telling word. */
const DEEP_TELL_SHAPE = /(?:^|[\s(`'"])(?:-u|--user(?![\w-]))|:\/\/[^\s/@]*@/;

/**
 * Whether the text of a substitution past `SUBSTITUTION_DEPTH` may say a credential, read flat in
 * one pass (no quote, substitution or word read): a telling word or shape anywhere in it
 * (`--password`, `TOKEN=`, `secret`, `sudo -S`, … as `scriptTells` reads a shell's command), curl's
 * `-u`, or a URL's userinfo. Such a text is hidden whole; any other is shown, its key shapes hidden in place.
 */
function deepTells(text: string): boolean {
  return scriptTells(text) || DEEP_TELL_SHAPE.test(text);
}

/** For the display: a text past `SUBSTITUTION_DEPTH` (see `deepTells`), hidden whole through `literal`, or shown with its key shapes hidden. */
function shownDeep(text: string, hide: SecretHide | undefined, literal: (text: string) => string): string {
  return deepTells(text) ? literal(text) : withoutKeys(text, hide);
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
/**
 * What, after a `$`, makes bash read something at run time: a name's character, `{`, `(`, `[`
 * (arithmetic) or one of its special parameters (`$$ $! $? $# $* $@ $-`, digits). Any other
 * `$` (`Passw0rd$`, `x$%y`) is the character itself.
 */
const EXPANDS = /[A-Za-z0-9_{([$!?#*@-]/;
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
const EXPANSION = /\$[A-Za-z0-9_{([$!?#*@-]|`/;

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
function expansionEnd(line: string, from: number, arithmetic = false): Closed {
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
function commandWords(line: string, depth = 0, nested = false): CommandWord[] {
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
  while (i < line.length) {
    const first = line[i] as string;
    // Whitespace, and a backslash before a newline (a line continuation: bash reads neither).
    if (SPACE.test(first) || (first === "\\" && line[i + 1] === "\n")) {
      i += first === "\\" ? 2 : 1;
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
        let close = fallback ? p + fallback[0].length : -1;
        for (let k = 0; fallback && k < depth; k += 1) {
          if (line[close] !== "}") fallback = null;
          close += 1;
        }
        if (fallback) {
          const text = fallback[3] ?? fallback[4] ?? fallback[5] ?? "";
          const from = p + fallback[0].length - 1 - (fallback[3] !== undefined ? 0 : 1) - text.length;
          const begin = value.length;
          for (let k = from; k < from + text.length; k += 1) put(k);
          // Under the innermost name that names a credential, else the innermost.
          names.push(fallback[1] ?? "");
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
      dynamic = true;
      const { end, closed } = expansionEnd(line, i);
      if (!closed) leftOpen();
      // A command's substitution (`$(…)`, not `$((…))`; a backtick's) holding whitespace: its command read too.
      const backtick = line[i] === "`";
      const from = i + (backtick ? 1 : 2);
      if (
        closed &&
        (backtick || (line[i + 1] === "(" && line[i + 2] !== "(")) &&
        /\s/.test(line.slice(from, end - 1))
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
      } else if (c === "\\" && next === "\n") i += 2;
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
function nameWords(name: string): string[] {
  return name.split(/[^A-Za-z]+|(?<=[a-z])(?=[A-Z])/).filter((word) => word !== "");
}

/**
 * True when a flag's, variable's or header's whole name names a credential — its last word is
 * one (`--password`, `--api-key`, `--token`, `GITHUB_TOKEN`, `X-Api-Key`) — rather than a
 * setting about one or another word that starts like one (`--token-budget`, `--tokenizer`,
 * `--keyword`, `--password-file`, `--auth-type`). How a shell's command is read.
 */
function wholeNameTells(name: string): boolean {
  const words = nameWords(name);
  const last = words[words.length - 1];
  return last !== undefined && looksProseSecretName(name) && looksProseSecretName(last);
}

/** A part of a text to replace: `[start, end)`, the secret's name (none for a key shape) and the sign. */
interface Span {
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
function innerWordEnd(text: string, from: number): number {
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

/** `[start, end)` of `text` where a telling connection-string pair's literal value is written (see `connectionPairs`). */
function connectionSpans(text: string, rules: ArgRules): Span[] {
  if (!text.includes(";")) return [];
  const parts = connectionParts(text);
  if (parts.length < 2) return [];
  const first = parts[0] ?? "";
  const opens =
    /^[A-Za-z][A-Za-z0-9+.:-]*:\/\//.test(first) ||
    (first.includes("=") && PAIR_NAME.test(first.split("=")[0] ?? ""));
  if (!opens) return [];
  const spans: Span[] = [];
  let from = 0;
  for (const part of parts) {
    const eq = part.indexOf("=");
    const key = eq < 0 ? "" : part.slice(0, eq);
    if (eq >= 0 && PAIR_NAME.test(key)) {
      const value = part.slice(eq + 1);
      const lead = /^\s*/.exec(value)?.[0] ?? "";
      const bareValue = value.slice(lead.length).trimEnd();
      const name = key.trim();
      if (rules.telling(name) && rules.literal(bareValue)) {
        const start = from + eq + 1 + lead.length;
        spans.push({ start, end: start + bareValue.length, name, sign: SecretSign.Flag });
      }
    }
    from += part.length + 1;
  }
  return spans;
}

/** A URL's start: a scheme where a run of scheme characters starts (so a long run is read once). */
const URL_IN_WORD = /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/\S*/g;

/**
 * The spans of one word's value that hold a secret, read as args are but only by whole names; a
 * literal default of `${NAME:-word}` that no span covers, under a `NAME` whose whole name tells,
 * besides (`${DB_PASSWORD:-X}`). A word read again (`data`), or any with `asData`, as `dataSpans` reads
 * it, given the two words before it on its line.
 */
function wordSpans(
  word: CommandWord,
  previous: CommandWord | undefined,
  before: CommandWord | undefined,
  asData = false,
): Span[] {
  const spans = word.data || asData ? dataSpans(word, previous, before) : ruleSpans(word, previous, before);
  const defaults = (word.defaults ?? []).filter(
    (fallback) => wholeNameTells(fallback.name) && isLiteral(word.value.slice(fallback.start, fallback.end)),
  );
  if (defaults.length === 0) return spans;
  // Both in the order written: merged in one pass, a default inside a span left to the span.
  const out: Span[] = [];
  let next = 0;
  for (const fallback of defaults) {
    while (next < spans.length && (spans[next] as Span).start < fallback.end) {
      out.push(spans[next] as Span);
      next += 1;
    }
    const last = out[out.length - 1];
    if (last !== undefined && last.end > fallback.start) continue;
    out.push({ start: fallback.start, end: fallback.end, name: fallback.name, sign: SecretSign.Flag });
  }
  while (next < spans.length) {
    out.push(spans[next] as Span);
    next += 1;
  }
  return out;
}

/** A name written before its value in a config line: `password:`, `"api_key":`, `{"token":`. */
const NAME_COLON = /^[{[,]?["']?([A-Za-z_][\w.-]*)["']?:$/;
/** A name alone before a lone `=` or `:` (`password = X`), quoted or not. */
const NAME_ALONE = /^["']?([A-Za-z_][\w.-]*)["']?$/;
/** A config value that is no credential: YAML's and JSON's empty and boolean words, a `<placeholder>` (or its first word). */
const NO_VALUE = /^(?:["']?(?:null|nil|none|~|true|false|yes|no|on|off)["']?[,;]?|<[^<>]*>?["']?[,;]?)$/i;

/**
 * The spans of a data word (one read again with no quote: see `CommandWord`): what a command's
 * word says (`--password X`, `--password=X`, `NAME=X`, a header word, curl's `-u user:X`, a
 * connection string's pair, a URL's credentials), and what a config line says: the value after
 * `NAME:` (`password: X`, `"api_key": "X",`), after `NAME =` or `NAME :`, and after
 * `NAME: Bearer` (the scheme kept), under a name whose whole name tells and holding a letter or a
 * digit (not YAML's `|` or `>`); in a comment or a quoted string, one that reads as a credential
 * (`proseCredential`: `# password: see the vault`, `echo "token: rotated"` are prose). `null`, `true`, `~`, a `<placeholder>` and the like are
 * no value. A key shape after a name that says only "a credential" (`key:`,
 * `token:`) is left to the key shapes (`${SECRET}`). Each value is taken without the quotes, the
 * `,` or `;` and an unpaired `)` written around it in the word (`"X",` → `X`).
 */
function dataSpans(
  word: CommandWord,
  previous: CommandWord | undefined,
  before: CommandWord | undefined,
): Span[] {
  const value = word.value;
  if (NO_VALUE.test(value)) return urlSpans(value, []);
  const found = ruleSpans(word, previous, before).flatMap((span) => trimmedSpans(value, span));
  if (found.length > 0)
    return word.quoted
      ? found.filter((span) => span.with !== undefined || proseCredential(value.slice(span.start, span.end)))
      : found;
  if (word.dynamic || !/[A-Za-z0-9]/.test(value) || SCHEME.test(value) || previous === undefined) return [];
  // In a quoted string (prose: `echo "password: see the vault"`), such a value must read as a credential.
  if (word.quoted && !proseCredential(value.replace(/^["']|["']?[,;]?$/g, ""))) return [];
  const colon = NAME_COLON.exec(previous.value);
  const scheme = SCHEME.test(previous.value) && before ? NAME_COLON.exec(before.value) : null;
  const assigned =
    (previous.value === "=" || previous.value === ":") && before ? NAME_ALONE.exec(before.value) : null;
  const name = (colon ?? scheme ?? assigned)?.[1];
  if (name === undefined || !wholeNameTells(name) || !isLiteral(value)) return [];
  if (GENERIC_NAME.test(name) && looksLikeKey(value)) return [];
  return trimmedSpans(value, { start: 0, end: value.length, name, sign: SecretSign.Flag });
}

/**
 * A data word's span without the quotes, the `,` or `;` and an unpaired `)` written around its
 * value; when what is left says nothing outside its references, each of its literal defaults'
 * words alone (`${DB_PASSWORD:-X}` → `X`). None when no letter or digit is left. A URL's span is kept whole.
 */
function trimmedSpans(value: string, span: Span): Span[] {
  if (span.with !== undefined) return [span];
  let { start, end } = span;
  while (end > start && (value[end - 1] === "," || value[end - 1] === ";")) end -= 1;
  if (end > start && value[end - 1] === ")" && !value.slice(start, end).includes("(")) end -= 1;
  const quote = value[start];
  if ((quote === '"' || quote === "'") && end - start >= 2 && value[end - 1] === quote) {
    start += 1;
    end -= 1;
  } else if (quote === '"' || quote === "'") start += 1;
  else if (end > start && (value[end - 1] === '"' || value[end - 1] === "'")) end -= 1;
  const text = value.slice(start, end);
  // Punctuation alone (`))`, `|`) is no value.
  if (!/[A-Za-z0-9]/.test(text)) return [];
  if (withoutReferences(text).trim() !== "") return [{ ...span, start, end }];
  return literalDefaults(text).map((fallback) => ({
    ...span,
    start: start + fallback.start,
    end: start + fallback.end,
  }));
}

/**
 * PowerShell's assignment to an environment variable, `$env:NAME=value` or `${env:NAME}=value`
 * (any case), or its name alone before ` = value`: the name, then `=` or nothing.
 */
const PWSH_ENV =
  /^\$(?:env:(?=[A-Za-z_][A-Za-z0-9_]*(?:=|$))|\{env:(?=[A-Za-z_][A-Za-z0-9_]*\}(?:=|$)))([A-Za-z_][A-Za-z0-9_]*)\}?(=|$)/i;

/**
 * A pasted `command` that is one word in quotes (`"postgres://user:X@db/x"`, `'Server=db;…'`): read
 * as a line, as `withoutCommandLineSecrets` shows it, since the quotes hide it from a plain
 * string's reading (r49 F5).
 */
const QUOTED_WHOLE = /^(["'])[\s\S]+\1$/;

/** True when `text` starts as PowerShell's `$env:NAME=` or `${env:NAME}=`: one word that is an assignment. */
const pwshAssignment = (text: string) => PWSH_ENV.exec(text)?.[2] === "=";

/**
 * Where each PowerShell "…" string of a line ends, read as PowerShell reads one (r46 N2): for the
 * position `p` just after an opening `"`, `close[p]` is the index of its closing `"` (-1 when none),
 * a backtick escaping the character after it and `""` being one quote; `expands[p]` is 1 when a `$`
 * that PowerShell expands (`$name`, `$(…)`, `${…}`) stands unescaped before that close, and
 * `literal[p]` is 1 when written text other than spaces stands there beside those run-time parts
 * (`Sec`, an escape such as `` `$x ``, a `""`). One pass from the line's end after one pass pairing
 * parentheses, so reading every word's string costs the line's length a few times.
 */
interface PwshQuotes {
  close: Int32Array;
  expands: Uint8Array;
  literal: Uint8Array;
}

/** A character of a PowerShell variable's name after `$` (`$x`, `$env:NAME`, `$_`, `$?`). */
const PWSH_NAME = /[A-Za-z0-9_:?]/;

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

function pwshQuotes(line: string): PwshQuotes {
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
function pwshQuotedValue(
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

/** True when a value a program or PowerShell assigns says something in clear: no `$variable`, `$(…)` or backtick read at run time. */
function plainLiteral(text: string): boolean {
  return !EXPANSION.test(withoutReferences(text)) && isLiteral(text);
}

/** A shell variable's name, all of it. */
const SHELL_NAME = /^[A-Za-z_]\w*$/;
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
    if (c === "`" || (c === "$" && /[{([]/.test(next))) {
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
function saysBesideRunTime(text: string, at?: readonly number[]): boolean {
  return literalStretches(text, at).some((stretch, index) => {
    const says =
      index === 0 && !stretch.afterPart
        ? stretch.text.replace(/^\s*(?:Bearer|Basic|Token)\b/i, "")
        : stretch.text;
    return /[A-Za-z0-9]/.test(says) && !labelBesideRunTime(stretch);
  });
}

/**
 * Where, on `line`, the text that gives `span` of `word` (a word read partly at run time) is
 * written, quotes and all: from just after the value's character before the span (the word's
 * start) to the value's character after it (the word's end). Undefined unless a quote is open at
 * neither end, so the text can be replaced by a reference and filled back byte for byte
 * (`$X'hunter2'` → `${PASSWORD}`). One pass over the word.
 */
function writtenWhole(
  line: string,
  word: CommandWord,
  span: Span,
): { start: number; end: number } | undefined {
  const start = span.start > 0 ? (word.at[span.start - 1] as number) + 1 : word.start;
  const end = span.end < word.value.length ? (word.at[span.end] as number) : word.end;
  // What closes the quote open at `i`: "" for none.
  let close = "";
  let i = word.start;
  let open = true;
  while (i < end) {
    if (i === start) open = close !== "";
    const read = quoteStep(line, i, close);
    if (i < start && i + read.step > start) return undefined;
    close = read.close;
    i += read.step;
  }
  return open || close !== "" || i !== end ? undefined : { start, end };
}

/**
 * One step of a shell word's quotes at `i` of `line`, `close` closing the quote open there ("" for
 * none): how many characters it takes and what closes the quote open after it. A `\` and the
 * character after it, a substitution (`$(…)`, `${…}`, `$[…]`, a backtick's) and `$$` or `$` with
 * another special parameter (`$?`, `$1`: so `$$'…'` is `$$`, then a '…' quote, r51 F2) are one step.
 */
function quoteStep(line: string, i: number, close: string): { step: number; close: string } {
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
function quoteOpenAtEnd(line: string, from: number): boolean {
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
function shownInPlace(
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
  return pieces
    .map(({ text, kind, quoted }) =>
      kind === "literal" ? literal(text) : kind === "part" ? part(text, quoted) : text,
    )
    .join("");
}

/** How deep the display's reading of run-time parts is now (see `shownShellPart`). */
let shownDepth = 0;
/** At the start of a `${…}`: `${`, an indirection or length mark, a name (or a positional or special parameter), an index and an operator. */
const BRACED_HEAD =
  /^\$\{[!#]?(?:[A-Za-z_]\w*|\d+|[@*#?$!-])(?:\[[^\]]*\])?(?::?[-=?+]|##?|%%?|\/[/#%]?|\^\^?|,,?|@|:)?/;

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
function shownShellPart(
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
function deeper<T>(read: () => T, tooDeep: () => T): T {
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
function shownPwshPart(
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
function shellStepper(line: string): (i: number) => ShownStep {
  let close = "";
  return (i) => {
    const c = line[i] as string;
    const next = line[i + 1] ?? "";
    if (close === "'" || close === "$'") {
      if (c === "'") close = "";
      else return { step: close === "$'" && c === "\\" ? 2 : 1, kind: "literal" };
      return { step: 1, kind: "quote" };
    }
    if (c === "\\") return { step: 2, kind: "literal" };
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
function pwshStepper(line: string, end: number): (i: number) => ShownStep {
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

/**
 * Whether a word read partly at run time is read for a mixed value (literal text beside run-time
 * parts, see `saysBesideRunTime`): any but a data word, and a quoted string's own data word
 * (`sh -c "srv --token abc\$X"`) whose run-time parts are whole in it (a `$NAME`, `${…}` closed in
 * it; no `$(`, `$[` or backtick, which a blank inside them may have split).
 */
function mixedWord(word: CommandWord): boolean {
  if (!word.data) return true;
  if (!word.quoted || word.nested || /`|\$[([]/.test(word.value)) return false;
  return (word.value.match(/\$\{/g)?.length ?? 0) === (word.value.match(/\}/g)?.length ?? 0);
}

/** The spans found by the rules for args in one word's value (see `wordSpans`), given the two words before it on its line. */
function ruleSpans(word: CommandWord, previous: CommandWord | undefined, twoBefore?: CommandWord): Span[] {
  const value = word.value;
  const literal = (text: string) => !word.dynamic && isLiteral(text);
  // Literal, or read partly at run time with literal text beside that says something (`abc$def`),
  // a quoted string's data word's too (`sh -c "srv --token abc\$X"`).
  const said = (from: number, to = value.length) =>
    literal(value.slice(from, to)) ||
    (word.dynamic && mixedWord(word) && saysBesideRunTime(value.slice(from, to), word.at.slice(from, to)));
  const whole = (from: number, name: string): Span[] => [
    { start: from, end: value.length, name, sign: SecretSign.Flag },
  ];
  // PowerShell's `$env:API_KEY='X'` (its quotes read, as a shell reads them), and `$env:API_KEY = "X"`.
  const env = PWSH_ENV.exec(value);
  if (env?.[2] === "=" && wholeNameTells(env[1] ?? "") && plainLiteral(value.slice(env[0].length)))
    return whole(env[0].length, env[1] ?? "");
  const spaced = previous?.value === "=" && twoBefore ? PWSH_ENV.exec(twoBefore.value) : null;
  if (spaced?.[2] === "" && wholeNameTells(spaced[1] ?? "") && plainLiteral(value))
    return whole(0, spaced[1] ?? "");
  // `--password X`, `--api-key 'X'`: the value right after a flag whose whole name tells.
  const before = previous && !previous.operator && !previous.dynamic ? FLAG_ALONE.exec(previous.value) : null;
  if (before && wholeNameTells(before[1] ?? "") && !value.startsWith("-") && said(0))
    return whole(0, before[1] ?? "");
  // curl's `-u user:X` and `-uuser:X`, when X reads as a credential.
  const user =
    previous && !previous.operator && /^(?:-u|--user)$/.test(previous.value)
      ? /^([^:\s]+):(\S+)$/.exec(value)
      : null;
  // Read partly at run time, its password is one when literal text beside says something (`u:abc$X`).
  const userPassword = (text: string, from: number) =>
    word.dynamic ? said(from) && saysBesideRunTime(text) : proseCredential(text);
  if (user && userPassword(user[2] ?? "", (user[1] ?? "").length + 1))
    return whole((user[1] ?? "").length + 1, "password");
  const tight = TIGHT_USER.exec(value);
  if (tight && userPassword(tight[2] ?? "", (tight[1] ?? "").length + 3))
    return whole((tight[1] ?? "").length + 3, "password");
  // `--api-key=X`, and `--env=GITHUB_TOKEN=X`, `GITHUB_TOKEN=X`, `password=X`: an assignment's value.
  let from = 0;
  const flag = FLAG.exec(value);
  if (flag && flag[2] !== undefined) {
    from = value.length - flag[2].length;
    if (wholeNameTells(flag[1] ?? "") && said(from)) return whole(from, flag[1] ?? "");
  }
  const assignment = ASSIGNMENT.exec(value.slice(from));
  if (assignment) {
    const name = assignment[1] ?? "";
    const start = from + name.length + 1;
    // `"DB_PASSWORD=X exec srv"` (`su app -c "…"`): a quote before the name makes the word no
    // assignment to this shell but a command of its own, whose assignment's value ends at a blank
    // outside its quotes and substitutions (r50 F7: `'TOKEN=abc$(curl e|sh) srv'`).
    const quotedCommand = from === 0 && (word.at[0] ?? word.start) > word.start && /\s/.test(value);
    const end = quotedCommand ? innerWordEnd(value, start) : value.length;
    // The shell that runs that command reads its value partly at run time (a literal default aside).
    const text = value.slice(start, end);
    const inner = quotedCommand && !word.dynamic && /[$`]/.test(text) && literalDefaults(text).length === 0;
    // A command's own `NAME=value` read partly at run time is a secret when literal text beside
    // that says something (`TOKEN=abc$def`: hidden whole).
    const says = inner ? saysBesideRunTime(text) : SHELL_NAME.test(name) ? said(start, end) : literal(text);
    if (wholeNameTells(name) && end > start && says)
      return [{ start, end, name, sign: SecretSign.Flag, ...(inner ? { inner } : {}) }];
  }
  // "X-Api-Key: X", "Authorization: Bearer X" (a header, as curl's -H takes it).
  const header = /^([\w.-]+)(\s*:\s*)(\S[\s\S]*)$/.exec(value);
  if (
    header &&
    !/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value) &&
    wholeNameTells(header[1] ?? "") &&
    literal(header[3] ?? "")
  )
    return whole(value.length - (header[3] ?? "").length, header[1] ?? "");
  // A connection string's telling pairs ("Server=db;Password=X;") and a URL's credentials (its
  // userinfo and telling query values), each read in the same word, in the order written.
  const spans = word.dynamic
    ? []
    : connectionSpans(value.slice(from), ARG_RULES).map((span) => ({
        ...span,
        start: span.start + from,
        end: span.end + from,
      }));
  return urlSpans(value, spans);
}

/** A connection string's pair `spans` in `value` (in order), with each URL's credentials outside them added, in order. */
function urlSpans(value: string, spans: Span[]): Span[] {
  const pairs = spans.length;
  let next = 0;
  for (const match of value.matchAll(URL_IN_WORD)) {
    // Among a connection string's pairs a URL ends at its `;` (`Server=postgres://u:X@h;Password=Y`).
    const semicolon = pairs > 0 ? match[0].indexOf(";") : -1;
    const url = semicolon < 0 ? match[0] : match[0].slice(0, semicolon);
    const sign = urlSign(url);
    const start = match.index ?? 0;
    const end = start + url.length;
    while (next < pairs && (spans[next] as Span).end <= start) next += 1;
    if (!sign || (next < pairs && (spans[next] as Span).start < end)) continue;
    spans.push({ start, end, name: undefined, sign, with: url });
  }
  if (pairs > 0 && spans.length > pairs) spans.sort((x, y) => x.start - y.start);
  return spans;
}

/** JS's and Python's quotes, inside a character class. */
const PROGRAM_QUOTES = "'\"`";
/** A name in a JS or Python string, its quotes perhaps escaped for the shell (`\"TOKEN\"`). */
const PROGRAM_NAME = String.raw`\s*(?<nameEscape>\\?)(?<nameQuote>[${PROGRAM_QUOTES}])(?<name>[A-Za-z_]\w*)\k<nameEscape>\k<nameQuote>\s*`;
/** A string literal's text (up to 512 characters, no quote or backslash inside), its quotes perhaps escaped for the shell. */
const PROGRAM_STRING = String.raw`\s*(?<prefix>[rRuUbBfF]{0,2})(?<valueEscape>\\?)(?<valueQuote>[${PROGRAM_QUOTES}])(?<value>[^${PROGRAM_QUOTES}\\\n]{1,512})\k<valueEscape>\k<valueQuote>`;

/** JS's assignment operators that set a variable: `=`, `??=`, `||=`, `&&=` (not `==`, `=>`). */
const JS_ASSIGN = String.raw`\s*(?:\?\?|\|\||&&)?=(?![=>])`;
/** The first key of an object literal opened at `{`: bare (`TOKEN:`) or quoted (`'TOKEN':`). */
const FIRST_KEY = String.raw`\{\s*(?<name>[A-Za-z_]\w*)\s*:`;

/**
 * A program's assignment to its environment, written in its own text: JS's `process.env.TOKEN =
 * 'X'` (or `??=`, `||=`, `&&=`), `process.env["TOKEN"] = 'X'` and `Object.assign(process.env,
 * {TOKEN: 'X'})` (its first key), Python's `os.environ['TOKEN'] = 'X'`, `os.environ.setdefault('TOKEN',
 * 'X')`, `os.putenv('TOKEN', 'X')`, `os.environ.update(TOKEN='X')` and `os.environ.update({'TOKEN':
 * 'X'})` (its first key); a Python string's prefix (`r'X'`, `f'X'`) is passed over. A value that
 * is no such literal (`f('X')`, `os.getenv('A', 'X')`, `'''X'''`) is matched empty where it
 * starts, after the blanks (the `expression` group), and read as an expression (see `programValues`).
 */
const PROGRAM_ENV = [
  String.raw`process\.env\.(?<name>[A-Za-z_]\w*)${JS_ASSIGN}`,
  String.raw`process\.env\[${PROGRAM_NAME}\]${JS_ASSIGN}`,
  String.raw`Object\.assign\(\s*process\.env\s*,\s*${FIRST_KEY}`,
  String.raw`Object\.assign\(\s*process\.env\s*,\s*\{${PROGRAM_NAME}:`,
  String.raw`os\.environ\[${PROGRAM_NAME}\]\s*=(?!=)`,
  String.raw`os\.(?:environ\.setdefault|putenv)\(${PROGRAM_NAME},`,
  String.raw`os\.environ\.update\(\s*(?<name>[A-Za-z_]\w*)\s*=(?!=)`,
  String.raw`os\.environ\.update\(\s*\{${PROGRAM_NAME}:`,
].map((head) => new RegExp(`${head}(?:${PROGRAM_STRING}|[ \\t]*(?<expression>)(?=[^\\s;,)\\]}]))`, "g"));

/** A word of a `PROGRAM_ENV` assignment: a line without one holds none. */
const PROGRAM_ENV_WORD = /process\.env|os\.(?:environ|putenv)/;

/**
 * Where a program's assignment to its environment writes a literal under a telling name: `[start,
 * end)` of the line, and the name; or, `expression` set, where a value that starts with no such
 * literal (a call, a prefixed or triple-quoted string) starts (`end` one past it), read to the
 * statement's end (R56-3).
 */
interface ProgramValue {
  start: number;
  end: number;
  name: string;
  expression?: true;
}

/**
 * After a string literal's closing quote in a word's value (the shell's quoting read), what makes
 * it part of a longer expression: `+`, `.`, or another literal (`'sk-'+'live…'`,
 * `'abc'.repeat(2)`, Python's `'a' 'b'`). Sticky: tried at `lastIndex`.
 */
const GOES_ON = /\s*[+.`'"]/y;

/** What, last before a line break (blanks aside), makes the expression go on past it: a binary operator or a `.`. */
const GOES_ON_AT_BREAK = /[-+*/%<>=&|?:.~^!]/;

/**
 * Whether `text[i]` is a `\\` that joins the next line to its own (Python's explicit line join; a
 * shell's, kept as written in '…'): read as a blank, so the expression goes on past the break.
 */
const joinsLine = (text: string, i: number) => text[i] === "\\" && /[\n\r]/.test(text[i + 1] ?? "");
/** What, before a `/` (blanks aside), makes it open a JS regex literal, not divide: an operator, an opening or closing punctuator, or nothing. */
const REGEX_BEFORE = /[-+*%<>~^(,=:[!&|?{};]/;

/** The line break at or after `at` in `text`, or its end. */
function lineEndAt(text: string, at: number): number {
  let j = at;
  while (j < text.length && text[j] !== "\n" && text[j] !== "\r") j += 1;
  return j;
}

/** What a program's text passes over whole at a point (see `passedOver`). */
interface PassedOver {
  /** Where it ends (after a regex literal's flags). */
  end: number;
  /** A JS regex literal's body, `[start, end)` between its slashes; none for a comment. */
  body?: [number, number];
  /** Left open (a regex literal on its line, a `/*` never closed): it cannot be read with confidence. */
  open: boolean;
}

/**
 * At `i` of a program's `text`, `last` being the last character read outside strings and comments
 * that is no blank (`""` for none): the comment or JS regex literal that opens there, or undefined.
 * A comment is `/*…*\/`, or `//…` or Python's `#…` to the line's end (a `#` after `.` is JS's
 * private name). A regex literal is a `/` after an operator, an opening or closing punctuator or
 * nothing (`REGEX_BEFORE`), to an unescaped `/` outside `[…]` on its line, then its flags. The
 * one reader of both for `statementEnd` and `shownProgramExpression`.
 */
function passedOver(text: string, i: number, last: string): PassedOver | undefined {
  const c = text[i];
  const next = text[i + 1];
  if (c === "/" && next === "*") {
    const close = text.indexOf("*/", i + 2);
    return close < 0 ? { end: text.length, open: true } : { end: close + 2, open: false };
  }
  if ((c === "/" && next === "/") || (c === "#" && last !== "."))
    return { end: lineEndAt(text, i), open: false };
  if (c !== "/" || (last !== "" && !REGEX_BEFORE.test(last))) return undefined;
  let j = i + 1;
  let inClass = false;
  for (; j < text.length && !/[\n\r]/.test(text[j] as string); j += 1) {
    const r = text[j] as string;
    if (r === "\\") j += 1;
    else if (r === "[") inClass = true;
    else if (r === "]") inClass = false;
    else if (r === "/" && !inClass) break;
  }
  if (text[j] !== "/") return { end: lineEndAt(text, i), open: true };
  let end = j + 1;
  while (/[a-z]/.test(text[end] ?? "")) end += 1;
  return { end, body: [i + 1, j], open: false };
}

/**
 * Where the expression at `from` in a program's text ends: before a `;`, a `,` or a line break
 * outside every bracket it opened, or a `)`, `]` or `}` that closes nothing it opened, and before
 * the blanks there (a line break after or before an operator, or after a `\\` that joins lines (see
 * `joinsLine`), goes on); or at the end of `text`. A
 * string literal (quoted `'`, `"` or a backtick, `\\` escaping), a comment and a JS regex literal
 * (see `passedOver`) are passed over whole, so a bracket in them neither ends the expression nor
 * keeps it open (r51 F3: `"a"+/[)]/.source+"X"`). A comment or regex left open, which cannot be
 * read with confidence, ends the expression at the line break after it (or the end of `text`). One pass.
 */
function statementEnd(text: string, from: number): number {
  let depth = 0;
  let quote = "";
  let end = text.length;
  // The last character read outside strings and comments that is no blank.
  let last = "";
  for (let i = from; i < text.length; i += 1) {
    const c = text[i] as string;
    if (quote !== "") {
      if (c === "\\") i += 1;
      else if (c === quote) quote = "";
      continue;
    }
    const over = passedOver(text, i, last);
    if (over?.open) {
      end = lineEndAt(text, i);
      break;
    }
    if (over) {
      i = over.end - 1;
      if (over.body) last = text[i] as string;
      continue;
    }
    // A line break after an operator, or before one, goes on (`'sk-'+ // (\n'X'`).
    if (depth === 0 && (c === "\n" || c === "\r")) {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j] as string)) j += 1;
      if (
        GOES_ON_AT_BREAK.test(last) ||
        joinsLine(text, i - 1) ||
        (/[-+*%.?:&|^=<>]/.test(text[j] ?? "") && text[j + 1] !== "/")
      ) {
        i = j - 1;
        continue;
      }
    }
    if (!/\s/.test(c) && !joinsLine(text, i)) last = c;
    if (c === "'" || c === '"' || c === "`") quote = c;
    else if (c === "(" || c === "[" || c === "{") depth += 1;
    else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth -= 1;
    // A `,` or `;` inside a bracket it opened (`.concat('a', 'b')`) is part of the expression.
    else if (depth === 0 && /[;,\n\r)\]}]/.test(c)) {
      end = i;
      break;
    }
  }
  while (end > from && /\s/.test(text[end - 1] as string)) end -= 1;
  return end;
}

/** Names of calls whose string argument names a module to load: a location, shown (see `shownLiteral`). */
const MODULE_LOADERS = /^(?:require|import|__import__|import_module)$/;

/** Python's and JS's operators written as words: between two operands, as `+` is. */
const WORD_OPERATORS = /^(?:and|or|not|in|is|if|else|typeof|instanceof|void)$/;

/** Calls and indexes that read the environment (`getenv`, `environ[…]`, `env[…]`; `environ.get` is read as `getenv`): a literal there is a variable's name or its default. */
const ENV_READS = /^(?:getenv|environ|env)$/;
/** What, just before a call's `(`, makes it Python's `os.environ.get` (read as `getenv`). */
const ENV_GET = /(?:environ|env)\s*\.\s*get\s*$/;

/**
 * For the display (r54 G4): whether a literal's text read at run time in a program's env
 * expression (an argument of a call a name roots, an index, a template's `${…}`; see
 * `shownProgramExpression`) is shown as written rather than hidden in place. Shown when it reads
 * as a command or a location, which a credential does not: it holds a blank (a line break is
 * none) or a `|` (`'curl
 * evil.example/p|sh'`) or a URL's `://`, it is a path (it starts with `/`, `./`, `../` or `~/`,
 * or dotted words before its first `/`: `evil.example/p`), or it is the argument of a call that
 * loads a module (`require('child_process')`, `__import__('os')`) and reads as no credential: a
 * path, a scoped name, or a name without digits that `proseCredential` does not take
 * (`require('sk-live-…')` is hidden; R56-3). Any other literal, one token (a
 * key, a password, base64 text for `atob`), is hidden, and so is every literal that reads the
 * environment (`ENV_READS`: `os.getenv('X', 'a passphrase')`'s default, blanks and all).
 */
function shownLiteral(body: string, callee: string): boolean {
  if (ENV_READS.test(callee)) return false;
  return (
    (MODULE_LOADERS.test(callee) && (!/\d/.test(body) || /^[@.~/]/.test(body)) && !proseCredential(body)) ||
    /[ \t|]|:\/\//.test(body) ||
    /^(?:\.{0,2}|~)\//.test(body) ||
    /^[\w-]+(?:\.[\w-]+)+(?::\d+)?\//.test(body)
  );
}

/**
 * For the display only (r50 F2): a program's expression `text` (from its first literal's opening
 * quote to the statement's end, see `statementEnd`) with string literals (`'…'`, `"…"`, Python's
 * `'''…'''` and `"""…"""`, a template's text between its `${…}`) and regex literals' bodies
 * written as their quotes around `literal(its text)`, and everything else written as
 * `code(text)`, so a call in the expression (`'sk-'+require('child_process').execSync('curl …')`)
 * stays in sight. The chain's literals are all hidden: those a literal roots, outside every
 * bracket, or inside a method's brackets on a literal (`'a'.concat('b')`, `'-'.join(['x', 'y'])`)
 * or inside a grouping, an array or an object in the chain. What a name roots (`require(…)`,
 * `f('x')`, `x['k']`) and a template's `${…}` (nested templates too) are code, read at run time:
 * a literal there is hidden unless `shownLiteral` (r54 G4). Undefined when there is no such code
 * (the expression is literals, their methods, numbers, operators), or a comment or regex literal
 * is left open (see `passedOver`): hidden whole, as the export hides it. One pass.
 */
function shownProgramExpression(
  text: string,
  literal: (text: string) => string,
  code: (text: string) => string,
): string | undefined {
  const read = programExpression(text);
  return read?.runTime
    ? read.pieces.map((piece) => (piece.hidden ? literal(piece.text) : code(piece.text))).join("")
    : undefined;
}

/** A piece of a program's expression (see `programExpression`): code, or a literal's text to hide. */
interface ExpressionPiece {
  text: string;
  hidden: boolean;
  /** A literal that names a variable read from the environment (`os.getenv('HOME')`, `os.environ['X']`): hidden, but no credential. */
  envName?: boolean;
}

/**
 * A program's expression `text` read as `shownProgramExpression` shows it: its pieces in order and
 * whether code a name roots was read (the expression is then shown in place). Undefined when a
 * comment or regex literal is left open (see `passedOver`). One pass.
 */
function programExpression(
  text: string,
): { pieces: ExpressionPiece[]; runTime: boolean; open: boolean } | undefined {
  // What is written, in order: code, or a literal's text to hide.
  const pieces: ExpressionPiece[] = [];
  // The code read since the last literal hidden.
  let pending = "";
  interface Frame {
    // Whether its literals are the chain's.
    chain: boolean;
    // Whether the operand being read there started with a literal (undefined: none started yet).
    literal: boolean | undefined;
    // A template's `${…}`, which its `}` closes.
    template: boolean;
    // The name of the call it is the brackets of (`require`), or "".
    callee: string;
    // Whether no `,` was read in it yet: its first argument is read.
    first: boolean;
  }
  // Each bracket open (the expression itself first).
  const frames: Frame[] = [{ chain: true, literal: undefined, template: false, callee: "", first: true }];
  // A literal's text: hidden in place, or kept as code (see `shownLiteral`).
  const put = (body: string) => {
    const { chain, callee, first } = frames.at(-1) as Frame;
    if (chain || !shownLiteral(body, callee)) {
      pieces.push({ text: pending, hidden: false });
      // The variable's name: `getenv`'s first argument, or an index of `environ`.
      const envName = !chain && first && ENV_READS.test(callee) && /^[A-Za-z_]\w*$/.test(body);
      if (body !== "") pieces.push({ text: body, hidden: true, ...(envName ? { envName } : {}) });
      pending = "";
    } else pending += body;
  };
  // Whether code a name roots was read: the expression is then shown in place.
  let runTime = false;
  // Whether a literal is left open at the end (the text is cut short).
  let open = false;
  // The last character read that is no blank (outside literals and comments), and the last name read.
  let last = "";
  let name = "";
  // A template's text from `from` (after its opening backtick, or a `${…}`'s `}`) to its closing
  // backtick, read, or a `${`, which opens a frame; where reading goes on.
  const template = (from: number): number => {
    let j = from;
    while (j < text.length && text[j] !== "`" && !(text[j] === "$" && text[j + 1] === "{"))
      j += text[j] === "\\" ? 2 : 1;
    j = Math.min(j, text.length);
    put(text.slice(from, j));
    last = "`";
    if (j >= text.length) {
      open = true;
      return j;
    }
    if (text[j] === "`") {
      pending += "`";
      return j + 1;
    }
    pending += "${";
    runTime = true;
    frames.push({ chain: false, literal: undefined, template: true, callee: "", first: true });
    last = "{";
    return j + 2;
  };
  for (let i = 0; i < text.length; ) {
    const c = text[i] as string;
    const frame = frames.at(-1) as Frame;
    if (c === "`") {
      frame.literal ??= true;
      pending += c;
      i = template(i + 1);
      continue;
    }
    if (c === "'" || c === '"') {
      const quote = text.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
      let close = i + quote.length;
      while (close < text.length && !text.startsWith(quote, close)) close += text[close] === "\\" ? 2 : 1;
      if (close >= text.length) open = true;
      close = Math.min(close, text.length);
      frame.literal ??= true;
      pending += quote;
      put(text.slice(i + quote.length, close));
      pending += text.slice(close, close + quote.length);
      last = c;
      i = close + quote.length;
      continue;
    }
    const over = passedOver(text, i, last);
    if (over?.open) return undefined;
    if (over) {
      if (over.body) {
        frame.literal ??= true;
        pending += text.slice(i, over.body[0]);
        put(text.slice(over.body[0], over.body[1]));
        pending += text.slice(over.body[1], over.end);
        last = "/";
      } else pending += text.slice(i, over.end);
      i = over.end;
      continue;
    }
    let step = 1;
    let wordOperator = false;
    if (/[A-Za-z_$]/.test(c)) {
      while (/[\w$]/.test(text[i + step] ?? "")) step += 1;
      // A method's name (after `.`), and a Python string's prefix (`f'…'`), root nothing.
      const prefix = /^[rRuUbBfF]{1,2}$/.test(text.slice(i, i + step)) && /['"]/.test(text[i + step] ?? "");
      name = text.slice(i, i + step);
      // An operator written as a word (Python's `or`, JS's `typeof`) ends the operand, as `+` does (R56-3).
      wordOperator = last !== "." && WORD_OPERATORS.test(name);
      if (wordOperator) frame.literal = undefined;
      else {
        if (last !== "." && !prefix && frame.literal === undefined) frame.literal = false;
        if (last !== "." && !prefix && frame.literal === false) runTime = true;
      }
    } else if (/[\d\s.]/.test(c) || joinsLine(text, i)) {
      // A number, a blank (a line join too), a method's dot: the operand goes on.
    } else if (c === "(" || c === "[" || c === "{") {
      // A call or an index (after a name, a bracket or a literal) is the chain's when a literal roots it.
      const call = /[\w$)\]'"`]/.test(last);
      const callee = !/[\w$]/.test(last)
        ? ""
        : c === "(" && ENV_GET.test(text.slice(Math.max(0, i - 16), i))
          ? "getenv"
          : name;
      frames.push({
        chain: frame.chain && (!call || frame.literal !== false),
        literal: undefined,
        template: false,
        callee,
        first: true,
      });
    } else if (c === "}" && frame.template) {
      frames.pop();
      pending += c;
      i = template(i + 1);
      continue;
    } else if (c === ")" || c === "]" || c === "}") {
      if (frames.length > 1 && !frame.template) frames.pop();
    } else {
      frame.literal = undefined;
      if (c === ",") frame.first = false;
    }
    pending += text.slice(i, i + step);
    // After an operator written as a word, as after `+`: a `/` opens a regex, a `(` a grouping.
    if (!/\s/.test(c) && !joinsLine(text, i)) last = wordOperator ? "+" : (text[i + step - 1] as string);
    i += step;
  }
  pieces.push({ text: pending, hidden: false });
  return { pieces, runTime, open };
}

/** Each `PROGRAM_ENV` assignment in `line` of a literal under a name whose whole name tells, in the order written. */
function programValues(line: string): ProgramValue[] {
  if (!PROGRAM_ENV_WORD.test(line)) return [];
  const found: ProgramValue[] = [];
  for (const pattern of PROGRAM_ENV)
    for (const match of line.matchAll(pattern)) {
      const {
        name = "",
        value = "",
        valueEscape = "",
        valueQuote = "",
        prefix = "",
        expression,
      } = match.groups ?? {};
      if (!wholeNameTells(name)) continue;
      const end = (match.index ?? 0) + match[0].length - valueEscape.length - valueQuote.length;
      // An f-string's `{…}` is read at run time.
      const formatted = /f/i.test(prefix) && value.includes("{");
      if (expression !== undefined) found.push({ start: end, end: end + 1, name, expression: true });
      else if (plainLiteral(value) && !formatted) found.push({ start: end - value.length, end, name });
    }
  return found.sort((x, y) => x.start - y.start);
}

/** The index in `at` (increasing) that holds `position`, or -1. */
function indexOfPosition(at: readonly number[], position: number): number {
  let low = 0;
  let high = at.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const here = at[middle] as number;
    if (here === position) return middle;
    if (here < position) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

/** The first index in `at` (increasing) that holds `position` or more; `at.length` when none does. */
function firstAtOrAfter(at: readonly number[], position: number): number {
  let low = 0;
  let high = at.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((at[middle] as number) < position) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Whether a program's expression `text` (see `programExpression`) hides a literal that may be a
 * credential: any but a variable's name read from the environment (`os.getenv('HOME')`). One that
 * cannot be read with confidence (a comment, a regex or a string left open: cut short, as a
 * shell word of the program's text is) is not taken.
 */
function hidesCredential(text: string): boolean {
  const read = programExpression(text);
  return (
    read !== undefined &&
    !read.open &&
    read.pieces.some((piece) => piece.hidden && !piece.envName && plainLiteral(piece.text))
  );
}

/** `preferred` and each of `others` that overlaps none of them, both given and returned in the order written. */
function preferring(preferred: readonly Span[], others: readonly Span[]): Span[] {
  if (preferred.length === 0) return [...others];
  const out: Span[] = [];
  let next = 0;
  for (const span of others) {
    while (next < preferred.length && (preferred[next] as Span).end <= span.start) {
      out.push(preferred[next] as Span);
      next += 1;
    }
    if (next < preferred.length && (preferred[next] as Span).start < span.end) continue;
    out.push(span);
  }
  return out.concat(preferred.slice(next));
}

/**
 * A command line (an argument holding whitespace, a pasted `command`) with each secret's value
 * replaced where it is written and every other character kept as written — quotes, operators,
 * substitutions, other flags, spacing: the value after a flag whose whole name tells, a telling
 * `NAME=value`'s value (PowerShell's `$env:NAME=value` too), a program's assignment to its
 * environment in its text (see `PROGRAM_ENV`), curl's `-u user:X`, a header's, a connection
 * string's telling pair's value, a URL's credentials, each key shape; a literal default (`${DB_PASSWORD:-X}`) as a value
 * written there. A value read at run time (`"$PW"`, `$(…)`, a backtick, `${NAME}`) is not a
 * secret. No comment or heredoc is read (a `#` is a character). A shell's own command (after
 * `sh -c`, `bash -lc`, …) is never rewritten so for export: it is only read for a sign (see
 * `shellScript`); the `display` reads it in place (see `shownScript`), as a `script`: each word also
 * read as a data word is. Undefined when nothing is flagged. One pass over the line (a text an
 * unclosed opener runs over is read twice, a shown shell's command once more).
 */
export function commandLineSecrets(
  line: string,
  hide?: SecretHide,
  scriptName: () => string = () => "SHELL_COMMAND",
  display = false,
  script = false,
): ArgFound | undefined {
  const named = (secret: string, name: string) => (hide ? hide(secret, name) : reference(name));
  // Read inside a run-time part the display reads (see `shownShellPart`): that deep already.
  const words = commandWords(line, shownDepth);
  let sign: SecretSign | undefined;
  let out = "";
  let at = 0;
  // The line from `at` to `to`, its key shapes replaced.
  const keep = (to: number) => {
    const text = line.slice(at, to);
    const safe = withoutKeys(text, hide);
    if (safe !== text) sign ??= SecretSign.Value;
    out += safe;
    at = to;
  };
  // A word before `word` on its line (a data word's own line; any other word's, operators included).
  const sameLine = (word: CommandWord, other: CommandWord | undefined) =>
    other !== undefined && other.group === word.group ? other : undefined;
  const passwords = wordPasswords(words);
  // A program's assignment to its environment (`os.environ['TOKEN']='X'`), read across the line and
  // given to the first word that writes its value in place; words start in order, so one pointer.
  const programs = programValues(line);
  let program = 0;
  const shownExpression = (text: string, name: string) =>
    shownProgramExpression(
      text,
      (secret) => named(secret, name),
      (code) => withoutKeys(code, hide),
    );
  // Where the last expression read in the line as written ends: a value inside it is hidden with it
  // (not scanned again: one pass).
  let expressionEnd = 0;
  // Whether a quote is left open at the line's end, read once from the first word that asks.
  let quoteLeftOpen: boolean | undefined;
  const openAtEnd = (from: number) => {
    quoteLeftOpen ??= quoteOpenAtEnd(line, from);
    return quoteLeftOpen;
  };
  let pwsh: PwshQuotes | undefined;
  const readPwshQuotes = () => {
    pwsh ??= pwshQuotes(line);
    return pwsh;
  };
  // The expression `[from, stop)` of a word's value, read there (the shell's quotes around the
  // program): a span hiding it, shown when written in one piece on the line (no escape inside):
  // its calls stay in sight (r50 F2).
  const wordExpression = (word: CommandWord, from: number, stop: number, name: string): Span => {
    const span: Span = { start: from, end: stop, name, sign: SecretSign.Flag };
    const written = { start: word.at[from] as number, end: (word.at[stop - 1] as number) + 1 };
    // Or written apart only by the shell's line joins (`\\` and a line break, which it drops
    // outside '…'): the text as written reads as the same program, so it is shown so, or
    // hidden whole as written, which fills back byte for byte (r55 R55-1).
    const text = line.slice(written.start, written.end);
    const whole = written.end - written.start === stop - from;
    const joined = !whole && text.replace(LINE_JOIN, "") === word.value.slice(from, stop);
    const shown = !display
      ? undefined
      : whole || joined
        ? shownExpression(text, name)
        : shownApart(word, from, stop, name);
    if (shown !== undefined) Object.assign(span, { written, shown });
    // Hidden whole, written apart by the shell's quoting: as written, so it fills back byte for byte.
    else if (!whole) span.written = written;
    return span;
  };
  // Shown, the expression `[from, stop)` of a word's value written apart by the shell's quoting
  // (`$'…\'X\'…'`, `"…\"X\"…"`; R56-3): read in the value (see `programExpression`), each piece
  // written as it is on the line, a literal's text hidden as written, so it fills back byte for
  // byte and its calls stay in sight. Undefined when no code a name roots is read there.
  const shownApart = (word: CommandWord, from: number, stop: number, name: string) => {
    const read = programExpression(word.value.slice(from, stop));
    if (!read?.runTime) return undefined;
    let out = "";
    let at = word.at[from] as number;
    let k = from;
    for (const piece of read.pieces) {
      const start = k;
      k += piece.text.length;
      if (!piece.hidden || k === start) continue;
      const written = { start: word.at[start] as number, end: (word.at[k - 1] as number) + 1 };
      out +=
        withoutKeys(line.slice(at, written.start), hide) +
        named(line.slice(written.start, written.end), name);
      at = written.end;
    }
    return out + withoutKeys(line.slice(at, (word.at[stop - 1] as number) + 1), hide);
  };
  // The expression from `start` of the line to the statement's end, read in the line as written
  // (the line is the program's own text): a span from `from` in the word to its end (`to`), the
  // expression running over the words after it.
  const lineExpression = (from: number, to: number, start: number, name: string): Span => {
    expressionEnd = statementEnd(line, start);
    const shown = display ? shownExpression(line.slice(start, expressionEnd), name) : undefined;
    return {
      start: from,
      end: to,
      name,
      sign: SecretSign.Flag,
      written: { start, end: expressionEnd },
      // Shown, its calls stay in sight, only its literals hidden (r50 F2).
      ...(shown === undefined ? {} : { shown }),
    };
  };
  // The spans of expressions that start with no literal (see `programSpans`).
  const fromExpression = new WeakSet<Span>();
  const marked = (span: Span) => {
    fromExpression.add(span);
    return span;
  };
  // Whether the shell's quote is open at `position` of `word`, read on from the last position asked
  // in the same word (they come in order: one pass over it).
  let quoting = { word: -1, at: 0, close: "" };
  const quotedAt = (word: CommandWord, position: number) => {
    if (quoting.word !== word.start || quoting.at > position)
      quoting = { word: word.start, at: word.start, close: "" };
    while (quoting.at < position) {
      const read = quoteStep(line, quoting.at, quoting.close);
      quoting.close = read.close;
      quoting.at += read.step;
    }
    return quoting.close !== "";
  };
  const programSpans = (word: CommandWord): Span[] => {
    while (program < programs.length && (programs[program] as ProgramValue).start < word.start) program += 1;
    const spans: Span[] = [];
    const after = () => spans.at(-1)?.end ?? 0;
    for (let k = program; k < programs.length && (programs[k] as ProgramValue).start < word.end; k += 1) {
      const { start, end, name, expression } = programs[k] as ProgramValue;
      if (start < expressionEnd) continue;
      if (expression) {
        // A value that starts with no plain literal (a call, a prefixed or triple-quoted string;
        // R56-3), read from its first character when it hides a literal that may be a credential.
        const from = firstAtOrAfter(word.at, start);
        if (from >= word.value.length || from < after()) continue;
        // Inside the shell's quotes (`node -e "…"`, `$'…'`) the program is the word's value; else
        // the line is the program's own text.
        // An assignment inside the expression read is read with it, taken or not (one pass).
        if (word.at[from] === start && quotedAt(word, start)) {
          const stop = statementEnd(word.value, from);
          if (stop <= from) continue;
          expressionEnd = (word.at[stop - 1] as number) + 1;
          if (hidesCredential(word.value.slice(from, stop)))
            spans.push(marked(wordExpression(word, from, stop, name)));
        } else {
          expressionEnd = statementEnd(line, start);
          if (hidesCredential(line.slice(start, expressionEnd)))
            spans.push(marked(lineExpression(from, word.value.length, start, name)));
        }
        continue;
      }
      const from = indexOfPosition(word.at, start);
      const to = indexOfPosition(word.at, end - 1);
      if (from < 0 || to - from !== end - 1 - start) continue;
      // A literal that goes on (`'sk-'+'live…'`) makes the whole expression, from its opening
      // quote to the statement's end, the value (r46 R4); one inside the expression before it in
      // this word is hidden with it (not scanned again: one pass).
      const quote = from > 0 ? (word.value[from - 1] as string) : "";
      GOES_ON.lastIndex = to + 2;
      if (quote !== "" && word.value[to + 1] === quote && GOES_ON.test(word.value)) {
        if (from - 1 >= after())
          spans.push(wordExpression(word, from - 1, statementEnd(word.value, from - 1), name));
        continue;
      }
      // The line is the program's own text (`node -e`'s script read in place): the shell reads the
      // literal's quotes, so whether it goes on is read in the line as written (r48 F3), and the
      // expression, to the statement's end, may run over the words after this one.
      const open = line[start - 1] ?? "";
      const shellQuoted = word.at[from - 1] !== start - 1 && word.at[to + 1] !== end;
      GOES_ON.lastIndex = end + 1;
      if (shellQuoted && (open === "'" || open === '"') && line[end] === open && GOES_ON.test(line)) {
        if (from >= after()) spans.push(lineExpression(from, word.value.length, start - 1, name));
      } else spans.push({ start: from, end: to + 1, name, sign: SecretSign.Flag });
    }
    return spans;
  };
  // Shown, a POSIX shell's own command written in one quote is read as a line of its own (see `shownScript`).
  const scripts = display ? shellScriptWords(words) : undefined;
  let scriptEnd = 0;
  // Read in the order written, so `at` only moves forward: a quote's words read again are listed
  // before the words of a substitution written before them in the same word (r56: a value flagged
  // in the quote left a `--password X` in the substitution unread).
  const order = words.map((_, index) => index);
  order.sort((a, b) => (words[a] as CommandWord).start - (words[b] as CommandWord).start || a - b);
  order.forEach((index) => {
    const word = words[index] as CommandWord;
    if (word.operator || word.start < scriptEnd) return;
    const shownCommand = scripts?.has(index) ? shownScript(line, word, hide) : undefined;
    if (shownCommand) {
      keep(word.start);
      sign ??= shownCommand.sign;
      out += shownCommand.safe;
      at = scriptEnd = word.end;
      return;
    }
    // The word after a client's password (`sshpass -pX ssh`) is no flag's value.
    const previous = passwords.has(index - 1) ? undefined : sameLine(word, words[index - 1]);
    // PowerShell's `$env:NAME='it''s'`: only the text between its quotes, as written (r46 N2).
    const pwsh =
      word.start >= at
        ? pwshQuotedValue(line, word, previous, sameLine(word, words[index - 2]), readPwshQuotes)
        : undefined;
    if (pwsh) {
      keep(pwsh.start);
      sign ??= SecretSign.Flag;
      // Shown, a "…" value's run-time parts stay in sight, its literal text hidden in place (r50 F1).
      const shown =
        display && line[pwsh.start - 1] === '"'
          ? shownInPlace(
              line,
              { at: pwsh.start, read: pwshStepper(line, pwsh.end) },
              [pwsh.start, pwsh.end],
              (text) => named(text, pwsh.name),
              (text) => shownPwshPart(text, hide, (literal) => named(literal, pwsh.name)),
            )
          : undefined;
      out += shown ?? named(line.slice(pwsh.start, pwsh.end), pwsh.name);
      at = pwsh.end;
      return;
    }
    const password = passwords.get(index);
    const secret = password === undefined ? "" : word.value.slice(password.at);
    // Past the depth bound, the display keeps a substitution no word of which tells (r56 R56-2).
    const read = word.deep
      ? display && !deepTells(word.value)
        ? []
        : [{ start: 0, end: word.value.length, name: scriptName(), sign: SecretSign.Flag }]
      : password !== undefined &&
          (!word.dynamic || (mixedWord(word) && saysBesideRunTime(secret, word.at.slice(password.at)))) &&
          withoutReferences(secret).trim() !== "" &&
          (!word.quoted || proseCredential(secret))
        ? [{ start: password.at, end: word.value.length, name: password.name, sign: SecretSign.Flag }]
        : (jsonWordSpans(word, previous, hide, scriptName) ??
          wordSpans(word, previous, previous && sameLine(word, words[index - 2]), script));
    // The program's own assignment is preferred to a plain `NAME=value` reading of the same text
    // (`process.env.TOKEN='X'`: the value inside its quotes, named by the variable).
    // A program's expression that starts with no literal yields to a reading of the word that
    // hides it whole as written (`process.env.TOKEN=f('a b')`: the value of a `NAME=`).
    const spans = preferring(
      programSpans(word).filter(
        (span) =>
          !fromExpression.has(span) ||
          !read.some((other) => {
            const own = span.written ?? {
              start: word.at[span.start] as number,
              end: (word.at[span.end - 1] as number) + 1,
            };
            return (
              other.end > other.start &&
              (word.at[other.start] as number) <= own.start &&
              (word.at[other.end - 1] as number) + 1 >= own.end
            );
          }),
      ),
      read,
    );

    const { at: written } = word;
    const split = (span: Span) =>
      span.written === undefined &&
      span.end > span.start &&
      (written[span.end - 1] as number) - (written[span.start] as number) !== span.end - 1 - span.start;
    // Shown (never exported), a value read partly at run time keeps its run-time parts in sight,
    // its literal text hidden in place, stretch by stretch (r50 F1: a payload beside a credential).
    // One walk over the word for all its values (they stand in order).
    // A quoted command's own value (r50 F7) is read by the shell that runs it, from the value's start.
    const walk = { at: word.start, read: shellStepper(line) };
    // Where a value written apart is hidden: its text as written (see `writtenWhole`); when a quote
    // is open at one of its ends on a line that leaves no quote open, the word as written, quotes
    // and all (r51 F2: `$$'a\'X'x'`, `'…"a"+\'$(…)`); undefined when the line leaves one open.
    const wordWritten = { start: word.start, end: word.end };
    const regionOf = (span: Span) =>
      writtenWhole(line, word, span) ?? (openAtEnd(word.start) ? undefined : wordWritten);
    // A quoted string's data word's value is read so too (r56: `sh -c "srv --token abc\$X"`).
    if (display && ((word.dynamic && mixedWord(word)) || spans.some((span) => span.inner)))
      for (const span of spans) {
        if (
          span.end <= span.start ||
          span.written ||
          span.put !== undefined ||
          span.with !== undefined ||
          (word.data && split(span))
        )
          continue;
        const own = { start: written[span.start] as number, end: (written[span.end - 1] as number) + 1 };
        // Hidden with its whole word, a value is shown from its own first to last character, read
        // from the word's start (its quotes kept); else in its word, as it would be exported.
        const taken = split(span) && !span.inner && regionOf(span) === wordWritten;
        const region = split(span) && !taken ? (span.inner ? undefined : regionOf(span)) : own;
        const shown =
          region &&
          shownInPlace(
            line,
            span.inner
              ? { at: region.start, read: shellStepper(line) }
              : taken
                ? { at: word.start, read: shellStepper(line) }
                : walk,
            [region.start, region.end],
            (text) => named(text, span.name ?? ""),
            (text, quoted) =>
              shownShellPart(text, hide, (literal) => named(literal, span.name ?? ""), quoted),
          );
        if (shown === undefined || region === undefined) continue;
        span.written = region;
        span.shown = shown;
      }
    // Read partly at run time and written apart (`$X'hunter2'`): the text as written is hidden,
    // quotes and all (see `regionOf`); on a line that leaves a quote open the word is kept as
    // written (r50 F4: written again in '…', it would not fill back byte for byte).
    if (word.dynamic && !word.data)
      for (const span of spans)
        if (split(span) && span.put === undefined && span.with === undefined) {
          const whole = regionOf(span);
          if (whole) span.written = whole;
          else span.end = span.start;
        }
    // A value hidden with its whole word hides every other value in the word with it.
    const wordTaken = spans.find((span) => span.written === wordWritten);
    if (wordTaken)
      for (const span of spans)
        if (span !== wordTaken && (span.written ?? wordWritten).end <= word.end) span.end = span.start;
    // Written apart (a quote or an escape inside the secret), or to be replaced by text holding a
    // quote or a backslash (a JSON word's string): the whole word is written again.
    const apart = spans.some((span) => split(span) || (span.put !== undefined && /['"\\]/.test(span.put)));
    // A substitution's word written apart is hidden whole as written, so it fills back byte for byte
    // (written again in '…', it would not, and in a backtick's text its escapes would be lost).
    if (apart && word.nested && word.start >= at) {
      keep(word.start);
      sign ??= spans[0]?.sign;
      out += named(line.slice(word.start, word.end), spans[0]?.name ?? "");
      at = word.end;
      return;
    }
    for (const span of apart ? [] : spans) {
      // A word read again after an opener left open overlaps the word read first: a span before
      // what is already written is left to that word.
      if (span.end <= span.start || (written[span.start] as number) < at) continue;
      if (span.written) {
        keep(span.written.start);
        sign ??= span.sign;
        out += span.shown ?? named(line.slice(span.written.start, span.written.end), span.name ?? "");
        at = span.written.end;
        // A program's expression runs to the word's end and past it: nothing after it is read.
        if (span.end === word.value.length) break;
        continue;
      }
      const secret = word.value.slice(span.start, span.end);
      keep(written[span.start] as number);
      sign ??= span.sign;
      out +=
        span.put ??
        (span.with !== undefined
          ? safeString(span.with, span.sign, undefined, hide)
          : named(secret, span.name ?? ""));
      at = (written[span.end - 1] as number) + 1;
    }
    if (apart && word.start >= at) {
      let value = "";
      let from = 0;
      // A program's expression read as written (the last span: it runs to the word's end) is
      // written after the word's text before it.
      const expression = spans.at(-1)?.written;
      for (const span of expression ? spans.slice(0, -1) : spans) {
        value += word.value.slice(from, span.start);
        const secret = word.value.slice(span.start, span.end);
        // The word is written again inside '…' (a reference holds a `$`), where the text that
        // fills a reference back is the secret with each `'` written `'\''`: named by that text,
        // so one name is never given two fill texts (`it's9x` in args, `'it'\''s9x'` here).
        value +=
          span.put ??
          (span.with !== undefined
            ? safeString(span.with, span.sign, undefined, hide)
            : named(secret.replace(/'/g, "'\\''"), span.name ?? ""));
        from = span.end;
      }
      value += word.value.slice(from, expression ? spans.at(-1)?.start : undefined);
      keep(word.start);
      sign ??= spans[0]?.sign;
      out +=
        /^[^\s'"\\;|&<>()$`]*$/.test(value) && value !== "" ? value : `'${value.replace(/'/g, "'\\''")}'`;
      at = word.end;
      if (expression) {
        out += named(line.slice(expression.start, expression.end), spans.at(-1)?.name ?? "");
        at = expression.end;
      }
    }
  });
  keep(line.length);
  return sign === undefined ? undefined : { sign, safe: out };
}

/**
 * The indices of `words` (a line's, see `commandWords`) that hold a POSIX shell's own command
 * (`sh -c '…'`, `bash -lc "…"`; see `scriptPlaces`), read with the line's words as a shell reads them.
 */
function shellScriptWords(words: readonly CommandWord[]): Set<number> {
  const indices: number[] = [];
  const values: string[] = [];
  // Whether the last program named before each word is a POSIX shell.
  const shells: boolean[] = [];
  let shell = false;
  words.forEach((word, index) => {
    if (word.operator || word.data) return;
    indices.push(index);
    values.push(word.value);
    shells.push(shell);
    const name = programName(word.value);
    if (POSIX_SHELLS.has(name)) shell = true;
    else if (name === "ssh" || SCRIPT_PROGRAM.test(name)) shell = false;
  });
  const found = new Set<number>();
  for (const [k, place] of scriptPlaces(values))
    if (place.kind === "script" && place.at === 0 && shells[k]) found.add(indices[k] as number);
  return found;
}

/**
 * For the display only: a POSIX shell's own command holding a run-time part and written in one
 * `'…'` or `"…"` with no backslash (so its text as written is what that shell reads, the outer
 * shell's run-time parts aside), read as a command line of its own, as a top-level line is (a value read partly at run
 * time: its literal text hidden in place, its run-time parts shown), each word also read for what
 * a config line says (see `dataSpans`), and written back in its quotes. Undefined when it is written
 * otherwise, nothing in it is flagged, or past `SUBSTITUTION_DEPTH` (then read as the line's words are).
 */
function shownScript(line: string, word: CommandWord, hide: SecretHide | undefined): ArgFound | undefined {
  const written = line.slice(word.start, word.end);
  const quote = written[0] as string;
  const inner = written.slice(1, -1);
  // A backslash (in "…" it may change what the command's shell reads: `\"`, `\\`, `\$`; in '…' a
  // value it writes apart would be hidden whole, payload included), or no run-time part (no mixed
  // value): left to the words.
  if (
    !/[$`]/.test(inner) ||
    inner.includes(MARK) ||
    written.length < 2 ||
    (quote !== "'" && quote !== '"') ||
    written.at(-1) !== quote ||
    inner !== word.value ||
    inner.includes("\\")
  )
    return undefined;
  return deeper(
    () => {
      // Read first with a mark for each hidden text, so that what is shown is known to fill back
      // byte for byte (a word the reader writes again in '…' would not, inside these quotes): else
      // left to the words. Then read for what is shown.
      const hidden: string[] = [];
      const marked = commandLineSecrets(
        inner,
        (secret) => `${MARK}${hidden.push(secret) - 1}${MARK}`,
        undefined,
        true,
        true,
      );
      const marks = new RegExp(`${MARK}(\\d+)${MARK}`, "g");
      if (marked?.safe.replace(marks, (_, index: string) => hidden[Number(index)] as string) !== inner)
        return undefined;
      const found = commandLineSecrets(inner, hide, undefined, true, true);
      if (found === undefined) return undefined;
      return { sign: found.sign, safe: quote + found.safe + quote };
    },
    () => undefined,
  );
}

/** A character no pasted line holds (Unicode private use), marking a hidden text in `shownScript`. */
const MARK = "\uE001";

/** The command-line reader's rules for a name: its whole name tells (see `wholeNameTells`). */
const LINE_RULES: ArgRules = { ...ARG_RULES, telling: wholeNameTells };

/**
 * A word of a command line that is one line of JSON (`--config '{"apiKey":"X"}'`, Smithery's
 * snippet pasted as one `command`), read as an argument holding it is (see `jsonEdits`): a span
 * for each string to write again. Undefined when the word is no such JSON, or is all of a telling
 * flag's or name's value (`--token '{"a":"b"}'`, read whole by `ruleSpans`), or is a data word.
 */
function jsonWordSpans(
  word: CommandWord,
  previous: CommandWord | undefined,
  hide: SecretHide | undefined,
  scriptName: () => string,
): Span[] | undefined {
  const value = word.value;
  if (word.data || (value[0] !== "{" && value[0] !== "[" && !value.includes("="))) return undefined;
  const lead = JSON_ARG.exec(value);
  if (lead === null || LINE_BREAK.test(value)) return undefined;
  const flag = previous && !previous.operator && !previous.dynamic ? previous.value : undefined;
  if (tellingValue(value, flag, LINE_RULES)) return undefined;
  const found = jsonEdits(value.slice(lead[0].length), ARG_RULES, hide, scriptName);
  if (found === null) return undefined;
  const from = lead[0].length;
  return (found?.edits ?? []).map((edit) => ({
    start: from + edit.start,
    end: from + edit.end,
    name: undefined,
    sign: found?.sign ?? SecretSign.Flag,
    put: edit.safe,
  }));
}

/**
 * The words of a command line that give a client's password (see `clientPasswords`), by index:
 * each command (between operators) read apart, and each line of data words (see `CommandWord`) apart.
 */
function wordPasswords(words: readonly CommandWord[]): Map<number, ClientPassword> {
  const found = new Map<number, ClientPassword>();
  const line = clientPasswords();
  const data = clientPasswords();
  let group: number | undefined;
  words.forEach((word, index) => {
    if (word.operator) {
      line.reset();
      return;
    }
    if (word.data && word.group !== group) {
      data.reset();
      group = word.group;
    }
    const password = (word.data ? data : line).read(word.value);
    if (password !== undefined) found.set(index, password);
  });
  return found;
}

/**
 * Reads each argument (see `readArg`); one that holds a program's own command or program text
 * (see `scriptPlaces`, read with the words of `command` before the args) is kept or replaced whole
 * (see `shellScript`) — a base64 `-EncodedCommand` always replaced. ssh's remote command given as
 * several words is judged joined, as ssh sends it, and when it may hold a credential each word is
 * replaced whole by a reference of its own (the args keep their count).
 */
function scanArgs(
  at: string,
  args: readonly string[],
  found: (path: string, sign: SecretSign, index: number, safe: string) => void,
  hide?: SecretHide,
  scriptName: () => string = () => "SHELL_COMMAND",
  command?: string,
): void {
  const lead = command === undefined ? [] : commandWordValues(command);
  const words = [...lead, ...args];
  const places = scriptPlaces(words);
  // ssh's remote command given as words (`ssh db mysql -uroot -pX`): the run of its words that
  // ends the line, judged as the one command ssh sends.
  let remote = words.length;
  while (remote > 0 && places.get(remote - 1)?.kind === "remote") remote -= 1;
  const remoteSign =
    words.length - remote >= 2
      ? shellScript(words.slice(remote).join(" "), undefined, () => "")?.sign
      : undefined;
  // A client's password flag (`mysql -pX`, `sshpass -p X`), where the client is named in `command` or the args.
  const clients = clientPasswords();
  const passwords = words.map((word, index) => (places.has(index) ? undefined : clients.read(word)));
  const named = literalNamer(hide);
  args.forEach((arg, index) => {
    if (remoteSign !== undefined && lead.length + index >= remote) {
      // Each word replaced whole by its own reference: args keep their count, each filled back byte
      // for byte (an empty word, or one that is a reference already, is kept as it is).
      if (arg === "" || /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(arg)) return;
      const name = scriptName();
      found(child(at, index), remoteSign, index, hide ? hide(arg, name) : reference(name));
      return;
    }
    const place = places.get(lead.length + index);
    // A shell's command or program text is one whatever it holds, a word with no whitespace too
    // (`node -e "require('./s')({password:'X'})"`, `bash -c "PGPASSWORD=X;psql"`): read as an
    // argument it could be rewritten inside; so is ssh's remote command given as one word
    // (`ssh db "PGPASSWORD=X;psql"`). Tight to its flag (`--eval=CODE`), the flag is kept.
    const script = place === undefined ? "" : arg.slice(place.at);
    const inner =
      place?.kind === "encoded" && script !== "" && !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(script)
        ? shellScript(script, hide, scriptName, true)
        : (place?.kind === "script" && script !== "") ||
            (place?.kind === "remote" && (/\s/.test(arg) || (words.length - remote === 1 && arg !== "")))
          ? shellScript(script, hide, scriptName)
          : null;
    const password = passwords[lead.length + index];
    if (inner === null && password !== undefined) {
      const secret = arg.slice(password.at);
      if (isLiteral(secret))
        found(
          child(at, index),
          SecretSign.Flag,
          index,
          arg.slice(0, password.at) + named(secret, password.name),
        );
      return;
    }
    // The word after a client's password (`sshpass -pX ssh`) is read as no flag's value.
    const previous =
      index > 0 && passwords[lead.length + index - 1] === undefined ? args[index - 1] : undefined;
    const read =
      inner === null
        ? readArg(arg, previous, ARG_RULES, hide, scriptName)
        : inner && { sign: inner.sign, safe: arg.slice(0, place?.at ?? 0) + inner.safe };
    if (read) found(child(at, index), read.sign, index, read.safe);
  });
}

/**
 * A pasted command line holding a program's own command or program text (see `scriptPlaces`):
 * kept byte for byte, or replaced whole by one reference when it may hold a credential (see
 * `shellScript`; always with a base64 `-EncodedCommand`). Null when it holds no such command.
 */
function pastedScript(
  command: string,
  hide: SecretHide | undefined,
  scriptName: () => string,
): ArgFound | undefined | null {
  const words = commandWordValues(command);
  const places = scriptPlaces(words);
  if (places.size === 0) return null;
  const found = shellScript(
    command,
    hide,
    scriptName,
    [...places.values()].some((place) => place.kind === "encoded"),
  );
  if (found) return found;
  // Each script also read as its own text, as when given as an argument (r56: in the line, a quoted
  // script's words are split at its blanks, `sh -c 'srv --token ${X:+a}$(b c)d'`).
  for (const [index, place] of places) {
    const sign = shellScript((words[index] as string).slice(place.at), undefined, () => "")?.sign;
    if (sign === undefined) continue;
    const name = scriptName();
    return { sign, safe: hide ? hide(command, name) : reference(name) };
  }
  return undefined;
}

/** A command line's words as a shell reads them (quotes read), operators and words read again left out. */
function commandWordValues(line: string): string[] {
  if (!/\s/.test(line)) return [line];
  return commandWords(line)
    .filter((word) => !word.operator && !word.data)
    .map((word) => word.value);
}

/**
 * What a telling name's literal value is written as: a reference named after it (or what `hide`
 * returns) in place of the whole value, or of each literal default's word when those are all the
 * value says in clear (`--password ${DB_PASSWORD:-X}` → `${DB_PASSWORD:-${PASSWORD}}`; see `hideLiteral`).
 */
function literalNamer(hide: SecretHide | undefined): (secret: string, name: string) => string {
  return (secret, name) => hideLiteral(secret, (text) => (hide ? hide(text, name) : reference(name)));
}

/** An environment assignment: `NAME=value`. */
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_.-]*)=([\s\S]*)$/;
/**
 * A flag alone, before its value. A single-dash word with a digit in it is a short flag with its
 * value written tight (`-pmy-secret-42`), not a flag naming the next word (`mydb`).
 */
const FLAG_ALONE = /^(?:--|-(?![\w.-]*\d))([A-Za-z][\w.-]*)$/;
/** The flag before a shell's command: `sh -c`, `bash -lc`, `cmd /c`, `pwsh -Command`. */
const SHELL_COMMAND = /^(?:-[A-Za-z]*c|\/[cC]|-Command)$/;
/** curl's `-u user:password`, written tight: `-uadmin:X`. */
const TIGHT_USER = /^-u([^:\s]+):(\S+)$/;

/** sshpass's options that take a value (`-f file`, `-d n`, `-P prompt`, and `-p password`), tight or as the next word. */
const SSHPASS_VALUED = "fdpP";

/**
 * How a program that runs another reads its own words: its short options that take a value
 * (`sudo -u root`), its long options that do (every one but `flags` when `long` is true), how many
 * words it reads before the program it runs (`timeout 10`, `docker exec <container>`, ssh's
 * destination), whether that program comes only after `--` (`kubectl exec pod -- mysql`), and the
 * subcommands that make it one (`docker exec`, `pnpm dlx`).
 */
interface Runner {
  valued?: string;
  long?: boolean | readonly string[];
  flags?: readonly string[];
  operands?: number;
  afterDashes?: boolean;
  sub?: Readonly<Record<string, Runner>>;
}

const DOCKER_FLAGS = ["rm", "detach", "interactive", "tty", "privileged", "init", "read-only", "publish-all"];
/** Docker's and Podman's `exec <container>` and `run <image>`: every long option but a few takes a value. */
const DOCKER: Runner = {
  sub: {
    exec: { valued: "euw", long: true, flags: DOCKER_FLAGS, operands: 1 },
    run: { valued: "acehlmpuvw", long: true, flags: DOCKER_FLAGS, operands: 1 },
  },
};
/** Programs that run the program named after them (`sudo`, `env`, `exec`, `npx`, `docker exec <c>`, `ssh host`, …). */
const RUNNERS: Readonly<Record<string, Runner>> = {
  sudo: {
    valued: "ughpCDrtURT",
    long: ["user", "group", "host", "prompt", "chdir", "role", "type", "other-user"],
  },
  doas: { valued: "uC" },
  env: { valued: "uCS", long: ["unset", "chdir", "split-string"] },
  exec: { valued: "a" },
  command: {},
  nohup: {},
  time: {},
  nice: { valued: "n", long: ["adjustment"] },
  ionice: { valued: "cnp" },
  stdbuf: { valued: "ioe" },
  timeout: { valued: "ks", long: ["kill-after", "signal"], operands: 1 },
  npx: { valued: "pc", long: ["package", "call"] },
  pnpx: {},
  bunx: {},
  ssh: { valued: SSH_VALUED, operands: 1 },
  docker: DOCKER,
  podman: DOCKER,
  kubectl: {
    sub: { exec: { valued: "cn", long: true, flags: ["stdin", "tty", "quiet"], afterDashes: true } },
  },
  pnpm: { sub: { exec: {}, dlx: {} } },
  npm: { sub: { exec: { long: ["package", "call"] } } },
  yarn: { sub: { exec: {}, dlx: {} } },
  // Secret managers and env loaders (`op run -- mysql …`, `doppler run -- …`, `dotenv -e .env -- …`).
  op: { sub: { run: { long: true, afterDashes: true } } },
  doppler: { sub: { run: { long: true, afterDashes: true } } },
  dotenv: { valued: "ecv", afterDashes: true },
  "cross-env": {},
  uv: { sub: { run: { long: true, flags: ["frozen", "locked", "no-sync", "isolated", "no-project"] } } },
  uvx: {},
  xargs: { valued: "aEeIiLlnPsd" },
  watch: { valued: "n" },
  setsid: {},
  chroot: { operands: 1 },
  flock: { valued: "wEc", operands: 1 },
  strace: { valued: "eopsuE" },
  runuser: { valued: "ugl" },
};

/** Where a client's password is written in a word (`-pX`: from 2), and the name its reference takes. */
interface ClientPassword {
  at: number;
  name: string;
}

/**
 * Reads a command's words one at a time for a password given to a client that is the command's
 * program: its first word (past `NAME=value` assignments), the program a runner runs (`sudo`,
 * `env`, `exec`, `npx`, `docker exec <container>`, `ssh host`, … see `RUNNERS`; and sshpass's),
 * or the first word after a `;`, `|`, `&&`, `||` or `&` (a word that is one, or a word ending in
 * `;`, in a line read without its operators). A word that is a flag's value or an image
 * (`--name mysql`, `mysql:8`) names no client. Read: MySQL's and MariaDB's `-pX` (`PASSWORD_P`;
 * tight only, also clustered `-vpX`: `-p` alone prompts, and another program's `-p` is usually a
 * port), sshpass's `-pX` or `-p X` among its options (which end at its command's first word;
 * `-f file`, `-d n`, `-P prompt`, `-e` give none). `read` tells where a password starts in a
 * word's value, undefined when it holds none; `reset` starts a new command. One word, one step.
 */
function clientPasswords(): { read: (word: string) => ClientPassword | undefined; reset: () => void } {
  let client: "" | "mysql" | "sshpass" = "";
  // What sshpass's option before this word takes: its password, another value, or nothing.
  let takes: "" | "password" | "value" = "";
  // Whether the next word may be the command's program; the runner whose words come first.
  let program = true;
  let runner: Runner | undefined;
  let skip = false;
  let operands = 0;
  const reset = () => {
    client = "";
    takes = "";
    program = true;
    runner = undefined;
    skip = false;
  };
  // The program word, or a runner's: what it names decides what follows.
  const named = (word: string) => {
    program = false;
    runner = undefined;
    const name = programName(word);
    if (PASSWORD_P.test(name)) client = "mysql";
    else if (name === "sshpass") client = "sshpass";
    else if (Object.hasOwn(RUNNERS, name)) {
      runner = RUNNERS[name];
      operands = runner?.operands ?? 0;
    }
  };
  // A runner's word: one of its options (or their values), an operand, its subcommand, or the program it runs.
  const runnerWord = (word: string, from: Runner) => {
    if (skip) {
      skip = false;
      return;
    }
    if (word === "--") {
      runner = undefined;
      program = true;
      return;
    }
    if (/^-./.test(word)) {
      const long = /^--([^=]+)$/.exec(word)?.[1];
      if (long !== undefined)
        skip = Array.isArray(from.long)
          ? from.long.includes(long)
          : from.long === true && !from.flags?.includes(long);
      else if (!word.startsWith("--"))
        for (let i = 1; i < word.length; i += 1)
          if (from.valued?.includes(word[i] as string)) {
            skip = i === word.length - 1;
            break;
          }
      return;
    }
    if (from.sub !== undefined) {
      runner = Object.hasOwn(from.sub, word) ? from.sub[word] : undefined;
      operands = runner?.operands ?? 0;
      return;
    }
    if (from.afterDashes) return;
    if (operands > 0) {
      operands -= 1;
      return;
    }
    if (ASSIGNMENT.test(word)) return;
    named(word);
  };
  const step = (word: string): ClientPassword | undefined => {
    if (/^(?:;|&&?|\|\|?)$/.test(word)) {
      reset();
      return undefined;
    }
    if (takes !== "") {
      const password = takes === "password";
      takes = "";
      return password && word !== "" ? { at: 0, name: "sshpass_password" } : undefined;
    }
    if (client === "sshpass") {
      if (word === "--") {
        client = "";
        program = true;
        return undefined;
      }
      if (/^-./.test(word)) {
        for (let i = 1; i < word.length; i += 1) {
          const option = word[i] as string;
          if (!SSHPASS_VALUED.includes(option)) continue;
          if (i === word.length - 1) takes = option === "p" ? "password" : "value";
          else if (option === "p") return { at: i + 1, name: "sshpass_password" };
          return undefined;
        }
        return undefined;
      }
      // Its command's first word, the program it runs: sshpass's options end here.
      client = "";
      program = true;
    }
    if (client === "mysql") {
      const tight = MYSQL_TIGHT_P.exec(word);
      return tight ? { at: tight[0].length, name: "password" } : undefined;
    }
    if (runner !== undefined) runnerWord(word, runner);
    else if (program && !ASSIGNMENT.test(word)) named(word);
    return undefined;
  };
  const read = (word: string): ClientPassword | undefined => {
    const found = step(word);
    if (word.endsWith(";") && word.length > 1) reset();
    return found;
  };
  return { read, reset };
}

/**
 * One argument read with the rules for args, given the argument before it: a telling flag's value
 * (`--token X`, `--api-key=X`), an assignment (`-e GITHUB_TOKEN=X`, also after a flag:
 * `--env=GITHUB_TOKEN=X`), a connection string's telling pair (`Server=db;Password=X;`), a
 * header (`X-Api-Key: X`), curl's `-u user:X`, a URL's credentials and key shapes; with
 * `rules.words`, one line of JSON read by its keys (see `jsonArgSecrets`), a shell's own command holding whitespace kept or replaced whole by a reference
 * `scriptName` names (see `shellScript`), and any other argument holding whitespace read as a
 * command line, every character but a secret's value kept (see `commandLineSecrets`). Undefined
 * when nothing is flagged.
 */
function readArg(
  arg: string,
  previous: string | undefined,
  rules: ArgRules,
  hide: SecretHide | undefined,
  scriptName: () => string = () => "SHELL_COMMAND",
): ArgFound | undefined {
  const named = literalNamer(hide);
  const afterShell = previous !== undefined && SHELL_COMMAND.test(previous);
  // A shell's own command (`sh -c "exec srv --api-key X"`) is kept whole or replaced whole.
  if (rules.words && afterShell && /\s/.test(arg)) return shellScript(arg, hide, scriptName);
  // One line of JSON (`--config {"apiKey":"X"}`), alone or after `--flag=` or `NAME=`: read by its
  // keys, unless it is all a telling flag's or name's value (`--token '{"a":"b"}'`), taken whole below.
  const json =
    rules.words && !tellingValue(arg, previous, rules) ? jsonArgSecrets(arg, rules, hide, scriptName) : null;
  if (json) return json;
  // PowerShell's `$env:API_KEY=X` as one word: read as the command-line reader reads it, its quotes too.
  if (rules.words && pwshAssignment(arg)) return commandLineSecrets(arg, hide, scriptName);
  const tight = TIGHT_USER.exec(arg);
  if (tight && proseCredential(tight[2] ?? ""))
    return { sign: SecretSign.Flag, safe: `-u${tight[1]}:${named(tight[2] ?? "", "password")}` };
  const flag = FLAG.exec(arg);
  if (flag) {
    const [, name = "", inline] = flag;
    // A short flag with a key shape tight after its letter (`-pghp_…`): the key, whatever the program.
    if (inline === undefined) return looksLikeKey(arg) ? readValue(arg, hide) : undefined;
    const prefix = arg.slice(0, arg.length - inline.length);
    if (rules.telling(name) && rules.literal(inline))
      return { sign: SecretSign.Flag, safe: prefix + named(inline, name) };
    // `--env=GITHUB_TOKEN=X`, `--conn=Server=db;Password=X`: the value read as the assignment it holds.
    const inner = readAssignment(inline, rules, hide) ?? readValue(inline, hide);
    return inner && { sign: inner.sign, safe: prefix + inner.safe };
  }
  const before = previous === undefined ? null : FLAG_ALONE.exec(previous);
  if (before && rules.telling(before[1] ?? "") && rules.literal(arg))
    return { sign: SecretSign.Flag, safe: named(arg, before[1] ?? "") };
  // curl's `-u user:password`: the password, when it reads as one (docker's `-u 1000:1000` does not).
  const user = /^([^:\s]+):(\S+)$/.exec(arg);
  if (previous !== undefined && /^(?:-u|--user)$/.test(previous) && user && proseCredential(user[2] ?? ""))
    return { sign: SecretSign.Flag, safe: `${user[1]}:${named(user[2] ?? "", "password")}` };
  // A header given as an argument: "Authorization: Bearer …", "X-Api-Key: X".
  const header = /^([\w.-]+)(\s*:\s*)(\S[\s\S]*)$/.exec(arg);
  const isHeader = header !== null && !/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(arg);
  if (isHeader) {
    const [, field = "", colon = "", value = ""] = header;
    if (rules.telling(field)) {
      if (rules.header(value, field))
        return { sign: SecretSign.Flag, safe: `${field}${colon}${named(value, field)}` };
      const sign = stringSign(value, false);
      return sign && { sign, safe: `${field}${colon}${safeString(value, sign, undefined, hide)}` };
    }
  }
  // An argument holding whitespace (`host=db user=app password=X`), or a `;` after no `-c`
  // (`exec;TOKEN=X`, `Server=db;Password=X`), is read as a line (see `lineSecrets`: a script, a
  // connection string or a command line) and that reading is final, unless it is one telling
  // assignment whose value holds a space or a `;` and follows no `-c` (`-e "DB_PASS=two words"`),
  // which is taken whole below.
  if (rules.words && (/\s/.test(arg) || (!afterShell && arg.includes(";")))) {
    const assignment = ASSIGNMENT.exec(arg);
    const whole = assignment !== null && rules.telling(assignment[1] ?? "") && !afterShell;
    if (!whole) {
      return lineSecrets(arg, hide, scriptName, false);
    }
  }
  const assigned = readAssignment(arg, rules, hide);
  if (assigned || ASSIGNMENT.test(arg)) return assigned;
  if (isHeader && header) {
    const [, field = "", colon = "", value = ""] = header;
    if (urlSign(value)) {
      const sign = stringSign(value, false) as SecretSign;
      return { sign, safe: `${field}${colon}${safeString(value, sign, undefined, hide)}` };
    }
  }
  return readValue(arg, hide);
}

/**
 * True when all of `arg` is a literal value under a telling name: after a telling flag alone
 * (`--token X`), or after a telling `--name=` or `NAME=` written in it.
 */
function tellingValue(arg: string, previous: string | undefined, rules: ArgRules): boolean {
  const before = previous === undefined ? null : FLAG_ALONE.exec(previous);
  if (before && rules.telling(before[1] ?? "") && !arg.startsWith("-") && rules.literal(arg)) return true;
  const inline = /^(?:--?([A-Za-z][\w.-]*)|([A-Za-z_][A-Za-z0-9_.-]*))=([\s\S]*)$/.exec(arg);
  return inline !== null && rules.telling(inline[1] ?? inline[2] ?? "") && rules.literal(inline[3] ?? "");
}

/** An argument that is one JSON object or array, alone or as the value of a `--flag=` or `NAME=`. */
const JSON_ARG = /^(?:--?[A-Za-z][\w.-]*=|[A-Za-z_][A-Za-z0-9_.-]*=)?(?=\s*[{[])/;

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
 * command, see `pastedScript`), a URL's credentials, a key shape, a nested JSON. A replacement is
 * written JSON-escaped inside the string's quotes; a string written with escapes is replaced
 * whole, as its parts are not where they are read. A number under a key that tells (see
 * `numberTells`) becomes its reference written bare, `{"password":${PASSWORD}}`, which filled back
 * as text is the number again; such a bare `${NAME}` is read as a value. Null when `text` is no
 * such JSON; undefined when nothing is flagged. One pass over the text after one `JSON.parse`.
 */
function jsonEdits(
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
  const stack: JsonFrame[] = [];
  // The name a value about to be read is a credential under, given the container it is in.
  const tellingFor = (frame: JsonFrame | undefined): string | undefined => {
    if (frame === undefined) return undefined;
    if (frame.array) return frame.telling;
    const key = frame.key ?? "";
    // A key that is only a reference (`{"${SECRET}":"admin"}`, an export's own) tells nothing.
    if (rules.telling(key) && !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(key)) return key;
    return frame.telling === undefined ? undefined : `${frame.telling}_${key}`;
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
      const key = top && !top.array ? (top.key ?? "") : "";
      if (c !== "$" && numberTells(key, bare[0])) {
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
      const name = parent && !parent.array ? parent.key : undefined;
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
    const read =
      (/\s/.test(value) ? pastedScript(value, hide, scriptName) : null) ??
      readArg(value, undefined, rules, hide, scriptName);
    if (read) put(start, end, read, frame.key);
  }
  if (sign === undefined) return undefined;
  // An array's edits are made when it closes, after those of the strings inside it: in the order written.
  edits.sort((a, b) => a.start - b.start);
  return { sign, edits };
}

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
function numberTells(key: string, number: string): boolean {
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
 * reference read as a value) and, filled back, is the argument again. Null when
 * the argument is no such JSON (or holds a line break: a script, see `lineSecrets`); undefined
 * when nothing is flagged.
 */
function jsonArgSecrets(
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

/**
 * A value read alone: a URL's credentials, a key shape; else each literal default under a `NAME`
 * whose whole name tells (`${DB_PASSWORD:-X}`, as a shell's command reads it), its word replaced
 * by a reference named after `NAME`.
 */
function readValue(value: string, hide: SecretHide | undefined): ArgFound | undefined {
  const sign = stringSign(value, false);
  if (sign) return { sign, safe: safeString(value, sign, undefined, hide) };
  const telling = literalDefaults(value).filter(({ name }) => wholeNameTells(name));
  if (telling.length === 0) return undefined;
  let safe = "";
  let from = 0;
  for (const { start, end, name } of telling) {
    const secret = value.slice(start, end);
    safe += value.slice(from, start) + (hide ? hide(secret, name) : reference(name));
    from = end;
  }
  return { sign: SecretSign.Flag, safe: safe + value.slice(from) };
}

/**
 * An assignment (`NAME=value`) or a connection string of `key=value` pairs (`Server=db;…;Password=X;`,
 * JDBC's `jdbc:sqlserver://db;password=X`): a telling name's literal value as a reference; under
 * any other name, the value read alone. Undefined when `text` is neither, or nothing is flagged.
 */
function readAssignment(text: string, rules: ArgRules, hide: SecretHide | undefined): ArgFound | undefined {
  const named = literalNamer(hide);
  const assignment = ASSIGNMENT.exec(text);
  const [, variable = "", value = ""] = assignment ?? [];
  // A telling name's value is taken whole, a `;` in it (`DB_PASS=a;b`) included.
  if (assignment && rules.telling(variable) && rules.literal(value))
    return { sign: SecretSign.Flag, safe: `${variable}=${named(value, variable)}` };
  const pairs = connectionPairs(text, rules, named, hide);
  if (pairs) return pairs;
  if (!assignment) return undefined;
  const inner = readValue(value, hide);
  return inner && { sign: inner.sign, safe: `${variable}=${inner.safe}` };
}

/**
 * A connection string's key as ADO writes it, one word (`Password`, `sslmode`, `Trust_Cert`) or
 * several words of letters and digits (`User Id`, `Data Source`, `Trust Server Certificate`): no
 * flag, path, operator or `NAME_WITH_UNDERSCORES` after a first word (`exec GITHUB_TOKEN`,
 * `srv --conn Server` are a command's words).
 */
const CONNECTION_KEY = /^[A-Za-z][\w.-]*(?:[ \t]+[A-Za-z][A-Za-z0-9]*)*$/;

/**
 * True when `text` is one connection string and nothing else: at least two non-blank `;`-separated
 * parts (see `connectionParts`), each a `key=value` pair under a `CONNECTION_KEY` — the first may
 * be a URL instead (`jdbc:sqlserver://db:1433;password=X`). Its values may hold spaces
 * (`Password=two words`, `Driver={ODBC Driver 18}`); where `text` reaches a `shell` (a pasted
 * `command`), no command's words (see `commandAfter`), while an argument reaches no shell, so its
 * value runs to the `;` whatever it holds (`Password=correct horse -battery staple;`, r46 R1).
 * A line with a word that is no pair (`exec A=x a;b`, `… --conn Server=db;Password=X; && …`,
 * a pasted `A=x ; GITHUB_TOKEN=X --token Y`) is a command line instead, whose one word may be a
 * connection string (see `commandLineSecrets`).
 */
function connectionString(text: string, shell: boolean): boolean {
  if (!text.includes(";")) return false;
  const parts = connectionParts(text).filter((part) => part.trim() !== "");
  return (
    parts.length >= 2 &&
    parts.every((part, index) => {
      if (index === 0 && /^[A-Za-z][A-Za-z0-9+.:-]*:\/\/\S*$/.test(part.trim())) return true;
      const eq = part.indexOf("=");
      return (
        eq > 0 &&
        CONNECTION_KEY.test(part.slice(0, eq).trim()) &&
        !(shell && commandAfter(part.slice(eq + 1)))
      );
    })
  );
}

/** A word after whitespace that only a command writes: a flag, or a word holding a quote, an expansion, a pipe or a redirection. */
const COMMAND_WORD = /\s(?:-|[^\s'"`$|&<>]*['"`$|&<>])/;

/**
 * True when a pair's value goes on as a command's words would (`GITHUB_TOKEN=X --token Y`,
 * `A=x "quoted"`): then its part is no pair. Its first word, and a value opening with `{` or a
 * quote up to its close (`Driver={ODBC Driver 18}`), are the value's whatever they hold.
 */
function commandAfter(value: string): boolean {
  const bareValue = value.trimStart();
  const open = bareValue[0];
  const close = open === "{" ? "}" : open === '"' || open === "'" ? open : "";
  const after = close === "" ? bareValue : bareValue.slice(bareValue.indexOf(close, 1) + 1);
  return COMMAND_WORD.test(after);
}

/** A command the shell runs inside a word: `$(…)` (or `$((…))`) or a backtick. */
const RUNS_COMMAND = /\$\(|`/;

/** A shell's line join: a `\\` before a line break, both dropped where the shell reads them. */
const LINE_JOIN = /\\\n/g;

/** A line break: a text holding one (or a heredoc's `<<`, see `HEREDOC`) is a script, not one command line. */
const LINE_BREAK = /[\n\r]/;

/**
 * A text read where a command line may be written — an argument holding whitespace that follows no
 * shell flag, a pasted `command` — in one pass, whatever it holds:
 * - a script (a line break or a heredoc's `<<`: a heredoc's body, YAML/JSON/TOML lines) is kept
 *   byte for byte or replaced whole, as a shell's own command is (see `shellScript`): its lines
 *   are no command line's words, and what a body's language says is not read;
 * - one connection string (see `connectionString`: read as a `shell` reads it when the text is a
 *   pasted `command`) has its telling pairs' values, its URLs'
 *   credentials and its key shapes taken out, and what is left read as a command line too;
 * - anything else is a command line (see `commandLineSecrets`), a word of it perhaps a connection string.
 * So what it returns is a fixed point: read again, nothing in it is flagged. Undefined when
 * nothing is flagged.
 */
function lineSecrets(
  line: string,
  hide: SecretHide | undefined,
  scriptName: () => string,
  shell: boolean,
  display = false,
): ArgFound | undefined {
  if (LINE_BREAK.test(line) || HEREDOC.test(line)) return shellScript(line, hide, scriptName);
  const named = literalNamer(hide);
  // Shown (the display of a pasted line, which a shell reads), a telling pair's value that runs a
  // command (`TOKEN="x$(curl …|sh)"`) keeps that command in sight, as a command line's value
  // does (r57-1: read so only in the display; the export keeps the whole value).
  const shown =
    display && shell
      ? (from: number, to: number, name: string) =>
          shownInPlace(
            line,
            { at: from, read: shellStepper(line) },
            [from, to],
            (text) => named(text, name),
            (text, quoted) => shownShellPart(text, hide, (literal) => named(literal, name), quoted),
          )
      : undefined;
  const pairs = connectionString(line, shell)
    ? connectionPairs(line, ARG_RULES, named, hide, shown)
    : undefined;
  if (pairs === undefined) return commandLineSecrets(line, hide, scriptName, display);
  // What the pairs' reading leaves, read as a command line (a value holding `--token X`).
  const rest = commandLineSecrets(pairs.safe, hide, scriptName, display);
  return { sign: pairs.sign, safe: rest?.safe ?? pairs.safe };
}

/**
 * A pasted line read for display (see `withoutCommandLineSecrets`): one connection string as
 * `lineSecrets` reads a pasted `command` (a telling pair's whole value, a `;` inside braces or
 * spaces included: `Pwd={a;b X}`, `Password=X two;`), anything else as a command line; a script
 * is rewritten in place, never replaced whole.
 */
export function shownLineSecrets(line: string, hide: SecretHide | undefined): ArgFound | undefined {
  if (LINE_BREAK.test(line) || HEREDOC.test(line)) return commandLineSecrets(line, hide, undefined, true);
  return lineSecrets(line, hide, () => "SHELL_COMMAND", true, true);
}

/** A connection string's pair: `Password=X`, ` User Id = sa`. */
const PAIR_NAME = /^\s*[A-Za-z][\w .-]*$/;

/**
 * A connection string split at its `;`s, each part as written: a `;` inside a value that opens
 * with `{` (ODBC's `Pwd={a;b}`) or a quote (`Password="a;b"`) does not split it. One pass.
 */
function connectionParts(text: string): string[] {
  const parts: string[] = [];
  let from = 0;
  let close = "";
  // Whether the current part's `=` was seen, and whether its value has started (past its spaces).
  let assigned = false;
  let started = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    if (close !== "") {
      if (c === close) close = "";
    } else if (c === ";") {
      parts.push(text.slice(from, i));
      from = i + 1;
      assigned = false;
      started = false;
    } else if (!assigned) assigned = c === "=";
    else if (!started && !SPACE.test(c)) {
      started = true;
      if (c === "{" || c === '"' || c === "'") close = c === "{" ? "}" : c;
    }
  }
  parts.push(text.slice(from));
  return parts;
}

/**
 * A connection string (`;`-separated `key=value` pairs, the first may be a URL) with each telling
 * pair's literal value as a reference named after its key, each other part and value read alone
 * (a URL's credentials, a key shape: see `readValue`), the rest kept as written; undefined when
 * `text` is not one or nothing in it is flagged. One pass.
 */
function connectionPairs(
  text: string,
  rules: ArgRules,
  named: (secret: string, name: string) => string,
  hide: SecretHide | undefined,
  shown?: (start: number, end: number, name: string) => string | undefined,
): ArgFound | undefined {
  if (!text.includes(";")) return undefined;
  const parts = connectionParts(text);
  if (parts.length < 2) return undefined;
  let sign: SecretSign | undefined;
  // Any other part, or pair's value, read alone: a URL's credentials, a key shape (`App=ghp_…`).
  const alone = (text: string) => {
    const lead = /^\s*/.exec(text)?.[0] ?? "";
    const bareText = text.slice(lead.length).trimEnd();
    const read = bareText === "" ? undefined : readValue(bareText, hide);
    if (read === undefined) return text;
    sign ??= read.sign;
    return lead + read.safe + text.slice(lead.length + bareText.length);
  };
  // Where the part being read starts in `text` (parts are joined by one `;` each).
  let offset = 0;
  const out = parts.map((part) => {
    const start = offset;
    offset += part.length + 1;
    const eq = part.indexOf("=");
    if (eq < 0) return alone(part);
    const key = part.slice(0, eq);
    if (!PAIR_NAME.test(key)) return alone(part);
    const value = part.slice(eq + 1);
    const lead = /^\s*/.exec(value)?.[0] ?? "";
    const bareValue = value.slice(lead.length).trimEnd();
    const name = key.trim();
    if (!rules.telling(name) || !rules.literal(bareValue)) return `${key}=${alone(value)}`;
    sign ??= SecretSign.Flag;
    const from = start + eq + 1 + lead.length;
    const safe =
      (shown && RUNS_COMMAND.test(bareValue) ? shown(from, from + bareValue.length, name) : undefined) ??
      named(bareValue, name);
    return `${key}=${lead}${safe}${value.slice(lead.length + bareValue.length)}`;
  });
  const first = parts[0] ?? "";
  const opens =
    /^[A-Za-z][A-Za-z0-9+.:-]*:\/\//.test(first) ||
    (first.includes("=") && PAIR_NAME.test(first.split("=")[0] ?? ""));
  return sign !== undefined && opens ? { sign, safe: out.join(";") } : undefined;
}

/** Scans a JSON container; `name` is the field a list's entries inherit (an object's entries have their own). */
function scanFree(
  at: string,
  container: Record<string, unknown> | unknown[],
  name: string | undefined,
  visit: SecretVisit,
  hide?: SecretHide,
): void {
  const entries: [string | number, unknown][] = Array.isArray(container)
    ? container.map((item, index) => [index, item])
    : Object.entries(container);
  for (const [key, value] of entries) {
    const path = child(at, key);
    const field = typeof key === "string" ? key : name;
    if (typeof value === "string") {
      const sign = stringSign(value, field !== undefined && looksSecretName(field));
      if (sign)
        visit(
          { path, sign },
          (next) => ((container as Record<string | number, unknown>)[key] = next),
          safeString(value, sign, field, hide),
        );
    } else if (Array.isArray(value) || isPlainObject(value)) {
      scanFree(path, value, field, visit, hide);
    }
  }
}
