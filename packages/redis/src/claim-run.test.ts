import { EventsError, type SequencedEvent } from "@loopwright/events";
import { AgentLoopError } from "@loopwright/loop";
import { startServer, type TestServer } from "@loopwright/testkit";
import { createClient } from "@redis/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { redisHost } from "../test/host.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, MAX_CLAIM_MS } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const texts = (events: SequencedEvent[]) =>
  events.map((event) => (event as { text?: string }).text ?? "").join("");

/** What a rejection carries: the loop's error, its cause the bus's `EventsError` naming the run id. */
function expectTaken(reason: unknown, runId: string): void {
  expect(reason).toBeInstanceOf(AgentLoopError);
  const cause = (reason as AgentLoopError).cause;
  expect(EventsError.isInstance(cause)).toBe(true);
  expect((cause as EventsError).code).toBe("invalid-run-id");
  expect((cause as EventsError).message).toContain(JSON.stringify(runId));
}

// Each host stands for a process of its own: its own Redis stores (its own bus, with its own
// emitter marks) and runtime, on one Redis and prefix, as two hosts of one fleet would be.
describe.skipIf(!HAS_REDIS)("two hosts starting runs under one runId", () => {
  let redis: RedisServer;
  const llms: TestServer[] = [];
  const closers: { close(): Promise<void> }[] = [];
  let prefixes = 0;

  const llm = async () => {
    const server = await startServer({ scriptedModel: { chunkChars: 4, chunkDelayMs: 10 } });
    llms.push(server);
    return server;
  };
  /** `count` hosts on one fresh prefix, each with the list of what its stores reported. */
  const hosts = async (count: number) => {
    const prefix = `claim${prefixes++}:`;
    return Promise.all(
      Array.from({ length: count }, async () => {
        const errors: unknown[] = [];
        const host = await redisHost({ url: redis.url, prefix, onError: (e) => errors.push(e) });
        closers.push(host);
        return { host, errors, prefix };
      }),
    );
  };
  const run = (
    host: Awaited<ReturnType<typeof redisHost>>,
    server: TestServer,
    runId: string,
    question: string,
  ) =>
    host.runAgentLoop({
      runId,
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: [{ role: "user", content: question }],
      dispatch: () => "ok",
    });

  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterEach(async () => {
    await Promise.all(llms.splice(0).map((server) => server.close()));
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c.close()));
    await redis.kill();
  });

  it("the second host's run is refused before any request, and nothing of it reaches the first's run", async () => {
    const [a, b] = await hosts(2);
    if (!a || !b) throw new Error("two hosts");
    const [llmA, llmB] = [await llm(), await llm()];
    const seen: string[] = [];
    const first = run(a.host, llmA, "run-1", "tenant A private question");
    // A's run is under way: its first events are in Redis.
    for (let i = 0; i < 200 && (await a.host.bus.readHistory("run-1")).length < 2; i++) await pause(10);
    expect((await a.host.bus.readHistory("run-1")).length).toBeGreaterThanOrEqual(2);

    const second = await run(b.host, llmB, "run-1", "tenant B question").then(
      () => "fulfilled",
      (reason: unknown) => reason,
    );
    expectTaken(second, "run-1");
    // Refused before anything was sent to B's endpoint or emitted on B's bus.
    expect(llmB.requests).toHaveLength(0);
    expect(b.host.bus.history("run-1")).toEqual([]);

    await first;
    await Promise.all([a.host.bus.flushed(), b.host.bus.flushed()]);
    // The stream holds A's run alone, whole, from seq 1 to its one done: no event of B's in it, and
    // B's host was told of nothing per event (its run never emitted).
    const stored = await b.host.bus.readHistory("run-1");
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect(stored.filter((e) => e.kind === "done")).toHaveLength(1);
    expect(texts(stored)).toContain("tenant A private question");
    expect(texts(stored)).not.toContain("tenant B");
    for (const e of stored) seen.push(e.kind);
    expect(seen.at(-1)).toBe("done");
    expect(b.errors).toEqual([]);
    expect(a.errors).toEqual([]);
  });

  it("of two hosts starting the same runId at once, exactly one runs; the other sends nothing", async () => {
    const [a, b] = await hosts(2);
    if (!a || !b) throw new Error("two hosts");
    const [llmA, llmB] = [await llm(), await llm()];
    const results = await Promise.allSettled([
      run(a.host, llmA, "same", "tenant A"),
      run(b.host, llmB, "same", "tenant B"),
    ]);
    const refused = results.filter((r) => r.status === "rejected");
    expect(refused).toHaveLength(1);
    expectTaken((refused[0] as PromiseRejectedResult).reason, "same");
    // The refused host's endpoint saw no request; the winner's saw its run.
    const loser = results[0]?.status === "rejected" ? llmA : llmB;
    const winner = loser === llmA ? llmB : llmA;
    expect(loser.requests).toHaveLength(0);
    expect(winner.requests.length).toBeGreaterThan(0);
    await Promise.all([a.host.bus.flushed(), b.host.bus.flushed()]);
    const stored = await a.host.bus.readHistory("same");
    expect(stored.filter((e) => e.kind === "done")).toHaveLength(1);
    expect(texts(stored)).toContain(loser === llmA ? "tenant B" : "tenant A");
    expect(texts(stored)).not.toContain(loser === llmA ? "tenant A" : "tenant B");
  });

  it("a runId used again after its run ended still runs, on another host and on the same one", async () => {
    const [a, b] = await hosts(2);
    if (!a || !b) throw new Error("two hosts");
    const server = await llm();
    await run(a.host, server, "nightly", "Monday");
    await a.host.bus.flushed();
    // On another host, once A's done is stored: started afresh from seq 1.
    await run(b.host, server, "nightly", "Tuesday");
    await b.host.bus.flushed();
    let stored = await a.host.bus.readHistory("nightly");
    expect(stored[0]?.seq).toBe(1);
    expect(texts(stored)).toContain("Tuesday");
    expect(texts(stored)).not.toContain("Monday");
    // On the same host, at once (its done maybe not written yet): the old run's end goes first.
    await run(b.host, server, "nightly", "Wednesday");
    await run(b.host, server, "nightly", "Thursday");
    await b.host.bus.flushed();
    stored = await a.host.bus.readHistory("nightly");
    expect(texts(stored)).toContain("Thursday");
    expect(texts(stored)).not.toContain("Wednesday");
    expect(stored.filter((e) => e.kind === "done")).toHaveLength(1);
    expect([...a.errors, ...b.errors]).toEqual([]);
  });

  it("a claim, or an unended run, of a host that died is let go with its retention", async () => {
    const [survivor] = await hosts(1);
    if (!survivor) throw new Error("one host");
    const server = await llm();
    // Two hosts that die: one after claiming an id, one part-way through a run.
    const claimed = await createRedisBus({
      url: redis.url,
      prefix: survivor.prefix,
      settings: { retainUnendedMs: 400 },
    });
    const running = await createRedisBus({
      url: redis.url,
      prefix: survivor.prefix,
      settings: { retainUnendedMs: 400 },
    });
    await claimed.claimRun("claimed");
    await running.claimRun("running");
    running.emit("running", { kind: "output", text: "half a run" });
    await running.flushed();
    await Promise.all([claimed.close(), running.close()]);

    const said: Record<string, string> = {};
    for (const runId of ["claimed", "running"]) {
      const refused = await run(survivor.host, server, runId, "too soon").then(
        () => "fulfilled",
        (reason: unknown) => reason,
      );
      expectTaken(refused, runId);
      said[runId] = ((refused as AgentLoopError).cause as Error).message;
    }
    expect(server.requests).toHaveLength(0);
    // Each refusal says how its id is freed: a claim with nothing written by the claim lapsing; an
    // unended run by its stream expiring (when, named), never by the claim lapsing.
    expect(said.running).toContain("is in progress in Redis, not ended");
    expect(said.running).toMatch(
      /or by its stream expiring retainUnendedMs after that run's last event: in \d+ ms if it writes nothing more \(retainUnendedMs on this instance: 6 h\)\./,
    );
    expect(said.running).not.toContain("claim lapsing");
    expect(said.claimed).toContain("has claimed it for a run that has not ended and has written nothing yet");
    expect(said.claimed).toContain(
      "or by the claim lapsing once its run has written nothing for retainUnendedMs (at most 24 h).",
    );
    expect(said.claimed).not.toContain("stream expiring");

    await pause(600);
    for (const runId of ["claimed", "running"]) {
      await run(survivor.host, server, runId, `after the retention: ${runId}`);
    }
    await survivor.host.bus.flushed();
    expect(texts(await survivor.host.bus.readHistory("running"))).toContain("after the retention: running");
    expect(texts(await survivor.host.bus.readHistory("claimed"))).toContain("after the retention: claimed");
    expect(survivor.errors).toEqual([]);
  });

  it("a host restarted after a crash frees its dead run's id with endRun and runs it again at once", async () => {
    const [restarted] = await hosts(1);
    if (!restarted) throw new Error("one host");
    const server = await llm();
    // The host that dies: claimed job-7 (as runAgentLoop does), emitted, then gone without a done.
    const dead = await createRedisBus({ url: redis.url, prefix: restarted.prefix });
    await dead.claimRun("job-7");
    dead.emit("job-7", { kind: "output", text: "half a run" });
    await dead.flushed();
    await dead.close();
    const refused = await run(restarted.host, server, "job-7", "too soon").then(
      () => "fulfilled",
      (reason: unknown) => reason,
    );
    expectTaken(refused, "job-7");
    // The refusal says how the id is freed.
    expect(((refused as AgentLoopError).cause as Error).message).toMatch(/endRun\(id\) on any instance/);
    restarted.host.bus.endRun("job-7");
    await run(restarted.host, server, "job-7", "the retry");
    await restarted.host.bus.flushed();
    const stored = await restarted.host.bus.readHistory("job-7");
    expect(texts(stored)).toContain("the retry");
    expect(texts(stored)).not.toContain("half a run");
    expect(restarted.errors).toEqual([]);
  });

  it("a runtime starting its own ended id again leaves another host's live claim and run alone", async () => {
    const [a, b] = await hosts(2);
    if (!a || !b) throw new Error("two hosts");
    const server = await llm();
    await run(a.host, server, "shared", "A's first run");
    await a.host.bus.flushed();
    // B takes the id after A's done and is running under it.
    await b.host.bus.claimRun("shared");
    b.host.bus.emit("shared", { kind: "output", text: "B is running" });
    await b.host.bus.flushed();
    // A's runtime holds its ended run locally, drops it, and asks for the id: B's run is in progress.
    const refused = await run(a.host, server, "shared", "A again").then(
      () => "fulfilled",
      (reason: unknown) => reason,
    );
    expectTaken(refused, "shared");
    await a.host.bus.flushed();
    // B's stream and claim are still there: B writes on, and a third host cannot take the id.
    const stored = await b.host.bus.readHistory("shared");
    expect(texts(stored)).toContain("B is running");
    const third = await createRedisBus({ url: redis.url, prefix: a.prefix });
    closers.push(third);
    await expect(third.claimRun("shared")).rejects.toMatchObject({ code: "invalid-run-id" });
    b.host.bus.emit("shared", { kind: "done" });
    await b.host.bus.flushed();
    expect((await b.host.bus.readHistory("shared")).map((e) => e.seq)).toEqual([1, 2]);
    expect([...a.errors, ...b.errors]).toEqual([]);
  });

  it("a claim under a retention kept for ever lapses within MAX_CLAIM_MS (24 h), renewed by each write; its run's unended stream still holds the id, until endRun", async () => {
    const [a] = await hosts(1);
    if (!a) throw new Error("one host");
    const forever = await createRedisBus({
      url: redis.url,
      prefix: a.prefix,
      settings: { retainUnendedMs: 1e19, retainEndedMs: 1e19 },
    });
    closers.push(forever);
    const raw = createClient({ url: redis.url, RESP: 2 });
    raw.on("error", () => {});
    await raw.connect();
    const refusal = (runId: string) =>
      a.host.bus.claimRun(runId).then(
        () => "claimed",
        (error: unknown) => {
          expect(EventsError.isInstance(error)).toBe(true);
          expect((error as EventsError).code).toBe("invalid-run-id");
          return (error as Error).message;
        },
      );
    try {
      // A claim with nothing written: it lapses within a day, and the lapse frees the id.
      await forever.claimRun("claimed-only");
      const claimOnly = `${a.prefix}claim:claimed-only`;
      const first = Number(await raw.sendCommand(["PTTL", claimOnly]));
      expect(MAX_CLAIM_MS).toBe(24 * 60 * 60 * 1000);
      expect(first).toBeGreaterThan(MAX_CLAIM_MS - 60_000);
      expect(first).toBeLessThanOrEqual(MAX_CLAIM_MS);
      const byClaim = await refusal("claimed-only");
      expect(byClaim).toContain(
        "or by the claim lapsing once its run has written nothing for retainUnendedMs (at most 24 h).",
      );
      // Left to lapse (as it would a day after its host died), the id is free to another host.
      await raw.sendCommand(["PEXPIRE", claimOnly, "50"]);
      await pause(150);
      expect(await refusal("claimed-only")).toBe("claimed");

      // A run that wrote and died: its claim is renewed by each write and lapses as well...
      await forever.claimRun("kept");
      const key = `${a.prefix}claim:kept`;
      await raw.sendCommand(["PEXPIRE", key, "5000"]);
      forever.emit("kept", { kind: "output", text: "still here" });
      await forever.flushed();
      expect(Number(await raw.sendCommand(["PTTL", key]))).toBeGreaterThan(MAX_CLAIM_MS - 60_000);
      await raw.sendCommand(["PEXPIRE", key, "50"]);
      await pause(150);
      expect(await raw.sendCommand(["EXISTS", key])).toBe(0);
      // ...but the lapse frees nothing: the run's unended stream, kept "for ever", still holds the id,
      // and the refusal says so (no "claim lapsing" promise) and names endRun.
      expect(Number(await raw.sendCommand(["PTTL", `${a.prefix}run:kept`]))).toBeGreaterThan(
        MAX_CLAIM_MS * 1000,
      );
      const byRun = await refusal("kept");
      expect(byRun).toContain("is in progress in Redis, not ended");
      expect(byRun).toContain("never expires, so for a host that died use endRun(id)");
      expect(byRun).not.toContain("claim lapsing");
      // endRun on any instance ends the dead host's run: the id is free at once.
      a.host.bus.endRun("kept");
      await a.host.bus.flushed();
      expect(await refusal("kept")).toBe("claimed");
    } finally {
      raw.destroy();
    }
  });

  it("a releaseRun that finds no stream announces nothing: another host's claim and every watcher of the id read on", async () => {
    const [a, b, c] = await hosts(3);
    if (!a || !b || !c) throw new Error("three hosts");
    // B has claimed job-9 (its run accepted, nothing written yet); tenants watch it on C and on A.
    await b.host.bus.claimRun("job-9");
    const read = (bus: typeof a.host.bus, runId: string) => {
      const stop = new AbortController();
      const timer = setTimeout(() => stop.abort(), 6000);
      return (async () => {
        const seen: string[] = [];
        for await (const e of bus.watch(runId, stop.signal)) seen.push(`${e.seq}:${e.kind}`);
        clearTimeout(timer);
        return { seen, abortedByTest: stop.signal.aborted };
      })();
    };
    const onC = read(c.host.bus, "job-9");
    const onA = read(a.host.bus, "job-9");
    await pause(300);
    // A drops an id it holds nothing of in Redis (its old stream expired, or a reset()).
    a.host.bus.releaseRun("job-9");
    await a.host.bus.flushed();
    await pause(300);
    b.host.bus.emit("job-9", { kind: "output", text: "B's answer" });
    b.host.bus.emit("job-9", { kind: "done" });
    await b.host.bus.flushed();
    // Before, the release announced the run's end and both watchers ended at once, with nothing.
    for (const watcher of [await onC, await onA]) {
      expect(watcher).toEqual({ seen: ["1:output", "2:done"], abortedByTest: false });
    }
    // A release that deletes this instance's own stream still announces it: its watchers end there.
    a.host.bus.emit("own-9", { kind: "output", text: "A's" });
    await a.host.bus.flushed();
    const ownOnC = read(c.host.bus, "own-9");
    await pause(300);
    a.host.bus.releaseRun("own-9");
    await a.host.bus.flushed();
    expect(await ownOnC).toEqual({ seen: ["1:output"], abortedByTest: false });
    expect(await a.host.bus.readHistory("own-9")).toEqual([]);
    expect([...a.errors, ...b.errors, ...c.errors]).toEqual([]);
  });

  it("a run cannot claim its id while Redis is away: refused, nothing sent; it waits for a reconnect", async () => {
    const own = await RedisServer.start();
    try {
      const errors: unknown[] = [];
      const host = await redisHost({
        url: own.url,
        prefix: "away:",
        connectTimeoutMs: 1500,
        onError: (e) => errors.push(e),
      });
      closers.push(host);
      const server = await llm();
      await own.kill();
      const refused = await run(host, server, "while-away", "q").then(
        () => "fulfilled",
        (reason: unknown) => reason,
      );
      expect(refused).toBeInstanceOf(AgentLoopError);
      expect((refused as AgentLoopError).cause).toMatchObject({ code: "connect" });
      expect(String(((refused as AgentLoopError).cause as Error).message)).toContain('"while-away"');
      expect(server.requests).toHaveLength(0);
      expect(host.bus.history("while-away")).toEqual([]);

      // Back within the bound: the claim waited for the connection and the run goes ahead.
      const later = run(host, server, "after-return", "back again");
      await pause(200);
      await own.start();
      await later;
      await host.bus.flushed();
      expect(texts(await host.bus.readHistory("after-return"))).toContain("back again");
    } finally {
      // Killed once already, it may have no process left to kill.
      await own.kill().catch(() => {});
    }
  });

  it("a claim Redis answers only after it gave up (a silent Redis woke) is let go, not held for the retention", async () => {
    const own = await RedisServer.start();
    try {
      const [silent, other] = await Promise.all(
        // 1.5 s: the handshake is timed by this too (a tight one fails under load).
        [0, 1].map(() => createRedisBus({ url: own.url, prefix: "silent:", connectTimeoutMs: 1500 })),
      );
      if (!silent || !other) throw new Error("two buses");
      closers.push(silent, other);
      own.pause();
      await expect(silent.claimRun("late")).rejects.toMatchObject({ code: "connect" });
      own.resume();
      await pause(300);
      // The late "ok" was answered and let go: another host may take the id at once.
      await other.claimRun("late");
    } finally {
      own.resume();
      await own.kill().catch(() => {});
    }
  });

  it("claimRun refuses a bad id and a bad signal, and stops when its signal aborts", async () => {
    const [a] = await hosts(1);
    if (!a) throw new Error("one host");
    await expect(a.host.bus.claimRun("" as string)).rejects.toMatchObject({ code: "invalid-run-id" });
    await expect(a.host.bus.claimRun("x", {} as AbortSignal)).rejects.toMatchObject({
      code: "invalid-signal",
    });
    const stop = new AbortController();
    stop.abort(new Error("stopped"));
    await expect(a.host.bus.claimRun("x", stop.signal)).rejects.toThrow("stopped");
    // Nothing was left behind: the id is free to claim.
    await a.host.bus.claimRun("x");
  });
});
