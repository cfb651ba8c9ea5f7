// A number token the model writes where the tool's schema takes only a string (a zip code written
// 02134, a version written 1.10) reaches the tool as the text written — over HTTP, through
// runAgentLoop, called directly and through call_tool — and is read as a number where one is taken.
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { runAgentLoop } from "./index.js";

const SHIP: ToolDefinition = {
  type: "function",
  function: {
    name: "ship",
    description: "Ships a parcel to a zip code.",
    parameters: {
      type: "object",
      properties: { zip: { type: "string" }, version: { type: "string" }, count: { type: "integer" } },
      required: ["zip"],
    },
  },
};
const question: ChatMessage[] = [{ role: "user", content: "Ship two parcels to Boston, 02134." }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * Runs `ship` over HTTP against `replies`, directly or as a catalogued tool behind call_tool. The
 * server of the run before is closed first: a test (the property) runs many, and afterEach closes
 * only the last (the others stayed open for the worker's later files, 14 servers a run).
 */
async function runShip(mode: "eager" | "proxy", replies: Reply[]) {
  await server?.close();
  server = await startServer({ replies });
  const seen: unknown[] = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: mode },
    messages: question,
    tools: [SHIP],
    ...(mode === "proxy"
      ? { catalog: [{ name: "post", tools: [{ name: "ship", description: "Ships." }] }] }
      : {}),
    dispatch: ({ args }) => {
      seen.push(args);
      return "shipped";
    },
  });
  const body = server.chatRequests[1]?.body as
    | { messages?: { role: string; tool_calls?: { function: { arguments: string } }[] }[] }
    | undefined;
  const replayed = body?.messages?.find((m) => m.role === "assistant")?.tool_calls?.[0]?.function.arguments;
  return { seen, result, replayed };
}

const direct = (args: string): Reply => ({ toolCalls: [{ id: "c1", name: "ship", arguments: args }] });
const proxied = (args: string): Reply => ({
  toolCalls: [{ id: "c1", name: "call_tool", arguments: `{"name": "ship", "arguments": ${args}}` }],
});

describe("a number token written where the tool takes only a string", () => {
  it("reaches the tool as written (eager), and a leading-zero count is still the number", async () => {
    const { seen, result, replayed } = await runShip("eager", [
      direct('{"zip": 02134, "version": 1.10, "count": 02}'),
      { content: "Shipped." },
    ]);
    // Before: { zip: 2134, version: 1.1, count: 2 } — a zip code without its zero.
    expect(seen).toEqual([{ zip: "02134", version: "1.10", count: 2 }]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", source: "dispatched", ok: true }]);
    expect(replayed).toBe('{"zip":"02134","version":"1.10","count":2}');
  });

  it("reaches the inner tool as written through call_tool (object arguments)", async () => {
    const { seen, replayed } = await runShip("proxy", [
      proxied('{"zip": 02134, "version": 1.10, "count": 02}'),
      { content: "Shipped." },
    ]);
    expect(seen).toEqual([{ zip: "02134", version: "1.10", count: 2 }]);
    expect(JSON.parse(replayed ?? "null")).toEqual({
      name: "ship",
      arguments: { zip: "02134", version: "1.10", count: 2 },
    });
  });

  it("reaches the inner tool as written through call_tool (arguments as text)", async () => {
    const { seen } = await runShip("proxy", [
      proxied(JSON.stringify('{"zip": 02134, "version": 1e3, "count": 3}')),
      { content: "Shipped." },
    ]);
    expect(seen).toEqual([{ zip: "02134", version: "1e3", count: 3 }]);
  });

  it("reaches the tool as written with a plus sign or a bare point, which JSON refuses (eager)", async () => {
    const { seen } = await runShip("eager", [direct('{"zip": +5, "version": .5}'), { content: "Shipped." }]);
    // Before: refused as unfinished arguments, never run.
    expect(seen).toEqual([{ zip: "+5", version: ".5" }]);
  });

  it("a call the server's parser left in the reply as text reaches the tool as the same call streamed", async () => {
    const cases: [string, unknown][] = [
      ['{"zip": 02134, "version": 1e21, "count": 02}', { zip: "02134", version: "1e21", count: 2 }],
      ['{"zip": +5, "version": .5, "count": 3}', { zip: "+5", version: ".5", count: 3 }],
    ];
    for (const [args, handed] of cases) {
      const streamed = await runShip("eager", [direct(args), { content: "Shipped." }]);
      await server?.close();
      const written = await runShip("eager", [
        { content: `<tool_call>\n{"name": "ship", "arguments": ${args}}\n</tool_call>` },
        { content: "Shipped." },
      ]);
      await server?.close();
      // Before: { zip: 2134, version: 1e21, count: 2 } (and +5 left in the reply, never run).
      expect(streamed.seen).toEqual([handed]);
      expect(written.seen).toEqual(streamed.seen);
      expect(written.replayed).toBe(streamed.replayed);
    }
    const streamed = await runShip("eager", [direct('{"zip": "x", "count": .5}'), { content: "ok" }]);
    await server?.close();
    const written = await runShip("eager", [
      { content: '<tool_call>{"name": "ship", "arguments": {"zip": "x", "count": .5}}</tool_call>' },
      { content: "ok" },
    ]);
    // A bare point where a number is taken is that number either way (before: refused either way
    // as "a number cut short", where the same call recovered from the reply used to run with 0.5).
    expect(streamed.result.toolCalls).toMatchObject([{ ok: true, source: "dispatched" }]);
    expect(written.result.toolCalls).toMatchObject([{ ok: true, source: "dispatched" }]);
    expect(streamed.seen).toEqual([{ zip: "x", count: 0.5 }]);
    expect(written.seen).toEqual(streamed.seen);
  });

  it("a call_tool written into the reply as text reaches the inner tool as written", async () => {
    const { seen } = await runShip("proxy", [
      {
        content:
          '<tool_call>\n{"name": "call_tool", "arguments": {"name": "ship", "arguments": {"zip": 02134, "version": 1.10, "count": 02}}}\n</tool_call>',
      },
      { content: "Shipped." },
    ]);
    expect(seen).toEqual([{ zip: "02134", version: "1.10", count: 2 }]);
  });

  it("reaches the inner tool as written with a plus sign or a bare point through call_tool (arguments as text)", async () => {
    const { seen, result } = await runShip("proxy", [
      proxied(JSON.stringify('{"zip": +5, "version": .5, "count": 3}')),
      { content: "Shipped." },
    ]);
    // Before: refused as "not a JSON object", never run.
    expect(result.toolCalls).toMatchObject([{ ok: true, source: "dispatched" }]);
    expect(seen).toEqual([{ zip: "+5", version: ".5", count: 3 }]);
  });

  it("reads a plus sign where the inner tool takes a number as that number, through call_tool as called directly", async () => {
    const direct3 = await runShip("eager", [direct('{"zip": "02134", "count": +3}'), { content: "ok" }]);
    await server?.close();
    const asText = await runShip("proxy", [
      proxied(JSON.stringify('{"zip": "02134", "count": +3}')),
      { content: "ok" },
    ]);
    await server?.close();
    const asObject = await runShip("proxy", [proxied('{"zip": +5, "count": +3}'), { content: "ok" }]);
    // Before: refused every way ("a number cut short").
    expect(direct3.seen).toEqual([{ zip: "02134", count: 3 }]);
    expect(asText.seen).toEqual(direct3.seen);
    expect(asObject.seen).toEqual([{ zip: "+5", count: 3 }]);
  });

  // Through call_tool with the arguments as an object, call_tool's own arguments are read before
  // the tool they reach is known, then that part of the text again by the tool's schema (as text,
  // above, they are read by it at once). Every JSON number form is covered.
  it("parity: any JSON number token at zip reaches the tool the same, called directly or through call_tool", async () => {
    const token = fc
      .tuple(
        fc.constantFrom("", "-"),
        fc.stringMatching(/^\d{1,22}$/),
        fc.oneof(fc.constant(""), fc.stringMatching(/^\.\d{1,6}$/)),
        fc.oneof(fc.constant(""), fc.stringMatching(/^[eE][+-]?\d{1,3}$/)),
      )
      .map((parts) => parts.join(""));
    await fc.assert(
      fc.asyncProperty(token, fc.boolean(), async (written, text) => {
        const args = `{"zip": ${written}, "count": 1}`;
        const eager = await runShip("eager", [direct(args), { content: "ok" }]);
        await server?.close();
        const proxy = await runShip("proxy", [
          proxied(text ? JSON.stringify(args) : args),
          { content: "ok" },
        ]);
        // Written as a number writes it back (`0.9`), nothing is lost and it stays a number for the
        // tool's validation; any other form reaches the tool as its text.
        const zip = String(Number(written)) === written ? Number(written) : written;
        expect(eager.seen).toEqual([{ zip, count: 1 }]);
        expect(proxy.seen).toEqual(eager.seen);
      }),
      propertyRuns(15),
    );
  });
});
