// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
/**
 * Whole pasted documents through spec's secret readers: generated texts mixing YAML, `.env`,
 * TOML/INI, JSON, shell lines, prose, markdown fences, Windows paths and URLs, with and without
 * planted credentials. A credential is planted only in a construct and a value shape spec's README
 * promises its reader takes out; each reader is checked only against the plants it promises:
 *
 * - `withoutSecrets(doc, "CONFIG")` (a name that tells nothing: the document reader, then the
 *   command-line reader a line at a time): every plant. A value of several bare words and a TOML/INI
 *   or `.env` `name = X` read as data are planted only in a document whose every line is data (the
 *   README reads them only there); in one holding prose or a shell line, `=` pairs carry one word.
 * - `withoutProseSecrets(doc)` (a prompt part's text, a description): only a one-word value that
 *   reads as a credential (letters and digits mixed, 10+ characters) or a key shape, in a flag,
 *   assignment, header, JSON pair, `name: X` / `name = X`, URL, connection string, `mysql -pX` or
 *   `curl -u`. Not a block scalar, a flow mapping, nor several words: prose reading misses them
 *   (README, "Missed there, known").
 * - `withoutSecrets(doc)` (no name): only key shapes and a URL's `user:password@`.
 *
 * Excluded by construction (documented limits): a scalar or flow mapping over several lines, a
 * sequence under a telling name (`tokens: [a, b]`), letters-only or short values, a value in a
 * run-time form (`$(…)`, `${VAR}`), and a bare one-word value under a telling name that is no
 * credential (`Token: Llama-3-8B` alone on a line is hidden: no plain line holds such a pair).
 */
import fc from "fast-check";
import {
  exportSpec,
  findSpecSecrets,
  withoutArgSecrets,
  withoutProseSecrets,
  withoutSecrets,
} from "../packages/spec/src/index.js";

/** Where a plant is promised: `doc` by the document reader in any document, or only when every line is data. */
interface Plant {
  lines: string[];
  /** The texts that must not survive. */
  parts: string[];
  doc: "any" | "data";
  prose: boolean;
  /** Taken out with no name too (a key shape, a URL's userinfo). */
  bare: boolean;
  /** A command line's construct (a flag, an assignment, a URL, a key shape): read in a one-line argument too. */
  cmd?: boolean;
  /** Its lines are a document's data lines (a pair, a block), not prose or a command. */
  data?: boolean;
}

/** A document's line with no credential: whether it is a data line (a pair, a comment, a section). */
interface PlainLine {
  text: string;
  data: boolean;
  /**
   * Read as a command line, it has a value taken out by design: `Set --token to your key.` hides
   * `to` (the word after a telling flag) where a document's lines are read as a script's. Kept by
   * prose reading, which asks the value to read as a credential; not used where the command-line
   * reader reads.
   */
  command?: boolean;
}

// Random credential names: a prefix or none, and a last word naming a credential.
const LAST = [
  "password",
  "token",
  "secret",
  "api_key",
  "private_key",
  "access_token",
  "passphrase",
  "pass",
  "pwd",
];
const PREFIX = ["", "db_", "my_", "github_", "prod_", "slack_bot_", "admin_"];
const name = fc
  .tuple(fc.constantFrom(...PREFIX), fc.constantFrom(...LAST), fc.constantFrom("lower", "upper", "camel"))
  .map(([prefix, last, style]) => {
    const snake = prefix + last;
    if (style === "upper") return snake.toUpperCase();
    if (style === "camel") return snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    return snake;
  });
/**
 * Whether prose promises `name: value` or `"name": "value"`: after a word alone that says only "a
 * credential" (`Token:`, `Secret:`), the value must besides be key-shaped or a run of 16+ letters
 * and digits (README: "so `Token: Llama-3-8B` … stay").
 */
const proseHeader = (n: string, v: string) =>
  !/^(?:token|key|secret|auth|authorization|signature|bearer|cookie|credentials?)$/i.test(n) ||
  v.length >= 16;
/** A flag's spelling of a name: `--api-key`. */
const flagOf = (n: string) =>
  `--${n
    .replace(/([a-z])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/_/g, "-")}`;
/** An environment variable's spelling of a name: `API_KEY`. */
const envOf = (n: string) => n.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();

const ALNUM = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const run = (min: number, max: number) =>
  fc.array(fc.constantFrom(...ALNUM), { minLength: min, maxLength: max }).map((cs) => cs.join(""));
// A one-word credential: letters and digits mixed, starting `Zq` and a digit so no plain line holds
// it, with a capital and a digit at its end so prose reads it as a credential, not an identifier.
const word = fc
  .tuple(fc.constantFrom(...ALNUM.slice(0, 25)), run(6, 12), fc.constantFrom(..."ABCDEFGHJK"), fc.nat(9))
  .map(([a, mid, cap, d]) => `Zq${d}${a}${mid}${cap}${d}`);
const key = fc.oneof(
  run(32, 40).map((r) => `sk-${r}`),
  run(36, 36).map((r) => `ghp_${r}`),
  fc
    .array(fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), { minLength: 16, maxLength: 16 })
    .map((cs) => `AKIA${cs.join("")}`),
);
/** Whether a planted value is one of the key shapes above. */
const isKey = (v: string) => /^(?:sk-|ghp_|AKIA)/.test(v);
/** A one-word value: one prose reads too. */
const one = fc.oneof(word, key);
/** A one-word value holding symbols (`Zq3a-b.c+d/e=`, `Zq4x!y@z%`): prose misses code characters (README). */
const SYMBOLS = "-_.+/=!@%*^~";
const sym = fc
  .tuple(word, fc.array(fc.tuple(fc.constantFrom(...SYMBOLS), run(1, 4)), { minLength: 1, maxLength: 3 }))
  .map(([w, parts]) => w + parts.map(([c, r]) => c + r).join(""));
/** Whether prose reads `v` as a credential: letters and digits only (a key shape's `-` or `_` too). */
const plainValue = (v: string) => !/[.+/=!@%*^~]/.test(v);
const words = fc.array(word, { minLength: 2, maxLength: 3 });
const indent = fc.constantFrom("", "  ", "    ", "\t");
const comment = fc.constantFrom("", " # ci");

/** A command line's plant of one value that prose reads too. */
const commandPlant = (line: string, v: string): Plant => ({
  lines: [line],
  cmd: true,
  parts: [v],
  doc: "any",
  prose: true,
  bare: isKey(v),
});

const plant: fc.Arbitrary<Plant> = fc.oneof(
  // YAML `name: X` (bare or quoted), in a list or not, with a comment.
  fc
    .tuple(
      indent,
      fc.constantFrom("", "- "),
      name,
      fc.oneof(one, sym),
      fc.constantFrom("", '"', "'"),
      comment,
    )
    .map(([i, dash, n, v, q, c]) => ({
      lines: [`${i}${dash}${n}: ${q}${v}${q}${c}`],
      data: true,
      parts: [v],
      doc: "any" as const,
      prose: q === "" && dash === "" && c === "" && proseHeader(n, v) && plainValue(v),
      bare: isKey(v),
    })),
  // YAML `name: a b c` (several bare words) and `name: "a b"` (one quoted string).
  fc.tuple(indent, name, words).map(([i, n, ws]) => ({
    lines: [`${i}${n}: ${ws.join(" ")}`],
    data: true,
    parts: ws,
    doc: "data" as const,
    prose: false,
    bare: false,
  })),
  fc.tuple(indent, name, words).map(([i, n, ws]) => ({
    lines: [`${i}${n}: "${ws.join(" ")}"`],
    data: true,
    parts: ws,
    doc: "any" as const,
    prose: false,
    bare: false,
  })),
  // A block scalar: its lines more indented than its name.
  fc
    .tuple(
      indent,
      name,
      fc.constantFrom("|", ">-", "|2", "| # the key"),
      fc.array(
        fc.oneof(
          one.map((v) => [v]),
          words,
        ),
        { minLength: 1, maxLength: 3 },
      ),
    )
    .map(([i, n, header, lines]) => {
      const inner = `${i}${header === "|2" ? "    " : "  "}`;
      return {
        lines: [`${i}${n}: ${header}`, ...lines.map((ws) => inner + ws.join(" "))],
        data: true,
        parts: lines.flat(),
        doc: "any" as const,
        prose: false,
        bare: false,
      };
    }),
  // A one-line flow mapping, YAML's or JSON's, nested or not.
  fc.tuple(indent, name, one, fc.constantFrom("yaml", "json", "nested", "item")).map(([i, n, v, form]) => ({
    lines: [
      form === "yaml"
        ? `${i}creds: {user: bob, ${n}: ${v}}`
        : form === "json"
          ? `${i}{"user": "bob", "${n}": "${v}"}`
          : form === "nested"
            ? `${i}x: {a: {b: [1, 2], ${n}: ${v}}, mode: dev}`
            : `${i}- {${n}: ${v}, mode: x}`,
    ],
    data: true,
    parts: [v],
    doc: "any" as const,
    prose: false,
    bare: isKey(v),
  })),
  // A JSON pair on a line of its own.
  fc.tuple(indent, name, one).map(([i, n, v]) => ({
    lines: [`${i}"${n}": "${v}",`],
    data: true,
    parts: [v],
    doc: "any" as const,
    prose: proseHeader(n, v),
    bare: isKey(v),
  })),
  // `.env`: one word anywhere (a shell's assignment too), several words or quoted only as data.
  fc.tuple(fc.constantFrom("", "export "), name, fc.oneof(one, sym), comment).map(([e, n, v, c]) => ({
    lines: [`${e}${envOf(n)}=${v}${c}`],
    data: true,
    cmd: true,
    parts: [v],
    doc: "any" as const,
    prose: e === "" && c === "" && plainValue(v),
    bare: isKey(v),
  })),
  fc.tuple(name, words, fc.constantFrom("", '"')).map(([n, ws, q]) => ({
    lines: [`${envOf(n)}=${q}${ws.join(" ")}${q}`],
    data: true,
    parts: ws,
    doc: "data" as const,
    prose: false,
    bare: false,
  })),
  // TOML/INI `name = X`: read as data only.
  fc
    .tuple(
      name,
      fc.oneof(
        one.map((v) => [v]),
        words,
      ),
      fc.constantFrom("", '"', "'"),
    )
    .map(([n, ws, q]) => ({
      lines: [`${n} = ${q}${ws.join(" ")}${q}`],
      data: true,
      parts: ws,
      doc: "data" as const,
      prose: false,
      bare: false,
    })),
  // Shell lines: a telling flag, an assignment before a command, mysql's -p, curl's -u.
  fc.tuple(name, fc.oneof(one, sym), fc.constantFrom(" ", "=")).map(([n, v, sep]) => ({
    lines: [`npx -y some-mcp ${flagOf(n)}${sep}${v} --port 8080`],
    cmd: true,
    parts: [v],
    doc: "any" as const,
    prose: plainValue(v),
    bare: isKey(v),
  })),
  ...[
    (v: string, n: string) => `${envOf(n)}=${v} srv --verbose`,
    (v: string) => `mysql -h db -u root -p${v} app`,
    (v: string) => `curl -u admin:${v} https://api.example.com/v1`,
  ].map((line) => fc.tuple(name, one).map(([n, v]) => commandPlant(line(v, n), v))),
  // URLs: userinfo (bare, in a link, after NAME=), a telling query parameter; a connection string.
  fc.tuple(one, fc.constantFrom("bare", "link", "env")).map(([v, form]) => {
    const url = `postgres://app:${v}@db.internal:5432/app`;
    return {
      lines: [
        form === "bare"
          ? `Connect to ${url} first.`
          : form === "link"
            ? `See [the database](${url}).`
            : `DATABASE_URL=${url}`,
      ],
      parts: [v],
      doc: "any" as const,
      prose: true,
      bare: true,
      cmd: true,
    };
  }),
  fc.tuple(one, fc.constantFrom("api_key", "token", "access_token")).map(([v, p]) => ({
    lines: [`Fetch https://api.example.com/v1/items?${p}=${v}&limit=10 daily.`],
    cmd: true,
    parts: [v],
    doc: "any" as const,
    prose: true,
    bare: isKey(v),
  })),
  one.map((v) => ({
    lines: [`Server=db;User Id=sa;Password=${v};`],
    cmd: true,
    parts: [v],
    doc: "any" as const,
    prose: true,
    bare: isKey(v),
  })),
  // A key shape in a sentence.
  key.map((v) => ({
    lines: [`Use ${v} for the API.`],
    parts: [v],
    doc: "any" as const,
    prose: true,
    bare: true,
    cmd: true,
  })),
);

// Lines that hold no credential, of each kind a pasted document mixes.
const DATA_LINES = [
  "---",
  "model: qwen3-32b",
  "host: db",
  "token: null",
  "# a comment",
  "password: ${DB_PASSWORD}",
  "port: 5432",
  "api_key: <your key>",
  "max_tokens: 800",
  "limits: {max_tokens: 800, tags: [a, b]}",
  "password_hint: the name of the dog",
  'name: "my app"',
  "",
  "items:",
  "  - a",
  "  - b",
  "MODE=dev",
  "PORT=8080",
  "API_KEY=${API_KEY}",
  "export PATH_PREFIX=/opt",
  "[server]",
  'host = "db"',
  "max_tokens = 800",
  'token = "${TOKEN}"',
  "[[items]]",
  "{",
  '  "model": "qwen3",',
  '  "max_tokens": 800',
  "}",
  'cwd: "C:\\\\srv\\\\app"',
  "path: C:\\Program Files\\app",
  "docs: https://example.com/docs/auth#token",
];
const PROSE_LINES = [
  "Answer briefly and cite your sources.",
  "Never reveal the password.",
  "Primary key: user_id123",
  "Pin the signing key: v20.11.1",
  "secret = os.urandom(32)",
  "- Be kind to the user",
  "The token: ask for it later",
  "Read C:\\Users\\me\\AppData\\token.txt first.",
  "See [the docs](https://example.com/token) for more.",
  "npx -y some-mcp --port 8080",
  "srv --token ${GITHUB_TOKEN}",
  "cd /srv && make build",
  "curl https://example.com/api?x=1",
  "## Setup",
  "| name | value |",
  '\tindented with a "quote" and a tab',
];
/** Prose a command-line reader hides a word of (see `PlainLine.command`). */
const COMMAND_READ_LINES = ["Set --token to your key."];
// A markdown fence is a code block's edge and an apostrophe inside a word opens no quote over the
// lines below (r92g: both left the lines after them one word, `The token: ask for it later` losing
// `ask` and a value holding code characters read as a quoted word's): prose like any other.
const FENCES_AND_APOSTROPHES = [
  "```yaml",
  "```bash",
  "```",
  "Don't share it with anyone.",
  "It's the admin's.",
];
const plain: fc.Arbitrary<PlainLine> = fc.oneof(
  fc.constantFrom(...DATA_LINES).map((text) => ({ text, data: true })),
  fc.constantFrom(...PROSE_LINES, ...FENCES_AND_APOSTROPHES).map((text) => ({ text, data: false })),
  fc.constantFrom(...COMMAND_READ_LINES).map((text) => ({ text, data: false, command: true })),
);

/** A generated document: its text and what was planted in it, and whether every line is data. */
export interface Doc {
  text: string;
  plants: Plant[];
  data: boolean;
  /** A line of it is one the command-line reader takes a word out of by design. */
  command: boolean;
}

/**
 * A document of plain lines with plants between them (none for `clean`), its lines joined by
 * `\n` or `\r\n`. A plant promised only in a data document is dropped from one holding prose.
 */
export const documents = (clean: boolean): fc.Arbitrary<Doc> =>
  fc
    .tuple(
      fc.array(plain, { minLength: clean ? 2 : 0, maxLength: 8 }),
      clean ? fc.constant([] as Plant[]) : fc.array(plant, { minLength: 1, maxLength: 3 }),
      fc.array(fc.nat(), { maxLength: 3 }),
      fc.boolean(),
    )
    .map(([lines, plants, at, crlf]) => {
      // Data when every line is, the plants' too; a plant promised only there is dropped elsewhere.
      const data = lines.every((line) => line.data) && plants.every((p) => p.data === true);
      const command = lines.some((line) => line.command === true);
      const kept = plants.filter((p) => data || p.doc === "any");
      const all = lines.map((line) => [line.text]);
      for (const [i, p] of kept.entries()) all.splice((at[i] ?? i) % (all.length + 1), 0, p.lines);
      return { text: all.flat().join(crlf ? "\r\n" : "\n"), plants: kept, data, command };
    });

/** References a reader writes (`${API_KEY}`, `${SECRET_2}`) made one, so two readers' names compare. */
const refs = (text: string | undefined) => text?.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, "${R}");
/** The text with every `${NAME}` reference left out: what a reader kept of its input. */
const unreferenced = (text: string) => text.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, "");

function fail(what: string, detail: Record<string, unknown>): never {
  throw new Error(`${what}: ${JSON.stringify(detail)}`);
}

/** The text readers, checked on one document: properties (1) to (5) of the brief. */
export function checkText({ text, plants, command }: Doc): void {
  // Each reader, what it promises to take out, and whether it reads a line as a command line.
  const readers: [string, (t: string) => string, (p: Plant) => boolean, boolean][] = [
    ["withoutSecrets(doc, CONFIG)", (t) => withoutSecrets(t, "CONFIG"), () => true, true],
    ["withoutProseSecrets(doc)", (t) => withoutProseSecrets(t), (p) => p.prose, false],
    ["withoutSecrets(doc)", (t) => withoutSecrets(t), (p) => p.bare, false],
  ];
  for (const [label, read, promised, commandLines] of readers) {
    const out = read(text);
    // (1) No promised plant's text survives.
    for (const p of plants)
      if (promised(p))
        for (const part of p.parts) if (out.includes(part)) fail(`${label} kept ${part}`, { text, out });
    // (2) A document with no plant comes back byte for byte.
    if (plants.length === 0 && !(commandLines && command) && out !== text)
      fail(`${label} changed a document with no secret`, { text, out });
    // (3) A fixed point.
    const again = read(out);
    if (again !== out) fail(`${label} is no fixed point`, { text, out, again });
    // (5) Never longer than the input but for the references written.
    if (unreferenced(out).length > text.length) fail(`${label} grew`, { text, out });
  }
  // One argument: over several lines a script, replaced whole when it may hold a credential (every
  // plant names one or is key-shaped); on one line a command line, whose reader reads a command's
  // constructs, not a YAML or TOML pair.
  const args = withoutArgSecrets(["--config", text]);
  const script = /[\r\n]/.test(text);
  for (const p of plants)
    if (script || p.cmd)
      for (const part of p.parts)
        if (args.some((arg) => arg.includes(part))) fail(`withoutArgSecrets kept ${part}`, { text, args });
  // A script (an argument over several lines) naming a credential's word (`token`, `key`) is
  // replaced whole by design (README, "may hold a credential"): only a one-line one must stay.
  if (plants.length === 0 && !command && !/[\r\n]/.test(text) && args[1] !== text)
    fail("withoutArgSecrets changed a clean one-line document", { text, args });
  const again = withoutArgSecrets(args);
  if (JSON.stringify(again) !== JSON.stringify(args))
    fail("withoutArgSecrets is no fixed point", { text, args, again });
}

/**
 * The spec form, property (6) and (4): the document as a prompt part's text, the description, an
 * `extraBody` string, a server's argument and env value. The export writes at each place what the
 * text reader writes (references compared as one), and `findSpecSecrets` flags a place exactly
 * when that reader changes it.
 */
export function checkSpec({ text }: Doc): void {
  const spec = {
    spec: "loopwright.agent/1",
    description: text,
    model: { extraBody: { config: text } },
    prompt: [{ id: "a", text }],
    bundle: {
      mcpServers: [{ name: "srv", command: "srv", args: ["--config", text], env: { CONFIG: text } }],
    },
  };
  const exported = exportSpec(spec as never);
  const flagged = new Set(findSpecSecrets(spec as never).map((hint) => hint.path));
  const prose = withoutProseSecrets(text);
  const named = (n: string) => withoutSecrets(text, n);
  const args = withoutArgSecrets(["--config", text]);
  const places: [string, string | undefined, string | undefined, boolean][] = [
    ["prompt[0].text", exported.prompt?.[0]?.text, prose, prose !== text],
    ["description", exported.description, prose, prose !== text],
    [
      "model.extraBody.config",
      exported.model?.extraBody?.config as string,
      named("config"),
      named("config") !== text,
    ],
    ["bundle.mcpServers[0].args[1]", exported.bundle?.mcpServers?.[0]?.args?.[1], args[1], args[1] !== text],
    ["bundle.mcpServers[0].env.CONFIG", undefined, undefined, named("CONFIG") !== text],
  ];
  for (const [path, got, want, changes] of places) {
    if (want !== undefined && refs(got) !== refs(want))
      fail(`exportSpec's ${path} differs from its text reader`, { text, got, want });
    const hinted = [...flagged].some((p) => p === path || p.startsWith(`${path}`));
    if (hinted !== changes) fail(`findSpecSecrets ${hinted ? "flags" : "misses"} ${path}`, { text, want });
  }
}
