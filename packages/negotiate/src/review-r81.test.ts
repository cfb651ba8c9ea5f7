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
