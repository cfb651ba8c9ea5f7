// Review r92d: what the model of the web server's HTTP API (server-model.test.ts) found, each
// minimised to the requests that show it, over real loopback HTTP to the testkit's endpoint.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type RecordedRequest, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebServer, WEB_SYSTEM, type WebServer } from "./server.js";

/** Posts JSON to one of `web`'s routes, as the page does. */
const poster = (web: WebServer) => (path: string, body: unknown) =>
  fetch(new URL(path, web.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

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
    const web = await startWebServer({
      endpoint: { baseUrl: endpoint.baseUrl, model: "m", contextLength: 8192 },
    });
    const before = endpoint.chatRequests.length;
    const closing = web.close();
    // Sent as close() begins: it waits for the runs' last events before it stops listening.
    const res = await poster(web)("api/runs", { prompt: "what is 1 + 1?" });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: "the playground is closing: the prompt was not started" });
    await closing;
    // Before: 201, and the run went on after close() resolved — three requests to the endpoint (its
    // tools run too) from a playground that had closed.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(endpoint.chatRequests.length - before).toBe(0);
  }, 20_000);
});

describe("a spec loaded while a run looks up its endpoint's window (r92d)", () => {
  let endpoint: TestServer;
  let front: Server;
  let baseUrl: string;
  beforeAll(async () => {
    endpoint = await startServer({
      models: [{ id: "m", context_length: 8192 }],
      replies: () => ({ content: "hi" }),
    });
    // The endpoint behind a front that lists its models 400 ms late (a server loading its model):
    // the run is asked for, and waits for the listing, before it sends its first request.
    front = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (req.url?.includes("/models")) await new Promise((resolve) => setTimeout(resolve, 400));
      const answer = await fetch(endpoint.origin + (req.url ?? "/"), {
        method: req.method ?? "GET",
        headers: { "content-type": "application/json" },
        ...(req.method === "POST" ? { body: Buffer.concat(chunks) } : {}),
      });
      res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "text/plain" });
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await new Promise((resolve) => front.close(resolve));
    await endpoint.close();
  });

  it("leaves the run as it was asked for: its system prompt is not the new spec's, sent to the old model", async () => {
    const web = await startWebServer({ endpoint: { baseUrl, model: "m" } });
    try {
      const post = poster(web);
      const before = endpoint.chatRequests.length;
      const { id } = (await (await post("api/runs", { prompt: "hello" })).json()) as { id: string };
      const spec = {
        spec: "loopwright.agent/1",
        model: { name: "another-model" },
        prompt: [{ id: "role", text: "The spec's own system prompt, loaded after the run was asked for." }],
      };
      expect((await post("api/spec", { text: JSON.stringify(spec) })).status).toBe(200);
      expect(await (await fetch(new URL(`api/runs/${id}/events`, web.url))).text()).toContain(
        '"kind":"done"',
      );
      const sent = endpoint.chatRequests[before]!.body as {
        model: string;
        messages: { role: string; content: string }[];
      };
      // Before: model "m" with the spec's system prompt — a run of neither configuration.
      expect([sent.model, sent.messages[0]!.content]).toEqual(["m", WEB_SYSTEM]);
      // The next run has the spec whole.
      const next = (await (await post("api/runs", { prompt: "again" })).json()) as { id: string };
      await (await fetch(new URL(`api/runs/${next.id}/events`, web.url))).text();
      const again = endpoint.chatRequests.at(-1)!.body as { model: string; messages: { content: string }[] };
      expect([again.model, again.messages[0]!.content]).toEqual(["another-model", spec.prompt[0]!.text]);
    } finally {
      await web.close();
    }
  }, 20_000);
});

describe("a spec naming an endpoint URL the client refuses (r92d)", () => {
  let endpoint: TestServer;
  beforeAll(async () => {
    endpoint = await startServer({
      models: [{ id: "m", context_length: 8192 }],
      replies: () => ({ content: "hi" }),
    });
  });
  afterAll(() => endpoint.close());

  it("is refused with an error saying what the URL carries, not reported applied with every run failing", async () => {
    const web = await startWebServer({
      endpoint: { baseUrl: endpoint.baseUrl, model: "m", contextLength: 8192 },
    });
    try {
      const post = poster(web);
      const origin = `127.0.0.1:${endpoint.port}`;
      for (const [baseUrl, carries] of [
        [`http://me:pw-r92d-in-url@${origin}/v1`, "a user name or password (user:secret@host)"],
        [`http://${origin}/v1?api-version=2024-06-01`, "a query (?…)"],
        [`http://${origin}/v1#models`, "a fragment (#…)"],
      ] as const) {
        const res = await post("api/spec", {
          text: JSON.stringify({ spec: "loopwright.agent/1", model: { name: "m", endpoint: { baseUrl } } }),
        });
        const report = (await res.json()) as { errors: string[]; applied?: unknown };
        // Before: no error, `applied` naming the URL shown without what it carried, so the page had
        // nothing to say why every run then failed at once ("… carries a user name or password …").
        expect(report.errors).toEqual([
          `model.endpoint.baseUrl carries ${carries}, which the client refuses (a network error would print it): no run could use it. Give the URL without it; the playground sends an endpoint a spec names no key.`,
        ]);
        expect(report.applied).toBeUndefined();
        expect(JSON.stringify(report)).not.toContain("pw-r92d-in-url");
        // Nothing applied: the next run goes where the runs went, and is answered.
        const { id } = (await (await post("api/runs", { prompt: "hello" })).json()) as { id: string };
        const events = await (await fetch(new URL(`api/runs/${id}/events`, web.url))).text();
        expect(events).not.toContain('"kind":"error"');
        expect(events).toContain('"kind":"done"');
      }
    } finally {
      await web.close();
    }
  }, 20_000);
});

describe("close() while a state read's window lookup waits on the endpoint (r92d)", () => {
  it("ends the lookup: no request to the endpoint stays open after close()", async () => {
    // An endpoint whose model listing never answers (a server still loading its model).
    let open = 0;
    const listing = createServer((_req, res) => {
      open++;
      res.on("close", () => open--);
    });
    await new Promise<void>((resolve) => listing.listen(0, "127.0.0.1", resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(listing.address() as AddressInfo).port}/v1`;
      const web = await startWebServer({ endpoint: { baseUrl, model: "m" } });
      // The page's first load: answered without a window once its 2 s are up, the lookup going on.
      const state = (await (await fetch(new URL("api/state", web.url))).json()) as { contextLength: number };
      expect(state.contextLength).toBe(0);
      expect(open).toBe(1);
      await web.close();
      // Before: the listing request stayed open until the lookup's own 10 s bound, well past this.
      for (let look = 0; look < 40 && open > 0; look++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(open).toBe(0);
    } finally {
      listing.closeAllConnections();
      await new Promise((resolve) => listing.close(resolve));
    }
  }, 20_000);
});
