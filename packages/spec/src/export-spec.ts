import { asSpec } from "./as-spec.js";
import { redactInRounds, referenceNames, withoutServerCredentials } from "./find-spec-secrets.js";
import type { AgentSpec } from "./types.js";

/**
 * A copy of the spec safe to hand on: no credential `findSpecSecrets` can see is left in it (and
 * one it misses is kept: in prose, a letters-only or short password, a value holding spaces, one
 * after a name that does not tell; SPEC.md's "Secrets" lists what prose reading covers).
 *
 * Every bundled server's `env` and `headers` are removed (where the format puts a server's
 * credentials). Every other place `findSpecSecrets` points at is redacted in place: a URL loses
 * its `user:password@` and its key-like query parameters (`?api_key=…`), a flagged argument
 * (`--token X`, `--api-key=X`, `-e GITHUB_TOKEN=X`, `Authorization: Bearer X`) and a telling
 * `extraBody` field get a `${NAME}` reference for the host to fill, and a key-shaped value
 * (`sk-…`, `ghp_…`) anywhere in the spec becomes `${SECRET}` (in a prompt part's `text` or a
 * `description`, only the secret: `postgres://${SECRET}@db/app`,
 * `DATABASE_URL=postgres://${SECRET}@db/app`, `--api-key ${API_KEY}`, `"api_key": "${API_KEY}"`); a
 * key in an identifier (a prompt part's or hook's `id`, a server's `name` and the places naming
 * it) is replaced so too, the whole id when that would still repeat another, so ids stay
 * distinct; a `command` pasted as a whole command line has each flagged word redacted so. A
 * shell's own command (the argument after `sh -c`, `bash -lc`, `cmd /c`, `pwsh -Command`, …) is
 * never rewritten inside: kept byte for byte, or, when it may hold a credential (`findSpecSecrets`
 * reports it), replaced whole by one reference named after its server (`${GITHUB_COMMAND}`),
 * which the host fills with the script itself.
 * Each distinct credential (or script) gets one reference across the whole spec: the same value
 * written twice, in one server or two, under any name, is one reference (the first place's) for
 * the host to fill once; a different value whose name is taken gets the next free suffix, in the
 * order `findSpecSecrets` reports the places (`--password aaa` in one server and `--password bbb`
 * in another: `${PASSWORD}` and `${PASSWORD_2}`). A name is never one the spec already writes (the
 * author's own `${PASSWORD}` pushes a found password to `${PASSWORD_2}`; a literal default
 * `${DB_PASSWORD:-X}` becomes `${DB_PASSWORD:-${DB_PASSWORD_2}}`), another credential's or a
 * script's, nor a variable the environment always sets (`--pwd X`: `${PWD_SECRET}`).
 * `findSpecSecrets` lists, for each place, the references written there
 * (`SecretHint.references`), so a host can fill each from what the original spec says there.
 * Everything else is kept as written. The result is a valid document:
 * `parseSpec(exportSpec(spec), { bundle: true })` reads it back whole (every entry, no repeated
 * id), and `findSpecSecrets` on it is empty. Never changes its argument. Throws `AgentSpecError`
 * when `spec` is not a parsed spec.
 */
export function exportSpec(spec: AgentSpec): AgentSpec {
  const copy = withoutServerCredentials(asSpec(spec, "exportSpec"));
  // One namer for every round: a credential a later round finds keeps the name an earlier one gave.
  redactInRounds(copy, referenceNames(copy));
  return copy;
}
