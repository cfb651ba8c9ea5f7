// Errors a tool hands back are not always well-formed. An HTTP client's error may define its own
// `toJSON` (axios's AxiosError returns the request's config, headers and all); a helper may put
// a parsed error body in `message`; a getter or a Proxy may throw when read. The model still
// reads what can be read of each, with the endpoint's key and the tool's own credentials out of
// it, and the run goes on to the model's next turn. Every run here talks HTTP to the testkit
// server, which refuses a transcript with an unanswered call.
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import type { AssistantToolCall, ChatMessage } from "./config.js";
import { AgentLoopError, errorMessage } from "./errors.js";
import { runCalls } from "./run-calls.js";
import { createRuntime } from "./runtime.js";
import { ADD_TOOL, QUESTION, STRICT_TRANSCRIPT } from "./test-support/transcript.js";

const ZERO = { prompt: 0, completion: 0, total: 0, cached: 0 };
const NO_SIDE = { ...ZERO, summary: { ...ZERO }, preselect: { ...ZERO } };

const KEY = "sk-live-4f9Qx7TzR2mLw8Vb3NcY";
const TOOL_TOKEN = "wx-tool-own-token-7Hd2Kq";
const TOOL_HEADER = "tool-header-secret-5Pz8";
/** Stands for a field whose getter throws. */
const THROWS = Symbol("throws");

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Built as axios builds its AxiosError: an Error whose own toJSON returns the request's config. */
class AxiosLikeError extends Error {
  override name = "AxiosError";
  code = "ERR_BAD_REQUEST";
  status = 401;
  config = {
    url: `https://api.weather.example/v1/today?key=${KEY}`,
    method: "get",
    headers: { Authorization: `Bearer ${TOOL_TOKEN}`, "X-Tool-Header": TOOL_HEADER, "X-Api-Key": KEY },
  };

  constructor() {
    super(`Request failed with status code 401 (sent Bearer ${KEY})`);
  }

  toJSON(): unknown {
    return {
      name: this.name,
      message: this.message,
      code: this.code,
      status: this.status,
      config: this.config,
    };
  }
}

/** One run whose model calls `add` once per value in `results` (each value the call's tool gives back). */
async function runOver(outcomes: readonly (() => unknown)[]): Promise<{
  answers: unknown[];
  ok: boolean[];
  messages: ChatMessage[];
  requests: number;
}> {
  const server = await startServer({
    personality: STRICT_TRANSCRIPT,
    replies: [
      { toolCalls: outcomes.map((_, i) => ({ id: `c${i}`, name: "add", arguments: `{"a":${i},"b":0}` })) },
      { content: "Noted." },
    ],
  });
  servers.push(server);
  const ok: boolean[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", apiKey: KEY, maxRetries: 0 },
    messages: QUESTION,
    tools: [ADD_TOOL],
    dispatch: ({ args }) => (outcomes[Number(args.a)] as () => unknown)(),
    onToolResult: (r) => ok.push(r.ok),
  });
  const body = server.chatRequests[1]?.body as { messages: ChatMessage[] } | undefined;
  const answers = (body?.messages ?? []).filter((m) => m.role === "tool").map((m) => m.content);
  return { answers, ok, messages: result.messages, requests: server.chatRequests.length };
}

describe("an Error with a toJSON of its own inside a tool's result", () => {
  it("is written as any Error in a result is: the request's config and headers left out, the endpoint's key redacted", async () => {
    const settled = await Promise.allSettled([
      Promise.resolve({ city: "Oslo", temp: 3 }),
      Promise.reject(new AxiosLikeError()),
    ]);
    const run = await runOver([() => ({ ok: false, error: new AxiosLikeError() }), () => settled]);
    const written = {
      name: "AxiosError",
      message: "401 Request failed with status code 401 (sent Bearer [redacted])",
      code: "ERR_BAD_REQUEST",
    };
    expect(run.answers.map((a) => JSON.parse(String(a)))).toEqual([
      { ok: false, error: written },
      [
        { status: "fulfilled", value: { city: "Oslo", temp: 3 } },
        { status: "rejected", reason: written },
      ],
    ]);
    const sent = JSON.stringify(run.answers);
    for (const secret of [KEY, TOOL_TOKEN, TOOL_HEADER]) expect(sent).not.toContain(secret);
    expect(run.ok).toEqual([true, true]);
    expect(run.requests).toBe(2);
    expect(run.messages.at(-1)).toMatchObject({ role: "assistant", content: "Noted." });
  });

  it("an Error whose toJSON cannot even be looked up, and one a toJSON returns, are written so too", async () => {
    const lookup = new Error(`refused Bearer ${KEY}`);
    Object.defineProperty(lookup, "toJSON", {
      get() {
        throw new Error("no toJSON here");
      },
    });
    const wrapper = { toJSON: () => new AxiosLikeError() };
    // Any other object's toJSON says what it says, as JSON has it (the tool's own output); a
    // result JSON cannot hold still fails the call with the reason.
    const money = { toJSON: (key: string) => `12.50 EUR under ${key}` };
    const cycle: Record<string, unknown> = { error: new Error("x") };
    cycle.self = cycle;
    const run = await runOver([
      () => ({ error: lookup }),
      () => ({ failure: wrapper }),
      () => ({ price: money, when: new Date(0), boxed: [new Number(3), new String("s"), undefined] }),
      () => cycle,
      () => ({ rows: [new Map()] }),
    ]);
    expect(run.answers.slice(0, 3)).toEqual([
      JSON.stringify({ error: "Error: refused Bearer [redacted]" }),
      JSON.stringify({
        failure: {
          name: "AxiosError",
          message: "401 Request failed with status code 401 (sent Bearer [redacted])",
          code: "ERR_BAD_REQUEST",
        },
      }),
      JSON.stringify({
        price: "12.50 EUR under price",
        when: "1970-01-01T00:00:00.000Z",
        boxed: [3, "s", null],
      }),
    ]);
    expect(run.answers[3]).toMatch(/^Error: the add tool returned a value JSON cannot hold \(circular/);
    expect(run.answers[4]).toMatch(
      /^Error: the add tool returned a Map, which JSON cannot hold, inside its result/,
    );
    expect(run.ok).toEqual([true, true, true, false, false]);
    expect(run.messages.at(-1)).toMatchObject({ role: "assistant", content: "Noted." });
  });
});

/** An Error whose `message` field holds `message` as it is (no string made of it). */
function withMessage(message: unknown, fields: object = {}): Error {
  const error = new Error("placeholder");
  Object.defineProperty(error, "message", { value: message, writable: true, configurable: true });
  return Object.assign(error, fields);
}

/** An Error whose `field` getter throws. */
function throwingAt(field: string, message = "boom"): Error {
  const error = new Error(message);
  Object.defineProperty(error, field, {
    get() {
      throw new Error(`${field} getter exploded`);
    },
  });
  return error;
}

/** What each odd error is, and what the model reads of it when it is thrown. */
const ODD: readonly [label: string, make: () => unknown, thrown: string][] = [
  [
    "a parsed body as the message, with a status",
    () => withMessage({ error: "rate limited" }, { status: 429 }),
    'Error: 429 {"error":"rate limited"}',
  ],
  [
    "a number as the message, with a cause",
    () => withMessage(42, { cause: new Error("inner") }),
    "Error: 42 (inner)",
  ],
  ["a list as the message", () => withMessage(["a", "b"]), 'Error: ["a","b"]'],
  [
    "a body naming a credential as the message",
    () => withMessage({ error: "denied", authorization: `Bearer ${TOOL_TOKEN}`, key: KEY }),
    'Error: {"error":"denied","authorization":"[redacted]","key":"[redacted]"}',
  ],
  ["a message getter that throws", () => throwingAt("message"), "Error: Error"],
  ["a name getter that throws", () => throwingAt("name"), "Error: boom"],
  ["a cause getter that throws", () => throwingAt("cause"), "Error: boom"],
  ["a status getter that throws", () => throwingAt("status"), "Error: boom"],
  [
    "a Proxy whose get trap throws",
    () =>
      new Proxy(new Error("p"), {
        get() {
          throw new Error("get trap");
        },
      }),
    "Error: the add tool failed with an error that could not be read.",
  ],
];

describe("a tool error whose message is no string, or whose reading throws", () => {
  it("thrown, answers the call with what can be read of it, and the run goes on to the model's next turn", async () => {
    const run = await runOver(
      ODD.map(([, make]) => () => {
        throw make();
      }),
    );
    expect(run.answers).toEqual(ODD.map(([, , thrown]) => thrown));
    expect(run.ok).toEqual(ODD.map(() => false));
    expect(run.requests).toBe(2);
    expect(run.messages.at(-1)).toMatchObject({ role: "assistant", content: "Noted." });
  });

  it("nested in a result, is written as the same text, never as a result JSON cannot hold", async () => {
    const run = await runOver(
      ODD.map(([, make]) => () => ({ ok: false, error: make() })),
    );
    // An Error inside a result is written `<name>: <message>`, or its name alone where that is all it says.
    const expected = ODD.map(([, , thrown]) =>
      thrown.startsWith("Error: the add tool failed")
        ? "Error: an error that could not be read"
        : thrown === "Error: Error"
          ? "Error"
          : thrown,
    );
    expect(run.answers.map((a) => JSON.parse(String(a)).error)).toEqual(expected);
    for (const answer of run.answers) expect(answer).not.toMatch(/cannot hold/);
    expect(run.ok).toEqual(ODD.map(() => true));
    expect(run.messages.at(-1)).toMatchObject({ role: "assistant", content: "Noted." });
  });

  it("a thrown value nothing of which can be read answers with a fixed text, the run still going on", async () => {
    const sealed = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error("trap");
        },
        get() {
          throw new Error("trap");
        },
        ownKeys() {
          throw new Error("trap");
        },
        getOwnPropertyDescriptor() {
          throw new Error("trap");
        },
      },
    );
    const loop: Record<string, unknown> = Object.create(null);
    loop.self = loop; // no JSON (a cycle) and no String (no prototype)
    const run = await runOver([
      () => {
        throw sealed;
      },
      () => Promise.reject(loop),
    ]);
    expect(run.answers).toEqual([
      "Error: the add tool failed with an error that could not be read.",
      "Error: the add tool failed with an error that could not be read.",
    ]);
    expect(run.messages.at(-1)).toMatchObject({ role: "assistant", content: "Noted." });
  });
});

describe("errorMessage and runCalls never throw for an odd error", () => {
  const call = (id: string): AssistantToolCall => ({
    id,
    type: "function",
    function: { name: "add", arguments: '{"a":1,"b":2}' },
  });

  it("errorMessage reads one line of any of them, and AgentLoopError is built around each", () => {
    for (const [label, make, thrown] of ODD) {
      const line = errorMessage(make());
      expect(typeof line, label).toBe("string");
      if (!thrown.startsWith("Error: the add tool")) expect(`Error: ${line}`, label).toBe(thrown);
      const run = {
        messages: [],
        usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
        sideUsage: NO_SIDE,
        toolCalls: [],
        loaded: [],
        preselected: [],
        used: [],
      };
      expect(new AgentLoopError(make(), run).message, label).toBe(line);
    }
  });

  it("for any message, name, status and cause, or any of them a throwing getter, the call is answered and runCalls resolves", async () => {
    const part = fc.oneof(
      fc.anything({ withBigInt: true, withMap: true, withSet: true, withNullPrototype: true }),
      fc.constant(THROWS),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record({ message: part, name: part, status: part, cause: part }, { requiredKeys: [] }),
        fc.boolean(),
        async (fields, nested) => {
          const error = new Error("x");
          for (const [field, value] of Object.entries(fields)) {
            Object.defineProperty(error, field, {
              enumerable: field === "status",
              configurable: true,
              ...(value === THROWS
                ? {
                    get() {
                      throw new Error("getter");
                    },
                  }
                : { value }),
            });
          }
          const ran = await runCalls([call("c1")], {
            dispatch: () => {
              if (nested) return { error };
              throw error;
            },
            redact: (text) => text,
          });
          const content = String(ran.results[0]?.content);
          expect(ran.outcomes[0]?.ok).toBe(nested);
          if (nested) expect(typeof JSON.parse(content).error).not.toBe("undefined");
          else expect(content).toMatch(/^Error: ./);
          expect(content).not.toMatch(/cannot hold/);
        },
      ),
      propertyRuns(300),
    );
  });
});
