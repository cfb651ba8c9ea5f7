// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { looksProseSecretName, looksSecretName } from "./secret-signs.js";
import { withArgs } from "./test-support/spec-cases.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// r101e, names the finders missed:
// 1. `--creds user:X` and `DB_CREDS=X` were not read as credential names by `looksSecretName`
//    (so not by the args, the command-line words or `findSpecSecrets`), though the script reader
//    took `--creds` for telling: the value was kept in clear. `cred`/`creds` now tell as a word of
//    a name of their own, as `pass` and `pw` do; `--credits`, `incredible`, `CREDIT_LIMIT` do not.

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
