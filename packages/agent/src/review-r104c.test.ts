/**
 * Review r104c of the agent: the echo rule's last holdouts. The "Unknown tool" answer to the model
 * quoted a made-up name by its first 200 characters with its controls and bidirectional marks raw;
 * the agent's and the session's `kindOf` and a tool's name in a registry refusal quoted text with
 * `JSON.stringify`, which leaves a right-to-left override raw, writes half a surrogate pair as
 * `\udXXX` and (for a tool's name, the session's `kindOf` at 60, the agent's at 40) cut with no
 * length said. Each now quotes as `quotedEcho` does: cut at 60 with the length said, half a
 * surrogate pair U+FFFD, each control, U+2028/2029 and bidi mark `\uXXXX`. And a tool that threw
 * an object whose every getter throws was answered `Error: {}` or `Error: an object`; it is now
 * said as the loop says it, failing "with an error that could not be read", each call once.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type AgentTool,
  type ChatMessageLike,
  createSession,
  type SessionOptions,
} from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Each text the model or a host could write, and how the rule quotes it. */
const ECHOES: [string, string, string][] = [
  ["a right-to-left override", "files\u202etxt.exe", '"files\\u202etxt.exe"'],
  ["a line break and a terminal's escape", "a\n\u001b[2J", '"a\\n\\u001b[2J"'],
  ["10,000 characters", "n".repeat(10_000), `"${"n".repeat(60)}… (10000 characters)"`],
  ["half a surrogate pair alone", "tool\ud800name", '"tool\ufffdname"'],
];

/** The tool message answering call `id`, as text. */
function answerTo(messages: readonly unknown[], id: string): string {
  const found = (messages as ChatMessageLike[]).find(
    (m) => m.role === "tool" && (m as { tool_call_id?: string }).tool_call_id === id,
  );
  return String((found as { content?: unknown } | undefined)?.content);
}

/** What `act` throws, as its message (it must throw an `AgentError`). */
function refusal(act: () => unknown): string {
  try {
    act();
  } catch (error) {
    expect(AgentError.isInstance(error), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error("it did not throw");
}

const tool = (name: string): AgentTool => ({
  name,
  description: "Reads.",
  parameters: { type: "object", properties: {} },
  execute: () => "ok",
});

describe("r104c-1: the answer to a call of a tool the agent does not have", () => {
  it.each(ECHOES)("quotes a made-up name with %s as the loop echoes one", async (_, name, quoted) => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name, arguments: "{}" }] }, { content: "done" }],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [tool("read")],
    });
    expect((await agent.prompt("go")).status).toBe("ok");
    expect(answerTo(agent.messages, "c1")).toBe(`Error: Unknown tool ${quoted}. Available tools: read.`);
    // And so the model reads it, on the request after.
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    expect(sent.find((m) => m.role === "tool")?.content).toBe(
      `Error: Unknown tool ${quoted}. Available tools: read.`,
    );
  });
});

describe("r104c-2: an option refused by new Agent quotes the string it was given by the rule", () => {
  it.each(ECHOES)("tools given as a string with %s", (_, text, quoted) => {
    expect(
      refusal(
        () => new Agent({ config: { baseUrl: "http://127.0.0.1:9", model: "sim" }, tools: text as never }),
      ),
    ).toBe(`new Agent: tools must be a list of tools or a ToolRegistry; got a string (${quoted}).`);
  });
});

describe("r104c-3: an option refused by createSession quotes the string it was given by the rule", () => {
  it.each(ECHOES)("builtInTools given as a string with %s", async (_, text, quoted) => {
    server = await startServer({ replies: [] });
    const error = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      sessionDir: mkdtempSync(join(tmpdir(), "r104c-")),
      builtInTools: text,
    } as unknown as SessionOptions).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(AgentError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toBe(
      `createSession: builtInTools must be { askUser?, todoWrite? } (each true or false), or false for none; got a string (${quoted}).`,
    );
  });
});

describe("r104c-4: a tool refused by the registry is named by the rule", () => {
  it.each(ECHOES)("a tool named with %s", (_, name, quoted) => {
    const agent = new Agent({ config: { baseUrl: "http://127.0.0.1:9", model: "sim" } });
    expect(refusal(() => agent.tools.register({ ...tool(name), parameters: [] as never }))).toBe(
      `The tool ${quoted} has parameters that are not a JSON Schema object; got a list; it was not registered.`,
    );
  });
});

describe("r104c-5: a tool that throws an object none of whose parts can be read", () => {
  const boom = (): never => {
    throw new Error("unreadable");
  };
  const getters = { get: boom };
  const unreadable: [string, () => unknown][] = [
    [
      "its message, name, toString and Symbol.toPrimitive getters that throw, not enumerable",
      () =>
        Object.defineProperties(
          {},
          { message: getters, name: getters, toString: getters, [Symbol.toPrimitive]: getters },
        ),
    ],
    [
      "those getters enumerable",
      () =>
        Object.defineProperties(
          {},
          {
            message: { ...getters, enumerable: true },
            name: { ...getters, enumerable: true },
            toString: { ...getters, enumerable: true },
            [Symbol.toPrimitive]: { ...getters, enumerable: true },
          },
        ),
    ],
  ];
  it.each(unreadable)(
    "(%s) is answered as failing with an error that could not be read, each call once",
    async (_, thrown) => {
      server = await startServer({
        replies: [
          {
            toolCalls: [
              { id: "u1", name: "read", arguments: '{"path":"a"}' },
              { id: "u2", name: "read", arguments: '{"path":"b"}' },
            ],
          },
          { content: "done" },
        ],
      });
      let ran = 0;
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        tools: [
          {
            ...tool("read"),
            execute: () => {
              ran++;
              throw thrown();
            },
          },
        ],
      });
      expect((await agent.prompt("go")).status).toBe("ok");
      expect(ran).toBe(2);
      const answer = "Error: the read tool failed with an error that could not be read.";
      const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
      expect(sent.filter((m) => m.role === "tool")).toEqual([
        { role: "tool", tool_call_id: "u1", content: answer },
        { role: "tool", tool_call_id: "u2", content: answer },
      ]);
    },
  );

  it("an empty object thrown is still said as {}", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "e1", name: "read", arguments: "{}" }] }, { content: "done" }],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [
        {
          ...tool("read"),
          execute: () => {
            throw {};
          },
        },
      ],
    });
    expect((await agent.prompt("go")).status).toBe("ok");
    expect(answerTo(agent.messages, "e1")).toBe("Error: {}");
  });
});
