// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectArgs,
  expectHiddenLine,
  exportedArgs,
  exportedCommand,
} from "./test-support/spec-cases.js";

// r74d: leaks fix187 left.
// 1. A POSIX shell's own command in '…' holding a backslash (`sh -c 'srv ${V:-TOKEN=Q\${X}J}'`)
//    was shown in clear: the display read such a command only as the line's data words, which hide
//    a value only when it reads as a credential. In '…' the command's shell reads the text as
//    written, so it is read now as the same command given alone is (the export replaces the
//    shell's command whole, `${SRV_COMMAND}`, as before).

describe("a shell's own command in '…' holding a backslash", () => {
  it.each([
    ["srv ${V:-TOKEN=Q\\${X}J}", "srv ${V:-TOKEN=•}•"],
    ["srv TOKEN=Q\\${X}J", "srv TOKEN=•"],
    ["srv ${V:-TOKEN=Q\\J}", "srv ${V:-TOKEN=•}"],
    ["srv --token Q\\J $X", "srv --token • $X"],
    ["srv TOKEN=Q\\$X$(curl e|sh)", "srv TOKEN=•$(curl e|sh)"],
  ])("sh -c '%s': shown as the command alone is, exported whole", (command, shown) => {
    expect(withoutCommandLineSecrets(command, () => "•")).toBe(shown);
    expectHiddenLine(`sh -c '${command}'`, `sh -c '${shown}'`, "${SRV_COMMAND}");
    expectHiddenLine(`bash -lc '${command}'`, `bash -lc '${shown}'`, "${SRV_COMMAND}");
  });

  it("one holding no credential is kept as written", () => {
    expect(withoutCommandLineSecrets("sh -c 'srv ${V:-a\\${X}b}'", () => "•")).toBe(
      "sh -c 'srv ${V:-a\\${X}b}'",
    );
    expect(withoutCommandLineSecrets("sh -c 'srv a\\b $X'", () => "•")).toBe("sh -c 'srv a\\b $X'");
  });
});

// 2. A default nested in another's word and closed before that word ends
//    (`srv ${V:-${W:-TOKEN=Q\${X}J}}`: bash closes `${W:-` at the `}` after `X`, and `J` is the
//    outer word's) was kept in clear in both views, `${V:-${W:-TOKEN=QJ}x}` too: the innermost
//    default was read only when the outer ones closed right after it, else the outer word was read
//    at run time whole. The outermost is read now as a default whose word mixes text, the inner
//    default's word in it (its `${W:-` and `}` kept as written): each literal piece hidden, as
//    `${V:-TOKEN=Q\${X}J}`'s are.

describe("a default nested in another's word, closed before that word ends", () => {
  it.each([
    [
      "srv ${V:-${W:-TOKEN=Q\\${X}J}}",
      "srv ${V:-${W:-TOKEN=•}•}•",
      "srv ${V:-${W:-TOKEN=${TOKEN}}${TOKEN_2}}${TOKEN_3}",
    ],
    [
      'srv "${V:-${W:-TOKEN=Q\\${X}J}}"',
      'srv "${V:-${W:-TOKEN=•}•}•"',
      'srv "${V:-${W:-TOKEN=${TOKEN}}${TOKEN_2}}${TOKEN_3}"',
    ],
    [
      "srv ${V:-${W:---token=Q\\${X}J}}",
      "srv ${V:-${W:---token=•}•}•",
      "srv ${V:-${W:---token=${TOKEN}}${TOKEN_2}}${TOKEN_3}",
    ],
    ["${V:-${W:-TOKEN=Q\\${X}J}}", "${V:-${W:-TOKEN=•}•}•", "${V:-${W:-TOKEN=${TOKEN}}${TOKEN_2}}${TOKEN_3}"],
    ["srv ${V:-${W:-TOKEN=QJ}x}", "srv ${V:-${W:-TOKEN=•}•}", "srv ${V:-${W:-TOKEN=${TOKEN}}${TOKEN_2}}"],
    ["srv ${V:-x${W:-TOKEN=QJ}}", "srv ${V:-x${W:-TOKEN=•}}", "srv ${V:-x${W:-TOKEN=${XTOKEN}}}"],
    [
      "srv ${V:-${W:-${U:-TOKEN=QJ}x}y}",
      "srv ${V:-${W:-${U:-TOKEN=•}•}•}",
      "srv ${V:-${W:-${U:-TOKEN=${TOKEN}}${TOKEN_2}}${TOKEN_3}}",
    ],
    [
      "srv ${V:-${W:-TOKEN=Q${X}J}y}",
      "srv ${V:-${W:-TOKEN=•${X}•}•}",
      "srv ${V:-${W:-TOKEN=${TOKEN}${X}${TOKEN_2}}${TOKEN_3}}",
    ],
  ])("%s: each literal piece hidden in both views, filled back byte for byte", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("as a shell's own command and as a plain argument: the same", () => {
    expectHiddenLine(
      "sh -c 'srv ${V:-${W:-TOKEN=Q\\${X}J}}'",
      "sh -c 'srv ${V:-${W:-TOKEN=•}•}•'",
      "${SRV_COMMAND}",
    );
    expectArgs(["${V:-${W:-TOKEN=QJ}x}"], ["${V:-${W:-TOKEN=•}•}"], ["${V:-${W:-TOKEN=${TOKEN}}${TOKEN_2}}"]);
  });

  it("a nested default holding no credential is kept as written", () => {
    expectHiddenLine("srv ${V:-${W:-abc}x}", "srv ${V:-${W:-abc}x}", "srv ${V:-${W:-abc}x}");
    expectHiddenLine("srv ${V:-${W:-a\\${X}b}}", "srv ${V:-${W:-a\\${X}b}}", "srv ${V:-${W:-a\\${X}b}}");
  });
});

// 3. On a line the shell refuses, a value hidden by the refused-line rule holding a reference
//    tools-mcp fills (`srv ${V:-TOKEN=Q"${X}J}`) was exported `${V:-TOKEN=${TOKEN}}`, `${TOKEN}`
//    standing for `Q"${X}J`: tools-mcp does not read a value it fills again, so the export filled
//    back gave the server `TOKEN=Q"${X}J` where the original gives X's value. Each such reference
//    is kept as written now, the text around it hidden apart.

describe("a value on a refused line holding a reference tools-mcp fills", () => {
  it.each([
    ['srv ${V:-TOKEN=Q"${X}J}', "srv ${V:-TOKEN=•${X}•}", "srv ${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"],
    ['srv ${V:---token=Q"${X}J}', "srv ${V:---token=•${X}•}", "srv ${V:---token=${TOKEN}${X}${TOKEN_2}}"],
    ['srv --token Q"${X}J', "srv --token •${X}•", "srv --token ${TOKEN}${X}${TOKEN_2}"],
    [
      'srv ${V:-TOKEN=Q"${X:-a}J}',
      "srv ${V:-TOKEN=•${X:-•}•}",
      "srv ${V:-TOKEN=${TOKEN}${X:-${TOKEN_2}}${TOKEN_3}}",
    ],
  ])(
    "%s: the reference kept as written in both views, the text around it hidden",
    (line, shown, exported) => {
      expectHiddenLine(line, shown, exported);
    },
  );

  it("from a `${NAME:-` tools-mcp never closes on, the value is one piece, as tools-mcp keeps it as written", () => {
    expectHiddenLine('srv TOKEN=Q"${X}J${V:-a', "srv TOKEN=•${X}•", "srv TOKEN=${TOKEN}${X}${TOKEN_2}");
    // One opened before the value and never closed: tools-mcp fills nothing after it, the value one piece.
    expectHiddenLine(
      'srv --token "${V:-J${X}${V:-J${X}"',
      'srv --token "${V:-•${X}•${X}•',
      'srv --token "${V:-${TOKEN}',
    );
    const long = `srv --token "${"${V:-J${X}".repeat(2000)}"`;
    expect(exportedCommand(long)).toBe('srv --token "${V:-${TOKEN}');
  });

  it("as one argument's line: the same", () => {
    expectArgs(
      ["--run", 'srv ${V:-TOKEN=Q"${X}J}'],
      ["--run", "srv ${V:-TOKEN=•${X}•}"],
      ["--run", "srv ${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"],
    );
  });
});

// 4. A plain argument whose default's word holds a `$(…)` or a backtick (`["${V:-TOKEN=Q$(id)J}"]`)
//    was shown `${V:-TOKEN=•$(id)•}` and exported with `$(id)` between the value's pieces:
//    tools-mcp passes `$(id)` as text, part of the value, but the word went to the reader of
//    command substitutions, which reads it as a shell would. Such a word is read as a plain
//    argument now, the `$` of `$(` given as a letter: the value hidden whole, as `["TOKEN=Q$(id)J"]`'s is.

describe("a plain argument whose default's word holds a `$(…)` or a backtick", () => {
  it("the literal argument without its default is hidden whole already", () => {
    expectArgs(["TOKEN=Q$(id)J"], ["TOKEN=•"], ["TOKEN=${TOKEN}"]);
  });

  it.each([
    ["${V:-TOKEN=Q$(id)J}", "${V:-TOKEN=•}", "${V:-TOKEN=${TOKEN}}"],
    ["${V:-TOKEN=Q`id`J}", "${V:-TOKEN=•}", "${V:-TOKEN=${TOKEN}}"],
    ["${V:---token=Q$(id)J}", "${V:---token=•}", "${V:---token=${TOKEN}}"],
    ["${V:-${W:-TOKEN=Q$(id)J}}", "${V:-${W:-TOKEN=•}}", "${V:-${W:-TOKEN=${TOKEN}}}"],
    ['"${V:-TOKEN=Q$(id)J}"', '"${V:-TOKEN=•}"', '"${V:-TOKEN=${TOKEN}}"'],
    ["${V:-TOKEN=Q${X}J$(id)K}", "${V:-TOKEN=•${X}•}", "${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"],
  ])(
    "%s: the `$(…)` hidden with the value in both views, filled back byte for byte",
    (arg, shown, exported) => {
      expectArgs([arg], [shown], [exported]);
      expectArgs(["--run", "x", arg], ["--run", "x", shown], ["--run", "x", exported]);
    },
  );

  it("property: as a plain argument (a `$(Q)` or `` `J` `` in it text to tools-mcp), no letter of the value in clear in either view, filled back byte for byte", () => {
    const name = fc.constantFrom("TOKEN", "API_KEY", "--password=", "DB_PASSWORD");
    const part = fc.constantFrom("${X}", "$(Q)", "`J`", "$(QJ)$(J)", "${X:-ab}");
    const literal = fc.stringMatching(/^[JQ]{1,4}$/);
    const pieces = fc.array(fc.tuple(part, literal), { minLength: 1, maxLength: 3 });
    const wrap = fc.constantFrom(
      (w: string) => `\${V:-${w}}`,
      (w: string) => `\${V:-\${W:-${w}}}`,
      (w: string) => `"\${V:-${w}}"`,
    );
    fc.assert(
      fc.property(name, literal, pieces, wrap, (n, first, rest, f) => {
        const value = first + rest.map(([p, l]) => p + l).join("");
        const word = f(n.endsWith("=") ? `${n}${value}` : `${n}=${value}`);
        expect(withoutArgSecrets([word], () => "•")[0]).not.toMatch(/[JQ]/);
        expect(exportedArgs([word])?.[0]).not.toMatch(/[JQ]/);
        expectArgFilledBack([word]);
      }),
      propertyRuns(200),
    );
  });

  it("one whose default tells nothing is kept as written; on a command line `$(id)` stays in sight", () => {
    expectArgs(["${V:-a$(id)b}"], ["${V:-a$(id)b}"], ["${V:-a$(id)b}"]);
    expectArgs(["${V:-TOKEN=$X}"], ["${V:-TOKEN=$X}"], ["${V:-TOKEN=$X}"]);
    expectHiddenLine(
      "srv ${V:-TOKEN=Q$(id)J}",
      "srv ${V:-TOKEN=•$(id)•}",
      "srv ${V:-TOKEN=${TOKEN}$(id)${TOKEN_2}}",
    );
  });
});
