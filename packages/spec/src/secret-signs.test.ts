import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findSpecSecrets, withoutArgSecrets, withoutSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { looksSecretName } from "./secret-signs.js";
import type { AgentSpec } from "./types.js";

describe("looksSecretName reads pass as a word of a name as a password's", () => {
  it.each([
    "pass",
    "PASS",
    "Pass",
    "DB_PASS",
    "db-pass",
    "db.pass",
    "dbPass",
    "PASS_WORD",
    "pass-word",
    "SMTP_PASS2",
    "--pass",
    "-pass",
    "passphrase",
    "GPG_PASSPHRASE",
    "--key-passphrase",
    // A client's own password variable, pass joined to its name (r45 F6).
    "SSHPASS",
    "SMBPASS",
    // pw, a word of its own (r45 F6 follow-up).
    "pw",
    "PW",
    "DB_PW",
    "--pw",
    "dbPw",
  ])("%s is telling", (name) => {
    expect(looksSecretName(name)).toBe(true);
  });

  it.each([
    "passive",
    "compass",
    "bypass_cache",
    "BYPASS_CACHE",
    "passage",
    "passes",
    "PASSENGER",
    "passthrough",
    "compassRose",
    "surpass",
    "pwsh",
    "npw",
    "--pwsh-path",
  ])("%s is not: pass or pw inside another word", (name) => {
    expect(looksSecretName(name)).toBe(false);
  });

  it("makes any name telling where pass stands as a word of its own (property)", () => {
    const word = fc.stringMatching(/^[a-z]{1,8}$/);
    const cut = fc.constantFrom("_", "-", ".", "/", "2");
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 3 }),
        fc.array(word, { maxLength: 3 }),
        cut,
        fc.constantFrom("pass", "PASS", "Pass"),
        (before, after, sep, pass) => {
          const name = [...before, pass, ...after].join(sep);
          expect(looksSecretName(name), name).toBe(true);
          expect(looksSecretName(name.toUpperCase()), name).toBe(true);
        },
      ),
    );
  });
});

describe("findSpecSecrets, withoutArgSecrets and withoutSecrets take a value under a pass name", () => {
  const marker = (secret: string, name: string | undefined) => `<${name ?? "?"}:${secret.length}>`;

  it("hides --pass X, --pass=X, docker's -e DB_PASS=X and a DB_PASS env value", () => {
    expect(
      withoutArgSecrets(["--pass", "hunter2", "--db-pass=hunter3", "-e", "DB_PASS=hunter4"], marker),
    ).toEqual(["--pass", "<pass:7>", "--db-pass=<db-pass:7>", "-e", "DB_PASS=<DB_PASS:7>"]);
    expect(withoutSecrets("hunter5", "DB_PASS", marker)).toBe("<DB_PASS:7>");
    expect(withoutSecrets("hunter6", "dbPass", marker)).toBe("<dbPass:7>");
  });

  it("names each place in a bundled server and leaves a bypass or a compass flag alone", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          {
            name: "db",
            command: "docker",
            args: [
              "run",
              "-e",
              "DB_PASS=hunter4",
              "--pass",
              "hunter2",
              "--bypass-cache",
              "on",
              "--compass",
              "n",
            ],
            env: { SMTP_PASS: "hunter7", BYPASS_CACHE: "yes" },
          },
        ],
      },
    };
    expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual([
      "bundle.mcpServers[0].args[2]",
      "bundle.mcpServers[0].args[4]",
      "bundle.mcpServers[0].env.SMTP_PASS",
    ]);
  });
});
