import { afterEach, describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { calibrate, charsPerTokenFor, resetCalibration } from "./index.js";

const bodyOf = (chars: number) => ({ messages: [{ role: "user", content: "x".repeat(chars) }] });

afterEach(() => resetCalibration());

describe("calibration", () => {
  it("answers 4 until a reading exists", () => {
    expect(charsPerTokenFor("http://a/v1", "m")).toBe(4);
  });

  it("keeps readings per endpoint and model", () => {
    const endpoint = {};
    expect(calibrate(endpoint, "m", bodyOf(300), 100)).toBe(3);
    expect(charsPerTokenFor(endpoint, "m")).toBe(3);
    expect(charsPerTokenFor(endpoint, "other")).toBe(4);
    expect(charsPerTokenFor({}, "m")).toBe(4);
    expect(charsPerTokenFor("http://a/v1", "m")).toBe(4);
  });

  it("answers the highest of the last four readings", () => {
    const store = createCalibration();
    for (const ratio of [5, 2, 2.5, 3, 2.2]) store.calibrate("e", "m", bodyOf(ratio * 1000), 1000);
    // 5 has fallen out; the highest of 2, 2.5, 3, 2.2 is 3.
    expect(store.charsPerTokenFor("e", "m")).toBe(3);
  });

  it("does not take a reading from a request with an image, or one outside 1 to 8", () => {
    const store = createCalibration();
    const withImage = {
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "x".repeat(300) },
            { type: "image_url", image_url: { url: "u" } },
          ],
        },
      ],
    };
    expect(store.calibrate("e", "m", withImage, 100)).toBeUndefined();
    expect(store.calibrate("e", "m", bodyOf(50), 100)).toBeUndefined();
    expect(store.calibrate("e", "m", bodyOf(900), 100)).toBeUndefined();
    expect(store.calibrate("e", "m", bodyOf(900), 0)).toBeUndefined();
    expect(store.charsPerTokenFor("e", "m")).toBe(4);
  });

  it("keeps two stores apart, and forgets on reset", () => {
    const a = createCalibration();
    const b = createCalibration();
    a.calibrate("e", "m", bodyOf(200), 100);
    expect(b.charsPerTokenFor("e", "m")).toBe(4);
    a.reset();
    expect(a.charsPerTokenFor("e", "m")).toBe(4);
  });

  it("refuses an endpoint that is neither an object nor a string", () => {
    expect(() => charsPerTokenFor(42 as never)).toThrow(/endpoint/);
  });
});
