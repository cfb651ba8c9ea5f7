// Two web playgrounds on one real redis-server: a run started on A is followed over SSE on B, which
// did not start it — every event once, in seq order, to `done`.
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../../../../packages/redis/test/redis-server.js";
import { startWebServer, type WebServer } from "./server.js";

interface Sse {
  seq: number;
  kind: string;
}

/** Reads an SSE response to its end (the server ends it after `done`). */
async function readAll(url: string): Promise<{ status: number; events: Sse[]; ids: number[] }> {
  const res = await fetch(url);
  if (!res.body || res.status !== 200) return { status: res.status, events: [], ids: [] };
  const text = await res.text();
  const events: Sse[] = [];
  const ids: number[] = [];
  for (const frame of text.split("\n\n")) {
    const id = /^id: (\d+)$/m.exec(frame)?.[1];
    const data = /^data: (.*)$/m.exec(frame)?.[1];
    if (id && data) {
      ids.push(Number(id));
      events.push(JSON.parse(data) as Sse);
    }
  }
  return { status: res.status, events, ids };
}

if (!HAS_REDIS) console.warn(`playground --redis tests skipped: ${SKIP_MESSAGE}`);

describe.skipIf(!HAS_REDIS)("two web playgrounds on one Redis", () => {
  let redis: RedisServer;
  let a: WebServer;
  let b: WebServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
    // A streams slowly, so B joins while the run is still going.
    a = await startWebServer({ redis: redis.url, chunkDelayMs: 40 });
    b = await startWebServer({ redis: redis.url });
  }, 30_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.kill();
  });

  it("B shows a run started on A live: every event once, in seq order, ending with done", async () => {
    const started = await fetch(new URL("api/runs", a.url), {
      method: "POST",
      body: JSON.stringify({ prompt: "What time is it, and what is 17 * 23?" }),
      headers: { "content-type": "application/json" },
    });
    expect(started.status).toBe(201);
    const { id } = (await started.json()) as { id: string };

    // B's page finds the run with no id given (the newest on the Redis), or by ?run=<id>.
    const state = (await (await fetch(new URL("api/state", b.url))).json()) as {
      run?: { id: string; prompt: string; ended: boolean };
    };
    expect(state.run?.id).toBe(id);
    expect(state.run?.ended).toBe(false); // still going when B picked it up
    expect(state.run?.prompt).toBe("What time is it, and what is 17 * 23?");
    const byId = (await (await fetch(new URL(`api/state?run=${id}`, b.url))).json()) as {
      run?: { id: string };
    };
    expect(byId.run?.id).toBe(id);

    const [onB, onA] = await Promise.all([
      readAll(new URL(`api/runs/${id}/events`, b.url).href),
      readAll(new URL(`api/runs/${id}/events`, a.url).href),
    ]);
    expect(onB.status).toBe(200);
    const seqs = onB.events.map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(onB.ids).toEqual(seqs);
    expect(onB.events.at(-1)?.kind).toBe("done");
    expect(onB.events.filter((e) => e.kind === "tool-result").length).toBe(2);
    // What B served is what A served, event for event.
    expect(onB.events).toEqual(onA.events);

    // A reconnect to B after Last-Event-ID-style ?after= gets only the rest.
    const rest = await readAll(new URL(`api/runs/${id}/events?after=3`, b.url).href);
    expect(rest.events.map((e) => e.seq)).toEqual(seqs.slice(3));

    // B cannot stop a run it is not running; it says so.
    const stop = await fetch(new URL(`api/runs/${id}/stop`, b.url), {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    expect(stop.status).toBe(409);
    const unknown = await fetch(new URL("api/runs/no-such-run/events", b.url));
    expect(unknown.status).toBe(404);
  }, 60_000);

  it("reads past run records another process wrote malformed: no such run, never a 400 quoting them", async () => {
    const raw = createClient({ url: redis.url });
    await raw.connect();
    try {
      const records = { garbled: "{not json", nothing: "null", numbered: '{"id":7,"prompt":[]}' };
      for (const [id, text] of Object.entries(records))
        await raw.set(`loopwright:playground:run:${id}`, text);
      await raw.set("loopwright:playground:latest", "garbled");
      const state = await fetch(new URL("api/state", b.url));
      expect(state.status).toBe(200);
      expect(((await state.json()) as { run?: unknown }).run).toBeUndefined();
      for (const id of Object.keys(records)) {
        const events = await fetch(new URL(`api/runs/${id}/events`, b.url));
        expect(events.status).toBe(404);
        expect(await events.text()).not.toContain("not json");
      }
    } finally {
      raw.destroy();
    }
  });
});

describe.skipIf(!HAS_REDIS)("--redis with a password in the URL", () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
    const client = createClient({ url: redis.url });
    await client.connect();
    await client.configSet("requirepass", "pw-sekret-2468");
    await client.quit();
  }, 30_000);
  afterAll(() => redis?.kill());

  const refusal = (url: string) =>
    startWebServer({ redis: url }).then(
      async (web) => {
        await web.close();
        throw new Error("the playground started");
      },
      (error: unknown) => String((error as Error).message),
    );

  it("never prints a password given in the URL's query (a wrong one: NOAUTH)", async () => {
    const message = await refusal(`${redis.url}/0?password=pw-sekret-2468`);
    expect(message).toMatch(/refused its first command/);
    expect(message).toContain(`${redis.url}/0`);
    expect(message).not.toContain("pw-sekret-2468");
    expect(message).not.toContain("?");
  });

  it("names `url` and says how to write a % that starts no escape, not a bare 'URI malformed'", async () => {
    const message = await refusal(`redis://:pw-sekret%zz68@127.0.0.1:${redis.port}/0`);
    expect(message).toMatch(/`url`.*%25/);
    expect(message).not.toContain("pw-sekret");
  });
});
