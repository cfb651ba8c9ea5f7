/**
 * The `mistral` personality: Mistral's API (La Plateforme) — its 422 for `stream_options` and its
 * 400 for a tool-call id that is not nine ASCII letters and digits, from `errors/mistral/`, and
 * nine-character ids on the tool calls it streams, as `wire/mistral/` shows them.
 */
import { createHash } from "node:crypto";
import { readFixture } from "../fixtures.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply } from "../replies.js";
import { flag, type OptionRule, ownOptions } from "./options.js";
import type { Personality } from "./personality.js";
import { isRecord, jsonError, swap } from "./recorded.js";

/** Options of {@link mistralPersonality}. */
export interface MistralPersonalityOptions {
  /**
   * Refuse `stream_options` with the recorded 422 (default true, as recorded in 2025); `false` for
   * an API that has since taken it.
   */
  refuseStreamOptions?: boolean | null | undefined;
}

const F = {
  streamOptions: "errors/mistral/422-stream-options-extra-forbidden-message-is-object.json",
  toolCallId: "errors/mistral/400-tool-call-id-must-be-nine-alphanumerics.json",
} as const;

/** Every fixture the mistral personality reads, for the README and tests. */
export const MISTRAL_FIXTURES: readonly string[] = Object.values(F);

const SHORT_ID = /^[A-Za-z0-9]{9}$/;

/** The first tool-call id in the transcript that is not nine letters and digits, in request order. */
function refusedId(messages: unknown): string | undefined {
  if (!Array.isArray(messages)) return undefined;
  for (const message of messages) {
    if (!isRecord(message)) continue;
    if (Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        const id = isRecord(call) ? call.id : undefined;
        if (!(typeof id === "string" && SHORT_ID.test(id))) return String(id);
      }
    }
    if (
      message.role === "tool" &&
      !(typeof message.tool_call_id === "string" && SHORT_ID.test(message.tool_call_id))
    ) {
      return String(message.tool_call_id);
    }
  }
  return undefined;
}

type Chunk = { choices?: { delta?: Record<string, unknown>; finish_reason?: unknown }[]; usage?: unknown };
type CallDelta = { index?: number; id?: string; function?: { name?: string; arguments?: string } };

/**
 * A scripted stream as Mistral sends it (`wire/mistral/mistral-small-tool-call-no-index.sse`,
 * `mistral-text.sse`): each tool call whole — id, name and arguments, without `index` or `type` —
 * in the finish chunk's delta beside `content: null`, and the usage on that same chunk rather than
 * on a chunk of its own.
 */
function mistralChunks(chunks: object[]): object[] {
  // A turn scripted to end without a finish reason is sent as made: there is no chunk to carry them.
  if (!(chunks as Chunk[]).some((chunk) => chunk.choices?.[0]?.finish_reason != null)) return chunks;
  const calls = new Map<number, { id: string; function: { name: string; arguments: string } }>();
  const out: object[] = [];
  let finish: Chunk | undefined;
  let usage: unknown;
  for (const chunk of chunks as Chunk[]) {
    const choice = chunk.choices?.[0];
    if (!choice) {
      usage = chunk.usage ?? usage;
      continue;
    }
    const pieces = choice.delta?.tool_calls as CallDelta[] | undefined;
    if (pieces) {
      for (const piece of pieces) {
        const at = piece.index ?? 0;
        const call = calls.get(at) ?? { id: "", function: { name: "", arguments: "" } };
        call.id ||= piece.id ?? "";
        call.function.name += piece.function?.name ?? "";
        call.function.arguments += piece.function?.arguments ?? "";
        calls.set(at, call);
      }
      continue;
    }
    if (choice.finish_reason != null) finish = chunk;
    else out.push(chunk);
  }
  if (finish) {
    const [choice] = finish.choices ?? [];
    const delta = calls.size > 0 ? { content: null, tool_calls: [...calls.values()] } : { content: "" };
    out.push({ ...finish, choices: [{ ...choice, delta }], ...(usage ? { usage } : {}) });
  }
  return out;
}

/** What each option of {@link mistralPersonality} must be. */
const MISTRAL_OPTION_RULES: Record<keyof MistralPersonalityOptions, OptionRule> = {
  refuseStreamOptions: flag,
};

/**
 * Makes the `mistral` personality.
 *
 * Refuses, in order: a request carrying `stream_options` (the recorded 422, whose `message` is a
 * pydantic `{detail: […]}` object) unless `refuseStreamOptions` is false, and a transcript with a
 * tool-call id (an assistant `tool_calls[].id`, a tool message's `tool_call_id`) that is not
 * exactly nine ASCII letters and digits (the recorded 400, `invalid_function_call`, code `"3280"`,
 * naming the first such id). The tool calls it streams get nine-character ids, as Mistral's do
 * (`gSIMJiOkT`; a scripted id is sent as scripted), each whole in the finish chunk without `index`
 * or `type`, and the usage rides on the finish chunk, as the recorded streams show.
 */
export function mistralPersonality(given: MistralPersonalityOptions = {}): Personality {
  const options = ownOptions("mistral personality", given, MISTRAL_OPTION_RULES);
  const refuseStreamOptions = options.refuseStreamOptions ?? true;

  const check = (request: RecordedRequest): ErrorReply | undefined => {
    const body = request.body;
    if (!isRecord(body)) return undefined;
    if (refuseStreamOptions && body.stream_options !== undefined) {
      return jsonError(422, readFixture(F.streamOptions));
    }
    const id = refusedId(body.messages);
    if (id !== undefined) {
      const recorded = readFixture(F.toolCallId);
      // The id goes in as JSON writes it (a quote or backslash in it stays valid JSON).
      return jsonError(
        400,
        swap(recorded, [["2968-LWy3uasib", JSON.stringify(id).slice(1, -1)]], F.toolCallId),
      );
    }
    return undefined;
  };

  return {
    name: "mistral",
    check,
    chunks: mistralChunks,
    toolCallId(completion, index) {
      const digest = createHash("sha256").update(`${completion}:${index}`).digest("base64");
      return digest
        .replace(/[^A-Za-z0-9]/g, "")
        .slice(0, 9)
        .padEnd(9, "0");
    },
  };
}
