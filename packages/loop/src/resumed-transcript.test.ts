// A transcript a host hands back to start a run from (a stored conversation, resumed): checked
// message by message before anything is sent, a call the stored transcript never answered (the
// process died after `onMessage` wrote the assistant row) answered as not run, and what cannot be
// repaired without guessing refused — all against the real loopback testkit server.
import type { RunEvent } from "@loopwright/events";
import type { LedgerEntry } from "@loopwright/ledger";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, LoopConfig } from "./config.js";
import { AgentLoopError, failedRun, LoopOptionError } from "./errors.js";
import { NOT_RUN } from "./run-calls.js";
import { createRuntime } from "./runtime.js";
import { ADD_TOOL, STRICT_TRANSCRIPT, transcriptFaults } from "./test-support/transcript.js";

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(options: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}

const call = (id: string, a = 1) => ({
  id,
  type: "function" as const,
  function: { name: "add", arguments: JSON.stringify({ a, b: 1 }) },
});

type Sent = { messages: Record<string, unknown>[] };
const sentMessages = (server: TestServer, at = 0) =>
  (server.chatRequests[at]?.body as Sent | undefined)?.messages;

/** A run from `messages` against a server that refuses what a strict endpoint refuses. */
async function resume(messages: readonly unknown[], extra: { ledger?: readonly LedgerEntry[] } = {}) {
  const server = await serve({ personality: STRICT_TRANSCRIPT, replies: [{ content: "Done." }] });
  const events: RunEvent[] = [];
  const dispatched: string[] = [];
  const config: LoopConfig = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
  const outcome = await createRuntime()
    .runAgentLoop({
      config,
      messages: messages as ChatMessage[],
      tools: [ADD_TOOL],
      dispatch: ({ id }) => {
        dispatched.push(id);
        return "2";
      },
      onEvent: (event) => events.push(event),
      ...extra,
    })
    .then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
  return { server, events, dispatched, ...outcome };
}

/** The `LoopOptionError` a run was refused with before anything was sent. */
function refusal(error: unknown): LoopOptionError {
  expect(error).toBeInstanceOf(AgentLoopError);
  const cause = (error as AgentLoopError).cause;
  expect(LoopOptionError.isInstance(cause)).toBe(true);
  const refused = cause as LoopOptionError;
  expect(refused.code).toBe("invalid-option");
  expect(refused.option).toBe("messages");
  return refused;
}

describe("a stored transcript whose last step's calls were never answered", () => {
  it("answers the call as not run, with a notice naming it, and hands the answer back", async () => {
    // onMessage wrote the assistant row, then the process died before the tool ran.
    const stored: ChatMessage[] = [
      { role: "user", content: "What is 1 + 1?" },
      { role: "assistant", content: null, tool_calls: [call("c1")] },
    ];
    const { server, events, dispatched, result, error } = await resume(stored);
    expect(error).toBeUndefined();
    expect(result?.turn.content).toBe("Done.");
    const answer = { role: "tool", tool_call_id: "c1", content: NOT_RUN };
    expect(sentMessages(server)).toEqual([...stored, answer]);
    expect(result?.messages).toEqual([...stored, answer, { role: "assistant", content: "Done." }]);
    expect(dispatched).toEqual([]); // a call from an earlier run is not run again unasked
    const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
    expect(notices.some((text) => text.includes("c1") && text.includes(NOT_RUN))).toBe(true);
    expect(stored).toHaveLength(2); // the caller's array is not written to
  });

  it("answers the unanswered one of several right after the call's other answers, before the next question", async () => {
    const stored: ChatMessage[] = [
      { role: "user", content: "What are 1 + 1 and 2 + 1?" },
      { role: "assistant", content: null, tool_calls: [call("c1"), call("c2", 2)] },
      { role: "tool", tool_call_id: "c1", content: "2" },
      { role: "user", content: "And?" },
    ];
    const { server, result, error } = await resume(stored);
    expect(error).toBeUndefined();
    const repaired = [
      ...stored.slice(0, 3),
      { role: "tool", tool_call_id: "c2", content: NOT_RUN },
      stored[3],
    ];
    expect(sentMessages(server)).toEqual(repaired);
    expect(result?.messages.slice(0, 5)).toEqual(repaired);
    expect(transcriptFaults(result?.messages ?? [])).toEqual([]);
  });

  it("hands the answer back on a run that fails too, so the stored transcript can be sent again", async () => {
    const server = await serve({
      replies: [{ type: "error", status: 500, body: { error: { message: "boom", type: "server_error" } } }],
    });
    const stored: ChatMessage[] = [
      { role: "user", content: "What is 1 + 1?" },
      { role: "assistant", content: null, tool_calls: [call("c1")] },
    ];
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        messages: stored,
        tools: [ADD_TOOL],
        dispatch: () => "2",
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentLoopError);
    expect(failedRun(error)?.messages).toEqual([
      ...stored,
      { role: "tool", tool_call_id: "c1", content: NOT_RUN },
    ]);
  });

  it("moves the ledger handed back with it past the answer, so its indexes name the same messages", async () => {
    const stored: ChatMessage[] = [
      { role: "user", content: "What are 1 + 1 and 2 + 1?" },
      { role: "assistant", content: null, tool_calls: [call("c1"), call("c2", 2)] },
      { role: "tool", tool_call_id: "c1", content: "2" },
      { role: "user", content: "And?" },
    ];
    const ledger = [
      { through: 0, prompt: 40, epoch: 0 },
      { through: 3, prompt: 90, epoch: 0 },
    ];
    const { result, error } = await resume(stored, { ledger });
    expect(error).toBeUndefined();
    // "And?" is now at 4: the entry that ended on it ends there still; the one before it is kept.
    expect(result?.ledger.slice(0, 2).map((e) => [e.through, e.prompt])).toEqual([
      [0, 40],
      [4, 90],
    ]);
    expect(ledger[1]?.through).toBe(3); // the caller's ledger is not written to
  });

  it("refuses a call answered twice, naming the message and the id, before anything is sent", async () => {
    const { server, error } = await resume([
      { role: "user", content: "What is 1 + 1?" },
      { role: "assistant", content: null, tool_calls: [call("c1")] },
      { role: "tool", tool_call_id: "c1", content: "2" },
      { role: "tool", tool_call_id: "c1", content: "3" },
    ]);
    const refused = refusal(error);
    expect(refused.message).toContain("messages[3]");
    expect(refused.message).toContain('"c1"');
    expect(server.chatRequests).toHaveLength(0);
    expect(failedRun(error)?.messages).toHaveLength(4); // the run as given
  });

  it("refuses a tool message that answers no call right before it", async () => {
    const { server, error } = await resume([
      { role: "user", content: "What is 1 + 1?" },
      { role: "assistant", content: null, tool_calls: [call("c1")] },
      { role: "tool", tool_call_id: "c1", content: "2" },
      { role: "user", content: "And?" },
      { role: "tool", tool_call_id: "c9", content: "3" },
    ]);
    const refused = refusal(error);
    expect(refused.message).toContain("messages[4]");
    expect(refused.message).toContain('"c9"');
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("a malformed message in messages", () => {
  const q = { role: "user", content: "q" };
  const cases: Array<[string, unknown[], number, RegExp]> = [
    ["null", [null, q], 0, /not a message object/],
    ["a string", ["hello"], 0, /not a message object/],
    ["an unknown role", [{ role: "bogus", content: "x" }, q], 0, /role "bogus"/],
    ["no role", [{ content: "x" }], 0, /role/],
    ["user content null", [{ role: "user", content: null }], 0, /content/],
    ["user content a number", [{ role: "user", content: 5 }], 0, /content/],
    ["user content [null]", [{ role: "user", content: [null] }], 0, /content part 0/],
    ["a text part without its text", [{ role: "user", content: [{ type: "text" }] }], 0, /content part 0/],
    ["system content an object", [{ role: "system", content: { text: "s" } }, q], 0, /content/],
    [
      "tool_calls an object",
      [q, { role: "assistant", content: null, tool_calls: { id: "c1" } }, q],
      1,
      /tool_calls/,
    ],
    [
      "a null tool call",
      [q, { role: "assistant", content: null, tool_calls: [null] }, q],
      1,
      /tool_calls\[0\]/,
    ],
    [
      "a call without function",
      [
        q,
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function" }] },
        { role: "tool", tool_call_id: "c1", content: "r" },
      ],
      1,
      /tool_calls\[0\]/,
    ],
    [
      "a call whose arguments are an object",
      [
        q,
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: { a: 1 } } }],
        },
        { role: "tool", tool_call_id: "c1", content: "r" },
      ],
      1,
      /tool_calls\[0\]/,
    ],
    [
      "a call with neither a type nor a function",
      [
        q,
        { role: "assistant", content: null, tool_calls: [{ id: "c1", name: "add", arguments: "{}" }] },
        { role: "tool", tool_call_id: "c1", content: "r" },
      ],
      1,
      /tool_calls\[0\] that has no string type/,
    ],
    [
      "a call of a type the endpoint does not know",
      [
        q,
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "fn", function: { name: "add", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "r" },
      ],
      1,
      /tool_calls\[0\] that has type "fn"/,
    ],
    ["assistant content a number", [q, { role: "assistant", content: 7 }, q], 1, /content/],
    ["a tool message without its tool_call_id", [q, { role: "tool", content: "r" }], 1, /tool_call_id/],
  ];

  it.each(cases)("refuses %s before any request, naming the index", async (_name, messages, at, fault) => {
    const { server, error } = await resume(messages);
    const refused = refusal(error);
    expect(refused.message).toContain(`messages[${at}]`);
    expect(refused.message).toMatch(fault);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("takes every form the endpoint takes: developer, parts, a stored row's empty columns as null", async () => {
    const messages = [
      { role: "developer", content: [{ type: "text", text: "Be brief." }] },
      {
        role: "user",
        name: null,
        content: [
          { type: "text", text: "What is in it?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
        ],
      },
      { role: "assistant", content: null, refusal: null, tool_calls: [call("c1")], name: null },
      { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "2" }] },
      { role: "assistant", content: "Two.", tool_calls: null },
      { role: "user", content: "Thanks." },
    ];
    const { server, result, error } = await resume(messages);
    expect(error).toBeUndefined();
    expect(result?.turn.content).toBe("Done.");
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("a stored call without its type (a row whose type column is empty or null)", () => {
  // A stored row's empty column reads as absent, as for name, refusal and tool_calls: beside a
  // function object the call is a function call, and it goes out with its type filled in.
  const untyped = (id: string, type?: null) => ({
    id,
    ...(type === null ? { type } : {}),
    function: { name: "add", arguments: '{"a":1,"b":1}' },
  });
  const typed = (id: string) => ({ ...untyped(id), type: "function" });

  it("is read as a function call: the run is answered, and the call is sent and handed back typed", async () => {
    const stored = [
      { role: "user", content: "What is 1 + 1?" },
      { role: "assistant", content: null, tool_calls: [untyped("c1"), untyped("c2", null)] },
      { role: "tool", tool_call_id: "c1", content: "2" },
      { role: "tool", tool_call_id: "c2", content: "2" },
      { role: "assistant", content: "Two, twice." },
      { role: "user", content: "And again?" },
    ];
    const { server, result, error } = await resume(stored);
    expect(error).toBeUndefined();
    expect(result?.turn.content).toBe("Done.");
    const sentCalls = sentMessages(server)?.[1]?.tool_calls;
    expect(sentCalls).toEqual([typed("c1"), typed("c2")]);
    const handedBack = result?.messages[1];
    expect(handedBack?.role === "assistant" ? handedBack.tool_calls : undefined).toEqual([
      typed("c1"),
      typed("c2"),
    ]);
    expect(result?.messages.slice(2)).toEqual([...stored.slice(2), { role: "assistant", content: "Done." }]);
    expect(stored[1]?.tool_calls?.[0]).not.toHaveProperty("type"); // the caller's rows are not written to
  });

  it("answers such a call left unanswered as not run, and keeps the ledger on its message", async () => {
    const stored = [
      { role: "user", content: "What is 1 + 1?" },
      { role: "assistant", content: null, tool_calls: [untyped("c1", null), untyped("c2")] },
      { role: "tool", tool_call_id: "c1", content: "2" },
      { role: "user", content: "And?" },
    ];
    const ledger = [
      { through: 1, prompt: 60, epoch: 0 },
      { through: 3, prompt: 90, epoch: 0 },
    ];
    const { server, result, error, dispatched } = await resume(stored, { ledger });
    expect(error).toBeUndefined();
    expect(sentMessages(server)).toEqual([
      stored[0],
      { role: "assistant", content: null, tool_calls: [typed("c1"), typed("c2")] },
      stored[2],
      { role: "tool", tool_call_id: "c2", content: NOT_RUN },
      stored[3],
    ]);
    expect(dispatched).toEqual([]);
    // The typed call is the same message: the entry through it stays, the one through "And?" moves.
    expect(result?.ledger.slice(0, 2).map((e) => [e.through, e.prompt])).toEqual([
      [1, 60],
      [4, 90],
    ]);
  });

  it("is read so in a transcript beforeStep hands back too", async () => {
    const server = await serve({ personality: STRICT_TRANSCRIPT, replies: [{ content: "Done." }] });
    const replacement = [
      { role: "user", content: "What is 1 + 1?" },
      { role: "assistant", content: null, tool_calls: [untyped("c1", null)] },
      { role: "tool", tool_call_id: "c1", content: "2" },
      { role: "user", content: "And again?" },
    ];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: [{ role: "user", content: "And again?" }],
      tools: [ADD_TOOL],
      dispatch: () => "2",
      beforeStep: (_messages, step) => (step === 1 ? { messages: replacement as ChatMessage[] } : undefined),
    });
    expect(result.turn.content).toBe("Done.");
    expect(sentMessages(server)?.[1]?.tool_calls).toEqual([typed("c1")]);
  });
});
