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
  expectKept,
  expectShownAndExported,
  exportedArgs,
  exportedCommand,
  outsideReferences,
} from "./test-support/spec-cases.js";

// fix175: two export leaks fix173 found.
// 1. A `${…}` that is no reference a reader fills (`${-  %VQ}`, `${X Y}`: a shell refuses both as a
//    bad substitution, tools-mcp fills only `${NAME}` and `${NAME:-word}`) counted as one, so a URL
//    whose telling value was all such text carried no sign: `["--url", "https://h/p?token=${-  %VQ}"]`
//    was read as a line, cut at the blank and exported as `https://h/p  %VQ}`; pasted, `srv --token
//    "${X Y}"` was exported as written. Its text is now literal: hidden in both views (it runs nothing).
// 2. After a flag that takes a value, a value starting with `-` was read as a flag and kept in clear
//    (`--token -VJJ`); it is now the flag's value unless it is a flag of its own shape (`--verbose`,
//    `-v`, `--`, `-`).

describe("a `${…}` no reader fills is literal text", () => {
  it("in a URL's telling query value given as an argument", () => {
    expectArgs(
      ["--url", "https://h/p?token=${-  %VQ}"],
      ["--url", "https://h/p?token=•"],
      ["--url", "https://h/p"],
    );
    expectArgs(
      ["--url", "https://h/p?token=${X Y}&b=2"],
      ["--url", "https://h/p?token=•&b=2"],
      ["--url", "https://h/p?b=2"],
    );
    // No shell reads an argument: `${-%VQ}` is no `${NAME}` tools-mcp fills either.
    expectArgs(
      ["--url", "https://h/p?token=${-%VQ}"],
      ["--url", "https://h/p?token=•"],
      ["--url", "https://h/p"],
    );
  });

  it("in a pasted line's URL, quoted or not", () => {
    for (const line of ['srv --url "https://h/p?token=${-  %VQ}"', "srv --url https://h/p?token=${-  %VQ}"]) {
      expectFilledBack(line);
      expect(exportedCommand(line)).not.toContain("VQ");
      expect(withoutCommandLineSecrets(line)).not.toContain("VQ");
    }
    expectShownAndExported(
      'srv --url "https://h/p?token=${-  %VQ}"',
      'srv --url "https://h/p?token="',
      'srv --url "https://h/p"',
    );
  });

  it("after a telling flag in a pasted line, alone or beside a payload (kept in sight)", () => {
    expectShownAndExported('srv --token "${X Y}"', 'srv --token "${TOKEN}"');
    expectShownAndExported("srv --token ${-  %VQ}", "srv --token ${TOKEN}");
    expectShownAndExported(
      'srv --token "${X Y}$(curl e|sh)"',
      'srv --token "${TOKEN}$(curl e|sh)"',
      'srv --token "${TOKEN}"',
    );
    expectFilledBack('srv --token "${X Y}$(curl e|sh)"');
  });

  it("a reference, and a parameter expansion a shell runs, stay in sight in the display", () => {
    expectKept('srv --url "https://h/p?token=${TOKEN}"');
    expectKept("srv --url https://h/p?token=${TOKEN:-}");
    expectKept('srv --token "${X%.*}"');
    expectKept("srv --token ${1}");
    expectKept("srv --token ${#X}");
    // The shell runs `${-%VQ}` (`$-` without a suffix): shown; the export takes the value out.
    expectShownAndExported(
      "srv --url https://h/p?token=${-%VQ}",
      "srv --url https://h/p?token=${-%VQ}",
      "srv --url https://h/p",
    );
  });

  it("property: a telling value made of literal text, braces, blanks and `-`, in an argument or a pasted line", () => {
    const literal = fc.stringMatching(/^[JVQ]{1,3}$/);
    const glue = fc.constantFrom("${", "}", " ", "  ", "-", "%", ":-", "X", "${X}", "/");
    const value = fc
      .array(fc.oneof(literal, glue), { minLength: 1, maxLength: 8 })
      .map((parts) => parts.join(""))
      // A `${NAME-word}` / `${NAME:-word}` is a reference a reader fills, its default word literal
      // text (`${V-V}`: hidden in a URL's telling query value too since fix176).
      .filter((text) => /[JVQ]/.test(text) && !text.startsWith("-"));
    const args = fc.constantFrom(
      (v: string) => ["--url", `https://h/p?token=${v}`],
      (v: string) => ["--url", `https://h/p?b=1&api_key=${v}&c=2`],
      (v: string) => ["-e", `DB_URL=https://h/p?token=${v}`],
      (v: string) => ["--token", v],
    );
    fc.assert(
      fc.property(args, value, (make, v) => {
        const made = make(v);
        for (const arg of exportedArgs(made) ?? []) expect(outsideReferences(arg)).not.toMatch(/[JVQ]/);
        for (const arg of withoutArgSecrets(made, () => "•"))
          expect(outsideReferences(arg)).not.toMatch(/[JVQ]/);
        expectArgFilledBack(made);
      }),
      propertyRuns(300),
    );
    // Pasted, a blank stands only inside a closed `${…}` (one elsewhere in a quoted URL's value, or in
    // a `${` left open, cuts the URL there as before: `srv --url "https://h/p?token=a b"`), and no
    // `${X}` (a short label after one, `${X}-Q`, is read as run-time text by design).
    const lineValue = fc
      .array(fc.oneof(literal, fc.constantFrom("${-  %J}", "${X Y}", "${V Q}", "-", "%", ":-", "X", "/")), {
        minLength: 1,
        maxLength: 8,
      })
      .map((parts) => parts.join(""))
      .filter((text) => /[JVQ]/.test(text) && !text.startsWith("-"));
    const lines = fc.constantFrom(
      (v: string) => `srv --url "https://h/p?token=${v}"`,
      (v: string) => `srv --token "${v}"`,
    );
    fc.assert(
      fc.property(lines, lineValue, (make, v) => {
        const line = make(v);
        expect(outsideReferences(exportedCommand(line) ?? "")).not.toMatch(/[JVQ]/);
        expectFilledBack(line);
      }),
      propertyRuns(300),
    );
  });
});

describe("after a flag that takes a value, a word starting with `-` is that value", () => {
  it("given as arguments", () => {
    expectArgs(["--token", "-VJJ"], ["--token", "•"], ["--token", "${TOKEN}"]);
    expectArgs(["--api-key", "-sk-abc"], ["--api-key", "•"], ["--api-key", "${API_KEY}"]);
    expectArgs(
      ["--password", "--Zq9", "--verbose"],
      ["--password", "•", "--verbose"],
      ["--password", "${PASSWORD}", "--verbose"],
    );
  });

  it("in a pasted line", () => {
    expectShownAndExported("srv --token -VJJ", "srv --token ${TOKEN}");
    expectShownAndExported('srv --api-key "-sk-abc" --verbose', 'srv --api-key "${API_KEY}" --verbose');
    expectFilledBack("srv --token -VJJ --verbose");
  });

  it("unless it is a flag of its own: a long flag of small words, a lone short flag, `--` or `-`", () => {
    for (const flag of ["--verbose", "--log-level", "--log-level=debug", "-v"]) {
      expectArgs(["--token", flag], ["--token", flag], ["--token", flag]);
      expectKept(`srv --token ${flag} x`);
    }
    // Given as an argument, `--` and `-` were the flag's value before (no flag), and still are.
    for (const flag of ["--", "-"]) expectKept(`srv --token ${flag} x`);
  });

  it("property: a word of `-` and literal text after a telling flag is hidden in both views and filled back", () => {
    const flag = fc.constantFrom("--token", "--api-key", "--password", "--secret");
    const value = fc
      .array(fc.constantFrom("-", "V", "J", "Q", "sk", "9", "_"), { minLength: 1, maxLength: 7 })
      .map((parts) => `-${parts.join("")}`)
      // Not a flag of its own (a lone short flag, a long flag of small words: `--sk9`).
      .filter((text) => /[JVQ9]/.test(text) && !/^(?:-[A-Za-z]|--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)$/.test(text));
    fc.assert(
      fc.property(flag, value, (name, v) => {
        const args = [name, v, "--verbose"];
        for (const arg of exportedArgs(args) ?? []) expect(arg).not.toContain(v);
        expect(withoutArgSecrets(args, () => "•")).toEqual([name, "•", "--verbose"]);
        expectArgFilledBack(args);
        const line = `srv ${name} ${v} --verbose`;
        expect(exportedCommand(line)).not.toContain(v);
        expect(withoutCommandLineSecrets(line)).not.toContain(v);
        expectFilledBack(line);
      }),
      propertyRuns(300),
    );
  });
});

// 3. A `sh -c` script read as one connection string (its `;`): a telling pair's value ran over the
//    script's operators and a `$(…)` escaped for the line's shell (`\$(…)`), which the shell it is
//    given to runs, and the display hid that payload: `sh -c "srv --api-key=Zq9 | tee \$(id); echo
//    \$(id)"` was shown `sh -c "srv --api-key=${API_KEY}; echo \$(id)"`. The text beside it is hidden,
//    the payload shown.
describe("a `sh -c` script keeps each payload in sight after a hidden value", () => {
  it("a `\\$(…)` in a pair's value read in the script's `;`-separated text", () => {
    expect(withoutCommandLineSecrets('sh -c "srv --api-key=Zq9 | tee \\$(id); echo \\$(id)"')).toBe(
      'sh -c "srv --api-key=${SRV_API_KEY}\\$(id); echo \\$(id)"',
    );
    expect(withoutCommandLineSecrets('sh -c "srv --api-key=Zq9 | tee \\`id\\` x;"')).toBe(
      'sh -c "srv --api-key=${SRV_API_KEY}\\`id\\`${SRV_API_KEY};"',
    );
    expectFilledBack('sh -c "srv --api-key=Zq9 | tee \\$(id); echo \\$(id)"');
    // A `${…}` whose word says something is hidden with the value, as before; one of run-time parts only is shown.
    expect(withoutCommandLineSecrets('sh -c "srv --api-key=Zq9 | tee \\${X:-Q9secret};"')).not.toContain(
      "Q9secret",
    );
    expect(withoutCommandLineSecrets('sh -c "srv --api-key=Zq9 | tee \\${X:-\\$(id)};"')).toBe(
      'sh -c "srv --api-key=${SRV_API_KEY}\\${X:-\\$(id)};"',
    );
  });

  it("property: pasted in either quote, or the script alone (as the display shows an argument)", () => {
    const shell = fc.constantFrom("sh -c", "bash -c", "bash -lc");
    const value = fc.constantFrom(
      "--token X",
      "--token Zq9secret",
      "--api-key=Zq9",
      "-e GITHUB_TOKEN=Zq9",
      "--url https://h/p?token=Zq9",
      "--token -VJJ",
      "--token ${X Y}",
    );
    const payload = fc.constantFrom("$(curl e|sh)", "`curl e|sh`", "${X:-$(curl e|sh)}", "\\$(curl e|sh)");
    const glue = fc.constantFrom("; echo ", " && echo ", " ", "", " | tee ", "\n echo ", "; X=", " | tee a ");
    const count = (text: string) => text.split("curl e|sh").length - 1;
    fc.assert(
      fc.property(shell, value, payload, glue, fc.boolean(), (sh, v, run, sep, double) => {
        const script = `srv ${v}${sep}${run}; echo ${run}`;
        // In '…' a `\$(…)` is no run-time part to either shell (the one given it refuses the `(`).
        if (!double && (script.includes("'") || run.startsWith("\\"))) return;
        const line = double ? `${sh} "${script.replace(/"/g, '\\"')}"` : `${sh} '${script}'`;
        expect(count(withoutCommandLineSecrets(line))).toBe(count(line));
        // Given as an argument, the script is shown as a command line (the playground's `shownServerArgs`).
        expect(count(withoutCommandLineSecrets(script))).toBe(count(script));
      }),
      propertyRuns(300),
    );
  });
});

// 4. Found on the way: pasted, a quoted word that is one URL holding a blank in a telling query value
//    was cut at the blank as fix173 found for an argument: `srv --url "https://h/p?token=a b"` was
//    shown `…?token=<a> b` and exported as `srv --url "https://h/p b"`, `b` in clear in both views
//    (`?token= Zq9secret` all of it). Such a word (no quote or run-time part in it), the URL at its
//    start or after a `NAME=`, `--flag=` or header name, is one value now.
describe("a quoted word that is one URL holding a blank is one value", () => {
  it.each([
    ['srv --url "https://h/p?token=a b"', 'srv --url "https://h/p?token=•"', 'srv --url "https://h/p"'],
    [
      'srv --url "https://h/p?token= Zq9secret"',
      'srv --url "https://h/p?token=•"',
      'srv --url "https://h/p"',
    ],
    ['srv "https://h/p?token=Zq9 secret&b=2"', 'srv "https://h/p?token=•&b=2"', 'srv "https://h/p?b=2"'],
    ["srv --url https://h/p?token=a\\ b", "srv --url https://h/p?token=•", "srv --url https://h/p"],
    [
      'srv -e "DB_URL=https://h/p?token=a b"',
      'srv -e "DB_URL=https://h/p?token=•"',
      'srv -e "DB_URL=https://h/p"',
    ],
    ['srv --url="https://h/p?token=a b"', 'srv --url="https://h/p?token=•"', 'srv --url="https://h/p"'],
    [
      'srv -H "X-Up: https://h/p?token=a b"',
      'srv -H "X-Up: https://h/p?token=•"',
      'srv -H "X-Up: https://h/p"',
    ],
  ])("%s", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("property: literal text, blanks and punctuation in a quoted URL's telling value", () => {
    const value = fc
      .array(
        fc.oneof(fc.stringMatching(/^[JVQ]{1,3}$/), fc.constantFrom(" ", "  ", "-", "%", "/", ":", "=")),
        {
          minLength: 1,
          maxLength: 8,
        },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JVQ]/.test(text));
    const make = fc.constantFrom(
      (v: string) => `srv --url "https://h/p?token=${v}"`,
      (v: string) => `srv --url "https://h/p?b=1&api_key=${v}&c=2"`,
      (v: string) => `srv -e "DB_URL=https://h/p?token=${v}"`,
    );
    fc.assert(
      fc.property(make, value, (build, v) => {
        const line = build(v);
        expect(exportedCommand(line)).not.toMatch(/[JVQ]/);
        expect(withoutCommandLineSecrets(line, () => "•")).not.toMatch(/[JVQ]/);
        expectFilledBack(line);
      }),
      propertyRuns(300),
    );
  });
});
