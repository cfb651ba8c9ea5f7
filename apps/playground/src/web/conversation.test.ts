// The web playground's conversation after a run that failed or was stopped, over real loopback HTTP
// to a testkit endpoint: the failed prompt is not joined onto the next one, a stopped answer's text
// is kept as what the user saw, a stop is told as the outcome "stopped", and "New conversation"
// (`POST /api/conversation/reset`) starts afresh.
import { request } from "node:http";
import { type RunEvent, runMetrics } from "@loopwright/events";
import { type ReplyFunction, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startWebServer, type WebServer } from "./server.js";

interface Message {
  role: string;
  content?: unknown;
}

/** The non-system messages of the endpoint's last chat request. */
function lastSent(endpoint: TestServer): Message[] {
  const body = endpoint.chatRequests.at(-1)!.body as { messages: Message[] };
  return body.messages.filter((m) => m.role !== "system");
}

const replies: ReplyFunction = (request) => {
  const body = request.body as { messages: Message[] };
  const last = body.messages.filter((m) => m.role === "user").at(-1)?.content;
  const text = typeof last === "string" ? last : "";
  if (text.includes("MIDERR"))
    return {
      content: "Partial text",
      chunkChars: 4,
      errorMidStream: { afterChunk: 2, error: { message: "boom" } },
    };
  if (text.includes("REFUSE"))
    return { type: "error", status: 400, body: { error: { message: "refused here" } } };
  if (text.includes("SLOWLY")) return { content: "Slow answer ".repeat(60), chunkChars: 4, chunkDelayMs: 40 };
  if (text.includes("SILENT")) return { content: "Never seen.", firstByteDelayMs: 30_000 };
  return { content: `An answer to ${text}.` };
};

describe("the web playground's conversation after a failed or stopped run", () => {
  let endpoint: TestServer;
  let web: WebServer;
  beforeAll(async () => {
    endpoint = await startServer({ replies });
  });
  // A playground of its own for each test: one conversation each.
  beforeEach(async () => {
    web = await startWebServer({ endpoint: { baseUrl: endpoint.baseUrl, model: "sim" } });
  });
  afterEach(() => web.close());
  afterAll(() => endpoint?.close());

  const post = (path: string, body: unknown) =>
    fetch(new URL(path, web.url), {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
  const ask = async (prompt: string): Promise<string> => {
    const started = await post("api/runs", { prompt });
    expect(started.status).toBe(201);
    return ((await started.json()) as { id: string }).id;
  };
  /** Every event of a run, read over SSE until its `done`. */
  const eventsOf = async (id: string): Promise<RunEvent[]> => {
    const text = await (await fetch(new URL(`api/runs/${id}/events`, web.url))).text();
    return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as RunEvent);
  };
  /** Reads the run's stream until `enough` says so, then lets go. */
  const watchUntil = async (id: string, enough: (events: RunEvent[]) => boolean): Promise<RunEvent[]> => {
    const res = await fetch(new URL(`api/runs/${id}/events`, web.url));
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error("the stream ended first");
      buffer += decoder.decode(value, { stream: true });
      const events = [...buffer.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as RunEvent);
      if (enough(events)) {
        await reader.cancel();
        return events;
      }
    }
  };
  const reset = async () => expect((await post("api/conversation/reset", {})).status).toBe(200);

  it("drops a prompt that failed mid-stream, so the next is sent alone (not joined onto it)", async () => {
    const failed = await eventsOf(await ask("MIDERR please"));
    expect(failed.find((e) => e.kind === "error")).toMatchObject({ message: expect.stringMatching(/boom/) });

    await eventsOf(await ask("what is 2+2"));
    expect(lastSent(endpoint)).toEqual([{ role: "user", content: "what is 2+2" }]);
    // A refused request (HTTP 400) likewise; the conversation before it stays.
    await eventsOf(await ask("REFUSE this"));
    await eventsOf(await ask("what is 3+3"));
    const sent = lastSent(endpoint);
    expect(sent.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "what is 2+2",
      "what is 3+3",
    ]);
    expect(JSON.stringify(sent)).not.toMatch(/MIDERR|REFUSE/);
    // The failed run said why and what became of its prompt.
    expect(failed.at(-2)).toMatchObject({
      kind: "notice",
      text: expect.stringMatching(/not kept.*send it again/),
    });
    expect(runMetrics(failed).outcome).toBe("failed");
  }, 30_000);

  it("keeps a stopped answer's streamed text as the assistant's turn, and says the run stopped", async () => {
    const id = await ask("SLOWLY essay");
    await watchUntil(id, (events) => events.filter((e) => e.kind === "output").length >= 3);
    expect((await post(`api/runs/${id}/stop`, {})).status).toBe(202);
    const events = await eventsOf(id);
    const shown = events.map((e) => (e.kind === "output" ? e.text : "")).join("");
    expect(shown.length).toBeGreaterThan(0);

    await eventsOf(await ask("what time is it"));
    expect(lastSent(endpoint)).toEqual([
      { role: "user", content: "SLOWLY essay" },
      { role: "assistant", content: shown },
      { role: "user", content: "what time is it" },
    ]);
    // The stop is in the events: its done is marked, so the metrics say "stopped" (not "completed").
    expect(events.at(-1)).toEqual({ kind: "done", stopped: true, seq: events.length });
    expect(events.find((e) => e.kind === "notice")).toMatchObject({
      text: expect.stringMatching(/answer so far is kept/),
    });
    expect(events.some((e) => e.kind === "error")).toBe(false);
    expect(runMetrics(events).outcome).toBe("stopped");
  }, 30_000);

  it("drops a prompt stopped before the model said anything", async () => {
    const before = endpoint.chatRequests.length;
    const id = await ask("SILENT one");
    while (endpoint.chatRequests.length === before) await new Promise((r) => setTimeout(r, 20));
    expect((await post(`api/runs/${id}/stop`, {})).status).toBe(202);
    const events = await eventsOf(id);
    await eventsOf(await ask("what is 5+5"));
    expect(lastSent(endpoint)).toEqual([{ role: "user", content: "what is 5+5" }]);
    expect(events.find((e) => e.kind === "notice")).toMatchObject({
      text: expect.stringMatching(/Stopped before the model answered.*not kept/),
    });
    expect(runMetrics(events).outcome).toBe("stopped");
  }, 30_000);

  it("starts a new conversation on POST /api/conversation/reset, refused while a run goes", async () => {
    await eventsOf(await ask("what is 6+6"));
    const id = await ask("SLOWLY again");
    await watchUntil(id, (events) => events.some((e) => e.kind === "output"));
    const busy = await post("api/conversation/reset", {});
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ error: expect.stringMatching(/run is in progress/), id });
    await post(`api/runs/${id}/stop`, {});
    await eventsOf(id);

    // The same checks as every post: a plain-text post or another Host is refused, nothing reset.
    const plain = await fetch(new URL("api/conversation/reset", web.url), {
      method: "POST",
      body: "{}",
      headers: { "content-type": "text/plain" },
    });
    expect(plain.status).toBe(415);
    const foreign = await new Promise<number>((resolve, reject) => {
      const url = new URL("api/conversation/reset", web.url);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { host: "evil.example", "content-type": "application/json" },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end("{}");
    });
    expect(foreign).toBe(403);
    await eventsOf(await ask("what is 7+7"));
    expect(lastSent(endpoint).filter((m) => m.role === "user")).toHaveLength(3);

    await reset();
    await eventsOf(await ask("what is 8+8"));
    expect(lastSent(endpoint)).toEqual([{ role: "user", content: "what is 8+8" }]);
  }, 30_000);
});
