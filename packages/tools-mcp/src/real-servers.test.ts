// The published reference servers, started by the tests: every tool listed, sanitized, and called
// once through runAgentLoop with the testkit's model, over stdio, Streamable HTTP and legacy SSE.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callEachOnce, EVERYTHING, FILESYSTEM, NODE, startEverythingHttp } from "../test/support.js";
import { createMcpPool, type McpPool } from "./index.js";

const LEGAL = /^[A-Za-z0-9_-]{1,64}$/;
const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

// One call per tool of server-everything, with arguments its schemas take (no network needed).
const everythingCalls = (prefix: string) =>
  [
    ["echo", { message: "hello from the loop" }],
    ["get-annotated-message", { messageType: "success", includeImage: null }],
    ["get-env", {}],
    ["get-resource-links", { count: 2 }],
    ["get-resource-reference", { resourceType: "Text", resourceId: 1 }],
    ["get-structured-content", { location: "Chicago" }],
    ["get-sum", { a: 2, b: 40 }],
    ["get-tiny-image", {}],
    ["gzip-file-as-resource", { name: "hello.txt.gz", data: "data:text/plain;base64,aGVsbG8gd29ybGQ=" }],
    ["simulate-research-query", { topic: "tide pools", ambiguous: false }],
    ["toggle-simulated-logging", {}],
    ["toggle-subscriber-updates", {}],
    ["trigger-long-running-operation", { duration: 0.2, steps: 2 }],
  ].map(([name, args]) => ({ name: `${prefix}__${name as string}`, args: args as Record<string, unknown> }));

async function checkEverything(pool: McpPool, prefix: string): Promise<void> {
  const tools = await pool.tools();
  const names = tools.map((t) => t.function.name);
  expect(names).toEqual(everythingCalls(prefix).map((c) => c.name));
  for (const name of names) expect(name).toMatch(LEGAL);
  // Strict-ready: every property required, optional ones made nullable.
  const annotated = tools.find((t) => t.function.name === `${prefix}__get-annotated-message`)?.function
    .parameters;
  expect(annotated?.required).toEqual(["messageType", "includeImage"]);

  const { results, dispatched } = await callEachOnce(pool, everythingCalls(prefix));
  expect(dispatched).toEqual(names);
  const text = (tool: string) => results.get(`${prefix}__${tool}`)?.content ?? "(not called)";
  for (const [name, result] of results) expect({ name, ok: result.ok }).toEqual({ name, ok: true });
  expect(text("echo")).toContain("hello from the loop");
  expect(text("get-sum")).toContain("42");
  expect(text("get-tiny-image")).toMatch(/\[image: image\/png, \d+/);
  expect(text("get-resource-links")).toMatch(/\[resource link\] .*: (demo|test):\/\//);
  expect(text("get-resource-reference")).toMatch(/\[resource (demo|test):\/\//);
  expect(text("get-structured-content")).toMatch(/"temperature"/);
  expect(text("gzip-file-as-resource")).toContain("hello.txt.gz");
  expect(text("trigger-long-running-operation")).toContain("completed");
  // A tool that runs only as a task (started, polled, read back) answers like any other.
  expect(text("simulate-research-query")).toContain("# Research Report: tide pools");
}

// The suites wait mostly on the servers' own timers (server-everything's research query takes four
// seconds, polled a second apart, on each transport), and each starts its own servers, pools and
// folders: they run side by side.
describe.concurrent("the reference servers", () => {
  describe("server-everything over stdio", () => {
    let pool: McpPool;
    beforeAll(() => {
      pool = createMcpPool([{ name: "everything", command: NODE, args: [EVERYTHING, "stdio"] }]);
    });
    afterAll(() => pool.close());

    it("lists every tool with a legal name and calls each once through runAgentLoop", async () => {
      await checkEverything(pool, "everything");
      expect(pool.status()[0]).toMatchObject({ state: "connected", transport: "stdio", tools: 13 });
    });

    it("answers the loop's dedupe and parallel questions from the annotations", async () => {
      await pool.tools();
      expect(pool.policy("everything__get-sum")).toMatchObject({
        readOnly: true,
        parallel: true,
        dedupe: true,
      });
      expect(pool.dedupe({ name: "everything__get-sum" })).toBe(true);
      // toggle-simulated-logging states no hints: the MCP defaults (not read-only, not idempotent) apply.
      expect(pool.policy("everything__toggle-simulated-logging")).toMatchObject({
        readOnly: false,
        parallel: false,
        dedupe: false,
      });
      expect(pool.dedupe({ name: "nothing__here" })).toBe(false);
    });

    it("passes an image on as an image part where the host takes parts", async () => {
      const parts = createMcpPool([{ name: "e", command: NODE, args: [EVERYTHING, "stdio"] }], {
        images: "parts",
      });
      try {
        const out = await parts.call("e__get-tiny-image", {});
        expect(Array.isArray(out)).toBe(true);
        expect(out).toContainEqual({
          type: "image_url",
          image_url: { url: expect.stringMatching(/^data:image\/png;base64,iVBOR/) },
        });
      } finally {
        await parts.close();
      }
    });
  });

  describe("server-everything over Streamable HTTP", () => {
    let server: Awaited<ReturnType<typeof startEverythingHttp>>;
    let pool: McpPool;
    beforeAll(async () => {
      server = await startEverythingHttp("streamableHttp");
      pool = createMcpPool({
        mcpServers: {
          web: {
            type: "http",
            url: `http://127.0.0.1:${server.port}/mcp`,
            headers: { authorization: "Bearer not-a-real-token" },
          },
        },
      });
    });
    afterAll(async () => {
      await pool?.close();
      server?.stop();
    });

    it("lists every tool with a legal name and calls each once through runAgentLoop", async () => {
      await checkEverything(pool, "web");
      expect(pool.status()[0]).toMatchObject({ state: "connected", transport: "streamable-http" });
    });
  });

  describe("server-everything over the legacy SSE transport", () => {
    let server: Awaited<ReturnType<typeof startEverythingHttp>>;
    afterAll(() => server?.stop());

    it("falls back to SSE when the server refuses Streamable HTTP, and calls its tools", async () => {
      server = await startEverythingHttp("sse");
      const notices: string[] = [];
      const pool = createMcpPool([{ name: "old", url: `http://127.0.0.1:${server.port}/sse` }], {
        onNotice: (t) => notices.push(t),
      });
      try {
        expect(await pool.call("old__get-sum", { a: 1, b: 2 })).toContain("3");
        expect(pool.status()[0]).toMatchObject({ state: "connected", transport: "sse" });
        expect(notices.join("\n")).toMatch(
          /refused Streamable HTTP \(4\d\d\); trying the legacy SSE transport/,
        );
      } finally {
        await pool.close();
      }
    });
  });

  describe("server-filesystem over stdio", () => {
    let dir: string;
    let pool: McpPool;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "tools-mcp-fs-"));
      await writeFile(join(dir, "a.txt"), "hello\nworld\n");
      await writeFile(join(dir, "b.txt"), "to be moved\n");
      await writeFile(join(dir, "pic.png"), Buffer.from(TINY_PNG, "base64"));
      pool = createMcpPool({ mcpServers: { fs: { command: NODE, args: [FILESYSTEM, dir] } } });
    });
    afterAll(async () => {
      await pool?.close();
      await rm(dir, { recursive: true, force: true });
    });

    it("lists every tool and calls each once through runAgentLoop, with real effects on disk", async () => {
      const at = (name: string) => join(dir, name);
      const calls = [
        ["list_allowed_directories", {}],
        ["write_file", { path: at("c.txt"), content: "written by the loop" }],
        ["create_directory", { path: at("sub") }],
        ["move_file", { source: at("b.txt"), destination: at("sub/b.txt") }],
        ["edit_file", { path: at("a.txt"), edits: [{ oldText: "hello", newText: "hi" }], dryRun: null }],
        ["read_file", { path: at("a.txt"), head: null, tail: null }],
        ["read_text_file", { path: at("a.txt"), head: 1, tail: null }],
        ["read_media_file", { path: at("pic.png") }],
        ["read_multiple_files", { paths: [at("a.txt"), at("c.txt")] }],
        ["get_file_info", { path: at("c.txt") }],
        ["list_directory", { path: dir }],
        ["list_directory_with_sizes", { path: dir, sortBy: "size" }],
        ["directory_tree", { path: dir, excludePatterns: null }],
        ["search_files", { path: dir, pattern: "*.txt", excludePatterns: null }],
      ].map(([name, args]) => ({ name: `fs__${name as string}`, args: args as Record<string, unknown> }));
      const tools = await pool.tools();
      expect(tools.map((t) => t.function.name).sort()).toEqual(calls.map((c) => c.name).sort());

      const { results } = await callEachOnce(pool, calls);
      for (const call of calls)
        expect({ name: call.name, ok: results.get(call.name)?.ok }).toEqual({ name: call.name, ok: true });
      const text = (tool: string) => results.get(`fs__${tool}`)?.content ?? "";
      expect(await readFile(at("c.txt"), "utf8")).toBe("written by the loop");
      expect(await readFile(at("sub/b.txt"), "utf8")).toBe("to be moved\n");
      expect(await readFile(at("a.txt"), "utf8")).toBe("hi\nworld\n");
      expect(text("read_text_file")).toBe("hi");
      expect(text("read_media_file")).toMatch(/\[image: image\/png/);
      expect(text("search_files")).toContain("c.txt");
      expect(pool.policy("fs__read_text_file")).toMatchObject({ readOnly: true, parallel: true });
      expect(pool.policy("fs__write_file")).toMatchObject({ readOnly: false, parallel: false });
    });
  });
});
