import { getClient } from "@loopwright/client";
import {
  buildBody,
  ContextOverflow,
  createCapabilityStore,
  type ModelCapabilities,
  type ModelParams,
  modelCapabilitiesFor,
} from "@loopwright/negotiate";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { runTurn } from "./run-turn.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const messages = [{ role: "user", content: "Say hello." }];

describe("runTurn", () => {
  it("waits for a llama.cpp server still loading the model, with one notice and no retry spent", async () => {
    server = await startServer({
      personality: { name: "llamacpp", loadingMs: 1500 },
      replies: [{ content: "Hello." }],
    });
    const store = createCapabilityStore();
    const config: ModelParams = { model: "any" };
    const notices: string[] = [];
    const turn = await runTurn(
      getClient({ baseUrl: server.baseUrl }),
      store.capabilitiesFor(server.baseUrl),
      (supports, model) => buildBody(config, supports, model, messages),
      { maxRetries: 0, loadingPollMs: 50, onNotice: (m) => notices.push(m) },
    );
    expect(turn.content).toBe("Hello.");
    expect(server.chatRequests.length).toBeGreaterThan(2);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/loading the model/);
  });

  it("gives up on a loading server after loadingTimeoutMs with the server's own error", async () => {
    server = await startServer({ personality: { name: "llamacpp", loadingMs: 60_000 } });
    const store = createCapabilityStore();
    const error = await runTurn(
      getClient({ baseUrl: server.baseUrl }),
      store.capabilitiesFor(server.baseUrl),
      (supports, model) => buildBody({ model: "any" }, supports, model, messages),
      { loadingTimeoutMs: 150, loadingPollMs: 40 },
    ).catch((e: unknown) => e);
    expect((error as { status?: number }).status).toBe(503);
    expect(String((error as Error).message)).toMatch(/Loading model/);
  });

  it("answers llama.cpp's context overflow with a ContextOverflow in the server's words", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 64 },
      replies: [{ content: "never" }],
    });
    const store = createCapabilityStore();
    const long = [{ role: "user", content: "word ".repeat(400) }];
    const error = await runTurn(
      getClient({ baseUrl: server.baseUrl }),
      store.capabilitiesFor(server.baseUrl),
      (supports, model) => buildBody({ model: "any" }, supports, model, long),
    ).catch((e: unknown) => e);
    expect(ContextOverflow.isInstance(error)).toBe(true);
    expect((error as ContextOverflow).serverMessage).toMatch(/context/i);
    expect((error as Error).cause).toBeDefined();
    expect(server.chatRequests).toHaveLength(1);
  });

  it("answers old llama.cpp's overflow on an `error:` line with a ContextOverflow, not an empty answer", async () => {
    // Builds before ggml-org/llama.cpp#16109 sent a mid-stream error as `error: {…}`; it read as a
    // turn with nothing in it, which the loop took as the model's (empty) answer.
    const message =
      "the request exceeds the available context size. try increasing the context size or enable context shift";
    server = await startServer({
      replies: [
        {
          type: "raw",
          chunks: [
            'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}\n\n',
            `error: ${JSON.stringify({ code: 400, message, type: "invalid_request_error" })}\n\n`,
            "data: [DONE]\n\n",
          ],
        },
      ],
    });
    const store = createCapabilityStore();
    const error = await runTurn(
      getClient({ baseUrl: server.baseUrl }),
      store.capabilitiesFor(server.baseUrl),
      (supports, model) => buildBody({ model: "any" }, supports, model, messages),
    ).catch((e: unknown) => e);
    expect(ContextOverflow.isInstance(error)).toBe(true);
    expect((error as ContextOverflow).serverMessage).toBe(message);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("counts the reply ceiling in the size guard, as the endpoint would", async () => {
    server = await startServer({ replies: [{ content: "fits" }] });
    const store = createCapabilityStore();
    const client = getClient({ baseUrl: server.baseUrl });
    const supports = store.capabilitiesFor(server.baseUrl);
    const build = (maxTokens: number) => () =>
      buildBody({ model: "m", maxTokens }, supports, undefined, messages);
    await expect(runTurn(client, supports, build(1000), { contextLimit: 1000 })).rejects.toThrow(
      /does not fit the model's context window/,
    );
    expect(server.chatRequests).toHaveLength(0);
    const turn = await runTurn(client, supports, build(100), { contextLimit: 1000 });
    expect(turn.content).toBe("fits");
  });
});

describe("runTurn's size guard", () => {
  it("sizes the body the model's latches shape, the same one the first attempt sends", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl);
    modelCapabilitiesFor(supports, "gpt-5").legacyTokenLimit = false;
    const seen: Array<ModelCapabilities | undefined> = [];
    await runTurn(
      getClient({ baseUrl: server.baseUrl }),
      supports,
      (supports, model) => {
        seen.push(model);
        return buildBody({ model: "gpt-5", maxTokens: 50 }, supports, model, messages);
      },
      { model: "gpt-5", contextLimit: 10_000 },
    );
    expect(seen).toHaveLength(2);
    expect(seen.every((model) => model?.legacyTokenLimit === false)).toBe(true);
    expect(server.chatRequests[0]?.body).toMatchObject({ max_completion_tokens: 50 });
  });
});
