import { shownLineSecrets } from "./find-spec-secrets.js";
import { givenHide, type SecretHide } from "./secret-signs.js";

/**
 * A command line as it may be SHOWN — for display, never for export: `line` read in place as a
 * shell reads a pasted command line, each value the command-line reader finds replaced where it is
 * written, and every other character kept as written (quotes, operators, comments, spacing, the
 * rest of the payload): the value after a flag whose whole name tells (`--token X`), a telling
 * `NAME=value`'s value (`export GITHUB_TOKEN=X`, PowerShell's `$env:API_KEY='X'`), a program's
 * assignment to its environment in its text (`process.env.TOKEN='X'`, `os.environ['API_KEY']='X'`,
 * `os.environ.setdefault('TOKEN', 'X')`, `os.putenv(…)`: the value inside its quotes, named by the
 * variable), curl's `-u user:X`, a header's value, a
 * connection string's telling pair's value, a telling pair's value in a word listing pairs set
 * apart by `&` or `,` (`curl -d "user=a&password=X"`, `mount -o ro,password=X`), a literal default's word (`${DB_PASSWORD:-X}`), a
 * URL's credentials and each key shape. By default a value becomes a `${NAME}` reference
 * (`${SECRET}` for a key shape; a URL's userinfo is dropped); with `hide`, what `hide(secret, name)`
 * returns. A value read at run time (`"$PW"`, `$(…)`, a backtick, `${NAME}`) is no secret and is
 * kept. Never replaced whole, a script neither; what the reader cannot see (what a heredoc body's
 * lines say in their own language) is left as written.
 *
 * The line is never replaced whole, even when it is a script (line breaks, heredocs), unlike
 * `withoutArgSecrets` and `exportSpec`, which replace a shell's own command that may hold a
 * credential by one `${SHELL_COMMAND}` reference so the exported command stays the same command:
 * rewritten in place, a script is shown, not kept runnable. So what this returns may still say a
 * credential the reader does not see, and is left as written: a heredoc body's lines are read as
 * command words, so what a body says in its own language (a YAML `password: X`, a JSON
 * `"password": "X"`, a program's own code) may not be found. A host that shows the result should say so; `findSpecSecrets` (and `withoutArgSecrets`,
 * asking `hide` for the whole command) tells whether a shell's command may hold one.
 *
 * Never throws; a non-string is returned as it is, and a `hide` that is no function is read as none.
 */
export function withoutCommandLineSecrets(line: string, hide?: SecretHide): string {
  if (typeof line !== "string") return line;
  return shownLineSecrets(line, givenHide(hide))?.safe ?? line;
}
