// Review r92d: what the model of the web server's HTTP API (server-model.test.ts) found, each
// minimised to the requests that show it, over real loopback HTTP to the testkit's endpoint.
import { type RecordedRequest, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebServer } from "./server.js";

/** The number of messages a chat request carries. */
const messagesOf = (request: RecordedRequest) => (request.body as { messages: unknown[] }).messages.length;

describe("a prompt posted while the web server closes (r92d)", () => {
  let endpoint: TestServer;
  beforeAll(async () => {
    // A model that asks for a tool twice before it answers: a run of three requests.
    endpoint = await startServer({
      models: [{ id: "m", context_length: 8192 }],
      replies: (request) =>
        messagesOf(request) < 6
          ? { toolCalls: [{ name: "calculator", arguments: '{"expression":"1+1"}' }], chunkDelayMs: 20 }
          : { content: "two" },
    });
  });
  afterAll(() => endpoint.close());

  it("is refused (503), not started as a run that goes on calling the endpoint after close()", async () => {
    const web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "m", contextLength: 8192 } });
    const before = endpoint.chatRequests.length;
    const closing = web.close();
    // Sent as close() begins: it waits for the runs' last events before it stops listening.
    const res = await fetch(new URL("api/runs", web.url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "what is 1 + 1?" }),
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: "the playground is closing: the prompt was not started" });
    await closing;
    // Before: 201, and the run went on after close() resolved — three requests to the endpoint (its
    // tools run too) from a playground that had closed.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(endpoint.chatRequests.length - before).toBe(0);
  }, 20_000);
});
