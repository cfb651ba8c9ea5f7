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

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * The endpoint's first reply is the refusal `message`, read through a real client as a host would
 * hold it (an `APIError`); the turn under test is then sent to the same endpoint, whose next reply
 * never comes before the stop, and the one after answers.
 */
async function endpointAfterRefusal(message: string, param: string): Promise<[TestServer, unknown]> {
  const refusal = { error: { message, type: "invalid_request_error", param } };
  server = await startServer({
    replies: [
      { type: "error", status: 400, body: refusal },
      { content: "late", firstByteDelayMs: 60_000 },
      { content: "Hello." },
    ],
  });
  const refused = await getClient({ baseUrl: server.baseUrl })
    .chat.completions.create({ model: "other", messages: [{ role: "user", content: "hi" }] })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(refused).toBeInstanceOf(OpenAI.APIError);
  return [server, refused];
}

const TEMPERATURE_REFUSAL =
  "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.";

const messages = [{ role: "user", content: "Say hello." }];

describe("a turn stopped mid-request with a reason that is not its server's answer", () => {
  const same = (refusal: unknown) => refusal;
  it.each([
    ["another request's temperature refusal", TEMPERATURE_REFUSAL, "temperature", same],
    [
      "another request's refusal of stream_options",
      "Unrecognized request argument supplied: stream_options",
      "stream_options",
      same,
    ],
    ["a string", TEMPERATURE_REFUSAL, "temperature", () => "the user left"],
  ])(
    "stops with nothing latched when the reason is %s: the next turn is sent as the first was",
    async (_, message, param, reasonFrom) => {
      const [server, refusal] = await endpointAfterRefusal(message, param);
      const store = createCapabilityStore();
      const supports = store.capabilitiesFor(server.baseUrl);
      const client = getClient({ baseUrl: server.baseUrl });
      const config: ModelParams = { model: "m", temperature: 0.7 };
      const build = (s: typeof supports, model: Parameters<typeof buildBody>[2]) =>
        buildBody(config, s, model, messages);
      const notices: string[] = [];
      const controller = new AbortController();
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
      while (server.chatRequests.length === 1 && !settled) await new Promise((r) => setTimeout(r, 5));
      controller.abort(reasonFrom(refusal));
      expect(await outcome).toBe("stopped");
      // One request, no re-send without a field, no notice of a refusal the server never made.
      expect(server.chatRequests).toHaveLength(2);
      expect(notices).toEqual([]);
      const turn = await runTurn(client, supports, build, {
        model: "m",
        maxRetries: 0,
        onNotice: (m) => notices.push(m),
      });
      expect(turn.content).toBe("Hello.");
      const sent = server.chatRequests.slice(1).map((r) => r.body as Record<string, unknown>);
      expect(sent.map((b) => b.temperature)).toEqual([0.7, 0.7]);
      expect(sent.map((b) => "stream_options" in b)).toEqual([true, true]);
      expect(notices).toEqual([]);
    },
  );
});
