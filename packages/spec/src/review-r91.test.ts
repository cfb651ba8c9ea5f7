// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { dataDocumentSecrets } from "./data-documents.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { eightAgainstOne } from "./test-support/linear-ratio.js";
import { placedValue } from "./test-support/spec-cases.js";
import type { AgentSpec } from "./types.js";

// r91d. A whole YAML, `.env` or TOML document in one env variable or `extraBody` string had its
// one-line `name: value` pairs hidden (r90e), but three shapes still showed the credential in clear:
// 1. a YAML block scalar under a telling name (`password: |`, `>-`, `|2`): the lines below it;
// 2. a value of several bare words (`secret: correct horse battery staple`, `.env`'s `API_KEY=abc
//    def` as dotenv reads it, where `def` was left; an INI or TOML `token = a b`, not read at all);
// 3. a pair inside a one-line flow mapping (`{user: bob, password: X}`, `env: {API_KEY: X, …}`, a
//    JSON object on one line of a longer document).
// Each is now read; prose (a line of several words that is no pair, a sentence) is kept as written.
// And in a document, an apostrophe (`hint: the dog's name`) was a quote to the command-line reader,
// open to the end of the text: words of the lines after it were hidden (`token = later`).
// 4. `withoutArgSecrets`, `findSpecSecrets` and `exportSpec` kept an argument that is one YAML flow
//    mapping in clear (`--config '{user: bob, password: X}'`; a JSON object was read).

const RUNS = Number(process.env.R91_SPEC_RUNS ?? 300);
const SEED = process.env.R91_SPEC_SEED ? { seed: Number(process.env.R91_SPEC_SEED) } : {};

describe("a document's credential in a block scalar, several words or a flow mapping is taken out", () => {
  it.each([
    // 1. Block scalars: the lines below the header, more indented than its name, written as one line.
    ["password: |\n  hunter2xyz\nhost: db", "password: |\n  ${PASSWORD}\nhost: db"],
    [
      "db:\n  password: >-\n    Zq7 first\n\n    Zq7 second\n  host: db\n",
      "db:\n  password: >-\n    ${PASSWORD}\n  host: db\n",
    ],
    ["password: |2\n    hunter2xyz\n", "password: |2\n    ${PASSWORD}\n"],
    [
      "- name: a\n  private_key: | # the deploy key\n    -----BEGIN KEY-----\n    MIIEow\n    -----END KEY-----\n- name: b",
      "- name: a\n  private_key: | # the deploy key\n    ${PRIVATE_KEY}\n- name: b",
    ],
    ["a: 1\r\ntoken: |\r\n  Zq7pw9ab\r\nb: 2", "a: 1\r\ntoken: |\r\n  ${TOKEN}\r\nb: 2"],
    // 2. Several bare words, in a document whose every line is data.
    ["a: 1\nsecret: correct horse battery staple", "a: 1\nsecret: ${SECRET}"],
    ["MODE=x\nAPI_KEY=abc def", "MODE=x\nAPI_KEY=${API_KEY}"],
    ["# .env\nexport DB_PASSWORD=two words # local\n", "# .env\nexport DB_PASSWORD=${DB_PASSWORD} # local\n"],
    ["x = 1\ntoken = a b", "x = 1\ntoken = ${TOKEN}"],
    [
      '[db]\nhost = db\npassword = S3cr3t\n[api]\nkey = "q w"',
      '[db]\nhost = db\npassword = ${PASSWORD}\n[api]\nkey = "${KEY}"',
    ],
    // 3. One-line flow mappings, nested ones and JSON objects included.
    ["{user: bob, password: hunter2}", "{user: bob, password: ${PASSWORD}}"],
    ["a: 1\nenv: {API_KEY: sk-abc, MODE: x}", "a: 1\nenv: {API_KEY: ${API_KEY}, MODE: x}"],
    ["users:\n  - {name: me, token: Zq7 pw9ab}\n", "users:\n  - {name: me, token: ${TOKEN}}\n"],
    ['a: 1\n{"user": "bob", "password": "hunter2"}', 'a: 1\n{"user": "bob", "password": "${PASSWORD}"}'],
    [
      '{\n  "env": {"API_KEY": "x9secret", "MODE": "y"},\n  "n": 1\n}',
      '{\n  "env": {"API_KEY": "${API_KEY}", "MODE": "y"},\n  "n": 1\n}',
    ],
    [
      "x: {a: {b: [1, 2], secret: hunter2}, k: ${K}}\ny: 1",
      "x: {a: {b: [1, 2], secret: ${SECRET}}, k: ${K}}\ny: 1",
    ],
  ])("%j → %j", (value, hidden) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(hidden);
    // Read again, it comes back as it is.
    expect(withoutSecrets(hidden, "CONFIG")).toBe(hidden);
    expect(placedValue(value)).toEqual({
      flagged: ["model.extraBody.config", "bundle.mcpServers[0].env.CONFIG"],
      exported: hidden,
    });
  });

  it("a hide of the caller's is given a block's lines as its value, at its indentation", () => {
    const asked: [string, string | undefined][] = [];
    const shown = withoutSecrets("key: |\n  line one\n\n  line two\nb: 1", "CONFIG", (secret, name) => {
      asked.push([secret, name]);
      return "(hidden)";
    });
    expect(shown).toBe("key: |\n  (hidden)\nb: 1");
    expect(asked).toEqual([["line one\n\nline two", "key"]]);
  });

  it.each([
    // Prose: a sentence, a line that is no pair beside the pairs, a markdown bullet of several words.
    "the password: is on the card",
    "a\nthe password: is on the card",
    "Password: ask the user for it.\nThen go on.",
    "Role: reviewer\nPassword: ask the user for it.",
    "Rules:\n- Be kind\n- password: ask the user",
    "a: 1\nsecret: correct horse battery staple\nThen go on.",
    // A setting about a credential, a program, a reference, words of no value.
    "password_hint: the name of the dog\nx: 1",
    // An apostrophe is no quote in a document: the command reader read one open to the end of the text.
    "password_hint: the dog's name\ndescription: |\n  Never share the password: ask first.\n  token = later",
    "import os\nsecret = os.urandom(32)",
    "KEY_ID=a1\nMODE=x",
    "TOKEN=$(cat /run/token)\nMODE=x",
    "password: ${DB_PASSWORD}\ntoken: null\napi_key: <your key>",
    "env: {API_KEY: ${API_KEY}, MODE: x}",
    "password: !secret db_password\nb: 1",
    "password: # set later\nb: 1",
    // A block under a name that tells nothing, however its lines read.
    "notes: |\n  password: is asked later\n  token = ask\nmax_tokens: 800",
    "limits: {max_tokens: 800, tokens: [a, b]}",
  ])("keeps %j as written", (value) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(value);
    expect(placedValue(value)).toEqual({ flagged: [], exported: value });
  });
});

describe("an argument that is one YAML flow mapping (no JSON) is read as such a line is", () => {
  it.each([
    [
      ["--config", "{user: bob, password: hunter2}"],
      ["--config", "{user: bob, password: ${PASSWORD}}"],
    ],
    [["{env: {API_KEY: sk-abc, MODE: x}}"], ["{env: {API_KEY: ${API_KEY}, MODE: x}}"]],
  ])("%j → %j", (args, hidden) => {
    expect(withoutArgSecrets(args)).toEqual(hidden);
    expect(withoutArgSecrets(hidden)).toEqual(hidden);
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: { mcpServers: [{ name: "srv", command: "srv", args }] },
    };
    expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual([
      `bundle.mcpServers[0].args[${args.length - 1}]`,
    ]);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual(hidden);
  });

  it.each([["{a: 1, tags: [x, y]}"], ["{password: ${DB_PASSWORD}}"], ['{"password": "${DB_PASSWORD}"}']])(
    "keeps %j as written",
    (arg) => {
      expect(withoutArgSecrets([arg])).toEqual([arg]);
    },
  );
});

// Random documents of each kind: every secret's words placed in each shape are taken out; a
// document of the same kinds of lines holding no secret is kept byte for byte.
describe("random YAML, .env and TOML documents (property)", () => {
  const word = fc.stringMatching(/^[a-z]{2}[0-9][A-Za-z0-9]{4}[0-9]$/).map((tail) => `Qz${tail}`);
  const words = fc.array(word, { minLength: 1, maxLength: 3 }).map((list) => list.join(" "));
  const yamlSecret = (s: string, one: string) =>
    fc.constantFrom(
      `password: ${one}`,
      `password: |\n  ${s}\n  ${one}`,
      `db:\n  api_key: >-\n    ${s}\n\n    ${one}\n  host: db`,
      `- name: x\n  token: |2\n      ${s}`,
      `secret: ${s}`,
      `creds: {user: bob, password: ${s}}`,
      `- {token: ${one}, mode: x}`,
      `env: {"API_KEY": "${s}", "MODE": "x"}`,
      `"password": "${s}",`,
    );
  const envSecret = (s: string, one: string) =>
    fc.constantFrom(`API_KEY=${s}`, `export DB_PASSWORD=${s}`, `TOKEN="${s}"`, `GITHUB_TOKEN=${one} # ci`);
  const tomlSecret = (s: string, one: string) =>
    fc.constantFrom(`token = "${s}"`, `password = ${s}`, `secret = '${s}'`, `api_key = ${one}`);
  const yamlPlain = fc.constantFrom(
    "host: db",
    "port: 5432",
    'name: "my app"',
    "# a comment",
    "items:\n  - a\n  - b",
    "description: |\n  Never share the password: ask first.\n  token = later",
    "model: qwen3-32b",
    "max_tokens: 800",
    "password: ${DB_PASSWORD}",
    "token: null",
    "api_key: <your key>",
    "password_hint: the name of the dog",
    "hint: the dog's name",
    "limits: {max_tokens: 800, tags: [a, b]}",
    "---",
    "",
  );
  const envPlain = fc.constantFrom(
    "NOTE=it's local",
    "MODE=dev",
    "PORT=8080",
    "# local only",
    "export PATH_PREFIX=/opt",
    "API_KEY=${API_KEY}",
    "",
  );
  const tomlPlain = fc.constantFrom(
    "[server]",
    'host = "db"',
    "port = 5432",
    "# tuning",
    "max_tokens = 800",
    'token = "${TOKEN}"',
    "[[items]]",
    "",
  );
  const kinds = [
    { plain: yamlPlain, secret: yamlSecret },
    { plain: envPlain, secret: envSecret },
    { plain: tomlPlain, secret: tomlSecret },
  ];
  const kind = fc.constantFrom(...kinds);
  const crlf = fc.boolean();

  it("no word of a secret survives, whatever shape holds it, and the rest is kept", () => {
    fc.assert(
      fc.property(
        kind.chain(({ plain, secret }) =>
          fc.tuple(
            fc.array(plain, { maxLength: 4 }),
            fc.array(
              fc.tuple(words, word).chain(([s, one]) => secret(s, one).map((line) => ({ line, s, one }))),
              {
                minLength: 1,
                maxLength: 3,
              },
            ),
            fc.array(plain, { maxLength: 4 }),
          ),
        ),
        crlf,
        ([before, secrets, after], windows) => {
          const lines = [...before, ...secrets.map(({ line }) => line), ...after];
          const value = windows ? lines.join("\n").replace(/\n/g, "\r\n") : lines.join("\n");
          const shown = withoutSecrets(value, "CONFIG");
          for (const { s, one } of secrets)
            for (const part of [...s.split(" "), one]) expect(shown).not.toContain(part);
          expect(withoutSecrets(shown, "CONFIG")).toBe(shown);
          // The plain lines around the secrets are kept as written.
          const prefix = before.join("\n");
          expect(shown.startsWith(windows ? prefix.replace(/\n/g, "\r\n") : prefix)).toBe(true);
          expect(placedValue(value).flagged).toHaveLength(2);
        },
      ),
      propertyRuns(RUNS, { ...SEED }),
    );
  });

  it("a document holding no secret comes back byte for byte, and is not flagged", () => {
    fc.assert(
      fc.property(
        // Two lines at least: one line alone is read as a header's value is (`token: null` hidden whole).
        kind.chain(({ plain }) => fc.array(plain, { minLength: 2, maxLength: 8 })),
        crlf,
        (lines, windows) => {
          const value = lines.join(windows ? "\r\n" : "\n");
          expect(withoutSecrets(value, "CONFIG")).toBe(value);
          expect(placedValue(value).flagged).toEqual([]);
        },
      ),
      propertyRuns(RUNS, { ...SEED }),
    );
  });

  it("prose beside telling pairs is kept byte for byte", () => {
    const prose = fc.constantFrom(
      "Then go on.",
      "Never reveal the password.",
      "- Be kind to the user",
      "The token: ask for it later",
      "Answer briefly and cite your sources.",
    );
    const pair = fc.constantFrom(
      "Password: ask the user for it.",
      "secret: keep it to yourself!",
      "token: ask first?",
      "host: db",
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(prose, pair), { minLength: 1, maxLength: 6 }),
        prose,
        (lines, sentence) => {
          const value = [...lines, sentence].join("\n");
          expect(withoutSecrets(value, "CONFIG")).toBe(value);
        },
      ),
      propertyRuns(RUNS, { ...SEED }),
    );
  });
});

describe("hostile documents (property)", () => {
  // The new shapes' characters glued in any order: a block header, braces and brackets left open
  // or closed, quotes, separators, comments, indentation, references. Read again, the output comes
  // back as it is; the document reader alone finds nothing more in what it wrote.
  const fragment = fc.constantFrom(
    "password: ",
    "secret: ",
    "API_KEY=",
    "token = ",
    "name: ",
    "|",
    ">-",
    "|2",
    "\n",
    "\n  ",
    "\r\n",
    "{",
    "}",
    "[",
    "]",
    ", ",
    ": ",
    "- ",
    "#",
    " # c",
    '"',
    "'",
    "${X}",
    "${",
    "Zq7pw9ab",
    "a b",
    ".",
    "export ",
    "$(",
  );
  it("f(f(x)) = f(x), and the document reader's own output holds nothing more for it", () => {
    fc.assert(
      fc.property(fc.array(fragment, { minLength: 1, maxLength: 16 }), (parts) => {
        const value = parts.join("");
        const read = dataDocumentSecrets(value, () => "${R}");
        expect(dataDocumentSecrets(read ?? value, () => "${R}")).toBeUndefined();
        const once = withoutSecrets(value, "CONFIG");
        expect(withoutSecrets(once, "CONFIG")).toBe(once);
        const args = withoutArgSecrets(["--config", value]);
        expect(withoutArgSecrets(args)).toEqual(args);
      }),
      propertyRuns(RUNS * 3, { ...SEED }),
    );
  });
});

describe("the document reader stays linear", () => {
  it("one document 8 times as long costs about what 8 documents do (ratio of the same run)", () => {
    // Each shape of this round, and flow mappings nested 20 deep; as review-r90's
    // check: one reading of 8n copies against eight of n, interleaved, best of five.
    const fragment =
      "a: 1\npassword: |\n  hunter2x\n  more\nenv: {API_KEY: sk-1, MODE: x, n: {token: a b}}\n" +
      "secret: correct horse battery\nAPI_KEY=abc def\ntoken = a b\n" +
      `deep: ${"{a: ".repeat(20)}1${"}".repeat(20)}\n- {password: "x,y", k: \${K}}\n`;
    const short = fragment.repeat(10);
    const long = fragment.repeat(80);
    const ratio = eightAgainstOne(
      (value) => {
        withoutSecrets(value, "CONFIG");
        withoutArgSecrets(["--config", value]);
      },
      short,
      long,
    );
    expect(ratio).toBeLessThan(3);
    // And what it wrote: every secret of the long one taken out.
    expect(withoutSecrets(long, "CONFIG")).not.toMatch(/hunter2x|sk-1|correct|abc def|= a b|x,y/);
  }, 60_000);
});
