import type { ChunkLike } from "./chunk.js";

/**
 * A chunk as the server sent it, every field this package reads taken from the chunk's own objects:
 * a chunk parsed from JSON inherits from `Object.prototype`, so a field some code in the process
 * set there (`Object.prototype.content = "x"`, prototype pollution) read as part of every chunk
 * that left it out — appended to every answer, to every tool call's name (`refusal`, `name`,
 * `arguments`, `id` alike).
 */

type Fields = Record<string, unknown>;
type Nested = Readonly<Record<string, (inner: unknown) => unknown>>;

/**
 * The prototype of every copy: an empty object with none itself. A copy made with
 * `Object.create(null)` would do as well, but V8 keeps such an object in its slow dictionary form
 * (measured: about twice the time a chunk).
 */
const BARE: object = Object.freeze(Object.create(null));

function isObject(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value`'s own enumerable fields in an object whose chain ends before `Object.prototype`; anything else as it is. */
function flat(value: unknown): unknown {
  if (!isObject(value)) return value;
  const copy = Object.create(BARE) as Fields;
  for (const key of Object.keys(value)) copy[key] = value[key];
  return copy;
}

/** `flat` of each entry of an array (an array's own indexes only); anything else as `flat`. */
function flatEach(value: unknown): unknown {
  return Array.isArray(value) ? value.map(flat) : flat(value);
}

/** `flat`, then each field named in `nested` read by its own reader. */
function shaped(value: unknown, nested: Nested): unknown {
  if (!isObject(value)) return value;
  const copy = Object.create(BARE) as Fields;
  for (const key of Object.keys(value)) {
    const inner = value[key];
    const read = Object.hasOwn(nested, key) ? nested[key] : undefined;
    copy[key] = read === undefined ? inner : read(inner);
  }
  return copy;
}

/** Each reader's nested fields, made once (a literal per call cost more than the copy itself). */
const PART: Nested = { thinking: flatEach };
const USAGE: Nested = {
  prompt_tokens_details: flat,
  completion_tokens_details: flat,
  input_tokens_details: flat,
  output_tokens_details: flat,
};
const CALL: Nested = { function: flat };

/** A content part: its `thinking` may be a list of parts itself (Mistral), read one level down. */
const part = (value: unknown) => shaped(value, PART);
const usage = (value: unknown) => shaped(value, USAGE);
const call = (value: unknown) => shaped(value, CALL);

const DELTA: Nested = {
  content: (content) => (Array.isArray(content) ? content.map(part) : part(content)),
  reasoning: flat,
  reasoning_details: flatEach,
  tool_calls: (calls) => (Array.isArray(calls) ? calls.map(call) : call(calls)),
  function_call: flat,
};
const delta = (value: unknown) => shaped(value, DELTA);

const CHOICE: Nested = { delta, message: delta, usage, error: flat };
const choice = (value: unknown) => shaped(value, CHOICE);

const GROQ: Nested = { usage };
const CHUNK: Nested = {
  choices: (choices) => (Array.isArray(choices) ? choices.map(choice) : choices),
  usage,
  timings: flat,
  x_groq: (groq) => shaped(groq, GROQ),
  error: flat,
};

/**
 * `chunk` with every object this package reads copied from its own fields into one whose
 * prototype chain never reaches `Object.prototype` (choices, their delta or message, content
 * parts, tool-call pieces, usage and its details, timings, Groq's `x_groq`, an error object).
 * Fields the package does not read are copied by reference, as they are. A chunk `ownChunk` made
 * is handed back as it is. About 1 µs a chunk (the openai SDK's own reading takes 8–9).
 */
export function ownChunk(chunk: ChunkLike): ChunkLike {
  // A copy this made (its prototype is BARE, which nothing else has) is read as it is.
  if (!isObject(chunk) || Object.getPrototypeOf(chunk) === BARE) return chunk;
  const copy = shaped(chunk, CHUNK) as ChunkLike;
  return copy;
}
