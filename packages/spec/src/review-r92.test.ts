// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { withoutProseSecrets } from "./prose-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { looksLikeKey } from "./secret-signs.js";
import { placedValue } from "./test-support/spec-cases.js";
import type { AgentSpec } from "./types.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// r92b. Found by fuzz/documents.ts (whole pasted documents mixing YAML, .env, TOML, shell lines,
// prose and URLs), each minimised by fast-check:
// 1. A line break did not end a command for the client-password reader: in a script, or a
//    document's lines read as one (an env value, an extraBody string), `mysql -pX` on any line but
//    the first was read as the first line's program's argument, and the password kept in clear.
// 2. In prose, a long flag ending the line before (`srv --verbose`) took the next line's `mysql` for
//    its value, so that line's `-pX` was kept in clear.
// 3. A text starting with a URL whose query or fragment ran to a line break was read as one URL
//    (the URL parser drops line breaks): `https://h/p#x\ntoken=abc` was written `https://h/p#`,
//    every line after the first lost.
// 4. The `Token <value>` key shape ran over a line break: a line ending in the word `token` (a
//    URL's `#token`, "send the token") and a next line starting with 8 such characters
//    (`PORT=8080`) were one key, hidden together wherever key shapes are taken out.
// 5. A `.env` line of one word in a document holding prose (`DB_PASSWORD=p@ss.w0rd!`) was left to the
//    command-line reader, which after an apostrophe (`Don't …`) reads the lines below inside that
//    quote, as text: a value holding code characters was kept in clear.

const PW = "Zq0aaaaaaaA0";

describe("a client's password on a line after the first", () => {
  it.each([
    [`a\nmysql -h db -u root -p${PW} app`, "a\nmysql -h db -u root -p${PASSWORD} app"],
    [`host: db\nmysql -p${PW} app`, "host: db\nmysql -p${PASSWORD} app"],
    [
      `creds: {user: bob}\r\nmysql -u root -p${PW} app`,
      "creds: {user: bob}\r\nmysql -u root -p${PASSWORD} app",
    ],
    [`cd /srv\nredis-cli -a ${PW} ping`, "cd /srv\nredis-cli -a ${REDISCLI_AUTH} ping"],
  ])("is taken out of a document value and a shown script: %j", (value, hidden) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(hidden);
    expect(withoutCommandLineSecrets(value)).toBe(hidden);
    expect(placedValue(value)).toEqual({
      flagged: ["model.extraBody.config", "bundle.mcpServers[0].env.CONFIG"],
      exported: hidden,
    });
  });

  it("a line continued by a backslash is still one command, its program's argument kept", () => {
    // `a \` then `mysql -pX`: one command, `a mysql -pX`, whose `-p` is a's, as on one line.
    expect(withoutCommandLineSecrets(`a \\\nmysql -p${PW}`)).toBe(
      withoutCommandLineSecrets(`a mysql -p${PW}`).replace(" mysql", " \\\nmysql"),
    );
  });

  it("in prose, after a long flag that ends the line before", () => {
    expect(withoutProseSecrets(`srv --verbose\nmysql -h db -u root -p${PW} app`)).toBe(
      "srv --verbose\nmysql -h db -u root -p${PASSWORD} app",
    );
    expect(withoutProseSecrets(`run --x\nredis-cli -a ${PW}`)).toBe("run --x\nredis-cli -a ${REDISCLI_AUTH}");
    // On one line a long flag's value still names no client (`--name mysql`).
    expect(withoutProseSecrets(`--name mysql -p${PW}`)).toBe(`--name mysql -p${PW}`);
    const spec: AgentSpec = { spec: SPEC_TOKEN, prompt: [{ id: "a", text: `srv --verbose\nmysql -p${PW}` }] };
    expect(exportSpec(spec).prompt?.[0]?.text).toBe("srv --verbose\nmysql -p${PASSWORD}");
  });
});

describe("a text starting with a URL, over several lines", () => {
  it.each([
    ["https://example.com/docs/auth#token\nPORT=8080", "https://example.com/docs/auth#token\nPORT=8080"],
    ["https://h/p#x\ntoken=abc", "https://h/p#x\ntoken=abc"],
    ["https://h/p\n?token=abc\nmore", "https://h/p\n?token=abc\nmore"],
    ["https://u:pw9Zq7ab@h/p\nnext line", "https://h/p\nnext line"],
    ["https://h/p\nsee https://u:pw9Zq7ab@h2/p", "https://h/p\nsee https://h2/p"],
    [`https://h/p?q=1\r\nhttps://h/p?api_key=${PW}\r\nend`, "https://h/p?q=1\r\nhttps://h/p\r\nend"],
  ])("keeps every line, each URL read on its own: %j", (value, shown) => {
    expect(withoutSecrets(value)).toBe(shown);
    expect(withoutSecrets(shown)).toBe(shown);
  });

  it("keeps a model's name or a hook's tool over several lines whole", () => {
    const name = "https://example.com/docs/auth#token\nPORT=8080";
    const spec: AgentSpec = { spec: SPEC_TOKEN, name, model: { name } };
    expect(findSpecSecrets(spec)).toEqual([]);
    expect(exportSpec(spec)).toEqual(spec);
  });

  it("an argument over several lines is a script, kept or replaced whole, never cut", () => {
    for (const arg of ["https://h/p#x\ntoken=abc", "https://h/p\nsee docs"]) {
      const [, out] = withoutArgSecrets(["--url", arg]);
      expect(out === arg || out === "${SHELL_COMMAND}").toBe(true);
    }
  });
});

describe("an Authorization scheme's value is on its line", () => {
  it.each(["https://example.com/docs/auth#token\nPORT=8080", "Ask the user for the token\nMODE=production"])(
    "%j is no key, and is kept",
    (text) => {
      expect(looksLikeKey(text)).toBe(false);
      expect(withoutSecrets(text)).toBe(text);
      const spec: AgentSpec = { spec: SPEC_TOKEN, description: text, prompt: [{ id: "a", text }] };
      expect(findSpecSecrets(spec)).toEqual([]);
    },
  );

  it("on one line it still is; prose still reads the word after a scheme, on the next line too", () => {
    expect(looksLikeKey("Bearer\nabcdefgh12345678")).toBe(false);
    expect(withoutProseSecrets("Bearer\nabcdefgh12345678")).toBe("Bearer\n${SECRET}");
    expect(looksLikeKey("Token abcdefgh12345678")).toBe(true);
    expect(withoutSecrets("Authorization: Bearer abcdefgh12345678")).toBe("Authorization: ${SECRET}");
  });
});

describe("a .env line of one word in a document holding prose", () => {
  it.each([
    ["Don't share.\nPASSWORD=Zq0aaaaaaaA0.a_a\nDon't.", "Don't share.\nPASSWORD=${PASSWORD}\nDon't."],
    [
      "Don't commit this.\nDB_PASSWORD=hunter2.prod_9\nThat's all.",
      "Don't commit this.\nDB_PASSWORD=${DB_PASSWORD}\nThat's all.",
    ],
    [
      "Don't share.\nexport API_KEY=Zq0a.b_c # local\nThat's it.",
      "Don't share.\nexport API_KEY=${API_KEY} # local\nThat's it.",
    ],
  ])("is taken out whatever quote a line above leaves open: %j", (value, hidden) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(hidden);
    expect(withoutSecrets(hidden, "CONFIG")).toBe(hidden);
    expect(placedValue(value)).toEqual({
      flagged: ["model.extraBody.config", "bundle.mcpServers[0].env.CONFIG"],
      exported: hidden,
    });
  });

  it.each([
    "Don't share.\nTOKEN_LIMIT=4096\nok",
    "Don't share.\nPASSWORD=${DB_PASSWORD}\nok",
    "Don't share.\nSECRET_KEY=$(openssl rand -hex 32)\nok",
  ])("keeps one that says no credential: %j", (value) => {
    expect(withoutSecrets(value, "CONFIG")).toBe(value);
  });
});
