// r100a: the owned-field lookup a caller reads `OWNED_BODY_FIELDS` through, and the one check of an
// extraBody value (`checkExtraBody`) that `buildBody`, the loop and a host share.
import { describe, expect, it } from "vitest";
import { OWNED_BODY_FIELDS, ownedBodyField } from "./index.js";

describe("ownedBodyField", () => {
  it("names a field the request is built with of its own, typed, so where it is set instead is read without a cast", () => {
    for (const key of ["model", "messages", "stream", "tools"] as const) {
      const field = ownedBodyField(key);
      expect(field).toBe(key);
      expect(OWNED_BODY_FIELDS[field ?? "model"]).toBe(OWNED_BODY_FIELDS[key]);
    }
  });

  it("is undefined for any other key, Object.prototype's members and stream_options included, and for a non-string", () => {
    for (const key of [
      "top_k",
      "stream_options",
      "constructor",
      "toString",
      "__proto__",
      "hasOwnProperty",
      "",
      "Model",
    ]) {
      expect(ownedBodyField(key), key).toBeUndefined();
    }
    expect(ownedBodyField(7 as never)).toBeUndefined();
    expect(ownedBodyField(Symbol("model") as never)).toBeUndefined();
  });
});
