// r101d: what a getter answers, what a Proxy's trap throws, and a class's instance below the top,
// in an extraBody and in a tool entry, read once as JSON.stringify reads them and checked.
import { describe, expect, it } from "vitest";
import { buildBody, checkExtraBody, createCapabilityStore } from "./index.js";

const store = createCapabilityStore();
const supports = store.capabilitiesFor("http://127.0.0.1:1/v1");
const model = store.modelCapabilitiesFor(supports, "m");
const messages = [{ role: "user", content: "hi" }];
const tool = (parameters: unknown) => ({ type: "function", function: { name: "f", parameters } }) as never;

/** A getter throwing `text`, as the field `name` of a plain object. */
function throwingAt(name: string, text = "vault locked"): Record<string, unknown> {
  return Object.defineProperty({}, name, {
    enumerable: true,
    get() {
      throw new Error(text);
    },
  });
}

/** A Proxy of `{ a: 1 }` whose `ownKeys` trap throws, as a host's lazy config can be. */
const keyless = () =>
  new Proxy(
    { a: 1 },
    {
      ownKeys() {
        throw new Error("keys withheld");
      },
    },
  );

class Sampler {
  temperature = 0.5;
  // JSON writes a class's own fields: this Map went as {}, this NaN as null.
  grammar: unknown = new Map([["root", "x"]]);
}

describe("an extraBody whose field cannot be read", () => {
  it("is refused as a TypeError naming the field and what it threw, where the getter's own error came out of checkExtraBody naming nothing", () => {
    const call = () => checkExtraBody({ top_k: 20, kwargs: throwingAt("budget") }, "run.extraBody");
    expect(call).toThrow(TypeError);
    expect(call).toThrow(
      "run.extraBody.kwargs.budget could not be read (Error: vault locked): JSON.stringify would throw that while sending, naming nothing.",
    );
  });

  it("is refused at the top too, and an owned field's getter, and a Proxy whose trap throws, each by its path", () => {
    expect(() => checkExtraBody(throwingAt("top_k"))).toThrow(
      "extraBody.top_k could not be read (Error: vault locked)",
    );
    expect(() => checkExtraBody(throwingAt("model"))).toThrow("extraBody.model could not be read");
    expect(() => checkExtraBody(keyless())).toThrow("extraBody could not be read (Error: keys withheld)");
    expect(() => checkExtraBody({ kwargs: keyless() })).toThrow(
      "extraBody.kwargs could not be read (Error: keys withheld)",
    );
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    expect(() => checkExtraBody({ kwargs: revocable.proxy })).toThrow(
      /^extraBody\.kwargs could not be read \(TypeError: /,
    );
  });

  it("says in buildBody what checkExtraBody says, as config.extraBody, with the getter's error as its cause", () => {
    let thrown: unknown;
    try {
      buildBody({ model: "m", extraBody: { kwargs: throwingAt("budget") } }, supports, model, messages);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as Error).message).toMatch(
      /^buildBody: config\.extraBody\.kwargs\.budget could not be read \(Error: vault locked\)/,
    );
    expect(((thrown as Error).cause as Error).message).toBe("vault locked");
  });
});

describe("a getter's answer and a class's instance below extraBody's top", () => {
  it("checks what a getter answers: a Map from a getter is refused as a Map, where JSON sent {}", () => {
    const kwargs = Object.defineProperty({}, "grammar", { enumerable: true, get: () => new Set(["x"]) });
    expect(() => checkExtraBody({ kwargs })).toThrow(
      "extraBody.kwargs.grammar is a Set, which JSON writes as {}",
    );
  });

  it("walks a class's instance by its own fields, as JSON writes it: a Map in one is refused by its path, where it went as {}", () => {
    expect(() => checkExtraBody({ sampler: new Sampler() })).toThrow("extraBody.sampler.grammar is a Map");
    const nan = Object.assign(new Sampler(), { grammar: "x", temperature: Number.NaN });
    expect(() => checkExtraBody({ sampler: nan })).toThrow(RangeError);
    expect(() => checkExtraBody({ sampler: nan })).toThrow("extraBody.sampler.temperature is NaN");
  });

  it("still takes a class's instance holding JSON, and a Date and a class's instance with toJSON, which go as their JSON says", () => {
    const fine = Object.assign(new Sampler(), { grammar: "root ::= x" });
    expect(() => checkExtraBody({ sampler: fine, at: new Date(0) })).not.toThrow();
    class Stamp {
      toJSON = () => "2026-12-07";
      bad = Number.NaN;
    }
    expect(() => checkExtraBody({ custom: new Stamp() })).not.toThrow();
    const body = buildBody({ model: "m", extraBody: { sampler: fine } }, supports, model, messages);
    expect(JSON.parse(JSON.stringify(body)).sampler).toEqual({ temperature: 0.5, grammar: "root ::= x" });
  });
});

describe("a tool entry that cannot be read", () => {
  it("is refused by buildBody as a TypeError naming the place, where the getter's or the trap's error came out naming nothing", () => {
    const deep = { type: "object", properties: { n: throwingAt("type", "schema offline") } };
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool(deep)])).toThrow(
      "buildBody: tools[0].function.parameters.properties.n.type could not be read (Error: schema offline)",
    );
    const proxied = { type: "object", properties: keyless() };
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool(proxied)])).toThrow(
      "buildBody: tools[0].function.parameters.properties could not be read (Error: keys withheld)",
    );
    const nameless = { type: "function", function: throwingAt("name", "no name yet") } as never;
    expect(() => buildBody({ model: "m" }, supports, model, messages, [nameless])).toThrow(
      "buildBody: tools[0].function.name could not be read (Error: no name yet)",
    );
  });

  it("checks what a schema's getter answers, and a class's instance in a schema by its own fields", () => {
    const getter = Object.defineProperty({ type: "object" }, "properties", {
      enumerable: true,
      get: () => new Map([["n", { type: "number" }]]),
    });
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool(getter)])).toThrow(
      "buildBody: tools[0].function.parameters.properties is a Map",
    );
    class Schema {
      type = "object";
      properties = { n: { type: "number", maximum: Number.POSITIVE_INFINITY } };
    }
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool(new Schema())])).toThrow(
      "buildBody: tools[0].function.parameters.properties.n.maximum is Infinity",
    );
  });
});

describe("a function, a symbol or undefined where JSON would change what is sent", () => {
  it("is refused in an array by its path, where JSON wrote null, a value the host never wrote", () => {
    for (const [item, what] of [
      [() => 1, "a function"],
      [Symbol("stop"), "a symbol"],
      [undefined, "undefined"],
    ] as const) {
      const call = () => checkExtraBody({ stop: ["\n", item] });
      expect(call, what).toThrow(TypeError);
      expect(call, what).toThrow(
        `extraBody.stop[1] is ${what}, which JSON writes as null (the server would read a null you never wrote): give a JSON value, or leave the item out.`,
      );
    }
    // Before: the body went out with "stop": ["\n", null].
    expect(JSON.stringify({ stop: ["\n", undefined] })).toBe('{"stop":["\\n",null]}');
  });

  it("is refused as a field (a function or a symbol) by its path, where JSON left the field out, unsaid", () => {
    const call = () =>
      checkExtraBody({ chat_template_kwargs: { enable_thinking: () => false } }, "run.extraBody");
    expect(call).toThrow(
      "run.extraBody.chat_template_kwargs.enable_thinking is a function, which JSON leaves out (the field would not be sent, unsaid)",
    );
    expect(() => checkExtraBody({ seed: Symbol.for("seed") })).toThrow(
      "extraBody.seed is a symbol, which JSON leaves out",
    );
  });

  it("lets a field set to undefined be, at the top and below it, as a spread-merged config means it: left out", () => {
    const defaults = { top_k: 20, chat_template_kwargs: { enable_thinking: true } };
    const merged = { ...defaults, top_k: undefined, chat_template_kwargs: { enable_thinking: undefined } };
    expect(() => checkExtraBody(merged)).not.toThrow();
    const body = buildBody({ model: "m", extraBody: merged }, supports, model, messages);
    expect(JSON.parse(JSON.stringify(body)).chat_template_kwargs).toEqual({});
  });

  it("is refused in a tool entry by buildBody the same way, where a schema's function went unsaid and an enum's undefined as null", () => {
    const enumHole = { type: "object", properties: { unit: { enum: ["c", undefined] } } };
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool(enumHole)])).toThrow(
      "buildBody: tools[0].function.parameters.properties.unit.enum[1] is undefined, which JSON writes as null",
    );
    const withFn = { type: "object", properties: { n: { type: "number", default: () => 3 } } };
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool(withFn)])).toThrow(
      "buildBody: tools[0].function.parameters.properties.n.default is a function, which JSON leaves out",
    );
    // A schema's keyword set to undefined is let be, as in extraBody.
    const absent = { type: "object", properties: { n: { type: "number", description: undefined } } };
    expect(() => buildBody({ model: "m" }, supports, model, messages, [tool(absent)])).not.toThrow();
  });
});
