import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { failedRun, LoopOptionError } from "./errors.js";
import { createRuntime } from "./index.js";
import { ADD_TOOL, transcriptFaults } from "./test-support/transcript.js";

const call = (id: string) => ({ id, type: "function" as const, function: { name: "add", arguments: "{}" } });

/** Runs one loop against a loopback server answering "done"; the error it throws, or the chat bodies sent. */
async function attempt(options: Record<string, unknown>) {
  const server = await startServer({ replies: [{ content: "done" }, { content: "done" }] });
  try {
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        tools: [ADD_TOOL],
        dispatch: () => "5",
        ...options,
      } as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    return { error, sent: server.chatRequests.length };
  } finally {
    await server.close();
  }
}

describe("r74: two calls of one assistant message with one id", () => {
  // An endpoint refuses it (Anthropic behind OpenRouter: tool_use ids must be unique), and the one
  // tool message answering "x" cannot be told to be either call's answer.
  const shared: ChatMessage[] = [
    { role: "user", content: "Add twice." },
    { role: "assistant", content: null, tool_calls: [call("x"), call("x")] },
    { role: "tool", tool_call_id: "x", content: "5" },
    { role: "user", content: "And now?" },
  ];

  it("in the messages given is refused before anything is sent, naming the index and the id", async () => {
    const { error, sent } = await attempt({ messages: shared });
    expect(sent).toBe(0);
    const cause = (error as Error).cause;
    expect(LoopOptionError.isInstance(cause)).toBe(true);
    expect((cause as LoopOptionError).option).toBe("messages");
    expect((cause as Error).message).toContain('messages[1] holds two tool calls with the id "x"');
    expect(failedRun(error)?.messages).toEqual(shared);
  });

  it("left unanswered in the messages given is refused too, not answered once for both", async () => {
    const { error, sent } = await attempt({ messages: shared.filter((m) => m.role !== "tool") });
    expect(sent).toBe(0);
    expect(((error as Error).cause as Error).message).toContain(
      'messages[1] holds two tool calls with the id "x"',
    );
  });

  it("in a transcript beforeStep returns is refused before the step's request", async () => {
    const { error, sent } = await attempt({
      messages: [{ role: "user", content: "Add twice." }],
      beforeStep: (messages: readonly ChatMessage[]) => [...messages, ...shared.slice(1)],
    });
    expect(sent).toBe(0);
    expect((error as Error).message).toContain("two of whose tool calls share an id (x)");
  });
});

describe("r74: half a surrogate pair written as an escape in a call's arguments", () => {
  // A model (or a server's parser) writes "\ud800" in the JSON text: parsed, it is a lone surrogate.
  async function called(args: string) {
    const server = await startServer({
      replies: [{ toolCalls: [{ name: "note", arguments: args }] }, { content: "Noted." }],
    });
    const handed: Record<string, unknown>[] = [];
    try {
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        messages: [{ role: "user", content: "Note it." }],
        tools: [{ type: "function", function: { name: "note", parameters: { type: "object" } } }],
        dispatch: ({ args }) => {
          handed.push(args);
          return "ok";
        },
      });
      const replayed = (
        (server.chatRequests[1] as { body: unknown }).body as { messages: ChatMessage[] }
      ).messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
      const wire = replayed.map((c) => (c.type === "function" ? c.function.arguments : ""));
      return { handed, wire, kept: result.messages };
    } finally {
      await server.close();
    }
  }

  it("reaches the tool as U+FFFD, in a string and in a key, the own __proto__ key kept a key", async () => {
    const { handed } = await called('{"text":"x\\ud800y","\\udc00":"v","__proto__":{"p":1}}');
    expect(handed).toHaveLength(1);
    const args = handed[0] as Record<string, unknown>;
    expect(args.text).toBe("x\uFFFDy");
    expect(args["\uFFFD"]).toBe("v");
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Object.getOwnPropertyNames(args)).toContain("__proto__");
    expect(({} as Record<string, unknown>).p).toBeUndefined();
  });

  it("is replayed on the next request as U+FFFD, not as the escape llama.cpp's JSON reader refuses", async () => {
    const { wire } = await called('{"text":"x\\ud800y","pair":"\\ud83d\\ude00","slash":"\\\\ud800"}');
    expect(wire).toHaveLength(1);
    expect(wire[0]).not.toMatch(/(?<!\\)(?:\\\\)*\\ud8/i);
    expect(JSON.parse(wire[0] as string)).toEqual({ text: "x\uFFFDy", pair: "😀", slash: "\\ud800" });
  });
});

describe("r74: a long transcript that beforeStep hands back", () => {
  it("is taken and sent (150,000 messages), not a RangeError from spreading it onto the run", async () => {
    const history: ChatMessage[] = [];
    for (let i = 0; i < 37_500; i++) {
      history.push(
        { role: "user", content: `q${i}` },
        { role: "assistant", content: null, tool_calls: [call(`c${i}`)] },
        { role: "tool", tool_call_id: `c${i}`, content: "5" },
        { role: "assistant", content: "ok" },
      );
    }
    history.push({ role: "user", content: "And now?" });
    const server = await startServer({ replies: [{ content: "done" }] });
    try {
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        messages: history,
        tools: [ADD_TOOL],
        dispatch: () => "5",
        beforeStep: (messages) => [...messages],
      });
      expect(result.turn.content).toBe("done");
      expect(result.messages).toHaveLength(history.length + 1);
      expect(
        ((server.chatRequests[0] as { body: unknown }).body as { messages: unknown[] }).messages,
      ).toHaveLength(history.length);
    } finally {
      await server.close();
    }
  }, 60_000);
});

describe("r74: a watcher or callback that is not a function", () => {
  it.each([
    ["onEvent", "log"],
    ["onRequest", { log: true }],
    ["onToolCall", 5],
    ["onToolResult", true],
    ["onMessage", "store"],
    ["beforeStep", []],
  ])(
    "%s is refused before anything is sent, naming it (was: dropped, or a bare TypeError mid-run)",
    async (key, value) => {
      const { error, sent } = await attempt({
        messages: [{ role: "user", content: "Add 2 and 3." }],
        [key]: value,
      });
      expect(sent).toBe(0);
      const cause = (error as Error).cause;
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect((cause as LoopOptionError).option).toBe(key);
      expect((cause as Error).message).toContain(`${key} must be a function`);
    },
  );
});

describe("r74: a signal aborted before the run begins", () => {
  it("ends the run without calling beforeStep (a host's compaction or store read), nothing sent", async () => {
    const stop = new AbortController();
    stop.abort();
    let called = 0;
    const { error, sent } = await attempt({
      messages: [{ role: "user", content: "Add 2 and 3." }],
      signal: stop.signal,
      beforeStep: () => {
        called++;
      },
    });
    expect(sent).toBe(0);
    expect(called).toBe(0);
    expect((error as Error).cause).toBe(stop.signal.reason);
  });
});

describe("r74: the preselection's settings of the wrong type", () => {
  it.each([
    ["config.preselect", { config: { toolDiscovery: "ondemand", preselect: "yes", toolSelectModel: "m" } }],
    ["preselect", { config: { toolDiscovery: "ondemand", toolSelectModel: "m" }, preselect: "true" }],
    [
      "config.preselectKeywords",
      {
        config: {
          toolDiscovery: "ondemand",
          preselect: true,
          toolSelectModel: "m",
          preselectKeywords: "yes",
        },
      },
    ],
    [
      "config.toolSelectModel",
      { config: { toolDiscovery: "ondemand", preselect: true, toolSelectModel: 4 } },
    ],
  ])(
    "%s is refused before anything is sent (was: the run went without a preselection, or read it as given)",
    async (option, given) => {
      const server = await startServer({ replies: [{ content: '["add"]' }, { content: "done" }] });
      try {
        const givenConfig = given as { config: Record<string, unknown> };
        const error = await createRuntime()
          .runAgentLoop({
            messages: [{ role: "user", content: "Add 2 and 3." }],
            tools: [ADD_TOOL],
            dispatch: () => "5",
            ...(given as object),
            config: { baseUrl: server.baseUrl, model: "m", ...givenConfig.config },
          } as never)
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(server.chatRequests).toHaveLength(0);
        const cause = (error as Error).cause;
        expect(LoopOptionError.isInstance(cause)).toBe(true);
        expect((cause as LoopOptionError).option).toBe(option);
      } finally {
        await server.close();
      }
    },
  );
});

describe("r74: nothing to send", () => {
  it("an empty messages with no system prompt is refused before a request of no messages is sent", async () => {
    const { error, sent } = await attempt({ messages: [] });
    expect(sent).toBe(0);
    const cause = (error as Error).cause;
    expect(LoopOptionError.isInstance(cause)).toBe(true);
    expect((cause as LoopOptionError).option).toBe("messages");
    expect((cause as Error).message).toContain("nothing to send");
  });

  it("an empty start that beforeStep writes the conversation into still runs", async () => {
    const server = await startServer({ replies: [{ content: "5" }] });
    try {
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        messages: [],
        dispatch: () => "",
        beforeStep: (messages, step) =>
          step === 1 && messages.length === 0 ? [{ role: "user", content: "2 + 3?" }] : undefined,
      });
      expect(result.turn.content).toBe("5");
    } finally {
      await server.close();
    }
  });
});

describe("r74: a watcher that rewrites what it is told", () => {
  const two = {
    toolCalls: [
      { name: "add", arguments: '{"a":1,"b":2}' },
      { name: "add", arguments: '{"a":3,"b":4}' },
    ],
  };

  it.each([false, true])(
    "onToolResult changing the result's id and content changes neither the transcript nor the next request (parallel %s)",
    async (parallel) => {
      const server = await startServer({ replies: [two, { content: "done" }] });
      try {
        const result = await createRuntime().runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "m" },
          messages: [{ role: "user", content: "Add." }],
          tools: [ADD_TOOL],
          parallel,
          dispatch: ({ args }) => String(Number(args.a) + Number(args.b)),
          onToolResult: (r) => {
            r.id = "shown";
            r.content = "";
          },
        });
        expect(transcriptFaults(result.messages)).toEqual([]);
        const answers = result.messages.filter((m) => m.role === "tool");
        expect(answers.map((m) => m.content)).toEqual(["3", "7"]);
        expect(result.toolCalls.map((c) => c.id)).toEqual(
          answers.map((m) => (m.role === "tool" ? m.tool_call_id : "")),
        );
        expect(
          transcriptFaults((server.chatRequests[1] as { body: { messages: unknown[] } }).body.messages),
        ).toEqual([]);
      } finally {
        await server.close();
      }
    },
  );

  it("onToolCall changing the request's arguments does not change what is dispatched", async () => {
    const server = await startServer({ replies: [two, { content: "done" }] });
    const handed: unknown[] = [];
    try {
      await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        messages: [{ role: "user", content: "Add." }],
        tools: [ADD_TOOL],
        dispatch: ({ args }) => {
          handed.push(args);
          return "ok";
        },
        onToolCall: (request) => {
          request.args.a = 99;
        },
      });
      expect(handed).toEqual([
        { a: 1, b: 2 },
        { a: 3, b: 4 },
      ]);
    } finally {
      await server.close();
    }
  });
});

describe("r74: a watcher that rewrites a call refused at the step limit", () => {
  it("leaves the run's toolCalls matching its transcript", async () => {
    const ask = { toolCalls: [{ name: "add", arguments: '{"a":1,"b":2}' }] };
    const server = await startServer({ replies: [ask, ask] });
    try {
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "m", maxToolIterations: 1 },
          messages: [{ role: "user", content: "Add." }],
          tools: [ADD_TOOL],
          dispatch: () => "3",
          onToolResult: (r) => {
            r.id = "shown";
          },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      const run = failedRun(error);
      const answered = (run?.messages ?? []).flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : []));
      expect(answered).toHaveLength(2);
      expect(run?.toolCalls.map((c) => c.id)).toEqual(answered);
    } finally {
      await server.close();
    }
  });
});

describe("r74: an onEvent watcher that rewrites a usage event", () => {
  it("does not rewrite the run's usage totals", async () => {
    const server = await startServer({
      replies: [{ content: "done", usage: { prompt_tokens: 100, completion_tokens: 5 } }],
    });
    try {
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        messages: [{ role: "user", content: "Add." }],
        dispatch: () => "",
        onEvent: (event) => {
          // A host that shows uncached input only, adjusting the event in place.
          if (event.kind === "usage") event.usage.prompt = 0;
        },
      });
      expect(result.usage.prompt).toBe(100);
    } finally {
      await server.close();
    }
  });
});
