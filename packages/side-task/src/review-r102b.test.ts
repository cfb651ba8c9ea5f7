/**
 * r102b: a stop is a stop, whatever the host stopped with. A host running a side task beside its
 * main turn on one AbortController may stop the rest with the error that ended the turn
 * (`controller.abort(error)`), another side task's `SideTaskError`, or any value at all. Before, the
 * side task handed that reason to negotiate as if the server had answered it: a main turn's
 * "temperature: only the default" refusal latched the side task's model to no temperature for the
 * life of the store, with a notice saying the model had refused it; another task's SideTaskError was
 * thrown on as this one's (a `timeout` naming another model); and a reason that throws when read
 * escaped as a bare TypeError. Each is now `aborted`, with the reason on `cause`, and nothing latched.
 */
import { type Reply, recordedError, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, noticed, thrown } from "../test/wire.js";
import { ask, askJson } from "./ask.js";
import { SideTaskError } from "./errors.js";
import { preselect } from "./preselect.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function serve(...args: Parameters<typeof startServer>): Promise<TestServer> {
  const server = await startServer(...args);
  servers.push(server);
  return server;
}

/** The error a real OpenAI client throws for a main turn the server refused with `message`. */
async function mainTurnRefusal(message: string, param: string): Promise<unknown> {
  const main = await serve({
    replies: [
      { type: "error", status: 400, body: { error: { message, type: "invalid_request_error", param } } },
    ],
  });
  const client = new OpenAI({ baseURL: main.baseUrl, apiKey: "none", maxRetries: 0 });
  const refused = await client.chat.completions
    .create({ model: "m", messages: [{ role: "user", content: "hi" }], temperature: 0.7 })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(refused).toBeInstanceOf(OpenAI.APIError);
  return refused;
}

/** Starts `run` against `server`, and aborts `controller` with `reason` once its request is in. */
async function stopMidRequest<T>(
  server: TestServer,
  controller: AbortController,
  reason: unknown,
  run: Promise<T>,
): Promise<SideTaskError> {
  const outcome = thrown(run);
  const before = server.chatRequests.length;
  while (server.chatRequests.length === before) await new Promise((r) => setTimeout(r, 5));
  controller.abort(reason);
  return outcome;
}

const TEMPERATURE_REFUSAL =
  "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.";

describe("a side task stopped mid-request with a reason that is not the server's answer", () => {
  it("is aborted when the reason is the main turn's refusal, and its model keeps its temperature", async () => {
    const refusal = await mainTurnRefusal(TEMPERATURE_REFUSAL, "temperature");
    const small = await serve({
      replies: [{ content: "late", firstByteDelayMs: 60_000 }, { content: "Title" }],
    });
    const { notices, options } = noticed();
    const controller = new AbortController();
    const error = await stopMidRequest(
      small,
      controller,
      refusal,
      ask({ baseUrl: small.baseUrl }, "m", "", "Name this chat.", { ...options, signal: controller.signal }),
    );
    expect(error.code).toBe("aborted");
    expect(error.cause).toBe(refusal);
    // Nothing was learned from a stop: no notice of a refusal, and the next request asks as before.
    expect(notices).toEqual([]);
    expect(await ask({ baseUrl: small.baseUrl }, "m", "", "Name this chat.", options)).toBe("Title");
    expect(bodies(small).map((b) => b.temperature)).toEqual([0.3, 0.3]);
  });

  it("is aborted when the reason is a refusal of response_format, and askJson still asks with its schema", async () => {
    const refusal = await mainTurnRefusal(
      "Unrecognized request argument supplied: response_format",
      "response_format",
    );
    const small = await serve({
      replies: [{ content: "late", firstByteDelayMs: 60_000 }, { content: '{"city":"Lisbon"}' }],
    });
    const { notices, options } = noticed();
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const controller = new AbortController();
    const error = await stopMidRequest(
      small,
      controller,
      refusal,
      askJson({ baseUrl: small.baseUrl }, "m", "", "Where?", schema, {
        ...options,
        signal: controller.signal,
      }),
    );
    expect(error.code).toBe("aborted");
    expect(notices).toEqual([]);
    expect(await askJson({ baseUrl: small.baseUrl }, "m", "", "Where?", schema, options)).toEqual({
      city: "Lisbon",
    });
    expect(bodies(small).map((b) => (b.response_format as { type?: string } | undefined)?.type)).toEqual([
      "json_schema",
      "json_schema",
    ]);
  });

  const everyReadThrows = new Proxy(
    {},
    {
      get() {
        throw new Error("read of the reason");
      },
      has() {
        throw new Error("has on the reason");
      },
      getPrototypeOf() {
        throw new Error("prototype of the reason");
      },
    },
  );
  it.each([
    [
      "another side task's SideTaskError",
      new SideTaskError("timeout", "ask: other-model did not answer within 5 ms."),
    ],
    ["a Proxy every read of which throws", everyReadThrows],
    ["a string", "the user left"],
    ["undefined (the default AbortError)", undefined],
  ])("is aborted, with the reason on cause, when the reason is %s", async (_, reason) => {
    const small = await serve({ replies: [{ content: "late", firstByteDelayMs: 60_000 }] });
    const { options } = noticed();
    const controller = new AbortController();
    const error = await stopMidRequest(
      small,
      controller,
      reason,
      ask({ baseUrl: small.baseUrl }, "m", "", "Name this chat.", { ...options, signal: controller.signal }),
    );
    expect(error.code).toBe("aborted");
    expect(error.message).toBe("ask: abandoned by the caller's signal.");
    if (reason !== undefined) expect(error.cause).toBe(reason);
  });
});

/**
 * OpenRouter answers an error met once the model has begun (the provider down, or rate limiting it)
 * with status 200 and `{"error": {"code", "message"}}` in place of choices. Before, the side task
 * said only "m answered without a message (an object with no choices[0].message)" (`no-reply`),
 * and the server's own words — which say what to do — were lost; preselect and the summariser
 * passed that on as their notice.
 */
describe("a 200 answer holding an error in place of a reply", () => {
  const PROVIDER_DOWN = {
    error: { code: 502, message: "Provider returned error: upstream model is overloaded, try again later" },
  };
  const raw = (body: unknown): Reply => ({
    type: "raw",
    status: 200,
    headers: { "content-type": "application/json" },
    chunks: [JSON.stringify(body)],
  });

  it("is request-failed in the server's words, for ask and askJson", async () => {
    const server = await serve({ replies: [raw(PROVIDER_DOWN), raw(PROVIDER_DOWN)] });
    const endpoint = { baseUrl: server.baseUrl };
    const asked = await thrown(ask(endpoint, "m", "", "Name this chat.", noticed().options));
    expect(asked.code).toBe("request-failed");
    expect(asked.message).toBe(
      "ask: m answered with an error in place of a reply (status 200): Provider returned error: upstream model is overloaded, try again later (code 502)",
    );
    const json = await thrown(askJson(endpoint, "m", "", "Where?", { type: "object" }, noticed().options));
    expect(json.code).toBe("request-failed");
    expect(json.message).toMatch(/upstream model is overloaded/);
    // Sent once each: the error is the server's answer, not a refusal to send again without a field.
    expect(server.chatRequests).toHaveLength(2);
  });

  it("reaches preselect's notice, and a string error is quoted too", async () => {
    const server = await serve({ replies: [raw({ error: "Rate limit exceeded: free-models-per-min" })] });
    const { notices, options } = noticed();
    const catalog = [{ name: "fs", tools: [{ name: "read_file" }] }];
    expect(await preselect({ baseUrl: server.baseUrl }, "m", catalog, "read notes.txt", options)).toEqual([]);
    expect(notices.join("\n")).toMatch(/Rate limit exceeded: free-models-per-min/);
  });

  it("never quotes the endpoint's key, where the server's error echoes it", async () => {
    const key = "sk-or-v1-0123456789abcdef0123456789abcdef";
    const server = await serve({
      replies: [raw({ error: { code: 401, message: `No auth credentials found for ${key}` } })],
    });
    const error = await thrown(
      ask({ baseUrl: server.baseUrl, apiKey: key }, "m", "", "hi", noticed().options),
    );
    expect(error.code).toBe("request-failed");
    expect(error.message).toMatch(/No auth credentials found/);
    expect(error.message).not.toContain("0123456789abcdef");
  });

  it("is still no-reply where the answer holds neither a message nor an error", async () => {
    const server = await serve({ replies: [raw({ id: "x", choices: [] })] });
    const error = await thrown(ask({ baseUrl: server.baseUrl }, "m", "", "hi", noticed().options));
    expect(error.code).toBe("no-reply");
  });
});

describe("any answer a server sends with status 200 (fast-check, over HTTP)", () => {
  it("is read as text where it holds choices[0].message, else request-failed where it holds an error, else no-reply", async () => {
    let body = "null";
    const server = await serve({
      replies: () => ({
        type: "raw",
        status: 200,
        headers: { "content-type": "application/json" },
        chunks: [body],
      }),
    });
    const catalog = [{ name: "fs", tools: [{ name: "read_file" }, { name: "write_file" }] }];
    const content = fc.oneof(
      fc.string(),
      fc.jsonValue(),
      fc.constantFrom('{"tools":["read_file","nope"]}', "<think>x</think>[1]", "```json\n{}\n```"),
    );
    const message = fc.record({ content, refusal: fc.jsonValue() }, { requiredKeys: [] });
    const choice = fc.record(
      { message: fc.oneof(message, fc.jsonValue()), finish_reason: fc.jsonValue() },
      { requiredKeys: [] },
    );
    const error = fc.oneof(
      fc.string(),
      fc.record(
        { code: fc.oneof(fc.integer(), fc.string()), message: fc.oneof(fc.string(), fc.jsonValue()) },
        { requiredKeys: [] },
      ),
      fc.jsonValue(),
    );
    const answer = fc.oneof(
      fc.jsonValue(),
      fc.record(
        {
          choices: fc.oneof(fc.array(choice, { maxLength: 2 }), fc.jsonValue()),
          error,
          usage: fc.jsonValue(),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(answer, async (value) => {
        body = JSON.stringify(value);
        const record =
          typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
        const first: unknown = Array.isArray(record?.choices) ? record.choices[0] : undefined;
        const said: unknown = record && Object.hasOwn(record, "error") ? record.error : undefined;
        const isRecord = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
        const expected =
          isRecord(first) && isRecord((first as { message?: unknown }).message)
            ? "text"
            : isRecord(said) || (typeof said === "string" && said.trim() !== "")
              ? "request-failed"
              : "no-reply";
        const asked = await ask({ baseUrl: server.baseUrl }, "m", "", "hi", noticed().options).then(
          (text) => (typeof text === "string" ? "text" : `answered ${typeof text}`),
          (e: unknown) => (SideTaskError.isInstance(e) ? e.code : `threw ${String(e)}`),
        );
        expect(asked).toBe(expected);
        // The preselection never fails a run, whatever came back, and names only catalogued tools.
        const picked = await preselect(
          { baseUrl: server.baseUrl },
          "m",
          catalog,
          "read it",
          noticed().options,
        );
        for (const name of picked) expect(["read_file", "write_file"]).toContain(name);
      }),
    );
  });
});

/**
 * A host's notice sink that throws (a `res.write` after the response ended, an event bus already
 * closed). `onUsage`'s was ignored, and so was `preselect`'s and the summariser's own; `ask`,
 * `askReply` and `askJson` let it through. Thrown while negotiate answered a refusal, it failed the
 * task as `request-failed` — "m refused the side task: write after end", the sink's words as the
 * model's — and the request that would have been answered was never sent again; thrown while the
 * server loaded the model, it escaped as the sink's own error; thrown for a refusal in place of
 * content, it turned an answered call into a rejection.
 */
describe("an onNotice that throws", () => {
  const sink = () => {
    throw new Error("write after end");
  };

  it("leaves ask to send again past a refusal it tells of, and to answer", async () => {
    const server = await serve({
      replies: [
        {
          type: "error",
          status: 400,
          body: {
            error: { message: TEMPERATURE_REFUSAL, type: "invalid_request_error", param: "temperature" },
          },
        },
        { content: "Trip to Lisbon" },
      ],
    });
    const { options } = noticed();
    expect(
      await ask({ baseUrl: server.baseUrl }, "m", "", "Name this chat.", { ...options, onNotice: sink }),
    ).toBe("Trip to Lisbon");
    expect(bodies(server).map((b) => b.temperature)).toEqual([0.3, undefined]);
  });

  it("leaves ask to wait for a model loading, and to answer", async () => {
    const server = await serve({
      replies: [recordedError(503, "llamacpp/503-loading-model.json"), { content: "Trip to Lisbon" }],
    });
    const { options } = noticed();
    expect(
      await ask({ baseUrl: server.baseUrl }, "m", "", "Name this chat.", { ...options, onNotice: sink }),
    ).toBe("Trip to Lisbon");
  });

  it("leaves a refusal in place of content answered as empty, by ask and askJson alike", async () => {
    const refusal = { content: "", refusal: "I can't help with that." } as const;
    const server = await serve({
      replies: [
        {
          type: "raw",
          status: 200,
          headers: { "content-type": "application/json" },
          chunks: [JSON.stringify({ choices: [{ message: refusal, finish_reason: "stop" }] })],
        },
        {
          type: "raw",
          status: 200,
          headers: { "content-type": "application/json" },
          chunks: [JSON.stringify({ choices: [{ message: refusal, finish_reason: "stop" }] })],
        },
      ],
    });
    const { options } = noticed();
    const endpoint = { baseUrl: server.baseUrl };
    expect(await ask(endpoint, "m", "", "hi", { ...options, onNotice: sink })).toBe("");
    expect(
      await askJson(endpoint, "m", "", "hi", { type: "object" }, { ...options, onNotice: sink }),
    ).toBeUndefined();
  });
});

/**
 * A 200 whose body is not JSON — a proxy's login page, a web UI that answers every path — reached
 * the host as "m refused the side task: Unexpected token '<', …", as if the model had refused.
 */
describe("a 200 answer that is not JSON", () => {
  it("is request-failed saying so, quoting the start of the page, not calling it a refusal", async () => {
    const server = await serve({
      replies: [
        {
          type: "raw",
          status: 200,
          headers: { "content-type": "application/json" },
          chunks: ["<html><title>Proxy login</title></html>"],
        },
      ],
    });
    const error = await thrown(ask({ baseUrl: server.baseUrl }, "m", "", "hi", noticed().options));
    expect(error.code).toBe("request-failed");
    expect(error.message).toMatch(
      /^ask: m answered with something that is not JSON \(a proxy's or a web page's answer\?\): .*<html>/,
    );
    expect(error.message).not.toMatch(/refused/);
  });
});
