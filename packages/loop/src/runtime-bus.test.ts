import type { SequencedEvent } from "@loopwright/events";
import { createBus, type EventBus, EventsError } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, createRuntime, failedRun, fold, runMetrics } from "./index.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function collect(events: AsyncIterable<SequencedEvent>): Promise<SequencedEvent[]> {
  const seen: SequencedEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe("a runtime that owns its bus", () => {
  it("emits a run given a runId into the runtime's bus, closing with done, so a watcher needs nothing else", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "call_1", name: "add", arguments: '{"a": 2, "b": 3}' }] },
        { content: "2 + 3 is 5." },
      ],
    });
    const runtime = createRuntime();
    const watched = collect(runtime.bus.watch("run-1"));
    const result = await runtime.runAgentLoop({
      runId: "run-1",
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ args }) => (args.a as number) + (args.b as number),
    });
    const events = await watched;
    expect(events.at(-1)?.kind).toBe("done");
    expect(events.filter((event) => event.kind === "done")).toHaveLength(1);
    // What the watcher folded is what the run answered, with fold and runMetrics reached from loop.
    expect(
      fold(events)
        .filter((block) => block.kind === "text")
        .map((block) => block.text),
    ).toEqual(["2 + 3 is 5."]);
    expect(runMetrics(events)).toMatchObject({ turns: 2, toolCalls: 1 });
    expect(result.metrics).toMatchObject({ turns: 2, toolCalls: 1 });
    runtime.close();
  });

  it("starts a finished run's id afresh when a run takes it again, so a watcher of the second run sees it", async () => {
    server = await startServer({ replies: [{ content: "first answer" }, { content: "second answer" }] });
    const runtime = createRuntime();
    const run = () =>
      runtime.runAgentLoop({
        runId: "reused",
        config: { baseUrl: server!.baseUrl, model: "sim" },
        messages: QUESTION,
        dispatch: () => "unused",
      });
    await run();
    const watched = collect(runtime.bus.watch("reused"));
    // A watcher that attaches between the runs reads the first run to its done.
    const first = await watched;
    expect(first.at(-1)?.kind).toBe("done");
    // A watcher that attaches once the second run has started reads the second run alone.
    const running = run();
    const second = collect(runtime.bus.watch("reused"));
    await running;
    const events = await second;
    const texts = fold(events)
      .filter((block) => block.kind === "text")
      .map((block) => block.text);
    expect(texts).toEqual(["second answer"]);
    expect(events[0]?.seq).toBe(1);
    expect(events.filter((event) => event.kind === "done")).toHaveLength(1);
    expect(runtime.bus.history("reused").at(-1)?.kind).toBe("done");
    runtime.close();
  });

  it("closes a failed run with its error, then done", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "call_1", name: "add", arguments: '{"a": 2, "b": 3}' }] }],
    });
    const runtime = createRuntime();
    const watched = collect(runtime.bus.watch("run-2"));
    await expect(
      runtime.runAgentLoop({
        runId: "run-2",
        config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: 0 },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => 0,
      }),
    ).rejects.toThrow();
    const events = await watched;
    expect(events.slice(-2).map((event) => event.kind)).toEqual(["error", "done"]);
    runtime.close();
  });

  it("leaves the bus alone for a run without a runId, and refuses an empty one before sending", async () => {
    server = await startServer({ replies: [{ content: "hi" }] });
    const runtime = createRuntime();
    const forwarded: string[] = [];
    await runtime.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      dispatch: () => "",
      onEvent: (event) => forwarded.push(event.kind),
    });
    expect(forwarded).toContain("usage");
    await expect(
      runtime.runAgentLoop({
        runId: "",
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        dispatch: () => "",
      }),
    ).rejects.toThrow(/runId must be a non-empty string/);
    expect(server.chatRequests).toHaveLength(1);
    runtime.close();
  });

  it("refuses a runId a run on the same bus is still running under, before anything is sent, and takes it once that run ended", async () => {
    server = await startServer({
      replies: [
        { content: "Answer to the first question.", firstByteDelayMs: 300 },
        { content: "Answer to the next question." },
      ],
    });
    const runtime = createRuntime();
    // Another runtime sharing the bus: the run it holds is in progress there too.
    const sharing = createRuntime({ stores: { bus: runtime.bus } });
    const ask = (on: typeof runtime, content: string) =>
      on.runAgentLoop({
        runId: "session-42",
        config: { baseUrl: server!.baseUrl, model: "sim" },
        messages: [{ role: "user", content }],
        dispatch: () => "unused",
      });
    const first = ask(runtime, "first?");
    const watched = collect(runtime.bus.watch("session-42"));
    for (const on of [runtime, sharing]) {
      const error = await ask(on, "again?").catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      const cause = (error as AgentLoopError).cause;
      expect(EventsError.isInstance(cause)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-run-id" });
      expect((cause as Error).message).toMatch(/session-42.*still in progress/);
      expect(failedRun(error)?.messages).toEqual([{ role: "user", content: "again?" }]);
    }
    expect((await first).turn.content).toBe("Answer to the first question.");
    expect(server.chatRequests).toHaveLength(1);
    // The first run's stream is its own: one done, nothing of the refused runs in it.
    const events = await watched;
    expect(events.filter((event) => event.kind === "done")).toHaveLength(1);
    expect(events.some((event) => event.kind === "error")).toBe(false);
    expect(
      fold(events)
        .filter((block) => block.kind === "text")
        .map((block) => block.text),
    ).toEqual(["Answer to the first question."]);
    // Ended, the id is taken again, from seq 1.
    expect((await ask(sharing, "next?")).turn.content).toBe("Answer to the next question.");
    expect(runtime.bus.history("session-42")[0]?.seq).toBe(1);
    runtime.close();
  });

  it("asks a bus with claimRun for the id before sending anything, and a refused claim is the run's refusal", async () => {
    server = await startServer({ replies: [{ content: "claimed, then answered" }] });
    const bus = createBus();
    const asked: { runId: string; requestsThen: number; signal: unknown }[] = [];
    let taken = true;
    // A bus shared by many hosts (as @loopwright/redis's is): the id is another host's until freed.
    const shared: EventBus = {
      ...bus,
      emit: (runId, event) => bus.emit(runId, event),
      history: (runId) => bus.history(runId),
      async claimRun(runId, signal) {
        asked.push({ runId, requestsThen: server!.chatRequests.length, signal });
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (taken)
          throw new EventsError("invalid-run-id", `run id ${JSON.stringify(runId)} is taken on another host`);
      },
    };
    const runtime = createRuntime({ stores: { bus: shared } });
    const stop = new AbortController();
    const ask = () =>
      runtime.runAgentLoop({
        runId: "tenant-a/7",
        config: { baseUrl: server!.baseUrl, model: "sim" },
        messages: QUESTION,
        dispatch: () => "",
        signal: stop.signal,
      });
    const error = await ask().catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as AgentLoopError).cause).toMatchObject({ code: "invalid-run-id" });
    expect(((error as AgentLoopError).cause as Error).message).toContain('"tenant-a/7"');
    expect(failedRun(error)?.messages).toEqual(QUESTION);
    // Nothing sent, nothing emitted: not even the refused run's error and done.
    expect(server.chatRequests).toHaveLength(0);
    expect(bus.history("tenant-a/7")).toEqual([]);
    expect(asked).toEqual([{ runId: "tenant-a/7", requestsThen: 0, signal: stop.signal }]);

    // Freed, the run goes ahead once its claim resolves: the claim is awaited before the request.
    taken = false;
    expect((await ask()).turn.content).toBe("claimed, then answered");
    expect(asked.at(-1)?.requestsThen).toBe(0);
    expect(bus.history("tenant-a/7").at(-1)?.kind).toBe("done");
    runtime.close();
  });

  it("frees the runId of a run that failed, and of one refused at the start", async () => {
    server = await startServer({ replies: [{ content: "hi" }] });
    const runtime = createRuntime();
    const run = (messages: unknown) =>
      runtime.runAgentLoop({
        runId: "r",
        config: { baseUrl: server!.baseUrl, model: "sim" },
        messages: messages as [],
        dispatch: () => "",
      });
    await expect(run("not an array")).rejects.toThrow(/messages must be an array/);
    expect((await run(QUESTION)).turn.content).toBe("hi");
    runtime.close();
  });
});
