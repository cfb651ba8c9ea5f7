import { afterEach, describe, expect, it, vi } from "vitest";
import { sleep } from "./run-turn.js";

// The longest delay one Node timer takes; vitest's fake timers, like Node, fire a longer one at once.
const MAX_TIMER_MS = 2_147_483_647;

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** Whether `promise` has settled, without waiting for it. */
function watch(promise: Promise<void>): { settled: boolean; error?: unknown } {
  const state: { settled: boolean; error?: unknown } = { settled: false };
  promise.then(
    () => {
      state.settled = true;
    },
    (error: unknown) => {
      state.settled = true;
      state.error = error;
    },
  );
  return state;
}

describe("runTurn's wait between attempts", () => {
  it("waits out a delay longer than one timer takes instead of firing at once", async () => {
    vi.useFakeTimers();
    const state = watch(sleep(MAX_TIMER_MS + 5000, undefined));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS - 10_000 + 4999);
    expect(state.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(state).toEqual({ settled: true });
  });

  it("waits in steps of at most the step size, adding up to the whole delay", async () => {
    vi.useFakeTimers();
    const timers = vi.spyOn(globalThis, "setTimeout");
    const state = watch(sleep(25, undefined, 10));
    await vi.advanceTimersByTimeAsync(24);
    expect(state.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(state).toEqual({ settled: true });
    expect(timers.mock.calls.map((call) => call[1])).toEqual([10, 10, 5]);
  });

  it("stops at the abort, whichever step it is in, and leaves no timer behind", async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const state = watch(sleep(100, controller.signal, 10));
    await vi.advanceTimersByTimeAsync(35);
    expect(state.settled).toBe(false);
    const reason = new Error("stop waiting");
    controller.abort(reason);
    await vi.advanceTimersByTimeAsync(0);
    expect(state).toEqual({ settled: true, error: reason });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("waits for ever on an endless delay, until aborted", async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const state = watch(sleep(Number.POSITIVE_INFINITY, controller.signal));
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS * 3);
    expect(state.settled).toBe(false);
    controller.abort(new Error("enough"));
    await vi.advanceTimersByTimeAsync(0);
    expect(state).toMatchObject({ settled: true, error: { message: "enough" } });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rejects at once, with no timer, when the signal is already aborted", async () => {
    vi.useFakeTimers();
    const reason = new Error("already");
    await expect(sleep(1000, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });
});
