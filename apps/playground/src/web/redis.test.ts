// Two web playgrounds on one real redis-server: a run started on A is followed over SSE on B, which
// did not start it — every event once, in seq order, to `done`.
import { createRedisBus } from "@loopwright/redis";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, type ExpectStatic, it, type TestContext } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../../../../packages/redis/test/redis-server.js";
import { type CutProxy, startCutProxy } from "./cut-proxy.js";
import { startWebServer, type WebServer } from "./server.js";
import { connectSharedRuns, SHARED_RUNS_DEADLINE_MS } from "./shared-runs.js";

interface Sse {
  seq: number;
  kind: string;
}

/** Reads an SSE response to its end (the server ends it after `done`). */
async function readAll(url: string): Promise<{ status: number; events: Sse[]; ids: string[] }> {
  const res = await fetch(url);
  if (!res.body || res.status !== 200) return { status: res.status, events: [], ids: [] };
  const text = await res.text();
  const events: Sse[] = [];
  const ids: string[] = [];
  for (const frame of text.split("\n\n")) {
    const id = /^id: (.+)$/m.exec(frame)?.[1];
    const data = /^data: (.*)$/m.exec(frame)?.[1];
    if (id && data) {
      ids.push(id);
      events.push(JSON.parse(data) as Sse);
    }
  }
  return { status: res.status, events, ids };
}

const newClient = (url: string) => createClient({ url });
type RedisClient = ReturnType<typeof newClient>;

/** Runs `body` with a client connected to the Redis at `url`, destroyed after. */
async function withClient<T>(url: string, body: (client: RedisClient) => Promise<T>): Promise<T> {
  const client = newClient(url);
  await client.connect();
  try {
    return await body(client);
  } finally {
    client.destroy();
  }
}

/** Makes the redis-server ask for `password` from now on. */
async function requirePassword(server: RedisServer, password: string): Promise<void> {
  const client = createClient({ url: server.url });
  await client.connect();
  await client.configSet("requirepass", password);
  await client.quit();
}

/** A JSON API call to `web`, given at most 10 s to answer: its status, body, and how long it took. */
async function callApi(web: WebServer, path: string, init: RequestInit = {}) {
  const began = Date.now();
  const res = await fetch(new URL(path, web.url), {
    ...init,
    headers: { "content-type": "application/json" },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, ms: Date.now() - began };
}

if (!HAS_REDIS) console.warn(`playground --redis tests skipped: ${SKIP_MESSAGE}`);

// Each describe below has its own redis-server (or one per test), and its tests mostly wait (grace
// periods, a paused Redis, reconnects): the describes run side by side, and within each the tests
// that share nothing mutable run side by side too. Tests use their context's `expect`.

describe.skipIf(!HAS_REDIS).concurrent("two web playgrounds on one Redis", () => {
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

  // These two run one after the other: the second sets the Redis's `latest`, which the first reads.
  it.sequential("B shows a run started on A live: every event once, in seq order, ending with done", async ({
    expect,
  }) => {
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
    // Each id is the seq with the token of the emitter whose run B read (one run: one token).
    const token = onB.ids[0]?.split(":")[1];
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(onB.ids).toEqual(seqs.map((seq) => `${seq}:${token}`));
    expect(onB.events.at(-1)?.kind).toBe("done");
    expect(onB.events.filter((e) => e.kind === "tool-result").length).toBe(2);
    // What B served is what A served, event for event.
    expect(onB.events).toEqual(onA.events);

    // A reconnect to B after Last-Event-ID-style ?after= gets only the rest.
    const rest = await readAll(new URL(`api/runs/${id}/events?after=3`, b.url).href);
    expect(rest.events.map((e) => e.seq)).toEqual(seqs.slice(3));
    // So does one after the id B sent (the browser's own reconnect sends it as Last-Event-ID).
    const resumed = await fetch(new URL(`api/runs/${id}/events`, b.url), {
      headers: { "last-event-id": onB.ids[2] as string },
    });
    expect(resumed.status).toBe(200);
    expect((await resumed.text()).match(/^id: .+$/gm)).toEqual(onB.ids.slice(3).map((x) => `id: ${x}`));
    // An id that is not one is refused, saying what an id is.
    const bad = await fetch(new URL(`api/runs/${id}/events?after=${encodeURIComponent("3:no such")}`, b.url));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/"3:no such" is not one/);

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

  it.sequential("reads past run records another process wrote malformed: no such run, never a 400 quoting them", async ({
    expect,
  }) => {
    await withClient(redis.url, async (raw) => {
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
    });
  });
});

// Each test reads its own run id on the one playground and Redis.
describe.skipIf(!HAS_REDIS).concurrent("a followed run whose host died part-way", () => {
  let redis: RedisServer;
  let web: WebServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
    // A page reading another instance's unwritten run from its start waits 3 s for its first event.
    web = await startWebServer({ redis: redis.url, unwrittenGraceMs: 3000 });
  }, 30_000);
  afterAll(async () => {
    await web?.close();
    await redis?.kill();
  });

  /**
   * Another playground (its bus on the default prefix, its unended runs kept `retainMs`) ran `id`,
   * one output event per text, then died without `done`; its record says the run has not ended.
   */
  const deadRun = async (id: string, texts: string[], retainMs = 1500) => {
    const dead = await createRedisBus({
      url: redis.url,
      settings: { retainUnendedMs: retainMs },
      onError: () => {},
    });
    for (const text of texts) dead.emit(id, { kind: "output", text });
    await dead.flushed();
    await dead.close();
    const shared = await connectSharedRuns(redis.url);
    await shared.put({ id, prompt: "q", ended: false });
    await shared.close();
  };
  /** A {@link deadRun} of `count` events whose stream has expired since. */
  const expiredRun = async (id: string, count: number) => {
    await deadRun(
      id,
      Array.from({ length: count }, (_, i) => `e${i}`),
    );
    await new Promise((resolve) => setTimeout(resolve, 2500));
  };

  /** The SSE body of the run's events (asked with `headers`), or a note that it never ended. */
  const eventsOf = async (id: string, headers: Record<string, string>, path = "events") => {
    const res = await fetch(new URL(`api/runs/${id}/${path}`, web.url), {
      headers,
      signal: AbortSignal.timeout(12_000),
    });
    const body = await res.text().catch(() => "(no end: the stream stayed open until the test gave up)");
    const frames = body.split("\n\n").filter((frame) => frame.includes("data: "));
    return {
      status: res.status,
      body,
      frames,
      events: frames.map((frame) => JSON.parse(/^data: (.*)$/m.exec(frame)?.[1] ?? "null")),
    };
  };

  /**
   * The run's events as a page asks for them (`headers`): a stream that ends (200) holding one
   * event, a notice at `seq` of no dropped events with these `fields`. Answers its frames.
   */
  const onlyNotice = async (
    expect: ExpectStatic,
    id: string,
    headers: Record<string, string>,
    seq: number,
    fields: Record<string, unknown> = {},
  ) => {
    const { status, body, frames, events } = await eventsOf(id, headers);
    expect(status).toBe(200);
    expect(body).not.toContain("(no end");
    expect(events).toEqual([expect.objectContaining({ kind: "notice", seq, dropped: 0, ...fields })]);
    return frames;
  };

  it("a page resuming a dead run whose stream had already expired (record: not ended) is sent the notice at its Last-Event-ID, and the stream ends", async ({
    expect,
  }) => {
    await expiredRun("expired-before", 2);
    // The shared record still names the run, not ended; Redis holds nothing of it.
    const state = (await (await fetch(new URL("api/state?run=expired-before", web.url))).json()) as {
      run?: { ended: boolean };
    };
    expect(state.run?.ended).toBe(false);
    const started = Date.now();
    // Before, the watcher found no stream, read nothing and waited for ever: the page's stream never ended.
    const frames = await onlyNotice(expect, "expired-before", { "last-event-id": "2" }, 2, {
      // Missing when the page came back: whether the run ended cannot be told, so it is not said.
      text: expect.stringMatching(
        /gone from Redis \(expired or removed\) and whether it ended cannot be told/,
      ),
    });
    expect(frames[0]).toMatch(/^id: 2$/m);
    // The grace (3 s here) first: the stream of a live run lost to a Redis restart comes back with
    // its next write.
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(3000);
    expect(took).toBeLessThan(10_000);
  }, 20_000);

  it("a page loading a dead run from its start (no Last-Event-ID) is sent the notice at seq 0 once the grace has passed", async ({
    expect,
  }) => {
    await expiredRun("expired-fresh", 1);
    const started = Date.now();
    await onlyNotice(expect, "expired-fresh", {}, 0);
    // Not before the grace: a run recorded a moment ago may not have written its first event yet.
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
  }, 20_000);

  it("refuses an unwrittenGraceMs that is no number of ms, naming it, before starting anything", async ({
    expect,
  }) => {
    await expect(startWebServer({ redis: redis.url, unwrittenGraceMs: -1 })).rejects.toThrow(
      /`unwrittenGraceMs` must be a number of ms, 0 or more, and was given -1\./,
    );
    await expect(startWebServer({ unwrittenGraceMs: Number.NaN })).rejects.toThrow(/was given NaN\./);
  });

  it("a reader resuming with Last-Event-ID at the run's last event is sent the watcher's 'stream is gone' notice, at that seq", async ({
    expect,
  }) => {
    // Another playground ran "crashed": two events, then it died without `done`. Its stream is kept
    // 4 s, so that the reader below resumes before it expires even on a loaded machine (resuming
    // after would be the other case: whether the run ended cannot be told).
    await deadRun("crashed", ["one", "two"], 4000);

    // The page had seqs 1-2; the browser's reconnect sends Last-Event-ID: 2.
    // Before, the watcher could not tell the stream was gone (it read no entry), and the server
    // skipped every event at or below Last-Event-ID: nothing was sent, and the stream never ended.
    const frames = await onlyNotice(expect, "crashed", { "last-event-id": "2" }, 2, {
      text: expect.stringMatching(/gone from Redis \(expired\)/),
    });
    // Resumed at the stream's top, the watcher took the run there as read: the id names its emitter.
    expect(frames[0]).toMatch(/^id: 2:[A-Za-z0-9_-]+$/m);
  }, 20_000);
});

describe.skipIf(!HAS_REDIS).concurrent("--redis with a password in the URL", () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
    await requirePassword(redis, "pw-sekret-2468");
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

  it("never prints a password given in the URL's query (a wrong one: NOAUTH)", async ({ expect }) => {
    const message = await refusal(`${redis.url}/0?password=pw-sekret-2468`);
    expect(message).toMatch(/refused its first command/);
    expect(message).toContain(`${redis.url}/0`);
    expect(message).not.toContain("pw-sekret-2468");
    expect(message).not.toContain("?");
  });

  it("names `url` and says how to write a % that starts no escape, not a bare 'URI malformed'", async ({
    expect,
  }) => {
    const message = await refusal(`redis://:pw-sekret%zz68@127.0.0.1:${redis.port}/0`);
    expect(message).toMatch(/`url`.*%25/);
    expect(message).not.toContain("pw-sekret");
  });
});

// Each test has its own Redis and playground (they pause or kill that Redis).
describe.skipIf(!HAS_REDIS).concurrent("--redis with Redis gone mid-session", () => {
  const PASSWORD = "pw-gone-1357";
  /**
   * The test's own redis-server asking for {@link PASSWORD}, and a playground on it with the password
   * in its URL, both stopped once the test finishes.
   */
  const session = async (onTestFinished: TestContext["onTestFinished"]) => {
    let redis: RedisServer | undefined;
    let web: WebServer | undefined;
    onTestFinished(async () => {
      try {
        redis?.resume();
      } catch {
        // Killed: there is nothing to resume.
      }
      await web?.close();
      await redis?.kill().catch(() => {
        // Killed by the test and not started again (its `exitCode` stays null after a signal).
      });
    });
    const server = await RedisServer.start();
    redis = server;
    await requirePassword(server, PASSWORD);
    const url = `redis://:${PASSWORD}@127.0.0.1:${server.port}/0`;
    const playground = await startWebServer({ redis: url });
    web = playground;
    /** An API call given at most 10 s to answer: the old server left POST /api/runs unanswered. */
    const call = (path: string, init: RequestInit = {}) => callApi(playground, path, init);
    const ask = (prompt: string) => call("api/runs", { method: "POST", body: JSON.stringify({ prompt }) });
    const shown = () => `Redis at redis://127.0.0.1:${server.port}/0 is not reachable: `;
    return { redis: server, web: playground, url, call, ask, shown };
  };

  it("paused (SIGSTOP): the prompt is refused with 503 naming Redis, and nothing runs once Redis answers again", async ({
    expect,
    onTestFinished,
  }) => {
    const { redis, web, url, call, ask, shown } = await session(onTestFinished);
    redis.pause();
    const refused = await ask("what is 2+2");
    expect(refused.status).toBe(503);
    expect(refused.ms).toBeLessThan(SHARED_RUNS_DEADLINE_MS + 2000);
    expect(refused.body.error).toBe(`${shown()}no answer within ${SHARED_RUNS_DEADLINE_MS / 1000} s`);
    // The state says what failed too, never a bare "Error"; the password is never shown.
    const state = await call("api/state");
    expect(state.status).toBe(503);
    expect(String(state.body.error)).toContain(shown());
    expect(JSON.stringify([refused.body, state.body])).not.toContain(PASSWORD);
    // The refused run was forgotten: the next prompt is refused for Redis again, not 409 "in progress".
    expect((await ask("what is 3+3")).status).toBe(503);

    redis.resume();
    // Redis now carries out what reached it meanwhile; the late records are taken back.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = await call("api/state");
    expect(after.status).toBe(200);
    expect(after.body.run).toBeUndefined();
    await withClient(url, async (client) => {
      const keys = await client.keys("loopwright:playground:run:*");
      expect(keys).toEqual([]);
      // No run before them: the pointer the late writes set is taken back too, not left naming none.
      expect(await client.get("loopwright:playground:latest")).toBeNull();
    });

    // And the next prompt runs as usual, alone.
    const started = await ask("what is 5+5");
    expect(started.status).toBe(201);
    const events = await (await fetch(new URL(`api/runs/${String(started.body.id)}/events`, web.url))).text();
    expect(events).toContain('"kind":"done"');
    expect((await call("api/state")).body.run).toMatchObject({ prompt: "what is 5+5", ended: true });
  }, 40_000);

  it("killed: the prompt is refused with 503 and the reason, and does not run when Redis is back", async ({
    expect,
    onTestFinished,
  }) => {
    const { redis, call, ask, shown } = await session(onTestFinished);
    await redis.kill();
    const refused = await ask("what is 7*6");
    expect(refused.status).toBe(503);
    expect(refused.ms).toBeLessThan(SHARED_RUNS_DEADLINE_MS + 2000);
    expect(String(refused.body.error)).toMatch(new RegExp(`^${shown().replaceAll(".", "\\.")}\\w`));
    const state = await call("api/state");
    expect(state.status).toBe(503);
    expect(String(state.body.error)).toContain(shown());
    expect(JSON.stringify([refused.body, state.body])).not.toContain(PASSWORD);

    // A fresh, empty redis-server on the same port with the password again: the playground's
    // clients reconnect by themselves, and the refused prompt is not run then.
    await redis.start();
    await requirePassword(redis, PASSWORD);
    let after = await call("api/state");
    for (let i = 0; i < 20 && after.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      after = await call("api/state");
    }
    expect(after.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await call("api/state")).body.run).toBeUndefined();
    const started = await ask("what is 5+5");
    expect(started.status).toBe(201);
  }, 40_000);
});

// Each test has its own Redis, playgrounds and link (it pauses that Redis or cuts that link).
describe
  .skipIf(!HAS_REDIS)
  .concurrent(
    "prompts refused on one playground while Redis is paused, with another on the same Redis",
    () => {
      /**
       * What the test starts through the answer — its redis-server, its cut-able link to it, its
       * playgrounds — all stopped once it finishes.
       */
      const resources = (onTestFinished: TestContext["onTestFinished"]) => {
        let redis: RedisServer | undefined;
        const webs: WebServer[] = [];
        let proxy: CutProxy | undefined;
        onTestFinished(async () => {
          try {
            redis?.resume();
          } catch {
            // Not paused.
          }
          for (const web of webs.splice(0)) await web.close();
          await proxy?.close();
          await redis?.kill();
        });
        const startRedis = async () => {
          redis = await RedisServer.start();
          return redis;
        };
        /** A playground on the Redis at `url`. */
        const startWeb = async (url: string) => {
          const web = await startWebServer({ redis: url });
          webs.push(web);
          return web;
        };
        return {
          startRedis,
          startWeb,
          /**
           * A redis-server, a link to it the test can fail, and playground `a` reaching Redis through
           * that link (the test reads Redis directly, at `redis.url`).
           */
          startProxied: async () => {
            const started = await startRedis();
            proxy = await startCutProxy(started.port);
            const a = await startWeb(`redis://127.0.0.1:${proxy.port}/0`);
            return { redis: started, proxy, a };
          },
        };
      };

      const call = callApi;
      const ask = (web: WebServer, prompt: string) =>
        call(web, "api/runs", { method: "POST", body: JSON.stringify({ prompt }) });
      /** Prompts `web` (accepted: 201) and reads the run's events to their end; answers its record. */
      const runToEnd = async (expect: ExpectStatic, web: WebServer, prompt: string) => {
        const started = await ask(web, prompt);
        expect(started.status).toBe(201);
        await (await fetch(new URL(`api/runs/${String(started.body.id)}/events`, web.url))).text();
        return { id: started.body.id, prompt, ended: true };
      };
      /**
       * Waits (at most 10 s) until Redis holds no more than `count` run records, the late ones taken
       * back, then 300 ms more for anything after them; the assertions after it decide.
       */
      const untilRunRecords = async (client: RedisClient, count: number) => {
        const end = Date.now() + 10_000;
        while (Date.now() < end && (await client.keys("loopwright:playground:run:*")).length > count)
          await new Promise((resolve) => setTimeout(resolve, 50));
        await new Promise((resolve) => setTimeout(resolve, 300));
      };

      /** Redis holds the record of run `id` alone, and `latest` names it, with an expiry. */
      const expectOnlyRecord = async (expect: ExpectStatic, client: RedisClient, id: unknown) => {
        expect(await client.keys("loopwright:playground:run:*")).toEqual([
          `loopwright:playground:run:${String(id)}`,
        ]);
        expect(await client.get("loopwright:playground:latest")).toBe(id);
        expect(await client.ttl("loopwright:playground:latest")).toBeGreaterThan(0);
      };

      it("every playground still shows the run before them once Redis answers again (the late `latest` is taken back)", async ({
        expect,
        onTestFinished,
      }) => {
        const { startRedis, startWeb } = resources(onTestFinished);
        const redis = await startRedis();
        const url = `${redis.url}/0`;
        const a = await startWeb(url);
        const b = await startWeb(url);
        const r0 = await runToEnd(expect, a, "R0: what is 2+2");
        expect((await call(b, "api/state")).body.run).toEqual(r0);

        redis.pause();
        // Two prompts refused one after the other: each late write finds the one before it as `latest`.
        expect((await ask(a, "R1: refused")).status).toBe(503);
        expect((await ask(a, "R2: refused too")).status).toBe(503);
        redis.resume();

        await withClient(url, async (client) => {
          await untilRunRecords(client, 1);
          await expectOnlyRecord(expect, client, r0.id);
        });
        expect((await call(a, "api/state")).body.run).toEqual(r0);
        expect((await call(b, "api/state")).body.run).toEqual(r0);
        // A playground opened afterwards finds it too (it has no run of its own to fall back on).
        const c = await startWeb(url);
        expect((await call(c, "api/state")).body.run).toEqual(r0);
      }, 40_000);

      it("the run before is `latest` again after prompts whose answers were lost with the connection (their writes landed)", async ({
        expect,
        onTestFinished,
      }) => {
        const { startProxied, startWeb } = resources(onTestFinished);
        const { redis, proxy, a } = await startProxied();
        const r0 = await runToEnd(expect, a, "R0: what is 2+2");

        await withClient(`${redis.url}/0`, async (client) => {
          // Redis carries out both writes; their answers (with the run each replaced) never come back.
          proxy.loseAnswers();
          const r1 = await ask(a, "R1: refused");
          const r2 = await ask(a, "R2: refused too");
          expect([r1.status, r2.status]).toEqual([503, 503]);
          const late = await client.get("loopwright:playground:latest");
          expect(late).not.toBe(r0.id); // the late `latest`: R2's
          expect(await client.keys("loopwright:playground:run:*")).toHaveLength(3);
          // Then the link fails: the writes fail unanswered, and the client reconnects by itself.
          proxy.cut();

          await untilRunRecords(client, 1);
          // Was deleted: a take-back that did not know what the write replaced left no `latest` at all.
          await expectOnlyRecord(expect, client, r0.id);
        });
        expect((await call(a, "api/state")).body.run).toEqual(r0);
        const b = await startWeb(`${redis.url}/0`);
        expect((await call(b, "api/state")).body.run).toEqual(r0);
      }, 40_000);

      it("a run another playground started meanwhile stays `latest` (the take-back never replaces a run really accepted)", async ({
        expect,
        onTestFinished,
      }) => {
        const { startProxied, startWeb } = resources(onTestFinished);
        const { redis, proxy, a } = await startProxied();
        const b = await startWeb(`${redis.url}/0`);
        await runToEnd(expect, a, "R0: what is 2+2");

        proxy.loseAnswers();
        expect((await ask(a, "R1: refused")).status).toBe(503);
        // B reaches Redis directly: its prompt is accepted, between A's two refused ones.
        const r3 = await runToEnd(expect, b, "R3: accepted on B");
        expect((await ask(a, "R2: refused too")).status).toBe(503);
        proxy.cut();

        await withClient(`${redis.url}/0`, async (client) => {
          await untilRunRecords(client, 2);
          expect(await client.keys("loopwright:playground:run:*")).toHaveLength(2);
          expect(await client.get("loopwright:playground:latest")).toBe(r3.id);
        });
        expect((await call(a, "api/state")).body.run).toEqual(r3);
        expect((await call(b, "api/state")).body.run).toEqual(r3);
      }, 40_000);
    },
  );
