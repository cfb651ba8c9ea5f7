import { describe, expect, it } from "vitest";
import { isGrammarError } from "./grammar-error.js";

/** A refusal as the openai SDK surfaces it: status, the parsed error member, "<status> <message>". */
function apiError(status: number, error: Record<string, unknown>): Record<string, unknown> {
  return { status, error, message: `${status} ${String(error.message)}` };
}

/** Real refusals to compile a schema, each with where its wording was recorded. */
const REFUSALS: Array<[source: string, status: number, error: Record<string, unknown>]> = [
  [
    // lmstudio-ai/lmstudio-bug-tracker#2168 (LM Studio 4.19, a tool schema with "pattern":"\\S").
    "LM Studio: conversion failed on an unanchored pattern",
    400,
    {
      code: 400,
      message:
        "Unable to generate parser for this template. Automatic parser generation failed: JSON schema conversion failed:\nPattern must start with '^' and end with '$'",
      type: "invalid_request_error",
    },
  ],
  [
    // lmstudio-ai/lmstudio-bug-tracker#2220 (Claude Code against gpt-oss-120b; LM Studio answers 500).
    "LM Studio: samplers could not parse the grammar",
    500,
    {
      message:
        'Engine protocol predict request returned 400: {"error":{"code":400,"message":"Failed to initialize samplers: failed to parse grammar","type":"invalid_request_error"}}',
      type: "api_error",
    },
  ],
  [
    // llama.cpp b9749 (the live server, r68): {type: "integer", minimum: 1e300} in a tool's parameters.
    "llama.cpp: the tool-call parser could not build an integer range",
    400,
    {
      code: 400,
      message:
        "Unable to generate parser for this template. Automatic parser generation failed: At least one of min_value or max_value must be set",
      type: "invalid_request_error",
    },
  ],
  [
    // An older llama.cpp sends the converter's sentence alone.
    "llama.cpp (older build): the converter's own sentence",
    500,
    { code: 500, message: "Pattern must start with '^' and end with '$'", type: "server_error" },
  ],
  [
    // z-lab/paroquant#31 (vLLM 0.19, a schema with format: uri).
    "vLLM: grammar error for an unknown format",
    400,
    { object: "error", message: "Grammar error: Unknown format: uri", type: "BadRequestError", code: 400 },
  ],
  [
    // anomalyco/opencode#33919 (a hosted GLM backend compiling a structural tag with xgrammar).
    "xgrammar structural tag: cannot find field",
    400,
    {
      message:
        "Failed to compile structural_tag grammar: [19:50:38] /project/cpp/json_schema_converter.cc:3006: Cannot find field createOrUpdateConfig in #/properties/createOrUpdateConfig/properties/parameter/items",
    },
  ],
  [
    // Same thread, a second user: Draft 4 tuple items refused.
    "xgrammar structural tag: items must be a boolean or an object",
    400,
    {
      message:
        "Failed to compile structural_tag grammar: [02:59:08] /project/cpp/json_schema_converter.cc:2999: items must be a boolean or an object",
    },
  ],
  [
    // anthropics/claude-code#55539 (output_config.format with many optional fields).
    "Anthropic: compiled grammar is too large",
    400,
    { type: "invalid_request_error", message: "compiled grammar is too large" },
  ],
  [
    // i-am-bee/beeai-framework#1215 (Groq via LiteLLM).
    "Groq: invalid schema for response format",
    400,
    {
      message:
        "invalid schema for response format: response_format/json_schema/next_step: minItems is not supported",
      type: "invalid_request_error",
    },
  ],
  [
    // usestrix/strix#1088 (Groq, a tool with required but no properties).
    "Groq: invalid JSON schema for tool",
    400,
    {
      message:
        "invalid JSON schema for tool view_agent_graph, tools[24].function.parameters: 'required' present but 'properties' is missing",
      type: "invalid_request_error",
      param: "tool view_agent_graph, tools[24].function.parameters",
    },
  ],
  [
    // langchain-ai/langchain#31132 (Groq compiling an MCP tool schema).
    "Groq: schema is not valid JSON Schema",
    400,
    {
      message:
        "schema is not valid JSON Schema: jsonschema file:///home/di/params.json compilation failed: '/properties/headers/items/properties/key/required' does not validate with https://json-schema.org/draft/2020-12/schema#/allOf/1/$ref/properties/properties/additionalProperties/$dynamicRef/allOf/3/$ref/properties/required/$ref/type: expected array, but got string",
      type: "invalid_request_error",
    },
  ],
  [
    // musistudio/claude-code-router#708 (Cerebras qwen-3-235b).
    "Cerebras: unsupported JSON schema fields",
    400,
    {
      message: "Unsupported JSON schema fields: {'minItems', 'items'}",
      type: "invalid_request_error",
      param: "response_format",
      code: "wrong_api_format",
    },
  ],
  [
    // earendil-works/pi#5352 (Fireworks).
    "Fireworks: JSON Schema not supported",
    400,
    {
      type: "invalid_request_error",
      message: "JSON Schema not supported: could not understand the instance `{'required': ['criteria']}`.",
    },
  ],
  [
    // BerriAI/litellm#37453 (Fireworks, two patterns on one field).
    "Fireworks: conflict in schema definitions",
    400,
    { type: "invalid_request_error", message: "Conflict in schema definitions for key 'pattern'" },
  ],
  [
    // anomalyco/opencode#13737 (Codex / OpenAI strict mode, an optional property).
    "OpenAI: invalid schema for function",
    400,
    {
      message:
        "Invalid schema for function 'question': In context=('properties', 'questions', 'items'), 'required' is required to be supplied and to be an array including every key in properties. Missing 'multiple'.",
      type: "invalid_request_error",
      param: "tools[0].function.parameters",
      code: "invalid_function_parameters",
    },
  ],
  [
    "OpenAI: a response_format schema that is not an object",
    400,
    {
      message:
        "Invalid 'response_format.json_schema.schema': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.",
      type: "invalid_request_error",
      param: "response_format.json_schema.schema",
    },
  ],
  [
    // router-for-me/CLIProxyAPI#97 (Gemini, MCP tools carrying $schema).
    "Gemini: unknown name $schema in a tool's parameters",
    400,
    {
      code: 400,
      message:
        "Invalid JSON payload received. Unknown name \"$schema\" at 'request.tools[0].function_declarations[0].parameters': Cannot find field.\nInvalid JSON payload received. Unknown name \"$schema\" at 'request.tools[0].function_declarations[1].parameters': Cannot find field.",
      status: "INVALID_ARGUMENT",
    },
  ],
  [
    // zed-industries/zed#44875 (Gemini, const inside any_of).
    "Gemini: unknown name const deep in a tool's parameters",
    400,
    {
      code: 400,
      message:
        "Invalid JSON payload received. Unknown name \"const\" at 'tools[0].function_declarations[5].parameters.properties[8].value.any_of[0]': Cannot find field.",
      status: "INVALID_ARGUMENT",
    },
  ],
  [
    "Anthropic: tool input_schema is not valid JSON Schema",
    400,
    {
      type: "invalid_request_error",
      message:
        "tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12).",
    },
  ],
];

/** Real 400s that name a schema, a format or a field but are not a schema the server could not compile. */
const NOT_REFUSALS: Array<[source: string, status: number, error: Record<string, unknown>]> = [
  [
    // dzhng/deep-research#127 (Groq without json_schema support).
    "Groq: response_format.type not allowed",
    400,
    {
      message: "'response_format.type' : value is not one of the allowed values ['text','json_object']",
      type: "invalid_request_error",
    },
  ],
  [
    // t59688/arboris-novel#23 (LM Studio refusing json_object).
    "LM Studio: response_format.type must be json_schema or text",
    400,
    { message: "'response_format.type' must be 'json_schema' or 'text'" },
  ],
  [
    // Cerebras/cerebras-cloud-sdk-python#4 (json_schema without a name).
    "Cerebras: type should be text (same code as a schema refusal)",
    400,
    {
      message: "type: Input should be 'text'",
      type: "invalid_request_error",
      param: "validation_error",
      code: "wrong_api_format",
    },
  ],
  [
    // livekit/agents#3134.
    "Cerebras: strict tools unsupported by the model",
    400,
    { message: "Tools with strict=True are not supported by this model", type: "invalid_request_error" },
  ],
  [
    // MinLL/SkyrimNet-GamePlugin#77 (Gemini, unknown request fields).
    "Gemini: unknown request fields",
    400,
    {
      code: 400,
      message:
        'Invalid JSON payload received. Unknown name "extra_body" at \'extra_body\': Cannot find field.\nInvalid JSON payload received. Unknown name "frequency_penalty": Cannot find field.',
      status: "INVALID_ARGUMENT",
    },
  ],
  [
    // gera2ld/ai.nvim#13 (Gemini, a message part with a role).
    "Gemini: unknown name in the contents",
    400,
    {
      code: 400,
      message:
        "Invalid JSON payload received. Unknown name \"role\" at 'contents[0].parts': Cannot find field.",
      status: "INVALID_ARGUMENT",
    },
  ],
  [
    // ServiceStack/llms#17 (Groq, an extra message field).
    "Groq: a message property unsupported",
    400,
    {
      message:
        "'messages.0' : for 'role:user' the following must be satisfied[('messages.0' : property 'timestamp' is unsupported)]",
      type: "invalid_request_error",
    },
  ],
  [
    "OpenAI: a tool name that does not match the pattern",
    400,
    {
      message:
        "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
      type: "invalid_request_error",
      param: "tools[0].function.name",
      code: "invalid_value",
    },
  ],
  [
    // getsentry/sentry-mcp#106 (an MCP tool description over OpenAI's limit).
    "OpenAI: a tool description over 1,024 characters",
    400,
    {
      message:
        "Invalid 'tools[13].function.description': string too long. Expected a string with maximum length 1024, but got a string with length 1103 instead.",
      type: "invalid_request_error",
      param: "tools[13].function.description",
      code: "string_above_max_length",
    },
  ],
  [
    "llama.cpp: the model's output could not be parsed into a tool call",
    500,
    { code: 500, message: "Failed to parse input at pos 12: <tool_call>\n{", type: "server_error" },
  ],
];

describe("isGrammarError across servers", () => {
  for (const [source, status, error] of REFUSALS) {
    it(`recognises ${source}`, () => {
      expect(isGrammarError(apiError(status, error))).toBe(true);
      expect(isGrammarError(JSON.stringify({ error }))).toBe(true);
      expect(isGrammarError(new Error(`${status} ${String(error.message)}`))).toBe(true);
    });
  }

  for (const [source, status, error] of NOT_REFUSALS) {
    it(`is false for ${source}`, () => {
      expect(isGrammarError(apiError(status, error))).toBe(false);
      expect(isGrammarError(JSON.stringify({ error }))).toBe(false);
    });
  }

  it("recognises a refusal a relay passed on inside its own message (LiteLLM, claude-code-router)", () => {
    const relayed = {
      error: {
        message:
          'Error from provider(cerebras,qwen-3-235b-a22b-thinking-2507: 400): {"message":"Unsupported JSON schema fields: {\'minItems\', \'items\'}","type":"invalid_request_error","param":"response_format","code":"wrong_api_format"}',
      },
    };
    expect(isGrammarError(apiError(400, relayed.error))).toBe(true);
    expect(
      isGrammarError(
        new Error(
          'litellm.BadRequestError: GroqException - {"error":{"message":"invalid JSON schema for tool view_agent_graph, tools[24].function.parameters: \'required\' present but \'properties\' is missing","type":"invalid_request_error"}}',
        ),
      ),
    ).toBe(true);
  });
});
