/**
 * Review r69 of the MCP pool, against a real SDK server over stdio (`test/review-r69-server.mjs`):
 * two `list_changed` listings answered out of order, `tools()` after `close()`, half a surrogate
 * pair in a tool's result, and two servers whose names differ only where a tool name cannot.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NODE } from "../test/support.js";
import { createMcpPool, type McpPool } from "./index.js";

const SERVER = fileURLToPath(new URL("../test/review-r69-server.mjs", import.meta.url));
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
const pool = (...args: Parameters<typeof createMcpPool>) => {
  const made = createMcpPool(...args);
  pools.push(made);
  return made;
};
const names = async (p: McpPool) => (await p.tools()).map((t) => t.function.name);

describe("r69-1: two tools/list_changed close together, their listings answered out of order", () => {
  it("ends with the newer listing, not the one that answered last", async () => {
    const notices: string[] = [];
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }], { onNotice: (t) => notices.push(t) });
    expect(await names(p)).toContain("r__v0");
    // The server moves its list to version 1, then 2; the listing of version 1 answers 400 ms late.
    await p.call("r__bump", {});
    await new Promise((resolve) => setTimeout(resolve, 900));
    const now = await names(p);
    // Before: version 1's late answer overwrote version 2's, and stayed.
    expect(now).toContain("r__v2");
    expect(now).not.toContain("r__v1");
    expect(notices.at(-1)).toBe('MCP server "r" changed its tools: 8 now.');
  });

  it("drops a listing that answers after the pool was closed", async () => {
    const changes: number[] = [];
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }], {
      onToolsChanged: () => changes.push(Date.now()),
    });
    await p.tools();
    await p.call("r__bump", {});
    const closing = p.close();
    const before = changes.length;
    await closing;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(changes.length).toBe(before);
  });
});

describe("r69-2: tools(), servers() and policy() after close()", () => {
  it("offer no tool of a closed pool (calls to them throw `closed`)", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    expect(await names(p)).toContain("r__search");
    expect(p.policy("r__search")).toBeDefined();
    await p.close();
    // Before: tools() still listed every tool, and policy() still answered for them.
    expect(await p.tools()).toEqual([]);
    expect(await p.servers()).toEqual([]);
    expect(p.policy("r__search")).toBeUndefined();
    expect(p.dedupe({ name: "r__search" })).toBe(false);
    await expect(p.call("r__search", {})).rejects.toMatchObject({ code: "closed" });
  });
});

describe("r69-3: a tool's result holding half a surrogate pair (a text cut inside an emoji)", () => {
  it("is handed on with U+FFFD in its place, in text, parts and structured content", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    const text = await p.call("r__lone", {});
    // Before: the lone half went on as it was, for llama.cpp to refuse the next request.
    expect(text).toBe("cut inside an emoji \ufffd");
    const output = await p.callTool("r__lone", {});
    expect(LONE_SURROGATE.test(output.text)).toBe(false);
    expect(output.parts).toEqual([{ type: "text", text: "cut inside an emoji \ufffd" }]);
    expect(output.structured).toEqual({ note: "\ufffd half" });
  });
});

describe("r69-4: servers `a.b` and `a_b` with the same tool", () => {
  for (const order of [
    ["a.b", "a_b"],
    ["a_b", "a.b"],
  ]) {
    it(`server a_b keeps its own a_b__search (listed ${order.join(", ")})`, async () => {
      const p = pool(order.map((name) => ({ name, command: NODE, args: [SERVER], env: { LABEL: name } })));
      const tools = await p.tools();
      const described = Object.fromEntries(tools.map((t) => [t.function.name, t.function.description]));
      // Before: `a.b__search`, made legal, took `a_b__search`, and a_b's own became `a_b__search_2`.
      expect(described.a_b__search).toBe("search of a_b");
      expect(described.a_b__search_2).toBe("search of a.b");
      expect(await p.call("a_b__search", {})).toBe("search ran on a_b");
      expect(await p.call("a.b__search", {})).toBe("search ran on a.b");
      // Still in name order.
      const listed = tools.map((t) => t.function.name);
      expect(listed).toEqual([...listed].sort());
    });
  }
});

describe('r69-5: toolNames "plain", while the server a name belongs to restarts', () => {
  it("a call to that name waits for its server, never going to another server's tool of that name", async () => {
    const marker = join(await mkdtemp(join(tmpdir(), "r69-")), "started");
    const p = pool(
      [
        // Every start of A after its first takes 1.5 s.
        { name: "A", command: NODE, args: [SERVER], env: { LABEL: "A", SLOW_RESTART_FILE: marker } },
        { name: "B", command: NODE, args: [SERVER], env: { LABEL: "B" } },
      ],
      { toolNames: "plain" },
    );
    expect(await p.call("search", {})).toBe("search ran on A");
    await p.call("die", {});
    // Seen within A's 1.5 s restart, however slowly a busy machine reports the exit (a fixed 200 ms
    // wait failed once under load).
    await vi.waitFor(() => expect(p.status()[0]?.state).toBe("connecting"), { timeout: 1_200, interval: 20 });
    // B's tools change while A restarts: the names are built again.
    await p.call("B__bump", {});
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Before: `search` was B's while A was down, and this call ran there.
    expect(await p.call("search", {})).toBe("search ran on A");
    expect(await p.call("B__search", {})).toBe("search ran on B");
  });
});

describe("r69-6: a server whose restart fails", () => {
  it("has its tools taken out of tools(), and the names go to the servers that run", async () => {
    const marker = join(await mkdtemp(join(tmpdir(), "r69-")), "started");
    const changes: string[] = [];
    const p = pool(
      [
        {
          name: "A",
          command: NODE,
          args: [SERVER],
          env: { LABEL: "A", SLOW_RESTART_FILE: marker, FAIL_RESTART: "1" },
        },
        { name: "B", command: NODE, args: [SERVER], env: { LABEL: "B" } },
      ],
      { toolNames: "plain", onToolsChanged: () => changes.push("changed") },
    );
    expect(await p.call("search", {})).toBe("search ran on A");
    const before = changes.length;
    await p.call("die", {});
    await vi.waitFor(() => expect(p.status()[0]?.state).toBe("failed"), { timeout: 10_000, interval: 50 });
    // Before: no onToolsChanged, and tools() still listed A's tools, which only fail now.
    expect(changes.length).toBeGreaterThan(before);
    const tools = await p.tools();
    expect(tools.find((t) => t.function.name === "search")?.function.description).toBe("search of B");
    expect(await p.call("search", {})).toBe("search ran on B");
  });
});

describe("r69-7: a tool name the model wrote with half a surrogate pair in it", () => {
  it("is echoed by unknown-tool with U+FFFD in its place", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    const error = await p.call("sea\ud83drch", {}).then(
      () => undefined,
      (caught: unknown) => caught as Error,
    );
    expect(error).toMatchObject({ code: "unknown-tool" });
    // Before: the lone half went back to the model as written.
    expect(error?.message).toMatch(/^No MCP tool is named "sea\ufffdrch"\./);
    expect(LONE_SURROGATE.test(error?.message ?? "")).toBe(false);
  });
});

describe("r69-8: a server's refusal with half a surrogate pair in its message", () => {
  it("fails the call with U+FFFD in its place in the message the model reads", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    const error = await p.call("r__refuse", {}).then(
      () => undefined,
      (caught: unknown) => caught as Error,
    );
    expect(error).toMatchObject({ code: "call-failed" });
    // Before: the server's lone half went on into the message as written.
    expect(error?.message).toMatch(/no such file: caf\ufffd$/);
    // And its code said once, not twice (the server's McpError prefix, then the client's).
    expect(error?.message).toBe('refuse on MCP server "r" failed: MCP error -32602: no such file: caf\ufffd');
    expect(LONE_SURROGATE.test(error?.message ?? "")).toBe(false);
  });
});

describe("r69-9: tools/list_changed while the server's first listing is under way", () => {
  it("is not lost: the tools are listed again once the server is connected", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER], env: { CHANGE_WHILE_LISTING: "1" } }]);
    await p.connect();
    // Before: the notification came while the server was still `connecting` and was dropped, so
    // the pool kept version 0 of the list for good.
    await vi.waitFor(async () => expect(await names(p)).toContain("r__v2"), { timeout: 5_000, interval: 50 });
    expect(await names(p)).not.toContain("r__v0");
  });
});

describe("r69-10: a server that says its tools changed 2,000 times in a row", () => {
  it("is asked for its tools a few times, not once per notification", async () => {
    let changes = 0;
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }], { onToolsChanged: () => changes++ });
    await p.tools();
    await p.call("r__flood", {});
    // Once the notifications are in, a listing under way, and one more after it.
    await vi.waitFor(async () => expect(await p.call("r__listed", {})).toBe("3"), {
      timeout: 5_000,
      interval: 100,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Before: 2,001 listings (one each, all at once), with no bound.
    expect(await p.call("r__listed", {})).toBe("3");
    // The start's listing only: the two after it found the same tools, which is no change (r79).
    expect(changes).toBe(1);
  });
});
