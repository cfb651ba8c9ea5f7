// Review r103d: what last round left in this package. A tool result holding one content part of a
// type MCP lacks (`video`) failed the whole call: the SDK's schema of a result refused it, so the
// model read `call-failed` and lost the text and image parts beside it. And the schema's copy of
// the structured content lost a key named `__proto__`, as its copy of a listed tool's input schema
// lost a property of that name: the tool was offered with it as "any JSON value", its description
// gone, while `required` still named it. Against the raw server (no SDK), which writes both. A `/p:` argument's telling pairs
// (msbuild's `/p:A_Password=X;B_Password=Y;…`) made secrets quadratic in their number: each pair's
// value was also kept to the end of the argument, so 2,000 pairs in a 60 kB argument made 61 MB of
// secrets to mask every report and result of the server with.
import { countWork } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { NODE, RAW } from "../test/support.js";
import type { McpServerConfig } from "./config.js";
import { createMcpPool, type McpPool, McpPoolError } from "./index.js";
import { masker, resultSecretsOf, secretsOf } from "./redact.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

const raw = () => {
  const pool = createMcpPool([{ name: "raw", command: NODE, args: [RAW] }]);
  pools.push(pool);
  return pool;
};

describe("a tool result holding a content part of a type MCP lacks", () => {
  it("keeps the parts MCP has and describes the other one, rather than failing the call", async () => {
    const output = await raw().callTool("raw__mixed_content", {});
    expect(output.ok).toBe(true);
    expect(output.text).toBe("before\n[video content; not shown]\n[image: image/png, 8 bytes]\nafter");
    expect(output.parts).toEqual([
      { type: "text", text: "before" },
      { type: "text", text: "[video content; not shown]" },
      { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
      { type: "text", text: "after" },
    ]);
  });

  it("names a type of any size and characters cut and escaped, as a tool's name is echoed", async () => {
    const type = `\u001b[2J\u202e${"v".repeat(5000)}`;
    const output = await raw().callTool("raw__odd_content", { count: 1, type });
    expect(output.text).toBe(`[\\u001b[2J\\u202e${"v".repeat(55)}… (5005 characters) content; not shown]`);
  });

  it("keeps a structured content key named __proto__ as a key", async () => {
    const output = await raw().callTool("raw__mixed_content", { plain: true });
    const structured = output.structured ?? {};
    expect(Object.keys(structured)).toEqual(["__proto__", "frames"]);
    expect(Object.getOwnPropertyDescriptor(structured, "__proto__")?.value).toEqual({ polluted: true });
  });

  it("still fails the call where a part of a type MCP has is malformed (a text part with no text)", async () => {
    const error = await raw()
      .call("raw__odd_content", { count: 2, type: "text" })
      .catch((e: unknown) => e);
    expect(McpPoolError.isInstance(error)).toBe(true);
    expect((error as McpPoolError).code).toBe("call-failed");
  });
});

describe("a listed tool whose input schema has a property named __proto__", () => {
  it("is offered with that property's schema and description as the server wrote them", async () => {
    const pool = createMcpPool([{ name: "raw", command: NODE, args: [RAW], env: { PROTO_SCHEMA: "1" } }]);
    pools.push(pool);
    const tool = (await pool.tools()).find((t) => t.function.name === "raw__proto_args");
    const parameters = tool?.function.parameters as { properties: object; required: string[] };
    expect(Object.keys(parameters.properties)).toEqual(["__proto__", "name"]);
    expect(Object.getOwnPropertyDescriptor(parameters.properties, "__proto__")?.value).toEqual({
      type: "string",
      description: "The odd one.",
    });
    expect(parameters.required).toEqual(["__proto__", "name"]);
    // And a call with it reaches the server under that name, its answer read back whole.
    const output = await pool.callTool("raw__proto_args", JSON.parse('{"__proto__":"odd","name":"n"}'));
    expect(output.text).toBe('{"__proto__":"odd","name":"n"}');
  });

  it("still has the SDK check a result against the tool's output schema, as its own listing had it do", async () => {
    const pool = createMcpPool([{ name: "raw", command: NODE, args: [RAW], env: { PROTO_SCHEMA: "1" } }]);
    pools.push(pool);
    // The answer's structured content is the arguments: `name` a number where the output schema says string.
    const error = await pool.callTool("raw__proto_args", { name: 5 }).catch((e: unknown) => e);
    expect(McpPoolError.isInstance(error)).toBe(true);
    expect((error as McpPoolError).message).toMatch(/output schema/);
  });
});

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
