// r100a: the owned-field lookup a caller reads `OWNED_BODY_FIELDS` through, and the one check of an
// extraBody value (`checkExtraBody`) that `buildBody`, the loop and a host share.
import { describe, expect, it } from "vitest";
import {
  buildBody,
  checkExtraBody,
  createCapabilityStore,
  OWNED_BODY_FIELDS,
  ownedBodyField,
} from "./index.js";

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

class Knobs {
  top_k = 20;
  get min_p(): number {
    return 0.05;
  }
}

const cycle: Record<string, unknown> = { depth: 1 };
cycle.self = cycle;

/** Each value `checkExtraBody` refuses, the error's type, and what its message says after the path it names. */
const REFUSED: Array<[string, unknown, ErrorConstructor, string]> = [
  [
    "an owned field",
    { model: "x" },
    TypeError,
    ` sets "model", a field buildBody writes itself (${OWNED_BODY_FIELDS.model})`,
  ],
  ["an owned field set to null", { tools: null }, TypeError, ' sets "tools"'],
  ["NaN", { top_p: Number.NaN }, RangeError, ".top_p is NaN, which JSON writes as null"],
  [
    "Infinity, deep",
    { kwargs: { budget: [1, Number.POSITIVE_INFINITY] } },
    RangeError,
    ".kwargs.budget[1] is Infinity",
  ],
  ["-Infinity", { logit_bias: { "50256": -Infinity } }, RangeError, '.logit_bias["50256"] is -Infinity'],
  ["a BigInt", { seed: 7n }, TypeError, ".seed is a BigInt, which JSON cannot write"],
  ["a cycle", { grammar: cycle }, TypeError, ".grammar.self is a cycle"],
  [
    "a __proto__ key",
    JSON.parse('{"__proto__": {"top_k": 1}}'),
    TypeError,
    ' must not have a "__proto__" key',
  ],
  [
    "a Map",
    new Map([["top_k", 20]]),
    TypeError,
    " must be a plain object of body fields ({ top_k: 20 }; null or absent for none), and was given an instance of Map.",
  ],
  [
    "a Set",
    new Set(["top_k"]),
    TypeError,
    " must be a plain object of body fields ({ top_k: 20 }; null or absent for none), and was given an instance of Set.",
  ],
  ["a Date", new Date(0), TypeError, "was given an instance of Date."],
  ["a class's instance", new Knobs(), TypeError, "was given an instance of Knobs."],
  [
    "an object inheriting its fields",
    Object.create({ top_k: 20 }),
    TypeError,
    "was given an object on a prototype of its own",
  ],
  ["an array", [["top_k", 20]], TypeError, "was given an array."],
  ["a string", "top_k=20", TypeError, 'was given the string "top_k=20".'],
  ["a number", 20, TypeError, "was given the number 20."],
];

describe("checkExtraBody", () => {
  it("refuses each value buildBody would not send as written, naming the path it is given and what was wrong", () => {
    for (const [what, value, type, words] of REFUSED) {
      const call = () => checkExtraBody(value, "run.extraBody");
      expect(call, what).toThrow(type);
      expect(call, what).toThrow(words);
      expect(call, what).toThrow(/^run\.extraBody[ .[]/);
      // By default the path is extraBody, and no caller's name goes before it.
      expect(() => checkExtraBody(value), what).toThrow(/^extraBody/);
    }
  });

  it("takes none, a plain object, one on no prototype, a key set to undefined and a Date or a shared object below the top", () => {
    const shared = { k: 1 };
    for (const value of [
      undefined,
      null,
      {},
      { top_k: 20, stream_options: { include_usage: true } },
      Object.assign(Object.create(null) as Record<string, unknown>, { top_k: 20 }),
      { model: undefined, top_k: 1 },
      { at: new Date(0), a: shared, b: shared },
      Object.freeze({ top_k: 20 }),
    ]) {
      expect(() => checkExtraBody(value)).not.toThrow();
    }
  });
});

describe("buildBody given an extraBody that is not a plain object", () => {
  it("refuses it naming config.extraBody and what it was, where it sent none of its entries, unsaid", () => {
    // Before: a Map's entries, a Set's and a class's getters went nowhere, and the body went out
    // without them (a Knobs' own top_k went, its min_p did not).
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor("http://127.0.0.1:1/v1");
    const model = store.modelCapabilitiesFor(supports, "m");
    const messages = [{ role: "user", content: "hi" }];
    for (const [what, extraBody, words] of [
      ["a Map", new Map([["top_k", 20]]), "an instance of Map"],
      ["a Set", new Set(["top_k"]), "an instance of Set"],
      ["a Date", new Date(0), "an instance of Date"],
      ["a class's instance", new Knobs(), "an instance of Knobs"],
    ] as const) {
      const call = () => buildBody({ model: "m", extraBody: extraBody as never }, supports, model, messages);
      expect(call, what).toThrow(TypeError);
      expect(call, what).toThrow(
        `buildBody: config.extraBody must be a plain object of body fields ({ top_k: 20 }; null or absent for none), and was given ${words}.`,
      );
    }
  });

  it("says of every extraBody it refuses what checkExtraBody says of it as config.extraBody: one rule", () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor("http://127.0.0.1:1/v1");
    for (const [what, value, type] of REFUSED) {
      let checked: unknown;
      try {
        checkExtraBody(value, "config.extraBody");
      } catch (error) {
        checked = error;
      }
      const call = () => buildBody({ model: "m", extraBody: value as never }, supports, undefined, []);
      expect(call, what).toThrow(type);
      expect(call, what).toThrow(`buildBody: ${(checked as Error).message}`);
    }
  });
});

describe("what JSON cannot send as given, in a tool entry or below extraBody's top", () => {
  const store = createCapabilityStore();
  const supports = store.capabilitiesFor("http://127.0.0.1:1/v1");
  const model = store.modelCapabilitiesFor(supports, "m");
  const messages = [{ role: "user", content: "hi" }];
  const fn = (parameters: unknown, extra: Record<string, unknown> = {}) =>
    ({ type: "function", function: { name: "f", parameters }, ...extra }) as never;

  it("is refused in any tool by its path, where a schema's Infinity went as null, a Map of properties as {}, a BigInt threw in the client", () => {
    const number = (field: Record<string, unknown>) => ({
      type: "object",
      properties: { n: { type: "number", ...field } },
    });
    const cases: Array<[unknown, ErrorConstructor, string]> = [
      [
        fn(number({ maximum: Number.POSITIVE_INFINITY })),
        RangeError,
        "tools[0].function.parameters.properties.n.maximum is Infinity",
      ],
      [
        fn(number({ default: Number.NaN })),
        RangeError,
        "tools[0].function.parameters.properties.n.default is NaN",
      ],
      [
        fn(number({ default: 1n })),
        TypeError,
        "tools[0].function.parameters.properties.n.default is a BigInt",
      ],
      [
        fn({ type: "object", properties: new Map([["n", { type: "number" }]]) }),
        TypeError,
        "tools[0].function.parameters.properties is a Map, which JSON writes as {}",
      ],
      [
        fn({ type: "object" }, { cache_control: { ttl: -Infinity } }),
        RangeError,
        "tools[0].cache_control.ttl is -Infinity",
      ],
      [
        { type: "custom", custom: { name: "c", format: { grammar: 1n } } },
        TypeError,
        "tools[0].custom.format.grammar is a BigInt",
      ],
    ];
    for (const [tool, type, words] of cases) {
      // Whatever the latches: relaxed tools are copied from these.
      for (const endpoint of [supports, { ...supports, strictSchemas: false }]) {
        const call = () =>
          buildBody({ model: "m" }, endpoint, model, messages, [fn({ type: "object" }), tool] as never);
        expect(call, words).toThrow(type);
        expect(call, words).toThrow(`buildBody: ${words.replace("tools[0]", "tools[1]")}`);
      }
    }
  });

  it("is refused below extraBody's top: a Map or a Set went as {}, none of its entries sent", () => {
    for (const [extraBody, words] of [
      [{ logit_bias: new Map([["50256", -100]]) }, "config.extraBody.logit_bias is a Map"],
      [{ kwargs: { stop: new Set(["a"]) } }, "config.extraBody.kwargs.stop is a Set"],
    ] as const) {
      const call = () => buildBody({ model: "m", extraBody }, supports, model, messages);
      expect(call, words).toThrow(TypeError);
      expect(call, words).toThrow(
        `buildBody: ${words}, which JSON writes as {} (none of its entries would be sent)`,
      );
      expect(() => checkExtraBody(extraBody, "config.extraBody"), words).toThrow(words);
    }
  });

  it("still lets a tool with a Date, a shared object or a deep schema go as its JSON says", () => {
    const shared = { type: "string" };
    const tool = fn({
      type: "object",
      properties: { a: shared, b: shared, c: { description: "x", examples: [new Date(0)] } },
    });
    const body = buildBody({ model: "m" }, supports, model, messages, [tool]);
    expect(JSON.parse(JSON.stringify(body.tools))).toEqual(JSON.parse(JSON.stringify([tool])));
  });
});
