import { describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { LedgerError } from "./errors.js";

const bodyOf = (chars: number) => ({ messages: [{ role: "user", content: "x".repeat(chars) }] });

describe("calibration stays bounded", () => {
  it("keeps readings for at most maxEndpoints string endpoints, forgetting the least recently used", () => {
    const store = createCalibration({ maxEndpoints: 2 });
    store.calibrate("http://a/v1", "m", bodyOf(300), 100);
    store.calibrate("http://b/v1", "m", bodyOf(200), 100);
    store.calibrate("http://a/v1", "m", bodyOf(300), 100); // a is the most recent again
    store.calibrate("http://c/v1", "m", bodyOf(500), 100);
    expect(store.charsPerTokenFor("http://a/v1", "m")).toBe(3);
    expect(store.charsPerTokenFor("http://b/v1", "m")).toBe(4); // forgotten: the default again
    expect(store.charsPerTokenFor("http://c/v1", "m")).toBe(5);
  });

  it("keeps at most maxModels models per endpoint", () => {
    const store = createCalibration({ maxModels: 2 });
    const endpoint = {};
    store.calibrate(endpoint, "one", bodyOf(300), 100);
    store.calibrate(endpoint, "two", bodyOf(200), 100);
    store.calibrate(endpoint, "three", bodyOf(500), 100);
    expect(store.charsPerTokenFor(endpoint, "one")).toBe(4);
    expect(store.charsPerTokenFor(endpoint, "two")).toBe(2);
    expect(store.charsPerTokenFor(endpoint, "three")).toBe(5);
  });

  it("forgets one tenant's readings and keeps the others'", () => {
    const store = createCalibration();
    const mine = {};
    store.calibrate(mine, "m", bodyOf(300), 100);
    store.calibrate("http://theirs/v1", "m", bodyOf(200), 100);
    expect(store.forget(mine)).toBe(true);
    expect(store.forget(mine)).toBe(false);
    expect(store.charsPerTokenFor(mine, "m")).toBe(4);
    expect(store.charsPerTokenFor("http://theirs/v1", "m")).toBe(2);
  });

  it("refuses a bound that is not a whole number from 1", () => {
    expect(() => createCalibration({ maxModels: 0 })).toThrow(LedgerError);
  });

  it.each([
    ["null", null, "null"],
    ["a number", 5, "the number 5"],
    ["a list", [], "an array"],
  ])("refuses options that are %s with a LedgerError naming the options argument", (_, options, shown) => {
    let thrown: unknown;
    try {
      createCalibration(options as never);
    } catch (error) {
      thrown = error;
    }
    expect(LedgerError.isInstance(thrown)).toBe(true);
    expect((thrown as LedgerError).code).toBe("invalid-option");
    expect((thrown as LedgerError).message).toBe(
      `createCalibration takes its options as an object ({ maxEndpoints?, maxModels? }) or nothing, and was given ${shown}.`,
    );
  });
});
