// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import { SPEC_TOKEN } from "./schema.js";
import {
  expectArgFilledBack,
  expectStringHidden,
  exportedArgs,
  exportedCommand,
  pasted,
  withArgs,
} from "./test-support/spec-cases.js";
import type { AgentSpec } from "./types.js";

// fix169: a URL written after another URL in the same word (a comma-separated server list, a
// `?next=` URL, a `|` or `;` between them) kept its userinfo in clear in the export and the
// display, with no hint: the word's first URL was read to the blank, and the next never was.

/** A spec whose bundled server `srv` is given `value` in its env as `SERVERS` and as a header `X-Servers`. */
const withEnv = (value: string): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: {
    mcpServers: [{ name: "srv", command: "srv", env: { SERVERS: value }, headers: { "X-Servers": value } }],
  },
});

describe("a URL's userinfo after another URL in the same word", () => {
  it.each([
    ["https://h/p,https://u:pw9Secret@h2/p", "https://h/p,https://h2/p"],
    ["https://h/?next=https://u:pw9Secret@h2/p", "https://h/?next=https://h2/p"],
    ["https://a@h/p|https://u:pw9Secret@h2", "https://h/p|https://h2"],
    ["https://a@h/p;https://u:pw9Secret@h2", "https://h/p;https://h2"],
    ["https://u1:pw1Secret@h/p,https://u:pw9Secret@h2/p", "https://h/p,https://h2/p"],
    ["https://h/p,https://h2/p,https://u:pw9Secret@h3/p", "https://h/p,https://h2/p,https://h3/p"],
    ["$1https://h/p,https://u:pw9Secret@h2/p", "$1https://h/p,https://h2/p"],
    ["https://h/?a=1&token=tk9Secret&next=https://u:pw9Secret@h2", "https://h/?a=1&next=https://h2"],
  ])("--url %j is exported and shown as %j, with one hint", (url, safe) => {
    const args = ["--url", url];
    expect(exportedArgs(args)).toEqual(["--url", safe]);
    expect(findSpecSecrets(withArgs(args)).map((hint) => hint.path)).toEqual([
      "bundle.mcpServers[0].args[1]",
    ]);
    expect(withoutArgSecrets(args)).toEqual(["--url", safe]);
    expect(exportedArgs([`--url=${url}`])).toEqual([`--url=${safe}`]);
    // Filled back, byte for byte.
    expectArgFilledBack(args);
    expectStringHidden(url, safe);
  });

  it.each([
    ["srv --url https://h/p,https://u:pw9Secret@h2/p", "srv --url https://h/p,https://h2/p"],
    ["srv --url 'https://h/?next=https://u:pw9Secret@h2/p'", "srv --url 'https://h/?next=https://h2/p'"],
    ["srv --url=https://a@h/p,https://u:pw9Secret@h2", "srv --url=https://h/p,https://h2"],
  ])("the command line %j is exported and shown as %j", (line, safe) => {
    expect(exportedCommand(line)).toBe(safe);
    expect(findSpecSecrets(pasted(line)).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    expect(exportedArgs(["--run", line])).toEqual(["--run", safe]);
  });

  it("hides such a userinfo in an env value and a header, which are hinted", () => {
    const value = "https://h/p,https://u:pw9Secret@h2/p";
    expect(withoutSecrets(value, "SERVERS")).toBe("https://h/p,https://h2/p");
    expect(withoutSecrets(value, "X-Servers")).toBe("https://h/p,https://h2/p");
    expect(withoutSecrets(value, "SERVERS", (text) => text)).toBe(value);
    expect(findSpecSecrets(withEnv(value)).map((hint) => hint.path)).toEqual([
      "bundle.mcpServers[0].env.SERVERS",
      `bundle.mcpServers[0].headers["X-Servers"]`,
    ]);
  });

  it.each([
    // A `scheme://` inside a password is the password's: hidden whole, as before.
    ["https://u:pa://ss@h/p", "https://h/p"],
    // No userinfo anywhere: kept as written, with no hint.
    ["https://h/p,https://h2/p", "https://h/p,https://h2/p"],
    ["https://h:8080/p,https://h2:9090/p", "https://h:8080/p,https://h2:9090/p"],
  ])("%j is exported as %j", (url, safe) => {
    expect(exportedArgs(["--url", url])).toEqual(["--url", safe]);
    expect(withoutCommandLineSecrets(`srv --url ${url}`)).toBe(`srv --url ${safe}`);
  });

  it("never shows a password of a comma-separated list of URLs in the export or the display (property)", () => {
    const password = fc.stringMatching(/^[A-Za-z0-9]{6,12}$/).map((text) => `Q9${text}`);
    const url = fc.record({
      scheme: fc.constantFrom("https", "http", "postgres", "redis", "amqp"),
      user: fc.constantFrom("", "u", "admin"),
      password: fc.option(password, { nil: undefined }),
      host: fc.constantFrom("h", "db.example", "10.0.0.1:5432", "h2:8080"),
      path: fc.constantFrom("", "/", "/p", "/db?sslmode=require", "/?next=x"),
    });
    const render = (part: { scheme: string; user: string; password?: string; host: string; path: string }) =>
      `${part.scheme}://${part.password === undefined ? "" : `${part.user}:${part.password}@`}${part.host}${part.path}`;
    fc.assert(
      fc.property(
        fc.array(url, { minLength: 1, maxLength: 5 }),
        fc.constantFrom(",", ";", "|", ",,"),
        (parts, join) => {
          const secrets = parts.flatMap((part) => (part.password === undefined ? [] : [part.password]));
          const word = parts.map(render).join(join);
          const shown = [
            JSON.stringify(exportedArgs(["--url", word])),
            JSON.stringify(withoutArgSecrets(["--url", word])),
            exportedCommand(`srv --url '${word}'`) ?? "",
            withoutCommandLineSecrets(`srv --url '${word}'`),
            withoutSecrets(word),
          ];
          for (const text of shown) for (const secret of secrets) expect(text).not.toContain(secret);
          if (secrets.length > 0)
            expect(findSpecSecrets(withArgs(["--url", word])).length).toBeGreaterThan(0);
          expect(withoutArgSecrets(["--url", word], (text) => text)).toEqual(["--url", word]);
          expect(withoutCommandLineSecrets(`srv --url '${word}'`, (text) => text)).toBe(
            `srv --url '${word}'`,
          );
        },
      ),
    );
  });
});
