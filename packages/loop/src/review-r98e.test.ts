// Review r98e: follow-ups to a step's model and body fields (`StepPlan.model`, `StepPlan.extraBody`),
// over HTTP against the testkit: a config's extraBody that sets a field the loop owns, the model a
// request watcher is told, the effort a notice names, and what is said of the cache across A → B → A.
import type { RunEvent } from "@loopwright/events";
import {
  countTokens,
  openaiPersonality,
  renderPrompt,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { StepPlan } from "./agent-loop.js";
import type { LoopConfig } from "./config.js";
import { AgentLoopError, LoopOptionError } from "./errors.js";
import { createRuntime, type Runtime } from "./index.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = Record<string, unknown> & { model?: string };
const bodies = (): Body[] => (server?.chatRequests ?? []).map((r) => r.body as Body);

describe("config.extraBody setting a field the loop owns", () => {
  it("is refused before anything is sent, naming the field and where it goes instead, where it was dropped without a word", async () => {
    server = await startServer({ replies: () => ({ content: "5" }) });
    const cases: Array<[Record<string, unknown>, string]> = [
      // Before: the request went to "big", the model the host did not name here, unsaid.
      [
        { model: "small" },
        `config.extraBody sets "model", a field buildBody writes itself (the request names the model it is built for: config.model, a step plan's model, a side task's model argument)`,
      ],
      [{ messages: [] }, `config.extraBody sets "messages"`],
      [
        { stream: false },
        `config.extraBody sets "stream", a field buildBody writes itself (a run's requests are always streamed, a side task's never)`,
      ],
      [{ tools: [] }, `config.extraBody sets "tools"`],
    ];
    for (const [extraBody, words] of cases) {
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "big", extraBody },
          messages: QUESTION,
          tools: [ADD_TOOL],
          dispatch: () => 5,
        })
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error), words).toBe(true);
      // r99a: refused when the run starts, in buildBody's words, as the option it is.
      expect(LoopOptionError.isInstance((error as AgentLoopError).cause)).toBe(true);
      expect((error as AgentLoopError).cause).toMatchObject({ option: "config.extraBody" });
      expect((error as Error).message).toContain(words);
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("still sends a tool_choice, and lets a field set to undefined be", async () => {
    server = await startServer({ replies: [{ content: "5" }] });
    const result = await createRuntime().runAgentLoop({
      config: {
        baseUrl: server.baseUrl,
        model: "big",
        extraBody: { tool_choice: "none", top_k: 20, model: undefined },
      },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 5,
    });
    expect(result.stopReason).toBe("answered");
    expect(bodies()).toHaveLength(1);
    expect(bodies()[0]).toMatchObject({ model: "big", tool_choice: "none", top_k: 20 });
  });
});

describe("onRequest's request", () => {
  it("names the model the request goes to: a step's plan's, else the config's", async () => {
    let answered = 0;
    server = await startServer({
      replies: () => {
        answered++;
        return answered === 1
          ? { toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }] }
          : { content: "5" };
      },
    });
    const told: Array<[string, number]> = [];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "big" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 5,
      beforeStep: (_messages, step) => (step === 1 ? { model: "small" } : undefined),
      onRequest: (request, step) => told.push([request.model, step]),
    });
    expect(told).toEqual([
      ["small", 1],
      ["big", 2],
    ]);
    // What the watcher was told is what went out.
    expect(bodies().map((b) => b.model)).toEqual(["small", "big"]);
  });
});

describe("the notice of a reasoning effort stepped up", () => {
  // o3 on the testkit's openai personality takes low, medium and high: "minimal" is refused, and
  // sent as "low" from then on.
  const o3 = () =>
    startServer({
      personality: openaiPersonality({ reasoningEffortValues: ["low", "medium", "high"] }),
      scriptedModel: { chunkDelayMs: 0 },
    });
  async function run(runtime: Runtime, config: Partial<LoopConfig>, plan?: StepPlan) {
    const s = server as TestServer;
    const before = s.chatRequests.length;
    const notices: string[] = [];
    await runtime.runAgentLoop({
      config: { baseUrl: s.baseUrl, model: "o3", ...config },
      messages: [{ role: "user", content: "hi" }],
      dispatch: () => "",
      onEvent: (e) => {
        if (e.kind === "notice") notices.push(e.text);
      },
      ...(plan ? { beforeStep: () => plan } : {}),
    });
    const sent = s.chatRequests.slice(before).map((r) => (r.body as Body).reasoning_effort);
    return { sent, notices: notices.filter((n) => /reasoning_effort/.test(n)) };
  }
  const STEPPED =
    'o3 does not take reasoning_effort "minimal"; sending "low", which spends more reasoning tokens than asked.';

  it("names the effort the request asked for, where it was a body field of the config's or of a step's plan", async () => {
    server = await o3();
    // The config's extraBody: what goes on the wire, whatever config.reasoningEffort says.
    expect(
      await run(createRuntime(), { reasoningEffort: "high", extraBody: { reasoning_effort: "minimal" } }),
    ).toEqual({ sent: ["minimal", "low"], notices: [STEPPED] });
    // A step's plan's.
    expect(
      await run(
        createRuntime(),
        { reasoningEffort: "medium" },
        { extraBody: { reasoning_effort: "minimal" } },
      ),
    ).toEqual({ sent: ["minimal", "low"], notices: [STEPPED] });
  });

  it("tells no step-up where the request asked for an effort the model takes, though the config's is one it refused", async () => {
    server = await o3();
    const runtime = createRuntime();
    // The runtime learns that o3 refuses "minimal" (and tells it).
    expect(await run(runtime, { reasoningEffort: "minimal" })).toEqual({
      sent: ["minimal", "low"],
      notices: [STEPPED],
    });
    // A fresh runtime from its snapshot, asked "minimal" by the config but "high" by the plan: "high"
    // goes out, and nothing says "low" is sent.
    const restarted = createRuntime();
    restarted.capabilities.importCapabilities(runtime.capabilities.exportCapabilities());
    expect(
      await run(restarted, { reasoningEffort: "minimal" }, { extraBody: { reasoning_effort: "high" } }),
    ).toEqual({ sent: ["high"], notices: [] });
  });
});

describe("the prompt cache across a step to another model and back (A → B → A)", () => {
  const call = (id: string) => ({ toolCalls: [{ id, name: "add", arguments: '{"a":2,"b":3}' }] });
  /**
   * With `oneSlot`, what a server with one slot reports instead: B's request evicted A's prefix, so
   * the step back to A reads nothing from the cache, and the step after it all of that one's prompt.
   */
  async function run(oneSlot = false) {
    let answered = 0;
    let previousPrompt = 0;
    server = await startServer({
      // The testkit keeps one prefix cache per model, as a server with a slot per model does: A's
      // prefix is still warm when the run comes back to it.
      prefixCache: !oneSlot,
      replies: (request) => {
        answered++;
        const reply = answered <= 3 ? call(`c${answered}`) : { content: "5" };
        const prompt = countTokens(renderPrompt(request.body as never));
        const cached = answered === 4 ? previousPrompt : 0;
        previousPrompt = prompt;
        return oneSlot ? { ...reply, usage: { prompt_tokens: prompt, cached_tokens: cached } } : reply;
      },
    });
    const events: RunEvent[] = [];
    const models: Record<number, string> = { 1: "a", 2: "b", 3: "a", 4: "a" };
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "a" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 5,
      onEvent: (event) => events.push(event),
      beforeStep: (_messages, step) => ({ model: models[step] as string }),
    });
    const turns = events.flatMap((e) => (e.kind === "usage" ? [e.turn] : []));
    return { result, turns };
  }

  it("expects nothing of the step back to A and says no cache broke, whether A's prefix was still warm or evicted", async () => {
    // Several slots: A's second request reads A's first prompt from the cache.
    const warm = await run();
    expect(warm.turns.map((t) => t.model)).toEqual(["a", "b", "a", "a"]);
    expect(warm.turns.map((t) => t.usage.cached > 0)).toEqual([false, false, true, true]);
    // The loop compares with the request just before (B's): it cannot know whether A's prefix is
    // still held, so it expects nothing there, and claims no break.
    expect(warm.turns.map((t) => t.cacheExpected !== undefined)).toEqual([false, false, false, true]);
    expect(warm.turns.map((t) => t.cacheBroken)).toEqual([undefined, undefined, undefined, false]);
    expect(warm.result.metrics.cacheBreaks).toBe(0);
    await server?.close();
    // One slot: B's request evicted A's prefix, and the step back to A reads nothing from the cache;
    // still no break is claimed (nothing was expected of it), and the next step reads step 3's.
    const evicted = await run(true);
    expect(evicted.turns.map((t) => t.usage.cached > 0)).toEqual([false, false, false, true]);
    expect(evicted.turns.map((t) => t.cacheBroken ?? "none expected")).toEqual([
      "none expected",
      "none expected",
      "none expected",
      false,
    ]);
    expect(evicted.result.metrics.cacheBreaks).toBe(0);
    // The ledger takes no difference across either change: B's entry and A's after it each start an epoch.
    const epochs = evicted.result.ledger.map((entry) => entry.epoch);
    expect(new Set(epochs.slice(0, 3)).size).toBe(3);
    expect(epochs[3]).toBe(epochs[2]);
  });
});
