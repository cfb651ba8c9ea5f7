import { describe, expect, it } from "vitest";
import { createBus } from "./bus.js";
import { EventsError } from "./errors.js";
import { fold } from "./fold.js";
import { runMetrics } from "./run-metrics.js";

/** Events a host's own code may produce: none of them is JSON. */
function exotic(): unknown[] {
  const getter = Object.defineProperty({ kind: "output" }, "text", {
    enumerable: true,
    get() {
      throw new Error("no");
    },
  });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const cycle: Record<string, unknown> = { kind: "tool-result", id: "a", ok: false };
  cycle.name = cycle;
  return [
    getter,
    proxy,
    cycle,
    Object.create(null),
    { kind: "output", text: 1n },
    { kind: "tool-call", id: Symbol("id"), name: Symbol("n"), args: 1n },
    { kind: "tool-result", id: 1n, name: Object.create(null), ok: false, content: Symbol("c") },
    { kind: "usage", turn: proxy },
    { kind: Symbol("k") },
    Symbol("bare"),
    1n,
  ];
}

describe("fold and runMetrics never throw on what a host hands them", () => {
  it("fold skips what it cannot read and draws the rest", () => {
    const blocks = fold([...exotic(), { kind: "output", text: "still here" }] as never);
    expect(blocks.at(-1)).toMatchObject({ text: "still here" });
  });

  it("runMetrics counts what it can read", () => {
    const metrics = runMetrics([...exotic(), { kind: "done" }] as never);
    expect(metrics.outcome).toBe("completed");
  });

  it("emit answers an EventsError (or takes the event), never a raw TypeError", () => {
    const bus = createBus();
    for (const event of exotic()) {
      let thrown: unknown;
      try {
        bus.emit("run", event as never);
      } catch (error) {
        thrown = error;
      }
      expect(thrown === undefined || EventsError.isInstance(thrown), String(thrown)).toBe(true);
    }
    bus.emit("run", { kind: "output", text: "ok" });
    expect(fold(bus.history("run")).at(-1)).toMatchObject({ text: "ok" });
  });
});
