/**
 * r102: a stop is a stop, whatever the host stopped with. A host running its turn beside other work
 * on one AbortController may stop it with the error that ended something else
 * (`controller.abort(error)`): another turn's refusal, a side task's error, any value at all. The
 * turn handed that reason to negotiate as if the server had answered it, so a reason that reads as
 * "temperature: only the default" latched the endpoint's model to no temperature for the life of its
 * capabilities, with a notice saying the model had refused it, and the next run was sent without
 * the temperature the host asked for.
 */
import { getClient } from "@loopwright/client";
import { buildBody, createCapabilityStore, type ModelParams } from "@loopwright/negotiate";
import { startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { runTurn } from "./run-turn.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function serve(...args: Parameters<typeof startServer>): Promise<TestServer> {
  const server = await startServer(...args);
  servers.push(server);
  return server;
}

/** The error a real OpenAI client throws for a request another server refused with `message`. */
async function refusalFrom(message: string, param: string): Promise<unknown> {
  const other = await serve({
    replies: [
      { type: "error", status: 400, body: { error: { message, type: "invalid_request_error", param } } },
    ],
  });
  const client = new OpenAI({ baseURL: other.baseUrl, apiKey: "none", maxRetries: 0 });
  const refused = await client.chat.completions
    .create({ model: "m", messages: [{ role: "user", content: "hi" }], temperature: 0.7 })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(refused).toBeInstanceOf(OpenAI.APIError);
  return refused;
}

const TEMPERATURE_REFUSAL =
  "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.";

const messages = [{ role: "user", content: "Say hello." }];

describe("a turn stopped mid-request with a reason that is not its server's answer", () => {
  it.each([
    ["another request's temperature refusal", () => refusalFrom(TEMPERATURE_REFUSAL, "temperature")],
    [
      "another request's refusal of stream_options",
      () => refusalFrom("Unrecognized request argument supplied: stream_options", "stream_options"),
    ],
    ["a string", async () => "the user left"],
  ])(
    "stops with nothing latched when the reason is %s: the next turn is sent as the first was",
    async (_, reason) => {
      const server = await serve({
        replies: [{ content: "late", firstByteDelayMs: 60_000 }, { content: "Hello." }],
      });
      const store = createCapabilityStore();
      const supports = store.capabilitiesFor(server.baseUrl);
      const client = getClient({ baseUrl: server.baseUrl });
      const config: ModelParams = { model: "m", temperature: 0.7 };
      const build = (s: typeof supports, model: Parameters<typeof buildBody>[2]) =>
        buildBody(config, s, model, messages);
      const notices: string[] = [];
      const controller = new AbortController();
      const why = await reason();
      const outcome = runTurn(client, supports, build, {
        model: "m",
        signal: controller.signal,
        maxRetries: 0,
        onNotice: (m) => notices.push(m),
      }).then(
        () => "answered",
        () => "stopped",
      );
      let settled = false;
      void outcome.then(() => {
        settled = true;
      });
      while (server.chatRequests.length === 0 && !settled) await new Promise((r) => setTimeout(r, 5));
      controller.abort(why);
      expect(await outcome).toBe("stopped");
      // One request, no re-send without a field, no notice of a refusal the server never made.
      expect(server.chatRequests).toHaveLength(1);
      expect(notices).toEqual([]);
      const turn = await runTurn(client, supports, build, {
        model: "m",
        maxRetries: 0,
        onNotice: (m) => notices.push(m),
      });
      expect(turn.content).toBe("Hello.");
      const sent = server.chatRequests.map((r) => r.body as Record<string, unknown>);
      expect(sent.map((b) => b.temperature)).toEqual([0.7, 0.7]);
      expect(sent.map((b) => "stream_options" in b)).toEqual([true, true]);
      expect(notices).toEqual([]);
    },
  );
});
