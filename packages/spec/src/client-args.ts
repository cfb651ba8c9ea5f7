// Part of spec's secret reader (see find-spec-secrets.ts): known clients' own flags and password forms (`mysql -pX`, `sshpass -p`, `redis-cli -a`, docker/npx runners' flags) that the command-line reader asks about a word.
import { MYSQL_TIGHT_P, PASSWORD_P, proseCredential } from "./prose-secrets.js";
import { programName } from "./script-places.js";
import { isLiteral } from "./secret-signs.js";

/** ssh's options that take a value (`-p 22`, `-i key`): the value is the next word unless written tight. */
export const SSH_VALUED = "BbcDEeFIiJLlmOoPpQRSWw";

/**
 * An environment assignment: `NAME=value`, or bash's append `NAME+=value` (group 2, the operator:
 * the value is the text after it all the same).
 */
export const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_.-]*)(\+?=)([\s\S]*)$/;
/**
 * A flag alone, before its value. A single-dash word with a digit in it is a short flag with its
 * value written tight (`-pmy-secret-42`), not a flag naming the next word (`mydb`).
 */
export const FLAG_ALONE = /^(?:--|-(?![\w.-]*\d))([A-Za-z][\w.-]*)$/;
/**
 * A Windows-style switch, as msbuild, robocopy, `net use` and sqlcmd take them: its name (group 1)
 * and, after `:`, its value (group 2): `/password:X`, `/p:Password=X` (msbuild's property, read as
 * the assignment it holds), `/Password` alone before its value. One `/` and a name of letters,
 * digits, `_`, `.` and `-` only, so a Unix path (`/etc/passwd`, `/usr/bin/password-helper`) is
 * never one. Linear: anchored, each part read by one quantifier.
 */
export const WIN_SWITCH = /^\/([A-Za-z][\w.-]*)(?::([\s\S]*))?$/;
/**
 * A dash flag written with its value after `:` as a Windows switch is (dotnet's `-p:Password=X`,
 * `--property:DbPassword=X`, `-property:…`): its name (group 1) and value (group 2), read as
 * {@link WIN_SWITCH}'s are — the value hidden where the name tells, else read as the assignment it
 * holds. Linear: anchored, each part read by one quantifier.
 */
export const DASH_SWITCH = /^--?([A-Za-z][\w.-]*):([\s\S]*)$/;
/** The flag before a shell's command: `sh -c`, `bash -lc`, `cmd /c`, `pwsh -Command`. */
export const SHELL_COMMAND = /^(?:-[A-Za-z]*c|\/[cC]|-Command)$/;
/**
 * curl's `-u user:password` value: the user, and the password, which may hold a blank where the
 * shell keeps one in the word (`-u "admin:pa ss"`, `-u admin:abc$(cmd x)`).
 */
export const USER_PASSWORD = /^([^:\s]+):(\S[\s\S]*)$/;
/** curl's `-u user:password` (or its proxy's `-U`), written tight: `-uadmin:X` (its password as in `USER_PASSWORD`). */
export const TIGHT_USER = /^-[uU]([^:\s]+):(\S[\s\S]*)$/;
/** curl's `--user=user:password` (or `--proxy-user=`), the value written tight after `=`. */
export const LONG_USER = /^--(?:proxy-)?user=([^:\s]+):(\S[\s\S]*)$/;
/** Samba's clients' `-U user%password` (smbclient, rpcclient, net), after `-U` or `--user`: the user, and the password. */
export const SAMBA_USER = /^([^%:\s]+)%(\S[\s\S]*)$/;
/** Samba's `-Uuser%password` and `--user=user%password`, written tight. */
export const TIGHT_SAMBA_USER = /^(?:-U|--user=)([^%:\s]+)%(\S[\s\S]*)$/;
/** curl's flags that take `user:password`, alone before the value: `-u`, `--user`, and its proxy's `-U`, `--proxy-user`. */
export const USER_FLAG = /^(?:-[uU]|--(?:proxy-)?user)$/;

/**
 * Whether the literal text after curl's `-u user:` is a password: one that reads as a credential
 * (`proseCredential`), or any holding a blank and a letter or a digit (`-u "admin:pa ss word"`: a
 * `uid:gid`, which `docker -u` takes, never holds a blank).
 */
export function userPassword(text: string): boolean {
  return proseCredential(text) || (/\s/.test(text) && /[A-Za-z0-9]/.test(text) && isLiteral(text));
}

/** The shell's words that come before a command, which is the word after them (`{ mysql -pX; }`, `if mysql …`, `then`, `do`, `!`). */
const BEFORE_COMMAND = /^(?:\{|!|if|then|else|elif|do|while|until)$/;

/** Redis's command-line clients, which take a password after `-a` (`redis-cli -a X`; Valkey's and KeyDB's alike). */
const REDIS_CLI = /^(?:redis|valkey|keydb)-cli$/;

/** MongoDB's shells, which take a password as the word after `-p` (`mongosh -u app -p X`). */
const MONGO_SHELL = /^mongo(?:sh)?$/;

/** SQL Server's command-line clients, which take a password as the word after `-P` or `/P` (`sqlcmd -U sa -P X`, `bcp … /P X`). */
const SQLCMD = /^(?:sqlcmd|bcp|osql)$/i;

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

/**
 * Where a client's password is written in a word (`-pX`: from 2; to `end` when the shell's operator
 * written in the word ends it, `-pX;echo` read again in a quoted command), and the name its reference takes.
 */
export interface ClientPassword {
  at: number;
  end?: number;
  name: string;
}

/**
 * Reads a command's words one at a time for a password given to a client that is the command's
 * program: its first word (past `NAME=value` assignments), the program a runner runs (`sudo`,
 * `env`, `exec`, `npx`, `docker exec <container>`, `ssh host`, … see `RUNNERS`; and sshpass's),
 * or the first word after a `;`, `|`, `&&`, `||` or `&` (a word that is one, or a word ending in
 * `;`, in a line read without its operators), past the shell's words before a command (`{`, `!`,
 * `if`, `then`, `do`, …). A word that is a flag's value or an image
 * (`--name mysql`, `mysql:8`) names no client. Read: MySQL's and MariaDB's `-pX` (`PASSWORD_P`;
 * tight only, also clustered `-vpX`: `-p` alone prompts, and another program's `-p` is usually a
 * port), sshpass's `-pX` or `-p X` among its options (which end at its command's first word;
 * `-f file`, `-d n`, `-P prompt`, `-e` give none), redis-cli's `-a X` (`REDIS_CLI`), mongo's and
 * mongosh's `-p X` (`MONGO_SHELL`; `-p` before a flag prompts), sqlcmd's, bcp's and osql's `-P X`
 * and `/P X` (`SQLCMD`), lftp's `-u user,X` (the text after
 * its first comma). `read` tells where a password starts in a
 * word's value, undefined when it holds none; `reset` starts a new command. One word, one step.
 */
export function clientPasswords(): { read: (word: string) => ClientPassword | undefined; reset: () => void } {
  let client: "" | "mysql" | "sshpass" | "redis" | "mongo" | "sqlcmd" | "lftp" = "";
  // What the client's option before this word takes: its password (named so), lftp's `user,password`,
  // another value, or nothing.
  let takes: "" | "value" | "lftp_user" | ClientPassword["name"] = "";
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
    else if (REDIS_CLI.test(name)) client = "redis";
    else if (MONGO_SHELL.test(name)) client = "mongo";
    else if (SQLCMD.test(name)) client = "sqlcmd";
    else if (name === "lftp") client = "lftp";
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
      const name = takes;
      takes = "";
      if (name === "lftp_user") {
        const comma = word.indexOf(",");
        return comma >= 0 && comma < word.length - 1 ? { at: comma + 1, name: "lftp_password" } : undefined;
      }
      // mongosh's `-p` before a flag (`-p --quiet`) prompts for the password.
      if (client === "mongo" && word.startsWith("-")) return undefined;
      return name !== "value" && word !== "" ? { at: 0, name } : undefined;
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
          if (i === word.length - 1) takes = option === "p" ? "sshpass_password" : "value";
          else if (option === "p") return { at: i + 1, name: "sshpass_password" };
          return undefined;
        }
        return undefined;
      }
      // Its command's first word, the program it runs: sshpass's options end here.
      client = "";
      program = true;
    }
    // redis-cli's `-a X`: the next word, wherever it stands in the command.
    if (client === "redis") {
      if (word === "-a") takes = "rediscli_auth";
      return undefined;
    }
    // mongosh's `-p X` and lftp's `-u user,X`: the next word, wherever it stands in the command.
    if (client === "mongo") {
      if (word === "-p") takes = "password";
      return undefined;
    }
    // sqlcmd's `-P X` and `/P X` (r101e: kept in clear on a pasted line and in args before).
    if (client === "sqlcmd") {
      if (word === "-P" || word === "/P") takes = "password";
      return undefined;
    }
    if (client === "lftp") {
      if (word === "-u") takes = "lftp_user";
      return undefined;
    }
    if (client === "mysql") {
      const tight = MYSQL_TIGHT_P.exec(word);
      return tight ? { at: tight[0].length, name: "password" } : undefined;
    }
    if (runner !== undefined) runnerWord(word, runner);
    else if (program && !ASSIGNMENT.test(word) && !BEFORE_COMMAND.test(word)) named(word);
    return undefined;
  };
  const read = (word: string): ClientPassword | undefined => {
    const found = step(word);
    if (word.endsWith(";") && word.length > 1) reset();
    return found;
  };
  return { read, reset };
}
