// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { withoutProseSecrets } from "./prose-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { timesAgainstOne } from "./test-support/linear-ratio.js";
import { placedValue } from "./test-support/spec-cases.js";
import type { AgentSpec } from "./types.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// r92g, reviewing r92b (a line break ends a command for the client-password reader):
// 1. A backslash then a Windows line end (`\` `\r\n`) no longer continued the command: its `\n`
//    was read as a break of its own, so `mysql -u root \` then `-pX` kept `-pX` in clear in a
//    document value and a shown script (hidden before r92b). Prose never read the continuation:
//    `-pX` on the continued line was kept there with `\n` too.
// 2. In a document holding prose, an apostrophe inside a word (`Don't`) opened a shell quote that
//    ran over the lines below; that text, a quote left open, was read again as data, so
//    `Primary key: user_id123` lost its value and `The token: ask for it later` its `ask`.
// 3. A markdown fence's backticks opened a substitution running to the next fence, with the same
//    result for the lines of the code block.

const PW = "Zq0aaaaaaaA0";

/** A prompt part's text as the export writes it, and whether it is flagged. */
function asPrompt(text: string): { flagged: boolean; exported: string | undefined } {
  const spec: AgentSpec = { spec: SPEC_TOKEN, prompt: [{ id: "a", text }] };
  return { flagged: findSpecSecrets(spec).length > 0, exported: exportSpec(spec).prompt?.[0]?.text };
}

describe("a command continued by a backslash before a line break", () => {
  it.each([
    [`mysql -u root \\\r\n-p${PW} app`, "mysql -u root \\\r\n-p${PASSWORD} app"],
    [`mysql -u root \\\r\n  -p${PW} app\r\nls`, "mysql -u root \\\r\n  -p${PASSWORD} app\r\nls"],
    [`host: db\r\nmysql -u root \\\r\n-p${PW}`, "host: db\r\nmysql -u root \\\r\n-p${PASSWORD}"],
  ])("with Windows line ends is one command, its password taken out: %j", (value, hidden) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(hidden);
    expect(withoutCommandLineSecrets(value)).toBe(hidden);
    expect(placedValue(value)).toEqual({
      flagged: ["model.extraBody.config", "bundle.mcpServers[0].env.CONFIG"],
      exported: hidden,
    });
  });

  it.each([
    [`mysql -u root \\\n-p${PW} app`, "mysql -u root \\\n-p${PASSWORD} app"],
    [`mysql -u root \\\r\n-p${PW} app`, "mysql -u root \\\r\n-p${PASSWORD} app"],
  ])("is one command in prose too: %j", (text, hidden) => {
    expect(withoutProseSecrets(text)).toBe(hidden);
    expect(asPrompt(text)).toEqual({ flagged: true, exported: hidden });
  });

  it("a line break with no backslash still ends the command", () => {
    expect(withoutCommandLineSecrets(`a\r\nmysql -p${PW}`)).toBe("a\r\nmysql -p${PASSWORD}");
    // `a \\` is a backslash written, then the line ends: `mysql` starts a command of its own.
    expect(withoutCommandLineSecrets(`a \\\\\r\nmysql -p${PW}`)).toBe("a \\\\\r\nmysql -p${PASSWORD}");
    expect(withoutProseSecrets(`srv --verbose\r\nmysql -p${PW}`)).toBe(
      "srv --verbose\r\nmysql -p${PASSWORD}",
    );
  });
});

// Each a document of prose holding no credential: it comes back as written everywhere.
const CLEAN = [
  "Don't commit this.\nPrimary key: user_id123\nThat's all.",
  "Don't do it.\nThe token: ask for it later\nok",
  "It's the admin's login.\r\nThe token: ask for it later\r\nDon't.",
  "Notes:\n```\nPrimary key: user_id123\n```\nok",
  "Setup:\n```yaml\nThe token: ask for it later\n```\nThen go on.",
  "Setup:\r\n  ```bash\r\nThe token: ask for it later\r\n  ```\r\n",
  "```\nPrimary key: user_id123",
];

describe("an apostrophe inside a word, and a markdown fence, in a document holding prose", () => {
  it.each(CLEAN)("open nothing over the lines below: %j is kept", (value) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(value);
    expect(withoutCommandLineSecrets(value)).toBe(value);
    expect(withoutProseSecrets(value)).toBe(value);
    expect(placedValue(value)).toEqual({ flagged: [], exported: value });
    expect(asPrompt(value)).toEqual({ flagged: false, exported: value });
  });

  it.each([
    [
      "Don't commit this.\nsrv --password p@ss.w0rd! --port 8080\nThat's all.",
      "Don't commit this.\nsrv --password ${PASSWORD} --port 8080\nThat's all.",
    ],
    [
      "Run it:\n```bash\nmysql -u root -pp@ss.w0rd! app\n```\nDon't share it.",
      "Run it:\n```bash\nmysql -u root -p${PASSWORD} app\n```\nDon't share it.",
    ],
    [
      "Config:\r\n```\r\nDB_PASSWORD=p@ss.w0rd!\r\n```\r\n",
      "Config:\r\n```\r\nDB_PASSWORD=${DB_PASSWORD}\r\n```\r\n",
    ],
  ])("the lines after them read as the commands and data they are: %j", (value, hidden) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(hidden);
    expect(placedValue(value)).toEqual({
      flagged: ["model.extraBody.config", "bundle.mcpServers[0].env.CONFIG"],
      exported: hidden,
    });
  });

  it("a quote a shell closes is still read as one", () => {
    // Closed on its line: `'t x, it'` is a quote, as bash reads it.
    expect(withoutCommandLineSecrets(`echo don't x, it's; mysql -p${PW}`)).toBe(
      "echo don't x, it's; mysql -p${PASSWORD}",
    );
    // Opened after a blank, a quote over several lines is a shell's string, read as before.
    expect(withoutCommandLineSecrets(`echo 'a\nsrv --password ${PW}\n'`)).toBe(
      "echo 'a\nsrv --password ${PASSWORD}\n'",
    );
    // Backticks in a line are a substitution, as before.
    expect(withoutCommandLineSecrets(`echo \`get --password ${PW}\``)).toBe(
      "echo `get --password ${PASSWORD}`",
    );
  });

  it("reads a document of many such lines in linear time", () => {
    // 64 times the text read once against the text read 64 times, on the CPU clock, each side tens
    // of milliseconds: near 1 when linear (measured 2.1 and 1.5), near 64 when quadratic; bound 16.
    // Eight times the text under a bound of 4 read 1.85 idle, within a loaded host's drift of the
    // bound. With the apostrophe's look-ahead to the line's end taken afresh at each apostrophe
    // (shell-words' breakAhead not reused) the line of apostrophes reads 42. Six seconds idle: the
    // long line is 128,000 characters; hence 60 s.
    const lines = ["Don't stop.", "```", "The token: ask for it later", "It's ok ``` here", "x'y 'z"];
    // The first long side is the document eight times 40 lines made before.
    const short = lines.join("\n").repeat(5);
    const read = (value: string) => {
      withoutSecrets(value, "CONFIG");
      withoutCommandLineSecrets(value);
    };
    const r1 = timesAgainstOne(read, short, short.repeat(64), 64);
    // One line of apostrophes, none closed on it: each looks ahead once.
    const r2 = timesAgainstOne(read, "it's ".repeat(400), "it's ".repeat(400 * 64), 64);
    expect(r1).toBeLessThan(16);
    expect(r2).toBeLessThan(16);
  }, 60_000);
});
