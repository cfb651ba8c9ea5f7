// The web playground's HTTP API over real loopback HTTP: the SSE stream replayed after Last-Event-ID,
// one run at a time, and specs checked with their warnings.
import { request } from "node:http";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebServer, type WebServer } from "./server.js";

interface Sse {
  seq: number;
  kind: string;
}

/** Reads an SSE response until `stopAfter` events (or its end), then closes it. */
async function readEvents(url: string, headers: Record<string, string> = {}, stopAfter = Infinity) {
  const res = await fetch(url, { headers });
  const reader = res.body!.getReader();
  const events: Sse[] = [];
  const ids: number[] = [];
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      const id = /^id: (\d+)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (id && data) {
        ids.push(Number(id));
        events.push(JSON.parse(data) as Sse);
      }
      if (events.length >= stopAfter) {
        await reader.cancel();
        return { status: res.status, events, ids };
      }
    }
  }
  return { status: res.status, events, ids };
}

describe("the web playground's API", () => {
  let server: WebServer;
  beforeAll(async () => {
    server = await startWebServer({ hangTool: true });
  });
  afterAll(() => server.close());

  const post = (path: string, body: unknown) =>
    fetch(new URL(path, server.url), {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });

  it("replays a run after Last-Event-ID with no gap and no duplicate, and refuses a second run meanwhile", async () => {
    const started = await post("api/runs", { prompt: "What time is it, and what is 17 * 23?" });
    expect(started.status).toBe(201);
    const { id } = (await started.json()) as { id: string };
    const events = new URL(`api/runs/${id}/events`, server.url).href;

    const first = await readEvents(events, {}, 5);
    expect(first.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(first.ids).toEqual([1, 2, 3, 4, 5]);
    const busy = await post("api/runs", { prompt: "hello" });
    expect(busy.status).toBe(409);

    const rest = await readEvents(events, { "last-event-id": "5" });
    const seqs = rest.events.map((e) => e.seq);
    expect(seqs[0]).toBe(6);
    expect(seqs).toEqual(seqs.map((_, i) => 6 + i));
    expect(rest.events.at(-1)?.kind).toBe("done");
    const whole = [...first.events, ...rest.events];
    expect(whole.filter((e) => e.kind === "tool-result")).toHaveLength(2);
    expect(whole.filter((e) => e.kind === "usage")).toHaveLength(2);

    const again = await readEvents(`${events}?after=${seqs.at(-2)}`);
    expect(again.events.map((e) => e.kind)).toEqual(["done"]);
  }, 30_000);

  it("stops a hung tool: the run ends with the call answered and a notice", async () => {
    const { id } = (await (await post("api/runs", { prompt: "call hang_forever" })).json()) as { id: string };
    const events = new URL(`api/runs/${id}/events`, server.url).href;
    await readEvents(events, {}, 3); // turn, usage, tool-call: the tool is running
    expect((await post(`api/runs/${id}/stop`, {})).status).toBe(202);
    const all = (await readEvents(events)).events as (Sse & { content?: string; text?: string })[];
    const result = all.find((e) => e.kind === "tool-result");
    expect(result?.content).toMatch(/stopped/i);
    expect(all.at(-2)).toMatchObject({ kind: "notice", text: "Stopped: every tool call answered." });
    expect(all.at(-1)?.kind).toBe("done");
  }, 30_000);

  it("reads the file a prompt names beside a version number in the simulator, not the version", async () => {
    const { id } = (await (
      await post("api/runs", { prompt: "After upgrading to v1.2.3, read CHANGELOG.md" })
    ).json()) as { id: string };
    const { events } = await readEvents(new URL(`api/runs/${id}/events`, server.url).href);
    const calls = (events as (Sse & { name?: string; args?: string })[]).filter(
      (e) => e.kind === "tool-call",
    );
    expect(calls.map((c) => [c.name, JSON.parse(c.args ?? "null")])).toEqual([
      ["read_file", { path: "CHANGELOG.md" }],
    ]);
    expect(events.at(-1)?.kind).toBe("done");
  }, 30_000);

  it("answers a spec that is not JSON with an error and one with a bad field with its path", async () => {
    const notJson = (await (await post("api/spec", { text: "{ nope" })).json()) as { errors: string[] };
    expect(notJson.errors[0]).toMatch(/^not JSON: /);
    const bad = (await (
      await post("api/spec", {
        text: JSON.stringify({ spec: "loopwright.agent/1", limits: { maxToolIterations: -2 } }),
      })
    ).json()) as { warnings: { path: string }[]; applied?: { maxToolIterations: number } };
    expect(bad.warnings.map((w) => w.path)).toEqual(["limits.maxToolIterations"]);
    expect(bad.applied?.maxToolIterations).toBe(8);
  });

  it("refuses a spec nested too deep by saying so, not with a stack overflow", async () => {
    const deep = `{"spec":"loopwright.agent/1","model":${'{"a":'.repeat(20_000)}1${"}".repeat(20_000)}}`;
    for (const text of ["[".repeat(10_000) + "]".repeat(10_000), deep]) {
      const res = await post("api/spec", { text });
      expect(res.status).toBe(200);
      const report = (await res.json()) as { errors: string[]; applied?: unknown };
      expect(report.errors).toEqual([
        "too deeply nested: the document goes more than 64 levels deep, and an agent spec is a few levels deep.",
      ]);
      expect(report.applied).toBeUndefined();
    }
  });

  it("refuses a post that is not JSON (415) and a Host that is not this machine's (403)", async () => {
    const plain = await fetch(new URL("api/runs", server.url), { method: "POST", body: '{"prompt":"hi"}' });
    expect(plain.status).toBe(415);
    const { port } = new URL(server.url);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      request(
        { host: "127.0.0.1", port, path: "/api/state", headers: { host: `evil.example:${port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      )
        .on("error", reject)
        .end();
    });
    expect(status).toBe(403);
  });

  it("answers unknown runs and empty prompts with 404 and 400", async () => {
    expect((await fetch(new URL("api/runs/nope/events", server.url))).status).toBe(404);
    expect((await post("api/runs", { prompt: "  " })).status).toBe(400);
    expect((await post("api/runs", "not an object")).status).toBe(400);
  });

  it("runs with a loaded spec's system prompt, model and step limit", async () => {
    const systemTokens = async (prompt: string) => {
      const { id } = (await (await post("api/runs", { prompt })).json()) as { id: string };
      const { events } = await readEvents(new URL(`api/runs/${id}/events`, server.url).href);
      const usage = events.find((e) => e.kind === "usage") as unknown as {
        turn: { context: { system: number } };
      };
      return usage.turn.context.system;
    };
    const before = await systemTokens("hello");
    const role = "You are a very careful checker. ".repeat(40);
    const report = (await (
      await post("api/spec", {
        text: JSON.stringify({
          spec: "loopwright.agent/1",
          model: { name: "loopwright-simulator" },
          prompt: [{ id: "role", text: role }],
          limits: { maxToolIterations: 3 },
        }),
      })
    ).json()) as { applied?: { system: boolean; maxToolIterations: number } };
    expect(report.applied).toMatchObject({ system: true, maxToolIterations: 3 });
    const after = await systemTokens("hello");
    expect(after).toBeGreaterThan(before + 100);
  }, 30_000);
});

describe("where the web playground's runs go, as /api/state says", () => {
  let other: TestServer;
  beforeAll(async () => {
    other = await startServer({ scriptedModel: { chunkDelayMs: 0 } });
  });
  afterAll(() => other.close());

  it("names the endpoint a loaded spec sends the runs to, not the simulator it started with", async () => {
    const web = await startWebServer();
    try {
      const state = async () =>
        (await (await fetch(new URL("api/state", web.url))).json()) as { mode: string; baseUrl?: string };
      const load = (endpoint: Record<string, unknown> | undefined) =>
        fetch(new URL("api/spec", web.url), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            text: JSON.stringify({
              spec: "loopwright.agent/1",
              model: { name: "sim", ...(endpoint ? { endpoint } : {}) },
            }),
          }),
        });
      expect(await state()).toMatchObject({ mode: "simulator" });
      expect((await state()).baseUrl).toBeUndefined();

      expect((await load({ baseUrl: other.baseUrl })).status).toBe(200);
      const before = other.chatRequests.length;
      const { id } = (await (
        await fetch(new URL("api/runs", web.url), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt: "hello" }),
        })
      ).json()) as { id: string };
      expect(await (await fetch(new URL(`api/runs/${id}/events`, web.url))).text()).toContain(
        '"kind":"done"',
      );
      // The run went there, and the state says so.
      expect(other.chatRequests.length).toBeGreaterThan(before);
      expect(await state()).toMatchObject({ mode: "endpoint", baseUrl: other.baseUrl });

      // Written with a user, a password and a key in the query: refused, as the client would refuse
      // every run to it (r92d), and neither shown; the runs still go to the endpoint before.
      const written = new URL(other.baseUrl);
      written.username = "me";
      written.password = "sk-pass-in-spec-url-1";
      written.search = "?api-key=sk-query-in-spec-url-2";
      const refused = await load({ baseUrl: written.href });
      expect(refused.status).toBe(200);
      const report = await refused.text();
      expect(report).toContain("model.endpoint.baseUrl carries a user name or password");
      expect(report).not.toMatch(/sk-pass-in-spec-url-1|sk-query-in-spec-url-2/);
      const told = await state();
      expect(told).toMatchObject({ mode: "endpoint", baseUrl: other.baseUrl });
      expect(JSON.stringify(told)).not.toMatch(/sk-pass-in-spec-url-1|sk-query-in-spec-url-2/);

      // A spec naming no endpoint: the runs go to the playground's own again, the simulator.
      expect((await load(undefined)).status).toBe(200);
      expect(await state()).toMatchObject({ mode: "simulator" });
    } finally {
      await web.close();
    }
  }, 30_000);
});
