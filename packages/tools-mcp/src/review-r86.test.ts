/**
 * r86c: tools-mcp's stdio transport under an enumerable field on `Object.prototype`, as prototype
 * pollution leaves one (`obj.__proto__.x = …` makes it enumerable; r84b and r85d set theirs not
 * enumerable). The server runs in a process of its own (server-everything), so only the host's
 * side is polluted. Before: the transport read each line with the SDK's `deserializeMessage`, whose
 * strict schema counts inherited enumerable fields as unknown ones, so every answer was refused
 * and every call waited for its timeout.
 */
import { withPollutedPrototype } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING, NODE } from "../test/support.js";
import { createMcpPool, type McpPool } from "./pool.js";

let pool: McpPool;
beforeAll(async () => {
  pool = createMcpPool([{ name: "everything", command: NODE, args: [EVERYTHING, "stdio"] }], {
    timeoutMs: 5_000,
  });
  // Connected and listed before any field is set: the SDK's own validator (Ajv), made as its
  // client starts, refuses to start with any enumerable field on Object.prototype (its, reported).
  expect(await pool.tools()).toHaveLength(13);
});
afterAll(() => pool.close());

describe("R86C-1: a stdio server's answers are read with an enumerable field on Object.prototype", () => {
  it("a call is answered, not left to its timeout, whatever name is set", async () => {
    // path: zod's record of a failed option of the SDK's message union read it through the chain;
    // bytes: the transport's `"bytes" in line` took every line for one skipped as too long.
    for (const fields of [
      { p0lluted: "P0LLUTED" },
      { isError: true },
      { extra: 1 },
      { path: true },
      { bytes: 1 },
    ]) {
      const answer = await withPollutedPrototype(fields, () =>
        pool.call("everything__get-sum", { a: 2, b: 40 }).then(String, (error: Error) => error.message),
      );
      // Before: "get-sum on MCP server \"everything\" did not answer within 5 s; …" (any name set).
      expect(answer).toMatch(/42/);
      expect(pool.status()[0]).toMatchObject({ state: "connected", restarts: 0 });
    }
  });
});

describe("R86C-2: options with a getter are read under a polluted Object.prototype.value", () => {
  for (const name of ["value", "writable"]) {
    it(`a pool is made from options holding a getter with Object.prototype.${name} set`, async () => {
      const options = {
        get timeoutMs() {
          return 5_000;
        },
      };
      // Before: "Invalid property descriptor. Cannot both specify accessors and a value or writable
      // attribute" (the view of the options gave its getter a descriptor that inherited the field).
      const made = withPollutedPrototype({ [name]: "P0LLUTED" }, () =>
        createMcpPool([{ name: "everything", command: NODE, args: [EVERYTHING, "stdio"] }], options),
      );
      expect(made.status()).toMatchObject([{ name: "everything", tools: 0 }]);
      await made.close();
    });
  }
});
