/**
 * r85d: tools-mcp under a polluted `Object.prototype`, over Streamable HTTP (r84b tested stdio
 * entries only). The MCP server runs in a process of its own (test/http-server.mjs), so only the
 * host's side is polluted. Before: `Object.prototype.isError = true` made every result an error,
 * `.structuredContent` went into every result, `.annotations`/`.readOnlyHint`/`.idempotentHint`
 * made every tool read-only or idempotent, `.nextCursor` paged every listing to the 100-page cap,
 * `.headers` and `.authProvider` put headers on every request, `.fetch` replaced the transport's
 * fetch (every HTTP server failed to start). Each field is set for one pool and deleted after.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpMcpServer, startHttpMcp } from "../test/http-server.js";
import { toolOutput } from "./content.js";
import { createMcpPool, type McpPool } from "./pool.js";

const proto = Object.prototype as unknown as Record<string, unknown>;

/** `run()` with `fields` set on Object.prototype (not enumerable), deleted again whatever happens. */
async function polluted<T>(fields: Record<string, unknown>, run: () => Promise<T>): Promise<T> {
  const names = Object.keys(fields);
  Object.defineProperties(
    proto,
    Object.fromEntries(
      names.map((name) => [name, { value: fields[name], configurable: true, writable: true }]),
    ),
  );
  return run().finally(() => {
    for (const name of names) delete proto[name];
  });
}

let server: HttpMcpServer;
beforeAll(async () => {
  server = await startHttpMcp([
    {
      entry: { name: "plain", description: "Says ok.", inputSchema: { type: "object" } },
      result: { content: [{ type: "text", text: "ok" }] },
    },
    { entry: { name: "empty", inputSchema: { type: "object", properties: {} } }, result: { content: [] } },
  ]);
});
afterAll(() => server.stop());

/** What a pool made while `fields` pollute Object.prototype shows of the server: status, tools, a policy, two calls. */
async function seen(fields: Record<string, unknown>, entry: Record<string, unknown> = {}) {
  const pool: McpPool = createMcpPool([{ name: "h", url: server.url, ...entry }]);
  try {
    return await polluted(fields, async () => {
      const [status] = await pool.connect();
      return {
        state: status?.state,
        transport: status?.transport,
        error: status?.error?.message,
        tools: (await pool.tools()).map((t) => t.function.name),
        policy: pool.policy("h__plain"),
        plain: await pool.callTool("h__plain", {}),
        empty: await pool.callTool("h__empty", {}),
      };
    });
  } finally {
    await pool.close();
  }
}

describe("r85: an HTTP server's pool under a polluted Object.prototype", () => {
  let clean: Awaited<ReturnType<typeof seen>>;
  beforeAll(async () => {
    clean = await seen({});
  });

  it("unpolluted: connected over Streamable HTTP, two tools, a write tool, ok results", () => {
    expect(clean).toMatchObject({
      state: "connected",
      transport: "streamable-http",
      tools: ["h__empty", "h__plain"],
    });
    expect(clean.policy).toMatchObject({ readOnly: false, parallel: false, dedupe: false });
    expect(clean.plain).toMatchObject({ ok: true, text: "ok" });
    expect(clean.plain.structured).toBeUndefined();
  });

  it("the entry and pool fields r84b read own, and callTool's timeoutMs, change nothing here either", async () => {
    const fields = {
      enabled: false,
      command: "evil",
      cwd: "/evil",
      env: { EVIL: "1" },
      timeoutMs: -1,
      maxRestarts: "x",
    };
    expect(await seen(fields)).toEqual(clean);
  });

  it("a result's isError and structuredContent: ok, with no structured content", async () => {
    expect(await seen({ isError: true, structuredContent: { evil: 1 } })).toEqual(clean);
  });

  it("a tool's annotations and hints: still a write tool, run alone, never shared", async () => {
    expect(await seen({ annotations: { readOnlyHint: true } })).toEqual(clean);
    expect(await seen({ readOnlyHint: true, idempotentHint: true, destructiveHint: false })).toEqual(clean);
  });

  it("a listing's nextCursor: one page, not the 100-page cap", async () => {
    expect(await seen({ nextCursor: "more" })).toEqual(clean);
  });

  it("headers, authProvider, fetch, requestInit: no header the entry did not give, and the server starts", async () => {
    const before = (await server.seen()).length;
    const authProvider = {
      tokens: async () => ({ access_token: "evil-token", token_type: "Bearer" }),
      clientInformation: () => undefined,
      redirectUrl: "http://127.0.0.1/cb",
      clientMetadata: { redirect_uris: [] },
      saveTokens: () => {},
      redirectToAuthorization: () => {},
      saveCodeVerifier: () => {},
      codeVerifier: () => "",
    };
    const fields = {
      headers: { "x-evil": "1" },
      authProvider,
      fetch: async () => {
        throw new Error("evil fetch");
      },
      requestInit: { headers: { "x-evil-init": "1" } },
    };
    expect(await seen(fields)).toEqual(clean);
    const names = (await server.seen()).slice(before).flatMap((h) => Object.keys(h));
    expect(names.filter((n) => /evil|authorization/.test(n))).toEqual([]);
  });

  it("an entry's own headers still go with every request", async () => {
    const before = (await server.seen()).length;
    expect(await seen({}, { headers: { "x-own": "yes" } })).toEqual(clean);
    const sent = (await server.seen()).slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((h) => h["x-own"] === "yes")).toBe(true);
  });
});

describe("r85: toolOutput of a result from elsewhere under a polluted Object.prototype", () => {
  it("reads only the fields the result holds, and leaves the result as it was", async () => {
    const result = {
      content: [
        { type: "text", text: "ok" },
        { type: "image", data: "AAAA" },
      ],
    };
    const clean = toolOutput(result);
    const fields = {
      isError: true,
      structuredContent: { evil: 1 },
      mimeType: "image/evil",
      toolResult: "evil",
    };
    expect(await polluted(fields, async () => toolOutput(result))).toEqual(clean);
    expect(await polluted({ content: [{ type: "text", text: "evil" }] }, async () => toolOutput({}))).toEqual(
      toolOutput({}),
    );
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
  });

  it("a circular result built in code still ends", () => {
    const part: Record<string, unknown> = { type: "text", text: "loop" };
    part.self = part;
    expect(toolOutput({ content: [part] }).text).toBe("loop");
  });
});
