import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ToolCallsError } from "./errors.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

// The recordings the testkit publishes, read in place (this package does not depend on the testkit).
const fixtures =
  process.env.LOOPWRIGHT_FIXTURES ??
  resolve(dirname(fileURLToPath(import.meta.url)), "../../testkit/recordings");
const read = (rel: string) => readFileSync(join(fixtures, rel), "utf8");

describe("recoverToolCalls on recorded model output", () => {
  it("recovers the Hermes call vLLM left in content (arguments before name)", () => {
    // The issue pasted the content JSON-escaped, without the surrounding quotes.
    const content = JSON.parse(
      `"${read("wire/vllm/hermes-2-pro-raw-tool-call-markup-in-content.txt").trim()}"`,
    ) as string;
    const out = recoverToolCalls(content, ["get_current_weather"]);
    expect(out.calls).toEqual([
      {
        id: "call_recovered_0",
        name: "get_current_weather",
        args: { city: "Dallas", state: "TX", unit: "fahrenheit" },
        raw: '{"city":"Dallas","state":"TX","unit":"fahrenheit"}',
      },
    ]);
    expect(out.text).toBe("");
  });

  it("leaves that call in the text when no such tool exists", () => {
    const content = JSON.parse(
      `"${read("wire/vllm/hermes-2-pro-raw-tool-call-markup-in-content.txt").trim()}"`,
    ) as string;
    expect(recoverToolCalls(content, ["get_weather"])).toEqual({ calls: [], text: content });
  });

  it("recovers the Harmony commentary call trtllm leaked, naming the one tool whose parameters fit", () => {
    const content = JSON.parse(
      read("wire/trtllm/gpt-oss-120b-harmony-tokens-leaked-into-content.json-string.txt"),
    ) as string;
    const tools = [
      {
        type: "function",
        function: {
          name: "find_files",
          parameters: {
            type: "object",
            properties: {
              path: { type: "string" },
              name_pattern: { type: "string" },
              type_filter: { type: "string" },
            },
            required: ["path"],
          },
        },
      },
      {
        type: "function",
        function: {
          name: "read_file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
        },
      },
    ];
    const out = recoverToolCalls(content, tools);
    expect(out.calls).toHaveLength(1);
    expect(out.calls[0]?.name).toBe("find_files");
    expect(out.calls[0]?.args).toEqual({ path: "/", name_pattern: "*Chen*", type_filter: "file" });
    expect(out.text).toBe("");
    // With nothing to tell which tool was meant, nothing is guessed.
    expect(recoverToolCalls(content, ["find_files", "read_file"]).calls).toEqual([]);
  });

  it("leaves llama.cpp's unfinished <tool_call> text alone (tool_choice none, live capture)", () => {
    const response = read("llamacpp-live/16-tools-none.response.txt");
    const body = JSON.parse(response.slice(response.indexOf("{"))) as {
      choices: Array<{ message: { content: string } }>;
    };
    const content = body.choices[0]?.message.content as string;
    expect(content.startsWith("<tool_call>")).toBe(true);
    expect(recoverToolCalls(content, ["get_weather", "add"])).toEqual({ calls: [], text: content });
  });
});

describe("recoverToolCalls in each format", () => {
  const tools = ["get_weather", "add"];

  it("reads Qwen3-Coder markup, typing parameters by the tool's schema", () => {
    const text = [
      "Let me check.",
      "<tool_call>",
      "<function=add>",
      "<parameter=a>",
      "2",
      "</parameter>",
      "<parameter=label>",
      "007",
      "</parameter>",
      "</function>",
      "</tool_call>",
    ].join("\n");
    const schema = { type: "object", properties: { a: { type: "integer" }, label: { type: "string" } } };
    const out = recoverToolCalls(text, [{ name: "add", inputSchema: schema }]);
    expect(out.calls[0]?.args).toEqual({ a: 2, label: "007" });
    expect(out.text).toBe("Let me check.");
  });

  it("types a parameter through definitions that refer to each other, whichever is read first", () => {
    // Tree = anyOf [Leaf, string] and Leaf = anyOf [Tree, integer]: each takes a string or an
    // integer. Reading one met the other half-read; that half-reading was kept as "any value" for
    // the rest of the call, so "7" (text the schema takes) was handed on as the number 7.
    // Strict = a string narrowed by Loose, and Loose = anyOf [Strict, integer]: Loose takes a
    // string once Strict is read first too.
    const $defs = {
      Tree: { anyOf: [{ $ref: "#/$defs/Leaf" }, { type: "string" }] },
      Leaf: { anyOf: [{ $ref: "#/$defs/Tree" }, { type: "integer" }] },
      Strict: { type: "string", allOf: [{ $ref: "#/$defs/Loose" }] },
      Loose: { anyOf: [{ $ref: "#/$defs/Strict" }, { type: "integer" }] },
    };
    const ref = (name: string) => ({ $ref: `#/$defs/${name}` });
    const read = (keys: string[]) => {
      const properties = Object.fromEntries(keys.map((k) => [k, ref(k)]));
      const body = keys.map((k) => `<parameter=${k}>\n7\n</parameter>`).join("\n");
      const text = `<tool_call>\n<function=set>\n${body}\n</function>\n</tool_call>`;
      return recoverToolCalls(text, [{ name: "set", inputSchema: { type: "object", properties, $defs } }])
        .calls[0]?.args;
    };
    expect(read(["Leaf"])).toEqual({ Leaf: "7" });
    expect(read(["Tree", "Leaf"])).toEqual({ Tree: "7", Leaf: "7" });
    expect(read(["Loose"])).toEqual({ Loose: "7" });
    expect(read(["Strict", "Loose"])).toEqual({ Strict: "7", Loose: "7" });
  });

  it("keeps a parameter's text as written where the schema takes a string through a union, a $ref, an allOf or an enum", () => {
    // pydantic writes Optional[str] as anyOf [string, null], a named type as a $ref (v1 wraps it
    // in allOf), a Literal as an enum: "1984" and "1.10" are the text the model wrote, not numbers.
    const schema = {
      type: "object",
      properties: {
        query: { anyOf: [{ type: "string" }, { type: "null" }], default: null, title: "Query" },
        year: { anyOf: [{ type: "integer" }, { type: "null" }], default: null, title: "Year" },
        version: { $ref: "#/$defs/Version" },
        channel: { allOf: [{ $ref: "#/$defs/Channel" }], description: "Release channel." },
        answer: { enum: ["true", "false", "maybe"] },
        tag: { anyOf: [{ not: {} }, { type: "string" }] },
      },
      $defs: { Version: { type: "string", title: "Version" }, Channel: { enum: ["1", "2", "beta"] } },
    };
    const param = (key: string, value: string) => [`<parameter=${key}>`, value, "</parameter>"];
    const text = [
      "<tool_call>",
      "<function=search>",
      ...param("query", "1984"),
      ...param("year", "1984"),
      ...param("version", "1.10"),
      ...param("channel", "1"),
      ...param("answer", "true"),
      ...param("tag", "2024"),
      "</function>",
      "</tool_call>",
    ].join("\n");
    const out = recoverToolCalls(text, [{ name: "search", inputSchema: schema }]);
    expect(out.calls[0]?.args).toEqual({
      query: "1984",
      year: 1984,
      version: "1.10",
      channel: "1",
      answer: "true",
      tag: "2024",
    });
    const none = recoverToolCalls(
      "<tool_call>\n<function=search>\n<parameter=query>\nnull\n</parameter>\n</function>\n</tool_call>",
      [{ name: "search", inputSchema: schema }],
    );
    expect(none.calls[0]?.args).toEqual({ query: null });
  });

  it("reads a parameter of an enum of several types as the listed value its text spells", () => {
    const schema = {
      type: "object",
      properties: { size: { enum: [1, 2, "auto"] }, tier: { enum: ["1.10", 2] } },
    };
    const call = (size: string, tier: string) =>
      recoverToolCalls(
        `<tool_call>\n<function=pick>\n<parameter=size>\n${size}\n</parameter>\n<parameter=tier>\n${tier}\n</parameter>\n</function>\n</tool_call>`,
        [{ name: "pick", inputSchema: schema }],
      ).calls[0]?.args;
    expect(call("2", "1.10")).toEqual({ size: 2, tier: "1.10" });
    expect(call("auto", "2")).toEqual({ size: "auto", tier: 2 });
  });

  it("leaves no end-of-turn token behind in the text once the calls before it are taken out", () => {
    // A server that prints special tokens ends the reply with the template's end token: with the
    // call recovered, "</s>" or "<|im_end|>" was left as the turn's whole answer.
    const weather = '{"name": "get_weather", "arguments": {"city": "Oslo"}}';
    const replies = [
      '[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}</s>',
      `[TOOL_CALLS][${weather}]</s>`,
      `<tool_call>\n${weather}\n</tool_call><|im_end|>`,
      `<tool_call>\n${weather}\n</tool_call>\n<|im_end|>\n`,
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call><|im_end|>",
      '```tool_code\nget_weather(city="Oslo")\n```<end_of_turn>',
      '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|><|return|>',
    ];
    for (const reply of replies) {
      const out = recoverToolCalls(reply, tools);
      expect(
        out.calls.map((c) => [c.name, c.args]),
        reply,
      ).toEqual([["get_weather", { city: "Oslo" }]]);
      expect(out.text, reply).toBe("");
    }
    expect(recoverToolCalls(`Checking.\n<tool_call>\n${weather}\n</tool_call><|im_end|>`, tools).text).toBe(
      "Checking.",
    );
    // With no call found, the token is taken off all the same (r88: it reached the loop's answer).
    expect(recoverToolCalls("No tool needed.</s>", tools)).toEqual({ calls: [], text: "No tool needed." });
  });

  it("reads both Mistral spellings and Llama 3's python tag", () => {
    expect(
      recoverToolCalls('[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1}}]', tools).calls[0]?.args,
    ).toEqual({ a: 1 });
    const v11 = recoverToolCalls(
      '[TOOL_CALLS]add[ARGS]{"a": 1}[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}',
      tools,
    );
    expect(v11.calls.map((c) => [c.id, c.name])).toEqual([
      ["call_recovered_0", "add"],
      ["call_recovered_1", "get_weather"],
    ]);
    const llama = recoverToolCalls('<|python_tag|>{"name": "add", "parameters": {"a": 1}}<|eom_id|>', tools);
    expect(llama).toEqual({
      calls: [{ id: "call_recovered_0", name: "add", args: { a: 1 }, raw: '{"a":1}' }],
      text: "",
    });
  });

  it("reads a reply that is only a JSON call, or holds one fenced call, and nothing in plain prose", () => {
    expect(recoverToolCalls('{"name": "add", "arguments": "{\\"a\\": 1}"}', tools).calls[0]?.args).toEqual({
      a: 1,
    });
    const fenced = recoverToolCalls(
      'I will call it:\n```json\n{"name": "add", "arguments": {"a": 1}}\n```',
      tools,
    );
    expect(fenced.calls[0]?.name).toBe("add");
    expect(fenced.text).toBe("I will call it:");
    const prose = 'You could call {"name": "add", "arguments": {"a": 1}} yourself.';
    expect(recoverToolCalls(prose, tools)).toEqual({ calls: [], text: prose });
  });

  it("looks only after the last </think>", () => {
    const thinking = '<think>maybe <tool_call>{"name": "add", "arguments": {}}</tool_call></think>';
    expect(recoverToolCalls(`${thinking}Nothing to do.`, tools)).toEqual({
      calls: [],
      text: `${thinking}Nothing to do.`,
    });
    const out = recoverToolCalls(
      `${thinking}\n<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}`,
      tools,
    );
    expect(out.calls.map((c) => c.name)).toEqual(["get_weather"]);
    expect(out.text).toBe(thinking);
  });

  it("throws a ToolCallsError for input that is not text or a tool list", () => {
    expect(() => recoverToolCalls(undefined as never, tools)).toThrow(ToolCallsError);
    expect(() => recoverToolCalls("", "add" as never)).toThrow(/as an array/);
  });
});

const nameArb = fc.stringMatching(/^[a-z_][a-z0-9_]{0,11}$/);
const keyArb = fc.stringMatching(/^[a-z_][a-z0-9_]{0,7}$/);
const argsArb = fc
  .dictionary(keyArb, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
  .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>);

const FORMATS: Record<string, (name: string, args: Record<string, unknown>) => string> = {
  hermes: (name, args) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`,
  hermesUnclosed: (name, args) => `<tool_call>\n${JSON.stringify({ arguments: args, name })}`,
  qwen3Coder: (name, args) =>
    `<tool_call>\n<function=${name}>\n${Object.entries(args)
      .map(([k, v]) => `<parameter=${k}>\n${typeof v === "string" ? v : JSON.stringify(v)}\n</parameter>\n`)
      .join("")}</function>\n</tool_call>`,
  mistral: (name, args) => `[TOOL_CALLS] ${JSON.stringify([{ name, arguments: args }])}`,
  mistralArgs: (name, args) => `[TOOL_CALLS]${name}[ARGS]${JSON.stringify(args)}`,
  llama3: (name, args) => `<|python_tag|>${JSON.stringify({ name, parameters: args })}<|eom_id|>`,
  harmony: (name, args) =>
    `<|start|>assistant<|channel|>commentary to=functions.${name} <|constrain|>json<|message|>${JSON.stringify(args)}<|call|>`,
  bareJson: (name, args) => JSON.stringify({ name, arguments: args }),
  fenced: (name, args) => `\`\`\`json\n${JSON.stringify({ name, arguments: args }, null, 2)}\n\`\`\``,
};

function schemaFor(args: Record<string, unknown>): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    Object.defineProperty(properties, k, {
      value: {
        type: typeof v === "string" ? "string" : v === null ? "null" : Array.isArray(v) ? "array" : typeof v,
      },
      enumerable: true,
    });
  }
  return { type: "object", properties };
}

describe("recoverToolCalls (property tests)", () => {
  for (const [format, write] of Object.entries(FORMATS)) {
    it(`recovers any valid call written in the ${format} format exactly`, () => {
      fc.assert(
        fc.property(
          nameArb,
          argsArb,
          fc.constantFrom("", "<think>\nplanning\n</think>\n\n"),
          (name, args, think) => {
            if (format === "qwen3Coder" && JSON.stringify(args).includes("</parameter>")) return;
            const tools = [{ name, inputSchema: schemaFor(args) }, { name: `${name}_other` }];
            const out = recoverToolCalls(`${think}${write(name, args)}`, tools);
            expect(out.calls).toHaveLength(1);
            expect(out.calls[0]?.id).toBe("call_recovered_0");
            expect(out.calls[0]?.name).toBe(name);
            expect(out.calls[0]?.args).toEqual(args);
            expect(out.text).toBe(think.trim());
          },
        ),
        propertyRuns(150),
      );
    });
  }

  it("never throws on arbitrary text, including broken fragments of every format", () => {
    const fragment = fc.oneof(
      fc.string(),
      fc.constantFrom(
        "<tool_call>",
        "</tool_call>",
        "[TOOL_CALLS]",
        "[ARGS]",
        "[CALL_ID]",
        "<|python_tag|>",
        "<function=add>",
        "<parameter=a>",
        "</parameter>",
        "</function>",
        "</think>",
        "<|channel|>commentary to=functions.add",
        "<|message|>",
        "<|call|>",
        "```json\n",
        "```",
        "{",
        "}",
        "[",
        "]",
        '"name": "add"',
        '"arguments":',
        "'",
        '"',
        ";",
      ),
    );
    fc.assert(
      fc.property(fc.array(fragment, { maxLength: 12 }), (parts) => {
        const text = parts.join("");
        const out = recoverToolCalls(text, ["add", { name: "get", inputSchema: { properties: { a: {} } } }]);
        for (const call of out.calls) expect(["add", "get"]).toContain(call.name);
      }),
      propertyRuns(1000),
    );
  });
});
