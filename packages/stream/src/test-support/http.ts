import { type Reply, type ReplyFunction, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { onTestFinished } from "vitest";
import { type Relay, startRelay } from "./proxy.js";

/** A testkit server, a relay in front of it, and a real openai client pointed through the relay. */
export interface Harness {
  server: TestServer;
  relay: Relay;
  client: OpenAI;
}

/**
 * Starts a testkit server with `replies` and an openai client (no retries, quiet) aimed at it. Both
 * are closed when the test that started them finishes; a suite whose tests run at once
 * (`describe.concurrent`) passes `closeWith` to close them itself, since which test is running is
 * not known there.
 *
 * (An `afterEach` at this module's top level closed them before, but a worker runs many files in one
 * module graph (`isolate: false`) and loads this module once: its hook was the first file's only, and
 * every server a later file in the worker started stayed open, 400 and more in one worker.)
 */
export async function harness(
  replies: Reply[] | ReplyFunction = [],
  clientOptions: { timeout?: number } = {},
  closeWith: (cleanup: () => Promise<void>) => void = onTestFinished,
): Promise<Harness> {
  const server = await startServer({ replies });
  const relay = await startRelay(server.port);
  closeWith(async () => {
    await relay.close();
    await server.close();
  });
  const client = new OpenAI({
    baseURL: relay.baseUrl,
    apiKey: "test",
    maxRetries: 0,
    logLevel: "off",
    ...clientOptions,
  });
  return { server, relay, client };
}

/** A minimal chat body. */
export function body(extra: Record<string, unknown> = {}) {
  return { model: "sim", messages: [{ role: "user", content: "hi" }], ...extra };
}

/** One SSE frame of a chat-completion chunk holding `choices` (and `extra` top-level fields). */
export const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices, ...extra })}\n\n`;

/** The header a raw reply needs to be read as an event stream. */
export const sse = { "content-type": "text/event-stream" };
