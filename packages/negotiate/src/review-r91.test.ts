/**
 * Review r91: negotiate tells the latches it used to make without a word.
 *
 * A host that composes its own loop from negotiate (no `runTurn`, no side task) heard nothing when a
 * refusal relaxed its schemas, took its temperature away, stopped its stream usage or left its
 * `response_format` out: only the loop and the side tasks compared what their own requests changed
 * and said so. negotiate now tells each latch it makes through `onNotice`, once per latch per
 * endpoint (or model), as it already told `tool_choice` and the rest; the relaxed schemas once the
 * call is over and only where that latch held; the ceiling respelled `max_completion_tokens` is a
 * rename that loses nothing and is not told.
 *
 * The host here is its own: `fetch` to the testkit's loopback server, the stream read by hand, a
 * refusal thrown as `{ status, body }` — no SDK client and nothing from the loop.
 */
import {
  llamacppFormatTypeRefusal,
  type Reply,
  recordedError,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type CapabilityStore, createCapabilityStore } from "./capabilities.js";
import { negotiate, type Produced } from "./negotiate.js";
import { buildBody, type ModelParams, type ToolDefinition } from "./request-body.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const fine = (content: string): Reply => ({ content });

/** One request as a host writes it: its own fetch, the SSE read by hand, a refusal thrown with its body. */
async function post(baseUrl: string, body: unknown, produced: Produced): Promise<string> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) {
    throw Object.assign(new Error(`HTTP ${response.status}`), {
      status: response.status,
      body: JSON.parse(text),
    });
  }
  let content = "";
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const piece = (JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]
      ?.delta?.content;
    if (piece) {
      produced.value = true;
      content += piece;
    }
  }
  return content;
}

const question = [{ role: "user", content: "Name a colour." }];

/** A tool asked strict, with a pattern a grammar converter may refuse. */
const tools: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "lookup",
      strict: true,
      parameters: {
        type: "object",
        properties: { code: { type: "string", pattern: "^[A-Z]+-\\d+$" } },
        required: ["code"],
        additionalProperties: false,
      },
    },
  },
];

/** The host's request: negotiate around its own fetch, every notice kept. */
function request(
  store: CapabilityStore,
  config: ModelParams,
  notices: string[],
  withTools = false,
): Promise<string> {
  const baseUrl = (server as TestServer).baseUrl;
  return negotiate(
    store.capabilitiesFor(baseUrl),
    (supports, produced, model) =>
      post(baseUrl, buildBody(config, supports, model, question, withTools ? tools : []), produced),
    { model: config.model, droppable: Object.keys(config.extraBody ?? {}), onNotice: (m) => notices.push(m) },
  );
}

const bodies = () => (server as TestServer).chatRequests.map((r) => r.body as Record<string, unknown>);

/** Two requests of a host (the second finds the latch set); what it heard. */
async function twice(replies: Reply[], config: ModelParams, withTools = false) {
  server = await startServer({ replies });
  const store = createCapabilityStore();
  const notices: string[] = [];
  await request(store, config, notices, withTools);
  await request(store, config, notices, withTools);
  return { notices, sent: bodies() };
}

describe("R91-1: a host using negotiate directly hears each latch once", () => {
  it("a temperature only the model's default goes for (OpenAI)", async () => {
    const { notices, sent } = await twice(
      [recordedError(400, "openai/temperature-0-unsupported-value.json"), fine("Blue."), fine("Red.")],
      { model: "o-model", temperature: 0 },
    );
    expect(sent.map((b) => "temperature" in b)).toEqual([true, false, false]);
    expect(notices).toEqual([
      "o-model refused the temperature asked (it takes only its own default); sending requests without one from now on.",
    ]);
  });

  it("stream_options refused by name (a relay)", async () => {
    const { notices, sent } = await twice(
      [
        recordedError(400, "relay-new-api/unknown-parameter-stream-options-with-request-ids.json"),
        fine("Blue."),
        fine("Red."),
      ],
      { model: "o-model" },
    );
    expect(sent.map((b) => "stream_options" in b)).toEqual([true, false, false]);
    expect(notices).toEqual([
      "The server refused stream_options; streaming without it from now on (token usage is counted only where the server reports it unasked).",
    ]);
  });

  it("tool schemas refused in strict form (OpenAI)", async () => {
    const { notices, sent } = await twice(
      [
        recordedError(400, "openai/strict-schema-root-additionalproperties-chat.json"),
        fine("Blue."),
        fine("Red."),
      ],
      { model: "o-model" },
      true,
    );
    expect(sent.map((b) => JSON.stringify(b.tools).includes('"strict":true'))).toEqual([true, false, false]);
    expect(notices).toEqual([
      "The server refused the request's schemas in strict form; sending tool and response_format schemas relaxed from now on (their patterns and bounds are described to the model, no longer enforced by the server).",
    ]);
  });

  it("a grammar the server could not build from the tools (llama.cpp)", async () => {
    const { notices, sent } = await twice(
      [
        recordedError(400, "llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
        fine("Blue."),
        fine("Red."),
      ],
      { model: "tiny.gguf" },
      true,
    );
    expect(sent.map((b) => JSON.stringify(b.tools).includes('"pattern"'))).toEqual([true, false, false]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^The server could not build a grammar from the request's schemas; sending tool/,
    );
  });

  it("a JSON schema in the caller's response_format (an older llama.cpp)", async () => {
    const format = { type: "json_schema", json_schema: { name: "c", schema: { type: "object" } } };
    const { notices, sent } = await twice(
      [llamacppFormatTypeRefusal("json_schema"), fine("{}"), fine("{}")],
      {
        model: "old.gguf",
        extraBody: { response_format: format },
      },
    );
    expect(sent.map((b) => "response_format" in b)).toEqual([true, false, false]);
    expect(notices).toEqual([
      "old.gguf refused structured output (a JSON schema in response_format); sending requests without one from now on: a response_format of the caller's own (extraBody) is left out, and a side task asks for json_object, or for JSON in words.",
    ]);
  });

  it("the ceiling respelled max_completion_tokens: a rename that loses nothing, not told", async () => {
    const { notices, sent } = await twice(
      [
        recordedError(400, "openai/max-tokens-unsupported-use-max-completion-tokens.json"),
        fine("Blue."),
        fine("Red."),
      ],
      { model: "o-model", maxTokens: 64 },
    );
    expect(sent.map((b) => [b.max_tokens, b.max_completion_tokens])).toEqual([
      [64, undefined],
      [undefined, 64],
      [undefined, 64],
    ]);
    expect(notices).toEqual([]);
  });

  it("a model latch is told again for another model on the endpoint, an endpoint latch is not", async () => {
    server = await startServer({
      replies: [
        recordedError(400, "relay-new-api/unknown-parameter-stream-options-with-request-ids.json"),
        recordedError(400, "openai/temperature-0-unsupported-value.json"),
        fine("Blue."),
        recordedError(400, "openai/temperature-0-unsupported-value.json"),
        fine("Red."),
      ],
    });
    const store = createCapabilityStore();
    const notices: string[] = [];
    await request(store, { model: "a-model", temperature: 0 }, notices);
    await request(store, { model: "b-model", temperature: 0 }, notices);
    expect(bodies().map((b) => ["stream_options" in b, "temperature" in b])).toEqual([
      [true, true],
      [false, true],
      [false, false],
      [false, true],
      [false, false],
    ]);
    expect(notices.map((n) => n.split(";")[0])).toEqual([
      "The server refused stream_options",
      "a-model refused the temperature asked (it takes only its own default)",
      "b-model refused the temperature asked (it takes only its own default)",
    ]);
  });

  it("schemas relaxed for nothing (a grammar of the caller's own, refused alike): taken back, not told", async () => {
    const own = recordedError(400, "llamacpp/failed-to-parse-grammar-own-grammar-b9749.json");
    server = await startServer({ replies: [own, own] });
    const store = createCapabilityStore();
    const notices: string[] = [];
    const failed = await request(
      store,
      { model: "tiny.gguf", extraBody: { grammar: "root ::= x" } },
      notices,
      true,
    )
      .then(() => undefined)
      .catch((e: unknown) => e);
    expect((failed as { status?: number } | undefined)?.status).toBe(400);
    expect(bodies()).toHaveLength(2);
    expect(store.capabilitiesFor(server.baseUrl).strictSchemas).toBe(true);
    expect(notices).toEqual([]);
  });

  it("the relaxed schemas told after the request ends, a sink that throws there changing nothing", async () => {
    server = await startServer({
      replies: [
        recordedError(400, "llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
        fine("Blue."),
      ],
    });
    const baseUrl = server.baseUrl;
    const order: string[] = [];
    const answer = await negotiate(
      createCapabilityStore().capabilitiesFor(baseUrl),
      async (supports, produced, model) => {
        const text = await post(
          baseUrl,
          buildBody({ model: "tiny.gguf" }, supports, model, question, tools),
          produced,
        );
        order.push(`answered: ${text}`);
        return text;
      },
      {
        model: "tiny.gguf",
        onNotice: (m) => {
          order.push(m.split(";")[0] ?? m);
          throw new Error("a host's sink failed");
        },
      },
    );
    expect(answer).toBe("Blue.");
    expect(order).toEqual([
      "answered: Blue.",
      "The server could not build a grammar from the request's schemas",
    ]);
  });
});
