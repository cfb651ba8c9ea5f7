// Review r103d: what last round left in this package. A `/p:` argument's telling pairs
// (msbuild's `/p:A_Password=X;B_Password=Y;…`) made secrets quadratic in their number: each pair's
// value was also kept to the end of the argument, so 2,000 pairs in a 60 kB argument made 61 MB of
// secrets to mask every report and result of the server with.
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import type { McpServerConfig } from "./config.js";
import { masker, resultSecretsOf, secretsOf } from "./redact.js";

/** A dotnet server given `pairs` telling properties in one `/p:` argument. */
const manyPasswords = (pairs: number): McpServerConfig => ({
  name: "x",
  type: "stdio",
  command: "dotnet",
  args: ["run", `/p:${Array.from({ length: pairs }, (_, i) => `Password${i}=secret-value-${i}`).join(";")}`],
});

describe("a server's argument holding many telling `key=value` pairs", () => {
  it("is read into secrets and a masker with work that grows with the argument, not its square", async () => {
    const work = async (pairs: number) =>
      (await countWork(() => masker(secretsOf(manyPasswords(pairs))))).total;
    const small = await work(500);
    const large = await work(2000);
    // Four times the pairs: about four times the work. Each value read to the end of the argument
    // made it about sixteen times (12 million regular-expression runs against 850 thousand).
    expect(large / small).toBeLessThan(6);
  });

  it("holds its secrets in at most about twice the argument's length", () => {
    const server = manyPasswords(2000);
    const length = (server.type === "stdio" ? (server.args[1] as string) : "").length;
    const held = secretsOf(server).reduce((sum, secret) => sum + secret.length, 0);
    expect(held).toBeLessThan(2 * length);
  });

  it("still masks a password holding a `;` between two other telling pairs, echoed alone", () => {
    const server: McpServerConfig = {
      name: "x",
      type: "stdio",
      command: "dotnet",
      args: ["run", "/p:ApiKey=key-1111;Password=zq9x;vw7y-22;Token=tok-3333"],
    };
    const mask = masker(resultSecretsOf(server));
    expect(mask("the password is zq9x;vw7y-22 here")).toBe("the password is *** here");
    expect(mask("ApiKey=key-1111;Password=zq9x;vw7y-22;Token=tok-3333")).not.toMatch(
      /key-1111|zq9x|vw7y|tok-3333/,
    );
  });
});
