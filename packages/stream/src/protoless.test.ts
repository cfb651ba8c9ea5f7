import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { StreamError } from "./index.js";

// The engine reads a property descriptor's `get` and `set` through the prototype: written as a
// literal, the descriptor of the mark `isInstance` reads made every StreamError, under a polluted
// `Object.prototype.get`, throw "Getter must be a function" in its constructor — a TypeError where
// the typed error was meant.

describe("its errors under a polluted Object.prototype.get", () => {
  it("StreamError is made under it (a TypeError thrown here fails the test), typed, and known by isInstance", () => {
    const error = withPollutedPrototype({ get: "P0LLUTED" }, () => new StreamError("server-error", "boom"));
    expect(error).toBeInstanceOf(StreamError);
    expect(StreamError.isInstance(error)).toBe(true);
  });
});
