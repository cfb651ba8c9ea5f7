import { streamTurn } from "@loopwright/stream";
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { clientFor, refusedBy, rejection } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { readRefusal } from "./refusal.js";
import { buildBody } from "./request-body.js";
import { isTransient } from "./retry.js";

// Review r67 (R67N-3 … R67N-5): a retry or a body a host would notice, over real HTTP to the testkit.

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** What the real openai client rejects with when the testkit answers `status` with `body`. */
const refused = (status: number, body: unknown) => refusedBy(server, status, body);

describe("R67N-3: a 429 for an account out of credit is never retried", () => {
  it("reads OpenAI's insufficient_quota 429 as not transient, and a rate limit's 429 still as transient", async () => {
    const quota = await refused(429, {
      error: {
        message:
          "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
        type: "insufficient_quota",
        param: null,
        code: "insufficient_quota",
      },
    });
    expect(isTransient(quota)).toBe(false);
    const rate = await refused(429, {
      error: {
        message:
          "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 30000, Requested 500. Please try again in 1s.",
        type: "tokens",
        param: null,
        code: "rate_limit_exceeded",
      },
    });
    expect(isTransient(rate)).toBe(true);
    // Gemini's per-minute quota borrows the words, without the code: waited through.
    const gemini = await refused(429, [
      {
        error: {
          code: 429,
          message:
            "You exceeded your current quota, please check your plan and billing details. Please retry in 37s.",
          status: "RESOURCE_EXHAUSTED",
        },
      },
    ]);
    expect(isTransient(gemini)).toBe(true);
  });
});

const GRAMMAR_5XX = [
  "Automatic parser generation failed: unsupported schema at tools[0]",
  "Grammar error: The provided JSON schema contains features not supported by xgrammar.",
  "Unsupported JSON Schema: {'not': {}}",
  "Unable to generate parser for this template. Automatic parser generation failed: \nError: Jinja Exception: Conversation roles must alternate user/assistant/user/assistant/...",
];

describe("R67N-4: a grammar failure under a 5xx is never retried as a server fault", () => {
  for (const message of GRAMMAR_5XX) {
    it(`not transient: ${message.slice(0, 60)}`, async () => {
      const error = await refused(500, { error: { code: 500, message, type: "server_error" } });
      expect(isTransient(error)).toBe(false);
    });
  }

  it("whatever readRefusal answers under a 400, 429 or 5xx is never also transient (property)", () => {
    const words = fc.constantFrom(
      ...GRAMMAR_5XX,
      "JSON schema conversion failed",
      "failed to parse grammar",
      "Tool call id was call_0 but must be a-z, A-Z, 0-9, with a length of 9.",
      "Tool call IDs should be alphanumeric strings with length 9!",
      "Internal server error",
      "upstream connect error",
      "Unsupported parameter: 'max_tokens' is not supported with this model.",
    );
    fc.assert(
      fc.property(
        fc.constantFrom(400, 422, 429, 500, 502, 503, 504),
        fc.array(words, { minLength: 1, maxLength: 3 }),
        fc.constantFrom("server_error", "invalid_request_error", undefined),
        (status, parts, type) => {
          const error = Object.assign(new Error(`${status} status code`), {
            status,
            error: { message: parts.join("\n"), ...(type ? { type } : {}) },
          });
          expect(readRefusal(error) !== undefined && isTransient(error)).toBe(false);
        },
      ),
      propertyRuns(400),
    );
  });
});

describe('R67N-5: an extraBody "__proto__" key is refused, never silently lost', () => {
  it("throws a TypeError naming it instead of sending a body without it", async () => {
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl);
    const extraBody = JSON.parse('{"__proto__": {"top_k": 20}, "min_p": 0.05}') as Record<string, unknown>;
    const config = { model: "m", extraBody };
    expect(() => buildBody(config, supports, undefined, [{ role: "user", content: "x" }])).toThrow(
      expect.objectContaining({ name: "TypeError", message: expect.stringContaining('"__proto__"') }),
    );
    // Through negotiate: the caller's TypeError, before anything reaches the server.
    const before = server.requests.length;
    const error = await rejection(
      negotiate(supports, async (s, _p, model) => {
        const body = buildBody(config, s, model, [{ role: "user", content: "x" }]);
        return clientFor(server.baseUrl).chat.completions.create(body as never);
      }),
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(server.requests.length).toBe(before);
  });
});

describe("R67N-6 (with @loopwright/stream): a stream cut in the middle of an event is retried while nothing was shown", () => {
  it("reads streamTurn's error for a body that ended mid-event as transient", async () => {
    server.enqueue({
      type: "raw",
      chunks: [
        'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n',
        'data: {"choices":[{"index":0,"delta":{"content":"Hel',
      ],
    });
    const produced = { value: false };
    const error = await rejection(
      streamTurn(
        clientFor(server.baseUrl),
        { model: "m", messages: [{ role: "user", content: "x" }] },
        { produced },
      ),
    );
    expect(error).toMatchObject({ code: "connection-lost" });
    expect(produced.value).toBe(false);
    expect(isTransient(error)).toBe(true);
    expect(readRefusal(error)).toBeUndefined();
  });
});

describe("R67N-8 (with @loopwright/stream): a gateway's timeout sent inside the stream is retried like its 504", () => {
  const turnError = (chunks: string[]) => {
    server.enqueue({ type: "raw", chunks });
    return rejection(
      streamTurn(clientFor(server.baseUrl), { model: "m", messages: [{ role: "user", content: "x" }] }),
    );
  };
  const opening = 'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n';

  it("reads a gateway's plain-text and JSON timeout in the stream as transient", async () => {
    const text = await turnError([opening, "event: error\ndata: upstream request timed out\n\n"]);
    expect(text).toMatchObject({ code: "server-error" });
    expect(isTransient(text)).toBe(true);
    const json = await turnError([opening, 'data: {"error":{"message":"Gateway Timeout"}}\n\n']);
    expect(json).toMatchObject({ code: "server-error" });
    expect(isTransient(json)).toBe(true);
  });

  it("still reads another in-stream error, or one that only mentions a timeout parameter, as not transient", async () => {
    const other = await turnError([opening, 'data: {"error":{"message":"Invalid tool schema"}}\n\n']);
    expect(isTransient(other)).toBe(false);
    const param = await turnError([
      opening,
      'data: {"error":{"message":"timeout must be a positive integer"}}\n\n',
    ]);
    expect(isTransient(param)).toBe(false);
  });
});
