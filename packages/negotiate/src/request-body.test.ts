import { describe, expect, it } from "vitest";
import { createCapabilityStore } from "./capabilities.js";
import {
  type BuildBodyOptions,
  buildBody,
  isToolChoice,
  type ModelParams,
  OWNED_BODY_FIELDS,
  type ToolDefinition,
} from "./request-body.js";

const tool = (name: string, parameters: Record<string, unknown> = { type: "object", properties: {} }) =>
  ({ type: "function", function: { name, parameters } }) satisfies ToolDefinition;
const messages = [{ role: "user", content: "hi" }];

function fresh() {
  const store = createCapabilityStore();
  const supports = store.capabilitiesFor("http://127.0.0.1:1/v1");
  return { supports, model: store.modelCapabilitiesFor(supports, "m") };
}

describe("buildBody", () => {
  it("sends the full body to an endpoint and model that refused nothing", () => {
    const { supports, model } = fresh();
    const body = buildBody(
      { model: "m", maxTokens: 64, temperature: 0.3, reasoningEffort: "low" },
      supports,
      model,
      messages,
      [tool("b"), tool("a")],
    );
    expect(body).toEqual({
      model: "m",
      messages,
      stream: true,
      stream_options: { include_usage: true },
      tools: [tool("a"), tool("b")],
      reasoning_effort: "low",
      max_tokens: 64,
      temperature: 0.3,
    });
  });

  it("spells the ceiling max_tokens when no model latches are given, and sends no temperature", () => {
    const { supports } = fresh();
    const body = buildBody({ model: "m", maxTokens: 64, temperature: 0.3 }, supports, undefined, messages);
    expect(body).toMatchObject({ max_tokens: 64 });
    expect(body).not.toHaveProperty("max_completion_tokens");
    expect(body).not.toHaveProperty("temperature");
  });

  it("sends no ceiling for maxTokens 0 and no effort for 'off' or an absent setting", () => {
    const { supports, model } = fresh();
    for (const reasoningEffort of ["off", undefined]) {
      const body = buildBody({ model: "m", maxTokens: 0, reasoningEffort }, supports, model, messages);
      expect(body).not.toHaveProperty("max_tokens");
      expect(body).not.toHaveProperty("reasoning_effort");
    }
  });

  it("follows every latch: no stream_options, relaxed tools, new ceiling spelling, no temperature, dropped fields", () => {
    const { supports, model } = fresh();
    supports.usageInStream = false;
    supports.strictSchemas = false;
    model.legacyTokenLimit = false;
    model.chosenTemperature = false;
    model.droppedFields.push("min_p");
    const strictTool = tool("t", {
      type: "object",
      properties: { q: { type: "string", pattern: "[a-z]+" } },
      required: ["q"],
      additionalProperties: false,
    });
    const body = buildBody(
      { model: "m", maxTokens: 10, temperature: 1, extraBody: { min_p: 0.1, top_k: 5, temperature: 0.5 } },
      supports,
      model,
      messages,
      [strictTool],
    );
    expect(body).not.toHaveProperty("stream_options");
    expect(body).toMatchObject({ max_completion_tokens: 10, top_k: 5 });
    expect(body).not.toHaveProperty("max_tokens");
    expect(body).not.toHaveProperty("temperature");
    expect(body).not.toHaveProperty("min_p");
    expect(body.tools).toHaveLength(1);
    expect(body.tools?.[0]).not.toEqual(strictTool);
  });

  it("merges extraBody last: it may set temperature and tool_choice", () => {
    const { supports, model } = fresh();
    const body = buildBody(
      {
        model: "m",
        temperature: 0.2,
        // A field the body owns set to undefined sends nothing and is let be.
        extraBody: { temperature: 0.9, id_slot: 2, tool_choice: "required", model: undefined },
      },
      supports,
      model,
      messages,
      [tool("a")],
    );
    expect(body).toMatchObject({
      model: "m",
      messages,
      stream: true,
      tools: [tool("a")],
      temperature: 0.9,
      id_slot: 2,
      tool_choice: "required",
    });
  });

  it("refuses an extraBody setting model, messages, stream or tools, naming the field and where it goes instead", () => {
    // Before: each was dropped without a word, and `extraBody: { model: "x" }` went to "m".
    const { supports, model } = fresh();
    const cases: [Record<string, unknown>, string][] = [
      [
        { model: "x" },
        "config.extraBody sets \"model\", a field buildBody writes itself (the request names the model it is built for: config.model, a step plan's model, a side task's model argument): take it out of extraBody.",
      ],
      [{ model: null }, 'config.extraBody sets "model"'],
      [
        { messages: [] },
        `config.extraBody sets "messages", a field buildBody writes itself (${OWNED_BODY_FIELDS.messages})`,
      ],
      [
        { stream: false },
        `config.extraBody sets "stream", a field buildBody writes itself (${OWNED_BODY_FIELDS.stream})`,
      ],
      [
        { tools: [] },
        `config.extraBody sets "tools", a field buildBody writes itself (${OWNED_BODY_FIELDS.tools})`,
      ],
    ];
    for (const [extraBody, words] of cases) {
      const call = () => buildBody({ model: "m", extraBody }, supports, model, messages, [tool("a")]);
      expect(call).toThrow(TypeError);
      expect(call).toThrow(`buildBody: ${words}`);
    }
  });

  it("lists the fields it owns in one frozen table a caller can read, and lets stream_options through it", () => {
    expect(Object.keys(OWNED_BODY_FIELDS).sort()).toEqual(["messages", "model", "stream", "tools"]);
    expect(Object.isFrozen(OWNED_BODY_FIELDS)).toBe(true);
    // On no prototype: a body field named as Object.prototype's members is no owned field.
    const lookup = OWNED_BODY_FIELDS as Readonly<Record<string, string | undefined>>;
    expect([lookup.constructor, lookup.toString, lookup.__proto__]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    const { supports, model } = fresh();
    // vLLM's usage on every chunk: the config's stream_options replaces the body's own whole.
    const stream_options = { include_usage: true, continuous_usage_stats: true };
    const body = buildBody({ model: "m", extraBody: { stream_options } }, supports, model, messages);
    expect(body.stream_options).toEqual(stream_options);
    // Left out, as the body's own is, once the endpoint refused stream_options.
    const refused = buildBody(
      { model: "m", extraBody: { stream_options } },
      { ...supports, usageInStream: false },
      model,
      messages,
    );
    expect(refused).not.toHaveProperty("stream_options");
  });

  it("keeps the caller's tool order with false and takes a comparator", () => {
    const { supports, model } = fresh();
    const tools = [tool("b"), tool("c"), tool("a")];
    expect(buildBody({ model: "m" }, supports, model, messages, tools, false).tools).toEqual(tools);
    const reverse = (x: ToolDefinition, y: ToolDefinition) => y.function.name.localeCompare(x.function.name);
    expect(
      buildBody({ model: "m" }, supports, model, messages, tools, reverse).tools?.map((t) => t.function.name),
    ).toEqual(["c", "b", "a"]);
  });

  it("takes the order as its last argument, alone or as options.order beside a toolChoice", () => {
    const { supports, model } = fresh();
    const tools = [tool("b"), tool("c"), tool("a")];
    const reverse = (x: ToolDefinition, y: ToolDefinition) => y.function.name.localeCompare(x.function.name);
    const names = (last: Parameters<typeof buildBody>[5]) =>
      buildBody({ model: "m" }, supports, model, messages, tools, last).tools?.map((t) => t.function.name);
    expect(names({ order: false })).toEqual(["b", "c", "a"]);
    expect(names({ order: reverse })).toEqual(["c", "b", "a"]);
    expect(names({})).toEqual(["a", "b", "c"]);
    expect(names({ order: undefined, toolChoice: undefined })).toEqual(["a", "b", "c"]);
    const options: BuildBodyOptions = { order: false, toolChoice: "required" };
    const body = buildBody({ model: "m" }, supports, model, messages, tools, options);
    expect(body.tools?.map((t) => t.function.name)).toEqual(["b", "c", "a"]);
    expect(body.tool_choice).toBe("required");
  });

  it("refuses a last argument that is neither an order nor its options, naming it and what is wrong", () => {
    const { supports, model } = fresh();
    const last = (value: unknown) => () =>
      buildBody({ model: "m" }, supports, model, messages, [tool("a")], value as never);
    for (const value of ["name", 0, 1, [false], 5n]) {
      expect(last(value)).toThrow(TypeError);
      expect(last(value)).toThrow(
        /^buildBody: the last argument must be a tool order .* or \{ order\?, toolChoice\? \}/,
      );
    }
    // A misspelt option would otherwise be ignored and the tools sent in another order than meant.
    expect(last({ toolOrder: false })).toThrow(TypeError);
    expect(last({ toolOrder: false })).toThrow(
      'buildBody: options has no "toolOrder"; it takes order and toolChoice.',
    );
    expect(last({ tool_choice: "none" })).toThrow('buildBody: options has no "tool_choice"');
    expect(last({ order: "name" })).toThrow(TypeError);
    expect(last({ order: "name" })).toThrow(
      'buildBody: options.order must be true (by name), false (as given) or a comparator; got "name".',
    );
    expect(last({ order: null })).toThrow("buildBody: options.order must be");
    // null is no options, as elsewhere in the package.
    expect(
      buildBody({ model: "m" }, supports, model, messages, [tool("b"), tool("a")], null as never).tools,
    ).toEqual([tool("a"), tool("b")]);
  });

  it("never mutates its arguments", () => {
    const { supports, model } = fresh();
    const tools = [tool("b"), tool("a")];
    const config = { model: "m", extraBody: { top_k: 1 } };
    const before = JSON.stringify({ tools, config, messages });
    buildBody(config, supports, model, messages, tools);
    expect(JSON.stringify({ tools, config, messages })).toBe(before);
  });

  it("refuses arguments of the wrong type by name, rather than spreading a string or crashing inside", () => {
    const { supports, model } = fresh();
    const wrong: [string, () => unknown][] = [
      ["messages", () => buildBody({ model: "m" }, supports, model, "hello" as never)],
      ["messages", () => buildBody({ model: "m" }, supports, model, null as never)],
      ["messages", () => buildBody({ model: "m" }, supports, model, { role: "user" } as never)],
      ["tools", () => buildBody({ model: "m" }, supports, model, messages, "abc" as never)],
      ["tools", () => buildBody({ model: "m" }, supports, model, messages, null as never)],
      ["tools", () => buildBody({ model: "m" }, supports, model, messages, tool("a") as never)],
      [
        "config.extraBody",
        () => buildBody({ model: "m", extraBody: "top_k" as never }, supports, model, messages),
      ],
      [
        "config.extraBody",
        () => buildBody({ model: "m", extraBody: [1] as never }, supports, model, messages),
      ],
      [
        "config.maxTokens",
        () => buildBody({ model: "m", maxTokens: "100" as never }, supports, model, messages),
      ],
      [
        "config.temperature",
        () => buildBody({ model: "m", temperature: "hot" as never }, supports, model, messages),
      ],
      [
        "config.reasoningEffort",
        () => buildBody({ model: "m", reasoningEffort: 5 as never }, supports, model, messages),
      ],
      ["supports", () => buildBody({ model: "m" }, null as never, model, messages)],
      ["model", () => buildBody({ model: "m", reasoningEffort: "low" }, supports, {} as never, messages)],
      ["model", () => buildBody({ model: "m" }, supports, "m" as never, messages)],
    ];
    for (const [name, call] of wrong) {
      expect(call).toThrow(TypeError);
      expect(call).toThrow(`buildBody: ${name} must`);
    }
  });

  it("refuses a ceiling that is not a whole number from 0, and a temperature that is not finite, naming the value", () => {
    const { supports, model } = fresh();
    const bad: [Partial<ModelParams>, RegExp][] = [
      [{ maxTokens: Number.POSITIVE_INFINITY }, /config\.maxTokens must be a whole number.*got Infinity/],
      [{ maxTokens: Number.NaN }, /config\.maxTokens must be a whole number.*got NaN/],
      [{ maxTokens: -5 }, /config\.maxTokens must be a whole number.*got -5/],
      [{ maxTokens: 1.5 }, /config\.maxTokens must be a whole number.*got 1\.5/],
      [{ maxTokens: 2 ** 60 }, /config\.maxTokens must be a whole number.*got 1152921504606847000/],
      [{ temperature: Number.NaN }, /config\.temperature must be a finite number.*got NaN/],
      [
        { temperature: Number.POSITIVE_INFINITY },
        /config\.temperature must be a finite number.*got Infinity/,
      ],
      [
        { temperature: Number.NEGATIVE_INFINITY },
        /config\.temperature must be a finite number.*got -Infinity/,
      ],
    ];
    for (const [given, message] of bad) {
      // An absent model (no temperature sent) is refused too: the config is wrong whatever is sent.
      for (const caps of [model, undefined]) {
        const call = () => buildBody({ model: "m", ...given }, supports, caps, messages);
        expect(call).toThrow(RangeError);
        expect(call).toThrow(message);
      }
    }
    // What stays allowed: 0 (no ceiling), a whole ceiling, any finite temperature (a server judges its range).
    expect(buildBody({ model: "m", maxTokens: 0 }, supports, model, messages)).not.toHaveProperty(
      "max_tokens",
    );
    const body = buildBody({ model: "m", maxTokens: 7, temperature: -0.5 }, supports, model, messages);
    expect(body).toMatchObject({ max_tokens: 7, temperature: -0.5 });
    expect(JSON.parse(JSON.stringify(body))).toMatchObject({ max_tokens: 7, temperature: -0.5 });
  });

  it("refuses a config without a model name with a clear error", () => {
    const { supports } = fresh();
    expect(() => buildBody({ model: "" }, supports, undefined, messages)).toThrow(/config\.model/);
  });
});

describe("buildBody's tool_choice", () => {
  const named = { type: "function", function: { name: "a" } } as const;

  it("sends a step's tool_choice beside the tools, and none where no tools go", () => {
    const { supports, model } = fresh();
    for (const choice of ["auto", "none", "required", named] as const) {
      const body = buildBody({ model: "m" }, supports, model, messages, [tool("a")], { toolChoice: choice });
      expect(body.tool_choice).toEqual(choice);
      expect(body.tools).toEqual([tool("a")]);
    }
    // tool_choice without tools is refused by OpenAI ("only allowed when tools are specified").
    const bare = buildBody({ model: "m" }, supports, model, messages, [], { toolChoice: "none" });
    expect(bare).not.toHaveProperty("tool_choice");
    expect(bare).not.toHaveProperty("tools");
  });

  it("puts the step's choice over an extraBody tool_choice, and leaves extraBody's alone without one", () => {
    const { supports, model } = fresh();
    const config = { model: "m", extraBody: { tool_choice: "required" } };
    expect(
      buildBody(config, supports, model, messages, [tool("a")], { toolChoice: "none" }).tool_choice,
    ).toBe("none");
    expect(buildBody(config, supports, model, messages, [tool("a")]).tool_choice).toBe("required");
  });

  it("after the model refused tool_choice: sends none (extraBody's too), and a 'none' step goes without tools", () => {
    const { supports, model } = fresh();
    model.toolChoice = false;
    const config = { model: "m", extraBody: { tool_choice: "auto" } };
    const required = buildBody(config, supports, model, messages, [tool("a")], { toolChoice: "required" });
    expect(required).not.toHaveProperty("tool_choice");
    expect(required.tools).toEqual([tool("a")]);
    const none = buildBody(config, supports, model, messages, [tool("a")], { toolChoice: "none" });
    expect(none).not.toHaveProperty("tool_choice");
    expect(none).not.toHaveProperty("tools");
  });

  it("refuses a tool_choice that is none of the four forms, naming what it got", () => {
    const { supports, model } = fresh();
    const circular: Record<string, unknown> = { type: "function" };
    circular.function = circular;
    const bad: unknown[] = [
      "never",
      "",
      42,
      null,
      { type: "function" },
      { type: "function", function: { name: "" } },
      { type: "tool", function: { name: "a" } },
      { function: { name: "a" } },
      5n,
      { type: "function", function: { name: 7n } },
      circular,
    ];
    for (const choice of ["auto", "none", "required", named]) expect(isToolChoice(choice)).toBe(true);
    for (const choice of bad) {
      expect(isToolChoice(choice)).toBe(false);
      const call = () =>
        buildBody({ model: "m" }, supports, model, messages, [tool("a")], { toolChoice: choice as never });
      expect(call).toThrow(TypeError);
      expect(call).toThrow(
        /buildBody: options.toolChoice must be "auto", "none", "required" or \{ type: "function", function: \{ name \} \}/,
      );
    }
    const call = (choice: unknown) => () =>
      buildBody({ model: "m" }, supports, model, messages, [tool("a")], { toolChoice: choice as never });
    expect(call(5n)).toThrow(/; got 5n\.$/);
    expect(call(circular)).toThrow("[Circular *1]");
  });
});
