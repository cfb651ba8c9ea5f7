// A tool's error text is the host's words, and a failing HTTP tool often quotes the request it
// sent — the endpoint's own key among it. The loop redacts the endpoint's credentials (its
// `apiKey`, and headers under a credential's name or after an auth scheme, as `credentialRedactor`
// from @loopwright/client reads them; a routing header's words stay, as in a reply) out of
// every error a call is answered with, before the model, the transcript or a watcher sees it. A
// result the tool returned is its own output, and stays as it was.
import vm from "node:vm";
import type { RunEvent } from "@loopwright/events";
import { argumentsPrototype } from "@loopwright/schema-compat";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { AssistantToolCall, ChatMessage, LoopConfig } from "./config.js";
import { type CallResult, runCalls } from "./run-calls.js";
import { createRuntime } from "./runtime.js";
import { ADD_TOOL, QUESTION, STRICT_TRANSCRIPT } from "./test-support/transcript.js";

const KEY = "sk-live-4f9Qx7TzR2mLw8Vb3NcY";
const HEADER_SECRET = "tenant-secret-9Hd2Kq7Wp4";

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Everything a run let out about its one tool call, as text the secrets are looked for in. */
interface Seen {
  /** The tool message of the request after the call, as the server read it. */
  sent: unknown;
  /** The same message in `result.messages`. */
  kept: unknown;
  /** The `tool-result` events, the `onToolResult` results and the `onMessage` tool messages. */
  told: string;
  ok: boolean[];
  toolErrors: number;
}

async function runWith(dispatch: () => unknown, config: Partial<LoopConfig> = {}): Promise<Seen> {
  const server = await startServer({
    personality: STRICT_TRANSCRIPT,
    replies: [
      { toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }] },
      { content: "The tool failed." },
    ],
  });
  servers.push(server);
  const events: RunEvent[] = [];
  const results: CallResult[] = [];
  const appended: ChatMessage[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", apiKey: KEY, maxRetries: 0, ...config },
    messages: QUESTION,
    tools: [ADD_TOOL],
    dispatch,
    onEvent: (event) => events.push(event),
    onToolResult: (r) => results.push(r),
    onMessage: (message) => {
      appended.push(structuredClone(message));
    },
  });
  const body = server.chatRequests[1]?.body as { messages: ChatMessage[] } | undefined;
  const sent = body?.messages.find((m) => m.role === "tool")?.content;
  const kept = result.messages.find((m) => m.role === "tool")?.content;
  const told = JSON.stringify([
    events.filter((e) => e.kind === "tool-result"),
    results,
    appended.filter((m) => m.role === "tool"),
  ]);
  return { sent, kept, told, ok: results.map((r) => r.ok), toolErrors: result.metrics.toolErrors };
}

function expectNone(seen: Seen, secret: string): void {
  expect(typeof seen.sent).toBe("string");
  expect(seen.sent).not.toContain(secret);
  expect(seen.kept).toBe(seen.sent);
  expect(seen.told).not.toContain(secret);
  expect(seen.told).toContain("[redacted]");
}

describe("a tool's error text reaches the model without the endpoint's credentials", () => {
  it("a thrown Error echoing the request's Authorization header", async () => {
    const seen = await runWith(() => {
      throw new Error(`GET https://api.example.com/v1/items failed: 401, sent Authorization: Bearer ${KEY}`);
    });
    expectNone(seen, KEY);
    expect(seen.sent).toBe(
      "Error: GET https://api.example.com/v1/items failed: 401, sent Authorization: Bearer [redacted]",
    );
    expect(seen.ok).toEqual([false]);
    expect(seen.toolErrors).toBe(1);
  });

  it("an error whose cause holds the key, said as the thrown error's detail", async () => {
    const seen = await runWith(() => {
      const cause = new Error(`connect refused for key=${KEY}`);
      throw new Error("upstream failed", { cause });
    });
    expectNone(seen, KEY);
    expect(seen.sent).toBe("Error: upstream failed (connect refused for key=[redacted])");
  });

  it("a rejected promise with a string, and with plain data, that are no Error", async () => {
    const text = await runWith(() => Promise.reject(`token ${KEY} was refused`));
    expectNone(text, KEY);
    expect(text.sent).toBe("Error: token [redacted] was refused");
    const data = await runWith(() =>
      Promise.reject({ status: 401, sent: { authorization: `Bearer ${KEY}` } }),
    );
    expectNone(data, KEY);
    expect(data.sent).toBe('Error: {"status":401,"sent":{"authorization":"Bearer [redacted]"}}');
  });

  it("the key as a URL or a JSON body quotes it (percent-encoded, escaped)", async () => {
    const key = "sk-live/4f9Qx+7TzR=2mLw";
    const seen = await runWith(
      () => {
        throw new Error(
          `GET /v1?api_key=${encodeURIComponent(key)} failed; body ${JSON.stringify({ key }).replace("/", "\\/")}`,
        );
      },
      { apiKey: key },
    );
    expectNone(seen, encodeURIComponent(key));
    expect(seen.sent).not.toContain("4f9Qx");
  });

  it("an Error returned as the result, or inside it ({ ok: false, error }, an allSettled entry)", async () => {
    const returned = await runWith(() => new Error(`Bearer ${KEY} refused`));
    expectNone(returned, KEY);
    expect(returned.sent).toBe("Error: Bearer [redacted] refused");
    expect(returned.ok).toEqual([false]);

    const shape = await runWith(() => ({ ok: false, error: new Error(`401 for Bearer ${KEY}`), url: "/v1" }));
    expectNone(shape, KEY);
    expect(shape.sent).toBe('{"ok":false,"error":"Error: 401 for Bearer [redacted]","url":"/v1"}');
    expect(shape.ok).toEqual([true]); // the tool returned data: the model reads the error in it

    const settled = await Promise.allSettled([Promise.reject(new TypeError(`bad key ${KEY}`))]);
    const entry = await runWith(() => settled);
    expectNone(entry, KEY);
    expect(entry.sent).toBe('[{"status":"rejected","reason":"TypeError: bad key [redacted]"}]');
  });

  it("the fields of an Error inside a returned result, as its message", async () => {
    const error = Object.assign(new Error(`refused Bearer ${KEY}`), {
      details: { hint: `retry without Bearer ${KEY}`, url: "/v1/search", apiKey: "wx-own-key-0123456789" },
    });
    const seen = await runWith(() => ({ ok: false, error }));
    expectNone(seen, KEY);
    expect(JSON.parse(String(seen.sent))).toEqual({
      ok: false,
      error: {
        name: "Error",
        message: "refused Bearer [redacted]",
        // The tool's own key, under a credential's name, is not the model's either.
        details: { hint: "retry without Bearer [redacted]", url: "/v1/search", apiKey: "[redacted]" },
      },
    });
  });

  it("an HTTP client's error inside a result: its request, config and response are left out, the data beside it kept", async () => {
    // As axios builds one: the request it sent (a socket pointing back at it), the config with the
    // tool's own Authorization header, and the response.
    const request: Record<string, unknown> = { method: "GET", path: "/v1/weather" };
    request.socket = { _httpMessage: request };
    const failure = Object.assign(new Error("Request failed with status code 401"), {
      name: "AxiosError",
      code: "ERR_BAD_REQUEST",
      config: {
        url: "https://api.weather.example/v1",
        headers: { Authorization: "Bearer wx-SECRET-0123456789" },
      },
      request,
      response: { status: 401, data: { error: "bad key" } },
    });
    const settled = [
      { status: "fulfilled", value: { city: "Oslo", temp: 3 } },
      { status: "rejected", reason: failure },
    ];
    const seen = await runWith(() => settled);
    expect(seen.ok).toEqual([true]);
    expect(JSON.parse(String(seen.sent))).toEqual([
      { status: "fulfilled", value: { city: "Oslo", temp: 3 } },
      {
        status: "rejected",
        reason: {
          name: "AxiosError",
          message: "Request failed with status code 401",
          code: "ERR_BAD_REQUEST",
        },
      },
    ]);
    expect(String(seen.sent)).not.toContain("wx-SECRET");
    // A field holding a class instance is left out, and so is a reference back into a cycle; the
    // error is still read.
    class Handle {
      fd = 3;
    }
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const odd = Object.assign(new Error("odd"), { handle: new Handle(), cyclic, fine: [1, "two"] });
    const read = await runWith(() => ({ error: odd }));
    expect(JSON.parse(String(read.sent))).toEqual({
      error: { name: "Error", message: "odd", cyclic: {}, fine: [1, "two"] },
    });
  });

  it("an error's field holding the call's arguments of a tool declaring `constructor` (a prototype without it) is kept as data", async () => {
    // @loopwright/tools hands such a tool objects whose prototype has Object.prototype's members but
    // the declared names (its own prototype null), so a left-out `constructor` reads undefined.
    const shadow = Object.create(null, Object.getOwnPropertyDescriptors(Object.prototype)) as object;
    delete (shadow as { constructor?: unknown }).constructor;
    const args = Object.assign(Object.create(shadow) as Record<string, unknown>, {
      path: "x",
      opts: { depth: 1 },
    });
    const failure = Object.assign(new Error("cannot write"), { input: args });
    const read = await runWith(() => ({ ok: false, error: failure }));
    // Before: `input` was taken for a class instance and left out of what the model read.
    expect(JSON.parse(String(read.sent))).toEqual({
      ok: false,
      error: { name: "Error", message: "cannot write", input: { path: "x", opts: { depth: 1 } } },
    });
  });

  it("arguments of the prototype @loopwright/schema-compat's argumentsPrototype makes are kept; an instance of a class extending null is not", async () => {
    const args = Object.assign(Object.create(argumentsPrototype(["constructor", "toString"])) as object, {
      path: "x",
    });
    // A class's prototype whose own prototype is null: its instances are no plain data.
    const Thing = function Thing() {};
    const instance = Object.assign(
      Object.create(Object.create(null, { constructor: { value: Thing } })) as object,
      {
        secretive: "state",
      },
    );
    const failure = Object.assign(new Error("cannot write"), { input: args, instance });
    const read = await runWith(() => ({ ok: false, error: failure }));
    expect(JSON.parse(String(read.sent))).toEqual({
      ok: false,
      error: { name: "Error", message: "cannot write", input: { path: "x" } },
    });
  });

  it("an error's field holding plain data made in another realm (a node:vm sandbox) is kept; a class instance from there is not", async () => {
    // A code-running tool reports where the script failed with an object the sandbox made: its
    // prototype is the sandbox's Object.prototype, not this realm's.
    const sandbox = vm.createContext({});
    const details = vm.runInContext(
      '({ line: 3, reason: "x is not defined", where: [{ col: 7 }] })',
      sandbox,
    );
    const parsed = vm.runInContext('JSON.parse(\'{"token":"sk-vm-secret","kind":"parse"}\')', sandbox);
    const instance = vm.runInContext("new (class Handle { constructor() { this.fd = 3; } })()", sandbox);
    const bare = vm.runInContext(
      'Object.assign(Object.create((class N extends null {}).prototype), { state: "s" })',
      sandbox,
    );
    const failure = Object.assign(new Error("script failed"), { details, parsed, instance, bare });
    const read = await runWith(() => ({ ok: false, error: failure }));
    // Before: every field was left out, and the model read only "Error: script failed".
    expect(JSON.parse(String(read.sent))).toEqual({
      ok: false,
      error: {
        name: "Error",
        message: "script failed",
        details: { line: 3, reason: "x is not defined", where: [{ col: 7 }] },
        parsed: { token: "[redacted]", kind: "parse" },
      },
    });
  });

  it("a secret header value from config.headers, in a thrown error", async () => {
    const seen = await runWith(
      () => {
        throw new Error(`proxy said: x-tenant-token ${HEADER_SECRET} is not allowed here`);
      },
      { headers: { "x-tenant-token": HEADER_SECRET } },
    );
    expectNone(seen, HEADER_SECRET);
    expect(seen.sent).toBe("Error: proxy said: x-tenant-token [redacted] is not allowed here");
  });

  it("leaves a routing header's value in the error (the model may need to read it), as in a reply", async () => {
    const seen = await runWith(
      () => {
        throw new Error(`upstream openai-eu-west refused Bearer ${KEY}`);
      },
      { headers: { "x-portkey-provider": "openai-eu-west" } },
    );
    expectNone(seen, KEY);
    expect(seen.sent).toBe("Error: upstream openai-eu-west refused Bearer [redacted]");
  });

  it("leaves a tool's successful output as the tool returned it, the key included (the host redacts what its tools return)", async () => {
    const text = await runWith(() => `config: apiKey=${KEY}`);
    expect(text.sent).toBe(`config: apiKey=${KEY}`);
    expect(text.kept).toBe(text.sent);
    expect(text.told).toContain(KEY);
    expect(text.ok).toEqual([true]);
    // A failure the tool writes as plain data (no Error in it) is its output too.
    const data = await runWith(() => ({ ok: false, error: `401 for Bearer ${KEY}` }));
    expect(data.sent).toBe(JSON.stringify({ ok: false, error: `401 for Bearer ${KEY}` }));
  });

  it("an error holding no credential reads exactly as before", async () => {
    const seen = await runWith(() => {
      throw new Error("disk full");
    });
    expect(seen.sent).toBe("Error: disk full");
    expect(seen.told).not.toContain("[redacted]");
  });
});

const call = (id: string, args = '{"a":1,"b":2}'): AssistantToolCall => ({
  id,
  type: "function",
  function: { name: "add", arguments: args },
});

describe("runCalls on its own, with and without redact", () => {
  const throwing = () => {
    throw new Error(`Bearer ${KEY} refused`);
  };
  const hide = (text: string) => text.split(KEY).join("[hidden]");

  it("without redact, answers the error as the tool said it", async () => {
    const ran = await runCalls([call("a")], { dispatch: throwing });
    expect(ran.results).toEqual([
      { role: "tool", tool_call_id: "a", content: `Error: Bearer ${KEY} refused` },
    ]);
  });

  it("with redact, the error in results, outcomes and onToolResult goes through it; a success does not", async () => {
    const told: CallResult[] = [];
    const asked: string[] = [];
    const ran = await runCalls([call("a"), call("b", '{"a":5,"b":5}'), call("c", '{"a":6,"b":6}')], {
      dispatch: ({ id }) => {
        if (id === "a") throw new Error(`Bearer ${KEY} refused`);
        if (id === "b") return { error: new RangeError(`key ${KEY}`) };
        return `echo ${KEY}`;
      },
      redact: (text) => {
        asked.push(text);
        return hide(text);
      },
      onToolResult: (r) => told.push(r),
    });
    expect(ran.results.map((m) => m.content)).toEqual([
      "Error: Bearer [hidden] refused",
      '{"error":"RangeError: key [hidden]"}',
      `echo ${KEY}`,
    ]);
    expect(ran.outcomes.map((o) => o.content)).toEqual(ran.results.map((m) => m.content));
    expect(told.map((o) => o.content)).toEqual(ran.results.map((m) => m.content));
    // Handed the error's own text only: never the success, never the loop's own words.
    expect(asked).toEqual([`Bearer ${KEY} refused`, `RangeError: key ${KEY}`]);
  });

  it("a repeat shares the redacted answer; a timeout's words are the loop's own and stay whole", async () => {
    const ran = await runCalls([call("a"), call("b"), call("c", '{"a":9,"b":9}')], {
      dispatch: ({ id }, signal) =>
        id === "c"
          ? new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason)))
          : { error: new Error(`Bearer ${KEY}`) },
      redact: hide,
      timeoutMs: 30,
    });
    expect(ran.outcomes.map((o) => [o.source, o.content])).toEqual([
      ["dispatched", '{"error":"Error: Bearer [hidden]"}'],
      ["repeat", '{"error":"Error: Bearer [hidden]"}'],
      ["dispatched", expect.stringMatching(/^Error: the add tool did not finish within 0\.0 s/)],
    ]);
  });

  it("a redact that throws or answers no string withholds the error text, and the call is still answered", async () => {
    for (const redact of [
      () => {
        throw new Error("redactor broke");
      },
      () => undefined as unknown as string,
    ]) {
      const ran = await runCalls([call("a"), call("b", '{"a":3,"b":3}')], {
        dispatch: ({ id }) => (id === "a" ? throwing() : { error: new Error(`Bearer ${KEY}`) }),
        redact,
      });
      expect(ran.results).toHaveLength(2);
      for (const message of ran.results) expect(message.content).not.toContain(KEY);
      expect(ran.results[0]?.content).toBe(
        "Error: (the tool's error message was withheld: the redact option could not be applied to it)",
      );
      expect(ran.outcomes.map((o) => o.ok)).toEqual([false, true]);
    }
  });

  it("refuses a redact that is not a function, saying what it got; null is absent", async () => {
    await expect(
      runCalls([call("a")], { dispatch: () => "3", redact: "yes" as unknown as (text: string) => string }),
    ).rejects.toThrow(new TypeError("runCalls: redact must be a function (text) => text, got a string."));
    const ran = await runCalls([call("a")], {
      dispatch: throwing,
      redact: null as unknown as (text: string) => string,
    });
    expect(ran.results[0]?.content).toBe(`Error: Bearer ${KEY} refused`);
  });
});

describe("the error a failed run throws", () => {
  it("never carries the endpoint's key, even when the cause was frozen and could not be redacted in place", async () => {
    const server = await startServer({ personality: STRICT_TRANSCRIPT, replies: [{ content: "unused" }] });
    servers.push(server);
    const cause = Object.freeze(new Error(`upstream refused key ${KEY}`));
    const failed = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", apiKey: KEY, maxRetries: 0 },
        messages: QUESTION,
        dispatch: () => "unused",
        beforeStep: () => {
          throw cause;
        },
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failed).toBeInstanceOf(Error);
    const error = failed as Error;
    expect(error.name).toBe("AgentLoopError");
    expect(error.message).toContain("upstream refused key");
    expect(error.message).not.toContain(KEY);
    expect(String(error.stack)).not.toContain(KEY);
    // The frozen cause itself is the host's object: it stays as it was.
    expect(error.cause).toBe(cause);
  });
});
