/**
 * r92, found by the loop's random run against a real llama.cpp server (b9749): a property named
 * `$ref` fails the whole request there — its schema walker reads a `$ref` key wherever it stands as
 * a reference, and the property's schema (an object) is not the string it wants: 400 "type must be
 * string, but is object" (the loop's review-r92 shows it live). sanitizeSchema and relaxSchema now
 * send it as `$ref_` (`$ref__2` where a `$ref_` is there too), and restoreArguments hands the tool
 * its own name back, as for a name holding half a surrogate pair.
 */
import { describe, expect, it } from "vitest";
import { dropOptionalNulls, relaxSchema, restoreArguments, sanitizeSchema, takesStringAt } from "./index.js";

const SCHEMA = {
  type: "object",
  properties: {
    $ref: { type: "string" },
    doc: { type: "object", properties: { $ref: { type: "integer" }, $ref_: { type: "string" } } },
  },
  required: ["$ref"],
};

describe("r92: a property named $ref", () => {
  it("is never sent as a key llama.cpp reads as a reference, strict or relaxed", () => {
    for (const sent of [sanitizeSchema(SCHEMA), relaxSchema(SCHEMA)]) {
      // No `$ref` key with a schema (an object) as its value, anywhere: what llama.cpp refuses.
      expect(JSON.stringify(sent)).not.toMatch(/"\$ref":\{/);
      expect(Object.keys(sent.properties as object)).toEqual(["$ref_", "doc"]);
      const doc = (sent.properties as Record<string, { anyOf?: unknown; properties?: object }>).doc;
      expect(JSON.stringify(doc)).toContain('"$ref__2"');
      expect(JSON.stringify(doc)).toContain('"$ref_"');
    }
  });

  it("reaches the tool under its own name; a real $ref_ beside it keeps its own", () => {
    const written = { $ref_: "#/a", doc: { $ref__2: 3, $ref_: "x" } };
    expect(restoreArguments(written, SCHEMA)).toEqual({ $ref: "#/a", doc: { $ref: 3, $ref_: "x" } });
  });

  it("a real reference is still followed", () => {
    const schema = {
      type: "object",
      properties: { a: { $ref: "#/$defs/s" } },
      required: ["a"],
      $defs: { s: { type: "string" } },
    };
    expect(sanitizeSchema(schema).properties).toEqual({ a: { type: "string" } });
  });

  it("is read as the schema's own where the model wrote the name it was sent as", () => {
    expect(takesStringAt(SCHEMA, ["$ref_"])).toBe(true);
    expect(dropOptionalNulls({ $ref_: "#/a", doc: null }, SCHEMA)).toEqual({ $ref_: "#/a" });
  });
});

describe("r92: restoreArguments' onUnread", () => {
  const schema = {
    type: "object",
    properties: {
      opts: { type: "object", properties: {} },
      list: { type: "array", items: { type: "object", properties: {} } },
      free: {},
    },
  };
  const unread = (args: unknown) => {
    const places: string[] = [];
    const out = restoreArguments(args, schema, { onUnread: (path) => places.push(path) });
    return { out, places };
  };

  it("names each place asked for as JSON text whose text is handed on as written", () => {
    expect(unread({ opts: ".$", list: ["[1]", '{"a":1}'] }).places).toEqual(["opts", "list[]"]);
  });

  it("is not told of text that parsed, nor where the original takes any value", () => {
    const { out, places } = unread({ opts: '{"a":1}', list: [], free: ".$" });
    expect(places).toEqual([]);
    expect(out).toEqual({ opts: { a: 1 }, list: [], free: ".$" });
  });
});
