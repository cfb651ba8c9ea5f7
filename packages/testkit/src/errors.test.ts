import { describe, expect, it } from "vitest";
import { TestkitError } from "./errors.js";

describe("TestkitError", () => {
  it("carries a stable name, a code and the cause", () => {
    const cause = new Error("disk");
    const error = new TestkitError("fixture-not-found", "missing", { cause });
    expect(error.name).toBe("TestkitError");
    expect(error.code).toBe("fixture-not-found");
    expect(error.cause).toBe(cause);
    expect(error).toBeInstanceOf(Error);
  });

  it("isInstance recognises the marker from another copy and rejects look-alikes", () => {
    const foreign = Object.assign(new Error("x"), { [Symbol.for("@loopwright/testkit.TestkitError")]: true });
    expect(TestkitError.isInstance(foreign)).toBe(true);
    expect(TestkitError.isInstance(new Error("x"))).toBe(false);
    expect(TestkitError.isInstance({ name: "TestkitError" })).toBe(false);
    expect(TestkitError.isInstance(null)).toBe(false);
  });
});
