// A step's plan names this request's model and body fields (`StepPlan.model`, `StepPlan.extraBody`):
// what each request carries, what is learnt per model, the ledger and cache across a model change,
// and what is refused before anything is sent. Over HTTP against the testkit.
import type { RunEvent } from "@loopwright/events";
import {
  countTokens,
  type Reply,
  renderPrompt,
  startServer,
  type TestServer,
  type TurnReply,
} from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { StepPlan } from "./agent-loop.js";
import { AgentLoopError, LoopOptionError } from "./errors.js";
import { createRuntime } from "./index.js";
import { compactingConfig, llamaOverflow, oldThings } from "./test-support/llama-overflow.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = Record<string, unknown> & { model?: string; tool_choice?: unknown };
const bodies = (): Body[] => (server?.chatRequests ?? []).map((r) => r.body as Body);

const addCall = (id: string): TurnReply => ({
  toolCalls: [{ id, name: "add", arguments: JSON.stringify({ a: 1, b: 2 }) }],
});

/**
 * Replies for a run of `calls` tool steps and then an answer, taken in turn by the requests the
 * server answers; `refuse` may answer a request with a refusal instead, which takes no turn.
 */
function script(calls: number, refuse?: (body: Body) => Reply | undefined) {
  let answered = 0;
  return (request: { body: unknown }): Reply => {
    const refusal = refuse?.(request.body as Body);
    if (refusal) return refusal;
    answered++;
    return answered <= calls ? addCall(`c${answered}`) : { content: "3" };
  };
}

const openAiRefusal = (message: string, param?: string): Reply => ({
  type: "error",
  status: 400,
  body: { error: { message, type: "invalid_request_error", param: param ?? null, code: null } },
});

describe("beforeStep's plan: a step's model and body fields", () => {
  it("sends each step to the model and with the body fields its plan names, and a step without a plan goes back to the config's", async () => {
    server = await startServer({ replies: script(2) });
    const plans: Record<number, StepPlan> = {
      // A cheap model for the first tool step; one field replaced, one removed, one sent as null.
      1: { model: "small", extraBody: { top_k: 20, min_p: undefined, seed: null } },
      // The answer: the config's model, a response format for this step only.
      3: { extraBody: { response_format: { type: "json_object" } } },
    };
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "big", extraBody: { top_k: 40, min_p: 0.1 } },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
      beforeStep: (_messages, step) => plans[step],
    });
    const sent = bodies().map(({ model, top_k, min_p, seed, response_format }) => ({
      model,
      top_k,
      min_p,
      seed,
      response_format,
    }));
    expect(sent).toEqual([
      { model: "small", top_k: 20, min_p: undefined, seed: null, response_format: undefined },
      { model: "big", top_k: 40, min_p: 0.1, seed: undefined, response_format: undefined },
      { model: "big", top_k: 40, min_p: 0.1, seed: undefined, response_format: { type: "json_object" } },
    ]);
    // Removed, not sent as null: the key is not in the first body at all; null is JSON's, sent.
    expect(Object.hasOwn(bodies()[0] as Body, "min_p")).toBe(false);
    expect(Object.hasOwn(bodies()[0] as Body, "seed")).toBe(true);
    expect(result).toMatchObject({ stopReason: "answered", steps: 3 });
  });

  it("drops a field a step added that the server refuses by name and sends the step again, as it does a config's", async () => {
    // OpenAI's words for a field a model does not take.
    server = await startServer({
      replies: script(1, (body) =>
        body.model === "small" && "logit_bias" in body
          ? openAiRefusal(
              "Unsupported parameter: 'logit_bias' is not supported with this model.",
              "logit_bias",
            )
          : undefined,
      ),
    });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "big" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
      onEvent: (event) => events.push(event),
      // Both steps ask for the field; the first goes to the model that refuses it.
      beforeStep: (_messages, step) => ({
        extraBody: { logit_bias: { "1": 5 } },
        ...(step === 1 ? { model: "small" } : {}),
      }),
    });
    expect(result.stopReason).toBe("answered");
    expect(bodies().map((b) => [b.model, "logit_bias" in b])).toEqual([
      ["small", true], // refused
      ["small", false], // the same step, the field dropped
      ["big", true], // another model: what "small" refused is not left out of its request
    ]);
    const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
    expect(notices.some((text) => /small refused the field logit_bias/.test(text))).toBe(true);
  });

  it("learns a refusal for the model that refused: tool_choice is left out of that model's later steps and no other's", async () => {
    // OpenRouter's words where no provider of a model takes tool_choice.
    server = await startServer({
      replies: script(3, (body) =>
        body.model === "cheap" && body.tool_choice !== undefined
          ? openAiRefusal("No endpoints found that support the provided 'tool_choice' value.")
          : undefined,
      ),
    });
    const models: Record<number, string | undefined> = { 1: "cheap", 2: undefined, 3: "cheap", 4: undefined };
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "strong" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
      beforeStep: (_messages, step) => {
        const model = models[step];
        return { toolChoice: "required", ...(model !== undefined ? { model } : {}) };
      },
    });
    expect(bodies().map((b) => [b.model, b.tool_choice])).toEqual([
      ["cheap", "required"], // refused, and latched for "cheap"
      ["cheap", undefined],
      ["strong", "required"], // step 2: "strong" never refused it
      ["cheap", undefined], // step 3: still latched for "cheap"
      ["strong", "required"],
    ]);
  });

  it("expects no prompt cache across a change of model, and starts a new ledger epoch there", async () => {
    // The testkit keeps one prefix cache per model, as a server serving several models does.
    server = await startServer({ prefixCache: true, replies: script(3) });
    const events: RunEvent[] = [];
    const models: Record<number, string> = { 1: "big", 2: "big", 3: "small", 4: "small" };
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "big" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
      onEvent: (event) => events.push(event),
      beforeStep: (_messages, step) => ({ model: models[step] as string }),
    });
    const turns = events.flatMap((e) => (e.kind === "usage" ? [e.turn] : []));
    // Each turn's usage says which model its request named.
    expect(turns.map((t) => t.model)).toEqual(["big", "big", "small", "small"]);
    // What the server reported: step 2 read step 1's prompt from the cache, step 3 (another model)
    // nothing, step 4 step 3's.
    expect(turns.map((t) => t.usage.cached > 0)).toEqual([false, true, false, true]);
    // What the loop said: a cache expected where the model stayed, none across the change, and no
    // break reported there (the request only appended; another model has another cache).
    expect(turns.map((t) => t.cacheExpected !== undefined)).toEqual([false, true, false, true]);
    expect(turns.map((t) => t.cacheBroken ?? false)).toEqual([false, false, false, false]);
    expect(result.metrics.cacheBreaks).toBe(0);
    // One epoch per model: no difference is taken between two tokenizers' counts.
    const epochs = result.ledger.map((entry) => entry.epoch);
    expect(epochs).toHaveLength(4);
    expect(epochs[1]).toBe(epochs[0]);
    expect(epochs[2]).not.toBe(epochs[1]);
    expect(epochs[3]).toBe(epochs[2]);
  });

  it("keeps a window an overflow named for the model it refused, and tells beforeStep the window of the model the last request named", async () => {
    // "small" is served with a 300-token window, "big" with the 4,000 the host gave as contextLength.
    const SMALL = 300;
    let answered = 0;
    server = await startServer({
      replies: (request) => {
        const body = request.body as Body & { stream?: boolean };
        if (body.stream !== true) return { content: "Summary: the user asked about old things." };
        const tokens = countTokens(renderPrompt(body as never));
        if (body.model === "small" && tokens >= SMALL) {
          // llama.cpp's overflow body, naming its window.
          return llamaOverflow(tokens, SMALL);
        }
        answered++;
        return answered <= 2 ? addCall(`c${answered}`) : { content: "3" };
      },
    });
    const told: Array<[number | undefined, string | undefined]> = [];
    const result = await createRuntime().runAgentLoop({
      config: compactingConfig(server.baseUrl),
      messages: oldThings("What is 1 + 2?"),
      tools: [ADD_TOOL],
      dispatch: () => 3,
      beforeStep: (_messages, step, { limit, model }) => {
        told.push([limit, model]);
        return step === 1 ? { model: "small" } : undefined;
      },
    });
    expect(result.stopReason).toBe("answered");
    // "small" was refused, folded for and sent again; "big" took the next steps.
    expect(
      bodies()
        .filter((b) => b.stream === true)
        .map((b) => b.model),
    ).toEqual(["small", "small", "big", "big"]);
    // Each step is told the window of the model the last request named, which its `used` counts:
    // the config's before the first; "small"'s 300 after the step routed there (r99a: it was told
    // 4,000, and a host pruning against that kept a transcript "small" refuses); "big" keeps
    // contextLength, the window "small" named being no window of its.
    expect(told).toEqual([
      [4000, undefined],
      [SMALL, "small"],
      [4000, "big"],
    ]);
  });

  it("plans a fold on another model's count only for that model: a step to a new model is sized by its own estimate", async () => {
    // The first step's model reports a prompt of 3,500 tokens of a 4,000 window (its tokenizer
    // counts this transcript so); the transcript is some 150 tokens by the estimate.
    const run = async (plan: StepPlan | undefined) => {
      let turns = 0;
      server = await startServer({
        replies: (request) => {
          if ((request.body as { stream?: boolean }).stream !== true)
            return { content: "Summary: old talk." };
          turns++;
          return turns === 1
            ? { ...addCall("c1"), usage: { prompt_tokens: 3500, completion_tokens: 10 } }
            : { content: "3" };
        },
      });
      await createRuntime().runAgentLoop({
        config: {
          baseUrl: server.baseUrl,
          model: "wordy",
          contextLength: 4000,
          compact: true,
          tasks: { compaction: { model: "summ", maxTokens: 64 } },
        },
        messages: [
          { role: "user", content: "Question 0: what happened?" },
          { role: "assistant", content: "Many things happened, one after another, for a long while." },
          { role: "user", content: "What is 1 + 2?" },
        ],
        tools: [ADD_TOOL],
        dispatch: () => 3,
        beforeStep: (_messages, step) => (step === 2 ? plan : undefined),
      });
      const summaries = bodies().filter((b) => b.stream !== true).length;
      await server.close();
      server = undefined;
      return summaries;
    };
    // The same model again: its own count says the window is past three quarters full, so it folds.
    expect(await run(undefined)).toBe(1);
    // Another model: that count is no count of its prompt; its estimate fits, nothing is folded.
    expect(await run({ model: "small" })).toBe(0);
  });

  it("refuses a bad model or extraBody before anything is sent, naming the field", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const proto = JSON.parse('{"__proto__": 1}') as Record<string, unknown>;
    const cases: Array<[unknown, RegExp]> = [
      [{ model: "" }, /planned model: ""; model must be the non-empty name/],
      [{ model: 5 }, /planned model: 5; model must be/],
      [{ model: null }, /planned model: null; model must be/],
      [{ extraBody: null }, /planned extraBody of null; extraBody must be a plain object/],
      [{ extraBody: [1] }, /planned extraBody of \[1\]; extraBody must be a plain object/],
      [{ extraBody: "top_k=2" }, /planned extraBody of "top_k=2"/],
      [{ extraBody: new Map([["top_k", 2]]) }, /planned extraBody of a class instance/],
      [
        { extraBody: { model: "small" } },
        /extraBody with the field "model", which the loop owns .*; plan \{ model \} sets it for the step\)/,
      ],
      [{ extraBody: { messages: [] } }, /the field "messages", which the loop owns/],
      [{ extraBody: { tools: [] } }, /the field "tools", which the loop owns/],
      [{ extraBody: { stream: false } }, /the field "stream", which the loop owns/],
      [{ extraBody: { stream: undefined, tools: [] } }, /the field "tools", which the loop owns/],
      [{ extraBody: proto }, /extraBody with a "__proto__" key/],
      [{ extraBody: { top_p: Number.NaN } }, /planned extraBody\.top_p is NaN/],
      [{ extraBody: { logit_bias: { n: 2n } } }, /planned extraBody\.logit_bias\.n is a BigInt/],
    ];
    for (const [plan, words] of cases) {
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "big" },
          messages: QUESTION,
          tools: [ADD_TOOL],
          dispatch: () => 0,
          beforeStep: () => plan as StepPlan,
        })
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error), String(words)).toBe(true);
      const cause = (error as AgentLoopError).cause;
      expect(LoopOptionError.isInstance(cause), String(words)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-option", option: "beforeStep" });
      expect((error as Error).message).toMatch(words);
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("tells a port from the AI SDK that prepareStep's model and providerOptions are the plan's model and extraBody", async () => {
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: "http://127.0.0.1:9/v1", model: "big" },
        messages: QUESTION,
        prepareStep: () => ({ model: "small" }),
      } as never)
      .catch((e: unknown) => e);
    expect(LoopOptionError.isInstance((error as AgentLoopError).cause)).toBe(true);
    expect((error as Error).message).toMatch(
      /"prepareStep" \(beforeStep returns each step's plan \(\{ messages, toolChoice, tools, stop, model, extraBody \}\): its model is plan \{ model \}, its providerOptions plan \{ extraBody \}, both for that step only\)/,
    );
  });

  it("refuses a stop planned beside a model or extraBody, sending nothing more", async () => {
    server = await startServer({ replies: () => addCall("c1") });
    for (const beside of [{ model: "small" }, { extraBody: { top_k: 2 } }]) {
      const before = server.chatRequests.length;
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "big" },
          messages: QUESTION,
          tools: [ADD_TOOL],
          dispatch: () => 3,
          beforeStep: (_messages, step) => (step === 2 ? { stop: true, ...beside } : undefined),
        })
        .catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/planned a stop together with .*a model or extraBody/);
      // Only the first step's request went out.
      expect(server.chatRequests.length - before).toBe(1);
    }
  });
});
