import { mayBacktrack, PATTERN_KEY_LIMIT } from "@loopwright/schema-compat";
import type { McpServerConfig } from "./config.js";
import type { McpToolOutput } from "./content.js";
import { ownDescriptor, protoless } from "./protoless.js";

const SHORTEST_SECRET = 4;
/**
 * The shortest value also looked for base64-encoded and, when it is hex, in either case: a shorter
 * one's encoded core is a handful of characters that ordinary text holds by chance.
 */
const SHORTEST_ENCODED = 8;

/**
 * The values in a server's config that may be credentials: every `env` and `headers` value, an
 * argument after (or assigned to) a flag named like a credential, the userinfo and query values of
 * its URL, and the password (and the query values under a credential's name) of a URL among its
 * env values and arguments. What is reported about a server (its stderr tail, an error from the SDK
 * that quotes a request) passes through a {@link masker} of these first.
 */
export function secretsOf(server: McpServerConfig): string[] {
  return longestFirst(gathered(server).values);
}

/**
 * The values of {@link secretsOf} that a tool's result is masked of: each of them but the ones
 * nobody takes for a credential — a number, a yes/no word, and, unless given under a telling name
 * (`PASSWORD`, `DB_PASS`, `--token`, `Authorization`), a filesystem path, a URL without userinfo or
 * query whose path reads as words, and words, numbers and short tokens (`production`, `acme-corp`,
 * `us-east-1`, `gpt-4o`, `en_US.UTF-8`, `Europe/Berlin`). A result is what the model works from, so an env
 * `LOG_LEVEL: "info"` must not turn every "info" in it into `***`; what a message about the
 * server quotes is masked of them all.
 */
export function resultSecretsOf(server: McpServerConfig): string[] {
  const { values, named } = gathered(server);
  return longestFirst(values.filter((value) => !ordinary(value, named.has(value))));
}

function longestFirst(values: readonly string[]): string[] {
  return [...new Set(values.filter((v) => v.length >= SHORTEST_SECRET))].sort((a, b) => b.length - a.length);
}

/** Every value that may be a credential, and those given under a telling name (by field, flag or parameter). */
function gathered(server: McpServerConfig): { values: string[]; named: Set<string> } {
  const values: string[] = [...(server.masked ?? [])];
  const named = new Set<string>();
  const add = (value: string, telling: boolean) => {
    values.push(value);
    if (telling) named.add(value);
  };
  if (server.type === "stdio") {
    for (const [name, value] of Object.entries(server.env ?? {})) {
      add(value, tellingName(name));
      urlSecrets(value, add);
    }
    for (const value of argumentSecrets(server.command, server.args)) add(value, true);
    for (const arg of server.args) urlSecrets(arg, add);
  } else {
    for (const [name, value] of Object.entries(server.headers ?? {})) {
      const telling = tellingName(name);
      add(value, telling);
      // A "Bearer abc" header leaks as "abc" too; the scheme word alone is no secret.
      for (const part of value.split(/\s+/)) if (!AUTH_SCHEMES.test(part)) add(part, telling);
    }
    urlSecrets(server.url, add, true);
  }
  return { values, named };
}

/**
 * The credentials a URL carries: its password, and its query values under a telling name. For the
 * server's own URL (`own`), its user name and every query value too, as a URL's place for them is
 * the server's. Nothing for a string that is not a URL.
 */
function urlSecrets(text: string, add: (value: string, telling: boolean) => void, own = false): void {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) return;
  try {
    const url = new URL(text);
    if (own && url.username) add(decodedPart(url.username), false);
    // A hosted server's URL may carry its key in the path (`/mcp/sk-ak-…/sse`, `/s/<token>/mcp`): a
    // segment that mixes letters and digits and reads as no words is masked where the URL is shown.
    if (own)
      for (const segment of url.pathname.split("/")) {
        const part = decodedPart(segment);
        if (pathSecret(part)) add(part, false);
      }
    if (url.password) add(decodedPart(url.password), true);
    for (const [name, value] of url.searchParams) {
      const telling = isCredentialParam(name);
      if (own || telling) add(value, telling);
    }
  } catch {
    // A bad server URL was refused when the config was read; a bad URL elsewhere holds nothing here.
  }
}

/**
 * A segment of a server's own URL path that may be its credential: 8 characters or more, letters and
 * digits both, and not made of words and short tokens as {@link ordinary} reads them (`v1`, `mcp`,
 * `2025-06-18` and `gpt-4o` are kept as written).
 */
function pathSecret(segment: string): boolean {
  return (
    segment.length >= SHORTEST_ENCODED &&
    /[A-Za-z]/.test(segment) &&
    /\d/.test(segment) &&
    !ordinary(segment, false)
  );
}

function decodedPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * A piece of an ordinary value: a word as people write one (all lower case, all capitals or
 * capitalised, not too long to be a word), a number, or a short token of lower-case letters and
 * digits (`4o`, `v1`, `x86`, `70b`).
 */
const PIECE = /^(?:[a-z]{1,20}|[A-Z][a-z]{0,19}|[A-Z]{1,20}|\d{1,8}|[a-z0-9]{1,4})$/;
/** A word of two letters or more: what an ordinary value made of pieces holds at least one of. */
const LETTERS = /^[A-Za-z]{2,}$/;

/**
 * True for a value nobody takes for a credential (see {@link resultSecretsOf}): a number or version
 * (`8080`, `1.2.3`), a yes/no word, and — unless given under a telling name — a filesystem path, a
 * URL without userinfo or query whose path is made of {@link PIECE}s (`https://api.example/v1`, not
 * a webhook's `/services/T000/B000/XXXX`), or pieces split at ` . _ - / :` with a word among them
 * (`production`, `us-east-1`, `gpt-4o`, `en_US.UTF-8`, `Europe/Berlin`).
 */
function ordinary(value: string, named: boolean): boolean {
  if (/^[+-]?\d{1,6}(?:\.\d+)*$/.test(value)) return true;
  if (/^(?:true|false|yes|no|on|off|null|none|enabled|disabled)$/i.test(value)) return true;
  // Under a telling name, a value shaped like a path or a plain word may still be the credential.
  if (named) return false;
  if (/^(?:~|\.{1,2})?(?:\/[\w.@-]+)+\/?$/.test(value) || /^[A-Za-z]:(?:\\[\w. @-]+)+\\?$/.test(value))
    return true;
  const url = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/@?#\s]*(\/[^@?#\s]*)?$/.exec(value);
  if (url) {
    // A path segment that is no word (a webhook's T000, a share link's id) may be the credential.
    const segments = (url[1] ?? "").split("/").filter((segment) => segment !== "");
    return segments.every((segment) => segment.split(/[._-]/).every((piece) => PIECE.test(piece)));
  }
  const pieces = value.split(/[ ._\-/:]/);
  return pieces.every((piece) => PIECE.test(piece)) && pieces.some((piece) => LETTERS.test(piece));
}

/** Where a name splits into words: at anything but a letter, and where a small letter meets a capital. */
const WORD_BREAK = /[^A-Za-z]+|(?<=[a-z])(?=[A-Z])/;

/**
 * A name a value is given under that says it is a credential — an env name, a header, a flag or an
 * assignment in `args`, a URL's query parameter: one with a {@link TELLING_NAME} part, or with
 * `pass`, `pw`, `cred` or `creds` as a word of its own (`DB_PASS`, `--pass`, `dbPass`, `--pw`, `DB_PW`,
 * `--creds`, `DB_CREDS`; not `bypass`, `passage`, `pwsh`, `--credits` or `CREDIT_LIMIT`). The rule of @loopwright/spec's `looksSecretName` (this package does
 * not depend on spec; `src/parity.test.ts` holds the two to one answer).
 */
function tellingName(name: string): boolean {
  return TELLING_NAME.test(name) || name.split(WORD_BREAK).some((word) => PASS_WORDS.has(word.toLowerCase()));
}

/**
 * Short words for a credential that tell only as a word of their own (see {@link tellingName}):
 * `--pass`, `DB_PW`, `--creds`, `DB_CREDS`; not `bypass`, `pwsh`, `--credits`.
 */
const PASS_WORDS = new Set(["pass", "pw", "cred", "creds"]);

/**
 * Authorization scheme words, which a header value starts with and a message may name: the same
 * words as @loopwright/client's redactor (`src/parity.test.ts` holds the two to them).
 */
const AUTH_SCHEMES = /^(?:bearer|basic|token|bot|apikey|api-key|key|digest|dpop|mac|hmac)$/i;

/**
 * A part of a name credentials are given under (`--api-key`, `--token`, `GH_TOKEN`, `PASSWORD`,
 * `GPG_PASSPHRASE`); not `--max-tokens`. Read by {@link tellingName}.
 */
const TELLING_NAME =
  /key|token(?!s)|secret|passw|passphrase|pwd|auth|credential|cookie|bearer|signature|private/i;

/**
 * Query parameter names that carry a credential besides the telling ones: the short names
 * @loopwright/client's `isCredentialParam` also knows (`?sig=`, `?code=`, `?pass=`), compared
 * without case, `-` and `_`.
 */
const CREDENTIAL_PARAM = /^(?:pass|sig|code|session|jwt)$/;

const isCredentialParam = (name: string) =>
  tellingName(name) || CREDENTIAL_PARAM.test(name.toLowerCase().replace(/[-_]/g, ""));

/**
 * The arguments that are credentials by where they stand, as a `.mcp.json` writes them literally:
 * the value of a flag named like one (`--api-key X`, `--token=X`), of a Windows-style switch named
 * like one (`/password:X`, `/Password X`), of an assignment named like one (docker's `-e
 * GITHUB_TOKEN=X`, also as a flag's or a switch's value: `--env=GITHUB_TOKEN=X`, msbuild's
 * `/p:Password=X`, dotnet's `-p:Password=X`), of a header named like one (`-H "X-Api-Key: X"`,
 * `--header=X-Api-Key: X`; each word of it but a scheme word too), and the password a known
 * client takes by a flag of its own ({@link CLIENTS}: `sqlcmd -P X`, `mysql -pX`, `redis-cli -a X`,
 * …, also run by another program: `docker exec db sqlcmd -P X`; `ssh -P 22` is a port). A telling
 * flag's value may start with `-` (`--token -VJJ`) unless it is a flag of its own. The rules of
 * @loopwright/spec's reader of a server's args (`src/parity.test.ts` holds the two to one answer).
 */
function argumentSecrets(command: string, args: readonly string[]): string[] {
  const out: string[] = [];
  const client = clientReader(command);
  args.forEach((arg, i) => {
    const next = args[i + 1];
    const password = client(arg, next);
    if (password) out.push(password);
    const inline = FLAG_VALUE.exec(arg) ?? SWITCH_VALUE.exec(arg);
    if (inline) out.push(...inlineSecrets(inline[1] as string, inline[2] as string));
    else out.push(...headerSecrets(arg));
    const alone = FLAG_ALONE.exec(arg) ?? SWITCH_ALONE.exec(arg);
    // After a telling flag, a word starting with `-` is its value unless it is a flag of its own
    // (`--token -VJJ`, as spec's OWN_FLAG reads it; `--token --verbose` names none).
    if (alone && tellingName(alone[1] as string) && next && !OWN_FLAG.test(next)) out.push(next);
  });
  return out;
}

/**
 * A flag of its own after a telling flag, not its value: a long flag of small letters and digits in
 * words joined by `-` (`--verbose`, `--log-level=debug`), a lone short flag (`-v`), `--` or `-`.
 * Any other word starting with `-` (`-VJJ`, `-sk-abc`) is the value: spec's `OWN_FLAG`.
 */
const OWN_FLAG = /^(?:--(?:[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?:=[\s\S]*)?)?|-[A-Za-z]?)$/;

/**
 * The clients whose password a command line gives by a flag of their own, as spec's
 * `clientPasswords` reads them: SQL Server's `sqlcmd`/`bcp`/`osql` (`-P X`, `/P X`), MySQL's and
 * MariaDB's (`-pX`, tight only, also after options that take no value: `-vNpX`; `-p` alone
 * prompts), Redis's `redis-cli` and its kin (`-a X`), MongoDB's shells (`-p X`; `-p` before a flag
 * prompts), `sshpass` (`-p X` or `-pX` among its options, which end at the program it runs) and
 * `lftp` (`-u user,X`).
 */
const CLIENTS: readonly [RegExp, string][] = [
  [/^(?:sqlcmd|bcp|osql)$/, "sqlcmd"],
  [
    /^(?:mysql(?:dump|admin|import|show|check|sh|binlog|pump|slap|_upgrade)?|mariadb(?:-(?:admin|binlog|check|dump|import|show|slap|upgrade))?)$/,
    "mysql",
  ],
  [/^(?:redis|valkey|keydb)-cli$/, "redis"],
  [/^mongo(?:sh)?$/, "mongo"],
  [/^sshpass$/, "sshpass"],
  [/^lftp$/, "lftp"],
];
/** MySQL's `-pX`, also after its options that take no value in one cluster: where the password starts (spec's `MYSQL_TIGHT_P`). */
const MYSQL_TIGHT_P = /^-[BCEHNVXfinqrstvw]*p(?=[\s\S])/;
/** sshpass's options that take a value (`-f file`, `-d n`, `-P prompt`, `-p password`). */
const SSHPASS_VALUED = "fdpP";

/**
 * A reader of a command line's arguments, one word at a time with the word after it, that gives
 * the password a known client ({@link CLIENTS}) takes there. The client is the command's program,
 * or the last argument naming one (`docker exec db mysql -pX`, `npx sqlcmd -P X`).
 */
function clientReader(command: string): (arg: string, next: string | undefined) => string | undefined {
  const clientOf = (word: string) => CLIENTS.find(([name]) => name.test(programName(word)))?.[1];
  let client = clientOf(command);
  /** A word that is sshpass's option's value, not the program it runs. */
  let skip = false;
  return (arg, next) => {
    const named = clientOf(arg);
    if (named) {
      client = named;
      return undefined;
    }
    switch (client) {
      case "sqlcmd":
        return (arg === "-P" || arg === "/P") && next ? next : undefined;
      case "mysql": {
        const tight = MYSQL_TIGHT_P.exec(arg);
        return tight ? arg.slice(tight[0].length) : undefined;
      }
      case "redis":
        return arg === "-a" && next ? next : undefined;
      case "mongo":
        return arg === "-p" && next && !next.startsWith("-") ? next : undefined;
      case "lftp": {
        const comma = arg === "-u" && next ? next.indexOf(",") : -1;
        return comma >= 0 && comma < (next as string).length - 1
          ? (next as string).slice(comma + 1)
          : undefined;
      }
      case "sshpass": {
        if (skip) {
          skip = false;
          return undefined;
        }
        if (!/^-./.test(arg) || arg === "--") {
          // The program sshpass runs: its options end here, and that program's own `-p` is a port.
          client = undefined;
          return undefined;
        }
        const at = [...arg.slice(1)].findIndex((option) => SSHPASS_VALUED.includes(option)) + 1;
        if (at === 0) return undefined;
        if (at < arg.length - 1) return arg[at] === "p" ? arg.slice(at + 1) : undefined;
        skip = true;
        return arg[at] === "p" && next ? next : undefined;
      }
      default:
        return undefined;
    }
  };
}

/** A flag or a bare name with its value after `=`: `--token=X`, `--env=NAME=X`, `GITHUB_TOKEN=X`. */
const FLAG_VALUE = /^(-{0,2}[A-Za-z][\w.-]*)=([\s\S]+)$/;
/**
 * A Windows-style switch with its value after `:` (`/password:X`, msbuild's `/p:Password=X`), or a
 * flag written so (dotnet's `-p:Password=X`, `--property:Password=X`). A switch is one `/` and a
 * name of letters, digits, `_`, `.` and `-`, so a Unix path (`/etc/passwd`,
 * `/usr/bin/password-helper`) never is one: spec's `WIN_SWITCH`.
 */
const SWITCH_VALUE = /^(?:\/|--?)([A-Za-z][\w.-]*):([\s\S]+)$/;
/** A flag alone, before its value: `--token`, `-k`. */
const FLAG_ALONE = /^--?([A-Za-z][\w.-]*)$/;
/** A Windows-style switch alone, before its value: `/Password` (one `/`, see {@link SWITCH_VALUE}). */
const SWITCH_ALONE = /^\/([A-Za-z][\w.-]*)$/;
/** A header written as one word (`X-Api-Key: X`, `Authorization: Bearer X`): its name and its value. */
const HEADER_WORD = /^([\w.-]+)\s*:\s*(\S[\s\S]*)$/;
/** A URL's start: its scheme and `://` (`https://h/p` is no header named `https`). */
const URL_START = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** A program's name as a command line gives it: its path and `.exe` left out, in small letters (spec's `programName`). */
const programName = (word: string) => (word.split(/[\\/]/).pop() ?? "").toLowerCase().replace(/\.exe$/, "");

/**
 * The credentials in the value `value` a flag, switch or name is given in one word: all of it when
 * the name tells, else the values of the assignments it holds whose names tell (`--env=GITHUB_TOKEN=X`,
 * `/p:Password=X`, see {@link assignedSecrets}), or of the header it holds (`--header=X-Api-Key: X`).
 */
function inlineSecrets(name: string, value: string): string[] {
  if (tellingName(name)) return [value];
  const assigned = assignedSecrets(value);
  return assigned.length > 0 ? assigned : headerSecrets(value);
}

/**
 * The values of the telling assignments in `text`, read as `;`-separated `key=value` pairs (msbuild's
 * `/p:Configuration=Release;DbPassword=X`, a connection string's `Server=db;Password=X;`): each
 * value to the next `;`, and on to the next telling pair as well (a password may hold a `;`); the
 * first one's also to the end of `text`. Linear in `text`: the stretches handed back together are
 * at most twice as long as it, where each value read to the end made them quadratic in the number
 * of telling pairs (2,000 of them in a 60 kB `/p:` argument made 61 MB of secrets, and a masker of
 * them ran a regular expression 12 million times).
 */
function assignedSecrets(text: string): string[] {
  /** Where each telling pair's value starts and where the part holding it ends. */
  const pairs: [number, number][] = [];
  let at = 0;
  for (const part of text.split(";")) {
    const pair = /^\s*([A-Za-z_][\w .-]*)=([\s\S]+)$/.exec(part);
    if (pair && tellingName((pair[1] as string).trim())) {
      pairs.push([at + part.length - (pair[2] as string).length, at + part.length]);
    }
    at += part.length + 1;
  }
  const out: string[] = [];
  pairs.forEach(([start, end], i) => {
    const value = text.slice(start, end);
    // On to the `;` before the next telling pair's name, or to the end of `text`.
    const next = pairs[i + 1];
    const upTo = next ? text.lastIndexOf(";", next[0]) : text.length;
    const stretch = trimmedSemicolons(text, start, upTo);
    out.push(value, ...(stretch === value ? [] : [stretch]));
    if (i === 0 && next) {
      const rest = trimmedSemicolons(text, start, text.length);
      if (rest !== stretch) out.push(rest);
    }
  });
  return out;
}

/** `text` from `start` to `end`, with the `;`s it ends in left off. */
function trimmedSemicolons(text: string, start: number, end: number): string {
  let stop = end;
  while (stop > start && text.charCodeAt(stop - 1) === 0x3b) stop--;
  return text.slice(start, stop);
}

/** A header's value when its name tells (`X-Api-Key: X`), with each of its words but a scheme word (`Bearer`). */
function headerSecrets(text: string): string[] {
  const header = HEADER_WORD.exec(text);
  if (!header || URL_START.test(text) || !tellingName(header[1] as string)) return [];
  const value = header[2] as string;
  return [value, ...value.split(/\s+/).filter((part) => part !== "" && !AUTH_SCHEMES.test(part))];
}

/** Text with every secret replaced by `***`. */
export type Mask = (text: string) => string;

/** The mask of a server with no secret: text as it is. {@link maskOutput} and {@link maskTool} walk nothing for it. */
export const unmasked: Mask = (text) => text;

/** JSON's one-character escapes, as they decode. */
const JSON_ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};
const HEX4 = /^[0-9a-fA-F]{4}$/;
const HEX2 = /^[0-9a-fA-F]{2}$/;
const isBreak = (c: string) => c === "\n" || c === "\r";

/**
 * `text` as the characters it stands for: with `json`, JSON escapes (`\/`, `\"`, `\u002f`) decoded;
 * with `percent`, percent-encoded ASCII (`%2F`, `%2f`); line breaks (written or escaped) always
 * left out, so a value wrapped over two lines reads whole. `from[i]`/`to[i]` are where the i-th
 * character was written.
 */
/** A reading of a text: its characters, and where the i-th of them was written (`from(i)` to `to(i)`). */
interface Reading {
  chars: string;
  from(i: number): number;
  to(i: number): number;
}

function decoded(text: string, json: boolean, percent: boolean): Reading {
  // The characters kept as written go in as runs, one slice each: a string of its own per character
  // (then joined) made a 4 MB text with both `%` and `\` take about 4 s to mask.
  const parts: string[] = [];
  const from = new Int32Array(text.length);
  const to = new Int32Array(text.length);
  let n = 0;
  /** Where the run of characters kept as written, not yet in `parts`, starts. */
  let run = 0;
  /** The characters at [start, end) stand for `char` (or for nothing, a line break). */
  const put = (char: string, start: number, end: number) => {
    if (start > run) parts.push(text.slice(run, start));
    run = end;
    if (isBreak(char)) return;
    parts.push(char);
    from[n] = start;
    to[n] = end;
    n++;
  };
  for (let i = 0; i < text.length; ) {
    const code = text.charCodeAt(i);
    if (json && code === 0x5c && i + 1 < text.length) {
      const next = text[i + 1] as string;
      if (next === "u") {
        const hex = text.slice(i + 2, i + 6);
        if (HEX4.test(hex)) {
          put(String.fromCharCode(Number.parseInt(hex, 16)), i, i + 6);
          i += 6;
          continue;
        }
      }
      const escaped = JSON_ESCAPES[next];
      if (escaped !== undefined) {
        put(escaped, i, i + 2);
        i += 2;
        continue;
      }
    }
    if (percent && code === 0x25 && HEX2.test(text.slice(i + 1, i + 3))) {
      const byte = Number.parseInt(text.slice(i + 1, i + 3), 16);
      if (byte < 0x80) {
        put(String.fromCharCode(byte), i, i + 3);
        i += 3;
        continue;
      }
    }
    if (code === 10 || code === 13) {
      put(text[i] as string, i, i + 1);
    } else {
      from[n] = i;
      to[n] = i + 1;
      n++;
    }
    i++;
  }
  if (text.length > run) parts.push(text.slice(run));
  return { chars: parts.join(""), from: (i) => from[i] as number, to: (i) => to[i] as number };
}

/**
 * `text` with only its line breaks left out, and where each of its characters was written: the
 * common reading (a stderr tail, a message), made without a per-character table.
 */
function unbroken(text: string): Reading {
  // One pass: looking for the next "\n" and the next "\r" apart from each break searched to the end
  // of the text for the one it has none of (most text has no "\r"), once per line: quadratic in a
  // result of many short lines (1 MB of 10-character lines took 1.4 s, 4 MB of 2-character ones 100 s).
  const breaks: number[] = [];
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === 10 || code === 13) breaks.push(at);
  }
  if (breaks.length === 0) return { chars: text, from: (i) => i, to: (i) => i + 1 };
  // The i-th kept character sits after every break j written before it, that is with breaks[j] - j <= i.
  const written = (i: number) => {
    let low = 0;
    let high = breaks.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((breaks[mid] as number) - mid <= i) low = mid + 1;
      else high = mid;
    }
    return i + low;
  };
  return { chars: text.replace(/[\r\n]/g, ""), from: written, to: (i) => written(i) + 1 };
}

/** ASCII letters lowered, nothing else touched (so positions stay where they were). */
const lowered = (text: string) => text.replace(/[A-Z]+/g, (run) => run.toLowerCase());

/**
 * The base64 of `secret` wherever it stands in an encoded text: for each of the three byte
 * alignments, the characters that depend on the secret's bytes alone (the ones at the edges also
 * carry the neighbours' bits), standard and URL-safe.
 */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret, "utf8");
  const cores = new Set<string>();
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
    const core = encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + bytes.length) * 8) / 6));
    cores.add(core);
    cores.add(core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return [...cores];
}

/** Each place `needle` stands in `haystack`, as [start, end) pairs appended to `out`. */
function find(haystack: string, needle: string, out: number[]): void {
  if (!needle) return;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) {
    out.push(at, at + needle.length);
  }
}

/**
 * A function that replaces each of `secrets` with `***`, in the forms a server writes a credential
 * back in: as it is; percent-encoded (hex in any mix of cases, `+` for a space); escaped by any JSON
 * writer (`\/`, `\u002f`, …); base64-encoded at any alignment, standard or URL-safe (a `Basic`
 * header, a token blob; values of 8 characters or more); a hex key in either case; and any of those
 * wrapped over line breaks (a logger's width, base64's 76 columns). Where two found places overlap,
 * the whole stretch becomes one `***`. Linear in the text: the text is read with its line breaks
 * left out, and again with JSON escapes and/or percent-encoding decoded when it has any (at most
 * four readings, so a `%` or `\` the value itself holds is read as written too), each searched for
 * every form; a percent-encoded form is looked for with ASCII letters lowered on both sides (so
 * the value's own letters match in either case there: a little more masked, never less).
 */
export function masker(secrets: readonly string[]): Mask {
  const usable = [...new Set(secrets.filter((s) => typeof s === "string" && s.length >= SHORTEST_SECRET))];
  if (usable.length === 0) return unmasked;
  /** Looked for in each reading, line breaks left out of them as out of the text. */
  const forms = new Set<string>();
  /**
   * Looked for in each reading with ASCII letters lowered: hex keys, and the percent-encoded forms
   * (a writer may mix the cases of its hex, `%2f%2F`; and a stray `%0` before `a%2f…` makes the
   * decoded reading take `%0a` for a line break, so only the form as written meets it).
   */
  const anyCase = new Set<string>();
  for (const secret of usable) {
    // Percent-encoded as the writers do it, each also found as written: the percent-decoded
    // reading alone misses one preceded by a stray `%` and a hex digit (`%0` then `a%28…` reads
    // as a line break then `%28…`). A lone surrogate is written as the U+FFFD a URL writer (and
    // `URLSearchParams`) puts in its place: `encodeURIComponent` throws on one.
    const component = encodeURIComponent(secret.toWellFormed());
    const percentForms = [
      component,
      // RFC 3986 strict (`!'()*` too), and form encoding (everything but `*-._`, a space as `+`).
      component.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
      new URLSearchParams({ v: secret }).toString().slice(2),
    ];
    for (const form of [secret, secret.replace(/ /g, "+"), JSON.stringify(secret).slice(1, -1)])
      forms.add(form.replace(/[\r\n]/g, ""));
    for (const form of percentForms) {
      if (form.includes("%")) anyCase.add(lowered(form.replace(/[\r\n]/g, "")));
      else forms.add(form);
    }
    if (secret.length < SHORTEST_ENCODED) continue;
    // A hex key (a digest, a UUID-shaped token) is the same key in capitals.
    if (/^[0-9a-f-]+$/i.test(secret) && /[a-f]/i.test(secret)) anyCase.add(lowered(secret));
    for (const core of base64Cores(secret)) forms.add(core);
  }
  return (text) => {
    const found: number[] = [];
    const json = text.includes("\\");
    const percent = text.includes("%");
    const readings: [boolean, boolean][] = [[false, false]];
    if (json) readings.push([true, false]);
    if (percent) readings.push([false, true]);
    if (json && percent) readings.push([true, true]);
    const places: number[] = [];
    for (const [decodeJson, decodePercent] of readings) {
      const { chars, from, to } =
        decodeJson || decodePercent ? decoded(text, decodeJson, decodePercent) : unbroken(text);
      for (const form of forms) find(chars, form, places);
      if (anyCase.size > 0) {
        const low = lowered(chars);
        for (const form of anyCase) find(low, form, places);
      }
      for (let i = 0; i < places.length; i += 2) {
        found.push(from(places[i] as number), to((places[i + 1] as number) - 1));
      }
      places.length = 0;
    }
    if (found.length === 0) return text;
    const ranges: [number, number][] = [];
    for (let i = 0; i < found.length; i += 2) ranges.push([found[i] as number, found[i + 1] as number]);
    ranges.sort((a, b) => a[0] - b[0]);
    let out = "";
    let at = 0;
    let open: [number, number] | undefined;
    for (const range of ranges) {
      if (open && range[0] < open[1]) {
        open[1] = Math.max(open[1], range[1]);
        continue;
      }
      if (open) {
        out += `${text.slice(at, open[0])}***`;
        at = open[1];
      }
      open = [range[0], range[1]];
    }
    if (open) {
      out += `${text.slice(at, open[0])}***`;
      at = open[1];
    }
    return out + text.slice(at);
  };
}

/**
 * An error as it may be kept as a `cause`: the same error when no secret is in its message, stack,
 * string properties (and lists of strings, such as `spawnargs`) or causes, else a copy (same prototype, so `instanceof` still holds) with each
 * secret replaced by `***`. A string is masked; any other value (an SDK error's data, a plain
 * object) is kept as it is when its JSON holds no secret, else replaced by that JSON masked.
 */
export function redactError(error: unknown, mask: Mask, depth = 0): unknown {
  if (typeof error === "string") return mask(error);
  if (!(error instanceof Error)) {
    if (typeof error !== "object" || error === null) return error;
    let text: string | undefined;
    try {
      text = JSON.stringify(error);
    } catch {
      return "[a value that could not be read]";
    }
    if (text === undefined) return error;
    const masked = mask(text);
    return masked === text ? error : masked;
  }
  let changed = false;
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error;
  for (const key of Reflect.ownKeys(error)) {
    const descriptor = ownDescriptor(error, key) as PropertyDescriptor;
    let value: unknown = descriptor.value;
    if (typeof value === "string") value = mask(value);
    else if (key === "cause" && depth < 4) value = redactError(value, mask, depth + 1);
    else if (Array.isArray(value) && value.some((v) => typeof v === "string")) {
      // A spawn failure's `spawnargs`: the server's arguments, where a credential may be.
      const list: unknown[] = value;
      const masked = list.map((v) => (typeof v === "string" ? mask(v) : v));
      if (masked.some((v, i) => v !== list[i])) value = masked;
    }
    if (value !== descriptor.value) changed = true;
    Object.defineProperty(
      copy,
      key,
      "value" in descriptor ? protoless({ ...descriptor, value }) : descriptor,
    );
  }
  return changed ? copy : error;
}

/** How deep {@link maskOutput} and {@link maskTool} walk a value; what lies deeper is left out. */
export const MAX_STRUCTURED_DEPTH = 256;

/** What stands in for a part nested deeper than {@link MAX_STRUCTURED_DEPTH} levels, as the model reads it. */
export const TOO_DEEP = `[left out: nested more than ${MAX_STRUCTURED_DEPTH} levels deep]`;

/** An object or array being copied: its entries, how far through them, and what they became. */
interface Frame {
  source: object;
  entries: [string, unknown][];
  at: number;
  out: [string, unknown][];
  changed: boolean;
  depth: number;
  /** The key this value stands under in its parent, masked. */
  key: string;
}

/**
 * `root` with every string and key masked and each object or array nested
 * {@link MAX_STRUCTURED_DEPTH} levels down replaced by {@link TOO_DEEP}. Walked with a list, not
 * by recursion, so no depth exhausts the stack; an unchanged part is the same object.
 */
function maskValue(root: unknown, mask: Mask): unknown {
  if (typeof root === "string") return mask(root);
  if (typeof root !== "object" || root === null) return root;
  // The common case, nothing to mask, found with one pass of the masker: a secret in one string is
  // found where that string stands between two NULs (no escape or encoding reads across one).
  const { texts, deeper } = textsOf(root);
  if (!deeper) {
    const joined = texts.join("\u0000");
    if (mask(joined) === joined) return root;
  }
  const open = (source: object, depth: number, key: string): Frame => ({
    source,
    entries: Object.entries(source),
    at: 0,
    out: [],
    changed: false,
    depth,
    key,
  });
  const stack: Frame[] = [open(root, 0, "")];
  for (;;) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.at < frame.entries.length) {
      const [written, item] = frame.entries[frame.at++] as [string, unknown];
      // An array's indexes are no text; an object's keys are masked as its strings are.
      const key = Array.isArray(frame.source) ? written : mask(written);
      if (key !== written) frame.changed = true;
      if (typeof item === "object" && item !== null) {
        if (frame.depth + 1 < MAX_STRUCTURED_DEPTH) {
          stack.push(open(item, frame.depth + 1, key));
          continue;
        }
        frame.out.push([key, TOO_DEEP]);
        frame.changed = true;
        continue;
      }
      const value = typeof item === "string" ? mask(item) : item;
      frame.out.push([key, value]);
      if (value !== item) frame.changed = true;
      continue;
    }
    stack.pop();
    const built = frame.changed ? rebuilt(frame) : frame.source;
    const parent = stack[stack.length - 1];
    if (!parent) return built;
    parent.out.push([frame.key, built]);
    if (built !== frame.source) parent.changed = true;
  }
}

/** Every string and object key in `root` down to the depth walked, and whether any part lies deeper. */
function textsOf(root: object): { texts: string[]; deeper: boolean } {
  const texts: string[] = [];
  let deeper = false;
  const stack: [object, number][] = [[root, 0]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [value, depth] = next;
    const keyed = !Array.isArray(value);
    for (const [key, item] of Object.entries(value)) {
      if (keyed) texts.push(key);
      if (typeof item === "string") texts.push(item);
      else if (typeof item === "object" && item !== null) {
        if (depth + 1 < MAX_STRUCTURED_DEPTH) stack.push([item, depth + 1]);
        else deeper = true;
      }
    }
  }
  return { texts, deeper };
}

/** A new object or array of what a frame's entries became. */
function rebuilt(frame: Frame): unknown {
  return Array.isArray(frame.source) ? frame.out.map(([, value]) => value) : Object.fromEntries(frame.out);
}

/**
 * A tool as a server listed it, with `mask`'s secrets replaced by `***` in everything a model is
 * shown of it (description, title, input schema, annotations) and each part nested deeper than
 * {@link MAX_STRUCTURED_DEPTH} levels replaced by {@link TOO_DEEP}; its `name` is kept, as calls go
 * to the server by it. Its `inputSchema` goes through `schemaMask` instead where one is given. The
 * same tool when the server has no secret to mask or nothing changed.
 *
 * A property name of the input schema that holds a secret is shown masked (`***`, then `_2`, `_3`,
 * … where another property name anywhere in the schema is spelled so), and `required` with it; the
 * masked tool remembers the server's own names ({@link serverNamesOf}), which a call's arguments
 * are given back by ({@link toServerNames}): the server takes its arguments by its own names.
 */
export function maskTool<T extends { name: string }>(tool: T, mask: Mask, schemaMask: Mask = mask): T {
  if (mask === unmasked && schemaMask === unmasked) return tool;
  const { name, ...rest } = tool;
  let names: Map<string, string> | undefined;
  if (schemaMask !== unmasked && Object.hasOwn(rest, "inputSchema")) {
    const renamed = maskedNames((rest as Record<string, unknown>).inputSchema, schemaMask);
    if (renamed) {
      names = renamed.names;
      (rest as Record<string, unknown>).inputSchema = renamed.schema;
    }
  }
  const remember = (masked: T): T => {
    if (names) SERVER_NAMES.set(masked, names);
    return masked;
  };
  if (schemaMask === mask || !Object.hasOwn(rest, "inputSchema")) {
    const masked = maskValue(rest, mask);
    return masked === rest && !names ? tool : remember({ ...(masked as object), name } as T);
  }
  const { inputSchema, ...others } = rest as Record<string, unknown>;
  const masked = maskValue(others, mask);
  const schema = schemaMask === unmasked ? inputSchema : maskValue(inputSchema, schemaMask);
  if (masked === others && schema === inputSchema && !names) return tool;
  return remember({ ...(masked as object), inputSchema: schema, name } as unknown as T);
}

/** The server's own property names of a masked tool's input schema, by the names shown. */
const SERVER_NAMES = new WeakMap<object, ReadonlyMap<string, string>>();

/**
 * The property names {@link maskTool} masked in a tool's input schema, each shown name with the
 * server's own; undefined when it masked none.
 */
export function serverNamesOf(tool: object): ReadonlyMap<string, string> | undefined {
  return SERVER_NAMES.get(tool);
}

/**
 * A call's arguments with each key that is a masked property name ({@link serverNamesOf}) written
 * back as the server's own, where `schema` (the input schema as shown, its names masked) declares
 * it: a key of `properties` at the place of the arguments it describes, read through
 * `properties`, `patternProperties`, `additionalProperties`, `items`/`prefixItems` (tuples by
 * position), local `$ref`s and the branches of `allOf`/`anyOf`/`oneOf`. A key the schema leaves
 * free (a free-form object, a map's key) is the model's own text and kept, `***` too; so is one
 * whose object also holds the server's name. New objects where something changed; the same
 * arguments otherwise.
 */
export function toServerNames<T>(
  args: T,
  names: ReadonlyMap<string, string> | undefined,
  schema: unknown,
): T {
  if (!names || names.size === 0) return args;
  const walk = (value: unknown, places: readonly object[], depth: number): unknown => {
    if (typeof value !== "object" || value === null || depth > MAX_STRUCTURED_DEPTH) return value;
    if (places.length === 0) return value;
    if (Array.isArray(value)) {
      let changed = false;
      const out = value.map((item, index) => {
        const walked = walk(item, expanded(itemSchemas(places, index), schema), depth + 1);
        if (walked !== item) changed = true;
        return walked;
      });
      return changed ? out : value;
    }
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const own = names.get(key);
      const declared = own !== undefined && places.some((place) => declares(place, key));
      const name = declared && !Object.hasOwn(value, own) ? own : key;
      const walked = walk(item, expanded(propertySchemas(places, key), schema), depth + 1);
      if (name !== key || walked !== item) changed = true;
      Object.defineProperty(
        out,
        name,
        protoless({
          value: walked,
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
    }
    return changed ? out : value;
  };
  return walk(args, expanded([schema], schema), 0) as T;
}

/** True when `place`'s `properties` holds `key`. */
function declares(place: object, key: string): boolean {
  const properties = (place as Record<string, unknown>).properties;
  return isPlainObject(properties) && Object.hasOwn(properties, key);
}

/** The schemas of the value under `key` of an object each of `places` describes. */
function propertySchemas(places: readonly object[], key: string): unknown[] {
  const out: unknown[] = [];
  for (const place of places) {
    const source = place as Record<string, unknown>;
    if (declares(place, key)) {
      out.push((source.properties as Record<string, unknown>)[key]);
      continue;
    }
    let matched = false;
    let untested = false;
    if (isPlainObject(source.patternProperties)) {
      for (const [pattern, sub] of Object.entries(source.patternProperties)) {
        // The pattern is the server's and the key the model's: one that may backtrack exponentially
        // (`^(a+)+$`), or a key past PATTERN_KEY_LIMIT, is never run — the key is read under that
        // entry and under additionalProperties both (as schema-compat's mapAlongSchema does).
        if (key.length > PATTERN_KEY_LIMIT || mayBacktrack(pattern)) {
          out.push(sub);
          untested = true;
          continue;
        }
        let found = false;
        try {
          found = new RegExp(pattern, "u").test(key);
        } catch {
          // A pattern JavaScript cannot read describes no key here.
        }
        if (found) {
          out.push(sub);
          matched = true;
        }
      }
    }
    if (!matched || untested) out.push(source.additionalProperties);
  }
  return out;
}

/** The schemas of the item at `index` of an array each of `places` describes. */
function itemSchemas(places: readonly object[], index: number): unknown[] {
  const out: unknown[] = [];
  for (const place of places) {
    const source = place as Record<string, unknown>;
    const prefix = Array.isArray(source.prefixItems) ? source.prefixItems : undefined;
    if (prefix && index < prefix.length) out.push(prefix[index]);
    else if (Array.isArray(source.items))
      out.push(index < source.items.length ? source.items[index] : source.additionalItems);
    else out.push(source.items);
  }
  return out;
}

/**
 * Each object of `schemas` with what it stands for read in: a local `$ref` (a JSON pointer into
 * `root`) followed, the branches of `allOf`, `anyOf` and `oneOf` added. Each node once.
 */
function expanded(schemas: readonly unknown[], root: unknown): object[] {
  const out: object[] = [];
  const seen = new Set<object>();
  const pending = [...schemas];
  while (pending.length > 0 && seen.size < 10_000) {
    const node = pending.pop();
    if (!isPlainObject(node) || seen.has(node)) continue;
    seen.add(node);
    out.push(node);
    if (typeof node.$ref === "string") pending.push(pointed(root, node.$ref));
    for (const key of ["allOf", "anyOf", "oneOf"])
      if (Array.isArray(node[key])) pending.push(...(node[key] as unknown[]));
  }
  return out;
}

/** The node of `root` a local `$ref` (`#`, `#/a/b`, with `~0`, `~1` and percent escapes) names. */
function pointed(root: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  let node = root;
  let path: string;
  try {
    path = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (path === "") return root;
  if (!path.startsWith("/")) return undefined;
  for (const part of path.slice(1).split("/")) {
    const step = part.replaceAll("~1", "/").replaceAll("~0", "~");
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, step)) return undefined;
    node = (node as Record<string, unknown>)[step];
  }
  return node;
}

/**
 * An input schema with each property name (a key of a `properties` object, at any depth) that
 * `mask` changes written masked, made unlike every other property name in the schema (`_2`, `_3`,
 * …), and the `required` beside it following; and the names so written, with the server's own.
 * Undefined when `mask` changes no property name. Everything else is left for `maskValue`.
 */
function maskedNames(
  schema: unknown,
  mask: Mask,
): { schema: unknown; names: Map<string, string> } | undefined {
  const all = new Set<string>();
  const collect = (node: unknown, depth: number): void => {
    if (typeof node !== "object" || node === null || depth > MAX_STRUCTURED_DEPTH) return;
    const properties = Array.isArray(node) ? undefined : (node as Record<string, unknown>).properties;
    if (isPlainObject(properties)) for (const key of Object.keys(properties)) all.add(key);
    for (const item of Object.values(node)) collect(item, depth + 1);
  };
  collect(schema, 0);
  const masked = [...all].filter((key) => mask(key) !== key);
  if (masked.length === 0) return undefined;
  const taken = new Set([...all].filter((key) => mask(key) === key));
  const shown = new Map<string, string>();
  const names = new Map<string, string>();
  for (const key of masked) {
    const base = mask(key);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    shown.set(key, name);
    names.set(name, key);
  }
  const rename = (node: unknown, depth: number): unknown => {
    if (typeof node !== "object" || node === null || depth > MAX_STRUCTURED_DEPTH) return node;
    if (Array.isArray(node)) return node.map((item) => rename(item, depth + 1));
    const out: Record<string, unknown> = {};
    const source = node as Record<string, unknown>;
    const local = isPlainObject(source.properties);
    for (const [key, value] of Object.entries(source)) {
      let item = rename(value, depth + 1);
      if (key === "properties" && local) {
        const props: Record<string, unknown> = {};
        for (const [name, sub] of Object.entries(item as Record<string, unknown>))
          Object.defineProperty(
            props,
            shown.get(name) ?? name,
            protoless({
              value: sub,
              enumerable: true,
              writable: true,
              configurable: true,
            }),
          );
        item = props;
      } else if (key === "required" && local && Array.isArray(item)) {
        item = item.map((name) => (typeof name === "string" ? (shown.get(name) ?? name) : name));
      }
      Object.defineProperty(
        out,
        key,
        protoless({ value: item, enumerable: true, writable: true, configurable: true }),
      );
    }
    return out;
  };
  return { schema: rename(schema, 0), names };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A tool's output as the model may read it: `text`, each text part and every string (keys included)
 * of `structured` with `mask`'s secrets replaced by `***`, and each part of `structured` nested
 * deeper than {@link MAX_STRUCTURED_DEPTH} levels replaced by {@link TOO_DEEP}. Images are kept as
 * sent (their bytes are a picture, not text a model reads back). The same output when the server
 * has no secret to mask (nothing is walked then) or nothing changed; never changes `output`.
 */
export function maskOutput<T extends McpToolOutput>(output: T, mask: Mask): T {
  if (mask === unmasked) return output;
  const text = mask(output.text);
  let changed = text !== output.text;
  const parts = output.parts.map((part) => {
    if (part.type !== "text") return part;
    const masked = mask(part.text);
    if (masked === part.text) return part;
    changed = true;
    return { ...part, text: masked };
  });
  let structured = output.structured;
  if (structured) {
    const masked = maskValue(structured, mask) as Record<string, unknown>;
    if (masked !== structured) {
      structured = masked;
      changed = true;
    }
  }
  return changed ? { ...output, text, parts, ...(structured ? { structured } : {}) } : output;
}

/**
 * A tool's output with each lone surrogate (half a surrogate pair, as in a text cut inside an emoji)
 * in its text, text parts and structured content written U+FFFD: llama.cpp refuses a request that
 * holds one. The same output when it has none (structured content looked through down to
 * {@link MAX_STRUCTURED_DEPTH} levels, without being copied); one that has is copied as
 * {@link maskOutput} copies (so what lies deeper is left out there too).
 */
export function wellFormedOutput<T extends McpToolOutput>(output: T): T {
  const lone = (text: string) => !text.isWellFormed();
  if (
    !lone(output.text) &&
    !output.parts.some((part) => part.type === "text" && lone(part.text)) &&
    !(output.structured && textsOf(output.structured).texts.some(lone))
  )
    return output;
  return maskOutput(output, (text) => text.toWellFormed());
}

/** A URL as it may be shown: origin and path, without userinfo, query or fragment. */
export function showUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "(a URL)";
  }
}

/** How a server is named in a message: its name and what it runs or where it is, never its env or headers. */
export function describeServer(server: McpServerConfig): string {
  return server.type === "stdio"
    ? `MCP server "${server.name}" (${server.command})`
    : `MCP server "${server.name}" (${showUrl(server.url)})`;
}
