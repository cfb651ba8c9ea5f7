// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { withoutArgSecrets } from "./index.js";
import { expectArgs, expectHiddenLine, exportedArgs } from "./test-support/spec-cases.js";

// fix187: leaks fix186 left.
// 1. A plain argument whose default is never closed (`${V:-TOKEN=Q"J`, `${V:-TOKEN=QJ`) was kept
//    in clear in both views: the argument's reader read only a default closed in it. It is read
//    now as the same text pasted is (`srv ${V:-TOKEN=Q"J` shows `${V:-TOKEN=•`): the value hidden
//    to the end.

describe("a plain argument whose default is never closed, holding a telling assignment", () => {
  it.each([['${V:-TOKEN=Q"J'], ["${V:-TOKEN=QJ"], ["${V:-TOKEN=Q`J"], ["${V:-TOKEN=Q'J"]])(
    "%s: its value hidden to the end in both views, filled back byte for byte",
    (arg) => {
      const head = arg.slice(0, arg.indexOf("=") + 1);
      expectArgs([arg], [`${head}•`], [`${head}\${TOKEN}`]);
      expectArgs(["--run", arg], ["--run", `${head}•`], ["--run", `${head}\${TOKEN}`]);
    },
  );

  it("after text, or inside a default that is closed: the same", () => {
    expectArgs(['x${V:-TOKEN=Q"J'], ["x${V:-TOKEN=•"], ["x${V:-TOKEN=${TOKEN}"]);
    expectArgs(['${V:-${W:-TOKEN=Q"J}'], ["${V:-${W:-TOKEN=•}"], ["${V:-${W:-TOKEN=${TOKEN}}"]);
  });

  it("a default never closed that holds no credential is kept as written", () => {
    expect(withoutArgSecrets(["${V:-abc"], () => "•")).toEqual(["${V:-abc"]);
    expect(exportedArgs(['${V:-a"b'])).toEqual(['${V:-a"b']);
  });
});

// 2. An argument in literal quotes (`"TOKEN=QJ"`, `"${V:-TOKEN=Q${X}J}"`) was kept in clear in both
//    views: tools-mcp passes the quotes as text, and what follows `TOKEN=` is still the credential,
//    but no rule for arguments read a word starting with a quote. It is read now as the word inside
//    its quotes, the quotes kept.

describe("an argument in literal quotes", () => {
  it.each([
    ['"TOKEN=QJ"', '"TOKEN=•"', '"TOKEN=${TOKEN}"'],
    ["'TOKEN=QJ'", "'TOKEN=•'", "'TOKEN=${TOKEN}'"],
    ['"--token=QJ"', '"--token=•"', '"--token=${TOKEN}"'],
    ['"${V:-TOKEN=Q${X}J}"', '"${V:-TOKEN=•${X}•}"', '"${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"'],
    ['"${V:-TOKEN=QJ}"', '"${V:-TOKEN=•}"', '"${V:-TOKEN=${TOKEN}}"'],
  ])("%s: read as the word inside its quotes, the quotes kept", (arg, shown, exported) => {
    expectArgs([arg], [shown], [exported]);
    expectArgs(["--run", "x", arg], ["--run", "x", shown], ["--run", "x", exported]);
  });

  it("a quoted word that holds no credential is kept as written", () => {
    expectArgs(['"a=b"'], ['"a=b"'], ['"a=b"']);
    expectArgs(['"${V:-abc}"'], ['"${V:-abc}"'], ['"${V:-abc}"']);
  });
});

// 3. `srv ${V:-TOKEN=Q\${X}J}` was kept in clear in both views: bash reads the default's word as
//    `TOKEN=Q${X` (`\$` a literal `$`, the `{` after it literal too), closed by the `}` after `X`,
//    and the value as `Q${XJ}`, all literal text; the reader of a default's word refused the `{`.
//    Each literal piece is hidden now, as `${V:-TOKEN=Q\}J}`'s are (fix185).

describe("a default's word holding an escaped `${`", () => {
  it("on a command line, quoted or not, and pasted as one word: each literal piece hidden", () => {
    expectHiddenLine("srv ${V:-TOKEN=Q\\${X}J}", "srv ${V:-TOKEN=•}•", "srv ${V:-TOKEN=${TOKEN}}${TOKEN_2}");
    expectHiddenLine(
      'srv "${V:-TOKEN=Q\\${X}J}"',
      'srv "${V:-TOKEN=•}•"',
      'srv "${V:-TOKEN=${TOKEN}}${TOKEN_2}"',
    );
    expectHiddenLine(
      "srv ${V:---token=Q\\${X}J}",
      "srv ${V:---token=•}•",
      "srv ${V:---token=${TOKEN}}${TOKEN_2}",
    );
    expectHiddenLine("${V:-TOKEN=Q\\${X}J}", "${V:-TOKEN=•}•", "${V:-TOKEN=${TOKEN}}${TOKEN_2}");
    expectHiddenLine("srv ${V:-TOKEN=Q\\${X}J}x", "srv ${V:-TOKEN=•}•", "srv ${V:-TOKEN=${TOKEN}}${TOKEN_2}");
  });

  it("an escaped `${` in a default holding no credential is kept as written", () => {
    expectHiddenLine("srv ${V:-a\\${X}b}", "srv ${V:-a\\${X}b}", "srv ${V:-a\\${X}b}");
  });
});

// 4. (found while testing 1) A default holding a telling flag on a line the shell refuses or left
//    open (`srv ${V:---token=Q"J`, `srv ${V:---token=QJ`, `srv ${V:---token=Q"J}`) was kept in
//    clear in both views, the plain argument `["${V:---token=Q\"J"]` too: the refused-line rule
//    read a name only after no `-`, and the `-` of `:-` stood before `--token`. A name right after a
//    default's operator is read now, as `${V:-TOKEN=Q"J` was.

describe("a default holding a telling flag, on a line the shell refuses or left open", () => {
  it.each([
    ['srv ${V:---token=Q"J', "srv ${V:---token=•", "srv ${V:---token=${TOKEN}"],
    ["srv ${V:---token=QJ", "srv ${V:---token=•", "srv ${V:---token=${TOKEN}"],
    ['srv ${V:---token=Q"J}', "srv ${V:---token=•}", "srv ${V:---token=${TOKEN}}"],
    ['srv ${V:--api-key=Q"J', "srv ${V:--api-key=•", "srv ${V:--api-key=${API_KEY}"],
  ])("%s: its value hidden in both views", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("as a plain argument: the same", () => {
    expectArgs(['${V:---token=Q"J'], ["${V:---token=•"], ["${V:---token=${TOKEN}"]);
    expectArgs(["${V:---token=QJ"], ["${V:---token=•"], ["${V:---token=${TOKEN}"]);
    expectArgs(['${V:---token=Q"J}'], ["${V:---token=•}"], ["${V:---token=${TOKEN}}"]);
  });
});
