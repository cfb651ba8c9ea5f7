import { describe, expect, it } from "vitest";
import { createBus } from "./bus.js";
import { collected } from "./test-support/gc.js";

describe("a bus's lifetime", () => {
  it("is collected when dropped, though its sweep timer is hours away", async () => {
    const refs = (() => {
      const bus = createBus();
      const events = { kind: "output", text: "x".repeat(100_000) } as const;
      bus.emit("run-1", events);
      bus.emit("run-1", { kind: "done" });
      const stored = bus.history("run-1")[0] as object;
      return { bus: new WeakRef(bus), stored: new WeakRef(stored) };
    })();
    expect(await collected(refs.bus)).toBe(true);
    expect(await collected(refs.stored)).toBe(true);
  });

  it("close() drops every run, ends its watchers and leaves nothing scheduled", async () => {
    const bus = createBus();
    bus.emit("run-1", { kind: "notice", text: "hello" });
    const watcher = bus.watch("run-1");
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of watcher) seen.push(event.kind);
    })();
    bus.close();
    await reading;
    expect(seen).toEqual(["notice"]);
    expect(bus.history("run-1")).toEqual([]);
    // Still usable after close.
    bus.emit("run-2", { kind: "done" });
    expect(bus.history("run-2")).toHaveLength(1);
    bus.close();
  });
});
