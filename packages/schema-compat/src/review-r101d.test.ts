// r101d: a tool schema read through a class's getters, or holding a field that throws when read, in
// sanitizeTools and relaxTools: what a getter answers is checked, and a throw is refused by its place.
import { describe, expect, it } from "vitest";
import { relaxTools, SchemaCompatError, sanitizeTools } from "./index.js";

const tool = (parameters: unknown) => ({ type: "function", function: { name: "pick", parameters } });

function refusal(call: () => unknown): SchemaCompatError {
  try {
    call();
  } catch (error) {
    expect(SchemaCompatError.isInstance(error)).toBe(true);
    expect((error as SchemaCompatError).code).toBe("invalid-tools");
    return error as SchemaCompatError;
  }
  throw new Error("taken");
}

/** A schema class whose `properties` getter answers `properties`. */
function schemaAnswering(properties: () => unknown) {
  return new (class Schema {
    type = "object";
    get properties() {
      return properties();
    }
    describe(): string {
      return "a method, no keyword";
    }
  })();
}

describe("a class's getter in a tool schema", () => {
  it("is read and its answer checked: a Map, a Set or a function from one is refused by its place, where the Map went as {}", () => {
    for (const [answer, what] of [
      [() => new Map([["path", { type: "string" }]]), "a Map"],
      [() => new Set(["path"]), "a Set"],
      [() => ({ path: { type: "string", default: () => "." } }), "a function"],
    ] as const) {
      for (const [fn, name] of [
        [sanitizeTools, "sanitizeTools"],
        [relaxTools, "relaxTools"],
      ] as const) {
        const error = refusal(() => fn([tool(schemaAnswering(answer))] as never));
        expect(error.message, what).toContain(
          `${name}: the function tool "pick" (index 0 of the tool array) holds ${what} in function.parameters at #/properties`,
        );
      }
    }
  });

  it("still reads a class's getters that answer JSON, and leaves its methods be", () => {
    const sent = sanitizeTools([tool(schemaAnswering(() => ({ path: { type: "string" } })))] as never);
    expect((sent[0] as { function: { parameters: unknown } }).function.parameters).toMatchObject({
      type: "object",
      // Optional, so nullable in a strict schema.
      properties: { path: { type: ["string", "null"] } },
    });
  });
});

describe("a tool schema holding a field that throws when read", () => {
  it("is refused naming the place and what it threw, where it was sent as a tool taking no arguments, told only in a notice", () => {
    const schema = {
      type: "object",
      properties: {
        a: { type: "string" },
        b: Object.defineProperty({}, "type", {
          enumerable: true,
          get() {
            throw new Error("schema offline");
          },
        }),
      },
    };
    for (const fn of [sanitizeTools, relaxTools]) {
      const error = refusal(() => fn([tool(schema)] as never));
      expect(error.message).toContain(
        'the function tool "pick" (index 0 of the tool array) holds a field that throws when read (Error: schema offline) in function.parameters at #/properties/b/type, so the schema cannot be read',
      );
    }
  });

  it("names a class's getter that throws, a Proxy whose trap throws and a revoked Proxy by their places", () => {
    const throwing = schemaAnswering(() => {
      throw new RangeError("lazy schema not loaded");
    });
    expect(refusal(() => sanitizeTools([tool(throwing)] as never)).message).toContain(
      "holds a field that throws when read (RangeError: lazy schema not loaded) in function.parameters at #/properties,",
    );
    const trapped = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("keys withheld");
        },
      },
    );
    expect(
      refusal(() => sanitizeTools([tool({ type: "object", properties: { p: trapped } })] as never)).message,
    ).toContain("(Error: keys withheld) in function.parameters at #/properties/p,");
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(
      refusal(() => sanitizeTools([tool({ type: "object", properties: { "p/q": proxy } })] as never)).message,
    ).toContain("in function.parameters at #/properties/p~1q,");
  });
});
