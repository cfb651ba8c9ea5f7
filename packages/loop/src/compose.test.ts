// The "compose your own loop" guide (COMPOSE.md) shows test/compose-loop.ts verbatim; this runs it
// over HTTP against the testkit, so the guide stays true.
import { readFileSync } from "node:fs";
import type { ToolDefinition } from "@loopwright/negotiate";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { miniLoop } from "../test/compose-loop.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const ADD: ToolDefinition = {
  type: "function",
  function: {
    name: "add",
    description: "Adds two numbers",
    parameters: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" }, note: { type: "string" } },
      required: ["a", "b"],
    },
  },
};

describe("COMPOSE.md", () => {
  it("shows the tested loop verbatim", () => {
    const guide = readFileSync(new URL("../COMPOSE.md", import.meta.url), "utf8");
    const code = readFileSync(new URL("../test/compose-loop.ts", import.meta.url), "utf8");
    expect(/```ts\n([\s\S]*?)```/.exec(guide)?.[1]).toBe(code);
  });

  it("runs a tool run over HTTP, fulfilling each obligation the guide names", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "add", arguments: "{'a': 2, 'b': 3, 'note': None}" },
            { id: "c2", name: "add", arguments: '{"a": 1, "b": 2, "note": "cut off mid-str' },
          ],
        },
        { content: "2 + 3 is 5." },
      ],
    });
    const ran: unknown[] = [];
    const { turn, messages } = await miniLoop({
      endpoint: { baseUrl: server.baseUrl, model: "sim" },
      messages: [{ role: "user", content: "What is 2 + 3?" }],
      tools: [ADD],
      run: (name, args) => {
        ran.push([name, args]);
        return (args.a as number) + (args.b as number);
      },
    });

    expect(turn.content).toBe("2 + 3 is 5.");
    // The repaired call ran with its optional null dropped; the unreadable one never ran.
    expect(ran).toEqual([["add", { a: 2, b: 3 }]]);
    const second = server.chatRequests[1]?.body as {
      messages: unknown[];
      tools: { function: { name: string } }[];
    };
    expect(second.tools.map((tool) => tool.function.name)).toEqual(["add"]);
    expect(second.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "add", arguments: '{"a":2,"b":3,"note":null}' } },
          { id: "c2", type: "function", function: { name: "add", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "5" },
      { role: "tool", tool_call_id: "c2", content: expect.stringMatching(/^Error: /) },
    ]);
    expect(messages.at(-1)).toEqual({ role: "assistant", content: "2 + 3 is 5." });
  });

  it("answers a tool that returned nothing with text, never a tool message without content", async () => {
    server = await startServer({
      personality: "openai",
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "add", arguments: '{"a": 1, "b": 2}' },
            { id: "c2", name: "add", arguments: '{"a": 3, "b": 4}' },
            { id: "c3", name: "add", arguments: '{"a": 5, "b": 6}' },
          ],
        },
        { content: "Logged." },
      ],
    });
    const results: unknown[] = [undefined, "", "  "];
    const { turn } = await miniLoop({
      endpoint: { baseUrl: server.baseUrl, model: "gpt-4o" },
      messages: [{ role: "user", content: "Log three sums." }],
      tools: [ADD],
      run: () => results.shift(),
    });
    expect(turn.content).toBe("Logged.");
    const second = server.chatRequests[1]?.body as { messages: unknown[] };
    expect(second.messages.slice(2)).toEqual(
      ["c1", "c2", "c3"].map((id) => ({
        role: "tool",
        tool_call_id: id,
        content: "(the tool returned no output)",
      })),
    );
  });

  it("runs a renamed tool by the host's name, its arguments read against the host's schema", async () => {
    const READ: ToolDefinition = {
      type: "function",
      function: {
        name: "fs.read",
        description: "Reads a file",
        parameters: {
          type: "object",
          properties: { path: { type: "string" }, zone: { type: "string" } },
          required: ["path"],
        },
      },
    };
    server = await startServer({
      personality: "openai",
      replies: [
        { toolCalls: [{ id: "c1", name: "fs_read", arguments: '{"path": "notes.txt", "zone": null}' }] },
        { content: "It says hello." },
      ],
    });
    const ran: unknown[] = [];
    const { turn } = await miniLoop({
      endpoint: { baseUrl: server.baseUrl, model: "gpt-4o" },
      messages: [{ role: "user", content: "What does notes.txt say?" }],
      tools: [READ],
      run: (name, args) => {
        ran.push([name, args]);
        return "hello";
      },
    });
    expect(turn.content).toBe("It says hello.");
    const first = server.chatRequests[0]?.body as { tools: { function: { name: string } }[] };
    expect(first.tools.map((tool) => tool.function.name)).toEqual(["fs_read"]);
    // The host's name, and the optional null strict mode made the model write dropped.
    expect(ran).toEqual([["fs.read", { path: "notes.txt" }]]);
    const second = server.chatRequests[1]?.body as { messages: unknown[] };
    expect(second.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "c1",
            type: "function",
            function: { name: "fs_read", arguments: '{"path":"notes.txt","zone":null}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "hello" },
    ]);
  });
});
