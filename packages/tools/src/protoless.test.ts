import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { ToolInputError } from "./index.js";

// The engine reads a property descriptor's `get` and `set` through the prototype: written as a
// literal, the descriptor of the mark `isInstance` reads made every ToolInputError, under a
// polluted `Object.prototype.get`, throw "Getter must be a function" in its constructor — a
// TypeError where the typed error was meant.

/** What `make()` gives, or what it throws, with `Object.prototype.get` set. */
const made = (make: () => unknown): unknown =>
  withPollutedPrototype({ get: "P0LLUTED" }, () => {
    try {
      return make();
    } catch (error) {
      return error;
    }
  });

describe("its errors under a polluted Object.prototype.get", () => {
  it("ToolInputError is still made, typed, and known by isInstance", () => {
    const error = made(() => new ToolInputError("unknown-tool", "nope", "no such tool"));
    expect(error).toBeInstanceOf(ToolInputError);
    expect(ToolInputError.isInstance(error)).toBe(true);
  });
});
