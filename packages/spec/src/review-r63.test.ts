// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// Review r63: a server's `command` that is one shell assignment and nothing else (`TOKEN=X`, no
// blank, no `;`) was not read at all, so it was exported with the credential in clear and no hint,
// while the display of the same line hid it.

/** A spec with one bundled server `srv` whose pasted `command` is `command`. */
function pasted(command: string): AgentSpec {
  return { spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: "srv", command }] } };
}

/** Each `${NAME}` filled from `env`. */
function filled(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (ref, name: string) => env[name] ?? ref);
}

describe("a pasted command that is one assignment is read as the display reads it", () => {
  it.each([
    ["TOKEN=X9secretPWxHOST", "TOKEN=${TOKEN}", { TOKEN: "X9secretPWxHOST" }],
    ["Password=X9secretPWx$HOST", "Password=${PASSWORD}", { PASSWORD: "X9secretPWx$HOST" }],
    ["API_KEY=X9secretPW", "API_KEY=${API_KEY}", { API_KEY: "X9secretPW" }],
    ['DB_PASSWORD="X9 secretPW"', 'DB_PASSWORD="${DB_PASSWORD}"', { DB_PASSWORD: "X9 secretPW" }],
  ])("%s is exported as %s, hinted, and fills back", (command, want, env) => {
    const spec = pasted(command);
    expect(findSpecSecrets(spec).map((hint) => [hint.path, hint.references])).toEqual([
      ["bundle.mcpServers[0].command", Object.keys(env).map((name) => `\${${name}}`)],
    ]);
    const out = exportSpec(spec).bundle?.mcpServers?.[0]?.command ?? "";
    expect(out).toBe(want);
    expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
    expect(filled(out, env)).toBe(command);
    expect(withoutCommandLineSecrets(command)).not.toContain("X9secretPW");
  });

  it.each([
    "PORT=8080",
    "HOME=/root",
    "TOKEN=${TOKEN}",
    "TOKEN=$(cat /run/secrets/t)",
    "A=b",
    "/usr/bin/srv",
  ])("%s, which holds no credential, is kept as written", (command) => {
    expect(findSpecSecrets(pasted(command))).toEqual([]);
    expect(exportSpec(pasted(command))).toEqual(pasted(command));
  });
});

// Review r63 R63-1: a program in the shell's '…' writes its quotes with the shell's `'\''` idiom
// (`TOKEN: '\''X'\''`). The reader took the idiom's quotes for the value, so the display of a
// spread or Object.assign showed the literal between them; Python's `os.environ['\''TOKEN'\'']`
// was not read at all, in the display or as an argument (exported in clear, no hint).
describe("a program literal quoted with the shell's '\\'' idiom", () => {
  const S = "X9secretPW";
  it.each([
    [
      `node -e 'x = {...process.env, TOKEN: '\\''${S}'\\'' + x}'`,
      "node -e 'x = {...process.env, TOKEN: ${TOKEN} + x}'",
    ],
    [
      `node -e 'Object.assign(process.env, {TOKEN: '\\''${S}'\\'' + x})'`,
      "node -e 'Object.assign(process.env, {TOKEN: ${TOKEN} + x})'",
    ],
    [`node -e 'process.env.TOKEN = '\\''${S}'\\'' + x'`, "node -e 'process.env.TOKEN = ${TOKEN} + x'"],
    [
      `python -c 'import os; os.environ['\\''TOKEN'\\''] = '\\''${S}'\\'' + x'`,
      "python -c 'import os; os.environ['\\''TOKEN'\\''] = ${TOKEN} + x'",
    ],
  ])("%s is shown as %s, the code after it in sight", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
    // As an argument: hidden (hinted) and filled back byte for byte.
    const hidden: string[] = [];
    const [out] = withoutArgSecrets([line], (secret) => `<${hidden.push(secret) - 1}>`);
    expect(out).not.toContain(S);
    expect(out?.replace(/<(\d+)>/g, (_, i: string) => hidden[Number(i)] ?? "")).toBe(line);
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: { mcpServers: [{ name: "srv", command: "srv", args: ["--run", line] }] },
    };
    expect(findSpecSecrets(spec)).toHaveLength(1);
    expect(JSON.stringify(exportSpec(spec))).not.toContain(S);
  });
});
