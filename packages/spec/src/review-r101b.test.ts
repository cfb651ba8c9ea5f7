// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutProseSecrets } from "./prose-secrets.js";
import {
  expectArgFilledBack,
  expectArgs,
  expectFilledBack,
  expectHiddenLine,
  exportedArgs,
  exportedCommand,
  withArgs,
} from "./test-support/spec-cases.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// r101b, reviewing spec against hostile input:
// 1. A header given as a flag's value (`--header=X-Api-Key: X`, the spelling yargs- and
//    commander-based MCP launchers accept beside `--header "X-Api-Key: X"`) was read as a value
//    alone, so a credential under a telling header name and of no key shape was kept in clear in
//    the args, in a pasted command line (`srv --header='X-Api-Key: X'`) and in prose, and
//    `findSpecSecrets` said nothing; the same header after `--header` as its own word was hidden.

const PW = "S3cretValue99";

describe("a header given as a flag's value", () => {
  it.each([
    [`--header=X-Api-Key: ${PW}`, "--header=X-Api-Key: •", "--header=X-Api-Key: ${X_API_KEY}"],
    [`--header=X-API-KEY:${PW}`, "--header=X-API-KEY:•", "--header=X-API-KEY:${X_API_KEY}"],
    [`-H=Authorization: Token ${PW}`, "-H=Authorization: •", "-H=Authorization: ${AUTHORIZATION}"],
  ])("has its value hidden in args, as after --header on its own: %j", (arg, shown, exported) => {
    expectArgs([arg], [shown], [exported]);
    expect(findSpecSecrets(withArgs([arg])).map((hint) => `${hint.path} ${hint.sign}`)).toEqual([
      "bundle.mcpServers[0].args[0] flag",
    ]);
  });

  it("is hidden on a pasted command line, quoted or not", () => {
    expectHiddenLine(
      `srv --header='X-Api-Key: ${PW}'`,
      "srv --header='X-Api-Key: •'",
      "srv --header='X-Api-Key: ${X_API_KEY}'",
    );
    expectHiddenLine(
      `srv '--header=X-Api-Key: ${PW}'`,
      "srv '--header=X-Api-Key: •'",
      "srv '--header=X-Api-Key: ${X_API_KEY}'",
    );
    expectHiddenLine(
      `srv --header=X-Api-Key:${PW}`,
      "srv --header=X-Api-Key:•",
      "srv --header=X-Api-Key:${X_API_KEY}",
    );
  });

  it("is hidden in prose", () => {
    expect(withoutProseSecrets(`Run curl --header="X-Api-Key: ${PW}" https://h/v1`)).toBe(
      'Run curl --header="X-Api-Key: ${X_API_KEY}" https://h/v1',
    );
  });

  it("keeps a header whose name tells nothing, and a reference, as written", () => {
    const args = [
      "--header=Accept: application/json",
      "--header=X-Api-Key: ${API_KEY}",
      "--header=X-Request-Id: a1b2c3d4e5",
    ];
    expect(exportedArgs(args)).toEqual(args);
    expect(findSpecSecrets(withArgs(args))).toEqual([]);
    expect(withoutProseSecrets('Send --header="Accept: application/json" too')).toBe(
      'Send --header="Accept: application/json" too',
    );
  });
});

describe("property: a header given as a flag's value", () => {
  const flag = fc.constantFrom("--header", "-H", "--http-header", "--headers");
  const name = fc.constantFrom(
    "X-Api-Key",
    "Authorization",
    "api-key",
    "X-Auth-Token",
    "Private-Token",
    "x-goog-api-key",
    "Ocp-Apim-Subscription-Key",
    "Proxy-Authorization",
  );
  const colon = fc.constantFrom(":", ": ", ":  ");
  const scheme = fc.constantFrom("", "Bearer ", "Token ", "Basic ");
  const value = fc.string({
    unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+/="),
    minLength: 8,
    maxLength: 40,
  });

  it("never shows or exports the value, in args or on a pasted line, and fills back byte for byte", () => {
    fc.assert(
      fc.property(flag, name, colon, scheme, value, (f, n, c, sc, v) => {
        const arg = `${f}=${n}${c}${sc}${v}`;
        for (const out of [...(exportedArgs([arg]) ?? []), ...withoutArgSecrets([arg])]) {
          expect(out).not.toContain(v);
        }
        expect(findSpecSecrets(withArgs([arg]))).toHaveLength(1);
        expectArgFilledBack([arg]);
        const line = `srv '${arg}'`;
        expect(withoutCommandLineSecrets(line)).not.toContain(v);
        expect(exportedCommand(line)).not.toContain(v);
        expectFilledBack(line);
      }),
      // Before the fix: ["--header", "X-Api-Key", ":", "", "aaaaaaaa"], kept in clear (the named tests above).
      propertyRuns(200),
    );
  });
});
