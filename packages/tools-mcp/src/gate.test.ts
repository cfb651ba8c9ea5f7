import { describe, expect, it } from "vitest";
import { CallGate } from "./gate.js";

describe("CallGate", () => {
  it("lets shared holders in together, an exclusive one alone, in arrival order", async () => {
    const gate = new CallGate();
    const order: string[] = [];
    const r1 = await gate.acquire(true);
    const r2 = await gate.acquire(true);
    const write = gate.acquire(false).then((release) => {
      order.push("write");
      return release;
    });
    // A read arriving after a waiting write waits behind it: reads cannot starve a write.
    const late = gate.acquire(true).then((release) => {
      order.push("late read");
      return release;
    });
    await Promise.resolve();
    expect(order).toEqual([]);
    r1();
    r2();
    const releaseWrite = await write;
    expect(order).toEqual(["write"]);
    releaseWrite();
    (await late)();
    expect(order).toEqual(["write", "late read"]);
  });

  it("a waiter whose signal fires leaves the queue with the signal's reason", async () => {
    const gate = new CallGate();
    const held = await gate.acquire(false);
    const controller = new AbortController();
    const waiting = gate.acquire(false, controller.signal);
    controller.abort(new Error("stopped"));
    await expect(waiting).rejects.toThrow("stopped");
    held();
    // The gate is free again: the aborted waiter took nothing.
    (await gate.acquire(false))();
  });
});
