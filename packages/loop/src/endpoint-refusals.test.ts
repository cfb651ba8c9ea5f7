// What endpoints refuse in a transcript the loop sends, and a host callback that throws mid-step (the fourth review round), each pinned over HTTP against the testkit.
import type { RunEvent } from "@loopwright/events";
import { SUMMARY_LEAD } from "@loopwright/ledger";
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun } from "./errors.js";
import { createRuntime, preview } from "./index.js";
import {
  ADD_TOOL,
  ALTERNATING_ROLES,
  QUESTION,
  transcriptFaults,
  unanswered,
} from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SEND: ToolDefinition = {
  type: "function",
  function: {
    name: "send_email",
    description: "Send an email",
    parameters: { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
  },
};

describe("a dedupe predicate that throws", () => {
  for (const parallel of [false, true]) {
    it(`ends the run with its error, nothing dispatched and every call answered (parallel: ${parallel})`, async () => {
      server = await startServer({
        replies: [
          {
            toolCalls: [
              { id: "a", name: "add", arguments: '{"a":1,"b":2}' },
              { id: "b", name: "lookup", arguments: "{}" },
              { id: "c", name: "add", arguments: '{"a":1,"b":2}' },
            ],
          },
          { content: "3" },
        ],
      });
      const annotations: Record<string, { readOnlyHint: boolean }> = { add: { readOnlyHint: true } };
      const dispatched: string[] = [];
      const events: RunEvent[] = [];
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "sim" },
          messages: QUESTION,
          tools: [ADD_TOOL, SEND],
          parallel,
          // A host's lookup that has no entry for a tool the model made up.
          dedupeToolCalls: (request) => (annotations[request.name] as { readOnlyHint: boolean }).readOnlyHint,
          dispatch: (request) => {
            dispatched.push(request.id);
            return "3";
          },
          onEvent: (event) => events.push(event),
        })
        .then(
          () => undefined,
          (caught: unknown) => caught,
        );
      expect(AgentLoopError.isInstance(error)).toBe(true);
      expect((error as AgentLoopError).cause).toBeInstanceOf(TypeError);
      expect(dispatched).toEqual([]);
      const run = failedRun(error);
      expect(run && unanswered(run.messages)).toEqual([]);
      expect(run && transcriptFaults(run.messages)).toEqual([]);
      expect(run?.toolCalls.map((call) => call.id)).toEqual(["a", "b", "c"]);
      const calls = events.filter((e) => e.kind === "tool-call").map((e) => (e as { id: string }).id);
      const results = events.filter((e) => e.kind === "tool-result").map((e) => (e as { id: string }).id);
      expect(results.sort()).toEqual(calls.sort());
      expect(server.chatRequests.length).toBe(1);
    });
  }
});

describe("an assistant message stored with an empty tool_calls array", () => {
  // vLLM's non-streamed message carries `tool_calls: []`, and the openai SDK's parse helpers once
  // added one; OpenAI refuses it (400 `empty_array`, openai/openai-node#1341), DashScope and DeepSeek too.
  const REFUSAL = {
    error: {
      message:
        "Invalid 'messages[2].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      type: "invalid_request_error",
      param: "messages[2].tool_calls",
      code: "empty_array",
    },
  };

  it("is sent without the empty array, and the transcript handed back keeps the message as the host stored it", async () => {
    server = await startServer({
      replies: (request) => {
        const messages = (request.body as { messages: { tool_calls?: unknown[] }[] }).messages;
        const empty = messages.some((m) => Array.isArray(m.tool_calls) && m.tool_calls.length === 0);
        return empty ? { type: "error", status: 400, body: REFUSAL } : { content: "Paris." };
      },
    });
    const stored = { role: "assistant", content: "Hello! How can I help?", tool_calls: [] } as ChatMessage;
    const history: ChatMessage[] = [
      { role: "user", content: "Hi" },
      stored,
      { role: "user", content: "What is the capital of France?" },
    ];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: history,
      tools: [ADD_TOOL],
      dispatch: () => "unused",
    });
    expect(result.turn.content).toBe("Paris.");
    const sent = (server.chatRequests[0]?.body as { messages: Record<string, unknown>[] } | undefined)
      ?.messages;
    expect(sent?.[1]).toEqual({ role: "assistant", content: "Hello! How can I help?" });
    expect(result.messages[1]).toBe(stored);
  });
});

describe("the hooks' context across a beforeStep that hands back copies", () => {
  /** Runs the add task with a memory hook, `beforeStep` handing back `reread(messages)`; answers each request's question. */
  async function questionsSent(
    calls: number,
    reread: (messages: readonly ChatMessage[]) => ChatMessage[],
  ): Promise<{ answer: string; questions: string[] }> {
    server = await startServer({
      replies: [
        ...Array.from({ length: calls }, (_, i) => ({
          toolCalls: [{ id: `c${i + 1}`, name: "add", arguments: `{"a":${i + 2},"b":3}` }],
        })),
        { content: "Done." },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ args }) => Number(args.a) + Number(args.b),
      hooks: {
        run: async (event) =>
          event === "beforeTurn" ? [{ id: "memory", context: "The user likes exact sums." }] : [],
        context: { session: { id: "s-1" } },
      },
      beforeStep: (messages) => reread(messages),
    });
    const questions = server.chatRequests.map((request) => {
      const messages = (request.body as { messages: { role: string; content: unknown }[] }).messages;
      return JSON.stringify(messages.find((m) => m.role === "user")?.content);
    });
    return { answer: result.turn.content, questions };
  }

  it("stays on the question of every request when beforeStep returns the transcript as a deep copy", async () => {
    // A host that keeps its transcript in a store and hands back what it read.
    const { answer, questions } = await questionsSent(
      2,
      (messages) => structuredClone(messages) as ChatMessage[],
    );
    expect(answer).toBe("Done.");
    expect(questions).toHaveLength(3);
    expect(questions[0]).toContain("The user likes exact sums.");
    expect(questions[1]).toBe(questions[0]);
    expect(questions[2]).toBe(questions[0]);
  });

  it("stays on the question when the store hands it back with its keys in another order and empty columns as null", async () => {
    // Postgres jsonb orders keys its own way, and a row store gives an empty column as null: each
    // read here hands the messages back with their keys in another order than the read before.
    let reads = 0;
    const asRows = (messages: readonly ChatMessage[]) => {
      reads++;
      return messages.map((message) => {
        const fields = Object.entries(message).filter(([, value]) => value !== null);
        if (reads % 2 === 1) fields.reverse();
        const row: Record<string, unknown> = Object.fromEntries(fields);
        if (reads % 2 === 1) row.name = null;
        return row as unknown as ChatMessage;
      });
    };
    const { answer, questions } = await questionsSent(2, asRows);
    expect(answer).toBe("Done.");
    expect(questions).toHaveLength(3);
    expect(questions[0]).toContain("The user likes exact sums.");
    expect(questions[1]).toBe(questions[0]);
    expect(questions[2]).toBe(questions[0]);
  });
});

describe("a tool that returns nothing", () => {
  // MiniMax answers an empty message with 400 "chat content is empty (2013)", GLM on Z.ai with code
  // 1213, and Anthropic models behind OpenAI-compatible gateways refuse an empty tool result
  // (earendil-works/pi#3309, zed-industries/zed#27130).
  const REFUSAL = { base_resp: { status_code: 2013, status_msg: "chat content is empty" } };

  it("is answered with text saying so, which every endpoint takes, and watchers are told the same", async () => {
    server = await startServer({
      replies: (request, index) => {
        const messages = (request.body as { messages: { role: string; content: unknown }[] }).messages;
        const empty = messages.some((m) => m.role === "tool" && (m.content === "" || m.content === null));
        if (empty) return { type: "error", status: 400, body: REFUSAL };
        return index === 0
          ? {
              toolCalls: [
                { id: "w1", name: "send_email", arguments: '{"to":"a@example.com"}' },
                { id: "w2", name: "add", arguments: '{"a":1,"b":2}' },
              ],
            }
          : { content: "Sent." };
      },
    });
    const results: { id: string; content: string }[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: QUESTION,
      tools: [ADD_TOOL, SEND],
      // A void tool, and one whose output is blank.
      dispatch: ({ name }) => (name === "send_email" ? undefined : "  \n"),
      onToolResult: (r) => results.push({ id: r.id, content: r.content }),
    });
    expect(result.turn.content).toBe("Sent.");
    const answers = result.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(answers).toHaveLength(2);
    for (const answer of answers) expect(typeof answer === "string" && answer.trim()).not.toBe("");
    expect(results.map((r) => r.content)).toEqual(answers);
    expect(result.toolCalls.map((c) => c.ok)).toEqual([true, true]);
  });
});

describe("a tool call that names no tool", () => {
  // OpenAI refuses the replayed call (continuedev/continue#11645): "Invalid
  // 'messages[1].tool_calls[0].function.name': empty string. Expected a string with minimum length 1".
  const REFUSAL = {
    error: {
      message:
        "Invalid 'messages[1].tool_calls[0].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.",
      type: "invalid_request_error",
      param: "messages[1].tool_calls[0].function.name",
      code: "empty_string",
    },
  };

  for (const parallel of [false, true]) {
    it(`is answered without dispatching and replayed under a name an endpoint takes (parallel: ${parallel})`, async () => {
      server = await startServer({
        replies: (request, index) => {
          const messages = (request.body as { messages: { tool_calls?: { function: { name: string } }[] }[] })
            .messages;
          if (messages.some((m) => m.tool_calls?.some((c) => c.function.name.trim() === ""))) {
            return { type: "error", status: 400, body: REFUSAL };
          }
          return index === 0
            ? {
                toolCalls: [
                  { id: "c1", name: "", arguments: '{"a":1,"b":2}' },
                  { id: "c2", name: "add", arguments: '{"a":2,"b":2}' },
                ],
              }
            : { content: "4" };
        },
      });
      const dispatched: string[] = [];
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        messages: QUESTION,
        tools: [ADD_TOOL],
        parallel,
        dispatch: ({ id, args }) => {
          dispatched.push(id);
          return Number(args.a) + Number(args.b);
        },
      });
      expect(result.turn.content).toBe("4");
      expect(dispatched).toEqual(["c2"]);
      const answer = result.messages.find((m) => m.role === "tool" && m.tool_call_id === "c1");
      expect(answer?.content).toMatch(/named no tool/);
      expect(result.toolCalls.map((c) => [c.id, c.ok])).toEqual([
        ["c1", false],
        ["c2", true],
      ]);
      expect(transcriptFaults(result.messages)).toEqual([]);
    });
  }
});

describe("a system prompt beside a transcript that opens with a system message", () => {
  const NOTES = "Notes: the user is reviewing a report; chapters one to three were discussed.";
  const READ: ToolDefinition = {
    type: "function",
    function: {
      name: "read_page",
      description: "Read one page of the report",
      parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
    },
  };

  it("goes as one system message, so a template that makes roles alternate takes the run after a fold", async () => {
    let step = 0;
    server = await startServer({
      personality: ALTERNATING_ROLES,
      replies: (request) => {
        const messages = (request.body as { messages: ChatMessage[] }).messages;
        if (messages[0]?.content === SUMMARISER_SYSTEM) return { content: NOTES };
        step++;
        return step <= 4
          ? { toolCalls: [{ id: `p${step}`, name: "read_page", arguments: `{"n":${step}}` }] }
          : { content: "The 4 pages add up to 10." };
      },
    });
    const history: ChatMessage[] = [];
    for (const chapter of ["one", "two", "three"]) {
      history.push(
        { role: "user", content: `Summarise chapter ${chapter}.` },
        { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(150).trim()}` },
      );
    }
    history.push({ role: "user", content: "Read pages 1 to 4 and add them up." });
    const result = await createRuntime().runAgentLoop({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        maxRetries: 0,
        contextLength: 1600,
        compact: true,
        tasks: { compaction: { model: "notes-model" } },
      },
      system: "You read reports.",
      messages: history,
      tools: [READ],
      dispatch: ({ args }) => `page ${args.n}: ${"ipsum ".repeat(70).trim()}`,
    });
    expect(result.turn.content).toBe("The 4 pages add up to 10.");
    // The fold happened: the transcript handed back opens with the summary as its own message.
    expect(result.messages[0]).toEqual({ role: "system", content: `${SUMMARY_LEAD}\n\n${NOTES}` });
    const last =
      (server.chatRequests.at(-1)?.body as { messages: ChatMessage[] } | undefined)?.messages ?? [];
    expect(last.filter((m) => m.role === "system")).toEqual([
      { role: "system", content: `You read reports.\n\n${SUMMARY_LEAD}\n\n${NOTES}` },
    ]);
    expect(last[0]?.role).toBe("system");
  });

  it("takes a leading system message written as text parts as its text, so no two go in a row", async () => {
    // A valid OpenAI form: a stored transcript (or a host's own note) as a list of text parts.
    server = await startServer({ personality: ALTERNATING_ROLES, replies: [{ content: "Done." }] });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      system: "You read reports.",
      messages: [
        {
          role: "system",
          content: [
            { type: "text", text: "Notes: chapters one " },
            { type: "text", text: "to three." },
          ],
        },
        { role: "system", content: "The user is in a hurry." },
        { role: "user", content: "What was chapter two about?" },
      ],
      dispatch: () => "unused",
    });
    expect(result.turn.content).toBe("Done.");
    expect((server.chatRequests[0]?.body as { messages: ChatMessage[] } | undefined)?.messages).toEqual([
      {
        role: "system",
        content: "You read reports.\n\nNotes: chapters one to three.\n\nThe user is in a hurry.",
      },
      { role: "user", content: "What was chapter two about?" },
    ]);
    // The transcript keeps the messages as they were.
    expect(result.messages[0]).toEqual({
      role: "system",
      content: [
        { type: "text", text: "Notes: chapters one " },
        { type: "text", text: "to three." },
      ],
    });
  });
});

describe("a tool result cut in the middle of a surrogate pair", () => {
  /** What llama.cpp b9749 answered a request carrying one (seen against the live server). */
  const LLAMACPP_500 = {
    error: {
      code: 500,
      message:
        "[json.exception.parse_error.101] parse error at line 1, column 262: syntax error while parsing value - invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF; last read: '\"file says \\ud83d\"'",
      type: "server_error",
    },
  };
  const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  it("is sent with the lone half written U+FFFD, so a strict JSON reader takes the next request", async () => {
    server = await startServer({
      replies: (request, index) => {
        const messages = (request.body as { messages: { content?: unknown }[] }).messages;
        if (messages.some((m) => typeof m.content === "string" && LONE.test(m.content))) {
          return { type: "error", status: 500, body: LLAMACPP_500 };
        }
        return index === 0
          ? {
              toolCalls: [
                { id: "r1", name: "add", arguments: '{"a":1,"b":2}' },
                { id: "r2", name: "lookup", arguments: "{}" },
              ],
            }
          : { content: "Done." };
      },
    });
    const forecast = "sunny \u{1F31E} all day";
    const results: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ name }) => {
        // Output capped by UTF-16 units, and an error message cut the same way.
        if (name === "add") return forecast.slice(0, 7);
        throw new Error(`no tool ${forecast.slice(7, 9)}`.slice(0, -1) + forecast.slice(8));
      },
      onToolResult: (r) => results.push(r.content),
    });
    expect(result.turn.content).toBe("Done.");
    const answers = result.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(answers[0]).toBe("sunny \uFFFD");
    expect(answers[1]).toBe("Error: no tool \uFFFD all day");
    expect(results).toEqual(answers);
  });

  it("in the host's own messages (a pasted text cut by UTF-16 units) is sent U+FFFD on every request; the transcript keeps what the host gave", async () => {
    server = await startServer({
      replies: (request, index) => {
        if (LONE.test(JSON.stringify(request.body)))
          return { type: "error", status: 500, body: LLAMACPP_500 };
        return index === 0
          ? { toolCalls: [{ id: "r1", name: "add", arguments: '{"a":1,"b":2}' }] }
          : { content: "Done." };
      },
    });
    const pasted = `Summarise: ${"sunny \u{1F31E} all day".slice(0, 7)}`;
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: [{ role: "user", content: pasted }],
      tools: [ADD_TOOL],
      dispatch: () => "3",
    });
    expect(result.turn.content).toBe("Done.");
    expect(server.chatRequests).toHaveLength(2);
    for (const request of server.chatRequests) {
      expect((request.body as { messages: { content?: unknown }[] }).messages[0]?.content).toBe(
        "Summarise: sunny \uFFFD",
      );
    }
    expect(result.messages[0]?.content).toBe(pasted);
  });
});

describe("preview", () => {
  it("never cuts between the two halves of a surrogate pair, so a watcher's text stays well-formed", () => {
    const text = `${"a".repeat(1999)}\u{1F31E}${"b".repeat(10)}`;
    const shown = preview(text);
    expect(shown.startsWith(`${"a".repeat(1999)}…`)).toBe(true);
    expect(shown).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    expect(shown).toMatch(/\[12 more characters\]$/);
  });
});
