import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" }, metric: { type: "boolean" } },
      required: ["city"],
    },
  },
};
const tools = [weather, "add", "ls", "read_file", "analysis_input", "get_ecs_instructions", "shell"];

const only = (text: string) => recoverToolCalls(text, tools);

describe("recoverToolCalls reads the formats of more model families (real wordings)", () => {
  it("reads DeepSeek V3/R1 token markup with its ```json fence", () => {
    // google/adk-python#5654 (DeepSeek-V3 via LiteLLM left the tokens in content).
    const text =
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>analysis_input\n```json\n{"work_dir_name":"reports"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    expect(only(text)).toEqual({
      calls: [
        {
          id: "call_recovered_0",
          name: "analysis_input",
          args: { work_dir_name: "reports" },
          raw: '{"work_dir_name":"reports"}',
        },
      ],
      text: "",
    });
  });

  it("reads DeepSeek V3.1 markup, several calls, and the ASCII spelling of its tokens", () => {
    const v31 =
      'Checking both.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>add<｜tool▁sep｜>{"a": 1, "b": 2}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>';
    const out = only(v31);
    expect(out.calls.map((c) => [c.id, c.name, c.args])).toEqual([
      ["call_recovered_0", "get_weather", { city: "Paris" }],
      ["call_recovered_1", "add", { a: 1, b: 2 }],
    ]);
    expect(out.text).toBe("Checking both.");
    // tenstorrent/tt-inference-server#3683: the tokens printed with ASCII bars and underscores.
    const ascii =
      '<|tool_calls_begin|><|tool_call_begin|>function<|tool_sep|>get_weather\n```json\n{"city":"San Francisco"}\n```<|tool_call_end|><|tool_calls_end|>';
    expect(only(ascii).calls[0]?.args).toEqual({ city: "San Francisco" });
    expect(only(ascii).text).toBe("");
  });

  it("reads Kimi K2's sections, dropping the functions. prefix and :index", () => {
    // Shape from ikawrakow/ik_llama.cpp@examples/server/function_calls.md.
    const text =
      'Let me look.\n<|tool_calls_section_begin|>\n<|tool_call_begin|>\nfunctions.get_weather:0<|tool_call_argument_begin|>\n{"city": "Tokyo"}\n<|tool_call_end|>\n<|tool_call_begin|>functions.add:1<|tool_call_argument_begin|>{"a": 2}<|tool_call_end|>\n<|tool_calls_section_end|>';
    const out = only(text);
    expect(out.calls.map((c) => [c.name, c.args])).toEqual([
      ["get_weather", { city: "Tokyo" }],
      ["add", { a: 2 }],
    ]);
    expect(out.text).toBe("Let me look.");
  });

  it("reads GLM-4.5's arg_key/arg_value markup, typing values by the schema", () => {
    // ikawrakow/ik_llama.cpp discussion #753 (GLM-4.5-Air output that broke Continue.dev).
    const glm =
      "Let me search for configuration files in the backend directory to help locate this information: <tool_call>ls <arg_key>dirPath</arg_key> <arg_value>backend</arg_value> </tool_call>";
    const out = only(glm);
    expect(out.calls).toEqual([
      { id: "call_recovered_0", name: "ls", args: { dirPath: "backend" }, raw: '{"dirPath":"backend"}' },
    ]);
    expect(out.text).toBe(
      "Let me search for configuration files in the backend directory to help locate this information:",
    );
    const typed = only(
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>007</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n<arg_key>metric</arg_key>\n<arg_value>true</arg_value>\n</tool_call>",
    );
    expect(typed.calls[0]?.args).toEqual({ city: "007", days: 3, metric: true });
    expect(only("<tool_call>add</tool_call>").calls[0]).toMatchObject({ name: "add", args: {} });
  });

  it("reads gpt-oss Harmony headers: raw, with the json glued to the name, and with tokens stripped", () => {
    // lmstudio-ai/lmstudio-bug-tracker#942 (the model output LM Studio failed to parse).
    const lmstudio =
      '<|start|>assistant<|channel|>commentary to=functions.get_ecs_instructions<|constrain|>json<|message|>{"data":{"envs":{"sd":{"cpu":"100m"}}}}';
    expect(only(lmstudio).calls[0]).toMatchObject({
      name: "get_ecs_instructions",
      args: { data: { envs: { sd: { cpu: "100m" } } } },
    });
    // ggml-org/llama.cpp#15158: "NAMEjson" with no space before the content type.
    const glued =
      '<|start|>assistant<|channel|>commentary to=functions.shelljson<|message|>{"cmd":["ls"]}<|call|>';
    expect(only(glued).calls[0]).toMatchObject({ name: "shell", args: { cmd: ["ls"] } });
    // A server decoding with skip_special_tokens leaves the header words run together.
    const stripped =
      'analysisNeed the weather.assistantcommentary to=functions.get_weather json{"city":"Oslo"}';
    const out = only(stripped);
    expect(out.calls[0]).toMatchObject({ name: "get_weather", args: { city: "Oslo" } });
    expect(out.text).toBe("analysisNeed the weather.");
  });

  it("reads Llama 3.1's <function=name>{…}</function>, also several in a row", () => {
    const text =
      'I will call both. <function=get_weather>{"city": "Rome"}</function><function=add>{"a": 1}</function>';
    const out = only(text);
    expect(out.calls.map((c) => [c.name, c.args, c.raw])).toEqual([
      ["get_weather", { city: "Rome" }, '{"city": "Rome"}'],
      ["add", { a: 1 }, '{"a": 1}'],
    ]);
    expect(out.text).toBe("I will call both.");
  });

  it("reads Hermes with the closing tag missing, and several calls in one block", () => {
    const unclosed = only(
      '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n<tool_call>\n{"name": "ls", "arguments": {}}',
    );
    expect(unclosed.calls.map((c) => c.name)).toEqual(["add", "ls"]);
    expect(unclosed.text).toBe("");
    const block = only(
      '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n{"name": "get_weather", "arguments": {"city": "Lima"}}\n</tool_call>',
    );
    expect(block.calls.map((c) => c.name)).toEqual(["add", "get_weather"]);
    expect(block.text).toBe("");
    const list = only(
      '<tool_call>[{"name": "add", "arguments": {}}, {"name": "ls", "arguments": {}}]</tool_call>',
    );
    expect(list.calls.map((c) => c.id)).toEqual(["call_recovered_0", "call_recovered_1"]);
  });

  it("reads a reply of JSON calls one after another, with an end-of-turn token left after them", () => {
    const llama = only(
      '{"name": "get_weather", "parameters": {"city": "Oslo"}}; {"name": "add", "parameters": {"a": 1}}<|eot_id|>',
    );
    expect(llama.calls.map((c) => [c.name, c.args])).toEqual([
      ["get_weather", { city: "Oslo" }],
      ["add", { a: 1 }],
    ]);
    expect(llama.text).toBe("");
    expect(only('{"name": "add", "arguments": {"a": 2}}<|im_end|>').calls[0]?.args).toEqual({ a: 2 });
    const prose = '{"name": "add", "arguments": {"a": 2}} is how you would call it.';
    expect(only(prose)).toEqual({ calls: [], text: prose });
  });

  it("reads Granite's <|tool_call|>, LM Studio's [TOOL_REQUEST] and Phi-4's functools[…]", () => {
    const granite = only('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Boston"}}]');
    expect(granite.calls[0]).toMatchObject({ name: "get_weather", args: { city: "Boston" } });
    const lmstudio = only(
      '[TOOL_REQUEST]\n{"name": "add", "arguments": {"a": 5}}\n[END_TOOL_REQUEST]\nDone.',
    );
    expect(lmstudio.calls[0]).toMatchObject({ name: "add", args: { a: 5 } });
    expect(lmstudio.text).toBe("Done.");
    const phi = only('functools[{"name": "ls", "arguments": {"dirPath": "/"}}]');
    expect(phi.calls[0]).toMatchObject({ name: "ls", args: { dirPath: "/" } });
  });

  it("reads Functionary v3 (>>>name) and v2 (<|recipient|>) calls", () => {
    const v3 = only('>>>all\nLet me check.>>>get_weather\n{"city": "Kyiv"}>>>add\n{"a": 1}');
    expect(v3.calls.map((c) => [c.name, c.args])).toEqual([
      ["get_weather", { city: "Kyiv" }],
      ["add", { a: 1 }],
    ]);
    expect(v3.text).toBe("Let me check.");
    const first = only('get_weather\n{"city": "Riga"}');
    expect(first.calls[0]).toMatchObject({ name: "get_weather", args: { city: "Riga" } });
    const v2 = only('<|from|>assistant\n<|recipient|>add\n<|content|>{"a": 3}<|stop|>');
    expect(v2).toEqual({
      calls: [{ id: "call_recovered_0", name: "add", args: { a: 3 }, raw: '{"a": 3}' }],
      text: "",
    });
  });

  it("reads MiniMax-M2 and DeepSeek V3.2 invoke markup", () => {
    const minimax = only(
      '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">New York</parameter>\n<parameter name="days">2</parameter>\n</invoke>\n</minimax:tool_call>',
    );
    expect(minimax).toEqual({
      calls: [
        {
          id: "call_recovered_0",
          name: "get_weather",
          args: { city: "New York", days: 2 },
          raw: '{"city":"New York","days":2}',
        },
      ],
      text: "",
    });
    const dsml = only(
      '<｜DSML｜function_calls>\n<｜DSML｜invoke name="add">\n<｜DSML｜parameter name="a" string="false">7</｜DSML｜parameter>\n<｜DSML｜parameter name="note" string="true">42</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
    );
    expect(dsml.calls[0]?.args).toEqual({ a: 7, note: "42" });
    expect(dsml.text).toBe("");
  });

  it("reads a fenced tool_calls list in OpenAI's message shape, and multi_tool_use.parallel", () => {
    const fenced = only(
      'Calling now:\n```json\n{"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Nice\\"}"}}, {"type": "function", "function": {"name": "add", "arguments": {"a": 1}}}]}\n```',
    );
    expect(fenced.calls.map((c) => [c.id, c.name, c.args])).toEqual([
      ["call_recovered_0", "get_weather", { city: "Nice" }],
      ["call_recovered_1", "add", { a: 1 }],
    ]);
    expect(fenced.text).toBe("Calling now:");
    const parallel = only(
      '{"tool_uses": [{"recipient_name": "functions.add", "parameters": {"a": 1}}, {"recipient_name": "functions.ls", "parameters": {}}]}',
    );
    expect(parallel.calls.map((c) => c.name)).toEqual(["add", "ls"]);
  });

  it("reads Gemma 4's <|tool_call>call:name{…} with its <|\"|> strings, and FunctionGemma's", () => {
    // Wire format as documented by a vLLM Gemma4ToolParser plugin and seen in a public tool-use
    // eval log: `<|tool_call>call:bash{command:<|"|>grep -r "TODO"…`.
    const gemma4 = only(
      'Let me check.<|tool_call>call:get_weather{city:<|"|>Paris, {FR}<|"|>,days:3,metric:true,tags:[<|"|>a<|"|>,null]}<tool_call|>',
    );
    expect(gemma4.calls[0]).toMatchObject({
      name: "get_weather",
      args: { city: "Paris, {FR}", days: 3, metric: true, tags: ["a", null] },
    });
    expect(gemma4.text).toBe("Let me check.");
    const grep = recoverToolCalls('<|tool_call>call:bash{command:<|"|>grep -r "TODO" .<|"|>}<tool_call|>', [
      "bash",
    ]);
    expect(grep.calls[0]?.args).toEqual({ command: 'grep -r "TODO" .' });
    const functionGemma = only(
      "<start_function_call>call:ls{dirPath:<escape>/tmp<escape>}<end_function_call>",
    );
    expect(functionGemma).toEqual({
      calls: [{ id: "call_recovered_0", name: "ls", args: { dirPath: "/tmp" }, raw: '{"dirPath":"/tmp"}' }],
      text: "",
    });
  });

  it("reads pythonic calls from Llama 3.2/4, Llama 3.1's built-in tools and inside a <tool_call>", () => {
    // The shape vLLM's `pythonic` tool parser documents for Llama 3.2 and Llama 4.
    const listed = only("[get_weather(city='San Francisco', days=3, metric=True), add(a=1, b=-2.5)]");
    expect(listed.calls.map((c) => [c.name, c.args])).toEqual([
      ["get_weather", { city: "San Francisco", days: 3, metric: true }],
      ["add", { a: 1, b: -2.5 }],
    ]);
    expect(listed.text).toBe("");
    const builtin = recoverToolCalls('<|python_tag|>brave_search.call(query="llama 4 release")<|eom_id|>', [
      "brave_search",
    ]);
    expect(builtin).toEqual({
      calls: [
        {
          id: "call_recovered_0",
          name: "brave_search",
          args: { query: "llama 4 release" },
          raw: '{"query":"llama 4 release"}',
        },
      ],
      text: "",
    });
    const tagged = only('<tool_call>get_weather(city="Lyon, FR", tags=["a"], opts={"k": None})</tool_call>');
    expect(tagged.calls[0]?.args).toEqual({ city: "Lyon, FR", tags: ["a"], opts: { k: null } });
    // An apostrophe inside a single-quoted value: the call was missed, left as the whole answer.
    const apostrophe = only("[get_weather(city='Martha's Vineyard', days=2)]");
    expect(apostrophe.calls.map((c) => [c.name, c.args])).toEqual([
      ["get_weather", { city: "Martha's Vineyard", days: 2 }],
    ]);
    expect(apostrophe.text).toBe("");
    const fencedApostrophe = only("```tool_code\nget_weather(city='Land's End')\n```");
    expect(fencedApostrophe.calls[0]?.args).toEqual({ city: "Land's End" });
    // Gemma 3's prompted form (ai.google.dev function-calling guide): a ```tool_code fence.
    const toolCode = only('I\'ll look that up.\n```tool_code\nget_weather(city="London")\n```');
    expect(toolCode.calls[0]).toMatchObject({ name: "get_weather", args: { city: "London" } });
    expect(toolCode.text).toBe("I'll look that up.");
    // Positional arguments, variables and prose around a call are code or talk, not a call.
    for (const text of ["add(1, 2)", "[get_weather(city=home)]", "Try get_weather(city='Paris') later."]) {
      expect(only(text), text).toEqual({ calls: [], text });
    }
  });

  it("recovers nothing from any of these formats when the tool does not exist", () => {
    for (const text of [
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
      "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
      "<tool_call>get_time\n<arg_key>zone</arg_key><arg_value>UTC</arg_value></tool_call>",
      '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"zone":"UTC"}<|call|>',
      '<function=get_time>{"zone": "UTC"}</function>',
      '<|tool_call|>[{"name": "get_time", "arguments": {}}]',
      '>>>get_time\n{"zone": "UTC"}',
      '<invoke name="get_time"><parameter name="zone">UTC</parameter></invoke>',
      '```json\n{"tool_calls": [{"function": {"name": "get_time", "arguments": "{}"}}]}\n```',
      "[get_time(zone='UTC')]",
      '<|tool_call>call:get_time{zone:<|"|>UTC<|"|>}<tool_call|>',
    ]) {
      expect(only(text), text).toEqual({ calls: [], text });
    }
  });

  it("looks only after the last </think> for every new format", () => {
    const inThinking =
      '<think>I could write <|tool_calls_section_begin|><|tool_call_begin|>functions.add:0<|tool_call_argument_begin|>{"a":1}<|tool_call_end|><|tool_calls_section_end|> or >>>add\n{"a":1}</think>The answer is 2.';
    expect(only(inThinking)).toEqual({ calls: [], text: inThinking });
  });

  it("leaves prose that merely names a tool alone", () => {
    for (const text of [
      "You can use add to sum numbers.",
      "add\nthen subtract",
      "The tool_call was <tool_call> and nothing else.",
      "Set to=functions later.",
      "Use get_weather {city} to check.",
    ]) {
      expect(only(text), text).toEqual({ calls: [], text });
    }
  });
});

const nameArb = fc
  .stringMatching(/^[a-z_][a-z0-9_]{0,11}$/)
  .filter((n) => n !== "all" && n !== "function" && !n.endsWith("json"));
const keyArb = fc.stringMatching(/^[a-z_][a-z0-9_]{0,7}$/);
const argsArb = fc
  .dictionary(keyArb, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
  .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>);

const asText = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

const LITERAL_WORDS = new Set(["true", "false", "null", "none", "undefined", "True", "False", "None"]);

/** A JSON value as Gemma 4 writes an argument: `<|"|>` strings, bare keys (quoted when they cannot be bare). */
function gemma(v: unknown): string {
  if (typeof v === "string") return `<|"|>${v}<|"|>`;
  if (Array.isArray(v)) return `[${v.map(gemma).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(
        ([k, x]) => `${/^[A-Za-z_]\w*$/.test(k) && !LITERAL_WORDS.has(k) ? k : `<|"|>${k}<|"|>`}:${gemma(x)}`,
      )
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/** A JSON value as a Python literal (True/False/None; strings and numbers as JSON writes them). */
function py(v: unknown): string {
  if (v === null) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (Array.isArray(v)) return `[${v.map(py).join(", ")}]`;
  if (typeof v === "object") {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${JSON.stringify(k)}: ${py(x)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(v);
}

/** Every new format, as the model writes one call in it. */
const FORMATS: Record<string, (name: string, args: Record<string, unknown>) => string> = {
  deepseekV3: (name, args) =>
    `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n${JSON.stringify(args)}\n\`\`\`<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
  deepseekV31: (name, args) =>
    `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>${name}<｜tool▁sep｜>${JSON.stringify(args)}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
  kimiK2: (name, args) =>
    `<|tool_calls_section_begin|><|tool_call_begin|>functions.${name}:0<|tool_call_argument_begin|>${JSON.stringify(args)}<|tool_call_end|><|tool_calls_section_end|>`,
  glm45: (name, args) =>
    `<tool_call>${name}\n${Object.entries(args)
      .map(([k, v]) => `<arg_key>${k}</arg_key>\n<arg_value>${asText(v)}</arg_value>\n`)
      .join("")}</tool_call>`,
  harmonyRecipientFirst: (name, args) =>
    `<|start|>assistant to=functions.${name}<|channel|>commentary json<|message|>${JSON.stringify(args)}<|call|>`,
  harmonyStripped: (name, args) => `commentary to=functions.${name} json${JSON.stringify(args)}`,
  llama31Function: (name, args) => `<function=${name}>${JSON.stringify(args)}</function>`,
  granite: (name, args) => `<|tool_call|>${JSON.stringify([{ name, arguments: args }])}`,
  lmstudio: (name, args) =>
    `[TOOL_REQUEST]\n${JSON.stringify({ name, arguments: args })}\n[END_TOOL_REQUEST]`,
  functionaryV3: (name, args) => `>>>${name}\n${JSON.stringify(args)}`,
  functionaryV2: (name, args) =>
    `<|from|>assistant\n<|recipient|>${name}\n<|content|>${JSON.stringify(args)}`,
  minimax: (name, args) =>
    `<minimax:tool_call>\n<invoke name="${name}">\n${Object.entries(args)
      .map(([k, v]) => `<parameter name="${k}">${asText(v)}</parameter>\n`)
      .join("")}</invoke>\n</minimax:tool_call>`,
  gemma4: (name, args) => `<|tool_call>call:${name}${gemma(args)}<tool_call|>`,
  pythonic: (name, args) =>
    `[${name}(${Object.entries(args)
      .map(([k, v]) => `${k}=${py(v)}`)
      .join(", ")})]`,
  fencedToolCalls: (name, args) =>
    `\`\`\`json\n${JSON.stringify({ tool_calls: [{ id: "call_x", type: "function", function: { name, arguments: JSON.stringify(args) } }] }, null, 2)}\n\`\`\``,
};

/** Formats whose values are written as raw markup text, with the tags that would end a value. */
const MARKUP_STOPS: Record<string, string[]> = {
  glm45: ["</arg_value>", "<arg_key>", "</arg_key>", "</tool_call>"],
  minimax: ["</parameter>", "</invoke>", "<invoke"],
  gemma4: ['<|"|>'],
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

describe("recoverToolCalls in the new formats (property tests)", () => {
  for (const [format, write] of Object.entries(FORMATS)) {
    it(`recovers any valid call written in the ${format} format exactly`, () => {
      fc.assert(
        fc.property(
          nameArb,
          argsArb,
          fc.constantFrom("", "<think>\nplanning\n</think>\n\n", "Sure.\n"),
          (name, args, before) => {
            // Pythonic calls are read only as a whole reply: after prose they could be code.
            if (format === "pythonic" && before === "Sure.\n") return;
            const stops = MARKUP_STOPS[format] ?? [];
            if (stops.some((s) => JSON.stringify(args).includes(s))) return;
            const tools = [{ name, inputSchema: schemaFor(args) }, { name: `${name}_other` }];
            const out = recoverToolCalls(`${before}${write(name, args)}`, tools);
            expect(out.calls).toHaveLength(1);
            expect(out.calls[0]?.id).toBe("call_recovered_0");
            expect(out.calls[0]?.name).toBe(name);
            expect(out.calls[0]?.args).toEqual(args);
            expect(out.text).toBe(before.trim());
          },
        ),
        propertyRuns(120),
      );
    });
  }

  it("recovers several calls written one after another, in order, whatever their formats", () => {
    const same = [
      "deepseekV31",
      "kimiK2",
      "glm45",
      "llama31Function",
      "functionaryV3",
      "minimax",
      "pythonic",
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...same),
        fc.uniqueArray(nameArb, { minLength: 2, maxLength: 3 }),
        argsArb,
        (format, names, args) => {
          const stops = MARKUP_STOPS[format] ?? [];
          if (stops.some((s) => JSON.stringify(args).includes(s))) return;
          const write = FORMATS[format] as (n: string, a: Record<string, unknown>) => string;
          const tools = names.map((name) => ({ name, inputSchema: schemaFor(args) }));
          const out = recoverToolCalls(names.map((n) => write(n, args)).join("\n"), tools);
          expect(out.calls.map((c) => c.name)).toEqual(names);
          expect(out.calls.map((c) => c.id)).toEqual(names.map((_, i) => `call_recovered_${i}`));
          for (const call of out.calls) expect(call.args).toEqual(args);
          expect(out.text).toBe("");
        },
      ),
      propertyRuns(150),
    );
  });

  // The timeout is a hang guard, not a speed assertion: under CI load two test files share a core.
  it("gives back a reply of thousands of unclosed openers unchanged, without hanging", {
    timeout: 60_000,
  }, () => {
    for (const junk of [
      "<tool_call>{ ",
      "<function=add>{ ",
      "<｜tool▁call▁begin｜>add<｜tool▁sep｜>{",
      '<|tool_call>call:add{a:<|"|>',
    ]) {
      const text = junk.repeat(2000);
      expect(recoverToolCalls(text, ["add"]).calls).toEqual([]);
    }
    // An unclosed Harmony body is read as a cut call, whatever it holds; it still comes back.
    const harmony = recoverToolCalls("to=functions.add json{ ".repeat(2000), ["add"]);
    expect(harmony.calls.every((c) => c.name === "add")).toBe(true);
  });

  it("never throws on arbitrary text built from fragments of the new formats", () => {
    const fragment = fc.oneof(
      fc.string(),
      fc.constantFrom(
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁sep｜>",
        "<｜tool▁call▁end｜>",
        "function",
        "<|tool_calls_section_begin|>",
        "<|tool_call_begin|>",
        "functions.add:0",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        "<tool_call>",
        "</tool_call>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "to=functions.add",
        " json",
        "<function=add>",
        "</function>",
        "<|tool_call|>",
        "[TOOL_REQUEST]",
        "[END_TOOL_REQUEST]",
        ">>>add\n",
        ">>>all\n",
        "<|recipient|>add\n",
        "<|content|>",
        '<invoke name="add">',
        '<parameter name="a">',
        "</parameter>",
        "</invoke>",
        "```json\n",
        "```",
        '{"tool_calls": [',
        "{",
        "}",
        "[",
        "]",
        "</think>",
        "<|tool_call>call:add{",
        '<|"|>',
        "<tool_call|>",
        "<escape>",
      ),
    );
    fc.assert(
      fc.property(fc.array(fragment, { maxLength: 14 }), (parts) => {
        const out = recoverToolCalls(parts.join(""), [
          "add",
          { name: "get", inputSchema: { properties: { a: {} } } },
        ]);
        for (const call of out.calls) expect(["add", "get"]).toContain(call.name);
        expect(typeof out.text).toBe("string");
      }),
      propertyRuns(1500),
    );
  });
});
