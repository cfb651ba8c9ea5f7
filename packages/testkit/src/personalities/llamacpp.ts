/**
 * The `llamacpp` personality: llama-server's start-up 503, context overflow, grammar refusals,
 * `/props`, `/health` and its `/v1/models`, and the shape of its completions, from the live
 * captures in `llamacpp-live/` and the bodies in `errors/llamacpp/`.
 */
import { createHash } from "node:crypto";
import { TestkitError } from "../errors.js";
import { readFixture, readRecordedResponse } from "../fixtures.js";
import { tokenize } from "../prefix-cache.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply, TurnReply } from "../replies.js";
import type { WireUsage } from "../sse.js";
import { grammarErrors } from "./grammar-schema.js";
import { messagesRefusal, SHAPE_FIXTURES, type ShapeRefusal, streamRefusal } from "./llamacpp-request.js";
import { durationMs, flag, nonEmptyString, type OptionRule, ownOptions, positiveWhole } from "./options.js";
import type { Personality, PersonalityContext, TurnFacts } from "./personality.js";
import { includeUsageRequested, isRecord, jsonError, swap } from "./recorded.js";

/**
 * llama-server's names for the most tokens to generate, in the order it reads them: b9749's request
 * schema (ggml-org/llama.cpp tools/server/server-schema.cpp) has the field `n_predict` with the
 * aliases `max_completion_tokens` and `max_tokens`, and reads only the first one present and not
 * null (`max_completion_tokens` since PR #19831, Feb 2026).
 */
const BUDGET_FIELDS = ["n_predict", "max_completion_tokens", "max_tokens"] as const;

/**
 * The budget field llama-server reads and the int32 it makes of it (nlohmann's `get<int>`: a
 * fraction is cut, a boolean is 0 or 1, a wider integer wraps), or the message of its 400: a value
 * that is not a number ("type must be number, but is string"), or one below -1 (its hard limits are
 * -1 and INT32_MAX). Undefined when the request names none. Checked on the live b9749 server.
 */
function budgetField(body: Record<string, unknown>): { value: number } | { error: string } | undefined {
  const name = BUDGET_FIELDS.find((n) => body[n] !== undefined && body[n] !== null);
  if (name === undefined) return undefined;
  const raw = body[name];
  if (typeof raw === "boolean") return { value: raw ? 1 : 0 };
  if (typeof raw !== "number") {
    const kind = Array.isArray(raw) ? "array" : typeof raw === "object" ? "object" : "string";
    return { error: `Field '${name}': [json.exception.type_error.302] type must be number, but is ${kind}` };
  }
  const value = raw | 0;
  if (value < -1) {
    return { error: `Field '${name}': Value must be between -1 <= value <= 2147483647, but got ${value}` };
  }
  return { value };
}

/**
 * The completions llama-server (b9749) makes for a request's `n`, or the message of its 400: read
 * as the budget is (`get<int>`: a fraction cut, a boolean 0 or 1, a wider integer wrapped; a
 * string, array or object "type must be number"), absent or null 1, and it must be from 1 to the
 * server's slot count (`--parallel`: "Field 'n': Value must be between 1 <= value <= 4, but got
 * 5", captures 34-39; older builds answered any `n` other than 1 with a 500 "Only one completion
 * choice is allowed").
 */
function choicesField(body: Record<string, unknown>, slots: number): { value: number } | { error: string } {
  const raw = body.n;
  if (raw === undefined || raw === null) return { value: 1 };
  let value: number;
  if (typeof raw === "boolean") value = raw ? 1 : 0;
  else if (typeof raw === "number") value = raw | 0;
  else {
    const kind = Array.isArray(raw) ? "array" : typeof raw === "object" ? "object" : "string";
    return { error: `Field 'n': [json.exception.type_error.302] type must be number, but is ${kind}` };
  }
  if (value < 1 || value > slots) {
    return { error: `Field 'n': Value must be between 1 <= value <= ${slots}, but got ${value}` };
  }
  return { value };
}

/**
 * The most tokens llama-server generates for a request, before the context's room: the budget
 * field's value, where -1 (also its default) means no limit (`server_slot::has_budget` answers
 * "limitless") and 0 still gives one token (the budget is checked after each token, so b9749
 * answers `max_tokens: 0` with one token and "length").
 */
function llamaMaxTokens(request: RecordedRequest): number {
  const field = budgetField(isRecord(request.body) ? request.body : {});
  if (field === undefined || "error" in field || field.value === -1) return Number.POSITIVE_INFINITY;
  return Math.max(field.value, 1);
}

/** Options of {@link llamacppPersonality}. */
export interface LlamacppPersonalityOptions {
  /** Context size per slot (`-c`); prompts of this many tokens or more are refused. Default 4096. */
  nCtx?: number | null | undefined;
  /** Answer every route with 503 "Loading model" for this long after start (default 0). */
  loadingMs?: number | null | undefined;
  /** Started with `--jinja` (default true); without it any request with `tools` gets a 500. */
  jinja?: boolean | null | undefined;
  /** The model id it reports (default `tiny.gguf`, as recorded). */
  model?: string | null | undefined;
  /**
   * The chat template thinks (`enable_thinking` on): a conversation ending in an assistant message
   * (a prefill) gets the recorded 400 "Assistant response prefill is incompatible with
   * enable_thinking." Default false.
   */
  thinking?: boolean | null | undefined;
  /**
   * Refuse an overflow as the first builds with `exceed_context_size_error` did (llama.cpp PR #15780,
   * Sept 2025): HTTP 500 and "the request exceeds the available context size. try increasing the
   * context size or enable context shift", with `n_prompt_tokens` / `n_ctx`. Default false: the
   * captured current 400 with the counts in the message.
   */
  legacyOverflow?: boolean | null | undefined;
  /**
   * Slots (`--parallel`), reported as `/props`' `total_slots`: a request's `n` may ask for 1 to this
   * many choices, each answered, and more is refused with b9749's 400 "Field 'n': Value must be
   * between 1 <= value <= 4, but got 5". Default 4, as captured.
   */
  slots?: number | null | undefined;
  /**
   * Started with `--mmproj` (a vision or audio projector): `image_url` and `input_audio` content
   * parts are taken. Default false, as captured: such a part gets b9749's 500 "image input is not
   * supported - hint: if this is unexpected, you may need to provide the mmproj" ("audio input" for
   * audio).
   */
  mmproj?: boolean | null | undefined;
}

const F = {
  loading: "llamacpp-live/00-loading-503.response.txt",
  models: "llamacpp-live/01-models.response.txt",
  props: "llamacpp-live/02-props.response.txt",
  health: "llamacpp-live/03-health.response.txt",
  chat: "llamacpp-live/04-chat-nonstream.response.txt",
  overflow: "llamacpp-live/18-overflow-nonstream.response.txt",
  patternRejected: "llamacpp-live/20-schema-rejected-pattern.response.txt",
  badFormatType: "llamacpp-live/23-bad-response-format-type.response.txt",
  invalidJson: "llamacpp-live/24-invalid-json-body.response.txt",
  nOverSlots: "llamacpp-live/36-n-over-slots.response.txt",
  noJinjaTools: "llamacpp-live/no-jinja/nj04-tools-required.response.txt",
  toolSchemaRejected: "errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json",
  prefill: "errors/llamacpp/assistant-prefill-incompatible-with-enable-thinking.json",
  legacyOverflow: "errors/llamacpp/exceed-context-size-code-500-pr15780.json",
} as const;

/** Every fixture the llamacpp personality reads, for the README and tests. */
export const LLAMACPP_FIXTURES: readonly string[] = [...Object.values(F), ...Object.values(SHAPE_FIXTURES)];

/**
 * llama-server's 400 for a `response_format` type it does not take (live capture 23, which sent
 * `xml`), with `type` put in as the one it got. With `"json_schema"` it is what a llama.cpp from
 * before json_schema support answers a JSON schema with ("response_format type must be one of
 * "text" or "json_object", but got: json_schema"), for a test of what a client does next:
 * `startServer({ replies: [llamacppFormatTypeRefusal("json_schema"), { content: "{}" }] })`.
 *
 * The recorded status and body (parsed) with only that word changed; no headers of the capture.
 * Throws a `TestkitError` (`fixture-not-found`) when the capture no longer reads "but got: xml".
 */
export function llamacppFormatTypeRefusal(type: string): ErrorReply {
  const recorded = readRecordedResponse(F.badFormatType);
  const body: unknown = JSON.parse(
    swap(recorded.body, [["but got: xml", `but got: ${type}`]], F.badFormatType),
  );
  return { type: "error", status: recorded.status, body };
}

/**
 * The headers llama-server sent with the captured answer: `Server: llama.cpp`, an empty
 * `Access-Control-Allow-Origin` (it echoes the request's `Origin`, and the capture sent none) and
 * `application/json; charset=utf-8`. Transport headers (length, connection) are left to Node.
 */
function serverHeaders(rel: string = F.health): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(readRecordedResponse(rel).headers)) {
    if (!["content-length", "connection", "keep-alive", "transfer-encoding"].includes(name))
      out[name] = value;
  }
  return out;
}

/** The captured response as an error reply, body verbatim, with the captured headers. */
function captured(rel: string): ErrorReply {
  const r = readRecordedResponse(rel);
  return jsonError(r.status, r.body, serverHeaders(rel));
}

/** A captured JSON body with its `error.message` replaced and other fields merged in. */
function capturedWith(
  rel: string,
  message: (recorded: string) => string,
  extra: Record<string, unknown> = {},
): ErrorReply {
  const r = readRecordedResponse(rel);
  const body = JSON.parse(r.body) as { error: Record<string, unknown> };
  body.error.message = message(String(body.error.message));
  Object.assign(body.error, extra);
  return jsonError(r.status, JSON.stringify(body), serverHeaders(rel));
}

/**
 * A refusal of `llamacpp-request.ts` as llama-server sends it: a `curl -i` capture's status, body
 * and headers, or a recorded JSON body with its `error.code` as the status and the captured
 * headers; the refusal's words put into `error.message` either way.
 */
function shapeRefusal(refusal: ShapeRefusal): ErrorReply {
  const { fixture, swaps = [] } = refusal;
  if (fixture.startsWith("llamacpp-live/")) return capturedWith(fixture, (m) => swap(m, swaps, fixture));
  const body = JSON.parse(readFixture(fixture)) as { error: Record<string, unknown> };
  body.error.message = swap(String(body.error.message), swaps, fixture);
  return jsonError(Number(body.error.code), JSON.stringify(body), serverHeaders());
}

/** True when `raw` is JSON (of any kind: llama-server refuses a body that is JSON but not an object for its missing `messages`). */
function isJson(raw: string): boolean {
  try {
    JSON.parse(raw);
    return true;
  } catch {
    return false;
  }
}

/** The tool-parameter refusal: recorded body with the recorded errors replaced. */
function toolSchemaRefusal(errors: string[]): ErrorReply {
  const body = JSON.parse(readFixture(F.toolSchemaRejected)) as { error: Record<string, unknown> };
  body.error.message = `JSON schema conversion failed:\n${errors.join("\n")}`;
  return jsonError(400, JSON.stringify(body), serverHeaders());
}

/**
 * `length` letters and digits drawn from `seed`: the same seed gives the same string, so a test
 * can count on them, and they look like llama-server's random ones (32 of `[A-Za-z0-9]`).
 */
function lettersAndDigits(seed: string, length: number): string {
  let out = "";
  for (let round = 0; out.length < length; round++) {
    out += createHash("sha256")
      .update(`${seed}#${round}`)
      .digest("base64")
      .replace(/[^A-Za-z0-9]/g, "");
  }
  return out.slice(0, length);
}

/**
 * The rates the `timings` report: prefill 0.1 ms and decoding 2 ms a token (10,000 and 500 tokens
 * a second, the order of capture 04's 8,655 and 503). Made up, so a test's numbers do not depend
 * on the machine; the counts are the turn's.
 */
const PREFILL_MS_PER_TOKEN = 0.1;
const DECODE_MS_PER_TOKEN = 2;

/** A rate's three figures for `n` tokens, computed as llama-server does (0 for no tokens). */
function rate(n: number, msPerToken: number): { ms: number; perTokenMs: number; perSecond: number } {
  if (n <= 0) return { ms: 0, perTokenMs: 0, perSecond: 0 };
  const ms = Math.round(n * msPerToken * 1000) / 1000;
  return { ms, perTokenMs: ms / n, perSecond: (1e3 / ms) * n };
}

/**
 * llama-server's `timings` for a turn with this usage, in its key order (captures 04-06):
 * `cache_n` prompt tokens reused from the slot's cache, `prompt_n` evaluated, `predicted_n`
 * generated, and the milliseconds each took.
 */
function timingsFor(usage: WireUsage): Record<string, number> {
  const cacheN = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const promptN = Math.max(0, usage.prompt_tokens - cacheN);
  const prompt = rate(promptN, PREFILL_MS_PER_TOKEN);
  const predicted = rate(usage.completion_tokens, DECODE_MS_PER_TOKEN);
  return {
    cache_n: cacheN,
    prompt_n: promptN,
    prompt_ms: prompt.ms,
    prompt_per_token_ms: prompt.perTokenMs,
    prompt_per_second: prompt.perSecond,
    predicted_n: usage.completion_tokens,
    predicted_ms: predicted.ms,
    predicted_per_token_ms: predicted.perTokenMs,
    predicted_per_second: predicted.perSecond,
  };
}

/**
 * One choice's part of a turn's usage, where the testkit counts all `n` choices' tokens together
 * (each choice is the same scripted turn): its generated (and reasoning) tokens over `n`, rounded,
 * the prompt as it is. llama-server reports each choice's count on its own (captures 34, 35, 39).
 */
function choiceShare(usage: WireUsage, n: number): WireUsage {
  const completion = Math.round(usage.completion_tokens / n);
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  return {
    ...usage,
    completion_tokens: completion,
    total_tokens: usage.prompt_tokens + completion,
    ...(reasoning === undefined
      ? {}
      : { completion_tokens_details: { reasoning_tokens: Math.min(Math.round(reasoning / n), completion) } }),
  };
}

/**
 * A usage object in llama-server's key order, `prompt_tokens_details.cached_tokens` always
 * present (0 when nothing was reused), as captures 04-07 send it.
 */
function llamaUsage(usage: WireUsage): Record<string, unknown> {
  const { completion_tokens_details: details } = usage;
  return {
    completion_tokens: usage.completion_tokens,
    prompt_tokens: usage.prompt_tokens,
    total_tokens: usage.total_tokens,
    prompt_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
    ...(details ? { completion_tokens_details: details } : {}),
  };
}

type Delta = Record<string, unknown>;
type WireChoice = { index?: number; delta?: Delta; message?: Delta; finish_reason?: string | null };
type WireChunk = { choices?: WireChoice[]; created?: number; usage?: WireUsage };
type CallDelta = {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
};

/**
 * The tool-call deltas of a stream as llama-server sends them (captures 12, 28): a call's first
 * delta carries index, id, type, its whole name and the first piece of its arguments; each later
 * one its index and a piece of arguments. Name pieces after the first go into the first delta,
 * and so does the first arguments piece (its own chunk is dropped).
 */
function llamaCallDeltas(chunks: WireChunk[]): (CallDelta | undefined)[] {
  // Keyed by choice and call index: with `n` choices, each choice's first call has index 0.
  const names = new Map<string, string>();
  const firstArgs = new Map<string, number>(); // call → position of its first arguments piece
  const calls = chunks.map((c) => (c.choices?.[0]?.delta?.tool_calls as CallDelta[] | undefined)?.[0]);
  const keyAt = (at: number): string => `${chunks[at]?.choices?.[0]?.index ?? 0}:${calls[at]?.index ?? 0}`;
  calls.forEach((call, at) => {
    if (!call) return;
    const key = keyAt(at);
    if (call.function?.name !== undefined) names.set(key, (names.get(key) ?? "") + call.function.name);
    else if (call.function?.arguments !== undefined && !firstArgs.has(key)) firstArgs.set(key, at);
  });
  const dropped = new Set(firstArgs.values());
  return calls.map((call, at) => {
    if (!call) return undefined;
    const i = call.index ?? 0;
    if (call.id !== undefined) {
      const first = firstArgs.get(keyAt(at));
      const args = first === undefined ? "" : (calls[first]?.function?.arguments ?? "");
      return {
        index: i,
        id: call.id,
        type: "function",
        function: { name: names.get(keyAt(at)) ?? "", arguments: args },
      };
    }
    if (call.function?.name !== undefined || dropped.has(at)) return undefined;
    return { index: i, function: { arguments: call.function?.arguments ?? "" } };
  });
}

/** What a scripted turn's chunks and body are given, beside the turn's facts. */
interface Answering {
  /** The model name it answers with (its own, whatever the request named). */
  model: string;
  /** The build's `system_fingerprint`, as captured. */
  fingerprint: string;
}

/** `chatcmpl-` and 32 letters and digits, one per completion, as llama-server's ids look. */
function completionId(completion: number): string {
  return `chatcmpl-${lettersAndDigits(`llamacpp-completion:${completion}`, 32)}`;
}

/**
 * A scripted stream as llama-server sends it (captures 05, 06, 12, 28): every chunk keyed
 * choices, created, id, model, system_fingerprint, object; its own model name; no `logprobs`; the
 * opener `{role: "assistant", content: null}`; tool calls as `llamaCallDeltas` gives them; the
 * finish chunk's `delta: {}`; and `timings` on the usage chunk, or on the finish chunk when no
 * usage chunk is sent.
 */
function llamaChunks(chunks: object[], facts: TurnFacts, answering: Answering): object[] {
  const list = chunks as WireChunk[];
  const id = completionId(facts.completion);
  const calls = llamaCallDeltas(list);
  const usageAt = list.findIndex((c) => c.usage !== undefined && (c.choices?.length ?? 0) === 0);
  const finishAt = list.findIndex((c) => c.choices?.[0]?.finish_reason != null);
  const timingsAt = usageAt >= 0 ? usageAt : finishAt;
  // With `n` choices each is reported when it ends (captures 35, 38): its finish chunk, then its
  // own usage chunk (with include_usage), else `timings` on that finish chunk; each counts its share.
  const n = new Set(list.map((c) => c.choices?.[0]?.index ?? 0)).size;
  const perChoice = n > 1;
  const usage = facts.usage && perChoice ? choiceShare(facts.usage, n) : facts.usage;
  const out: object[] = [];
  list.forEach((chunk, at) => {
    const shaped = (choices: unknown[]): Record<string, unknown> => ({
      choices,
      created: chunk.created,
      id,
      model: answering.model,
      system_fingerprint: answering.fingerprint,
      object: "chat.completion.chunk",
    });
    const choice = chunk.choices?.[0];
    let body: Record<string, unknown>;
    if (choice === undefined) {
      if (perChoice) return; // sent after each choice's finish instead
      body = shaped([]);
      if (chunk.usage) body.usage = llamaUsage(chunk.usage);
    } else {
      let delta: Delta = choice.delta ?? {};
      if (delta.tool_calls !== undefined) {
        const call = calls[at];
        if (call === undefined) return; // folded into the call's first delta
        delta = { tool_calls: [call] };
      } else if ("role" in delta) {
        delta = { role: delta.role, content: delta.content === "" ? null : (delta.content ?? null) };
      }
      body = shaped([{ finish_reason: choice.finish_reason ?? null, index: choice.index ?? 0, delta }]);
    }
    const finishing = choice?.finish_reason != null;
    if (usage && (at === timingsAt || (perChoice && finishing && usageAt < 0)))
      body.timings = timingsFor(usage);
    out.push(body);
    if (usage && perChoice && finishing && usageAt >= 0) {
      out.push({ ...shaped([]), usage: llamaUsage(usage), timings: timingsFor(usage) });
    }
  });
  return echoInStream(out, echoedPrefill(facts.request));
}

/**
 * The text llama-server (b9749) sends again before its reply to a conversation that ends in an
 * assistant message (a prefill): the whole prefill, exactly, at the start of the content — streamed
 * glued to the first new token (capture 31), or at the start of a plain reply's content (32) —
 * while `completion_tokens` counts only the new tokens. Nothing with `continue_final_message: true`
 * and `add_generation_prompt: false`, which continue the message without repeating it (33).
 */
function echoedPrefill(request: RecordedRequest | undefined): string {
  const body = request?.body;
  if (!isRecord(body) || !Array.isArray(body.messages)) return "";
  if (body.continue_final_message === true && body.add_generation_prompt === false) return "";
  const last = body.messages.at(-1);
  if (!isRecord(last) || last.role !== "assistant" || typeof last.content !== "string") return "";
  return last.content;
}

/** Puts `echo` before the first content delta of llama-shaped chunks, or in one of its own after the opener. */
function echoInStream(out: object[], echo: string): object[] {
  if (echo === "") return out;
  const deltaOf = (body: object): Delta | undefined =>
    (body as { choices?: { delta?: Delta }[] }).choices?.[0]?.delta;
  const first = out.find((body) => {
    const delta = deltaOf(body);
    return delta !== undefined && !("role" in delta) && typeof delta.content === "string";
  });
  if (first) {
    const delta = deltaOf(first) as Delta;
    delta.content = echo + String(delta.content);
    return out;
  }
  const opener = out.findIndex((body) => deltaOf(body)?.role !== undefined);
  const shape = out[Math.max(opener, 0)] as Record<string, unknown> | undefined;
  if (!shape) return out;
  const { timings: _timings, usage: _usage, ...rest } = shape;
  const chunk = { ...rest, choices: [{ finish_reason: null, index: 0, delta: { content: echo } }] };
  out.splice(opener + 1, 0, chunk);
  return out;
}

/**
 * The tokens the model writes for a tool call up to the end of its name, as the Qwen2.5 template
 * asks for it: `<tool_call>\n{"name": "…"` and the closing quote — `<tool_call>` one token, as in
 * the real vocabulary (with `max_tokens: 1` llama-server's reply is `"<tool_call>"`), the rest by
 * the testkit's token rule. Until the name's closing quote is written llama-server's parser sees no
 * call: a plain reply cut there carries the markup so far as `content` (capture 51; checked live:
 * 17 tokens, `…"get_weather`, are still text, 18 a call), a stream sends none of it (capture 52).
 */
function llamaCallTokens(name: string): string[] {
  return ["<tool_call>", ...tokenize(`\n{"name": "${name}"`)];
}

/**
 * A scripted plain completion as llama-server sends it (captures 04, 07, 11, 17): keyed choices,
 * created, model, system_fingerprint, object, usage, id, timings; its own model name; no
 * `logprobs`; `content` a string (`""` beside tool calls); each tool call keyed type, function, id.
 */
function llamaCompletion(body: object, facts: TurnFacts, answering: Answering): object {
  const plain = body as { created?: number; choices?: WireChoice[]; usage?: WireUsage };
  const choices = (plain.choices ?? []).map((choice) => {
    const { role, content, tool_calls: calls, ...rest } = choice.message ?? {};
    const message: Delta = {
      role,
      content: echoedPrefill(facts.request) + (content ?? "") + (facts.cutCall?.text ?? ""),
      ...rest,
    };
    if (Array.isArray(calls)) {
      message.tool_calls = (calls as { id?: string; function?: unknown }[]).map((c) => ({
        type: "function",
        function: c.function,
        id: c.id,
      }));
    }
    return { finish_reason: choice.finish_reason ?? null, index: choice.index ?? 0, message };
  });
  const out: Record<string, unknown> = {
    choices,
    created: plain.created,
    model: answering.model,
    system_fingerprint: answering.fingerprint,
    object: "chat.completion",
  };
  // With `n` choices the usage and timings are one choice's (captures 34, 39), not the sum.
  const share = (u: WireUsage): WireUsage => (choices.length > 1 ? choiceShare(u, choices.length) : u);
  if (plain.usage) out.usage = llamaUsage(share(plain.usage));
  out.id = completionId(facts.completion);
  if (facts.usage) out.timings = timingsFor(share(facts.usage));
  return out;
}

/** Refuses a scripted tool call without a name: llama-server never sends one (captures 11-15, 28). */
function checkToolNames(reply: TurnReply): void {
  reply.toolCalls?.forEach((call, i) => {
    if (call.name === "") {
      throw new TestkitError(
        "invalid-reply",
        `Reply field toolCalls[${i}].name must not be empty with the llamacpp personality: llama-server never sends a tool call without a name. Name the tool, or script the nameless call without this personality.`,
      );
    }
  });
}

/** What each option of {@link llamacppPersonality} must be. */
const LLAMACPP_OPTION_RULES: Record<keyof LlamacppPersonalityOptions, OptionRule> = {
  nCtx: positiveWhole,
  loadingMs: durationMs,
  jinja: flag,
  model: nonEmptyString,
  thinking: flag,
  legacyOverflow: flag,
  slots: positiveWhole,
  mmproj: flag,
};

/**
 * Makes the `llamacpp` personality.
 *
 * For `loadingMs` after start every route answers the captured 503 "Loading model". Chat requests
 * are refused, in order: a body that is not JSON (captured 500), `tools` without `--jinja`
 * (captured 500), a `response_format.type` other than text/json_object/json_schema (captured 400),
 * an ill-formed request as b9749 refuses it (captures 40-49: `messages` absent or not an array, a
 * message without `content` or whose content is not a string or an array, a content part other
 * than text — an image or audio part unless `mmproj` —, a message without a string `role`, `tools`
 * not an array, a string `tool_choice` other than auto/none/required, `continue_final_message`
 * without `add_generation_prompt: false`; see `messagesRefusal`), a `response_format` schema or a
 * tool-parameter schema the grammar converter rejects (400 with the converter's messages), with
 * `thinking` a conversation ending in an assistant message (recorded 400), a `stream` that is not
 * a boolean (capture 48), a token budget (`n_predict`, else `max_completion_tokens`, else `max_tokens`)
 * that is not a number or is below -1 (b9749's 400 "Field 'max_tokens': …"), an `n` that is not a
 * number or not from 1 to `slots` (b9749's 400 "Field 'n': …"), a prompt of `nCtx` tokens or more (captured 400 `exceed_context_size_error` with
 * this prompt's `n_prompt_tokens` and `n_ctx`; with `legacyOverflow` the Sept 2025 HTTP 500 body).
 * Unknown routes and methods get llama-server's 404 "File Not Found"; every answer carries the
 * captured headers (`Server: llama.cpp`, JSON with charset). `GET /props`,
 * `GET /health` and `GET /v1/models` answer the captured bodies with `n_ctx` set to `nCtx`.
 * A streamed reply carries a usage chunk only with `stream_options.include_usage`.
 *
 * A scripted turn goes out as llama-server sends its completions (captures 04-06, 11, 12, 28): its
 * own model name whatever the request named, `chatcmpl-` and 32 letters and digits as the id, 32
 * letters and digits as a tool call's default id, the captured `system_fingerprint`, no
 * `logprobs`, the opener `content: null`, each tool call's whole name in its first delta,
 * `cached_tokens` always in the usage, and `timings` built from the usage (made-up rates). A
 * scripted tool call with an empty name is refused (`invalid-reply`): llama-server never sends one.
 * A request ending in an assistant message (a prefill) gets that message's text again at the start
 * of the scripted content, as b9749 sends it (captures 31, 32; not with `continue_final_message`
 * and `add_generation_prompt: false`, 33); the usage counts only the scripted tokens. An `n` of 2
 * to `slots` is answered with that many choices, each reported as it ends (captures 34-39).
 */
export function llamacppPersonality(given: LlamacppPersonalityOptions = {}): Personality {
  const options = ownOptions("llamacpp personality", given, LLAMACPP_OPTION_RULES);
  const nCtx = options.nCtx ?? 4096;
  const loadingMs = options.loadingMs ?? 0;
  const model = options.model ?? "tiny.gguf";
  const slots = options.slots ?? 4;
  let base: Record<string, string> | undefined;

  const check = (request: RecordedRequest, ctx: PersonalityContext): ErrorReply | undefined => {
    const body = request.body;
    if (!isRecord(body)) {
      // JSON that is not an object has no `messages` (capture 40); what is not JSON, capture 24.
      if (!isJson(request.raw)) return captured(F.invalidJson);
      return shapeRefusal({ fixture: SHAPE_FIXTURES.messagesMissing });
    }
    if (options.jinja === false && Array.isArray(body.tools)) return captured(F.noJinjaTools);
    const format = body.response_format;
    if (isRecord(format)) {
      const type = String(format.type);
      if (!["text", "json_object", "json_schema"].includes(type)) {
        return capturedWith(F.badFormatType, (m) =>
          swap(m, [["but got: xml", `but got: ${type}`]], F.badFormatType),
        );
      }
    }
    // b9749 reads the messages, tools and tool_choice after the format's type, before its schema.
    const shape = messagesRefusal(body, options.mmproj === true);
    if (shape) return shapeRefusal(shape);
    if (isRecord(format)) {
      const type = String(format.type);
      const schema =
        type === "json_schema" && isRecord(format.json_schema) ? format.json_schema.schema : format.schema;
      const errors = grammarErrors(schema);
      if (errors.length > 0) {
        return capturedWith(F.patternRejected, (m) =>
          swap(m, [["Pattern must start with '^' and end with '$'", errors.join("\n")]], F.patternRejected),
        );
      }
    }
    if (Array.isArray(body.tools)) {
      for (const tool of body.tools) {
        const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : undefined;
        const errors = grammarErrors(fn?.parameters);
        if (errors.length > 0) return toolSchemaRefusal(errors);
      }
    }
    const last = Array.isArray(body.messages) ? body.messages.at(-1) : undefined;
    if (options.thinking && isRecord(last) && last.role === "assistant") {
      return jsonError(400, readFixture(F.prefill), serverHeaders());
    }
    // The request's fields are read (and a bad `stream` or token budget refused) before the prompt is placed.
    const stream = streamRefusal(body);
    if (stream) return shapeRefusal(stream);
    const budget = budgetField(body);
    if (budget !== undefined && "error" in budget) {
      const refusal = { error: { code: 400, message: budget.error, type: "invalid_request_error" } };
      return jsonError(400, JSON.stringify(refusal), serverHeaders());
    }
    const choices = choicesField(body, slots);
    if ("error" in choices) {
      return capturedWith(F.nOverSlots, (m) =>
        swap(
          m,
          [["Field 'n': Value must be between 1 <= value <= 4, but got 5", choices.error]],
          F.nOverSlots,
        ),
      );
    }
    if (ctx.promptTokens >= nCtx && options.legacyOverflow) {
      const recorded = JSON.parse(readFixture(F.legacyOverflow)) as { error: Record<string, unknown> };
      Object.assign(recorded.error, { n_prompt_tokens: ctx.promptTokens, n_ctx: nCtx });
      // llama-server sends the error's code as the HTTP status.
      return jsonError(500, JSON.stringify(recorded), serverHeaders());
    }
    if (ctx.promptTokens >= nCtx) {
      return capturedWith(
        F.overflow,
        (m) =>
          swap(
            m,
            [
              ["(6029 tokens)", `(${ctx.promptTokens} tokens)`],
              ["(4096 tokens)", `(${nCtx} tokens)`],
            ],
            F.overflow,
          ),
        { n_prompt_tokens: ctx.promptTokens, n_ctx: nCtx },
      );
    }
    return undefined;
  };

  const capturedJson = (rel: string): Record<string, unknown> => JSON.parse(readRecordedResponse(rel).body);
  let fingerprint: string | undefined;
  const answering = (): Answering => {
    fingerprint ??= String(capturedJson(F.chat).system_fingerprint);
    return { model, fingerprint };
  };

  const models = () => {
    const body = capturedJson(F.models) as {
      models: Record<string, unknown>[];
      data: (Record<string, unknown> & { meta: Record<string, unknown> })[];
    };
    for (const m of body.models) Object.assign(m, { name: model, model });
    for (const d of body.data) {
      Object.assign(d, { id: model, aliases: [model] });
      d.meta.n_ctx = nCtx;
    }
    return body;
  };

  return {
    name: "llamacpp",
    intercept: (_request, uptimeMs) => (uptimeMs < loadingMs ? captured(F.loading) : undefined),
    check,
    models,
    props() {
      const body = capturedJson(F.props) as Record<string, unknown> & {
        default_generation_settings: Record<string, unknown>;
      };
      body.default_generation_settings.n_ctx = nCtx;
      Object.assign(body, { model_alias: model, model_path: model, total_slots: slots });
      return body;
    },
    route(request) {
      if (request.method === "GET" && request.path === "/health") return captured(F.health);
      if (request.method === "GET" && request.path === "/models")
        return { status: 200, body: models(), headers: serverHeaders(F.models) };
      return undefined;
    },
    // What llama-server sends with every answer (captures 04-chat-nonstream, 05-chat-stream-usage):
    // Server and an empty CORS origin; JSON as `application/json; charset=utf-8`; streams with
    // `X-Accel-Buffering: no`. Every error answer it sends with `Connection: close` and then closes
    // the connection (all 21 non-200 captures say so; checked live with curl for 400, 404 and 503:
    // the next request opens a new connection), so a client must not count on reusing it.
    headers(contentType, status) {
      base ??= serverHeaders(F.health);
      const close: Record<string, string> = status >= 400 ? { connection: "close" } : {};
      if (contentType === "application/json") return { ...base, ...close };
      const { "content-type": _json, ...rest } = base;
      return contentType === "text/event-stream"
        ? { ...rest, "x-accel-buffering": "no" }
        : { ...rest, ...close };
    },
    // cpp-httplib answers any unmatched method or path with 404, which llama-server's error handler
    // turns into its JSON error (ggml-org/llama.cpp tools/server/server.cpp, set_error_handler:
    // format_error_response("File Not Found", ERROR_TYPE_NOT_FOUND)).
    notFound: () => ({
      status: 404,
      body: JSON.stringify({ error: { code: 404, message: "File Not Found", type: "not_found_error" } }),
      headers: serverHeaders(F.health),
    }),
    // Generation stops at max_tokens or when the context is full (capture 29-near-context-limit).
    completionBudget: (request, ctx) => Math.min(llamaMaxTokens(request), nCtx - ctx.promptTokens),
    // A call is seen only once its markup is whole to the end of its name (captures 51, 52).
    toolCallTokens: llamaCallTokens,
    streamsUsage: includeUsageRequested,
    // b9749 answers each of the `n` choices (captures 34, 35, 38, 39); check refused any other n.
    choices: (request) => {
      const choices = isRecord(request.body) ? choicesField(request.body, slots) : undefined;
      return choices && "value" in choices ? choices.value : 1;
    },
    // A scripted answer goes out as llama-server words it: its own model name, its ids, timings.
    chunks: (chunks, facts) => llamaChunks(chunks, facts, answering()),
    completion: (body, facts) => llamaCompletion(body, facts, answering()),
    toolCallId: (completion, index) => lettersAndDigits(`llamacpp-call:${completion}:${index}`, 32),
    checkReply: checkToolNames,
  };
}
