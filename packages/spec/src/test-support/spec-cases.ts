// The spec tests' shared builders: a spec whose one bundled server `srv` carries the text under
// test (as its args, as one `--run` argument, or pasted whole as its `command`), readers for what
// the export makes of it, and the checks those tests repeat: the display and the export side by
// side, and the fill-back (each reference, given back what it hid, restores the text byte for byte).
// Test-only: not in the build (tsup's entry is src/index.ts) nor in the package ("!src/test-support").
import { expect } from "vitest";
import { exportSpec } from "../export-spec.js";
import {
  commandLineSecrets,
  findSpecSecrets,
  withoutArgSecrets,
  withoutSecrets,
} from "../find-spec-secrets.js";
import { parseSpec } from "../parse-spec.js";
import { SPEC_TOKEN } from "../schema.js";
import type { AgentSpec } from "../types.js";
import { withoutCommandLineSecrets } from "../without-command-line-secrets.js";

/** A spec whose bundled server `srv` is given `args`, word by word. */
export const withArgs = (args: string[]): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: { mcpServers: [{ name: "srv", command: "srv", args }] },
});

/** A spec whose bundled server `srv` is given `line` as one argument: `srv --run <line>`. */
export const asArg = (line: string): AgentSpec => withArgs(["--run", line]);

/** A spec whose bundled server `srv` has `line` as its `command`: a whole command line, pasted. */
export const pasted = (line: string): AgentSpec => ({
  spec: SPEC_TOKEN,
  bundle: { mcpServers: [{ name: "srv", command: line }] },
});

/**
 * `value` in an `extraBody` string and a bundled server's env variable (both under a name that tells
 * nothing): the places `findSpecSecrets` flags, and the `extraBody` string the export writes.
 */
export function placedValue(value: string): { flagged: string[]; exported: unknown } {
  const spec: AgentSpec = {
    spec: SPEC_TOKEN,
    model: { extraBody: { config: value } },
    bundle: { mcpServers: [{ name: "srv", command: "srv", env: { CONFIG: value } }] },
  };
  return {
    flagged: findSpecSecrets(spec).map((hint) => hint.path),
    exported: exportSpec(spec).model?.extraBody?.config,
  };
}

/** The args the export writes for `srv` given `args` (see `withArgs`). */
export const exportedArgs = (args: string[]) => exportSpec(withArgs(args)).bundle?.mcpServers?.[0]?.args;

/** The argument the export writes for `line` given as `srv --run <line>` (see `asArg`). */
export const exportedArg = (line: string) => exportSpec(asArg(line)).bundle?.mcpServers?.[0]?.args?.[1];

/** The command the export writes for `line` pasted as `srv`'s command (see `pasted`). */
export const exportedCommand = (line: string) => exportSpec(pasted(line)).bundle?.mcpServers?.[0]?.command;

/** The export's and the display's references, filled back with what they hid, give `line` byte for byte. */
export function expectFilledBack(line: string): void {
  expect(commandLineSecrets(line, (text) => text)?.safe ?? line).toBe(line);
  expect(withoutCommandLineSecrets(line, (text) => text)).toBe(line);
}

/** `args`' references, filled back with what they hid, give `args` byte for byte. */
export function expectArgFilledBack(args: string[]): void {
  expect(withoutArgSecrets(args, (text) => text)).toEqual(args);
}

/** `args` shown as `shown` (each hidden part `•`), exported as `exported`, and filled back byte for byte. */
export function expectArgs(args: string[], shown: string[], exported: string[]): void {
  expect(withoutArgSecrets(args, () => "•")).toEqual(shown);
  expect(exportedArgs(args)).toEqual(exported);
  expectArgFilledBack(args);
}

/** A string value (an env value, a header, a URL) is written `safe` without its secrets, and filled back gives `value` byte for byte. */
export function expectStringHidden(value: string, safe: string): void {
  expect(withoutSecrets(value)).toBe(safe);
  expect(withoutSecrets(value, undefined, (text) => text)).toBe(value);
}

/** `line` is shown as `shown` with each hidden stretch a `•`, exported as `exported`, and filled back byte for byte. */
export function expectHiddenLine(line: string, shown: string, exported: string | undefined): void {
  expect(withoutCommandLineSecrets(line, () => "•")).toBe(shown);
  expect(exportedCommand(line)).toBe(exported);
  expectFilledBack(line);
}

/** `line` is shown as `shown` and, pasted, exported as `safe` (`shown` unless given). */
export function expectShownAndExported(line: string, shown: string, safe: string = shown): void {
  expect(withoutCommandLineSecrets(line)).toBe(shown);
  expect(exportedCommand(line)).toBe(safe);
}

/** `line` names no literal secret: shown and, pasted, exported as written. */
export function expectKept(line: string): void {
  expectShownAndExported(line, line);
}

/**
 * `text` without its references' names (a `${Q}` or `${J-}` is one, and goes; `${V:-` and `}` aside,
 * a default's word is literal text, and is looked at).
 */
export const outsideReferences = (text: string) =>
  text.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-=?+])?\}?/g, "");

/** How often `text` writes the payload `curl e|sh`. */
export const payloadsIn = (text: string) => text.split("curl e|sh").length - 1;

/**
 * A spec whose `model.extraBody` is `extraBody`: `findSpecSecrets` reports `found` (each place's
 * path and the references written there, `"model.extraBody.q ${TOKEN}"`), the export writes
 * `exported` there, and the export is found nowhere and exports as it is.
 */
export function expectExtraBodyExported(
  extraBody: Record<string, unknown>,
  found: string[],
  exported: Record<string, unknown>,
): void {
  const { spec } = parseSpec({ spec: SPEC_TOKEN, model: { name: "m", extraBody } });
  if (spec === undefined) throw new Error("the document did not parse");
  expect(findSpecSecrets(spec).map((hint) => `${hint.path} ${hint.references?.join(" ")}`)).toEqual(found);
  const out = exportSpec(spec);
  expect(out.model?.extraBody).toEqual(exported);
  expect(findSpecSecrets(out)).toEqual([]);
  expect(exportSpec(out)).toEqual(out);
}
