// The second review of the loop: every transcript a run hands back — on success and on each error
// path — sent again, as the host's next turn would, to a testkit server that refuses what a strict
// endpoint refuses (STRICT_TRANSCRIPT: calls answered once right after them, no stray tool message,
// ids used once, no empty assistant message).
import type { RunEvent } from "@loopwright/events";
import { EventsError } from "@loopwright/events";
import { type Personality, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, LoopConfig } from "./config.js";
import { AgentLoopError, failedRun } from "./errors.js";
import { createRuntime } from "./runtime.js";
import {
  ADD_TOOL,
  ALTERNATING_ROLES,
  QUESTION,
  STRICT_TRANSCRIPT,
  transcriptFaults,
} from "./test-support/transcript.js";

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(options: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}

/** The host's next turn: the transcript sent again with one more question to a strict server. */
async function sendAgain(messages: readonly ChatMessage[]): Promise<string> {
  const strict = await serve({ personality: STRICT_TRANSCRIPT, replies: [{ content: "Glad to help." }] });
  const next = await createRuntime().runAgentLoop({
    config: { baseUrl: strict.baseUrl, model: "sim" },
    messages: [...messages, { role: "user", content: "Thanks. And then?" }],
    tools: [ADD_TOOL],
    dispatch: () => "unused",
  });
  return next.turn.content;
}

const add = (id: string, a: number) => ({ id, name: "add", arguments: JSON.stringify({ a, b: 1 }) });

describe("tool-call ids stay distinct across the whole transcript", () => {
  it("renames an id a later step, a recovered call or the host's history already used, everywhere the host sees it", async () => {
    // A server that sends no ids gets call_0 from the stream every step; recovered calls are
    // call_recovered_0 every step; the history already holds a call_0 from an earlier question.
    const server = await serve({
      replies: [
        { toolCalls: [{ ...add("", 1) }] },
        { toolCalls: [{ ...add("", 2) }] },
        { content: '<tool_call>{"name": "add", "arguments": {"a": 3, "b": 1}}</tool_call>' },
        { content: '<tool_call>{"name": "add", "arguments": {"a": 4, "b": 1}}</tool_call>' },
        { content: "2, 3, 4 and 5." },
      ],
    });
    const history: ChatMessage[] = [
      { role: "user", content: "What is 0 + 1?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "add", arguments: '{"a":0,"b":1}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_0", content: "1" },
      { role: "assistant", content: "1." },
      { role: "user", content: "Now 1 + 1, 2 + 1, 3 + 1 and 4 + 1." },
    ];
    const dispatched: string[] = [];
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: history,
      tools: [ADD_TOOL],
      dispatch: ({ id, args }) => {
        dispatched.push(id);
        return (args.a as number) + (args.b as number);
      },
      onEvent: (event) => events.push(event),
    });
    expect(transcriptFaults(result.messages)).toEqual([]);
    const asked = result.messages
      .slice(history.length)
      .flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
    expect(asked).toHaveLength(4);
    expect(new Set([...asked, "call_0"]).size).toBe(5);
    // The host's callbacks, events and outcomes name the calls as the transcript does.
    expect(dispatched).toEqual(asked);
    expect(result.toolCalls.map((c) => c.id)).toEqual(asked);
    expect(events.flatMap((e) => (e.kind === "tool-result" ? [e.id] : []))).toEqual(asked);
    // Every request the run sent was one a strict endpoint takes, and so is the next turn.
    for (const request of server.chatRequests) {
      expect(transcriptFaults((request.body as { messages: unknown[] }).messages)).toEqual([]);
    }
    expect(await sendAgain(result.messages)).toBe("Glad to help.");
  });
});

describe("a beforeStep replacement an endpoint would refuse", () => {
  async function replaced(rewrite: (messages: readonly ChatMessage[]) => ChatMessage[]) {
    const server = await serve({ replies: [{ toolCalls: [add("c1", 1)] }, { content: "never" }] });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => "2",
        beforeStep: (messages, step) => (step === 2 ? rewrite(messages) : undefined),
      })
      .catch((e: unknown) => e);
    return { server, error };
  }

  it("refuses one that keeps a tool message after dropping the call it answers, with the run as it was", async () => {
    const { server, error } = await replaced((messages) =>
      messages.filter((m) => !(m.role === "assistant" && m.tool_calls)),
    );
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as AgentLoopError).cause).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/tool messages that answer no call .*\(c1\)/);
    expect(server.chatRequests).toHaveLength(1);
    const run = failedRun(error);
    expect(run?.messages).toHaveLength(3);
    expect(await sendAgain(run?.messages ?? [])).toBe("Glad to help.");
  });

  it("refuses one that puts a message between a call and its answer", async () => {
    const { server, error } = await replaced((messages) => [
      ...messages.slice(0, 2),
      { role: "user", content: "Also, be brief." },
      ...messages.slice(2),
    ]);
    expect((error as Error).message).toMatch(/no tool message answers right after them \(c1\)/);
    expect(server.chatRequests).toHaveLength(1);
    expect(await sendAgain(failedRun(error)?.messages ?? [])).toBe("Glad to help.");
  });
});

describe("what dispatch returns", () => {
  it("answers a result JSON cannot hold with an error the model reads, counted as failed, not as [object Object]", async () => {
    const server = await serve({ replies: [{ toolCalls: [add("c1", 1)] }, { content: "It failed." }] });
    const results: boolean[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => {
        const node: Record<string, unknown> = { value: 2 };
        node.self = node;
        return node;
      },
      onToolResult: (r) => results.push(r.ok),
    });
    const answer = result.messages.find((m) => m.role === "tool")?.content;
    expect(answer).not.toMatch(/\[object Object\]/);
    expect(answer).toMatch(/^Error: .*add.*JSON/);
    expect(results).toEqual([false]);
    expect(result.toolCalls).toMatchObject([{ id: "c1", ok: false, source: "dispatched" }]);
    expect(result.metrics.toolErrors).toBe(1);
    expect(await sendAgain(result.messages)).toBe("Glad to help.");
  });

  it("answers a returned Error as a thrown one, and a Map, Set, function, symbol or bigint as a failed call naming the type", async () => {
    const returned: [unknown, RegExp][] = [
      [new Error("quota exceeded"), /^Error: quota exceeded$/],
      [new Map([["k", 2]]), /^Error: the add tool returned a Map, which JSON cannot hold/],
      [new Set([1]), /^Error: the add tool returned a Set, which JSON cannot hold/],
      [{ rows: new Map([["k", 2]]) }, /^Error: the add tool returned a Map, which JSON cannot hold/],
      [() => 1, /^Error: the add tool returned a function, which JSON cannot hold/],
      [Symbol("s"), /^Error: the add tool returned a symbol, which JSON cannot hold/],
      [10n, /^Error: the add tool returned a bigint, which JSON cannot hold/],
    ];
    for (const [value, expected] of returned) {
      const server = await serve({ replies: [{ toolCalls: [add("c1", 1)] }, { content: "It failed." }] });
      const results: boolean[] = [];
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => value,
        onToolResult: (r) => results.push(r.ok),
      });
      const body = server.chatRequests[1]?.body as { messages: ChatMessage[] } | undefined;
      expect(body?.messages.at(-1)?.content).toMatch(expected);
      expect(results).toEqual([false]);
      expect(result.metrics.toolErrors).toBe(1);
    }
  });
});

describe("an Error inside what dispatch returns", () => {
  /** What the model read of the call's answer, and whether the call counted as ok. */
  async function answered(dispatch: () => unknown): Promise<{ read: unknown; ok: boolean[] }> {
    const server = await serve({
      personality: STRICT_TRANSCRIPT,
      replies: [{ toolCalls: [add("c1", 1)] }, { content: "Noted." }],
    });
    const ok: boolean[] = [];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch,
      onToolResult: (r) => ok.push(r.ok),
    });
    const body = server.chatRequests[1]?.body as { messages: ChatMessage[] } | undefined;
    return { read: body?.messages.at(-1)?.content, ok };
  }

  it("is written as 'Name: message', not as {} (a result shape, an array, an allSettled entry)", async () => {
    const settled = await Promise.allSettled([
      Promise.resolve(2),
      Promise.reject(new RangeError("a is too large")),
    ]);
    const cases: [unknown, string][] = [
      [{ ok: false, error: new Error("disk full") }, '{"ok":false,"error":"Error: disk full"}'],
      [[new TypeError("boom")], '["TypeError: boom"]'],
      [
        settled,
        '[{"status":"fulfilled","value":2},{"status":"rejected","reason":"RangeError: a is too large"}]',
      ],
    ];
    for (const [value, expected] of cases) {
      const { read, ok } = await answered(() => value);
      expect(read).toBe(expected);
      expect(ok).toEqual([true]); // the tool returned data; the model reads the error in it
    }
  });

  it("keeps an error's own fields (a validation error's issues, a system error's code and path) beside its message", async () => {
    class ValidationError extends Error {
      override name = "ValidationError";
      constructor(readonly issues: { path: string; message: string }[]) {
        super("invalid input");
      }
    }
    const issues = [{ path: "email", message: "not an email address" }];
    const { read, ok } = await answered(() => ({ ok: false, error: new ValidationError(issues) }));
    expect(JSON.parse(String(read))).toEqual({
      ok: false,
      error: { name: "ValidationError", message: "invalid input", issues },
    });
    expect(ok).toEqual([true]);
    const system = Object.assign(new Error("ENOENT: no such file or directory"), {
      code: "ENOENT",
      path: "/x",
    });
    const missing = await answered(() => [system]);
    expect(JSON.parse(String(missing.read))).toEqual([
      { name: "Error", message: "ENOENT: no such file or directory", code: "ENOENT", path: "/x" },
    ]);
  });

  it("says what a thrown error of the same kind says (its status, its cause)", async () => {
    const make = () => {
      const cause = Object.assign(new Error("x"), { code: "ECONNREFUSED" });
      return Object.assign(new Error("upstream refused", { cause }), { status: 503 });
    };
    const thrown = await answered(() => {
      throw make();
    });
    const nested = await answered(() => ({ error: make() }));
    expect(thrown.read).toMatch(/^Error: 503 upstream refused/);
    expect(nested.read).toBe(JSON.stringify({ error: thrown.read }));
    expect(nested.ok).toEqual([true]);
  });
});

describe("every error carries the run", () => {
  it("when a host's own client comes with a config that has no baseUrl", async () => {
    const server = await serve({ replies: [{ content: "hi" }] });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "sk-test" });
    const error = await createRuntime()
      // A host from plain JS: its own client, and a config that only names the model.
      .runAgentLoop({
        client,
        config: { model: "sim" } as LoopConfig,
        messages: QUESTION,
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/baseUrl/);
    expect(failedRun(error)?.messages).toEqual(QUESTION);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("when a runId cannot be emitted under", async () => {
    const server = await serve({ replies: [{ content: "hi" }] });
    const error = await createRuntime()
      .runAgentLoop({
        runId: "",
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect(EventsError.isInstance((error as AgentLoopError).cause)).toBe(true);
    expect((error as Error).message).toMatch(/runId must be a non-empty string/);
    expect(failedRun(error)?.messages).toEqual(QUESTION);
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("a stop during a side task before the first request", () => {
  async function stopped(options: { preselect?: boolean }) {
    const stop = new AbortController();
    const server = await serve({
      replies: (_request, index) => {
        if (index === 0) setTimeout(() => stop.abort(new Error("stopped by the user")), 20);
        return { content: index === 0 ? '{"tools":["add"]}' : "never", firstByteDelayMs: 2000 };
      },
    });
    const events: RunEvent[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        config: {
          baseUrl: server.baseUrl,
          model: "sim",
          ...(options.preselect ? { toolDiscovery: "ondemand", toolSelectModel: "sim" } : {}),
        },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => "5",
        signal: stop.signal,
        onEvent: (event) => events.push(event),
        ...(options.preselect ? { preselect: true } : {}),
      })
      .catch((e: unknown) => e);
    return { server, events, error };
  }

  it("ends the run with the stop during the preselection, with no notice calling it a failed preselection", async () => {
    const { server, events, error } = await stopped({ preselect: true });
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe("stopped by the user");
    expect(events.filter((e) => e.kind === "notice")).toEqual([]);
    expect(events.filter((e) => e.kind === "turn")).toEqual([]);
    expect(server.chatRequests).toHaveLength(1);
    expect(failedRun(error)?.messages).toEqual(QUESTION);
  });
});

describe("an answer that said nothing", () => {
  it("is kept in the transcript but left out of the next request, which a strict endpoint takes", async () => {
    // A reply that was all scratchpad: no text, no calls.
    const server = await serve({ replies: [{ reasoning: "Let me think about it.", content: "" }] });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      dispatch: () => "",
    });
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "" });
    expect(await sendAgain(result.messages)).toBe("Glad to help.");
  });

  it("sends the questions either side of it as one, which a template that makes roles alternate takes", async () => {
    const server = await serve({ replies: [{ reasoning: "Let me think about it.", content: "" }] });
    const first = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      dispatch: () => "",
    });
    // Gemma's and Mistral's templates on llama.cpp: no empty answer (strict) and no two questions in a row.
    const both: Personality = {
      name: "strict-and-alternating",
      check: (request, context) =>
        STRICT_TRANSCRIPT.check?.(request, context) ?? ALTERNATING_ROLES.check?.(request, context),
    };
    const strict = await serve({ personality: both, replies: [{ content: "Glad to help." }] });
    const next = await createRuntime().runAgentLoop({
      config: { baseUrl: strict.baseUrl, model: "sim" },
      messages: [...first.messages, { role: "user", content: [{ type: "text", text: "Thanks. And then?" }] }],
      dispatch: () => "",
    });
    expect(next.turn.content).toBe("Glad to help.");
    const sent = (strict.chatRequests[0]?.body as { messages?: ChatMessage[] } | undefined)?.messages ?? [];
    expect(sent.map((m) => m.role)).toEqual(["user"]);
    expect(JSON.stringify(sent[0]?.content)).toMatch(/What is 2 \+ 3\?[\s\S]*Thanks\. And then\?/);
    // The transcript handed back keeps both questions and the empty answer as they were.
    expect(next.messages.slice(0, 3).map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });
});

describe("a question no answer followed", () => {
  it("goes with the next question as one, which a template that makes roles alternate takes", async () => {
    // A run that failed (or was stopped) before the model answered hands back its question alone.
    const server = await serve({
      replies: [{ type: "error", status: 400, body: { error: { message: "bad request" } } }],
    });
    const failed = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        messages: QUESTION,
        dispatch: () => "",
      })
      .catch((error: unknown) => failedRun(error));
    expect(failed?.messages.map((m) => m.role)).toEqual(["user"]);
    const alternating = await serve({ personality: ALTERNATING_ROLES, replies: [{ content: "5, then 7." }] });
    const next = await createRuntime().runAgentLoop({
      config: { baseUrl: alternating.baseUrl, model: "sim" },
      messages: [...(failed?.messages ?? []), { role: "user", content: "And 3 + 4?" }],
      dispatch: () => "",
    });
    // Was the recorded 400 "Conversation roles must alternate", on this and every later question.
    expect(next.turn.content).toBe("5, then 7.");
    const sent =
      (alternating.chatRequests[0]?.body as { messages?: ChatMessage[] } | undefined)?.messages ?? [];
    expect(sent).toEqual([{ role: "user", content: "What is 2 + 3?\n\nAnd 3 + 4?" }]);
    expect(next.messages.slice(0, 2)).toEqual([...QUESTION, { role: "user", content: "And 3 + 4?" }]);
  });

  it("stays apart from a question another named speaker asked next, so no one's words go under another's name", async () => {
    const server = await serve({ replies: [{ content: "Both answered." }] });
    const asked: ChatMessage[] = [
      { role: "user", name: "alice", content: "What is 2 + 3?" },
      { role: "user", name: "bob", content: "And 3 + 4?" },
      { role: "user", name: "bob", content: "Quickly, please." },
    ];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: asked,
      dispatch: () => "",
    });
    const sent = (server.chatRequests[0]?.body as { messages?: ChatMessage[] } | undefined)?.messages ?? [];
    expect(sent).toEqual([
      { role: "user", name: "alice", content: "What is 2 + 3?" },
      { role: "user", name: "bob", content: "And 3 + 4?\n\nQuickly, please." },
    ]);
  });
});

describe("an answer that said nothing, before the question the hooks speak to", () => {
  it("puts the hooks' context on the question, not on a message after it", async () => {
    const server = await serve({ replies: [{ content: "Still nothing." }] });
    const history: ChatMessage[] = [
      { role: "user", content: "Hello?" },
      { role: "assistant", content: "" },
      { role: "user", content: "Are you there?" },
    ];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: history,
      dispatch: () => "",
      hooks: {
        run: (event) => (event === "beforeTurn" ? [{ id: "memory", context: "The user is patient." }] : []),
      },
    });
    const sent = (server.chatRequests[0]?.body as { messages: ChatMessage[] } | undefined)?.messages ?? [];
    // The two questions go as one (the empty answer between them is left out); the context is on it.
    expect(sent.map((m) => m.role)).toEqual(["user"]);
    expect(String(sent[0]?.content)).toMatch(/^Hello\?\n\n/);
    expect(String(sent[0]?.content)).toMatch(
      /The user is patient\.[\s\S]*Are you there\?|Are you there\?[\s\S]*The user is patient\./,
    );
  });
});

describe("an onMessage that throws on the assistant message", () => {
  it("tells the watchers and the events of the calls it leaves unrun, as toolCalls counts them", async () => {
    const server = await serve({
      replies: [
        {
          toolCalls: [
            add("c1", 1),
            { id: "c2", name: "call_tool", arguments: '{"name":"add","arguments":{"a":2,"b":1}}' },
          ],
        },
      ],
    });
    const told: string[] = [];
    const results: string[] = [];
    const events: RunEvent[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "proxy" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => "never",
        onMessage: (message) => {
          if (message.role === "assistant") throw new Error("database is down");
        },
        onToolCall: (r) => told.push(`${r.id}=${r.name}`),
        onToolResult: (r) => results.push(`${r.id}=${r.name}:${r.content}`),
        onEvent: (event) => events.push(event),
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe("onMessage threw: database is down");
    const run = failedRun(error);
    expect(run?.toolCalls.map((c) => `${c.id}=${c.name}`)).toEqual(["c1=add", "c2=add"]);
    expect(told).toEqual(["c1=add", "c2=add"]);
    expect(results).toEqual([
      "c1=add:Not run: the run stopped first.",
      "c2=add:Not run: the run stopped first.",
    ]);
    expect(events.filter((e) => e.kind === "tool-result")).toHaveLength(2);
    expect(await sendAgain(run?.messages ?? [])).toBe("Glad to help.");
  });
});

describe("ids after beforeStep rewrote the transcript", () => {
  it("keeps a new call's id apart from one a replacement brought in", async () => {
    // A server that sends no ids: every call is call_0 until the loop makes it distinct
    // (call_0, call_0_2, then call_0_3 would be next).
    const server = await serve({
      replies: [
        { toolCalls: [add("", 1)] },
        { toolCalls: [add("", 2)] },
        { toolCalls: [add("", 3)] },
        { content: "Done." },
      ],
    });
    const recalled: ChatMessage[] = [
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0_3", type: "function", function: { name: "add", arguments: '{"a":9,"b":1}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_0_3", content: "10" },
    ];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ args }) => (args.a as number) + 1,
      // Before the third request, the host swaps the first exchange for one from its own store.
      beforeStep: (messages, step) =>
        step === 3 ? [messages[0] as ChatMessage, ...recalled, ...messages.slice(3)] : undefined,
    });
    expect(transcriptFaults(result.messages)).toEqual([]);
    for (const request of server.chatRequests) {
      expect(transcriptFaults((request.body as { messages: unknown[] }).messages)).toEqual([]);
    }
  });
});
