// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { findSpecSecrets, withoutArgSecrets, withoutCommandLineSecrets } from "./index.js";
import {
  expectArgFilledBack,
  expectArgs,
  expectHiddenLine,
  exportedArgs,
  exportedCommand,
  pasted,
} from "./test-support/spec-cases.js";

// fix185: leaks fix184 left.
// 1. A plain argument that is a default holding a telling assignment whose value holds `&`, `|`,
//    `(` or `$` (`["${V:-TOKEN=Q&J}"]`, which tools-mcp expands to `TOKEN=Q&J`) was kept in clear
//    in both views, while the same word on a command line (`srv ${V:-TOKEN=Q&J}`) showed
//    `${V:-TOKEN=•}`: the test for a plain word refused those characters inside the default too.
// 2. A pasted one-word `command` that is a telling flag and its value (`--token=X`,
//    `--api-key=X`) was hidden in the display but exported in clear: the export read a command
//    with no blank, `;` or assignment as a program's name. So was one that is a default as in 1
//    (`${V:-TOKEN=Q&J}`): fix184 read such a command as a line only when it was a plain word.
// 3. The same argument with a quote or a backslash in the default's word (`["${V:-TOKEN=Q\"J}"]`,
//    `["${V:-TOKEN=Q\\J}"]`), both of which tools-mcp reads as literal text, was kept in clear too.

describe("a plain argument whose default holds a telling assignment with an operator or `$` in its value", () => {
  it.each([
    ["${V:-TOKEN=Q&J}"],
    ["${V:-TOKEN=Q|J}"],
    ["${V:-TOKEN=Q(J}"],
    ["${V:-TOKEN=QJ$X}"],
    ["${V:-TOKEN=Q;J}"],
    ["${V:-TOKEN=Q<J>}"],
    ["${V:-TOKEN=Q)J}"],
  ])("%s: the value hidden where written in both views, as on a command line", (arg) => {
    const shown = "${V:-TOKEN=•}";
    const exported = "${V:-TOKEN=${TOKEN}}";
    expectArgs([arg], [shown], [exported]);
    expectArgs(["--run", "x", arg], ["--run", "x", shown], ["--run", "x", exported]);
    expectHiddenLine(`srv ${arg}`, `srv ${shown}`, `srv ${exported}`);
  });

  it("with literal text after the default, and nested: each piece hidden, braces kept", () => {
    expectArgs(["${V:-TOKEN=Q&J}x"], ["${V:-TOKEN=•}•"], ["${V:-TOKEN=${TOKEN}}${TOKEN_2}"]);
    expectArgs(["${V:-${W:-TOKEN=Q|J}}"], ["${V:-${W:-TOKEN=•}}"], ["${V:-${W:-TOKEN=${TOKEN}}}"]);
    expectArgs(["${V:---api-key=Q&J}"], ["${V:---api-key=•}"], ["${V:---api-key=${API_KEY}}"]);
  });

  it("outside the default an operator still makes the word no plain one: as before", () => {
    // `&` outside a default is not what a shell reads as tools-mcp does; such a word is read as a
    // value alone, as before this fix (a default under a name that tells nothing is kept).
    for (const arg of ["a&${V:-PAGE=Q&J}", "${V:-PAGE=Q&J}", "${V:-PAGE=Q|J}", "${V:-TOKEN=$X}"])
      expectArgs([arg], [arg], [arg]);
  });
});

describe("a pasted one-word command that is a telling flag and its value", () => {
  it.each([
    ["--token=QJsecret9", "--token=•", "--token=${TOKEN}"],
    ["--api-key=QJsecret9", "--api-key=•", "--api-key=${API_KEY}"],
    ["--password=QJsecret9", "--password=•", "--password=${PASSWORD}"],
    ["-token=QJsecret9", "-token=•", "-token=${TOKEN}"],
    ["TOKEN=QJsecret9", "TOKEN=•", "TOKEN=${TOKEN}"],
  ])("%s: hidden in both views, filled back byte for byte", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
    expect(findSpecSecrets(pasted(line)).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
  });

  it.each([["${V:-TOKEN=Q&J}"], ["${V:-TOKEN=Q|J}"], ["${V:-TOKEN=Q(J}"], ["${V:-TOKEN=QJ$X}"]])(
    "one word holding such a default with an operator or `$` in its value, %s: hidden in both views",
    (line) => {
      expectHiddenLine(line, "${V:-TOKEN=•}", "${V:-TOKEN=${TOKEN}}");
      expect(findSpecSecrets(pasted(line)).map((hint) => hint.path)).toEqual([
        "bundle.mcpServers[0].command",
      ]);
    },
  );

  it("a flag that tells nothing, or whose value is a reference: kept as written", () => {
    for (const line of ["--port=8080", "--token=${TOKEN}", "--token=$TOKEN", "--token="]) {
      expect(withoutCommandLineSecrets(line, () => "•")).toBe(line);
      expect(exportedCommand(line)).toBe(line);
    }
  });
});

describe("a plain argument whose default's word holds a quote or a backslash", () => {
  it.each([
    ['${V:-TOKEN=Q"J}'],
    ["${V:-TOKEN=Q\\J}"],
    ["${V:-TOKEN=Q'J}"],
    ['${V:-TOKEN="QJ"}'],
    ["${V:-TOKEN=QJ\\}"],
  ])("%s: the value (quote or backslash included) hidden where written in both views", (arg) => {
    expectArgs([arg], ["${V:-TOKEN=•}"], ["${V:-TOKEN=${TOKEN}}"]);
    expectArgs(["--run", "x", arg], ["--run", "x", "${V:-TOKEN=•}"], ["--run", "x", "${V:-TOKEN=${TOKEN}}"]);
  });

  it("a backslash before the default's `}` ends the word there, as tools-mcp reads it", () => {
    // tools-mcp closes the default at the first `}` (`TOKEN=Q\`), `J}` literal text after it.
    expectArgs(["${V:-TOKEN=Q\\}J}"], ["${V:-TOKEN=•}•"], ["${V:-TOKEN=${TOKEN}}${TOKEN_2}"]);
  });

  it("property: no letter of the value in clear in either view, filled back byte for byte", () => {
    const name = fc.constantFrom("TOKEN", "API_KEY", "--password=", "DB_PASSWORD");
    const odd = fc.constantFrom("&", "|", "(", ")", '"', "'", "\\", ";", "<", ">", "$", "`");
    const value = fc
      .tuple(fc.stringMatching(/^[JQ]{1,4}$/), odd, fc.stringMatching(/^[JQ]{0,4}$/))
      .map(([a, o, b]) => `${a}${o}${b}`);
    const tail = fc.constantFrom("", "x", "/bin");
    const wrap = fc.constantFrom(
      (w: string) => `\${V:-${w}}`,
      (w: string) => `\${V:=${w}}`,
      (w: string) => `\${V:-\${W:-${w}}}`,
    );
    fc.assert(
      fc.property(name, value, tail, wrap, (n, v, t, f) => {
        const args = [f(n.endsWith("=") ? `${n}${v}` : `${n}=${v}`) + t];
        expect(withoutArgSecrets(args, () => "•")[0]).not.toMatch(/[JQ]/);
        expect(exportedArgs(args)?.[0]).not.toMatch(/[JQ]/);
        expectArgFilledBack(args);
      }),
      propertyRuns(200),
    );
  });
});
