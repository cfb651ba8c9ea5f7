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
} from "./test-support/spec-cases.js";

// fix186: leaks fix185 left.
// 1. A default's word that mixes literal text and run-time parts, holding a telling assignment
//    (`srv ${V:-TOKEN=Q${X}J}`), showed `${V:-TOKEN=Q${X}•}`: `Q` in clear. The value's literal
//    stretches are cut where the default's word is; the stretch holding `TOKEN=Q` starts before the
//    value does and was dropped (only stretches wholly inside the value were hidden). The export
//    hid `Q${X}J` whole. Now the stretch is cut at the value's start, both views reading as
//    `srv TOKEN=Q${X}J` does (`TOKEN=•${X}•`): `${V:-TOKEN=•${X}•}`, `${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}`.

describe("a default's word mixing literal text and run-time parts, holding a telling assignment", () => {
  it.each([
    ["${V:-TOKEN=Q${X}J}", "${V:-TOKEN=•${X}•}", "${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"],
    ["${V:-TOKEN=Q$(id)J}", "${V:-TOKEN=•$(id)•}", "${V:-TOKEN=${TOKEN}$(id)${TOKEN_2}}"],
    ["${V:-TOKEN=Q`id`J}", "${V:-TOKEN=•`id`•}", "${V:-TOKEN=${TOKEN}`id`${TOKEN_2}}"],
    ["${V:---token=Q${X}J}", "${V:---token=•${X}•}", "${V:---token=${TOKEN}${X}${TOKEN_2}}"],
    ["${V:-${W:-TOKEN=Q${X}J}}", "${V:-${W:-TOKEN=•${X}•}}", "${V:-${W:-TOKEN=${TOKEN}${X}${TOKEN_2}}}"],
    [
      "${V:-TOKEN=Q${X}J${Y}K}",
      "${V:-TOKEN=•${X}•${Y}•}",
      "${V:-TOKEN=${TOKEN}${X}${TOKEN_2}${Y}${TOKEN_3}}",
    ],
  ])("on a command line, %s: each literal piece hidden, as `TOKEN=Q${X}J`'s are", (word, shown, exported) => {
    expectHiddenLine(`srv ${word}`, `srv ${shown}`, `srv ${exported}`);
    expectHiddenLine(`srv "${word}"`, `srv "${shown}"`, `srv "${exported}"`);
    expectHiddenLine(`sh -c 'srv ${word}'`, `sh -c 'srv ${shown}'`, "${SRV_COMMAND}");
  });

  it("the same word without its default reads so already", () => {
    expect(withoutCommandLineSecrets("srv TOKEN=Q${X}J", () => "•")).toBe("srv TOKEN=•${X}•");
    expect(withoutCommandLineSecrets("srv TOKEN=Q$(id)J", () => "•")).toBe("srv TOKEN=•$(id)•");
  });

  it("pasted as one word: hidden in both views", () => {
    expectHiddenLine("${V:-TOKEN=Q${X}J}", "${V:-TOKEN=•${X}•}", "${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}");
  });

  it("a plain argument holding it (tools-mcp expands `${X}` in a default's word): the same", () => {
    expectArgs(["${V:-TOKEN=Q${X}J}"], ["${V:-TOKEN=•${X}•}"], ["${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"]);
    expectArgs(["a${V:-TOKEN=Q${X}J}"], ["a${V:-TOKEN=•${X}•}"], ["a${V:-TOKEN=${ATOKEN}${X}${ATOKEN_2}}"]);
    expectArgs(
      ["--run", "x", "${V:-TOKEN=Q${X}J}"],
      ["--run", "x", "${V:-TOKEN=•${X}•}"],
      ["--run", "x", "${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"],
    );
  });

  it("a value with no literal stretch after its run-time part: hidden whole, as before", () => {
    expectHiddenLine("srv ${V:-TOKEN=QJ$X}", "srv ${V:-TOKEN=•}", "srv ${V:-TOKEN=${TOKEN}}");
    expectHiddenLine("srv ${V:-TOKEN=QQ${X}}", "srv ${V:-TOKEN=•}", "srv ${V:-TOKEN=${TOKEN}}");
  });

  it("property: no letter of the value in clear in either view, filled back byte for byte", () => {
    const name = fc.constantFrom("TOKEN", "API_KEY", "--password=", "DB_PASSWORD");
    const part = fc.constantFrom("${X}", "$(id)", "`id`", "$X-", "${X:-ab}", "${X}${Y}");
    const literal = fc.stringMatching(/^[JQ]{1,4}$/);
    const pieces = fc.array(fc.tuple(part, literal), { minLength: 1, maxLength: 3 });
    const wrap = fc.constantFrom(
      (w: string) => `\${V:-${w}}`,
      (w: string) => `\${V:=${w}}`,
      (w: string) => `\${V:-\${W:-${w}}}`,
    );
    fc.assert(
      fc.property(name, literal, pieces, wrap, (n, first, rest, f) => {
        const value = first + rest.map(([p, l]) => p + l).join("");
        const word = f(n.endsWith("=") ? `${n}${value}` : `${n}=${value}`);
        for (const line of [`srv ${word}`, word]) {
          expect(withoutCommandLineSecrets(line, () => "•")).not.toMatch(/[JQ]/);
          expect(exportedCommand(line)).not.toMatch(/[JQ]/);
          expectFilledBack(line);
        }
        if (!/`|\$\(|\$X/.test(value)) {
          expect(withoutArgSecrets([word], () => "•")[0]).not.toMatch(/[JQ]/);
          expect(exportedArgs([word])?.[0]).not.toMatch(/[JQ]/);
        }
        expectArgFilledBack([word]);
      }),
      propertyRuns(200),
    );
  });
});

// 2. A default left open on a line the shell refuses, whose `}` ends the line (`srv
//    ${V:-TOKEN=Q"J}`, a quote, backtick or `$(` in its word), was exported with the value hidden
//    to the line's end, `}` and all (`${V:-TOKEN=${TOKEN}`): nothing leaked, but tools-mcp keeps a
//    default never closed as written, so the value filled back never reached the server. The `}`
//    tools-mcp closes it with is kept now, as in the original.

describe("a default whose word holds a quote, backtick or `$(`, closed by the line's last `}`", () => {
  it.each([['${V:-TOKEN=Q"J}'], ["${V:-TOKEN=Q`J}"], ["${V:-TOKEN=Q$(J}"], ["${V:-TOKEN=Q'J}"]])(
    "%s: its value hidden, its `}` kept, on a line, pasted as one word and as a plain argument",
    (word) => {
      expectHiddenLine(`srv ${word}`, "srv ${V:-TOKEN=•}", "srv ${V:-TOKEN=${TOKEN}}");
      expectHiddenLine(word, "${V:-TOKEN=•}", "${V:-TOKEN=${TOKEN}}");
      expectArgs([word], ["${V:-TOKEN=•}"], ["${V:-TOKEN=${TOKEN}}"]);
    },
  );

  it("nested defaults: each `}` kept", () => {
    expectHiddenLine(
      'srv ${V:-${W:-TOKEN=Q"J}}',
      "srv ${V:-${W:-TOKEN=•}}",
      "srv ${V:-${W:-TOKEN=${TOKEN}}}",
    );
  });

  it("text after the default's `}`, or a default tools-mcp does not read: hidden to the line's end, as before", () => {
    expectHiddenLine('srv ${V:-TOKEN=Q"J}x', "srv ${V:-TOKEN=•", "srv ${V:-TOKEN=${TOKEN}");
    expectHiddenLine('srv ${V:=TOKEN=Q"J}', "srv ${V:=TOKEN=•", "srv ${V:=TOKEN=${TOKEN}");
    expectHiddenLine('srv ${V:-TOKEN=Q"J', "srv ${V:-TOKEN=•", "srv ${V:-TOKEN=${TOKEN}");
  });
});
