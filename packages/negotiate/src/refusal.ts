import { isGrammarError } from "@loopwright/schema-compat";
import { type ErrorFacts, readError } from "./error-shape.js";
import { own } from "./own.js";

/**
 * A refusal `negotiate` knows how to answer, read off a failed request.
 *
 * - `strict-schema`: the endpoint refused a strict tool schema (OpenAI's "Invalid schema for
 *   function …"); answered at the endpoint by sending relaxed tools.
 * - `grammar`: the server could not compile a tool schema into a grammar (llama.cpp's "JSON schema
 *   conversion failed"); answered the same way.
 * - `stream-options`: the endpoint does not take `stream_options`; answered at the endpoint.
 * - `effort`: the model refused one `reasoning_effort` value; `refused` is that value (`null` when
 *   the refused value was JSON null) and `supported` what the message listed, if anything.
 * - `token-limit-spelling`: the model wants `max_completion_tokens` instead of `max_tokens`.
 * - `temperature`: the temperature is not the caller's to pick on this model.
 * - `structured-output`: the model does not take `response_format` — a JSON schema in it, or (`name`
 *   given: the name as refused, `response_format`) the field itself, whatever form was sent.
 * - `unknown-field`: the endpoint does not know a request field; `field` is its top-level name
 *   and `name` the name as refused (`chat_template_kwargs.enable_thinking`) — the first the refusal
 *   named. `more`, present only when the same refusal named other fields too (OpenAI's
 *   "Unrecognized request arguments supplied: min_p, top_k", a pydantic `extra_forbidden` list,
 *   Gemini's "Unknown name" lines), holds each other top-level field once, in the order written,
 *   with the first name the server wrote under it: every one is a name the server's words hold. A
 *   field another kind answers on its own (`stream_options`, `temperature`, `response_format`,
 *   `max_tokens` respelled) is not in it: the request re-sent draws that refusal alone.
 * - `tool-choice`: no provider of the model takes the request's `tool_choice` (OpenRouter's "No
 *   endpoints found that support the provided 'tool_choice' value"); answered for the model by
 *   sending none.
 * - `tool-call-ids`: the model refused a tool-call id in the transcript — not exactly nine ASCII
 *   letters and digits (Mistral's API, `mistral_common` behind vLLM or oMLX, a Mistral v3 chat
 *   template's exception), or longer than the endpoint takes (Azure's and OpenAI's "string too
 *   long" on `tool_calls[].id`); answered for the model by sending nine-character ids.
 * - `system-role`: the model's chat template takes no `system` message (Gemma 2's "System role not
 *   supported", Mistral v0.1's "Only user and assistant roles are supported"); answered for the
 *   model by sending the system text in the first user message.
 * - `user-after-tool`: the model refused a `user` message straight after a `tool` message (Mistral's
 *   "Unexpected role 'user' after role 'tool'"); answered for the model by sending an assistant
 *   message between them.
 * - `parallel-calls`: the model's chat template takes one tool call per assistant message (Llama
 *   3.1's "This model only supports single tool-calls at once!"); answered for the model by sending
 *   each call of such a message as an assistant message of its own, its result after it.
 */
export type Refusal =
  | { kind: "strict-schema" }
  | { kind: "grammar" }
  | { kind: "stream-options" }
  | { kind: "effort"; refused: string | null; supported: string[] }
  | { kind: "token-limit-spelling" }
  | { kind: "temperature" }
  | { kind: "structured-output"; name?: string | undefined }
  | { kind: "unknown-field"; field: string; name: string; more?: RefusedField[] | undefined }
  | { kind: "tool-choice" }
  | { kind: "tool-call-ids" }
  | { kind: "system-role" }
  | { kind: "user-after-tool" }
  | { kind: "parallel-calls" };

/** One field an `unknown-field` refusal named: its top-level `field` and the `name` as refused. */
export interface RefusedField {
  /** The top-level body field (`chat_template_kwargs`). */
  field: string;
  /** The name as the server wrote it (`chat_template_kwargs.enable_thinking`). */
  name: string;
}

const EFFORT_PARAMS = new Set(["reasoning_effort", "reasoning.effort"]);

/** The top-level body field a dotted or indexed name belongs to (`tools[0].x` → `tools`). */
export function topLevelField(name: string): string {
  return name.split(/[.[]/)[0] ?? name;
}

function quoted(list: string): string[] {
  return [...list.matchAll(/'([^']*)'|"([^"]*)"|`([^`]*)`/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? "");
}

function effortRefusal(facts: ErrorFacts): Refusal | undefined {
  const text = facts.text;
  // Chat completions (OpenAI, Kimi): "Unsupported value: 'reasoning_effort' does not support 'none' …"
  const chat = /Unsupported value:\s*'reasoning_effort' does not support (?:'([^']*)'|(null))/i.exec(text);
  // Responses API: "Unsupported value: 'none' is not supported with the 'gpt-5.1-codex' model."
  const responses =
    facts.param !== undefined && EFFORT_PARAMS.has(facts.param)
      ? /(?:Unsupported|Invalid) value:\s*'([^']*)'/i.exec(text)
      : null;
  const match = chat ?? responses;
  if (!match) return pydanticEffort(facts) ?? expectedOneOf(facts) ?? thinkingOnly(facts);
  const refused = match[2] === "null" ? null : (match[1] ?? null);
  const tail = /Supported values are:\s*([^\n]*)/i.exec(text.slice(match.index))?.[1] ?? "";
  return { kind: "effort", refused, supported: quoted(tail) };
}

/**
 * vLLM / SGLang (pydantic): { type: "literal_error", loc: ["body", "reasoning_effort"],
 * input: "minimal", ctx: { expected: "'low', 'medium' or 'high'" } }.
 */
function pydanticEffort(facts: ErrorFacts): Refusal | undefined {
  for (const object of facts.objects) {
    // Its own fields, never a polluted Object.prototype's.
    const listed = own(object, "loc");
    const loc = Array.isArray(listed) ? listed : undefined;
    const last = loc?.[loc.length - 1];
    if (last !== "reasoning_effort" && !(last === "effort" && loc?.includes("reasoning"))) continue;
    const input = own(object, "input");
    if (typeof input !== "string" && input !== null) continue;
    const expected = own(own(object, "ctx"), "expected");
    const msg = own(object, "msg");
    const words = typeof expected === "string" ? expected : typeof msg === "string" ? msg : "";
    return { kind: "effort", refused: input, supported: quoted(words) };
  }
  // The same error as vLLM prints it into `message` (a Python repr of the list).
  const text = facts.text;
  if (/['"]loc['"]:\s*[([]['"]body['"],\s*['"]reasoning_effort['"]/.test(text)) {
    const input = /['"]input['"]:\s*(?:'([^']*)'|"([^"]*)"|(None|null))/.exec(text);
    const expected = /Input should be ((?:(?:'[^']*'|"[^"]*")(?:,\s*|\s+or\s+)?)+)/.exec(text)?.[1] ?? "";
    if (input) return { kind: "effort", refused: input[1] ?? input[2] ?? null, supported: quoted(expected) };
  }
  return undefined;
}

/**
 * A validator naming the values it takes and the one it found: "Expected 'reasoning_effort' to be
 * one of: 'high', 'low', 'medium', 'minimal'; found 'none'." (qwen3-next behind Ollama).
 */
function expectedOneOf(facts: ErrorFacts): Refusal | undefined {
  const match =
    /Expected ['"`]?reasoning[_.]effort['"`]? to be one of:?\s*([^;\n]{0,400});\s*(?:found|got|received)\s+(?:'([^']*)'|"([^"]*)"|(null|None))/i.exec(
      facts.text,
    );
  if (!match) return undefined;
  const refused = match[2] ?? match[3] ?? null;
  return { kind: "effort", refused, supported: quoted(match[1] ?? "") };
}

/**
 * Gemini's OpenAI-compatible endpoint refusing effort "none" on a model that always thinks:
 * "Budget 0 is invalid. This model only works in thinking mode."
 */
function thinkingOnly(facts: ErrorFacts): Refusal | undefined {
  return /only works in thinking mode|thinking cannot be disabled|Budget 0 is invalid/i.test(facts.text)
    ? { kind: "effort", refused: "none", supported: [] }
    : undefined;
}

/**
 * A server that takes `response_format` but not a JSON schema in it: an older llama.cpp's
 * "response_format type must be one of "text" or "json_object", but got: json_schema", and
 * DeepSeek's "This response_format type is unavailable now" / "response_format.type `json_schema`
 * is unavailable now", and "json_schema is not supported" wordings. A refusal of another value
 * (json_object at LM Studio, "xml") is the caller's to see.
 */
function refusesJsonSchema(facts: ErrorFacts): boolean {
  const text = facts.text;
  return (
    /response_format[^\n]{0,80}but got:?\s*['"`]?json_schema\b/i.test(text) ||
    /\bjson_schema['"`]?\s+(?:(?:response[_ ]format|type|mode)\s+)?(?:is )?(?:not supported|unsupported|not available|unavailable)/i.test(
      text,
    ) ||
    /(?:does not|doesn't) support (?:structured outputs?|json[_ ]schema|response_format)/i.test(text) ||
    /\bstructured outputs? (?:are |is )?not supported/i.test(text) ||
    // DeepSeek: "This response_format type is unavailable now" (json_schema sent; json_object is taken)
    /response_format type is (?:unavailable|not supported|not available)/i.test(text)
  );
}

/** `reasoningEffort` → `reasoning_effort`: a server that names a field the way its own SDK spells it. */
function snakeCase(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * `line` without the parenthesised notes a relay appends to the words it passes on — new-api and
 * one-api add "(request id: …)", once per hop — and the blanks before them: OpenAI's
 * "Unrecognized request argument supplied: min_p" relayed reads "… min_p (request id: 2024…)",
 * and the name is only the list before them. Read from the end, each character once.
 */
function withoutAppended(line: string): string {
  const blank = (at: number) => at > 0 && line.charCodeAt(at - 1) <= 32;
  let end = line.length;
  for (;;) {
    while (blank(end)) end--;
    if (line.charCodeAt(end - 1) !== 41 /* ) */) break;
    const open = line.lastIndexOf("(", end - 1);
    // A note holds no parenthesis of its own: "(a (b))" is not one, and is kept.
    if (open < 0 || line.indexOf(")", open) !== end - 1) break;
    end = open;
  }
  return line.slice(0, end);
}

/** Field names an unknown-parameter refusal names, in every wording seen on real servers. */
function unknownFields(facts: ErrorFacts): string[] {
  const text = facts.text;
  const names: string[] = [];
  // OpenAI: "Unrecognized request argument supplied: min_p" (and the plural list form).
  const unrecognized = /Unrecognized request arguments? supplied:\s*([^\n]+)/i.exec(text);
  if (unrecognized?.[1]) {
    for (const part of withoutAppended(unrecognized[1]).split(/,|\band\b/)) {
      const name = part.trim().replace(/^'|'$|\.$/g, "");
      if (/^[\w.[\]-]+$/.test(name)) names.push(name);
    }
  }
  const patterns = [
    /Unknown parameter:\s*['"`]([^'"`]+)['"`]/gi, // OpenAI-style proxies and relays (one-api, new-api)
    /Unsupported parameter:\s*['"`]([^'"`]+)['"`]/gi, // OpenAI, Azure: a field this model does not take
    /property ['"`]([^'"`]+)['"`] is unsupported/gi, // Groq
    /Extra inputs are not permitted,?\s*field:\s*['"`]([^'"`]+)['"`]/gi, // Fireworks
    // pydantic as text: "stream_options: Extra inputs are not permitted" (Anthropic-compatible
    // endpoints), "body.stream_options\n  Extra inputs are not permitted [type=extra_forbidden …".
    /(?:^|[\s'"`(])(?:body\.)?([A-Za-z_][\w.[\]]*):\s*Extra inputs are not permitted/gm,
    /^[ \t]*(?:body\.)?([A-Za-z_][\w.[\]]*)[ \t]*\r?\n\s*Extra inputs are not permitted/gm,
    /unknown field [`'"]([^`'"]+)[`'"]/gi, // serde (TGI, Rust servers): "unknown field `stream_options`, expected one of …"
    /Unrecognized field ['"`]([^'"`]+)['"`]/gi, // Jackson-style gateways
    /Unknown name ['"`]([^'"`]+)['"`](?: at '[^']*')?: Cannot find field/gi, // Gemini's OpenAI-compatible endpoint
    // "'stream_options' is not supported", "`reasoning_effort` is not supported with this model"
    /['"`]([A-Za-z_][\w.[\]]*)['"`] (?:parameter |field |argument |property )?(?:is|are) (?:not supported|unsupported|not allowed|not permitted|not recognized)\b/gi,
  ];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) if (m[1]) names.push(m[1]);
  // Gemini names a nested field by its parent: Unknown name "strict" at 'tools[0].function'.
  // Each such name takes the place of its own first bare entry, in one pass (a search of the list
  // for each was quadratic in the names: 16 s for 100,000 of them).
  const nested = new Map<string, string[]>();
  for (const m of text.matchAll(/Unknown name ['"`]([^'"`]+)['"`] at '([^']+)': Cannot find field/gi)) {
    if (!m[1] || !m[2]) continue;
    const queue = nested.get(m[1]);
    if (queue) queue.push(`${m[2]}.${m[1]}`);
    else nested.set(m[1], [`${m[2]}.${m[1]}`]);
  }
  if (nested.size > 0) {
    const used = new Map<string, number>();
    for (let i = 0; i < names.length; i++) {
      const name = names[i] ?? "";
      const queue = nested.get(name);
      const next = used.get(name) ?? 0;
      if (queue && next < queue.length) {
        names[i] = queue[next] ?? name;
        used.set(name, next + 1);
      }
    }
  }
  // LiteLLM: "openai does not support parameters: ['reasoning_effort'], for model=gpt-4o."
  const litellm = /does not support parameters:\s*\[([^\]]*)\]/i.exec(text);
  if (litellm?.[1]) names.push(...quoted(litellm[1]));
  // xAI: "Model grok-4-1-fast does not support parameter reasoningEffort." (camelCase on the wire)
  for (const m of text.matchAll(/does not support (?:the )?parameter\s+['"`]?([A-Za-z_][\w.]*)/gi)) {
    if (m[1]) names.push(snakeCase(m[1].replace(/\.$/, "")));
  }
  // Kimi: "invalid top_p: only 0.95 is allowed for this model" — a field whose value is fixed.
  for (const m of text.matchAll(/invalid ([a-z_][\w.]*): only \S+ is allowed/gi)) if (m[1]) names.push(m[1]);
  // Anthropic: "`temperature` and `top_p` cannot both be specified for this model": the second goes.
  const both =
    // Anchored at a word's start: unanchored, one long word was tried from each of its letters.
    /(?<![\w.])[`'"]?([a-z_][\w.]*)[`'"]? and [`'"]?([a-z_][\w.]*)[`'"]? cannot both be (?:specified|set|used)/i.exec(
      text,
    );
  if (both?.[2]) names.push(both[2]);
  // Pydantic/FastAPI detail (Mistral): { type: "extra_forbidden", loc: ["body", "stream_options", …] }.
  for (const object of facts.objects) {
    const listed = own(object, "loc");
    if (own(object, "type") === "extra_forbidden" && Array.isArray(listed)) {
      const loc = listed.filter((p): p is string | number => typeof p === "string" || typeof p === "number");
      const path = loc[0] === "body" ? loc.slice(1) : loc;
      if (path.length > 0) names.push(path.join("."));
    }
  }
  // A param named with an unknown/unsupported-parameter code, or "… not supported with this model".
  if (
    facts.param &&
    !names.length &&
    (facts.code === "unknown_parameter" ||
      facts.code === "unsupported_parameter" ||
      (facts.code === undefined && /\bnot supported with this model\b/i.test(text)))
  ) {
    names.push(facts.param);
  }
  // "The 'stream_options' parameter is only allowed when 'stream' is enabled." names the field too.
  if (!names.length && facts.param && facts.code === undefined) {
    const only = /The '([^']+)' parameter is only allowed when/i.exec(text);
    if (only?.[1] === facts.param) names.push(facts.param);
  }
  return [...new Set(names)];
}

function isStrictSchemaRefusal(facts: ErrorFacts): boolean {
  return (
    /Invalid schema for function\b/i.test(facts.text) ||
    (facts.code === "invalid_function_parameters" && /^tools\[/.test(facts.param ?? "")) ||
    // "strict" itself refused on a tool (Gemini: Unknown name "strict" at 'tools[0].function').
    // Any schema keyword refused inside a tool (Gemini: Unknown name "const" at
    // 'tools[0].function_declarations[0].parameters…'): the relaxed, sanitised tools are the answer.
    /Unknown name ['"`][^'"`]+['"`] at '?tools\[/i.test(facts.text) ||
    /tools\[\d+\]\.function\.strict\b/i.test(facts.text) ||
    /\bstrict (?:mode|function calling|tool schemas?) (?:is )?not supported/i.test(facts.text)
  );
}

/** How servers word a schema they could not compile into a grammar; `retry.ts` reads the same list (never retried). */
export const GRAMMAR_WORDINGS: readonly RegExp[] = [
  /JSON schema conversion failed/i, // llama.cpp json-schema-to-grammar
  /Automatic parser generation failed/i, // llama.cpp, tools through the chat template's parser
  /failed to parse grammar/i, // llama.cpp, a grammar it built and could not read back
  /not supported by xgrammar/i, // vLLM guided decoding
  /Unsupported JSON Schema/i, // outlines / guidance backends
];

/**
 * True when the server could not compile a schema into a grammar: schema-compat's `isGrammarError`,
 * or one of the wordings above read through the same structural reader as every other refusal.
 */
function isGrammarRefusal(error: unknown, facts: ErrorFacts): boolean {
  if (isGrammarError(error)) return true;
  // llama.cpp puts "Automatic parser generation failed" before any failure to render the chat
  // template, also an exception the template raised over the messages ("Conversation roles must
  // alternate", recorded from b9749): no schema is at fault there, and relaxing the tools would
  // latch a loss for nothing.
  if (/Jinja Exception/i.test(facts.text)) return false;
  return GRAMMAR_WORDINGS.some((re) => re.test(facts.text));
}

/** How servers word a refused tool-call id; `retry.ts` reads the same list (never retried). */
export const TOOL_CALL_ID_WORDINGS: readonly RegExp[] = [
  // Mistral's API and mistral_common (vLLM, oMLX): "Tool call id was call_0 but must be a-z, A-Z,
  // 0-9, with a length of 9." — oMLX's as pasted broke the line after "0-9,".
  // The rule's own words, matched alone: the refused id is quoted whole, of any length.
  /but must be a-z, A-Z, 0-9,\s*with a length of 9/i,
  // Mistral v3 chat templates' raise_exception (vLLM, llama.cpp, mlx-lm).
  /Tool call IDs should be alphanumeric strings with length 9/i,
  // OpenAI and Azure: "Invalid 'messages[2].tool_calls[0].id': string too long. Expected a string
  // with maximum length 40 …" (and a tool message's tool_call_id, named the same way).
  /messages\[\d+\]\.(?:tool_calls\[\d+\]\.id|tool_call_id)'?:\s*string too long/i,
];

/**
 * How servers word a chat template that takes no `system` message, or a model that takes no `user`
 * message after a `tool` one; `retry.ts` reads the same list (never retried: the same messages fail
 * alike).
 */
export const ROLE_WORDINGS: readonly {
  kind: "system-role" | "user-after-tool" | "parallel-calls";
  re: RegExp;
}[] = [
  // Gemma 2's template raise_exception, as vLLM (a 400), SGLang (a 500), llama-cpp-python and mlx
  // pass it on.
  { kind: "system-role", re: /\bSystem role not supported\b/i },
  // Mistral-7B-Instruct v0.1's template.
  { kind: "system-role", re: /\bOnly user and assistant roles are supported\b/i },
  // Mistral's API and mistral_common's validator (vLLM), with or without quotes around the roles.
  { kind: "user-after-tool", re: /\bUnexpected role '?user'? after role '?tool'?/i },
  // Llama 3.1 / 3.2 / 3.3 templates' raise_exception over an assistant message with two calls, as
  // llama.cpp b9749 words it under "Automatic parser generation failed … Jinja Exception:" (probed
  // live with a template raising the same words) and vLLM passes it on.
  { kind: "parallel-calls", re: /\bonly supports single tool[- ]calls? at once\b/i },
];

/** The role refusal the words make, if any. */
function roleRefusal(facts: ErrorFacts): Refusal | undefined {
  const found = ROLE_WORDINGS.find((wording) => wording.re.test(facts.text));
  return found === undefined ? undefined : { kind: found.kind };
}

/** True when the words say a tool-call id in the transcript was refused for its form or length. */
function refusesToolCallIds(facts: ErrorFacts): boolean {
  if (
    facts.code === "string_above_max_length" &&
    /^messages\[\d+\]\.(?:tool_calls\[\d+\]\.id|tool_call_id)$/.test(facts.param ?? "")
  ) {
    return true;
  }
  return TOOL_CALL_ID_WORDINGS.some((re) => re.test(facts.text));
}

/**
 * Reads the refusal a failed request carries, if `negotiate` can answer it.
 *
 * `undefined` for
 * anything else (a refusal of a value, an overflow, a rate limit, a server error). Never throws.
 */
export function readRefusal(error: unknown): Refusal | undefined {
  const facts = readError(error);
  const status = facts.status;
  // A refusal of the request is a 4xx. A 429 or a 5xx is the server's trouble, except a grammar
  // failure, which an older llama.cpp answered with a 500, and a refused tool-call id, which oMLX
  // answers with a 500.
  if (status !== undefined && (status < 400 || status === 429)) return undefined;
  if (status !== undefined && status >= 500) {
    if (refusesToolCallIds(facts)) return { kind: "tool-call-ids" };
    // SGLang answers a chat template's exception with a 500 and its traceback.
    const role = roleRefusal(facts);
    if (role) return role;
    return isGrammarRefusal(error, facts) ? { kind: "grammar" } : undefined;
  }
  // Before the grammar wordings: llama.cpp puts "Automatic parser generation failed" in front of a
  // template's exception about the ids, and no schema is at fault there.
  if (refusesToolCallIds(facts)) return { kind: "tool-call-ids" };
  // Before the grammar wordings too: the template's exception is about the messages.
  const role = roleRefusal(facts);
  if (role) return role;
  if (isStrictSchemaRefusal(facts)) return { kind: "strict-schema" };
  // A response_format schema the server found invalid is the caller's to see, never a latch.
  if (/Invalid schema for response_format/i.test(facts.text)) return undefined;
  if (isGrammarRefusal(error, facts)) return { kind: "grammar" };
  const effort = effortRefusal(facts);
  if (effort) return effort;
  // "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value
  // is supported." (OpenAI) and "invalid temperature: only 1 is allowed for this model" (Kimi) say the
  // value is not ours to pick at all; a range complaint ("Expected a value <= 2") does not.
  if (
    /'temperature' does not support .{0,200}Only the default \([^)]{0,40}\) value is supported/i.test(
      facts.text,
    ) ||
    /\btemperature\b[^\n]{0,40}\bonly (?:the default|-?[\d.]+) (?:value )?is (?:allowed|supported)/i.test(
      facts.text,
    )
  ) {
    return { kind: "temperature" };
  }
  if (refusesJsonSchema(facts)) return { kind: "structured-output" };
  // OpenRouter, 404: no provider of the model takes the value (recorded for GLM 4.5 Air). vLLM's
  // '"auto" tool choice requires --enable-auto-tool-choice' is not this: leaving tool_choice out
  // means "auto" there, so only the server's setup can answer it.
  if (/No endpoints found that support the provided 'tool_choice' value/i.test(facts.text)) {
    return { kind: "tool-choice" };
  }
  const names = unknownFields(facts);
  const first = names[0];
  if (first === undefined) return undefined;
  // Whether the words complain of max_tokens' value rather than its name: read once, however many
  // names under max_tokens the list holds.
  let ofValue: boolean | undefined;
  const valueRefused = () => {
    ofValue ??= /max_tokens[^\n]{0,200}(must|should) be|too large|at most|greater|less/i.test(facts.text);
    return ofValue;
  };
  const refusal = fieldRefusal(first, valueRefused);
  if (refusal.kind !== "unknown-field") return refusal;
  // The other fields the same words named, each top-level field once: answered with the first in
  // one re-send, where each cost a send of its own. One pass, a set lookup a name.
  const seen = new Set([refusal.field]);
  const more: RefusedField[] = [];
  for (let i = 1; i < names.length; i++) {
    const name = names[i] ?? "";
    const other = fieldRefusal(name, valueRefused);
    if (other.kind !== "unknown-field" || seen.has(other.field)) continue;
    seen.add(other.field);
    more.push({ field: other.field, name });
  }
  return more.length > 0 ? { ...refusal, more } : refusal;
}

/**
 * The refusal one name an unknown-field wording named makes on its own: a field another latch
 * answers (`max_tokens` to respell, `stream_options`, `temperature`, `response_format`) or an
 * unknown field at its top-level name. `valueRefused`: whether the words complain of max_tokens'
 * value (too large, must be at least 1), which no respelling answers.
 */
function fieldRefusal(name: string, valueRefused: () => boolean): Refusal {
  const field = topLevelField(name);
  if (field === "max_tokens" && !valueRefused()) return { kind: "token-limit-spelling" };
  if (field === "stream_options") return { kind: "stream-options" };
  if (field === "temperature") return { kind: "temperature" };
  // The field refused as one the server does not know: whatever form was sent (a plain json_object).
  if (field === "response_format") return { kind: "structured-output", name };
  return { kind: "unknown-field", field, name };
}
