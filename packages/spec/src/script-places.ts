// Part of spec's secret reader (see find-spec-secrets.ts): which argument of a command is a script (a shell's `-c`, a program's `-e`, ssh's remote command, PowerShell's `-Command`/`-EncodedCommand`) and whether a script tells of a credential.
import { SSH_VALUED } from "./client-args.js";
import { type ArgFound, commandLineSecrets, reference, refusedLineTells } from "./find-spec-secrets.js";
import { looksLikeKey, type SecretHide, SecretSign } from "./secret-signs.js";

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
export function scriptTells(script: string): boolean {
  const text = script
    .replace(SCRIPT_REFERENCE, "\uE000")
    .replace(GIVEN_BY_REFERENCE, "\uE000")
    .replace(PWD_COMMAND, "$1");
  return SCRIPT_TELLS.test(text) || holdsTellShape(text);
}

/** A heredoc's operator, `<<` or `<<-` (not the here-string `<<<`); an arithmetic shift `1<<2` too (fail safe). */
export const HEREDOC = /(?:^|[^<])<<(?!<)/;

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
export function shellScript(
  script: string,
  hide: SecretHide | undefined,
  scriptName: () => string,
  always = false,
): ArgFound | undefined {
  const sign =
    commandLineSecrets(script)?.sign ??
    (looksLikeKey(script)
      ? SecretSign.Value
      : always ||
          HEREDOC.test(script) ||
          scriptTells(script) ||
          runsEncodedPowerShell(script) ||
          refusedLineTells(script)
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
export function programName(word: string): string {
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
export const POSIX_SHELLS = new Set([
  "sh",
  "bash",
  "zsh",
  "dash",
  "ksh",
  "ash",
  "mksh",
  "yash",
  "fish",
  "busybox",
]);

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
export const SCRIPT_PROGRAM =
  /^(?:cmd|pwsh|powershell|node|bun|perl|ruby|deno|php|osascript|python[0-9.]*|pypy[0-9.]*)$/;

export function scriptPlaces(words: readonly string[]): Map<number, ScriptPlace> {
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
