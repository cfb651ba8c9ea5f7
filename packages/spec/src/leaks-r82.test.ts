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

// fix183: leaks fix182 found and left.
// 1. A plain argument that is a default holding an assignment (`["${V:-TOKEN=X}"]`, which tools-mcp
//    expands to `TOKEN=X` while `V` is unset) was read as a value alone, where only a default under
//    a telling name is hidden: `X` kept in clear in both views, while the same word on a command
//    line showed `${V:-TOKEN=•}`. Such a word, holding nothing a shell reads otherwise, is read as
//    that line's word now.
// 2. A shell's own command the shell refuses, a telling name's value a default left open (`sh -c
//    'srv --token ${V:-X'`), pasted: the export replaced it whole (fix182), the display read the
//    command as a command line, which flags nothing on such a line, and showed `X`; given as one
//    `--run` argument, whose reading asks what the display hides, `X` was kept in both views. The
//    display reads such a command with the refused-line rule now.
// 3. The same with a percent-encoded telling name (`["-c", "srv https://h/p?a=1&%74oken=${V:-X"]`):
//    the refused-line rule read names undecoded, `%74oken` told nothing, `X` kept in clear.

describe("a plain argument that is a default holding a telling assignment", () => {
  it.each([
    ["${V:-TOKEN=QJsecret9}", "${V:-TOKEN=•}", "${V:-TOKEN=${TOKEN}}"],
    ["${V:---token=QJ}", "${V:---token=•}", "${V:---token=${TOKEN}}"],
    ["${V:-${W:-TOKEN=QJ}}", "${V:-${W:-TOKEN=•}}", "${V:-${W:-TOKEN=${TOKEN}}}"],
    ["${V:-TOKEN=QJ}x", "${V:-TOKEN=•}•", "${V:-TOKEN=${TOKEN}}${TOKEN_2}"],
    ["${V-TOKEN=QJ}", "${V-TOKEN=•}", "${V-TOKEN=${TOKEN}}"],
  ])("%s: hidden as the same word on a command line is, in both views", (arg, shown, exported) => {
    expectArgs([arg], [shown], [exported]);
    expectArgs(["--run", "x", arg], ["--run", "x", shown], ["--run", "x", exported]);
    expectHiddenLine(`srv ${arg}`, `srv ${shown}`, `srv ${exported}`);
  });

  it("a default whose word tells nothing, or holds a reference as the value: kept", () => {
    for (const arg of ["${V:-PAGE=QJ}", "${V:-TOKEN=}", "${V:-TOKEN=$X}", "${HOME:-/tmp}/x", "${V:-a=b}"])
      expectArgs([arg], [arg], [arg]);
  });

  it("property: no letter of the assignment's value in clear in either view, filled back byte for byte", () => {
    const name = fc.constantFrom("TOKEN", "API_KEY", "--password=", "DB_PASSWORD");
    const value = fc.stringMatching(/^[JQ]{1,6}$/);
    const wrap = fc.constantFrom(
      (w: string) => `\${V:-${w}}`,
      (w: string) => `\${V:=${w}}`,
      (w: string) => `\${V:-\${W:-${w}}}`,
    );
    fc.assert(
      fc.property(name, value, wrap, (n, v, f) => {
        const args = [f(n.endsWith("=") ? `${n}${v}` : `${n}=${v}`)];
        expect(withoutArgSecrets(args, () => "•")[0]).not.toMatch(/[JQ]/);
        expect(exportedArgs(args)?.[0]).not.toMatch(/[JQ]/);
        expectArgFilledBack(args);
      }),
      propertyRuns(100),
    );
  });
});

describe("a shell's own command the shell refuses, pasted or in one argument", () => {
  it.each([
    ["sh -c 'srv --token ${V:-JJ'", "sh -c 'srv --token ${V:-•'"],
    ["sh -c 'srv TOKEN=${V:-JJ'", "sh -c 'srv TOKEN=${V:-•'"],
    // In "…" the `${` left open is the line's own: the shell running it refuses it, hidden to the end.
    ['bash -c "srv --api-key ${V:-JJ"', 'bash -c "srv --api-key ${V:-•'],
  ])("%s: the value hidden in the display, the export replaced whole", (line, shown) => {
    expect(withoutCommandLineSecrets(line, () => "•")).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    expect(exportedCommand(line)).toBe("${SRV_COMMAND}");
  });

  it.each([["sh -c 'srv --token ${V:-JJ'"], ["sh -c 'srv TOKEN=${V:-JJ'"]])(
    "--run %s: replaced whole in both views",
    (line) => {
      expectArgs(["--run", line], ["--run", "•"], ["--run", "${SRV_COMMAND}"]);
    },
  );

  it("one whose default follows no telling name, or that closes: as before", () => {
    for (const line of ["sh -c 'srv --port ${V:-80'", "sh -c 'srv --token ${V}'"]) {
      expect(withoutCommandLineSecrets(line, () => "•")).toBe(line);
      expectArgs(["--run", line], ["--run", line], ["--run", line]);
    }
  });
});

describe("a shell's own command the shell refuses, a percent-encoded telling name's value left open", () => {
  it.each([
    ["srv https://h/p?a=1&%74oken=${V:-JJ"],
    ["srv https://h/p?a=1&%74%6Fken=${V:-JJ"],
    ["srv https://h/p?a=1&api%5Fkey=${V:-JJ"],
  ])("-c %s: replaced whole in both views, as `token` is", (script) => {
    expectArgs(["-c", script], ["-c", "•"], ["-c", "${SRV_COMMAND}"]);
  });

  it("pasted after sh -c: the value hidden in the display, the export replaced whole", () => {
    const line = "sh -c 'srv https://h/p?a=1&%74oken=${V:-JJ'";
    expect(withoutCommandLineSecrets(line, () => "•")).not.toContain("JJ");
    expect(exportedCommand(line)).toBe("${SRV_COMMAND}");
  });

  it("a name that tells nothing once decoded: as before", () => {
    const script = "srv https://h/p?a=1&%70age=${V:-JJ";
    expectArgs(["-c", script], ["-c", script], ["-c", script]);
  });
});
