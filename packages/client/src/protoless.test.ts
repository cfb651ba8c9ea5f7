import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { EndpointConfigError, ModelListingError } from "./index.js";

// The engine reads a property descriptor's `get` and `set` through the prototype: written as a
// literal, the descriptor of the mark `isInstance` reads made every EndpointConfigError and
// ModelListingError, under a polluted `Object.prototype.get`, throw "Getter must be a function" in
// its constructor — a TypeError where the typed error was meant.

describe("its errors under a polluted Object.prototype.get", () => {
  it("EndpointConfigError is made under it (a TypeError thrown here fails the test), typed, and known by isInstance", () => {
    const error = withPollutedPrototype({ get: "P0LLUTED" }, () => new EndpointConfigError("baseUrl", "bad"));
    expect(error).toBeInstanceOf(EndpointConfigError);
    expect(EndpointConfigError.isInstance(error)).toBe(true);
  });
  it("ModelListingError is made under it (a TypeError thrown here fails the test), typed, and known by isInstance", () => {
    const error = withPollutedPrototype(
      { get: "P0LLUTED" },
      () => new ModelListingError("http", "http://127.0.0.1:9/v1/models", "refused"),
    );
    expect(error).toBeInstanceOf(ModelListingError);
    expect(ModelListingError.isInstance(error)).toBe(true);
  });
});
