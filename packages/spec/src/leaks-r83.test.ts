// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { findSpecSecrets, withoutCommandLineSecrets } from "./index.js";
import { expectFilledBack, expectHiddenLine, exportedCommand, pasted } from "./test-support/spec-cases.js";

// fix184: a leak fix183 left.
// 1. A pasted `command` of one word (no blank) that is a default holding a telling assignment
//    (`${V:-TOKEN=X}`, which a shell running it reads as `TOKEN=X` while `V` is unset): the display
//    read it as a command line and showed `${V:-TOKEN=•}`, but the export reads a command with no
//    blank as a program's name, where only a key shape or a URL's credentials are looked for, and
//    kept `X` in clear. Such a word is read as the command line it is now, as `srv ${V:-TOKEN=X}` is.

describe("a pasted one-word command that is a default holding a telling assignment", () => {
  it.each([
    ["${V:-TOKEN=QJsecret9}", "${V:-TOKEN=•}", "${V:-TOKEN=${TOKEN}}"],
    ["${V:-TOKEN=QJsecret9}x", "${V:-TOKEN=•}•", "${V:-TOKEN=${TOKEN}}${TOKEN_2}"],
    ["${V:---token=QJsecret9}", "${V:---token=•}", "${V:---token=${TOKEN}}"],
    ["${V:-${W:-TOKEN=QJsecret9}}", "${V:-${W:-TOKEN=•}}", "${V:-${W:-TOKEN=${TOKEN}}}"],
    ["${V-TOKEN=QJsecret9}", "${V-TOKEN=•}", "${V-TOKEN=${TOKEN}}"],
    ["${V:=API_KEY=QJsecret9}", "${V:=API_KEY=•}", "${V:=API_KEY=${API_KEY}}"],
  ])("%s: the value replaced where written, braces kept, in both views", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
    // As the same word after a program is.
    expectHiddenLine(`srv ${line}`, `srv ${shown}`, `srv ${exported}`);
    expect(findSpecSecrets(pasted(line)).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
  });

  it("a one-word command whose default tells nothing, or is a reference: kept as written", () => {
    for (const line of [
      "${V:-PAGE=QJ}",
      "${V:-TOKEN=}",
      "${V:-TOKEN=$X}",
      "${HOME:-/usr}/bin/srv",
      "${MCP_BIN}",
    ]) {
      expect(withoutCommandLineSecrets(line, () => "•")).toBe(line);
      expect(exportedCommand(line)).toBe(line);
    }
  });

  it("property: no letter of the value in clear in either view, filled back byte for byte", () => {
    const name = fc.constantFrom("TOKEN", "API_KEY", "--password=", "DB_PASSWORD");
    const value = fc.stringMatching(/^[JQ]{1,6}$/);
    const tail = fc.constantFrom("", "x", "/bin");
    const wrap = fc.constantFrom(
      (w: string) => `\${V:-${w}}`,
      (w: string) => `\${V:=${w}}`,
      (w: string) => `\${V-${w}}`,
      (w: string) => `\${V:-\${W:-${w}}}`,
    );
    fc.assert(
      fc.property(name, value, tail, wrap, (n, v, t, f) => {
        const line = f(n.endsWith("=") ? `${n}${v}` : `${n}=${v}`) + t;
        expect(withoutCommandLineSecrets(line, () => "•")).not.toMatch(/[JQ]/);
        expect(exportedCommand(line)).not.toMatch(/[JQ]/);
        expectFilledBack(line);
      }),
      propertyRuns(100),
    );
  });
});
