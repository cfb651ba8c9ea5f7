/**
 * Round 88: cases the latching model (latching-model.test.ts) found, pinned one by one.
 */
import { streamTurn } from "@loopwright/stream";
import { readFixture, recordedError, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { STRICT_LOOKUP_TOOLS, tenantOf, transcriptWithLongId } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody } from "./request-body.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const refused = (status: number, body: unknown) => ({ type: "error" as const, status, body });
/** OpenAI's "Unrecognized request argument supplied: X", recorded for reasoning_effort, for field X. */
const unrecognized = (field: string) =>
  refused(
    400,
    JSON.parse(
      readFixture("errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json").replace(
        "reasoning_effort",
        field,
      ),
    ),
  );

const TOOLS = STRICT_LOOKUP_TOOLS;
const TRANSCRIPT = transcriptWithLongId();

describe("a request refused once for each of twelve things", () => {
  it("is answered by a thirteenth send, with every refusal latched", async () => {
    // One refusal per latch, each in a recorded wording: the endpoint's two, then the model's.
    // Before: the default maxAttempts of 12 was reached at the twelfth refusal, which went to the
    // caller as a 400 ("Unrecognized request argument supplied: top_k") and was not latched,
    // although negotiate answers it and the next request did.
    const extra = {
      parallel_tool_calls: false,
      chat_template_kwargs: { enable_thinking: false },
      top_k: 20,
      seed: 7,
    };
    server = await startServer({
      replies: [
        recordedError(400, "openai/stream-options-only-when-stream-enabled.json"),
        recordedError(400, "openai/strict-schema-root-additionalproperties-chat.json"),
        recordedError(400, "openai/max-tokens-unsupported-use-max-completion-tokens.json"),
        recordedError(400, "openai/temperature-0-unsupported-value.json"),
        recordedError(400, "moonshot/kimi-code-reasoning-effort-none-unsupported.json"),
        refused(404, readFixture("errors/openrouter/404-no-endpoints-support-tool-choice.message.txt")),
        recordedError(400, "mistral/400-tool-call-id-must-be-nine-alphanumerics.json"),
        unrecognized("parallel_tool_calls"),
        unrecognized("chat_template_kwargs"),
        unrecognized("seed"),
        unrecognized("verbosity"),
        unrecognized("top_k"),
        { content: "item 7 is a lamp." },
      ],
    });
    const { store, supports, client } = tenantOf(server);
    const config = {
      model: "m",
      maxTokens: 256,
      temperature: 0,
      reasoningEffort: "none",
      extraBody: { ...extra, verbosity: "low" },
    };
    const turn = await negotiate(
      supports,
      (supports, produced, model) =>
        streamTurn(client, buildBody(config, supports, model, TRANSCRIPT, TOOLS, { toolChoice: "auto" }), {
          produced,
        }),
      { model: "m", droppable: Object.keys(config.extraBody) },
    );
    expect(turn.content).toBe("item 7 is a lamp.");
    const bodies = server.chatRequests.map((r) => r.body as Record<string, unknown>);
    expect(bodies).toHaveLength(13);
    const last = bodies.at(-1) ?? {};
    expect(Object.keys(last).sort()).toEqual([
      "max_completion_tokens",
      "messages",
      "model",
      "reasoning_effort",
      "stream",
      "tools",
    ]);
    expect(last.reasoning_effort).toBe("minimal");
    const model = store.modelCapabilitiesFor(supports, "m");
    expect([...model.droppedFields].sort()).toEqual([
      "chat_template_kwargs",
      "parallel_tool_calls",
      "seed",
      "top_k",
      "verbosity",
    ]);
    expect(model.anyToolCallIds).toBe(false);
  });

  it("still stops at an explicit maxAttempts", async () => {
    server = await startServer({ replies: [unrecognized("a"), unrecognized("b"), { content: "fine" }] });
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "sk-test", maxRetries: 0 });
    const config = { model: "m", extraBody: { a: 1, b: 2 } };
    const sent = negotiate(
      supports,
      (supports, produced, model) =>
        streamTurn(client, buildBody(config, supports, model, [{ role: "user", content: "hi" }]), {
          produced,
        }),
      { model: "m", droppable: ["a", "b"], maxAttempts: 2 },
    );
    await expect(sent).rejects.toThrow(/Unrecognized request argument supplied: b/);
    expect(server.chatRequests).toHaveLength(2);
  });
});

describe("two requests at once, refused for tool-call ids whatever the ids", () => {
  it("take the latch back once: the second does not latch it again for a body with short ids", async () => {
    // A server that answers every request holding a tool call with Mistral's tool-call-id refusal,
    // short ids or not (what the refusal really objects to is elsewhere). One request alone latches
    // the ids short, draws the same refusal with short ids and takes the latch back: two sends.
    // Two at once: both long-id bodies are refused; the first latches, the second re-sends short
    // because the first latched (documented). The first takes the latch back; then the second's
    // short-id body is refused. Before: the second latched anyToolCallIds off again for a body
    // that already had short ids, sent a third time, and took it back again — five requests and
    // four notices where two and two per request alone would do.
    let arrived = 0;
    let bothArrived: () => void = () => {};
    const barrier = new Promise<void>((resolve) => {
      bothArrived = resolve;
    });
    let tookBack: () => void = () => {};
    const takenBack = new Promise<void>((resolve) => {
      tookBack = resolve;
    });
    const refusal = recordedError(400, "mistral/400-tool-call-id-must-be-nine-alphanumerics.json");
    server = await startServer({
      replies: async (request) => {
        arrived++;
        const n = arrived;
        if (n === 2) bothArrived();
        // Both first bodies are refused only once both have arrived; the fourth body (the second
        // request's short-id one) only once the first request has taken the latch back.
        if (n <= 2) await barrier;
        if (n === 4) await takenBack;
        const messages = (request.body as { messages: { tool_calls?: unknown[] }[] }).messages;
        return messages.some((m) => m.tool_calls) ? refusal : { content: "fine" };
      },
    });
    const { store, supports, client } = tenantOf(server);
    const notices: string[] = [];
    const onNotice = (message: string) => {
      notices.push(message);
      if (/were not at fault/.test(message)) tookBack();
    };
    const one = () =>
      negotiate(
        supports,
        (supports, produced, model) =>
          streamTurn(client, buildBody({ model: "mistral-small" }, supports, model, TRANSCRIPT), {
            produced,
          }),
        { model: "mistral-small", onNotice },
      );
    const results = await Promise.allSettled([one(), one()]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    const ids = server.chatRequests.map(
      (r) => (r.body as { messages: { tool_calls?: { id: string }[] }[] }).messages[1]?.tool_calls?.[0]?.id,
    );
    expect(ids.map((id) => id?.length)).toEqual([53, 53, 9, 9]);
    expect(notices.filter((n) => /refused a tool-call id/.test(n))).toHaveLength(1);
    expect(notices.filter((n) => /were not at fault/.test(n))).toHaveLength(1);
    expect(store.modelCapabilitiesFor(supports, "mistral-small").anyToolCallIds).toBe(true);
  });
});

describe("a ceiling given in extraBody, to a model that spells it max_completion_tokens", () => {
  it("is sent as max_completion_tokens once the model asked for that spelling", async () => {
    // Before: the latch changed the config's own ceiling only; extraBody's max_tokens went out
    // again, drew the same refusal, and every request to the model failed with "Unsupported
    // parameter: 'max_tokens' … Use 'max_completion_tokens' instead."
    const refusal = recordedError(400, "openai/max-tokens-unsupported-use-max-completion-tokens.json");
    server = await startServer({
      replies: (request) => ("max_tokens" in (request.body as object) ? refusal : { content: "fine" }),
    });
    const { store, supports, client } = tenantOf(server);
    const config = { model: "gpt-5", extraBody: { max_tokens: 512 } };
    const one = () =>
      negotiate(
        supports,
        (supports, produced, model) =>
          streamTurn(client, buildBody(config, supports, model, [{ role: "user", content: "hi" }]), {
            produced,
          }),
        { model: config.model },
      );
    await expect(one()).resolves.toMatchObject({ content: "fine" });
    await expect(one()).resolves.toMatchObject({ content: "fine" });
    const ceilings = server.chatRequests.map((r) => {
      const body = r.body as Record<string, unknown>;
      return [body.max_tokens, body.max_completion_tokens];
    });
    expect(ceilings).toEqual([
      [512, undefined],
      [undefined, 512],
      [undefined, 512],
    ]);
    expect(store.modelCapabilitiesFor(supports, "gpt-5").legacyTokenLimit).toBe(false);
  });
});

describe("an effort or a response_format given in extraBody, to a model that refused it", () => {
  /** One request to `server` for `config`, its content or the refusal's message. */
  const ask = (
    on: ReturnType<typeof tenantOf>,
    config: { model: string; extraBody: Record<string, unknown> },
  ) =>
    negotiate(
      on.supports,
      (supports, produced, model) =>
        streamTurn(on.client, buildBody(config, supports, model, [{ role: "user", content: "hi" }]), {
          produced,
        }),
      { model: config.model, droppable: Object.keys(config.extraBody) },
    ).then(
      (turn) => turn.content,
      (error: unknown) => `refused: ${String(error)}`,
    );

  it("climbs an extraBody reasoning_effort the model refused, as it climbs the config's", async () => {
    // Before: refusedEfforts took "none", but extraBody's "none" went out again and drew the same
    // refusal: every request to the model failed ("does not support 'none' with this model").
    const kimi = recordedError(400, "moonshot/kimi-code-reasoning-effort-none-unsupported.json");
    server = await startServer({
      replies: (request) =>
        (request.body as Record<string, unknown>).reasoning_effort === "none" ? kimi : { content: "fine" },
    });
    const on = tenantOf(server);
    const config = { model: "kimi-for-coding", extraBody: { reasoning_effort: "none" } };
    expect(await ask(on, config)).toBe("fine");
    expect(await ask(on, config)).toBe("fine");
    expect(server.chatRequests.map((r) => (r.body as Record<string, unknown>).reasoning_effort)).toEqual([
      "none",
      "minimal",
      "minimal",
    ]);
  });

  it("leaves out an extraBody response_format once the model refused it", async () => {
    // DeepSeek's words. Before: structuredOutput was latched off, but extraBody's response_format
    // went out again, and every request failed ("This response_format type is unavailable now"),
    // whether or not the caller listed it as droppable.
    const deepseek = {
      error: { message: "This response_format type is unavailable now", type: "invalid_request_error" },
    };
    server = await startServer({
      replies: (request) =>
        "response_format" in (request.body as object) ? refused(400, deepseek) : { content: "fine" },
    });
    const on = tenantOf(server);
    const format = { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" } } };
    const config = { model: "deepseek-chat", extraBody: { response_format: format } };
    expect(await ask(on, config)).toBe("fine");
    expect(await ask(on, config)).toBe("fine");
    expect(server.chatRequests.map((r) => "response_format" in (r.body as object))).toEqual([
      true,
      false,
      false,
    ]);
    expect(on.store.modelCapabilitiesFor(on.supports, "deepseek-chat").structuredOutput).toBe(false);
  });
});

describe("tool_choice refused as a field the caller allowed dropping", () => {
  it("is sent no more, the request's own toolChoice included, as the notice says", async () => {
    // OpenAI's recorded unknown-argument sentence for tool_choice, on a server that takes tools
    // but not the field. The caller listed tool_choice as droppable (it also sets one in
    // extraBody). Before: droppedFields took it and the notice said "sending tool_choice no more",
    // but the step's own toolChoice went out again, drew the same refusal, and the request failed.
    server = await startServer({
      replies: (request) =>
        "tool_choice" in (request.body as object) ? unrecognized("tool_choice") : { content: "fine" },
    });
    const on = tenantOf(server);
    const config = { model: "m", extraBody: { tool_choice: "auto" } };
    const notices: string[] = [];
    const step = (toolChoice: "required" | "none") =>
      negotiate(
        on.supports,
        (supports, produced, model) =>
          streamTurn(
            on.client,
            buildBody(config, supports, model, [{ role: "user", content: "hi" }], TOOLS, { toolChoice }),
            { produced },
          ),
        { model: "m", droppable: Object.keys(config.extraBody), onNotice: (n) => notices.push(n) },
      );
    await expect(step("required")).resolves.toMatchObject({ content: "fine" });
    // "none" can only be kept without the field by sending no tools, as for the tool_choice latch.
    await expect(step("none")).resolves.toMatchObject({ content: "fine" });
    const sent = server.chatRequests.map((r) => {
      const body = r.body as Record<string, unknown>;
      return [body.tool_choice, Array.isArray(body.tools)];
    });
    expect(sent).toEqual([
      ["required", true],
      [undefined, true],
      [undefined, false],
    ]);
    expect(notices).toEqual([
      expect.stringMatching(/refused the field tool_choice; sending tool_choice no more/),
    ]);
  });
});
