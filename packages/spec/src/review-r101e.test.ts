// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { looksProseSecretName, looksSecretName } from "./secret-signs.js";
import { exportedArgs, exportedCommand, withArgs } from "./test-support/spec-cases.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// r101e, names the finders missed:
// 1. `--creds user:X` and `DB_CREDS=X` were not read as credential names by `looksSecretName`
//    (so not by the args, the command-line words or `findSpecSecrets`), though the script reader
//    took `--creds` for telling: the value was kept in clear. `cred`/`creds` now tell as a word of
//    a name of their own, as `pass` and `pw` do; `--credits`, `incredible`, `CREDIT_LIMIT` do not.
// 2. Windows-style switches (msbuild's `/p:Password=X`, `net use`'s `/password:X`, `/Password X`)
//    were read as no flag at all, in args and on a pasted command line: kept in clear, and
//    `findSpecSecrets` said nothing. A switch is one `/` and a name, so a Unix path never is one.

const PW = "S3cretValue99";

describe("creds as a word of a name", () => {
  it.each([
    "--creds",
    "--cred",
    "DB_CREDS",
    "aws_creds",
    "awsCreds",
    "db-creds",
    "CREDS",
    "credsFile",
    "creds_path",
  ])("%s is a credential's name", (name) => {
    expect(looksSecretName(name)).toBe(true);
  });

  it.each([
    "--credits",
    "incredible",
    "scredit",
    "CREDIT_LIMIT",
    "sacred",
    "credo",
    "accredited",
    "--credential-less",
  ])("%s is not taken for creds", (name) => {
    // `--credential-less` is telling by `credential` already; the rest tell by nothing.
    expect(looksSecretName(name)).toBe(name === "--credential-less");
  });

  it("a file or path of creds is hidden as a password_file's is (the flag's value may be the secret itself), but in prose it is a setting", () => {
    for (const name of ["credsFile", "creds_path"])
      expect(looksSecretName(name)).toBe(looksSecretName("password_file"));
    expect(looksProseSecretName("creds")).toBe(true);
    expect(looksProseSecretName("creds_file")).toBe(looksProseSecretName("password_file"));
    expect(looksProseSecretName("street cred")).toBe(false);
  });

  it("hides --creds and DB_CREDS in args, on a pasted command line, and reports them", () => {
    expect(withoutArgSecrets(["--creds", `user:${PW}`])).toEqual(["--creds", "${CREDS}"]);
    expect(withoutArgSecrets([`--creds=user:${PW}`])).toEqual(["--creds=${CREDS}"]);
    expect(withoutArgSecrets([`DB_CREDS=${PW}`])).toEqual(["DB_CREDS=${DB_CREDS}"]);
    expect(withoutCommandLineSecrets(`tool --creds user:${PW}`)).not.toContain(PW);
    expect(withoutCommandLineSecrets(`DB_CREDS=${PW} run`)).not.toContain(PW);
    expect(
      findSpecSecrets(withArgs(["--creds", `user:${PW}`])).map((hint) => `${hint.path} ${hint.sign}`),
    ).toEqual(["bundle.mcpServers[0].args[1] flag"]);
    expect(findSpecSecrets(withArgs([`DB_CREDS=${PW}`])).map((hint) => hint.path)).toEqual([
      "bundle.mcpServers[0].args[0]",
    ]);
  });

  it("leaves --credits, CREDIT_LIMIT and incredible values in sight", () => {
    expect(withoutArgSecrets(["--credits", "500", "CREDIT_LIMIT=9000", "--incredible", "yes"])).toEqual([
      "--credits",
      "500",
      "CREDIT_LIMIT=9000",
      "--incredible",
      "yes",
    ]);
    expect(withoutCommandLineSecrets("tool --credits 500 CREDIT_LIMIT=9000")).toBe(
      "tool --credits 500 CREDIT_LIMIT=9000",
    );
  });
});

describe("a Windows-style switch", () => {
  it.each([
    [[`/p:Password=${PW}`], [`/p:Password=\${PASSWORD}`]],
    // msbuild's `;` between properties is read (r104i): the property after a telling one is its
    // own, as it is when a property that tells nothing comes first; a part that is no pair would
    // stay the value's (see review-r104i.test.ts).
    [
      [`/property:DbPassword=${PW};Configuration=Release`],
      ["/property:DbPassword=${DBPASSWORD};Configuration=Release"],
    ],
    [[`/password:${PW}`], [`/password:\${PASSWORD}`]],
    [
      [`/Password`, PW],
      ["/Password", "${PASSWORD}"],
    ],
    [[`/token:${PW}`], [`/token:\${TOKEN}`]],
  ])("has its value hidden in args and is reported: %j", (args, exported) => {
    expect(withoutArgSecrets(args)).toEqual(exported);
    expect(exportedArgs(args)).toEqual(exported);
    expect(findSpecSecrets(withArgs(args)).map((hint) => hint.sign)).toEqual(["flag"]);
  });

  it.each([
    [`msbuild /p:Password=${PW} app.sln`, "msbuild /p:Password=${PASSWORD} app.sln"],
    [
      `net use \\\\host\\share /user:admin /password:${PW}`,
      "net use \\\\host\\share /user:admin /password:${PASSWORD}",
    ],
    [`robocopy a b /Password ${PW}`, "robocopy a b /Password ${PASSWORD}"],
  ])("is hidden on a pasted command line: %s", (line, safe) => {
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(exportedCommand(line)).not.toContain(PW);
  });

  it.each([
    ["/etc/passwd"],
    ["/usr/bin/password-helper"],
    ["/opt/token/bin"],
    ["/p:Configuration=Release"],
    ["/verbosity:minimal"],
  ])("leaves a Unix path or a switch that tells nothing as it is: %s", (arg) => {
    expect(withoutArgSecrets([arg, "next-value-1"])).toEqual([arg, "next-value-1"]);
    expect(withoutCommandLineSecrets(`tool ${arg} next-value-1`)).toBe(`tool ${arg} next-value-1`);
    expect(findSpecSecrets(withArgs([arg, "next-value-1"]))).toEqual([]);
  });

  it("any spelling of a telling switch hides any value, and a path beside it stays (property)", () => {
    const switchName = fc.constantFrom(
      "password",
      "Password",
      "PASSWORD",
      "pwd",
      "token",
      "ApiKey",
      "secret",
      "DbPassword",
    );
    const value = fc.string({
      unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+@!"),
      minLength: 8,
      maxLength: 24,
    });
    const form = fc.constantFrom("colon", "msbuild", "alone");
    const path = fc.constantFrom(
      "/etc/passwd",
      "/usr/bin/password-helper",
      "/var/lib/token-cache",
      "/home/app/.secrets/x",
    );
    fc.assert(
      fc.property(switchName, value, form, path, (name, v, shape, kept) => {
        const args =
          shape === "colon" ? [`/${name}:${v}`] : shape === "msbuild" ? [`/p:${name}=${v}`] : [`/${name}`, v];
        const all = [kept, ...args, kept];
        for (const out of [withoutArgSecrets(all), exportedArgs(all) ?? []]) {
          expect(out.join(" ")).not.toContain(v);
          expect(out[0]).toBe(kept);
          expect(out[out.length - 1]).toBe(kept);
        }
        expect(findSpecSecrets(withArgs(all)).length).toBeGreaterThan(0);
        const line = `tool ${all.join(" ")}`;
        const shown = withoutCommandLineSecrets(line);
        expect(shown).not.toContain(v);
        expect(shown.startsWith(`tool ${kept} `)).toBe(true);
        expect(shown.endsWith(` ${kept}`)).toBe(true);
      }),
      propertyRuns(100),
    );
  });
});

// 3. sqlcmd's `-P X` (and `/P X`, bcp's and osql's alike) was read only as a script's telling
//    shape: given as a server's command and args, or pasted as its command line, the password was
//    kept in clear and `findSpecSecrets` said nothing.
describe("sqlcmd's password flag", () => {
  const sqlcmd = (command: string, args?: string[]) => ({
    spec: "loopwright.agent/1",
    bundle: { mcpServers: [{ name: "db", command, ...(args ? { args } : {}) }] },
  });

  it.each([
    ["sqlcmd", ["-S", "db", "-U", "sa", "-P", PW]],
    ["sqlcmd.exe", ["/S", "db", "/U", "sa", "/P", PW]],
    ["bcp", ["t", "out", "f", "-U", "sa", "-P", PW]],
  ])("is reported after %s in args", (command, args) => {
    expect(
      findSpecSecrets(sqlcmd(command, args) as never).map((hint) => `${hint.path} ${hint.sign}`),
    ).toEqual([`bundle.mcpServers[0].args[${args.length - 1}] flag`]);
  });

  it.each([
    [`sqlcmd -S db -U sa -P ${PW} -Q "select 1"`, 'sqlcmd -S db -U sa -P ${PASSWORD} -Q "select 1"'],
    [`sqlcmd.exe /S db /U sa /P ${PW}`, "sqlcmd.exe /S db /U sa /P ${PASSWORD}"],
  ])("is hidden on a pasted command line: %s", (line, safe) => {
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(findSpecSecrets(sqlcmd(line) as never)).toHaveLength(1);
  });

  it("leaves another program's -P (a port) as it is", () => {
    for (const line of ["ssh -P 22 host", "tool -P 8080", "scp -P 2222 a b:c"])
      expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});
