// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { withoutCommandLineSecrets } from "./index.js";
import { expectArgs, expectHiddenLine } from "./test-support/spec-cases.js";

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

  it("as one argument's line: the same", () => {
    expectArgs(
      ["--run", 'srv ${V:-TOKEN=Q"${X}J}'],
      ["--run", "srv ${V:-TOKEN=•${X}•}"],
      ["--run", "srv ${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"],
    );
  });
});
