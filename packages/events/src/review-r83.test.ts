// Review round r83 (events): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { checkSignal, createBus, EventsError, type RunEvent, type SignalLike } from "./index.js";

const polluted = Object.prototype as Record<string, unknown>;

describe("R83E-1: a signal-like's aborted and listener methods were read through a polluted Object.prototype", () => {
  it("an inherited aborted = true does not finish a watcher at once: the signal is refused as none", async () => {
    const bus = createBus();
    bus.emit("r", { kind: "notice", text: "hi" } as RunEvent);
    const listening = { addEventListener() {}, removeEventListener() {} } as unknown as SignalLike;
    polluted.aborted = true;
    let error: unknown;
    try {
      bus.watch("r", listening);
    } catch (caught) {
      error = caught;
    } finally {
      delete polluted.aborted;
    }
    // Before: taken as an aborted signal, and the watcher finished without a word of the run.
    expect(EventsError.isInstance(error) && error.code).toBe("invalid-signal");
  });

  it("inherited listener methods are not a signal's: the polluter's addEventListener is never called", () => {
    let called = 0;
    polluted.addEventListener = () => {
      called++;
    };
    polluted.removeEventListener = () => {};
    let error: unknown;
    try {
      createBus().watch("r", { aborted: false } as unknown as SignalLike);
    } catch (caught) {
      error = caught;
    } finally {
      delete polluted.addEventListener;
      delete polluted.removeEventListener;
    }
    expect(EventsError.isInstance(error) && error.code).toBe("invalid-signal");
    expect(called).toBe(0);
  });

  it("an AbortSignal, whose aborted is AbortSignal.prototype's getter, still reads right", async () => {
    polluted.aborted = true;
    try {
      const controller = new AbortController();
      expect(() => checkSignal(controller.signal, "watch")).not.toThrow();
      const bus = createBus();
      bus.emit("r", { kind: "notice", text: "hi" } as RunEvent);
      const stream = bus.watch("r", controller.signal);
      const iterator = stream[Symbol.asyncIterator]();
      expect((await iterator.next()).value).toMatchObject({ kind: "notice", text: "hi" });
      controller.abort();
      expect((await iterator.next()).done).toBe(true);
      // A class's own getter counts as the object's own, as AbortSignal's does.
      class Signal {
        get aborted() {
          return false;
        }
        addEventListener() {}
        removeEventListener() {}
      }
      expect(() => checkSignal(new Signal(), "watch")).not.toThrow();
    } finally {
      delete polluted.aborted;
    }
  });
});
