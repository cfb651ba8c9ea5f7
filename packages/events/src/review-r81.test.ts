// Review round r81 (events): each test fails on the code before its fix.
import { afterEach, describe, expect, it } from "vitest";
import { createBus, fold, type RunEvent, runMetrics, type SequencedEvent, type UsageEvent } from "./index.js";

describe("R81E-1: the events watch and history hand out cannot be written", () => {
  it("a watcher that writes an event changes nothing for other watchers, history or the emitter", async () => {
    const bus = createBus();
    const usage = { prompt: 812, completion: 40, total: 852, cached: 0 };
    bus.emit("r", { kind: "output", text: "Reading the file." });
    bus.emit("r", {
      kind: "usage",
      usage,
      turn: { usage, finishReason: "stop" },
      ledger: [{ through: 2, prompt: 812, epoch: 0 }],
    });
    bus.emit("r", { kind: "done" });

    const first = bus.watch("r");
    const output = (await first.next()).value as SequencedEvent<{ kind: "output"; text: string }>;
    expect(() => {
      output.text = "rewritten";
    }).toThrow(TypeError);
    const read = (await first.next()).value as SequencedEvent<UsageEvent>;
    expect(() => {
      (read.usage as { prompt: number }).prompt = 0;
    }).toThrow(TypeError);
    expect(() => {
      (read.ledger as unknown as { through: number }[]).push({ through: 9 });
    }).toThrow(TypeError);
    expect(() => {
      (read.turn.usage as { cached: number }).cached = 999;
    }).toThrow(TypeError);

    const events: SequencedEvent[] = [];
    for await (const event of bus.watch("r")) events.push(event);
    expect(events).toEqual(bus.history("r"));
    expect(bus.history("r")).toEqual([
      { kind: "output", text: "Reading the file.", seq: 1 },
      {
        kind: "usage",
        usage: { prompt: 812, completion: 40, total: 852, cached: 0 },
        turn: { usage: { prompt: 812, completion: 40, total: 852, cached: 0 }, finishReason: "stop" },
        ledger: [{ through: 2, prompt: 812, epoch: 0 }],
        seq: 2,
      },
      { kind: "done", seq: 3 },
    ]);
    // The emitter's own objects stay its own: never frozen, and not the ones stored.
    usage.prompt = 1;
    expect(Object.isFrozen(usage)).toBe(false);
    expect((bus.history("r")[1] as SequencedEvent<UsageEvent>).usage.prompt).toBe(812);
    // history is a fresh list each call.
    const list = bus.history("r");
    list.pop();
    expect(bus.history("r")).toHaveLength(3);
  });

  it("keeps shared parts shared, a cycle a cycle, a __proto__ key a field, and a deep event whole", () => {
    const bus = createBus();
    const shared = { prompt: 5, completion: 1, total: 6, cached: 0 };
    const stored = bus.emit("s", { kind: "usage", usage: shared, turn: { usage: shared, finishReason: "" } });
    const usage = stored as SequencedEvent<UsageEvent>;
    expect(usage.usage).toBe(usage.turn.usage);
    expect(usage.usage).not.toBe(shared);

    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    const withCycle = bus.emit("s", { kind: "notice", text: "x", extra: cyclic } as RunEvent) as unknown as {
      extra: { self: unknown };
    };
    expect(withCycle.extra.self).toBe(withCycle.extra);
    expect(Object.isFrozen(withCycle.extra)).toBe(true);

    const parsed = JSON.parse('{"kind":"notice","text":"y","meta":{"__proto__":{"admin":true}}}') as RunEvent;
    const kept = bus.emit("s", parsed) as unknown as { meta: Record<string, unknown> };
    expect(Object.hasOwn(kept.meta, "__proto__")).toBe(true);
    expect((kept.meta as { admin?: unknown }).admin).toBeUndefined();

    let deep: Record<string, unknown> = { end: true };
    for (let level = 0; level < 100_000; level++) deep = { deep };
    const deepStored = bus.emit("s", { kind: "notice", text: "z", deep } as RunEvent) as unknown as {
      deep: Record<string, unknown>;
    };
    expect(Object.isFrozen(deepStored.deep.deep)).toBe(true);
  });
});

describe("R81E-2: runMetrics read event fields inherited from a polluted Object.prototype", () => {
  const polluted = Object.prototype as Record<string, unknown>;
  afterEach(() => {
    for (const field of ["stopped", "finishReason", "cacheBroken", "ms"]) delete polluted[field];
  });

  it("makes no run stopped, no turn cut off or cache-broken, and adds no tool time", () => {
    polluted.stopped = true;
    polluted.finishReason = "length";
    polluted.cacheBroken = true;
    polluted.ms = 5;
    const events = [
      { kind: "turn", step: 1, seq: 1 },
      { kind: "tool-call", id: "c", name: "f", args: "{}", seq: 2 },
      { kind: "tool-result", id: "c", name: "f", ok: true, content: "x", seq: 3 },
      {
        kind: "usage",
        usage: { prompt: 10, completion: 2, total: 12, cached: 0 },
        turn: { usage: { prompt: 10, completion: 2, total: 12, cached: 0 } },
        seq: 4,
      },
      { kind: "usage", usage: { prompt: 10, completion: 2, total: 12, cached: 0 }, seq: 5 },
      { kind: "done", seq: 6 },
    ] as unknown as RunEvent[];
    const metrics = runMetrics(events);
    expect(metrics.outcome).toBe("completed");
    expect(metrics.cutOff).toBe(0);
    expect(metrics.cacheBreaks).toBe(0);
    expect(metrics.toolMs).toBeUndefined();
  });

  it("still reads a field a class's own prototype holds", () => {
    class Done {
      get kind(): string {
        return "done";
      }
      get stopped(): boolean {
        return true;
      }
    }
    expect(runMetrics([new Done() as unknown as RunEvent]).outcome).toBe("stopped");
  });
});

describe("R81E-3: fold read event fields inherited from a polluted Object.prototype", () => {
  const polluted = Object.prototype as Record<string, unknown>;
  afterEach(() => {
    delete polluted.ms;
  });

  it("shows no tool time the event did not carry", () => {
    polluted.ms = 5;
    const blocks = fold([
      { kind: "tool-call", id: "c", name: "f", args: "{}", seq: 1 },
      { kind: "tool-result", id: "c", name: "f", ok: true, content: "x", seq: 2 },
    ] as SequencedEvent[]);
    expect(blocks).toEqual([
      { kind: "tool", id: "c", name: "f", args: "{}", result: { ok: true, content: "x" } },
    ]);
  });
});
