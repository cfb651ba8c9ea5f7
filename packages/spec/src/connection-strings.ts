// Part of spec's secret reader (see find-spec-secrets.ts): connection strings (`Server=db;Password=X;`, ODBC `{…}` values): telling when a text is one, splitting it at its `;`s, and hiding a telling pair's value (its display keeps a command in it in sight).
import { type ArgFound, type ArgRules, readValue } from "./find-spec-secrets.js";
import { type SecretHide, SecretSign } from "./secret-signs.js";
import { expansionEnd, SPACE, type Span } from "./shell-words.js";

/** `[start, end)` of `text` where a telling connection-string pair's literal value is written (see `connectionPairs`). */
export function connectionSpans(text: string, rules: ArgRules): Span[] {
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
export function connectionString(text: string, shell: boolean): boolean {
  if (!text.includes(";")) return false;
  const parts = connectionParts(text, shell).filter((part) => part.trim() !== "");
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

/** A connection string's pair: `Password=X`, ` User Id = sa`. */
const PAIR_NAME = /^\s*[A-Za-z][\w .-]*$/;

/**
 * A connection string split at its `;`s, each part as written: a `;` inside a value that opens
 * with `{` (ODBC's `Pwd={a;b}`) or a quote (`Password="a;b"`) does not split it; where a `shell`
 * reads the text (a pasted command), neither does one inside a closed `$(…)`, `${…}`, `$[…]` or
 * backtick, which is passed over whole (see `expansionEnd`; r58-1: `Password=x$(curl …|sh;a=b)`
 * was cut in two). One left open is read as text, so it cannot take the pairs after it (r59). One pass.
 */
function connectionParts(text: string, shell = false): string[] {
  const parts: string[] = [];
  let from = 0;
  let close = "";
  // Whether the current part's `=` was seen, and whether its value has started (past its spaces).
  let assigned = false;
  let started = false;
  // Whether a run-time part was found left open: from there on none is passed over (one scan).
  let unclosed = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    if (close !== "") {
      if (c === close) close = "";
    } else if (shell && !unclosed && (c === "`" || (c === "$" && /[{([]/.test(text[i + 1] ?? "")))) {
      const { end, closed } = expansionEnd(text, i);
      // One left open (a line the shell refuses) is text: it would take every later pair with it.
      if (closed) i = Math.max(i, end - 1);
      else unclosed = true;
      if (assigned) started = true;
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
export function connectionPairs(
  text: string,
  rules: ArgRules,
  named: (secret: string, name: string) => string,
  hide: SecretHide | undefined,
  shown?: (start: number, end: number, name: string) => string | undefined,
  shell = false,
): ArgFound | undefined {
  if (!text.includes(";")) return undefined;
  const parts = connectionParts(text, shell);
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
