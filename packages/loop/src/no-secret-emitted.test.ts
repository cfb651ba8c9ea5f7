import type { ClientLogEntry } from "@loopwright/client";
import type { RunEvent } from "@loopwright/events";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createRuntime } from "./index.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

let server: TestServer;
let next: Reply = { content: "unused" };
beforeAll(async () => {
  // Every request of a case (a retry included) gets the case's reply.
  server = await startServer({ replies: () => next });
});
afterAll(() => server.close());

/** Everything reachable from a value as text: strings, and an error's message, stack and cause. */
function allText(value: unknown, seen = new Set<unknown>()): string {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null || seen.has(value)) return String(value);
  seen.add(value);
  const parts: string[] = [];
  if (value instanceof Error) parts.push(value.message, String(value.stack), allText(value.cause, seen));
  if (value instanceof Headers) for (const [name, text] of value) parts.push(name, text);
  for (const key of Object.keys(value)) {
    try {
      parts.push(key, allText((value as Record<string, unknown>)[key], seen));
    } catch {
      // a getter that throws holds nothing we emitted
    }
  }
  return parts.join("\n");
}

type Kind =
  | "json-error"
  | "text-error"
  | "html-error"
  | "header-echo"
  | "error-mid-stream"
  | "error-line"
  | "malformed-chunk"
  | "html-200"
  | "broken-json-200"
  | "empty-200"
  | "dropped"
  | "silent"
  | "url-credentials";

const KINDS: Kind[] = [
  "json-error",
  "text-error",
  "html-error",
  "header-echo",
  "error-mid-stream",
  "error-line",
  "malformed-chunk",
  "html-200",
  "broken-json-200",
  "empty-200",
  "dropped",
  "silent",
  "url-credentials",
];

/** The testkit reply that makes this kind of failure, echoing `echo` wherever a server could. */
function replyFor(kind: Kind, status: number, echo: string): Reply {
  const fast = { "retry-after-ms": "1" };
  switch (kind) {
    case "json-error":
      return {
        type: "error",
        status,
        body: { error: { message: `rejected: ${echo}`, param: echo } },
        headers: fast,
      };
    case "text-error":
      return { type: "error", status, body: `upstream said: ${echo}`, headers: fast };
    case "html-error":
      return {
        type: "error",
        status,
        body: `<html><head><title>${status} Bad Gateway</title></head><body><pre>${echo}</pre></body></html>`,
        headers: { ...fast, "content-type": "text/html" },
      };
    case "header-echo":
      return {
        type: "error",
        status,
        body: { error: { message: "denied" } },
        headers: { ...fast, "x-echo": echo },
      };
    case "error-mid-stream":
      return {
        content: "Hello there",
        errorMidStream: { afterChunk: 2, error: { message: `mid-stream: ${echo}` } },
      };
    case "error-line":
      // Old llama.cpp's mid-stream error, on an `error:` line (before ggml-org/llama.cpp#16109).
      return {
        type: "raw",
        chunks: [
          `data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n`,
          `error: ${JSON.stringify({ code: 500, message: `failed: ${echo}`, type: "server_error" })}\n\n`,
        ],
      };
    case "malformed-chunk":
      return { type: "raw", chunks: [`data: {"choices": [${echo}\n\n`] };
    case "html-200":
      return {
        type: "raw",
        headers: { "content-type": "text/html" },
        chunks: [`<html><title>Login</title><body>request was: ${echo}</body></html>`],
      };
    case "broken-json-200":
      return { type: "raw", headers: { "content-type": "application/json" }, chunks: [`{"echo": "${echo}`] };
    case "empty-200":
      return { type: "raw", headers: { "content-type": "application/json" }, chunks: [] };
    case "dropped":
      return { content: `partial ${echo}`, dropAfterChunk: 1 };
    case "silent":
      return { content: "never", silentAfterChunk: 0 };
    case "url-credentials":
      return { content: "never sent" };
  }
}

const secret = fc.stringMatching(/^[A-Za-z0-9_-]{12,40}$/);

describe("no string the library emits holds the endpoint's credentials", () => {
  it("over every failure kind the testkit can produce, with a pooled client or the host's own", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          kind: fc.constantFrom(...KINDS),
          status: fc.constantFrom(400, 401, 403, 404, 422, 429, 500, 502, 503),
          key: secret.map((s) => `sk-${s}`),
          header: secret,
          user: secret,
          password: secret,
          hostClient: fc.boolean(),
          echoWhat: fc.constantFrom("key", "header", "bearer", "all"),
        }),
        async ({ kind, status, key, header, user, password, hostClient, echoWhat }) => {
          const echo = {
            key,
            header,
            bearer: `Authorization: Bearer ${key}`,
            all: `key=${key} header=${header} ${encodeURIComponent(key)}`,
          }[echoWhat];
          next = replyFor(kind, status, echo);
          const url = new URL(server.baseUrl);
          if (kind === "url-credentials") {
            url.username = user;
            url.password = password;
          }
          const baseUrl = url.toString();
          const logs: ClientLogEntry[] = [];
          const runtime = createRuntime({
            clients: { onLog: (entry) => logs.push(entry), logLevel: "debug" },
          });
          const events: RunEvent[] = [];
          const requests: unknown[] = [];
          const config = {
            baseUrl,
            apiKey: key,
            headers: { "x-tenant-token": header },
            model: "m",
            maxRetries: kind === "dropped" || kind === "silent" ? 0 : 1,
            loadingTimeoutSeconds: 0,
            requestTimeoutSeconds: 0.2,
          };
          const outcome = await runtime
            .runAgentLoop({
              config,
              messages: QUESTION,
              tools: [ADD_TOOL],
              dispatch: () => "3",
              ...(hostClient && kind !== "url-credentials"
                ? { client: new OpenAI({ baseURL: baseUrl, apiKey: key, maxRetries: 0, logLevel: "off" }) }
                : {}),
              onEvent: (event) => {
                events.push(event);
                runtime.bus.emit("run", event);
              },
              onRequest: (request) => requests.push(request),
            })
            .then(
              (result) => ({ result }),
              (error: unknown) => ({ error }),
            );
          expect(outcome).toHaveProperty("error");
          const emitted = [
            allText(outcome),
            allText(events),
            allText(runtime.bus.history("run")),
            allText(runtime.capabilities.exportCapabilities()),
            allText(requests),
            allText(logs),
          ].join("\n");
          for (const value of [key, header, user, password, encodeURIComponent(key)]) {
            if (kind !== "url-credentials" && (value === user || value === password)) continue;
            expect(emitted).not.toContain(value);
          }
          runtime.close();
        },
      ),
      propertyRuns(60),
    );
  }, 120_000);
});
