// Review r92b of r92d: with `--redis`, a run is asked for when its prompt is posted, not when Redis
// has taken its record. Over real loopback HTTP to two testkit endpoints and a real redis-server.
import { type RecordedRequest, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer } from "../../../../packages/redis/test/redis-server.js";
import { startWebServer, WEB_SYSTEM, type WebServer } from "./server.js";

/** Posts JSON to one of `web`'s routes, as the page does. */
const poster = (web: WebServer) => (path: string, body: unknown) =>
  fetch(new URL(path, web.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

/** What a chat request asked: its model and its system prompt. */
const asked = (request: RecordedRequest) => {
  const body = request.body as { model: string; messages: { role: string; content: unknown }[] };
  return { model: body.model, system: body.messages.find((m) => m.role === "system")?.content };
};

describe.skipIf(!HAS_REDIS)("a spec loaded while Redis is slow to take a run (r92b)", () => {
  let redis: RedisServer;
  let first: TestServer;
  let second: TestServer;
  let web: WebServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
    first = await startServer({
      models: [{ id: "m", context_length: 8192 }],
      replies: () => ({ content: "one" }),
    });
    second = await startServer({
      models: [{ id: "m2", context_length: 8192 }],
      replies: () => ({ content: "two" }),
    });
    web = await startWebServer({
      endpoint: { baseUrl: first.baseUrl, model: "m", contextLength: 8192 },
      redis: redis.url,
    });
  });
  afterAll(async () => {
    redis?.resume();
    await web?.close();
    await first?.close();
    await second?.close();
    await redis?.kill();
  });

  it("leaves the run on the model, endpoint and system prompt it was posted with", async () => {
    const post = poster(web);
    // Redis answers nothing: the run's record waits to be taken (up to 3 s, then 503).
    redis.pause();
    const prompt = post("api/runs", { prompt: "hello" });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const spec = await post("api/spec", {
      text: JSON.stringify({
        spec: "loopwright.agent/1",
        model: { name: "m2", endpoint: { baseUrl: second.baseUrl } },
        prompt: [{ id: "p", text: "The spec's own system prompt." }],
      }),
    });
    expect(spec.status).toBe(200);
    redis.resume();
    const started = await prompt;
    expect(started.status).toBe(201);
    const { id } = (await started.json()) as { id: string };
    // The run's events to their end (the server ends the stream after `done`).
    expect(await (await fetch(new URL(`api/runs/${id}/events`, web.url))).text()).toContain('"kind":"done"');
    // Before: the run went to the spec's endpoint and model, with its system prompt — a prompt
    // posted to one endpoint sent to another, because the spec came in while Redis was slow.
    expect(second.chatRequests.map(asked)).toEqual([]);
    expect(first.chatRequests.map(asked)).toEqual([{ model: "m", system: WEB_SYSTEM }]);

    // The spec holds for the next run.
    const next = await post("api/runs", { prompt: "again" });
    expect(next.status).toBe(201);
    const { id: nextId } = (await next.json()) as { id: string };
    await (await fetch(new URL(`api/runs/${nextId}/events`, web.url))).text();
    expect(second.chatRequests.map(asked)).toEqual([
      { model: "m2", system: "The spec's own system prompt." },
    ]);
  }, 20_000);
});
