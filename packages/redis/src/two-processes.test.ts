import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { SequencedEvent } from "@loopwright/events";
import { readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { redisHost } from "../test/host.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const INSTANCE = fileURLToPath(new URL("../test/instance.ts", import.meta.url));
const STEPS = 8;

interface Ran {
  type: "ran";
  emitted: number;
  steps: number;
  usageInStream: boolean;
}

/** Another process, another runtime: a run there is watched and its latches are read here. */
async function otherInstance(): Promise<ChildProcess> {
  const child = fork(INSTANCE, [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await new Promise<void>((resolve, reject) => {
    child.once("message", () => resolve());
    child.once("exit", (code) => reject(new Error(`the second instance exited with ${code}`)));
  });
  return child;
}

type Reply = Ran | { type: "holding" } | { type: "failed"; message: string; stack: string };

function runThere(child: ChildProcess, command: Record<string, unknown>): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const answered = (reply: Reply) => {
      if (reply.type === "holding") return;
      child.off("message", answered);
      if (reply.type === "ran") resolve(reply);
      else reject(new Error(`the run failed in the second instance: ${reply.stack}`));
    };
    child.on("message", answered);
    child.send({ type: "run", ...command });
  });
}

/** Resolves when the run there holds at its `holdAt` tool call, every event before it in Redis. */
function holding(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    const heard = (reply: Reply) => {
      if (reply.type !== "holding") return;
      child.off("message", heard);
      resolve();
    };
    child.on("message", heard);
  });
}

/** A refusal of `stream_options` first, then tool turns, then a last answer. */
function script(): Parameters<typeof startServer>[0] {
  const refusal = {
    type: "error" as const,
    status: 400,
    body: readFixtureJson("errors/relay-new-api/unknown-parameter-stream-options-with-request-ids.json"),
  };
  const step = (i: number) => ({ toolCalls: [{ name: "step", arguments: `{"i":${i}}` }] });
  return {
    replies: [
      refusal,
      ...Array.from({ length: STEPS }, (_, i) => step(i)),
      { content: "finished" },
      { content: "again" },
    ],
  };
}

async function readUntil(
  watcher: AsyncIterator<SequencedEvent, undefined>,
  seen: SequencedEvent[],
  stop: (event: SequencedEvent) => boolean,
): Promise<void> {
  for (;;) {
    const next = await watcher.next();
    if (next.done) return;
    seen.push(next.value);
    if (stop(next.value)) return;
  }
}

describe.skipIf(!HAS_REDIS)("two instances on one Redis", { timeout: 30_000 }, () => {
  let redis: RedisServer;
  let llm: TestServer | undefined;
  let child: ChildProcess;
  let bus: RedisEventBus | undefined;

  beforeAll(async () => {
    redis = await RedisServer.start();
    child = await otherInstance();
  });
  afterEach(async () => {
    await bus?.close();
    bus = undefined;
    await llm?.close();
    llm = undefined;
  });
  afterAll(async () => {
    // Waited for: a second instance still running when the file ends is the next file's in this
    // worker (seen at the end of a stress run, a child process left).
    const exited =
      child && child.exitCode === null && child.signalCode === null
        ? new Promise((resolve) => child?.once("exit", resolve))
        : undefined;
    child?.send({ type: "exit" });
    await exited;
    await redis.kill();
  });

  it("a watcher here that disconnects mid-run and reconnects sees each event of a run there exactly once, in order", async () => {
    llm = await startServer(script());
    bus = await createRedisBus({ url: redis.url, prefix: "two:" });
    const runId = "run-reconnect";
    const first = new AbortController();
    const seen: SequencedEvent[] = [];
    const watcher = bus.watch(runId, first.signal);
    const ran = runThere(child, { url: redis.url, prefix: "two:", baseUrl: llm.baseUrl, runId, toolMs: 40 });

    await readUntil(watcher, seen, (e) => e.kind === "tool-result");
    first.abort();
    expect(await watcher.next()).toEqual({ done: true, value: undefined });
    // Away for two tool calls, then back from the last seq read.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const again = bus.watch(runId, undefined, { after: seen.at(-1)?.seq ?? 0 });
    await readUntil(again, seen, () => false);
    const { emitted } = await ran;

    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: emitted }, (_, i) => i + 1));
    expect(seen.at(-1)?.kind).toBe("done");
    expect(seen.filter((e) => e.kind === "tool-result")).toHaveLength(STEPS);
    expect(seen.some((e) => e.kind === "notice" && "dropped" in e)).toBe(false);
  });

  it("a refusal latched by a run there is avoided by the next request here", async () => {
    llm = await startServer(script());
    const ran = await runThere(child, {
      url: redis.url,
      prefix: "latch:",
      baseUrl: llm.baseUrl,
      runId: "r",
      toolMs: 1,
    });
    expect(ran.usageInStream).toBe(false);

    const here = await redisHost({ url: redis.url, prefix: "latch:" });
    try {
      expect(here.capabilities.capabilitiesFor(llm.baseUrl).usageInStream).toBe(false);
      await here.runAgentLoop({
        config: { baseUrl: llm.baseUrl, model: "sim" },
        messages: [{ role: "user", content: "hi" }],
        dispatch: () => "",
      });
      const sent = llm.chatRequests.map((r) => "stream_options" in (r.body as object));
      // There: refused, re-sent without, then every tool step without. Here: without from the start.
      expect(sent[0]).toBe(true);
      expect(sent.slice(1)).toEqual(sent.slice(1).map(() => false));
      expect(sent).toHaveLength(STEPS + 3);
    } finally {
      await here.close();
    }
  });

  it("Redis restarted mid-run: the run finishes, a returning watcher is told of the gap once, nothing throws", async () => {
    llm = await startServer(script());
    bus = await createRedisBus({ url: redis.url, prefix: "restart:", onError: () => {} });
    const runId = "run-restart";
    const first = new AbortController();
    const seen: SequencedEvent[] = [];
    const watcher = bus.watch(runId, first.signal);
    // The run holds at its third tool call until told to go on: killed after a time instead (the
    // tool calls' 100 ms each), Redis could go after the run's `done` on a loaded machine, and the
    // watcher then waited for events that never came (the restart test's CI failure).
    const held = holding(child);
    const ran = runThere(child, {
      url: redis.url,
      prefix: "restart:",
      baseUrl: llm.baseUrl,
      runId,
      toolMs: 1,
      holdAt: 3,
    });

    await readUntil(watcher, seen, (e) => e.kind === "tool-result");
    first.abort();
    const lastRead = seen.at(-1)?.seq ?? 0;
    // Events this watcher has not read are in Redis (two more tool steps): lose them with the server.
    await held;
    expect((await bus.readHistory(runId, lastRead)).length).toBeGreaterThanOrEqual(3);
    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, 150));
    await redis.start();
    child.send({ type: "go" });

    const again = bus.watch(runId, undefined, { after: lastRead });
    await readUntil(again, seen, () => false);
    const { emitted } = await ran;

    const notices = seen.filter((e) => e.kind === "notice" && "dropped" in e);
    expect(notices).toHaveLength(1);
    const notice = notices[0] as SequencedEvent & { dropped: number };
    expect(notice.dropped).toBeGreaterThanOrEqual(3);
    const events = seen.filter((e) => e !== notice).map((e) => e.seq);
    const expected = Array.from({ length: emitted }, (_, i) => i + 1).filter(
      (seq) => seq <= lastRead || seq > lastRead + notice.dropped,
    );
    expect(events).toEqual(expected);
    expect(seen.at(-1)?.kind).toBe("done");
  });
  it("a run id that ended there, run again here with runAgentLoop({ runId }), is read afresh by a watcher", async () => {
    llm = await startServer(script());
    const prefix = "again:";
    const runId = "run-again";
    const there = await runThere(child, { url: redis.url, prefix, baseUrl: llm.baseUrl, runId, toolMs: 1 });
    expect(there.steps).toBe(STEPS + 1);

    const here = await redisHost({ url: redis.url, prefix });
    try {
      // This process never saw the run: its own history is empty, so nothing here ends it first.
      expect(here.bus.history(runId)).toEqual([]);
      await here.runAgentLoop({
        runId,
        config: { baseUrl: llm.baseUrl, model: "sim" },
        messages: [{ role: "user", content: "once more" }],
        dispatch: () => "",
      });
      await here.bus.flushed();
      bus = await createRedisBus({ url: redis.url, prefix });
      const seen: SequencedEvent[] = [];
      await readUntil(bus.watch(runId), seen, () => false);
      expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: seen.length }, (_, i) => i + 1));
      expect(seen.at(-1)?.kind).toBe("done");
      expect(seen.filter((e) => e.kind === "tool-result")).toEqual([]);
      expect(
        seen
          .filter((e) => e.kind === "output")
          .map((e) => (e as { text: string }).text)
          .join(""),
      ).toBe("again");
    } finally {
      await here.close();
    }
  });
});
