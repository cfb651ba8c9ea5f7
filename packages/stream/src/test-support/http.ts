import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach } from "vitest";

/** A testkit server and a real openai client pointed at it; closed after each test. */
export interface Harness {
  server: TestServer;
  client: OpenAI;
}

const open: TestServer[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** Starts a testkit server with `replies` and an openai client (no retries) aimed at it. */
export async function harness(replies: Reply[] = []): Promise<Harness> {
  const server = await startServer({ replies });
  open.push(server);
  const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test", maxRetries: 0 });
  return { server, client };
}

/** A minimal streamed chat body. */
export function body(extra: Record<string, unknown> = {}) {
  return { model: "sim", messages: [{ role: "user", content: "hi" }], ...extra };
}
