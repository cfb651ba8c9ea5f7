import { describe, expect, it } from "vitest";
import {
  checkSignal,
  createBus,
  DEFAULT_EVENTS_SETTINGS,
  EventsError,
  mergeSettings,
  type RunEvent,
  withSeq,
} from "./index.js";

// The parts another bus (the Redis one) builds on: each must do what the in-memory bus does.
describe("the bus's parts, exported for another bus", () => {
  it("withSeq copies an event as emit stores it, a __proto__ key kept as data", () => {
    const text = '{"kind":"output","text":"hi","__proto__":{"kind":"done"}}';
    const event = JSON.parse(text) as RunEvent;
    const copy = withSeq(event, 7);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(JSON.stringify(copy)).toBe(`${text.slice(0, -1)},"seq":7}`);
    expect(copy.kind).toBe("output");
    expect(event).not.toHaveProperty("seq");
    const bus = createBus();
    const stored = bus.emit("r", event);
    expect(JSON.stringify(withSeq(event, 1))).toBe(JSON.stringify(stored));
    bus.close();
  });

  it("mergeSettings lays on only positive finite numbers, rounding the two counts up, as configure does", () => {
    const merged = mergeSettings(DEFAULT_EVENTS_SETTINGS, {
      maxEvents: 0,
      trimSlack: 2.5,
      retainEndedMs: Number.NaN,
      retainUnendedMs: "5",
    });
    expect(merged).toEqual({ ...DEFAULT_EVENTS_SETTINGS, trimSlack: 3 });
    const bus = createBus();
    expect(bus.configure({ maxEvents: 0, trimSlack: 2.5 })).toEqual(merged);
    bus.close();
    expect(mergeSettings(DEFAULT_EVENTS_SETTINGS, null)).toEqual(DEFAULT_EVENTS_SETTINGS);
  });

  it("checkSignal refuses what is not a signal with an EventsError naming the function it went to", () => {
    let thrown: unknown;
    try {
      checkSignal({ signal: new AbortController().signal }, "myBus.watch");
    } catch (error) {
      thrown = error;
    }
    expect(EventsError.isInstance(thrown)).toBe(true);
    expect((thrown as EventsError).code).toBe("invalid-signal");
    expect((thrown as EventsError).message).toMatch(/^myBus\.watch takes an AbortSignal/);
    expect(() => checkSignal(undefined, "w")).not.toThrow();
    expect(() => checkSignal(new AbortController().signal, "w")).not.toThrow();
  });
});
