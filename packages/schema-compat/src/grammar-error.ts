/**
 * Refusals that mean "the server could not turn this schema into a grammar or a constraint",
 * as the servers word them. Each is specific to schema or grammar compilation, so an ordinary 400
 * (context overflow, an unknown parameter, a bad message) never matches.
 */
const GRAMMAR_REFUSALS: readonly RegExp[] = [
  // llama.cpp (and LM Studio, which embeds its converter), for tools and response_format alike;
  // older builds send the converter's own sentence without the "conversion failed" lead.
  /json schema conversion failed/i,
  /unrecognized schema/i,
  /pattern must start with '\^' and end with '\$'/i,
  /unsupported (?:ref|pattern syntax)\b/i,
  // llama.cpp's PEG tool-call parser (b9749): the grammar built from a schema let the model out of a
  // string, and the output no longer parsed — a 500, as the reply or as an error event mid-stream.
  /output that does not match the expected peg-native format/i,
  // llama.cpp (b9749) on a grammar that admits nothing from some point on (an integer range with no
  // integer in it: `minimum: 5, maximum: 3`), a 500 once the model reaches it.
  /\bunexpected empty grammar stack\b/i,
  /error resolving ref\b/i,
  // llama.cpp's PEG tool-call parser (b9749) on an integer bound it cannot build a range from.
  /\bat least one of min_value or max_value must be set\b/i,
  /failed to (?:initiali[sz]e|build|compile|create|parse|convert)\b[^\n]{0,40}\bgrammar/i,
  /\binvalid grammar\b/i,
  /\bgrammar error:/i,
  /\bgrammar is too (?:large|big|complex)\b/i,
  // xgrammar (vLLM, SGLang, TensorRT-LLM and hosted GLM backends) names its converter source file.
  /json_schema_converter/i,
  // vLLM's structured-output backends, outlines.
  /features not supported by (?:xgrammar|outlines|guidance|llguidance)/i,
  /(?:xgrammar|llguidance|outlines)\b[^\n]{0,80}\b(?:schema|grammar)\b[^\n]{0,40}\b(?:invalid|unsupported|not supported|failed|error)/i,
  /(?:invalid|unsupported) (?:json )?schema for (?:structured output|guided decoding|guided_json)/i,
  /unsupported json schema (?:structure|fields?|keywords?|features?)/i,
  // OpenAI strict mode and the servers that copy its wording (Groq: "for response format", "for tool").
  /invalid (?:json )?schema for (?:function|response[_ ]format|tool)\b/i,
  /invalid '(?:tools\[\d+\]\.function\.parameters|response_format\.json_schema\.schema)\b/i,
  /schema is not valid json schema/i,
  // Fireworks.
  /json schema not supported/i,
  /conflict in schema definitions/i,
  // Anthropic (and its OpenAI-compatible endpoint).
  /json schema is invalid/i,
  /\b(?:input_schema|parameters)\b[^\n]{0,40}\bdoes not support\b/i,
  // Gemini (its OpenAI-compatible endpoint too): a field of a tool's parameters schema refused.
  // Every run is bounded, so a body echoing thousands of tool paths is read in linear time.
  /unknown name\s{1,8}\\?"[^"\\]{1,200}\\?"\s{1,8}at\s{1,8}'[^'\n]{0,300}?(?:function_declarations|parameters|response_schema)[^'\n]{0,300}'/i,
  /function_declarations\[\d{1,6}\]\.parameters[^\s:]{0,300}:\s/i,
  // Ollama's structured outputs.
  /invalid json schema in format/i,
];

/** Error codes that name a schema refusal outright. */
const GRAMMAR_CODES = new Set(["invalid_function_parameters", "invalid_json_schema"]);

/** Codes for a failure that mentions a schema but is not the server failing to compile it. */
const NOT_GRAMMAR_CODES = new Set(["tool_use_failed", "context_length_exceeded", "rate_limit_exceeded"]);

/** Statuses a compilation refusal arrives with: 400, 422, or llama.cpp's older 500. */
const GRAMMAR_STATUSES = new Set([400, 422, 500]);

/** How deep a prototype chain {@link held} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * `value[name]` where `value` holds it itself or a prototype of its own does (a class's getter, an
 * `Error`'s `message`), never where only `Object.prototype` does: code in the host's process
 * setting `Object.prototype.code = "invalid_json_schema"` (prototype pollution) otherwise read every
 * 400 — an unknown parameter, a bad message — as a schema the server could not compile.
 */
function held(value: object, name: string): unknown {
  for (let at: object | null = value, depth = 0; at !== null && depth < MAX_CHAIN; depth++) {
    if (at === Object.prototype) return undefined;
    if (Object.hasOwn(at, name)) return (value as Record<string, unknown>)[name];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

interface Gathered {
  texts: string[];
  codes: string[];
  status?: number;
}

function gather(value: unknown, into: Gathered, depth: number, seen: Set<object>): void {
  if (depth > 6 || value === null || value === undefined) return;
  if (typeof value === "string") {
    into.texts.push(value);
    const trimmed = value.trim();
    if ((trimmed.startsWith("{") || trimmed.includes('{"')) && trimmed.length < 100_000) {
      const start = trimmed.indexOf("{");
      try {
        gather(JSON.parse(trimmed.slice(start)), into, depth + 1, seen);
      } catch {
        // Not a JSON body after all; the text itself was kept.
      }
    }
    return;
  }
  if (typeof value !== "object" || seen.has(value)) return;
  seen.add(value);
  if (into.status === undefined) {
    const status = held(value, "status") ?? held(value, "statusCode");
    if (typeof status === "number") into.status = status;
  }
  const code = held(value, "code");
  const type = held(value, "type");
  if (typeof code === "string") into.codes.push(code);
  if (typeof type === "string") into.codes.push(type);
  for (const key of [
    "message",
    "error",
    "body",
    "detail",
    "msg",
    "cause",
    "response",
    "data",
    "metadata",
    "raw",
  ]) {
    const field = held(value, key);
    if (field !== undefined) gather(field, into, depth + 1, seen);
  }
  if (Array.isArray(value)) for (const entry of value) gather(entry, into, depth + 1, seen);
}

/**
 * True when an error is a server refusing to compile a schema into a grammar or constraint.
 *
 * Recognises llama.cpp's and LM Studio's "JSON schema conversion failed" / "failed to parse
 * grammar" (and an older build's bare converter sentence), llama.cpp's 500 "The model produced output
 * that does not match the expected peg-native format" (its grammar admitted what its parser could
 * not read) and its 500 "Unexpected empty grammar stack after accepting piece" (its grammar admitted
 * nothing further: a range no integer is in), vLLM's and SGLang's xgrammar,
 * outlines and guidance refusals ("features not supported by xgrammar", "Grammar error: …",
 * `json_schema_converter.cc`), OpenAI's "Invalid schema for function", Groq's "invalid schema
 * for response format" and "invalid JSON schema for tool", Cerebras's "Unsupported JSON schema
 * fields", Fireworks's "JSON Schema not supported", Anthropic's "JSON schema is invalid" and
 * "compiled grammar is too large", Gemini's "Unknown name … at '…function_declarations[i].parameters…'",
 * and Ollama's "invalid JSON schema in format" — the case where sending `relaxTools` (or no
 * schema) instead can succeed.
 *
 * Reads an unknown value: an `openai` `APIError` (status, error, message), any object with a
 * `body`, `error` or `message`, a plain `Error` (its `cause` too), or a string holding the body or
 * the message — each object's fields as it holds them or its class does, never one only
 * `Object.prototype` holds (prototype pollution). Answers false for everything else, including other 400s (context overflow,
 * unknown parameters) and a model whose call failed the schema (Groq's `tool_use_failed`).
 * Never throws. A request that never comes back is nothing to recognise: llama.cpp (b9749) never
 * answers a schema holding a string's `minLength` above its `maxLength` (its slot spins, and every
 * later request waits), so a host sending schemas unsanitized must refuse such a schema itself
 * (`checkStrictSchema` reports it).
 */
export function isGrammarError(error: unknown): boolean {
  const found: Gathered = { texts: [], codes: [] };
  try {
    gather(error, found, 0, new Set());
  } catch {
    return false;
  }
  if (found.status !== undefined && !GRAMMAR_STATUSES.has(found.status)) return false;
  if (found.codes.some((code) => NOT_GRAMMAR_CODES.has(code))) return false;
  if (found.codes.some((code) => GRAMMAR_CODES.has(code))) return true;
  return found.texts.some((text) => GRAMMAR_REFUSALS.some((pattern) => pattern.test(text)));
}
