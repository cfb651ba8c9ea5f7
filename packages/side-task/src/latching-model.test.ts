/**
 * A model of what a side task sends, after which refusal, and where the answer is latched —
 * checked over HTTP.
 *
 * One or two testkit servers (endpoints), each serving one or two model names, play quirky servers:
 * each (endpoint, model) has hidden things it refuses, answered with the recorded refusal bodies
 * (json_schema, response_format outright, json_object, an image part, an image given by URL, the
 * ceiling as `max_tokens`, a temperature, `reasoning_effort`, an `extraBody` field by name), and an
 * endpoint may fail to build a grammar from a schema holding a `pattern`. One fault may be put on
 * a task's first attempt or in place of its answer: llama.cpp's 503 "Loading model", a 500, a 401,
 * "Invalid schema for response_format", a 200 with no message, a refusal in place of content, a
 * reply cut at the ceiling.
 *
 * Random side tasks (`ask`, `askReply`, `askJson` with small schemas, text or image parts by data:
 * and http URL, random options) go through the real code with a fresh or shared store and pool. A
 * plain reference keeps what should be latched where (README "Lesser forms, and what is latched")
 * and after every task it is checked that each body the server received is the one it predicts,
 * that the task took the attempts it predicts (nothing refused is sent twice unchanged), that it
 * ended as predicted (README "Failures"), that the notices are the ones predicted, and that the
 * store's snapshot imported into a new store builds the next body as the README says — with the
 * latches "not in a snapshot" (the image ones) forgotten. Every change made to get past a refusal
 * that costs or drops something is expected to be told once (R89-1: four were not; since r91 in
 * negotiate's words), the relaxed schema as the negotiation that latched it ends and only where its
 * latch held then; the ceiling renamed `max_completion_tokens` loses nothing and is not told. A
 * task may go with an API key: another endpoint to the store, the same server, learning nothing
 * from the keyless one. A store not shared (a fresh one per task) learns nothing between tasks.
 */
import { createClientPool } from "@loopwright/client";
import { type CapabilityStore, createCapabilityStore } from "@loopwright/negotiate";
import {
  llamacppFormatTypeRefusal,
  type Reply,
  readFixture,
  recordedError,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { ask, askJson, askReply } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { IMAGE_LEFT_OUT, IMAGE_URL_LEFT_OUT, type SideTaskInput } from "./input.js";

// ---------------------------------------------------------------------------------------------
// The recorded wordings.

const swapped = (file: string, from: string, to: string): unknown =>
  JSON.parse(readFixture(`errors/${file}`).split(from).join(to));
const error = (status: number, body: unknown): Reply => ({ type: "error", status, body });

/** Two unknown-field wordings (OpenAI's, Groq's), the field put in. */
const UNKNOWN_FIELD = {
  openai: (field: string) =>
    error(
      400,
      swapped("openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json", "reasoning_effort", field),
    ),
  groq: (field: string) =>
    error(400, swapped("groq/property-unsupported-did-you-mean.json", "chat_template_kwargs", field)),
} as const;
type Wording = keyof typeof UNKNOWN_FIELD;

const REFUSALS = {
  jsonObject: () => recordedError(400, "lmstudio/response-format-json-object-rejected.json"),
  grammar: () => recordedError(400, "llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
  ownGrammar: () => recordedError(400, "llamacpp/failed-to-parse-grammar-own-grammar-b9749.json"),
  image: () => recordedError(500, "llamacpp/image-input-not-supported-no-mmproj-500-b9749.json"),
  imageUrl: () =>
    error(400, { error: { message: "Image URLs are not supported", type: "invalid_request_error" } }),
  maxTokens: () => recordedError(400, "openai/max-tokens-unsupported-use-max-completion-tokens.json"),
  temperature: (value: number) =>
    error(400, swapped("openai/temperature-0-unsupported-value.json", "support 0 ", `support ${value} `)),
  effort: () => recordedError(400, "openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json"),
  invalidSchema: () =>
    error(400, {
      error: {
        message: readFixture(
          "errors/openai/strict-schema-required-missing-key-response-format.message.txt",
        ).trim(),
        type: "invalid_request_error",
        param: "response_format",
        code: null,
      },
    }),
  loading: () => recordedError(503, "llamacpp/503-loading-model.json"),
  serverError: () =>
    error(500, {
      error: { message: "The server had an error while processing your request.", type: "server_error" },
    }),
  badKey: () =>
    error(401, {
      error: {
        message: "Incorrect API key provided: sk-wr***ng.",
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      },
    }),
};

// ---------------------------------------------------------------------------------------------
// The hidden quirks and the tasks.

const MODELS = ["m-a", "m-b"] as const;
const EXTRA_FIELDS = ["top_k", "min_p", "repetition_penalty", "chat_template_kwargs"] as const;
type ExtraField = (typeof EXTRA_FIELDS)[number];

interface ModelQuirks {
  /** How json_schema is refused: not, as an older llama.cpp, or with response_format named unknown. */
  jsonSchema: "takes" | "older" | "unknown";
  /** json_object refused as LM Studio refuses it. */
  jsonObject: boolean;
  images: boolean;
  /** Images refused in the words of an inline-only endpoint ("Image URLs are not supported"). */
  imageWords: "mmproj" | "urls";
  imageUrls: boolean;
  maxTokens: boolean;
  temperature: boolean;
  effort: boolean;
  fields: ExtraField[];
  wording: Wording;
}

interface EndpointQuirks {
  /** A grammar builder that fails on `pattern`, or on every schema. */
  grammar: false | "pattern" | "all";
  /** A `grammar` field of the caller's own that llama.cpp cannot parse. */
  ownGrammar: boolean;
  models: ModelQuirks[];
}

type Fault = "loading" | "server-error" | "bad-key" | "invalid-schema" | "no-message" | "refusal" | "length";

interface Task {
  kind: "ask" | "askReply" | "askJson";
  endpoint: number;
  /** Sent with an API key: another endpoint to the store (keyed by base URL and key), the same server. */
  keyed: boolean;
  model: number;
  system: string;
  input: SideTaskInput;
  schema: {
    props: { name: string; kind: "string" | "integer" | "boolean" | "pattern"; required: boolean }[];
  };
  strict: boolean | undefined;
  maxTokens: number | undefined;
  temperature: number | undefined;
  effort: string | undefined;
  extra: Partial<Record<ExtraField | "response_format" | "grammar" | "temperature" | "max_tokens", unknown>>;
  fault: { kind: Fault; at: "first" | "answer" } | undefined;
  /** After the task: export the store, import it into a new one, and send the task again there. */
  probe: boolean;
}

const modelQuirks: fc.Arbitrary<ModelQuirks> = fc.record({
  jsonSchema: fc.constantFrom("takes", "takes", "older", "unknown"),
  jsonObject: fc.boolean(),
  images: fc.boolean(),
  imageWords: fc.constantFrom<"mmproj" | "urls">("mmproj", "urls"),
  imageUrls: fc.boolean(),
  maxTokens: fc.boolean(),
  temperature: fc.boolean(),
  effort: fc.boolean(),
  fields: fc.subarray([...EXTRA_FIELDS]),
  wording: fc.constantFrom<Wording>("openai", "groq"),
});

const endpointQuirks: fc.Arbitrary<EndpointQuirks> = fc.record({
  grammar: fc.constantFrom<false | "pattern" | "all">(false, "pattern", "all"),
  ownGrammar: fc.boolean(),
  models: fc.tuple(modelQuirks, modelQuirks),
});

const part: fc.Arbitrary<Exclude<SideTaskInput, string>[number]> = fc.oneof(
  fc.constantFrom("Read this.", "And this.").map((text) => ({ type: "text" as const, text })),
  fc.constantFrom("data:image/png;base64,iVBORw0KGgo=", "https://example.com/a.png").map((url) => ({
    type: "image_url" as const,
    image_url: { url },
  })),
);

const task = (endpoints: number, models: number): fc.Arbitrary<Task> =>
  fc.record({
    kind: fc.constantFrom("ask", "askReply", "askJson"),
    endpoint: fc.nat(endpoints - 1),
    keyed: fc.boolean(),
    model: fc.nat(models - 1),
    system: fc.constantFrom("", "Be brief."),
    input: fc.oneof(fc.constant("Plan a trip."), fc.array(part, { minLength: 1, maxLength: 3 })),
    schema: fc.record({
      props: fc.uniqueArray(
        fc.record({
          name: fc.constantFrom("a", "b", "c"),
          kind: fc.constantFrom("string", "integer", "boolean", "pattern"),
          required: fc.boolean(),
        }),
        { minLength: 1, maxLength: 3, selector: (p) => p.name },
      ),
    }),
    strict: fc.constantFrom(undefined, true, false),
    maxTokens: fc.constantFrom(undefined, 0, 64),
    temperature: fc.constantFrom(undefined, 0, 0.7),
    effort: fc.constantFrom(undefined, "off", "low"),
    extra: fc.record(
      {
        top_k: fc.constant(20),
        min_p: fc.constant(0.05),
        repetition_penalty: fc.constant(1.1),
        chat_template_kwargs: fc.constant({ reasoning_budget: 0 }),
        // A caller's own response_format (json_object for a plain ask), and a grammar of its own.
        response_format: fc.constant({ type: "json_object" }),
        grammar: fc.constant('root ::= "yes" | "no"'),
        // Fields a latch answers as it answers the options' own (README of negotiate, buildBody).
        temperature: fc.constant(1),
        max_tokens: fc.constant(100),
      },
      { requiredKeys: [] },
    ),
    fault: fc.option(
      fc.record({
        kind: fc.constantFrom<Fault>(
          "loading",
          "server-error",
          "bad-key",
          "invalid-schema",
          "no-message",
          "refusal",
          "length",
        ),
        at: fc.constantFrom("first", "answer"),
      }),
      { nil: undefined, freq: 3 },
    ),
    probe: fc.boolean(),
  });

function schemaOf(t: Task): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const p of t.schema.props) {
    properties[p.name] =
      p.kind === "pattern" ? { type: "string", pattern: "^[A-Z]+-\\d+$" } : { type: p.kind };
  }
  return {
    type: "object",
    properties,
    required: t.schema.props.filter((p) => p.required).map((p) => p.name),
  };
}

function answerOf(t: Task): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of t.schema.props) {
    out[p.name] =
      p.kind === "integer" ? 7 : p.kind === "boolean" ? true : p.kind === "pattern" ? "AB-1" : "x";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The reference: what is latched where, and the body it makes.

interface ModelLatches {
  structuredOutput: boolean;
  responseFormatDropped: boolean;
  legacyTokenLimit: boolean;
  temperature: boolean;
  effortDropped: boolean;
  dropped: Set<string>;
  /** Not in a snapshot: for the life of the store. */
  images: boolean;
  imageUrls: boolean;
}

interface EndpointLatches {
  strictSchemas: boolean;
  models: Map<string, ModelLatches>;
}

type Reference = Map<number, EndpointLatches>;

function freshModel(): ModelLatches {
  return {
    structuredOutput: true,
    responseFormatDropped: false,
    legacyTokenLimit: true,
    temperature: true,
    effortDropped: false,
    dropped: new Set(),
    images: false,
    imageUrls: false,
  };
}

function latchesOf(
  ref: Reference,
  endpoint: number,
  model: string,
): { ep: EndpointLatches; m: ModelLatches } {
  let ep = ref.get(endpoint);
  if (!ep) {
    ep = { strictSchemas: true, models: new Map() };
    ref.set(endpoint, ep);
  }
  let m = ep.models.get(model);
  if (!m) {
    m = freshModel();
    ep.models.set(model, m);
  }
  return { ep, m };
}

/** A copy as a snapshot carries it: the image latches left behind. */
function snapshotOf(ref: Reference): Reference {
  const out: Reference = new Map();
  for (const [key, ep] of ref) {
    const models = new Map<string, ModelLatches>();
    for (const [name, m] of ep.models) {
      models.set(name, { ...m, dropped: new Set(m.dropped), images: false, imageUrls: false });
    }
    out.set(key, { strictSchemas: ep.strictSchemas, models });
  }
  return out;
}

/** Where the reference keeps an endpoint's latches: its server and its key. */
const refKey = (t: Task): number => t.endpoint * 2 + (t.keyed ? 1 : 0);

const thinkingOff = (t: Task) => t.effort === undefined || t.effort === "off";

/** The body the reference predicts, with the system message's text left to `system`. */
function predictBody(
  t: Task,
  ep: EndpointLatches,
  m: ModelLatches,
  system: string | undefined,
): Record<string, unknown> {
  const model = MODELS[t.model] as string;
  const images = typeof t.input !== "string" && t.input.some((p) => p.type === "image_url") && !m.images;
  let content: unknown;
  if (typeof t.input === "string") content = t.input;
  else if (!images) content = t.input.map((p) => (p.type === "text" ? p.text : IMAGE_LEFT_OUT)).join("\n\n");
  else
    content = t.input.map((p) =>
      p.type === "image_url" && m.imageUrls && !p.image_url.url.startsWith("data:")
        ? { type: "text", text: IMAGE_URL_LEFT_OUT }
        : p,
    );
  const messages: unknown[] = [];
  if (system !== undefined) messages.push({ role: "system", content: system });
  messages.push({ role: "user", content });
  const body: Record<string, unknown> = { model, messages, stream: false };
  const ceiling = t.maxTokens ?? 512;
  if (ceiling > 0) body[m.legacyTokenLimit ? "max_tokens" : "max_completion_tokens"] = ceiling;
  if (m.temperature) body.temperature = t.temperature ?? 0.3;
  if (!thinkingOff(t) && !m.effortDropped) body.reasoning_effort = t.effort;
  const extra: Record<string, unknown> = { ...t.extra };
  if (thinkingOff(t)) {
    extra.chat_template_kwargs = {
      enable_thinking: false,
      ...((t.extra.chat_template_kwargs as object | undefined) ?? {}),
    };
  }
  for (const [key, value] of Object.entries(extra)) {
    if (m.dropped.has(key)) continue;
    if (key === "response_format" && !m.structuredOutput) continue;
    if (key === "temperature" && !m.temperature) continue;
    if (key === "max_tokens" && !m.legacyTokenLimit) {
      body.max_completion_tokens = value;
      continue;
    }
    body[key] = value;
  }
  if (t.kind === "askJson") {
    if (m.structuredOutput) {
      // The schema itself is checked apart (strict or relaxed); here its form and strictness.
      const strict = (t.strict ?? true) && ep.strictSchemas;
      body.response_format = {
        type: "json_schema",
        json_schema: { name: "answer", ...(strict ? { strict } : {}) },
      };
    } else if (!m.responseFormatDropped) body.response_format = { type: "json_object" };
  }
  return body;
}

/** The body as sent, with the json_schema's schema taken out (compared apart). */
function comparable(body: Record<string, unknown>): { body: Record<string, unknown>; schema: unknown } {
  const format = body.response_format as Record<string, unknown> | undefined;
  if (format?.type !== "json_schema") return { body, schema: undefined };
  const { schema, ...rest } = format.json_schema as Record<string, unknown>;
  return { body: { ...body, response_format: { ...format, json_schema: rest } }, schema };
}

const hasPattern = (value: unknown): boolean => JSON.stringify(value ?? null).includes('"pattern"');

// ---------------------------------------------------------------------------------------------
// The servers: the hidden quirks decide each attempt; a fault is put where the task says.

interface Current {
  task: Task;
  attempt: number;
  /** The fault at "answer" is spent once it has been answered (a loading 503 is then over). */
  spent: boolean;
}
let current: Current | undefined;

type Refused =
  | { kind: "field"; field: ExtraField }
  | {
      kind:
        | "maxTokens"
        | "temperature"
        | "effort"
        | "jsonSchema"
        | "formatUnknown"
        | "jsonObject"
        | "grammar"
        | "ownGrammar"
        | "imageUrl"
        | "image";
    };

/** What the quirks answer to a body: a refusal (and what it is, for the reference), or undefined. */
function refusalFor(
  q: EndpointQuirks,
  mq: ModelQuirks,
  body: Record<string, unknown>,
): { reply: Reply; refused: Refused } | undefined {
  for (const field of EXTRA_FIELDS) {
    if (mq.fields.includes(field) && field in body)
      return { reply: UNKNOWN_FIELD[mq.wording](field), refused: { kind: "field", field } };
  }
  if (mq.maxTokens && "max_tokens" in body)
    return { reply: REFUSALS.maxTokens(), refused: { kind: "maxTokens" } };
  if (mq.temperature && "temperature" in body)
    return { reply: REFUSALS.temperature(body.temperature as number), refused: { kind: "temperature" } };
  if (mq.effort && "reasoning_effort" in body)
    return { reply: REFUSALS.effort(), refused: { kind: "effort" } };
  const format = body.response_format as Record<string, unknown> | undefined;
  if (format?.type === "json_schema" && mq.jsonSchema === "older")
    return { reply: llamacppFormatTypeRefusal("json_schema"), refused: { kind: "jsonSchema" } };
  if (format && mq.jsonSchema === "unknown")
    return { reply: UNKNOWN_FIELD[mq.wording]("response_format"), refused: { kind: "formatUnknown" } };
  if (format?.type === "json_object" && mq.jsonObject)
    return { reply: REFUSALS.jsonObject(), refused: { kind: "jsonObject" } };
  if (
    format?.type === "json_schema" &&
    (q.grammar === "all" || (q.grammar === "pattern" && hasPattern(format)))
  )
    return { reply: REFUSALS.grammar(), refused: { kind: "grammar" } };
  if (q.ownGrammar && "grammar" in body)
    return { reply: REFUSALS.ownGrammar(), refused: { kind: "ownGrammar" } };
  const messages = body.messages as { role: string; content: unknown }[];
  const user = messages.at(-1)?.content;
  const parts = Array.isArray(user) ? (user as { type: string; image_url?: { url: string } }[]) : [];
  if (mq.imageUrls && parts.some((p) => p.type === "image_url" && !p.image_url?.url.startsWith("data:")))
    return { reply: REFUSALS.imageUrl(), refused: { kind: "imageUrl" } };
  if (mq.images && parts.some((p) => p.type === "image_url")) {
    const remote = parts.some((p) => p.type === "image_url" && !p.image_url?.url.startsWith("data:"));
    if (mq.imageWords === "urls")
      return { reply: REFUSALS.imageUrl(), refused: { kind: remote ? "imageUrl" : "image" } };
    return { reply: REFUSALS.image(), refused: { kind: "image" } };
  }
  return undefined;
}

function faultReply(fault: Fault, t: Task, body: Record<string, unknown>): Reply | undefined {
  switch (fault) {
    case "loading":
      return REFUSALS.loading();
    case "server-error":
      return REFUSALS.serverError();
    case "bad-key":
      return REFUSALS.badKey();
    case "invalid-schema":
      // Only where a schema went.
      return (body.response_format as { type?: string } | undefined)?.type === "json_schema"
        ? REFUSALS.invalidSchema()
        : undefined;
    case "no-message":
      return {
        type: "raw",
        headers: { "content-type": "application/json" },
        chunks: [JSON.stringify({ id: "x", object: "chat.completion", created: 0, model: "m", choices: [] })],
      };
    case "refusal":
      return {
        type: "raw",
        headers: { "content-type": "application/json" },
        chunks: [
          JSON.stringify({
            id: "x",
            object: "chat.completion",
            created: 0,
            model: "m",
            choices: [
              {
                index: 0,
                message: { role: "assistant", content: null, refusal: "I can't help." },
                finish_reason: "stop",
              },
            ],
          }),
        ],
      };
    case "length":
      return { content: t.kind === "askJson" ? '{"a": ' : "A trip to", finishReason: "length" };
  }
}

function answer(t: Task): Reply {
  return { content: t.kind === "askJson" ? JSON.stringify(answerOf(t)) : "A trip to Lisbon" };
}

/** The whole decision for one attempt, used by the servers and by the reference alike. */
function decide(
  q: EndpointQuirks,
  t: Task,
  body: Record<string, unknown>,
  attempt: number,
  spent: boolean,
): { reply: Reply; spends: boolean; refused?: Refused } {
  const mq = q.models[t.model] as ModelQuirks;
  if (t.fault?.at === "first" && attempt === 0) {
    const reply = faultReply(t.fault.kind, t, body);
    if (reply) return { reply, spends: true };
  }
  const refused = refusalFor(q, mq, body);
  if (refused) return { reply: refused.reply, spends: false, refused: refused.refused };
  if (t.fault?.at === "answer" && !spent) {
    const reply = faultReply(t.fault.kind, t, body);
    if (reply) return { reply, spends: true };
  }
  return { reply: answer(t), spends: false };
}

// ---------------------------------------------------------------------------------------------
// The reference run of one task: the attempts, the outcome, the notices, the latches after.

interface Predicted {
  bodies: Record<string, unknown>[];
  outcome: { code: string } | { value: unknown };
  notices: RegExp[];
}

/** negotiate's words for a JSON schema (structured output) the model refused. */
const STRUCTURED = /refused structured output \(a JSON schema in response_format\)/;
/** negotiate's words for response_format refused as a field the server does not know (r94h). */
const FORMAT_FIELD = /refused structured output \(response_format[\w.[\]]*, a field it does not take\)/;

/** What a side task says of the answer it read: a refusal in place of it, JSON cut at the ceiling. */
const ANSWER_REFUSED = /I can't help/;
const ANSWER_CUT = /ceiling/;

function predict(q: EndpointQuirks, t: Task, ref: Reference, system: string | undefined): Predicted {
  return attempts(q, t, ref, system);
}

/** negotiate's words for schemas it sent relaxed (r91: told by negotiate, no longer by the side task). */
const RELAXED =
  /^The server could not build a grammar from the request's schemas; sending tool and response_format schemas relaxed/;

function attempts(q: EndpointQuirks, t: Task, ref: Reference, system: string | undefined): Predicted {
  const model = MODELS[t.model] as string;
  const { ep, m } = latchesOf(ref, refKey(t), model);
  const bodies: Record<string, unknown>[] = [];
  const notices: RegExp[] = [];
  let spent = false;
  let loadingTold = false;
  let lastRefused = false;
  let relaxedHere = false;
  let lastKey = "";
  // The negotiate call under way relaxed the schema: told as that call ends (an answer, a failure,
  // or a refusal the side task answers itself), and only if the latch still holds then.
  let relaxedThisCall = false;
  const callEnds = (): void => {
    if (relaxedThisCall && !ep.strictSchemas) notices.push(RELAXED);
    relaxedThisCall = false;
  };
  for (let attempt = 0; attempt < 30; attempt++) {
    const body = predictBody(t, ep, m, system);
    // The schema goes as the endpoint's latch says; a pattern only in the strict form.
    const sentSchemaHasPattern =
      t.kind === "askJson" &&
      m.structuredOutput &&
      ep.strictSchemas &&
      t.schema.props.some((p) => p.kind === "pattern");
    const wire = sentSchemaHasPattern
      ? { ...body, response_format: { type: "json_schema", json_schema: { schema: { pattern: "x" } } } }
      : body;
    // A refusal whose latch changed nothing is not sent again as it was: request-failed after one
    // (a relaxing that changed nothing is taken back).
    const key = JSON.stringify(body) + String(sentSchemaHasPattern);
    if (lastRefused && key === lastKey) {
      if (relaxedHere) ep.strictSchemas = true;
      callEnds();
      return { bodies, outcome: { code: "request-failed" }, notices };
    }
    lastRefused = false;
    lastKey = key;
    bodies.push(body);
    const { reply, spends, refused } = decide(q, t, wire, attempt, spent);
    if (spends) spent = true;
    if (refused) {
      lastRefused = true;
      switch (refused.kind) {
        case "field":
          m.dropped.add(refused.field);
          notices.push(new RegExp(`refused the field ${refused.field}`));
          break;
        case "maxTokens":
          // A rename that loses nothing: not told (r91, as in turns).
          m.legacyTokenLimit = false;
          break;
        case "temperature":
          m.temperature = false;
          notices.push(/refused the temperature asked \(it takes only its own default\)/);
          break;
        case "effort":
          m.effortDropped = true;
          notices.push(/does not take reasoning_effort/);
          break;
        case "jsonSchema":
          m.structuredOutput = false;
          notices.push(STRUCTURED);
          break;
        case "formatUnknown":
          if (m.structuredOutput) {
            // The field refused by name under the side task's own json_schema: json_object is the
            // same field, so it is latched too and the next request asks in words (r95c), told
            // before negotiate's latch is.
            if (t.kind === "askJson") {
              m.responseFormatDropped = true;
              notices.push(/refused response_format; asking it for JSON in words/);
            }
            // negotiate's latch, told in its words (the caller's own response_format left out too).
            m.structuredOutput = false;
            notices.push(FORMAT_FIELD);
          } else {
            // The side task's own: its json_object refused, asked in words.
            callEnds();
            m.responseFormatDropped = true;
            notices.push(/refused response_format; asking it for JSON in words/);
          }
          break;
        case "jsonObject":
          callEnds();
          // A json_object of the caller's own (extraBody) refused for its value: theirs to fix.
          if (t.kind !== "askJson") return { bodies, outcome: { code: "request-failed" }, notices };
          m.responseFormatDropped = true;
          notices.push(/refused response_format; asking it for JSON in words/);
          break;
        case "grammar":
        case "ownGrammar":
          // Relaxed once (the caller's own grammar is worded as a schema's, and answered alike);
          // the same refusal of the relaxed request takes the latch back and fails.
          if (!ep.strictSchemas || relaxedHere) {
            if (relaxedHere) ep.strictSchemas = true;
            callEnds();
            return { bodies, outcome: { code: "request-failed" }, notices };
          }
          ep.strictSchemas = false;
          relaxedHere = true;
          relaxedThisCall = true;
          break;
        case "imageUrl":
          callEnds();
          m.imageUrls = true;
          notices.push(/image given by URL/);
          break;
        case "image":
          callEnds();
          m.images = true;
          notices.push(/refused the image/);
          break;
      }
      continue;
    }
    // Not a refusal negotiate answers: the negotiate call under way ends here.
    callEnds();
    if (reply.type === "error") {
      // A fault: loading is waited out, everything else passed on as request-failed.
      if (reply.status === 503) {
        if (!loadingTold) notices.push(/loading the model/);
        loadingTold = true;
        continue;
      }
      return { bodies, outcome: { code: "request-failed" }, notices };
    }
    // An answer (status 200).
    if (t.fault && spends && t.fault.kind === "no-message")
      return { bodies, outcome: { code: "no-reply" }, notices };
    if (spends && t.fault?.kind === "refusal") {
      notices.push(ANSWER_REFUSED);
      const value =
        t.kind === "askJson"
          ? undefined
          : t.kind === "ask"
            ? ""
            : { text: "", finishReason: "stop", refusal: "I can't help." };
      return { bodies, outcome: { value }, notices };
    }
    if (spends && t.fault?.kind === "length") {
      if (t.kind === "askJson") {
        notices.push(ANSWER_CUT);
        return { bodies, outcome: { value: undefined }, notices };
      }
      return {
        bodies,
        outcome: { value: t.kind === "ask" ? "A trip to" : { text: "A trip to", finishReason: "length" } },
        notices,
      };
    }
    const value =
      t.kind === "askJson"
        ? answerOf(t)
        : t.kind === "ask"
          ? "A trip to Lisbon"
          : { text: "A trip to Lisbon", finishReason: "stop" };
    return { bodies, outcome: { value }, notices };
  }
  throw new Error("the reference ran past 30 attempts");
}

// ---------------------------------------------------------------------------------------------

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe("side tasks: what is sent after which refusal, latched where (a model, over HTTP)", () => {
  it(
    "matches the reference after every task",
    async () => {
      let quirks: EndpointQuirks[] = [];
      // Two servers for the whole property; the quirks of each run are read through `quirks`.
      for (let i = 0; i < 2; i++) {
        const index = i;
        servers.push(
          await startServer({
            replies: (request) => {
              const c = current;
              const q = quirks[index];
              if (!c || !q) return { type: "error", status: 500, body: { error: { message: "no task" } } };
              const { reply, spends } = decide(
                q,
                c.task,
                request.body as Record<string, unknown>,
                c.attempt,
                c.spent,
              );
              c.attempt++;
              if (spends) c.spent = true;
              return reply;
            },
          }),
        );
      }
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 2 }).chain((endpoints) =>
            fc.integer({ min: 1, max: 2 }).chain((models) =>
              fc.record({
                endpoints: fc.constant(endpoints),
                shared: fc.boolean(),
                quirks: fc.tuple(endpointQuirks, endpointQuirks),
                tasks: fc.array(task(endpoints, models), { minLength: 1, maxLength: 6 }),
              }),
            ),
          ),
          async (run) => {
            quirks = run.quirks;
            const sharedStore = createCapabilityStore();
            const sharedPool = createClientPool();
            let ref: Reference = new Map();
            for (const t of run.tasks) {
              if (!run.shared) ref = new Map();
              const store: CapabilityStore = run.shared ? sharedStore : createCapabilityStore();
              const clients = run.shared ? sharedPool : createClientPool();
              const server = servers[t.endpoint] as TestServer;
              const before = server.chatRequests.length;
              const notices: string[] = [];
              const options = {
                capabilities: store,
                clients,
                onNotice: (n: string) => notices.push(n),
                ...(t.maxTokens !== undefined ? { maxTokens: t.maxTokens } : {}),
                ...(t.temperature !== undefined ? { temperature: t.temperature } : {}),
                ...(t.effort !== undefined ? { reasoningEffort: t.effort } : {}),
                extraBody: { ...t.extra },
              };
              const endpoint = { baseUrl: server.baseUrl, ...(t.keyed ? { apiKey: "sk-second" } : {}) };
              const model = MODELS[t.model] as string;
              current = { task: t, attempt: 0, spent: false };
              const outcome = await (t.kind === "askJson"
                ? askJson(endpoint, model, t.system, t.input, schemaOf(t), {
                    ...options,
                    ...(t.strict !== undefined ? { strict: t.strict } : {}),
                  })
                : t.kind === "ask"
                  ? ask(endpoint, model, t.system, t.input, options)
                  : askReply(endpoint, model, t.system, t.input, options)
              ).then(
                (value) => ({ value }),
                (e: unknown) => ({ code: SideTaskError.isInstance(e) ? e.code : String(e) }),
              );
              current = undefined;
              const sent = server.chatRequests.slice(before).map((r) => r.body as Record<string, unknown>);
              const systemSent = sent[0]
                ? (sent[0].messages as { role: string; content: string }[]).find((x) => x.role === "system")
                    ?.content
                : undefined;
              if (t.kind !== "askJson") {
                expect(systemSent).toBe(t.system === "" ? undefined : t.system);
              } else {
                expect(systemSent?.startsWith(t.system)).toBe(true);
              }
              const predicted = predict(run.quirks[t.endpoint] as EndpointQuirks, t, ref, systemSent);
              expect(sent.map((b) => comparable(b).body)).toEqual(predicted.bodies);
              // The schema sent: relaxed (no pattern) exactly where the endpoint's latch says.
              for (const b of sent) {
                const { schema } = comparable(b);
                if (schema === undefined) continue;
                expect(schema).toMatchObject({ type: "object", additionalProperties: false });
              }
              expect(outcome).toEqual(predicted.outcome);
              expect(notices).toHaveLength(predicted.notices.length);
              for (const [i, re] of predicted.notices.entries()) expect(notices[i]).toMatch(re);
              if (t.probe && run.shared) {
                // The snapshot, in a new store: the next body as the latches a snapshot keeps make it.
                const fresh = createCapabilityStore();
                fresh.importCapabilities(store.exportCapabilities());
                const again = { ...t, fault: undefined };
                const probeRef = snapshotOf(ref);
                const { ep, m } = latchesOf(probeRef, refKey(t), model);
                const expected = predictBody(again, ep, m, systemSent);
                const mark = server.chatRequests.length;
                current = { task: again, attempt: 0, spent: false };
                const probeOptions = { ...options, capabilities: fresh, onNotice: () => {} };
                await (t.kind === "askJson"
                  ? askJson(endpoint, model, t.system, t.input, schemaOf(t), {
                      ...probeOptions,
                      ...(t.strict !== undefined ? { strict: t.strict } : {}),
                    })
                  : ask(endpoint, model, t.system, t.input, probeOptions)
                ).catch(() => undefined);
                current = undefined;
                const first = server.chatRequests[mark]?.body as Record<string, unknown>;
                expect(comparable(first).body).toEqual(expected);
              }
            }
          },
        ),
        // Each loading 503 waits the side task's one-second poll: kept to a modest number of runs
        // (LATCH_RUNS widens it, as negotiate's model reads it).
        propertyRuns(Number(process.env.LATCH_RUNS ?? 80)),
      );
    },
    propertyTimeout(120_000 + Number(process.env.LATCH_RUNS ?? 0) * 1_500),
  );
});
