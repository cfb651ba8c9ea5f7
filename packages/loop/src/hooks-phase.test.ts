import type { RunEvent } from "@loopwright/events";
import { HOOK_PREFACE, type HookRunner, withContext } from "@loopwright/hooks";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { AgentLoopError, LoopOptionError } from "./errors.js";
import { createRuntime, defaultRuntime, resetAll } from "./index.js";
import { ADD_TOOL, unanswered } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Context = { session: { id: string } };
type Stored = ChatMessage & { hookContext?: string; hookPreface?: string };

/** The messages a chat request carried, as the server parsed them. */
function sent(index: number): ChatMessage[] {
  const body = server?.chatRequests[index]?.body as { messages?: ChatMessage[] } | undefined;
  return body?.messages ?? [];
}

/** The prompt and cached tokens a request was answered with, off the loop's usage events. */
function usages(events: RunEvent[]): { prompt: number; cached: number }[] {
  return events
    .filter((e): e is Extract<RunEvent, { kind: "usage" }> => e.kind === "usage")
    .map((e) => ({ prompt: e.turn.usage.prompt, cached: e.turn.usage.cached }));
}

describe("the hooks option, over HTTP", () => {
  it("gathers once onto the current question of every request, never into the transcript, and does not wait on afterTurn", async () => {
    server = await startServer({
      prefixCache: true,
      replies: [
        { toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }] },
        { content: "It is 5." },
      ],
    });
    const calls: { event: string; input: Record<string, unknown> }[] = [];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const run: HookRunner<Context> = async (event, input) => {
      calls.push({ event, input: input as Record<string, unknown> });
      if (event === "sessionStart") return [{ id: "welcome", context: "First session: be gentle." }];
      if (event === "beforeTurn") return [{ id: "memory", context: "The user likes exact sums." }];
      if (event === "afterTurn") await held;
      return [{ id: "memory", ok: true }];
    };
    const events: RunEvent[] = [];
    const question: ChatMessage = { role: "user", content: "What is 2 + 3?" };
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      system: "You add numbers.",
      messages: [question],
      tools: [ADD_TOOL],
      dispatch: ({ args }) => Number(args.a) + Number(args.b),
      hooks: { run, context: { session: { id: "s-1" } } },
      onEvent: (e) => events.push(e),
    });

    // Gathered once, before the first request: sessionStart too, since this is the first turn.
    expect(calls.filter((c) => c.event !== "afterTurn").map((c) => c.event)).toEqual([
      "sessionStart",
      "beforeTurn",
    ]);
    expect(calls[1]?.input).toMatchObject({ prompt: "What is 2 + 3?", turn: 0 });
    // Both requests carried the context on the question, and the system prompt stayed as it was.
    for (const index of [0, 1]) {
      const messages = sent(index);
      expect(messages[0]).toEqual({ role: "system", content: "You add numbers." });
      const asked = messages[1]?.content as string;
      expect(asked.startsWith(`${HOOK_PREFACE}\n\n`)).toBe(true);
      expect(asked).toContain('<context hook="welcome">\nFirst session: be gentle.\n</context>');
      expect(asked).toContain('<context hook="memory">\nThe user likes exact sums.\n</context>');
      expect(asked.endsWith("What is 2 + 3?")).toBe(true);
    }
    // The returned transcript has the question as typed; the result says what was added.
    expect(result.messages[0]).toEqual(question);
    expect(question.content).toBe("What is 2 + 3?");
    expect(result.context).toContain("The user likes exact sums.");
    expect(result.preface).toBe(HOOK_PREFACE);
    expect(sent(0)[1]?.content).toBe(withContext([question], 0, result.context, result.preface)[0]?.content);
    // The run came back while the afterTurn hook was still holding.
    let told = false;
    void result.afterTurn?.then(() => {
      told = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(told).toBe(false);
    expect(calls.at(-1)).toMatchObject({
      event: "afterTurn",
      input: { prompt: "What is 2 + 3?", reply: "It is 5." },
    });
    release();
    const report = await result.afterTurn;
    expect(report?.notes).toEqual([]);
    expect(told).toBe(true);
    expect(events.some((e) => e.kind === "notice")).toBe(false);
  });

  it("a host storing the context beside its question and rebuilding it with withContext gets no cache break on the next turn", async () => {
    server = await startServer({
      prefixCache: true,
      replies: [
        { toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }] },
        { content: "It is 5." },
        { content: "Then 10." },
        { content: "Still 10." },
      ],
    });
    let turn = 0;
    const run: HookRunner<Context> = (event) =>
      event === "beforeTurn"
        ? [{ id: "memory", context: `Recall number ${turn++}: the user likes sums.` }]
        : [];
    const runtime = createRuntime();
    const session: Stored[] = [];
    const ask = async (prompt: string, rebuild: boolean) => {
      const history = session.reduce<ChatMessage[]>(
        (messages, message, at) =>
          rebuild ? withContext(messages, at, message.hookContext ?? "", message.hookPreface) : messages,
        session.map(({ hookContext: _c, hookPreface: _p, ...message }) => message),
      );
      const events: RunEvent[] = [];
      const result = await runtime.runAgentLoop({
        config: { baseUrl: server?.baseUrl ?? "", model: "sim" },
        system: "You add numbers.",
        messages: [...history, { role: "user", content: prompt }],
        tools: [ADD_TOOL],
        dispatch: ({ args }) => Number(args.a) + Number(args.b),
        hooks: { run, context: { session: { id: "s-2" } } },
        onEvent: (e) => events.push(e),
      });
      session.push(
        { role: "user", content: prompt, hookContext: result.context, hookPreface: result.preface },
        ...result.messages.slice(history.length + 1),
      );
      return usages(events);
    };
    const first = await ask("What is 2 + 3?", true);
    // The host changes its preface between turns; the stored question must not change with it.
    runtime.hooks.configure({ preface: "Background from my-host:" });
    const second = await ask("And doubled?", true);
    const last = first.at(-1) as { prompt: number };
    // The whole of the previous request came from the cache: the next request is it with a tail added.
    expect(second[0]?.cached).toBe(last.prompt);
    expect(sent(2)[sent(2).length - 1]?.content as string).toMatch(/^Background from my-host:\n\n<context/);
    expect(unanswered(session)).toEqual([]);
    // The same host sending the earlier question bare loses the cache from that question on.
    const third = await ask("And again?", false);
    expect(third[0]?.cached).toBeLessThan(second[0]?.prompt as number);
    expect(session.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "What is 2 + 3?",
      "And doubled?",
      "And again?",
    ]);
  });

  it("turns a hook that throws, hangs or answers junk into a notice, never a failed run", async () => {
    const runners: [string, HookRunner<Context>][] = [
      [
        "throws",
        () => {
          throw new Error("memory server down");
        },
      ],
      ["hangs", () => new Promise(() => {})],
      ["answers junk", () => "not a list" as never],
      ["fails", () => [{ id: "memory", ok: false, error: "recall failed" }]],
    ];
    server = await startServer({ replies: runners.map(() => ({ content: "Answered anyway." })) });
    for (const [index, [what, run]] of runners.entries()) {
      const events: RunEvent[] = [];
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: [{ role: "user", content: "Hello?" }],
        dispatch: () => "",
        hooks: { run, context: { session: { id: "s-3" } }, timeoutMs: 50 },
        onEvent: (e) => events.push(e),
      });
      expect(result.turn.content, what).toBe("Answered anyway.");
      expect(result.context, what).toBe("");
      expect(sent(index)[0]?.content, what).toBe("Hello?");
      const notices = events.filter((e) => e.kind === "notice").map((e) => (e as { text: string }).text);
      expect(notices.length, what).toBeGreaterThan(0);
      expect(
        notices.every((text) => text.startsWith("Hooks: ")),
        what,
      ).toBe(true);
    }
  });

  it("refuses hooks without a run function before anything is sent", async () => {
    server = await startServer({ replies: [{ content: "never sent" }] });
    for (const hooks of [{}, { run: "memory" }, { run: () => [], preface: 3 }]) {
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "sim" },
          messages: [{ role: "user", content: "Hi" }],
          dispatch: () => "",
          hooks: hooks as never,
        })
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      const cause = (error as AgentLoopError).cause;
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect((cause as LoopOptionError).code).toBe("invalid-option");
    }
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("hooks settings per runtime", () => {
  it("gives each runtime its own budget and preface, and resetAll puts the default runtime's back", async () => {
    server = await startServer({ replies: [{ content: "a" }, { content: "b" }, { content: "c" }] });
    const run: HookRunner<Context> = (event) =>
      event === "beforeTurn" ? [{ id: "memory", context: "word ".repeat(400).trim() }] : [];
    const tenant = createRuntime({ hooks: { preface: "Tenant A's hooks:", maxTokens: 50 } });
    const other = createRuntime();
    const ask = (runtime: typeof tenant) =>
      runtime.runAgentLoop({
        config: { baseUrl: server?.baseUrl ?? "", model: "sim" },
        messages: [{ role: "user", content: "Hi" }],
        dispatch: () => "",
        hooks: { run, context: { session: { id: "s-4" } } },
      });
    const a = await ask(tenant);
    const b = await ask(other);
    expect(a.preface).toBe("Tenant A's hooks:");
    expect(b.preface).toBe(HOOK_PREFACE);
    // 50 tokens at 4 characters each, against the other runtime's default 2000.
    expect((a.context ?? "").length).toBeLessThanOrEqual(200);
    expect((b.context ?? "").length).toBeGreaterThan(1000);

    defaultRuntime.hooks.configure({ preface: "Changed for the process:" });
    expect(other.hooks.settings().preface).toBe(HOOK_PREFACE);
    resetAll();
    expect(defaultRuntime.hooks.settings().preface).toBe(HOOK_PREFACE);
    // A hooks preface on the run wins over the runtime's for that run.
    const c = await tenant.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [{ role: "user", content: "Hi" }],
      dispatch: () => "",
      hooks: { run, context: { session: { id: "s-4" } }, preface: "" },
    });
    expect(c.preface).toBe("");
    expect(sent(2)[0]?.content as string).toMatch(/^<context hook="memory">/);
  });
});
