// r104i: a switch's list of msbuild properties (`/p:`, dotnet's `-p:`, `--property:`) was read two
// ways by the order of its pairs: when the first pair told (`/p:Password0=a;Password1=b`), its value
// was taken to the end of the argument (`a;Password1=b`, one reference, `${PASSWORD1}` never
// written), while after a pair that told nothing (`/p:Configuration=Release;Password0=a;
// Password1=b`) each telling pair had a reference of its own — and there a password holding a `;`
// (`Password=pa;ss;word`) had `ss;word` left in clear. Both orders now read alike: one reference
// per telling pair, a value running on over the parts after it that are no pair, so a password
// holding a `;` is hidden whole wherever its pair stands.
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { exportedArgs, withArgs } from "./test-support/spec-cases.js";
import type { AgentSpec } from "./types.js";

const A = "S3cretValue99";
const B = "0therSecret42";

/** The references `findSpecSecrets` lists for `srv build <arg>`. */
const references = (arg: string) =>
  findSpecSecrets(withArgs(["build", arg])).flatMap((hint) => hint.references ?? []);

/** `text` with each `${NAME}` given back what it hid (`filled`). */
const fill = (text: string, filled: Record<string, string>) =>
  text.replace(/\$\{([A-Z0-9_]+)\}/g, (whole, name: string) => filled[name] ?? whole);

describe("a switch's msbuild properties with two telling pairs", () => {
  describe.each(["/p:", "-p:", "--property:"])("given as %s", (lead) => {
    it.each([
      [`Password0=${A};Password1=${B}`, `Password0=\${PASSWORD0};Password1=\${PASSWORD1}`],
      [
        `Configuration=Release;Password0=${A};Password1=${B}`,
        `Configuration=Release;Password0=\${PASSWORD0};Password1=\${PASSWORD1}`,
      ],
      [
        `Password0=${A};Configuration=Release;Password1=${B};`,
        `Password0=\${PASSWORD0};Configuration=Release;Password1=\${PASSWORD1};`,
      ],
    ])("gets one reference per telling pair whichever pair comes first: %s", (pairs, exported) => {
      expect(exportedArgs(["build", lead + pairs])).toEqual(["build", lead + exported]);
      expect(withoutArgSecrets(["build", lead + pairs])).toEqual(["build", lead + exported]);
      expect(references(lead + pairs)).toEqual(["${PASSWORD0}", "${PASSWORD1}"]);
    });
  });

  it.each([
    ["/p:Password=pa;ss;word", "/p:Password=${PASSWORD}"],
    ["/p:Configuration=Release;Password=pa;ss;word", "/p:Configuration=Release;Password=${PASSWORD}"],
    ["-p:Configuration=Release;Password=pa;ss;word;", "-p:Configuration=Release;Password=${PASSWORD};"],
    ["--property:Password=pa;ss;word;OutDir=bin", "--property:Password=${PASSWORD};OutDir=bin"],
    [
      "--property:OutDir=bin;Password=pa;ss;word;OutDir=bin",
      "--property:OutDir=bin;Password=${PASSWORD};OutDir=bin",
    ],
  ])("hides a password holding a ';' whole wherever its pair stands: %s", (arg, exported) => {
    expect(exportedArgs(["build", arg])).toEqual(["build", exported]);
    expect(references(arg)).toEqual(["${PASSWORD}"]);
    // Given back what it hid, the reference restores the argument byte for byte.
    expect(fill(exported, { PASSWORD: "pa;ss;word" })).toBe(arg);
  });

  it("keeps a pair after a telling one that tells nothing in sight, and a list with nothing telling as it is", () => {
    expect(exportedArgs(["build", `/p:Password=${A};OutDir=bin;Configuration=Release`])).toEqual([
      "build",
      "/p:Password=${PASSWORD};OutDir=bin;Configuration=Release",
    ]);
    const plain = "/p:Configuration=Release;OutDir=bin;Platform=x64";
    expect(exportedArgs(["build", plain])).toEqual(["build", plain]);
    expect(findSpecSecrets(withArgs(["build", plain]))).toEqual([]);
  });

  it("flags a connection string in an env value whichever pair comes first", () => {
    for (const value of [
      `Password0=${A};Password1=${B}`,
      `Server=db;Password0=${A};Password1=${B}`,
      "Server=db;Password=pa;ss;word",
    ]) {
      const spec: AgentSpec = {
        spec: SPEC_TOKEN,
        bundle: { mcpServers: [{ name: "srv", command: "srv", env: { CONN: value } }] },
      };
      expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].env.CONN"]);
      // The export removes a server's env: the value is never written.
      expect(JSON.stringify(exportSpec(spec))).not.toContain(A);
    }
  });

  it("reads a long list in work linear in its pairs, whichever pair comes first", async () => {
    const shapes = [
      (count: number) =>
        `/p:${Array.from({ length: count }, (_, i) => `Password${i}=v${i}Secret`).join(";")}`,
      (count: number) =>
        `/p:Configuration=Release;${Array.from({ length: count }, (_, i) => `Password${i}=v${i}Secret`).join(";")}`,
      (count: number) => `/p:Password=pa;${Array.from({ length: count }, (_, i) => `ss${i}`).join(";")}`,
    ];
    for (const shape of shapes) {
      const work = async (count: number) =>
        (await countWork(() => withoutArgSecrets(["build", shape(count)]))).total;
      const small = await work(500);
      const large = await work(4000);
      expect(small).toBeGreaterThan(0);
      expect(large / small).toBeLessThan(16);
    }
  });
});
