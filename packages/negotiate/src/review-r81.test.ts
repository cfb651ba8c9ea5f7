import { keepErrorBodies } from "@loopwright/client";
import { readFixture, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rejection, streamText } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { ContextOverflow } from "./errors.js";
import { negotiate } from "./negotiate.js";
import { buildBody } from "./request-body.js";
import { isOverflow } from "./retry.js";

// Review r81: what r79/r80 left in @loopwright/negotiate, then a hostile review, over the testkit.

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const client = (): OpenAI =>
  new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0, fetch: keepErrorBodies() });
const MODEL = "mistral-small-latest";
const idRefusal = {
  type: "error",
  status: 400,
  body: JSON.parse(readFixture("errors/mistral/400-tool-call-id-must-be-nine-alphanumerics.json")),
} as const;

describe("R81-6a: a tool-call-id refusal the latch cannot answer does not leave the latch set", () => {
  it("a request with no tool calls (a side task's) refused for ids twice: the latch is taken back, with a notice", async () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl, "k");
    const openai = client();
    const notices: string[] = [];
    server.enqueue(idRefusal, idRefusal, { type: "turn", content: "fine" });
    const messages = [{ role: "user", content: "Summarise this." }];
    const failure = await rejection(
      negotiate(
        supports,
        (s, produced, caps) => streamText(openai, buildBody({ model: MODEL }, s, caps, messages), produced),
        {
          model: MODEL,
          onNotice: (t) => notices.push(t),
        },
      ),
    );
    expect(String(failure)).toMatch(/must be a-z, A-Z, 0-9/);
    expect(server.chatRequests.length).toBe(2);
    expect(store.modelCapabilitiesFor(supports, MODEL).anyToolCallIds).toBe(true);
    expect(notices).toEqual([
      expect.stringMatching(/refused a tool-call id/),
      expect.stringMatching(/ids were not at fault/),
    ]);
  });

  it("a turn whose ids were at fault keeps the latch (the re-sent request is answered)", async () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl, "k");
    const openai = client();
    server.enqueue(idRefusal, { type: "turn", content: "fine" });
    const messages = [
      { role: "user", content: "add" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_0", type: "function", function: { name: "add", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_0", content: "3" },
    ];
    await expect(
      negotiate(
        supports,
        (s, produced, caps) => streamText(openai, buildBody({ model: MODEL }, s, caps, messages), produced),
        {
          model: MODEL,
        },
      ),
    ).resolves.toBe("fine");
    expect(store.modelCapabilitiesFor(supports, MODEL).anyToolCallIds).toBe(false);
  });
});

describe("R81-6b: a ContextOverflow quotes the server's words on one line, a few hundred characters at most", () => {
  const huge = `This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.\n<html><body>${"<p>filler\n</p>".repeat(55_000)}</body></html>`;

  it("a 0.8 MB error body over HTTP: the message and serverMessage are one line under 500 characters; cause keeps it all", async () => {
    server.enqueue({
      type: "error",
      status: 400,
      body: { error: { message: huge, type: "invalid_request_error" } },
    });
    const supports = createCapabilityStore().capabilitiesFor(server.baseUrl, "k");
    const failure = await rejection(
      negotiate(supports, (s, produced, caps) =>
        streamText(
          client(),
          buildBody({ model: "gpt" }, s, caps, [{ role: "user", content: "hi" }]),
          produced,
        ),
      ),
    );
    expect(huge.length).toBeGreaterThan(700_000);
    expect(isOverflow(failure)).toBe(true);
    const overflow = ContextOverflow.fromError(failure);
    for (const text of [overflow.message, overflow.serverMessage]) {
      expect(text.length).toBeLessThan(500);
      expect(text).not.toMatch(/[\r\n]/);
    }
    expect(overflow.serverMessage).toMatch(/^This model's maximum context length is 8192 tokens\. .*…$/);
    expect(overflow.window).toBe(8192);
    expect(overflow.promptTokens).toBe(9000);
    expect(overflow.cause).toBe(failure);
  });

  it("a short message is kept as it was; a cut never leaves half a character", () => {
    const short = new ContextOverflow(
      "the request (1104 tokens) exceeds the available context size (1024 tokens), try increasing it",
    );
    expect(short.serverMessage).toBe(
      "the request (1104 tokens) exceeds the available context size (1024 tokens), try increasing it",
    );
    expect(short.message).toContain("try increasing it. Shorten");
    const emoji = ContextOverflow.fromError({
      status: 400,
      error: { message: `maximum context length is 10 tokens ${"😀".repeat(400)}` },
    });
    expect(emoji.serverMessage.isWellFormed()).toBe(true);
    expect(emoji.message.isWellFormed()).toBe(true);
    expect(emoji.serverMessage.length).toBeLessThanOrEqual(301);
  });
});

describe("R81-7: buildBody refuses an extraBody value JSON cannot send as given, naming where it is", () => {
  const send = (extraBody: Record<string, unknown>) => {
    const supports = createCapabilityStore().capabilitiesFor(server.baseUrl, "k");
    const openai = client();
    return negotiate(supports, (s, produced, caps) =>
      streamText(
        openai,
        buildBody({ model: "m", extraBody }, s, caps, [{ role: "user", content: "hi" }]),
        produced,
      ),
    );
  };

  it("NaN or Infinity (sent as null: the knob silently back at the server's default): RangeError, nothing sent", async () => {
    server.enqueue({ type: "turn", content: "fine" }, { type: "turn", content: "fine" });
    for (const [extraBody, path] of [
      [{ top_p: Number.NaN }, "config.extraBody.top_p is NaN"],
      [
        { chat_template_kwargs: { budget: Number.POSITIVE_INFINITY } },
        "config.extraBody.chat_template_kwargs.budget is Infinity",
      ],
      [{ logit_bias: { "50256": -Infinity } }, 'config.extraBody.logit_bias["50256"] is -Infinity'],
    ] as const) {
      const failure = await rejection(send(extraBody));
      expect(failure).toBeInstanceOf(RangeError);
      expect(String(failure)).toContain(path);
    }
    expect(server.chatRequests.length).toBe(0);
  });

  it("a BigInt or a cycle (the client threw deep inside, naming nothing): TypeError naming the place, nothing sent", async () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    for (const [extraBody, path] of [
      [{ seed: 42n }, "config.extraBody.seed is a BigInt"],
      [{ stop: ["a", { x: [1n] }] }, "config.extraBody.stop[1].x[0] is a BigInt"],
      [{ metadata: cycle }, "config.extraBody.metadata.self is a cycle"],
    ] as const) {
      const failure = await rejection(send(extraBody));
      expect(failure).toBeInstanceOf(TypeError);
      expect(String(failure)).toContain(path);
    }
    expect(server.chatRequests.length).toBe(0);
  });

  it("an object shared by two fields, a Date, and a deep nest go as before", async () => {
    server.enqueue({ type: "turn", content: "fine" });
    const shared = { k: 1 };
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const body = buildBody(
      { model: "m", extraBody: { a: shared, b: shared, at: new Date(0), deep } },
      createCapabilityStore().capabilitiesFor(server.baseUrl, "k"),
      undefined,
      [{ role: "user", content: "hi" }],
    );
    expect(body.a).toBe(shared);
    await expect(send({ a: shared, b: [shared], at: new Date(0) })).resolves.toBe("fine");
    expect((server.chatRequests[0]?.body as Record<string, unknown> | undefined)?.b).toEqual([{ k: 1 }]);
  });
});
