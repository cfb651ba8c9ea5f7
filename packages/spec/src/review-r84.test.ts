/// <reference types="node" />
import { growth } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { parseSpec } from "./parse-spec.js";

// Review r84a: a JSON argument's key holding a credential in a pair the argument reader takes only
// at a word's start (a query string's `a=1&password=X`, a JSON text's `"password":"X"`).

// biome-ignore lint/suspicious/noTemplateCurlyInString: the references an export writes, meant literally.
const PASSWORD = "${PASSWORD}";
// biome-ignore lint/suspicious/noTemplateCurlyInString: the references an export writes, meant literally.
const API_KEY = "${API_KEY}";

/** A spec bundling one server given `config` as its JSON argument: that argument exported, what `findSpecSecrets` finds before, and after the export. */
function exportConfig(config: unknown): { arg: string; hints: number; again: number } {
  const doc = {
    spec: "loopwright.agent/1",
    bundle: { mcpServers: [{ name: "s", command: "srv", args: ["--config", JSON.stringify(config)] }] },
  };
  const { spec } = parseSpec(doc, { bundle: true });
  if (spec === undefined) throw new Error("the document did not parse");
  const out = exportSpec(spec);
  return {
    arg: out.bundle?.mcpServers?.[0]?.args?.[1] ?? "",
    hints: findSpecSecrets(spec).length,
    again: findSpecSecrets(out).length,
  };
}

describe("a JSON argument's key holding a telling pair after others", () => {
  it("is written back with the credential replaced, and the values under it named without it", () => {
    // Before: {"a=1&password=Zq7pwabc":{"mode":"${A_1_PASSWORD_ZQ7PWABC_MODE}"}}.
    const { arg, again } = exportConfig({ "a=1&password=Zq7pwabc": { mode: "v" } });
    expect(JSON.parse(arg)).toEqual({
      [`a=1&password=${PASSWORD}`]: { mode: `\${A_1_PASSWORD_PASSWORD_MODE}` },
    });
    expect(again).toBe(0);
  });

  it("is found and written back where nothing under it is flagged", () => {
    // Before: no hint, and the key exported as written.
    const { arg, hints, again } = exportConfig({ "x=1&api_key=Zq7pwabc&y=2": 1 });
    expect(hints).toBe(1);
    expect(JSON.parse(arg)).toEqual({ [`x=1&api_key=${API_KEY}&y=2`]: 1 });
    expect(again).toBe(0);
  });

  it("takes no credential out of any such key shape", () => {
    const secret = "Zq7pwabc";
    for (const key of [
      `?a=1&password=${secret}`,
      `a=1;token=${secret}`,
      `mode: fast, client_secret: ${secret}`,
      `a=1 pwd = ${secret}`,
      `"password":"${secret}"`,
      `{"user":"a","secret":"${secret}"}`,
      `Authorization: Bearer ${secret}`,
      `--password=${secret}`,
      `--password ${secret}`,
    ]) {
      const { arg, hints, again } = exportConfig({ [key]: { mode: "fastmode" }, plain: key.length });
      expect(arg, key).not.toContain(secret);
      expect(hints, key).toBeGreaterThan(0);
      expect(again, key).toBe(0);
    }
  });

  it("keeps a key whose telling pair holds no literal, and a key that does not tell", () => {
    const config = JSON.stringify({
      "a=1&password=${PW}": 1,
      "a=1&mode=Zq7pwabc": 2,
      "a=1&password=": 3,
    });
    expect(withoutArgSecrets(["--config", config])).toEqual(["--config", config]);
  });
});

describe("a long key with no pair in it", () => {
  it("is read in time growing with its length, not its square", async () => {
    // A telling key of one 30,000-character run and an `=` it does not reach: the pair's name was
    // tried from each character of the run (5.5 s; 72 s at 10^5); now about 0.1 s. 320,000 against
    // a run a sixteenth as long in the same run (a fixed 1.5 s failed under load): linear about 16,
    // the square 256, the bound four times from each (a ratio of two timings moved 3 to 4 times on a
    // loaded CI host). Shorter runs are read disproportionately fast (5,000 in a quarter of the time
    // 10,000 takes), which made 5,000 against 40,000 come to 36-39; from 20,000 on, cost is linear.
    const configs = new Map(
      [20_000, 320_000].map((n) => [n, JSON.stringify({ [`password ${"x".repeat(n)}&=`]: 1 })]),
    );
    const read = (n: number) => {
      const config = configs.get(n) as string;
      expect(withoutArgSecrets(["--config", config])).toEqual(["--config", config]);
    };
    expect(await growth(read, 20_000, 16)).toBeLessThan(64);
  });
});
