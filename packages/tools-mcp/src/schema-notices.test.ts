// An MCP server declaring a parameter no value satisfies (test/unsatisfiable-server.mjs: an integer
// at least 5 and at most 3). The pool's definitions carry the bounds as words (llama.cpp answers a
// grammar built from them with a 500), and the host hears of it through onNotice, once, naming the
// tool; before, the pool passed sanitizeTools no onNotice and the change went unsaid.
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { NODE } from "../test/support.js";
import { createMcpPool, type McpPool } from "./index.js";

const SERVER = fileURLToPath(new URL("../test/unsatisfiable-server.mjs", import.meta.url));
const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

describe("a server's tool schema that no value satisfies", () => {
  it("is declared with the bounds in words, and the host told once, naming the tool", async () => {
    const notices: string[] = [];
    const pool = createMcpPool([{ name: "odd", command: NODE, args: [SERVER] }], {
      onNotice: (t) => notices.push(t),
    });
    pools.push(pool);
    await pool.connect();
    const first = await pool.tools();
    await pool.tools();
    const tool = first[0];
    if (!tool) throw new Error("the pool listed no tool");
    const v = (tool.function.parameters as { properties: { v: Record<string, unknown> } }).properties.v;
    expect(v).not.toHaveProperty("minimum");
    expect(v).not.toHaveProperty("maximum");
    expect(String(v.description)).toContain("At least 5");
    const told = notices.filter((n) => n.startsWith(`Tool "${tool.function.name}": `));
    expect(told).toHaveLength(1);
    expect(await pool.call(tool.function.name, { v: 4 })).toContain('"v":4');
  });
});
