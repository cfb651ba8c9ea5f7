import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { CapabilitySnapshotError, ContextOverflow } from "./index.js";

// The engine reads a property descriptor's `get` and `set` through the prototype: written as a
// literal, the descriptor of the mark `isInstance` reads made every ContextOverflow and
// CapabilitySnapshotError, under a polluted `Object.prototype.get`, throw "Getter must be a
// function" in its constructor — a TypeError where the typed error was meant.

describe("its errors under a polluted Object.prototype.get", () => {
  it("ContextOverflow is made under it (a TypeError thrown here fails the test), typed, and known by isInstance", () => {
    const error = withPollutedPrototype({ get: "P0LLUTED" }, () => new ContextOverflow("too long"));
    expect(error).toBeInstanceOf(ContextOverflow);
    expect(ContextOverflow.isInstance(error)).toBe(true);
  });
  it("CapabilitySnapshotError is made under it (a TypeError thrown here fails the test), typed, and known by isInstance", () => {
    const error = withPollutedPrototype(
      { get: "P0LLUTED" },
      () => new CapabilitySnapshotError("malformed", "$", "bad"),
    );
    expect(error).toBeInstanceOf(CapabilitySnapshotError);
    expect(CapabilitySnapshotError.isInstance(error)).toBe(true);
  });
});
