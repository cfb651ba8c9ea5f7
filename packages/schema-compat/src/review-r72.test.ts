import { describe, expect, it } from "vitest";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

type Raw = Record<string, unknown>;

describe("dropOptionalNulls and a property name sanitizeSchema wrote with U+FFFD (r72)", () => {
  // Two names that held half a surrogate pair alone: sanitizeSchema writes them "q\uFFFD" and "q\uFFFD_2".
  const schema = {
    type: "object",
    properties: {
      "q\uD83D": { type: "string" },
      "q\uD83E": { type: "string" },
      opts: { type: "object", properties: { "\uDE00lim": { type: "integer" }, deep: { type: "boolean" } } },
    },
    required: ["q\uD83D"],
  };
  const written = { "q\uFFFD": "c", "q\uFFFD_2": null, opts: { "\uFFFDlim": null, deep: true } };

  it("is the sanitized schema's naming", () => {
    expect(Object.keys(sanitizeSchema(schema).properties as Raw)).toEqual(["q\uFFFD", "q\uFFFD_2", "opts"]);
  });

  it("drops the optional null under the name the model wrote, at the root and below it", () => {
    const out = dropOptionalNulls(written, schema);
    expect(Object.entries(out)).toEqual([
      ["q\uFFFD", "c"],
      ["opts", { deep: true }],
    ]);
  });

  it("keeps the names as the model wrote them (restoreArguments is what hands the tool its own back)", () => {
    const out = dropOptionalNulls({ "q\uFFFD": "c", "q\uFFFD_2": "d" }, schema);
    expect(Object.keys(out)).toEqual(["q\uFFFD", "q\uFFFD_2"]);
  });

  it("gives what restoreArguments gives, called before it or after it", () => {
    const restored = JSON.stringify(restoreArguments(written, schema));
    expect(restored).toBe(JSON.stringify({ "q\uD83D": "c", opts: { deep: true } }));
    expect(JSON.stringify(restoreArguments(dropOptionalNulls(written, schema), schema))).toBe(restored);
    expect(JSON.stringify(dropOptionalNulls(restoreArguments(written, schema), schema))).toBe(restored);
  });

  it("keeps a null the schema's own name takes, and a null under a U+FFFD name the sanitizer never wrote", () => {
    const nullable = {
      type: "object",
      properties: { "n\uD83D": { type: ["string", "null"] }, other: { type: "string" } },
    };
    expect(dropOptionalNulls({ "n\uFFFD": null, "x\uFFFD": null, other: null }, nullable)).toEqual({
      "n\uFFFD": null,
      "x\uFFFD": null,
    });
  });

  it("keeps a null under the U+FFFD name where the model also wrote the schema's own name", () => {
    const out = dropOptionalNulls({ "q\uFFFD_2": null, "q\uD83E": null }, schema);
    expect(Object.entries(out)).toEqual([["q\uFFFD_2", null]]);
  });
});
