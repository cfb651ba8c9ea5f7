// The guesses findSpecSecrets makes about a string: each a cheap test, wrong in both directions
// by design (a flag called --keyboard is named; a bare positional token is missed).

/** Why a place may hold a credential. */
export const SecretSign = {
  /** A URL with `user:password@` (or a bare token as the user) before its host. */
  Userinfo: "userinfo",
  /** A URL query parameter with a telling name, such as `?token=`, `?api_key=`, Azure's `?code=` or `?sig=`. */
  Query: "query",
  /**
   * A command-line argument with a telling name: a flag such as `--api-key X` or `--token=X`, a
   * header such as `Authorization: Bearer X`, or an assignment such as docker's `-e GITHUB_TOKEN=X`.
   */
  Flag: "flag",
  /** A value shaped like a known kind of key (`sk-…`, `gsk_…`, `ghp_…`, `tvly-…`, `Bearer …`, a JWT). */
  Value: "value",
  /** A field with a telling name, such as `env.GITHUB_TOKEN` or `headers.Authorization`. */
  Field: "field",
  /**
   * A shell's own command (the argument after `sh -c`, `bash -lc`, `cmd /c`, `pwsh -Command`), or
   * another argument or a pasted `command` that is a script (a line break or a heredoc's `<<` in
   * it), that may hold a credential though none was read apart: it holds a heredoc, or a word or fragment with
   * a telling name (`pass`, `token`, `key`, `auth`, `netrc`, `session`, …). Exported whole, as one reference.
   */
  Script: "script",
} as const;

/** One of the `SecretSign` values. */
export type SecretSign = (typeof SecretSign)[keyof typeof SecretSign];

// `token(?!s)`: max_tokens is a ceiling, not a credential.
const TELLING_NAME =
  /key|token(?!s)|secret|passw|passphrase|pwd|auth|credential|cookie|bearer|signature|private/i;

/** Where a name splits into words: at anything but a letter, and where a small letter meets a capital. */
const WORD_BREAK = /[^A-Za-z]+|(?<=[a-z])(?=[A-Z])/;

/**
 * Short words for a credential that tell only as a word of their own: `pass` (`DB_PASS`, not
 * `passive`, `compass`), `pw` (`DB_PW`, `--pw`, `{"pw":…}`, not `pwsh` or the `PWD` that holds the
 * working directory, which `pwd` in `TELLING_NAME` reads already) and `cred`/`creds` (`--creds`,
 * `DB_CREDS`, `awsCreds`, not `--credits`, `incredible`, `CREDIT_LIMIT` or a `sacred` run together).
 */
const PASS_WORDS = new Set(["pass", "pw", "cred", "creds"]);

/** Variables a client reads its password from, named with `pass` joined to the client's name (`sshpass -e` reads `SSHPASS`). */
const CLIENT_PASS_VARIABLES = new Set(["sshpass", "smbpass"]);

/**
 * True for a field, flag, variable or parameter name that credentials are usually given under
 * (`apiKey`, `--token`, `GITHUB_TOKEN`, `password`, `passphrase`, `Authorization`, `cookie`), and
 * for one with `pass`, `pw`, `cred` or `creds` as a word of its own (`DB_PASS`, `--pass`, `db-pass`, `dbPass`, `PASS_WORD`, `DB_PW`, `--pw`,
 * `--creds`, `DB_CREDS`, `credsFile`; words split at anything but a letter and at a small letter before a capital, so not `passive`,
 * `compass`, `BYPASS_CACHE`, `--credits` or `CREDIT_LIMIT`) or a client's own password variable (`SSHPASS`, `SMBPASS`); false
 * for `maxTokens` and anything that is not a string. The same
 * test `findSpecSecrets` makes (`SecretSign.Field`, `Flag`, `Query`): a guess both ways
 * (`--keyboard` and `--pass-through` are named). Never throws.
 */
export function looksSecretName(name: string): boolean {
  return (
    typeof name === "string" &&
    (TELLING_NAME.test(name) ||
      name
        .split(WORD_BREAK)
        .some((word) => PASS_WORDS.has(word.toLowerCase()) || CLIENT_PASS_VARIABLES.has(word.toLowerCase())))
  );
}

/** Words that name a credential on their own, in prose: `token`, `secret`, `password`, `auth`, `apikey`, … */
const PROSE_SECRET_WORDS = new Set([
  "token",
  "secret",
  "password",
  "passwd",
  "passphrase",
  "pwd",
  "pw",
  "pass",
  "auth",
  "authorization",
  "credential",
  "credentials",
  "creds",
  "cookie",
  "bearer",
  "signature",
  "apikey",
  "accesskey",
  "secretkey",
  "privatekey",
  "authtoken",
  "accesstoken",
  "apitoken",
  "refreshtoken",
  "clientsecret",
]);

/** A word that ends in a credential's name, written joined as variables often are: `PGPASSWORD`, `GITHUBTOKEN`, `MYSECRET`. */
const JOINED_SECRET = /(?:password|passwd|passphrase|secret|token|apikey)$/;

/** Words before `key` that make it a database's, a map's or a keyboard's key rather than a credential: `primary_key`, `sort_key`. */
const ORDINARY_KEYS = new Set([
  "primary",
  "foreign",
  "sort",
  "partition",
  "cluster",
  "clustering",
  "composite",
  "unique",
  "surrogate",
  "natural",
  "candidate",
  "compound",
  "range",
  "hash",
  "row",
  "shard",
  "routing",
  "cache",
  "map",
  "dict",
  "lookup",
  "index",
  "group",
  "order",
  "join",
  "object",
  "public",
  "idempotency",
  "dedup",
  "dedupe",
  "shortcut",
  "hot",
  "hotkey",
  "keyboard",
]);

/**
 * Last words that make a name a setting about a credential rather than the credential: its type,
 * name, encoding, provider, policy, … (`auth_type`, `token_encoding`, `password_policy`, `secret_name`).
 */
const ABOUT_A_SECRET = new Set([
  "type",
  "types",
  "kind",
  "name",
  "names",
  "encoding",
  "provider",
  "providers",
  "policy",
  "mode",
  "method",
  "methods",
  "format",
  "scheme",
  "algorithm",
  "alg",
  "length",
  "size",
  "limit",
  "version",
  "ttl",
  "expiry",
  "rotation",
  "strategy",
  "store",
  "manager",
  "backend",
  "source",
  "path",
  "file",
  "dir",
  "location",
  "field",
  "param",
  "prefix",
  "endpoint",
  "url",
  "uri",
  "count",
]);

/** Words that name a password (not a token or a key): a value after them may be any word that reads as a credential. */
const PASSWORD_WORDS = /^(?:password|passwd|passphrase|pwd|pw|pass|\w*password|\w*passwd)$/;

/**
 * @internal True when the name (a prose name, see `looksProseSecretName`) names a password:
 * `password`, `DB_PASSWORD`, `PGPASSWORD`, `pwd`, `pw`, `pass`, `spring.datasource.password`.
 */
export function looksPasswordName(name: string): boolean {
  return (
    looksProseSecretName(name) &&
    name.split(WORD_BREAK).some((word) => PASSWORD_WORDS.test(word.toLowerCase()))
  );
}

/**
 * @internal The prose form of `looksSecretName`: true when a word of the name (split as
 * `looksSecretName` splits, at anything but a letter and where a small letter meets a capital) is
 * one credentials are given under — `token`, `secret`, `password`, `passwd`, `pass`, `pw`, `auth`,
 * `credential(s)`, `creds` (not `cred`, which prose uses for standing), `apikey`, …, or ends in one written joined (`PGPASSWORD`, `GITHUBTOKEN`) — or
 * is `key` with no word before it that makes it another kind of
 * key (`key`, `api_key`, `apiKey`, `X-Api-Key`, `SIGNING_KEY`; not `primary_key`, `sort_key`,
 * `SHORTCUT_KEY`). So `monkey`, `keys`, `keyboard`, `tokenizer`, `max_tokens` and `turkey` are not
 * telling. Prose uses the words of a sentence as ordinary words, where a flag or a variable names a
 * credential by a part of its name; `findSpecSecrets` reads prose (a prompt part's text, a
 * description) with this test and everything else with `looksSecretName`.
 */
export function looksProseSecretName(name: string): boolean {
  if (typeof name !== "string") return false;
  const words = name
    .split(WORD_BREAK)
    .filter((word) => word !== "")
    .map((word) => word.toLowerCase());
  // `auth_type`, `token_encoding`, `password_policy`, `secret_name`: a setting about a credential.
  if (words.length > 1 && ABOUT_A_SECRET.has(words[words.length - 1] as string)) return false;
  return words.some(
    (word, index) =>
      PROSE_SECRET_WORDS.has(word) ||
      JOINED_SECRET.test(word) ||
      CLIENT_PASS_VARIABLES.has(word) ||
      (word === "key" && !ORDINARY_KEYS.has(words[index - 1] ?? "")),
  );
}

// Query parameters that carry a credential under a name too short to tell elsewhere: Azure's
// `?code=` (a function key) and `?sig=` (a SAS signature), `?session=`, `?jwt=`. The short names
// @loopwright/client's `isCredentialParam` masks that `looksSecretName` does not read.
const SECRET_PARAMS = new Set(["code", "sig", "session", "jwt"]);

/** True for a URL query parameter's name a credential is given under: `looksSecretName`, or one of `SECRET_PARAMS`. */
function looksSecretParam(name: string): boolean {
  return looksSecretName(name) || SECRET_PARAMS.has(name.toLowerCase().replace(/[-_]/g, ""));
}

/**
 * After a `${`: a name and `}` or one of the operators a default is written with (`${NAME}`,
 * `${NAME:-word}`, `${NAME-word}`, `${NAME:=word}`, `${NAME:?word}`, `${NAME:+word}`), what a
 * reader of the value (a shell, tools-mcp's expansion) takes for a reference; or the mark
 * `argUrl` writes for a part it took out (`${\uE004` and its number). Reads the name only.
 */
const REFERENCE_HEAD = /(?:[A-Za-z_][A-Za-z0-9_]*|\uE004\d+)(?:\}|:?[-=?+])/y;

/**
 * True when the `${` at `at` of `value` opens a reference (see `REFERENCE_HEAD`). Any other
 * (`${-  %VQ}`, `${X Y}`, `${}`) is no reference: a shell refuses it as a bad substitution, no
 * reader fills it, and its text is the document's own, read as literal text.
 */
function referenceAt(value: string, at: number): boolean {
  REFERENCE_HEAD.lastIndex = at + 2;
  return REFERENCE_HEAD.test(value);
}

/**
 * The string with every `${VAR}` reference removed, a default written in one (`${NAME:-word}`)
 * with it, and references nested in a default (`${DB_PASSWORD:-${PASSWORD}}`) read whole: what is
 * left is what the document itself says outside them. A `${` whose reference holds a bare `{`, or
 * is never closed, is kept as written. One pass, however deep the nesting.
 */
export function withoutReferences(value: string): string {
  if (!value.includes("${")) return value;
  // Characters kept; for each open `${`, where it started among them (closed, it is cut back to there).
  const out: string[] = [];
  const open: number[] = [];
  for (let i = 0; i < value.length; i += 1) {
    const c = value[i] as string;
    if (c === "$" && value[i + 1] === "{" && referenceAt(value, i)) {
      open.push(out.length);
      out.push("${");
      i += 1;
    } else if (c === "}" && open.length > 0) out.length = open.pop() as number;
    else {
      // A bare `{` inside a reference makes none of the open ones a reference: they stay as written.
      if (c === "{") open.length = 0;
      out.push(c);
    }
  }
  return out.join("");
}

/**
 * `${NAME:-`, `${NAME-`, `${NAME:=` or `${NAME=`: a default's head, its `NAME` captured. Sticky: each
 * reader sets `lastIndex` before it asks (shell-words reads it too).
 */
export const DEFAULT_OPEN = /\$\{([A-Za-z_][A-Za-z0-9_]*):?[-=]/y;

/**
 * A reference's head a shell or tools-mcp fills (`${NAME}`, `${NAME:?`, `${NAME:+`; `argUrl`'s mark),
 * not a default's. Sticky.
 */
const OTHER_OPEN = /\$\{(?:[A-Za-z_][A-Za-z0-9_]*|\uE004\d+)(?::?[?+])?/y;

/**
 * @internal Where each literal default's word (a stretch that says something) is written in
 * `value`: `[start, end)` and its `NAME`, in order. A default's word is the text of
 * `${NAME:-word}`, `${NAME-word}`, `${NAME:=word}` or `${NAME=word}` that a reader of the value (a
 * shell, tools-mcp's expansion) uses while `NAME` is unset, so it is written in the document and
 * read as a literal there. A word mixing literal text and references or substitutions
 * (`${V:-J${X}}`, `${V:-Q9$(id)}`, `${V:-a$X}`) gives each literal stretch between them (fix177: such
 * a word was read as a reference alone, `J` kept in clear); a default nested in one
 * (`${X:-a${Y:-b}c}`) gives its own. A word with no `$` in it is one literal stretch, a backtick's
 * text included, as it was read (no reader of an argument runs it: `${V:-`id`}` is hidden whole);
 * in one that holds a `$`, a backtick's part is a run-time part as `$(…)` is. A default holding a
 * bare `{`, or left open, gives none (see `withoutReferences`: it is read as written). One pass.
 */
export function literalDefaults(value: string): { start: number; end: number; name: string }[] {
  if (typeof value !== "string" || !value.includes("${")) return [];
  const found: { start: number; end: number; name: string }[] = [];
  // The parts open at `i`, innermost last: a default (its name, where its current stretch started,
  // and the stretches it holds so far), or any other part (`${NAME}`, `$(…)`, a refused `${…}`), each
  // ended by its `close`; `word`: text at its level is a default's word (a refused
  // `${…}`'s text is its default's, so it is set once, when the part opens).
  type Part = {
    name?: string;
    from: number;
    words: { start: number; end: number }[];
    close: string;
    refused?: boolean;
    word: boolean;
    /** For a default: where its word starts, and whether a `$` is written in it. */
    start?: number;
    dollar?: boolean;
  };
  const open: Part[] = [];
  const top = () => open[open.length - 1];
  // Ends the innermost default's current stretch at `at` (kept when it says something).
  const cut = (at: number) => {
    const part = top();
    if (part?.name === undefined) return;
    if (value.slice(part.from, at).trim() !== "") part.words.push({ start: part.from, end: at });
  };
  let i = 0;
  while (i < value.length) {
    const c = value[i] as string;
    const next = value[i + 1];
    const inWord = top()?.word === true;
    if (c === "$")
      for (let k = open.length - 1; k >= 0 && !(open[k] as Part).dollar; k -= 1)
        (open[k] as Part).dollar = true;
    if (c === "$" && next === "{") {
      DEFAULT_OPEN.lastIndex = i;
      const head = DEFAULT_OPEN.exec(value);
      if (head) {
        const after = DEFAULT_OPEN.lastIndex;
        cut(i);
        open.push({ name: head[1] ?? "", from: after, words: [], close: "}", word: true, start: after });
        i = after;
        continue;
      }
      OTHER_OPEN.lastIndex = i;
      if (referenceAt(value, i) && OTHER_OPEN.test(value)) {
        cut(i);
        open.push({ from: i, words: [], close: "}", word: false });
        i = OTHER_OPEN.lastIndex;
        continue;
      }
      // A `${` no reader fills (`${-  %VQ}`): its text, to its `}`, is literal text.
      open.push({ from: i, words: [], close: "}", refused: true, word: inWord });
      i += 2;
      continue;
    }
    if (inWord && ((c === "$" && next === "(") || c === "`")) {
      cut(i);
      open.push({ from: i, words: [], close: c === "`" ? "`" : ")", word: false });
      i += c === "`" ? 1 : 2;
      continue;
    }
    if (inWord && top()?.name !== undefined && c === "$" && next !== undefined && /[A-Za-z_]/.test(next)) {
      // `$NAME`: a reference, its name read to its end.
      cut(i);
      let k = i + 1;
      while (k < value.length && /[A-Za-z0-9_]/.test(value[k] as string)) k += 1;
      (top() as Part).from = k;
      i = k;
      continue;
    }
    const part = top();
    if (part !== undefined && c === "(" && part.close === ")") {
      open.push({ from: i, words: [], close: ")", word: false });
    } else if (part !== undefined && c === part.close) {
      cut(i);
      open.pop();
      // A word with no `$` in it is literal whole, a backtick's text included, as it was read.
      if (part.name !== undefined && !part.dollar) {
        const start = part.start ?? i;
        if (value.slice(start, i).trim() !== "") found.push({ start, end: i, name: part.name });
      } else if (part.name !== undefined)
        for (const word of part.words) found.push({ ...word, name: part.name });
      const outer = top();
      if (outer !== undefined && !part.refused) outer.from = i + 1;
    } else if (c === "{" && part !== undefined && part.close === "}") {
      // A bare `{` inside a reference makes none of the open ones a reference (see `withoutReferences`).
      open.length = 0;
    }
    i += 1;
  }
  return found.sort((a, b) => a.start - b.start);
}

/**
 * A literal value (see `isLiteral`) with what it says in clear taken out, `put` giving what is
 * written instead: the whole value when it says something outside its references; else only the
 * word of each literal default, the rest kept, so `${DB_PASSWORD:-Tr0ub4dor3x}` becomes
 * `${DB_PASSWORD:-${PASSWORD}}` (read at run time as before, the default now a reference of its own).
 */
export function hideLiteral(value: string, put: (secret: string) => string): string {
  return saysOutside(value) ? put(value) : putDefaults(value, literalDefaults(value), put);
}

/**
 * `value` with `put` in place of each of `defaults` (literal default words, in order), the rest as
 * written; `put(value)` whole when there are none.
 */
function putDefaults(
  value: string,
  defaults: readonly { start: number; end: number }[],
  put: (secret: string) => string,
): string {
  if (defaults.length === 0) return put(value);
  let out = "";
  let from = 0;
  for (const { start, end } of defaults) {
    out += value.slice(from, start) + put(value.slice(start, end));
    from = end;
  }
  return out + value.slice(from);
}

/**
 * What takes the place of a credential that is taken out of a string: given the credential's text
 * as written and the name of the flag, field or header it was given under (undefined for a key
 * shape or a part of a URL), returns the text shown instead.
 */
export type SecretHide = (secret: string, name: string | undefined) => string;

/** @internal `hide` as the public functions take it: one that is not a function is read as none given (they never throw). */
export const givenHide = (hide: unknown): SecretHide | undefined =>
  typeof hide === "function" ? (hide as SecretHide) : undefined;

/**
 * Where a key shape written with a leading `\b` may start: at a word's edge, or tight after a short
 * flag's letter (`-pghp_…`, `-ksk-…`: mysql's `-pX` and any program's `-kX`), the flag a word of its own.
 */
const KEY_START = String.raw`(?:\b|(?<=(?<![\w-])-[A-Za-z]))`;

/** @internal The shapes `looksLikeKey` knows. None matches fewer than 14 characters (`quotable` relies on it). */
export const KEY_SHAPES: readonly RegExp[] = [
  /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/, // OpenAI, Anthropic
  /\bgh[pousr]_[A-Za-z0-9]{20,}/, // GitHub
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bglpat-[A-Za-z0-9_-]{16,}/, // GitLab
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/, // Slack
  /\bAKIA[0-9A-Z]{16}\b/, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{30,}/, // Google
  /\bhf_[A-Za-z0-9]{20,}/, // Hugging Face
  /\bgsk_[A-Za-z0-9]{20,}/, // Groq
  /\bxai-[A-Za-z0-9]{20,}/, // xAI
  /\bpplx-[A-Za-z0-9]{20,}/, // Perplexity
  /\bcsk-[A-Za-z0-9]{20,}/, // Cerebras
  /\bfw_[A-Za-z0-9]{20,}/, // Fireworks
  /\br8_[A-Za-z0-9]{20,}/, // Replicate
  /\blsv2_(?:pt|sk)_[A-Za-z0-9_]{20,}/, // LangSmith
  /\btvly-(?:dev-|prod-)?[A-Za-z0-9]{16,}/, // Tavily (an MCP search server's key)
  /\bBSA[A-Za-z0-9_-]{20,}/, // Brave Search
  /\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/, // Stripe
  /\bnpm_[A-Za-z0-9]{30,}/, // npm
  /\blin_api_[A-Za-z0-9]{20,}/, // Linear
  /\bsbp_[A-Za-z0-9]{20,}/, // Supabase
  /\b(?:ntn|secret)_[A-Za-z0-9]{30,}/, // Notion
  // JWT. It starts only where a run of its characters starts (not at each `eyJ` inside one, which
  // would rescan the run from each: quadratic on `"eyJ-".repeat(n)`).
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/,
  // An Authorization value: the scheme a word of its own (not the end of `gh-token`, `get_token`,
  // `a.token`, `/token`), its value no flag (`get-token --password X` is a command, not a header),
  // and on the scheme's line (r92b: a line ending `…#token` and the next one `PORT=8080` were one
  // key, the text after the scheme hidden, the next line with it).
  /(?<![\w./-])(?:Bearer|Basic|Token)[ \t]+(?!-)[A-Za-z0-9._~+/=-]{8,}/i,
].map((shape) =>
  shape.source.startsWith(String.raw`\b`)
    ? new RegExp(KEY_START + shape.source.slice(2), shape.flags)
    : shape,
);

const GLOBAL_SHAPES = KEY_SHAPES.map((shape) => new RegExp(shape.source, `${shape.flags}g`));

/**
 * Text every match of a key shape holds (each shape's literal start, any case): a text without
 * it holds no key, so `withoutKeys` gives it back after one scan, not one a shape (r82d: the
 * command-line reader asks it of every stretch between the values it hides).
 */
const KEY_TEXT =
  /sk-|[rs]k_|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|akia|aiza|hf_|gsk_|xai-|pplx-|csk-|fw_|r8_|lsv2_|tvly-|bsa|npm_|lin_api_|sbp_|ntn_|secret_|eyj|bearer|basic|token/i;

/** The string with every key-shaped part replaced by the reference `${SECRET}`, or by what `hide` returns for it. */
export function withoutKeys(value: string, hide?: SecretHide): string {
  if (value.length < 14 || !KEY_TEXT.test(value)) return value;
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
  const put = hide ?? (() => "${SECRET}");
  let out = value;
  for (const shape of GLOBAL_SHAPES) out = out.replace(shape, (key) => put(key, undefined));
  return out;
}

/**
 * True when a string, with its `${VAR}` references left out, holds a value shaped like a known
 * kind of key anywhere in it: OpenAI's and Anthropic's `sk-…`, GitHub's `ghp_…`, AWS's `AKIA…`,
 * Groq's `gsk_…`, a JWT, an `Authorization` value such as `Bearer <token>`, and others (each at
 * least 14 characters). The test `findSpecSecrets` makes for `SecretSign.Value`; false for
 * anything that is not a string. Never throws.
 */
export function looksLikeKey(value: string): boolean {
  if (typeof value !== "string") return false;
  const literal = withoutReferences(value);
  // A literal default's word is written in the document too (`${GITHUB_TOKEN:-ghp_…}`).
  const words = [literal, ...literalDefaults(value).map(({ start, end }) => value.slice(start, end))];
  return words.some(
    (word) => word.length >= 14 && KEY_TEXT.test(word) && KEY_SHAPES.some((shape) => shape.test(word)),
  );
}

/** The sign a URL carries, if any: credentials before the host, or a telling query parameter. */
export function urlSign(value: string): SecretSign | undefined {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Refused (a `${HOST}:${PORT}` to fill, a password with a #): read the text as written.
    const loose = unparsedUserinfo(value);
    if (loose && saysSomething(loose[2] ?? "")) return SecretSign.Userinfo;
    const query = /^[^?#]*\?([^#]*)/.exec(value)?.[1] ?? "";
    if (query.split("&").some(tellingPair)) return SecretSign.Query;
    return fragmentTells(value) ? SecretSign.Query : undefined;
  }
  if (withoutReferences(decodeSafe(url.username) + decodeSafe(url.password)) !== "")
    return SecretSign.Userinfo;
  for (const [name, param] of url.searchParams) {
    if (looksSecretParam(name) && saysInQuery(param)) return SecretSign.Query;
  }
  return fragmentTells(value) ? SecretSign.Query : undefined;
}

/**
 * The pairs of a URL's fragment, as `withoutParsedUrlSecrets` reads them: the text after its first
 * `#`, cut at each `?` into parts and each part at each `&` into pairs. A fragment holds a query of
 * its own where an app routes in the browser (`#/callback?token=X`), OAuth's implicit grant writes
 * its token there (`#access_token=X`), and a URL written after the first in the same word is the
 * first's fragment to a parser (`https://h/p#x,redis://h2/?token=X`).
 */
function fragmentParts(value: string): string[][] {
  const hash = value.indexOf("#");
  return hash < 0
    ? []
    : value
        .slice(hash + 1)
        .split("?")
        .map((part) => part.split("&"));
}

/**
 * True for a telling pair of a URL's fragment (see `tellingPair`) whose value holds no command
 * substitution: the command-line reader ends such a word at the blank inside `$(…)`, so hiding the
 * value there would take the payload out of sight; that value is left as it was written.
 */
const tellingFragmentPair = (pair: string) => !/\$\(|`/.test(pair) && tellingPair(pair);

/** @internal True when a URL's fragment holds a telling `name=value` pair (see `fragmentParts`). */
export function fragmentTells(value: string): boolean {
  return fragmentParts(value).some((pairs) => pairs.some(tellingFragmentPair));
}

/**
 * A URL parser ends the host at the first `/`, `?` or `#`, so `https://me:pa#ss@host/` (a password
 * written unescaped) is refused as a bad port, though the password is there in the text and a
 * server's own parser may take it. For a URL the parser refuses, reads `user:password@` up to the
 * first `@` instead: the match (scheme, userinfo), or null — also where what follows the colon up
 * to the first `/`, `?` or `#` is a port or a `${PORT}` to fill (the `@` is then the path's or the
 * query's: `http://${HOST}:${PORT}/@scope/pkg`).
 */
function unparsedUserinfo(value: string): RegExpExecArray | null {
  const loose = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^\s@/?#:]*:[^\s@]*)@/.exec(value);
  if (!loose) return null;
  // `http://${HOST}:${PORT}/@scope/pkg` (or an email in the query): what follows the colon up to
  // the path is a port to fill, not a password, and the `@` belongs to the path or the query.
  const afterColon = (loose[2] ?? "").slice((loose[2] ?? "").indexOf(":") + 1);
  const beforePath = withoutReferences(afterColon.split(/[/?#]/, 1)[0] ?? "");
  if (/^\d*$/.test(beforePath)) return null;
  try {
    new URL(value);
    return null;
  } catch {
    return loose;
  }
}

/** True when a URL's userinfo, without its `${VAR}` references and its colon, says something. */
const saysSomething = (userinfo: string) => withoutReferences(decodeSafe(userinfo)).replace(":", "") !== "";

/** A query pair's name, decoded as a form decodes it. */
function queryName(pair: string): string {
  const cut = pair.indexOf("=");
  return decodeSafe((cut === -1 ? pair : pair.slice(0, cut)).replace(/\+/g, " "));
}

/**
 * @internal True for a raw `name=value` query pair with a telling name and a value that says
 * something (see `saysInQuery`).
 */
export function tellingPair(pair: string): boolean {
  const cut = pair.indexOf("=");
  if (cut === -1) return false;
  const param = decodeSafe(pair.slice(cut + 1).replace(/\+/g, " "));
  return looksSecretParam(queryName(pair)) && saysInQuery(param);
}

/** @internal True for a raw query pair (or its `name=` alone) whose name a credential is given under (see `looksSecretParam`), whatever its value. */
export function tellingPairName(pair: string): boolean {
  return looksSecretParam(queryName(pair));
}

/**
 * True when a (decoded) query value says something in clear: once its references are removed it
 * still does, or a literal default holds a word (`${TOKEN:-Q9x}`: a reader of the value fills it
 * with `Q9x` while `TOKEN` is unset; fix176: it was read as a reference alone and kept in clear).
 */
function saysInQuery(param: string): boolean {
  return withoutReferences(param).trim() !== "" || literalDefaults(param).length > 0;
}

/**
 * A telling query `value` (raw, as written) replaced by what `put` returns: whole when it says
 * something outside its references; else each literal default's word alone, the reference around
 * it kept (`${TOKEN:-Q9x}` → `${TOKEN:-<put>}`, as a flag's value is, see `hideLiteral`), so that
 * filled back it gives the value byte for byte. A value that says something only once decoded is
 * put whole.
 */
function hiddenQueryValue(value: string, put: (secret: string) => string): string {
  return putDefaults(value, withoutReferences(value).trim() === "" ? literalDefaults(value) : [], put);
}

function decodeSafe(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** True when a value, once references are removed (and an `Authorization` scheme before them), still says something. */
function saysOutside(value: string): boolean {
  return (
    withoutReferences(value)
      .replace(/^\s*(?:Bearer|Basic|Token)\b/i, "")
      .trim() !== ""
  );
}

/**
 * True when a value says something in clear: once references are removed it still does, or a
 * literal default holds a word (`${DB_PASSWORD:-Tr0ub4dor3x}`; see `literalDefaults`). `${NAME}`
 * alone, `${NAME:-}` and `${NAME:-$OTHER}` are read at run time.
 */
export function isLiteral(value: string): boolean {
  return saysOutside(value) || literalDefaults(value).length > 0;
}

/**
 * The URL with what `urlSign` reads taken out: the userinfo, and each query parameter with a
 * telling name and a literal value. The rest is kept as written (no re-encoding), so `${VAR}`
 * references elsewhere in it survive. A string that is not a URL is returned as it is. With `hide`,
 * the userinfo and each such value are replaced by what it returns instead of being dropped.
 * `shown` (the display): a telling query value holding a run-time part keeps that part in sight,
 * each closed `$(…)` or backtick part given to `shown` with the pair's name (see `shownQueryValue`).
 */
export function withoutUrlSecrets(value: string, hide?: SecretHide, shown?: ShownPart): string {
  const loose = unparsedUserinfo(value);
  if (loose) {
    const [whole, scheme = "", userinfo = ""] = loose;
    const user = hide ? `${saysSomething(userinfo) ? hide(userinfo, undefined) : userinfo}@` : "";
    const rest = withoutParsedUrlSecrets(scheme + value.slice(whole.length), hide, shown).slice(
      scheme.length,
    );
    return `${scheme}${user}${rest}`;
  }
  return withoutParsedUrlSecrets(value, hide, shown);
}

/**
 * The URL with its userinfo taken out when it says something (see `urlSign`), as
 * `withoutUrlSecrets` takes it out (with `hide`, replaced by what it returns), and nothing else:
 * its query is kept as written.
 */
export function withoutUserinfo(value: string, hide?: SecretHide): string {
  if (urlSign(value) !== SecretSign.Userinfo) return value;
  const match = unparsedUserinfo(value) ?? /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)@/.exec(value);
  if (!match) return value;
  const [whole, scheme = "", userinfo = ""] = match;
  const user = hide ? `${saysSomething(userinfo) ? hide(userinfo, undefined) : userinfo}@` : "";
  return `${scheme}${user}${value.slice(whole.length)}`;
}

function withoutParsedUrlSecrets(value: string, hide?: SecretHide, shown?: ShownPart): string {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)(?:([^/?#]*)@)?([^?#]*)(?:\?([^#]*))?(#[\s\S]*)?$/.exec(
    value,
  );
  if (!match) return value;
  const [, scheme = "", userinfo, rest = "", query, fragment = ""] = match;
  // With `hide`, a userinfo that says something and a telling parameter's value are replaced, not dropped.
  let user = "";
  if (hide && userinfo !== undefined)
    user = `${saysSomething(userinfo) ? hide(userinfo, undefined) : userinfo}@`;
  const kept = withoutTellingPairs((query ?? "").split("&"), hide, tellingPair, shown);
  return `${scheme}${user}${rest}${kept !== "" ? `?${kept}` : ""}${withoutFragmentSecrets(fragment, hide)}`;
}

/**
 * Query `pairs` joined by `&` again, each `telling` pair (by default `tellingPair`) dropped, or
 * with `hide` its value replaced by what it returns. An empty pair (`a&&b`) is dropped, but kept
 * with `hide`, so that what it returns, filled back, gives the URL byte for byte. `shown` (the
 * display): a telling pair whose value holds a run-time part is kept with only its literal text
 * taken out (see `shownQueryValue`).
 */
function withoutTellingPairs(
  pairs: string[],
  hide?: SecretHide,
  telling = tellingPair,
  shown?: ShownPart,
): string {
  const kept: string[] = [];
  for (const pair of pairs) {
    if (pair === "") {
      if (hide) kept.push(pair);
      continue;
    }
    const cut = pair.indexOf("=");
    if (!telling(pair)) kept.push(pair);
    else if (shown && RUN_TIME.test(pair.slice(cut + 1)))
      kept.push(
        `${pair.slice(0, cut + 1)}${shownQueryValue(pair.slice(cut + 1), queryName(pair), shown, hide)}`,
      );
    else if (hide)
      kept.push(
        `${pair.slice(0, cut + 1)}${hiddenQueryValue(pair.slice(cut + 1), (secret) => hide(secret, queryName(pair)))}`,
      );
  }
  return kept.join("&");
}

/**
 * After a `${`: what a shell reads as a parameter expansion's start (an indirection or length mark,
 * a name, a positional or special parameter, an index, then `}` or an operator), or the text's
 * end first (`${#X}` in a URL's query, whose `#` starts its fragment, is read there as `${`: what
 * follows is not seen, so it is taken for one as before). Reads up to the next `$`, `]` or `}` at most.
 */
const EXPANSION_HEAD =
  /[!#]?(?:[A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(?:\[[^\]$}]*\])?[}:\-=?+#%/^,@*]|(?:[!#]?(?:[A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])?(?:\[[^\]$}]*\]?)?)?$/y;

/**
 * @internal True when the `${` at `at` of `value` opens a parameter expansion a shell runs (see
 * `EXPANSION_HEAD`: `${X%.*}`, `${-%VQ}`, `${#X}`); false for one it refuses as a bad
 * substitution (`${-  %VQ}`, `${X Y}`), which runs nothing.
 */
export function expansionAt(value: string, at: number): boolean {
  EXPANSION_HEAD.lastIndex = at + 2;
  return EXPANSION_HEAD.test(value);
}

/**
 * @internal The run-time part a shell runs that opens at `at` of `value`: `` ` ``, `(` for `$(`,
 * `{` for a `${` it expands (see `expansionAt`); "" for none (a `${` it refuses included).
 */
export function runTimeOpenerAt(value: string, at: number): "`" | "(" | "{" | "" {
  const c = value[at];
  if (c === "`") return "`";
  if (c !== "$") return "";
  const next = value[at + 1];
  return next === "(" ? "(" : next === "{" && expansionAt(value, at) ? "{" : "";
}

/** A run-time part's opener: `$(`, `${` or a backtick. */
const RUN_TIME = /\$[({]|`/;

/**
 * For the display: a closed `$(…)` or backtick part of a telling query value named `name`, as the
 * display shows a command (the caller's reader: find-spec-secrets' `shownShellPart`, a `--password X`
 * inside hidden, the payload kept).
 */
export type ShownPart = (part: string, name: string) => string;

/**
 * For the display: a telling query `value` holding a run-time part (`$(…)`, a backtick's, `${…}`),
 * with each run of literal text that says something between those parts taken out (with `hide`,
 * replaced by what it returns, named `name`) and each part kept as written, each to its close or to
 * the value's end: the command-line reader ends the URL's word at a blank inside `$(curl e|sh)`, and
 * the rest of the payload is shown after it, so the payload stays in sight as often as written.
 * A closed `$(…)` or backtick part is read by `shown` (fix180: `?token=$(x --password hunter2)J`
 * showed `hunter2`); one left open is kept as written. One pass over the value.
 */
function shownQueryValue(value: string, name: string, shown: ShownPart, hide?: SecretHide): string {
  let out = "";
  let literal = "";
  const flush = () => {
    if (withoutReferences(literal).trim() === "") out += literal;
    else if (hide) out += hide(literal, name);
    literal = "";
  };
  let i = 0;
  while (i < value.length) {
    const c = value[i] as string;
    // A `${` a shell refuses (`${-  %VQ}`, see `expansionAt`) runs nothing: its text is literal.
    const opener = runTimeOpenerAt(value, i);
    if (opener === "") {
      literal += c;
      i += 1;
      continue;
    }
    flush();
    let end = i + 1;
    let closed = false;
    if (opener === "`") {
      const close = value.indexOf("`", end);
      closed = close >= 0;
      end = close < 0 ? value.length : close + 1;
    } else {
      // To the bracket that closes the opener, counting the pairs inside it.
      const close = opener === "(" ? ")" : "}";
      let depth = 0;
      for (end = i + 1; end < value.length; end += 1) {
        const d = value[end];
        if (d === opener) depth += 1;
        else if (d === close) {
          depth -= 1;
          if (depth === 0) break;
        }
      }
      closed = end < value.length;
      end = Math.min(end + 1, value.length);
      // A default left open (`${V:-J`, on a line a shell refuses): its word is the value's, read on
      // (its literal text hidden, its run-time parts kept in sight), its head kept (fix180: kept
      // as written, `J` shown; a credential in a part before it had hidden the line's end).
      DEFAULT_OPEN.lastIndex = i;
      if (!closed && DEFAULT_OPEN.test(value)) {
        out += value.slice(i, DEFAULT_OPEN.lastIndex);
        i = DEFAULT_OPEN.lastIndex;
        continue;
      }
    }
    // A reference's literal default (`${V:-Q9x}`, `${X:-${-  %VQ}}`): its word hidden, the rest kept.
    const word = opener === "{" ? literalDefaultWord(value, i, end) : undefined;
    if (word) out += value.slice(i, word.start) + (hide ? hide(value.slice(word.start, word.end), name) : "");
    out +=
      opener !== "{" && closed ? shown(value.slice(i, end), name) : value.slice(word ? word.end : i, end);
    i = end;
  }
  flush();
  return out;
}

/**
 * Where the literal word of the `${…}` written from `start` to `end` (closed) in `value` stands:
 * the default's word of `${NAME:-word}` (or of the innermost of nested ones, `${X:-${Y:-word}}`)
 * when no run-time part a shell runs opens in it (plain text, or a `${` a shell refuses: `${-  %VQ}`,
 * see `expansionAt`) and it says something. Undefined for any other. One pass over the part.
 */
function literalDefaultWord(
  value: string,
  start: number,
  end: number,
): { start: number; end: number } | undefined {
  let from = start;
  let to = end;
  for (;;) {
    DEFAULT_OPEN.lastIndex = from;
    if (value[to - 1] !== "}" || !DEFAULT_OPEN.test(value)) break;
    from = DEFAULT_OPEN.lastIndex;
    to -= 1;
    // A default that is itself a default's `${…}` (`${X:-${Y:-word}}`): its word is read in turn.
    if (runTimeOpenerAt(value, from) !== "{") break;
    DEFAULT_OPEN.lastIndex = from;
    if (!DEFAULT_OPEN.test(value)) break;
  }
  if (from === start || to <= from) return undefined;
  for (let k = from; k < to; k += 1) if (runTimeOpenerAt(value, k) !== "") return undefined;
  return /\S/.test(value.slice(from, to)) ? { start: from, end: to } : undefined;
}

/**
 * A URL's fragment (`#…`, or "") with its telling pairs taken out as a query's are (see
 * `fragmentParts`), the rest kept as written: a part after a `?` left with no pair loses its `?`.
 * A fragment with no telling pair is returned as it is.
 */
function withoutFragmentSecrets(fragment: string, hide?: SecretHide): string {
  if (!fragmentTells(fragment)) return fragment;
  const read = (pairs: string[]) =>
    pairs.some(tellingFragmentPair) ? withoutTellingPairs(pairs, hide, tellingFragmentPair) : pairs.join("&");
  const [first = [], ...rest] = fragmentParts(fragment);
  let out = `#${read(first)}`;
  for (const pairs of rest) {
    const kept = read(pairs);
    if (kept !== "" || !pairs.some(tellingFragmentPair)) out += `?${kept}`;
  }
  return out;
}
