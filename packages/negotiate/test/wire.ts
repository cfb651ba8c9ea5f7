/**
 * Test helpers: a minimal stream reader over the real `openai` client (the stream package's
 * `streamTurn` is only a dev dependency of negotiate), one turn through `negotiate` as a host
 * composing its own loop sends it, and fixture bodies as testkit error replies.
 */
import { getClient, keepErrorBodies } from "@loopwright/client";
import { streamTurn } from "@loopwright/stream";
import { type ErrorReply, readFixture, recordedError, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import {
  type CapabilityStore,
  createCapabilityStore,
  type EndpointCapabilities,
} from "../src/capabilities.js";
import { negotiate, type Produced } from "../src/negotiate.js";
import { buildBody, type ToolDefinition } from "../src/request-body.js";

/** A request body as the tests read it back from the testkit: the tools' names and the choice. */
export type SentTools = { tools?: { function: { name: string } }[]; tool_choice?: unknown };

/**
 * One streamed turn through `negotiate`, as a host composing its own loop sends it: the body built
 * by `buildBody` from the latches on every attempt, read by the stream package's `streamTurn`.
 * `supports` defaults to a fresh store's record for `config.baseUrl`.
 */
export function negotiatedTurn(
  config: { baseUrl: string; model: string; extraBody?: Record<string, unknown> },
  messages: readonly unknown[],
  tools?: ToolDefinition[],
  options: {
    buildOptions?: Parameters<typeof buildBody>[5];
    supports?: EndpointCapabilities;
    onNotice?: (text: string) => void;
  } = {},
): ReturnType<typeof streamTurn> {
  return negotiate(
    options.supports ?? createCapabilityStore().capabilitiesFor(config.baseUrl),
    (supports, produced, model) =>
      streamTurn(
        getClient(config),
        buildBody(config, supports, model, messages, tools, options.buildOptions),
        {
          produced,
        },
      ),
    { model: config.model, ...(options.onNotice ? { onNotice: options.onNotice } : {}) },
  );
}

/**
 * A store's endpoint for `on` (a new store's unless one is given), and the real client a pooled one
 * is: no SDK retries, error bodies kept.
 */
export function tenantOf(on: TestServer, store: CapabilityStore = createCapabilityStore()) {
  const supports = store.capabilitiesFor(on.baseUrl, "sk-test");
  const client = new OpenAI({
    baseURL: on.baseUrl,
    apiKey: "sk-test",
    maxRetries: 0,
    fetch: keepErrorBodies(),
  });
  return { store, supports, client };
}

/** A real client for a testkit server: no SDK retries, so each request on the wire is one of ours. */
export function clientFor(baseURL: string, apiKey = "test-key"): OpenAI {
  return new OpenAI({ baseURL, apiKey, maxRetries: 0 });
}

/** Streams one request and returns the text; sets `produced` on the first delta that carries something. */
export async function streamText(
  client: OpenAI,
  body: Record<string, unknown>,
  produced: Produced,
): Promise<string> {
  const stream = (await client.chat.completions.create({
    ...(body as unknown as OpenAI.ChatCompletionCreateParamsStreaming),
    stream: true,
  })) as AsyncIterable<OpenAI.ChatCompletionChunk>;
  let text = "";
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta;
    if (delta?.content || delta?.tool_calls?.length) produced.value = true;
    text += delta?.content ?? "";
  }
  return text;
}

/**
 * A recorded error body as the reply a server sent: the testkit's `recordedError`, file first as
 * the tests here have long called it.
 */
export function fixtureError(rel: string, status: number): ErrorReply {
  return recordedError(status, rel);
}

/** A `curl -i` capture's status and body (for llamacpp-live and the one `.http` file). */
export function capture(rel: string): { status: number; body: string } {
  const text = readFixture(rel);
  const split = /\r?\n\r?\n/.exec(text);
  const head = split ? text.slice(0, split.index) : text;
  const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(head)?.[1]);
  return { status, body: split ? text.slice(split.index + split[0].length) : "" };
}

/** Catches what a promise rejects with (fails the test when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}

/** What the real openai client rejects with when the testkit `server` answers `status` with `body`. */
export function refusedBy(server: TestServer, status: number, body: unknown): Promise<unknown> {
  server.enqueue({ type: "error", status, body });
  return rejection(
    clientFor(server.baseUrl).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    }),
  );
}

/** One tool whose `id` parameter has a grammar-safe pattern: what relaxed tools would turn into words. */
export const LOOKUP_TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "lookup",
      parameters: {
        type: "object",
        properties: { id: { type: "string", pattern: "^[a-z]+$" } },
        required: ["id"],
        additionalProperties: false,
      },
    },
  },
];

/**
 * A snapshot naming `baseUrls` verbatim (as an older version wrote one), imported into a new store
 * and exported again: the text of that export.
 */
export function exportedAfterImport(baseUrls: readonly string[]): string {
  const restored = createCapabilityStore();
  restored.importCapabilities({
    version: 1,
    endpoints: baseUrls.map((baseUrl) => ({
      baseUrl,
      keyId: "",
      strictSchemas: true,
      usageInStream: true,
      models: {},
    })),
  });
  return JSON.stringify(restored.exportCapabilities());
}

/** A strict tool (`strict: true`): sent as it is while the endpoint takes strict schemas, relaxed after. */
export const STRICT_LOOKUP_TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "lookup",
      strict: true,
      parameters: {
        type: "object",
        properties: { id: { type: "string" } },
        required: ["id"],
        additionalProperties: false,
      },
    },
  },
];

/** A tool-call id of 53 characters: too long for Azure's 40, not Mistral's nine letters and digits. */
export const LONG_TOOL_CALL_ID = "call_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL";

/** A transcript with one earlier call of `lookup` under `LONG_TOOL_CALL_ID`, and its result. */
export function transcriptWithLongId(question = "Look up item 7."): unknown[] {
  return [
    { role: "user", content: question },
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: LONG_TOOL_CALL_ID, type: "function", function: { name: "lookup", arguments: '{"id":"7"}' } },
      ],
    },
    { role: "tool", tool_call_id: LONG_TOOL_CALL_ID, content: "item 7 is a lamp" },
  ];
}
