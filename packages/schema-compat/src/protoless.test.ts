import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { argumentsPrototype } from "./index.js";

// argumentsPrototype copies Object.prototype's members once per set of names and keeps the copy.
// Made while some code in the process had set a field on Object.prototype, the copy took that field
// as a member of its own and kept it after the field was taken out: every argument object made
// from it read the polluted value for good. (And under a polluted `get` the copy threw, as the
// descriptors it was given inherited that `get`.)
describe("argumentsPrototype made while Object.prototype is polluted", () => {
  it("holds only Object.prototype's standard members, never the polluted field, for good", () => {
    const made = withPollutedPrototype({ leaked: "P0LLUTED" }, () =>
      argumentsPrototype(["valueOf", "leaked"]),
    );
    const args = Object.create(made) as Record<string, unknown>;
    expect(Object.hasOwn(made, "leaked")).toBe(false);
    expect(args.leaked).toBeUndefined();
    expect(typeof args.hasOwnProperty).toBe("function");
    expect(args.valueOf).toBeUndefined();
  });

  it("is made under a polluted get, with working members", () => {
    const made = withPollutedPrototype({ get: "P0LLUTED" }, () => {
      try {
        return argumentsPrototype(["toString"]);
      } catch (error) {
        return error;
      }
    });
    expect(made).not.toBeInstanceOf(Error);
    const args = Object.create(made as object) as { hasOwnProperty(key: string): boolean };
    expect(Object.hasOwn(args, "x")).toBe(false);
  });
});
