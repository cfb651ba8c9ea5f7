import { getClient } from "@loopwright/client";
import { buildBody, createCapabilityStore } from "@loopwright/negotiate";
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { continueTurn } from "./continue-turn.js";
import { failedRun } from "./errors.js";
import { createRuntime } from "./index.js";
import { runTurn } from "./run-turn.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const question: ChatMessage[] = [{ role: "user", content: "Count on." }];

/** A first turn cut off at the ceiling, and continueTurn called on it with `maxContinuations`. */
async function carryOn(maxContinuations: unknown) {
  server = await startServer({
    replies: [
      { content: "alpha", finishReason: "length" },
      { content: " beta", finishReason: "length" },
      { content: " gamma", finishReason: "length" },
      { content: " delta" },
    ],
  });
  const supports = createCapabilityStore().capabilitiesFor(server.baseUrl);
  const client = getClient({ baseUrl: server.baseUrl });
  const build = () => buildBody({ model: "m", maxTokens: 5 }, supports, undefined, question);
  const first = await runTurn(client, supports, build, { model: "m" });
  const outcome = await continueTurn(client, supports, build, first, {
    model: "m",
    maxContinuations: maxContinuations as number,
  }).then(
    (turn) => turn,
    (error: unknown) => error,
  );
  return { outcome, sent: server.chatRequests.length };
}

describe("r75: continueTurn's maxContinuations", () => {
  it.each([
    [Number.NaN, "NaN"],
    [-1, "-1"],
    [1.5, "1.5"],
    ["2", '"2"'],
    [Number.POSITIVE_INFINITY, "Infinity"],
  ])(
    "refuses %s before a continuation is sent, naming it (as the loop's config does)",
    async (value, shown) => {
      const { outcome, sent } = await carryOn(value);
      expect(outcome).toBeInstanceOf(RangeError);
      expect((outcome as Error).message).toContain(
        `maxContinuations must be a whole number from 0, got ${shown}`,
      );
      expect(sent).toBe(1);
    },
  );

  it("spends exactly the number given, none for 0, one by default", async () => {
    for (const [value, content, sent] of [
      [0, "alpha", 1],
      [undefined, "alpha beta", 2],
      [2, "alpha beta gamma", 3],
    ] as const) {
      const run = await carryOn(value);
      expect(run.outcome).toMatchObject({ content, continuations: sent - 1 });
      expect(run.sent).toBe(sent);
      await server?.close();
      server = undefined;
    }
  });
});

describe("r75: a stop while a cut-off answer is carried on", () => {
  /** A reply cut off, `pieces` continuations that came back cut off too, then one the host stops. */
  async function stopped(pieces: number) {
    const stop = new AbortController();
    server = await startServer({
      replies: (_request, index) => {
        if (index <= pieces) {
          return {
            content: index === 0 ? "The answer begins" : " and goes",
            finishReason: "length",
            usage: { prompt_tokens: 100 + index, completion_tokens: 7 },
          };
        }
        setTimeout(() => stop.abort(new Error("stopped by the user")), 50);
        return { content: " on.", firstByteDelayMs: 2000 };
      },
    });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0, maxContinuations: pieces + 1 },
        messages: question,
        signal: stop.signal,
        dispatch: () => "unused",
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    return { error, stop, sent: server.chatRequests.length };
  }

  it("ends with the stop, nothing sent after, the transcript as it was before the step", async () => {
    const { error, stop, sent } = await stopped(0);
    expect((error as Error).cause).toBe(stop.signal.reason);
    expect(sent).toBe(2);
    expect(failedRun(error)?.messages).toEqual(question);
  });

  it("counts the first request's reported usage in the run's, which it was paid for", async () => {
    const { error } = await stopped(0);
    expect(failedRun(error)?.usage).toEqual({ prompt: 100, completion: 7, total: 107, cached: 0 });
  });

  it("counts each continuation that came back before the stop too", async () => {
    const { error, sent } = await stopped(2);
    expect(sent).toBe(4);
    expect(failedRun(error)?.usage).toEqual({ prompt: 303, completion: 21, total: 324, cached: 0 });
  });
});

describe("r75: a continuation cut off before it adds anything", () => {
  it("is not carried on again: one request, not maxContinuations of them, with a notice", async () => {
    server = await startServer({
      replies: (_request, index) =>
        index === 0
          ? { content: "The answer begins here and", finishReason: "length" }
          : { content: "", finishReason: "length" },
    });
    const notices: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0, maxContinuations: 20 },
      messages: question,
      dispatch: () => "unused",
      onEvent: (e) => {
        if (e.kind === "notice") notices.push(e.text);
      },
    });
    expect(server.chatRequests.length).toBe(2);
    expect(result.turn.content).toBe("The answer begins here and");
    expect(result.turn.finishReason).toBe("length");
    expect(notices.some((n) => n.startsWith("The continuation was cut off before it added anything"))).toBe(
      true,
    );
  });

  it("is carried on while each piece adds something, up to maxContinuations", async () => {
    server = await startServer({
      replies: (_request, index) => ({
        content: index === 0 ? "Counting:" : ` ${index}`,
        finishReason: "length",
      }),
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0, maxContinuations: 3 },
      messages: question,
      dispatch: () => "unused",
    });
    expect(server.chatRequests.length).toBe(4);
    expect(result.turn.content).toBe("Counting: 1 2 3");
  });
});

describe("r75: a stop while the beforeCompact hooks are asked", () => {
  it("ends the run with the stop, nothing sent after, and no notice calling the hooks failed", async () => {
    let step = 0;
    server = await startServer({
      replies: (request) => {
        const messages = (request.body as { messages: ChatMessage[] }).messages;
        if (messages[0]?.content === SUMMARISER_SYSTEM) return { content: "Notes." };
        step++;
        return { toolCalls: [{ id: `p${step}`, name: "read_page", arguments: `{"n":${step}}` }] };
      },
    });
    const history: ChatMessage[] = [];
    for (const chapter of ["one", "two", "three"]) {
      history.push(
        { role: "user", content: `Summarise chapter ${chapter}.` },
        { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(150).trim()}` },
      );
    }
    history.push({ role: "user", content: "Read pages 1 to 4." });
    const stop = new AbortController();
    const notices: string[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        config: {
          baseUrl: server.baseUrl,
          model: "m",
          maxRetries: 0,
          contextLength: 1600,
          compact: true,
          tasks: { compaction: { model: "notes" } },
        },
        messages: history,
        tools: [
          {
            type: "function",
            function: {
              name: "read_page",
              parameters: { type: "object", properties: { n: { type: "number" } } },
            },
          },
        ],
        dispatch: ({ args }) => `page ${args.n}: ${"ipsum ".repeat(70).trim()}`,
        signal: stop.signal,
        hooks: {
          run: (event) => {
            if (event !== "beforeCompact") return [];
            setTimeout(() => stop.abort(new Error("stopped by the user")), 20);
            return new Promise(() => {}); // a hook that never answers: the stop ends the wait
          },
        },
        onEvent: (e) => {
          if (e.kind === "notice") notices.push(e.text);
        },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as Error).cause).toBe(stop.signal.reason);
    const sent = server.chatRequests.length;
    expect(sent).toBeGreaterThan(0);
    // Nothing after the stop: no summary request, no step sent unfolded.
    expect(
      server.chatRequests.some(
        (r) => (r.body as { messages: ChatMessage[] }).messages[0]?.content === SUMMARISER_SYSTEM,
      ),
    ).toBe(false);
    expect(failedRun(error)?.messages.length).toBeGreaterThan(history.length);
    expect(notices.filter((n) => n.startsWith("Hooks:"))).toEqual([]);
  });
});
