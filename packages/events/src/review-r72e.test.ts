// Review r72e (events): the sweep's retention measured on the wall clock. A host's clock stepped
// back (an NTP correction, a VM's clock set right) kept every buffered run that much longer; one
// stepped forward swept runs that were still within their retention.

import { afterEach, describe, expect, it, vi } from "vitest";
import { createBus } from "./bus.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => {
  vi.restoreAllMocks();
});

/** The wall clock, stepped by `stepMs` from now on (negative: back). */
function stepWallClock(stepMs: number): void {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => real() + stepMs);
}

describe("R72E-2: retention is time that passed, whatever the wall clock does", () => {
  it("sweeps a finished run retainEndedMs after its done though the wall clock stepped back an hour", async () => {
    vi.useRealTimers();
    const bus = createBus({ retainEndedMs: 40 });
    try {
      bus.emit("r", { kind: "output", text: "a" });
      bus.emit("r", { kind: "done" });
      stepWallClock(-3_600_000);
      await sleep(300);
      // Before: the sweep at 40 ms read the run as due an hour later and planned itself for then.
      expect(bus.history("r")).toEqual([]);
    } finally {
      bus.close();
    }
  });

  it("keeps a run still within its retention though the wall clock stepped forward an hour", async () => {
    vi.useRealTimers();
    const bus = createBus({ retainEndedMs: 40, retainUnendedMs: 60_000 });
    try {
      bus.emit("live", { kind: "output", text: "a" });
      bus.emit("finished", { kind: "done" });
      stepWallClock(3_600_000);
      await sleep(300);
      // 300 ms of a minute's retention: the run is kept. Before: the sweep that reaped `finished`
      // read `live` as an hour silent and dropped it, and its next event started again at seq 1.
      expect(bus.history("live")).toHaveLength(1);
      expect(bus.history("finished")).toEqual([]);
      expect(bus.emit("live", { kind: "output", text: "b" }).seq).toBe(2);
    } finally {
      bus.close();
    }
  });
});
