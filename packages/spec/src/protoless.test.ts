import { describe, expect, it } from "vitest";
import { AgentSpecError } from "./index.js";

// The engine reads a property descriptor's `get` and `set` through the prototype: written as a
// literal, the descriptor of the mark `isInstance` reads made every AgentSpecError, under a
// polluted `Object.prototype.get`, throw "Getter must be a function" in its constructor — a
// TypeError where the typed error was meant.

/**
 * `body()` with `Object.prototype.get` set, as some code in the host's process may set it
 * (prototype pollution), taken out again.
 */
function withInheritedGet<T>(body: () => T): T {
  const proto = Object.prototype as unknown as Record<string, unknown>;
  proto.get = "P0LLUTED";
  try {
    return body();
  } finally {
    delete proto.get;
  }
}

/** What `make()` gives, or what it throws. */
function made(make: () => unknown): unknown {
  return withInheritedGet(() => {
    try {
      return make();
    } catch (error) {
      return error;
    }
  });
}

describe("its errors under a polluted Object.prototype.get", () => {
  it("AgentSpecError is still made, typed, and known by isInstance", () => {
    const error = made(() => new AgentSpecError("not-a-spec", "not a spec"));
    expect(error).toBeInstanceOf(AgentSpecError);
    expect(AgentSpecError.isInstance(error)).toBe(true);
  });
});
