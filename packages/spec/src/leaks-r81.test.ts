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

// fix181: leaks fix180 saw and left.
// 1. An argument holding a command substitution whose quote is left open in it (`["$(TOKEN=QQ\"x)"]`)
//    was read as a command line, which flagged nothing: `QQ` kept in clear in both views. The shell
//    refuses such a text; it goes to the refused-line rule now, as the same text pasted does.
// 2. The same pair with text after a blank (`srv https://h/p?a=1&sig=${V:-J Q`): the display hid it to
//    the end, the export showed ` Q` (its later round drops the pair with the URL's query, a reading
//    that stops at the blank). The export reads such a pair as the display does when a blank follows
//    the URL; one with none is exported as before (the URL's query dropped whole).
// 3. A default's literal word read in place with literal text after its `}` (`srv ${V:-TOKEN=QJ}\\`):
//    the value's text crossed the `}`, so the word was written again in '…' (`'TOKEN=QJ\\'`
//    filled back), the display dropping `${V:-`. The value's own text is hidden where it is written
//    now, where it holds no quote: piece by piece, the default's `}` kept (fix182: hidden whole, the
//    export left `${V:-` open).
// 4. A continued pair left open by a default at the line's end (fix180 #6) after a URL whose query
//    value holds a run-time part with a blank in it (`srv https://h/p?token=$(a b)x&code=${V:-J`)
//    showed `J` in the display: the part's own words, listed between the URL and the `&`, hid the
//    glue, and the URL's blank failed its query's shape. The `&` and the URL are now the words before
//    the pair that are no part's, and a closed `$(…)`/backtick part is one piece of the URL. The
//    export showed `J` too (its first round dropped the URL's query, leaving the pair); it reads
//    the pair as #2's now.

describe("an argument holding a command substitution that leaves a quote open", () => {
  it.each([['$(TOKEN=QQ"x)'], ["$(TOKEN=QQ'x)"]])("%s: the telling name's value hidden to the end", (arg) => {
    expectArgs([arg], ["$(TOKEN=•"], ["$(TOKEN=${TOKEN}"]);
    expectArgs(["--run", arg], ["--run", "$(TOKEN=•"], ["--run", "$(TOKEN=${TOKEN}"]);
  });

  it("pasted, read as before", () => {
    expectHiddenLine('srv $(TOKEN=QQ"x)', "srv $(TOKEN=•", "srv $(TOKEN=${TOKEN}");
  });
});

describe("a continued pair left open at the line's end after a URL whose run-time part holds a blank", () => {
  it.each([
    [
      "srv https://h/p?token=$(a b)x&code=${V:-J",
      "srv https://h/p?token=$(a b)•&code=•",
      "srv https://h/p&code=${CODE}",
    ],
    [
      "srv https://h/p?a=`a b`&code=${V:-J",
      "srv https://h/p?a=`a b`&code=•",
      "srv https://h/p?a=`a b`&code=${CODE}",
    ],
    [
      "srv https://h/p?page=$(a b)&sig=${V:-JQ",
      "srv https://h/p?page=$(a b)&sig=•",
      "srv https://h/p?page=$(a b)&sig=${SIG}",
    ],
  ])("%s: the pair's value hidden in both views", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });
});

describe("a continued pair left open at the line's end, text after a blank in its word", () => {
  it.each([
    ["srv https://h/p?a=1&sig=${V:-J Q", "srv https://h/p?a=1&sig=•", "srv https://h/p?a=1&sig=${SIG}"],
    ["srv https://h/p?a=1&code=${V:-J Q x", "srv https://h/p?a=1&code=•", "srv https://h/p?a=1&code=${CODE}"],
  ])("%s: hidden to the end in both views", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("with no blank, or a pair that does not tell, exported as before", () => {
    expect(exportedCommand("srv https://h/p?a=1&sig=${V:-JQ")).toBe("srv https://h/p?a=1");
    expectHiddenLine(
      "srv https://h/p?a=1&page=${V:-J Q",
      "srv https://h/p?a=1&page=${V:-J Q",
      "srv https://h/p?a=1&page=${V:-J Q",
    );
  });
});

describe("a default's literal word read in place, literal text after its `}`", () => {
  it.each([
    // fix182: hidden whole, its `}` in the reference, the export left `${V:-` open (a reader of
    // references keeps such a one as written, `${TOKEN}` unfilled): each piece is hidden in place now.
    ["srv ${V:-TOKEN=QJ}\\", "srv ${V:-TOKEN=•}\\", "srv ${V:-TOKEN=${TOKEN}}\\"],
    ["srv ${V:-TOKEN=QJ}x", "srv ${V:-TOKEN=•}•", "srv ${V:-TOKEN=${TOKEN}}${TOKEN_2}"],
    ["srv ${V:-TOKEN=QJ}\\x y", "srv ${V:-TOKEN=•}• y", "srv ${V:-TOKEN=${TOKEN}}${TOKEN_2} y"],
    ["srv ${V:-TOKEN=\\QJ}x", "srv ${V:-TOKEN=•}•", "srv ${V:-TOKEN=${TOKEN}}${TOKEN_2}"],
  ])(
    "%s: the value hidden where it is written, the default closed as written, filled back byte for byte",
    (line, shown, exported) => {
      expectHiddenLine(line, shown, exported);
    },
  );

  it.each([["--run"], ["-c"]])("given as one argument after %s: filled back byte for byte", (flag) => {
    expectArgFilledBack([flag, "srv ${V:-TOKEN=QJ}\\"]);
    expectArgFilledBack([flag, "srv ${V:-TOKEN=QJ}x"]);
  });

  it("closed at the word's end: read as before", () => {
    expectHiddenLine("srv ${V:-TOKEN=QJ}", "srv ${V:-TOKEN=•}", "srv ${V:-TOKEN=${TOKEN}}");
  });
});

// fix182: a continued query pair whose name no rule for args reads (`%74oken`, a percent-encoded
// `token`) and whose value is a literal default read in place (`&%74oken=${V:-JJ}`): the pair was
// not written as it reads, so it was left to the rules for args, which read no `NAME=` there, and
// `JJ` was kept in clear in both views, pasted and in an argument.
describe("a continued pair with a percent-encoded telling name, its value a default", () => {
  it.each([
    [
      "srv https://h/p?a=1&%74oken=${V:-JJ}",
      "srv https://h/p?a=1&%74oken=${V:-•}",
      "srv https://h/p?a=1&%74oken=${V:-${_74OKEN}}",
    ],
    [
      "srv https://h/p?a=1&%74oken=${V:-${W:-JJ}}",
      "srv https://h/p?a=1&%74oken=${V:-${W:-•}}",
      "srv https://h/p?a=1&%74oken=${V:-${W:-${_74OKEN}}}",
    ],
  ])("%s: the default's word hidden in place in both views", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
    expectArgs(["--run", line], ["--run", shown], ["--run", exported]);
  });

  it("a name that does not tell, or a default that is a reference: kept", () => {
    expectHiddenLine(
      "srv https://h/p?a=1&page=${V:-JJ}",
      "srv https://h/p?a=1&page=${V:-JJ}",
      "srv https://h/p?a=1&page=${V:-JJ}",
    );
    expectHiddenLine(
      "srv https://h/p?a=1&%74oken=${V:-$W}",
      "srv https://h/p?a=1&%74oken=${V:-$W}",
      "srv https://h/p?a=1&%74oken=${V:-$W}",
    );
  });

  it("property: no letter of the default's word in clear in either view, filled back byte for byte", () => {
    const name = fc.constantFrom("%74oken", "%74%6Fken", "api%5Fkey", "token");
    const inner = fc.stringMatching(/^[JQ]{1,6}$/);
    const wrap = fc.constantFrom(
      (w: string) => `\${V:-${w}}`,
      (w: string) => `\${V:-\${W:-${w}}}`,
    );
    const before = fc.constantFrom("", "&c=2", "&b=${X}");
    fc.assert(
      fc.property(name, inner, wrap, before, (n, w, f, b) => {
        const line = `srv https://h/p?a=1${b}&${n}=${f(w)}`;
        for (const text of [withoutCommandLineSecrets(line, () => "•"), exportedCommand(line) ?? ""])
          expect(text).not.toMatch(/[JQ]/);
        expectFilledBack(line);
        const args = ["--run", line];
        expect(withoutArgSecrets(args, () => "•")[1]).not.toMatch(/[JQ]/);
        expect(exportedArgs(args)?.[1]).not.toMatch(/[JQ]/);
        expectArgFilledBack(args);
      }),
      propertyRuns(200),
    );
  });
});

// fix182: a shell's own command the shell refuses, its telling name's value a default left open
// (`sh -c 'srv --token ${V:-JJ'`): its telling word was given by a reference (`--token ${V`) for
// `scriptTells`, and the reading of a line the shell accepts flagged nothing, so `JJ` was kept in
// clear in both views. Such a command is replaced whole now, as one holding a telling literal is.
describe("a shell's own command left open in a default after a telling name", () => {
  it.each([["srv --token ${V:-JJ"], ["srv TOKEN=${V:-JJ"], ["srv https://h/p?a=1&token=${V:-JJ"]])(
    "sh -c %s: replaced whole in both views",
    (script) => {
      expectArgs(["-c", script], ["-c", "•"], ["-c", "${SRV_COMMAND}"]);
    },
  );

  it("pasted after sh -c, exported whole", () => {
    expect(exportedCommand("sh -c 'srv --token ${V:-JJ'")).toBe("${SRV_COMMAND}");
  });

  it("one whose default follows no telling name, or that closes: as before", () => {
    expectArgs(["-c", "srv --port ${V:-80"], ["-c", "srv --port ${V:-80"], ["-c", "srv --port ${V:-80"]);
    expectArgs(["-c", "srv --token ${V}"], ["-c", "srv --token ${V}"], ["-c", "srv --token ${V}"]);
  });
});
