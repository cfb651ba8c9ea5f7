/**
 * r84 review of tools-mcp's reading of a host's objects through a polluted `Object.prototype`: a
 * field counts where the object (or a prototype of its own, a class's getter) holds it, never where
 * only `Object.prototype` does. Before, `Object.prototype.url` turned every command entry into an
 * HTTP server, `Object.prototype.enabled = false` left every server out, `Object.prototype.timeoutMs = -1` refused every
 * pool, and `Object.prototype.timeoutSeconds = -1` refused every pool with hooks.
 */
import { describe, expect, it } from "vitest";
import { mcpServers } from "./config.js";
import { createMcpPool } from "./pool.js";

const proto = Object.prototype as Record<string, unknown>;

/** `run()` with `Object.prototype[field]` set to `value`, deleted again whatever happens. */
function polluted<T>(field: string, value: unknown, run: () => T): T {
  proto[field] = value;
  try {
    return run();
  } finally {
    delete proto[field];
  }
}

describe("r84: a polluted Object.prototype is not read as a host's settings", () => {
  it("server entries: an enabled, type, url, cwd, env, headers or masked only Object.prototype holds is not taken", () => {
    const entries = [
      { name: "a", command: "node", args: ["x"] },
      { name: "b", url: "http://127.0.0.1:1/mcp" },
    ];
    const plain = mcpServers(entries);
    for (const [field, value] of [
      ["enabled", false],
      ["type", "sse"],
      ["url", "http://evil.example/mcp"],
      ["cwd", "/evil"],
      ["env", { EVIL: "1" }],
      ["headers", { "x-evil": "1" }],
      ["masked", ["node"]],
    ] as const) {
      expect(
        polluted(field, value, () => mcpServers(entries)),
        field,
      ).toEqual(plain);
    }
  });

  it("a document and mcpServers' options: an mcpServers or env only Object.prototype holds is not read", () => {
    expect(() =>
      polluted("mcpServers", { evil: { command: "evil" } }, () => mcpServers({} as never)),
    ).toThrow(/expected an array of servers or a \.mcp\.json document/);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a .mcp.json reference, not a template.
    const doc = { mcpServers: { a: { command: "node", args: ["${X:-d}"] } } };
    expect(polluted("env", { X: "evil" }, () => mcpServers(doc, {}))).toEqual(mcpServers(doc));
  });

  it("createMcpPool's options and hooks: a bound or switch only Object.prototype holds is not the host's", async () => {
    for (const [field, value] of [
      ["timeoutMs", -1],
      ["reaper", "x"],
      ["onNotice", 1],
      ["timeoutSeconds", -1],
      ["enabled", "x"],
    ] as const) {
      const pool = polluted(field, value, () =>
        createMcpPool([], { hooks: [{ id: "h", events: [] }] as never }),
      );
      await pool.close();
    }
  });
});
