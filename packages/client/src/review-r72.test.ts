// Review r72 (client): a key in a base URL's path. Every case that asks a server speaks HTTP to the
// testkit's loopback server.

import { createServer } from "node:net";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelListingError } from "./errors.js";
import { type ClientLogEntry, createClientPool } from "./pool.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer({ models: [{ id: "m", context_length: 4096 }] });
});
afterEach(() => server.close());

const listingError = async (promise: Promise<unknown>): Promise<ModelListingError> => {
  try {
    await promise;
  } catch (error) {
    expect(ModelListingError.isInstance(error)).toBe(true);
    return error as ModelListingError;
  }
  throw new Error("expected a ModelListingError");
};

/** A port nothing listens on: one taken and let go. */
const closedPort = async (): Promise<number> => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
};

describe("R72C-1: a key in a base URL's path", () => {
  for (const [path, secret] of [
    ["/sk-abc123def456ghi789jkl", "abc123def456ghi789jkl"],
    ["/sk-proj-Ab3_Cd4-Ef5Gh6Ij7Kl8Mn9Op0/", "Ef5Gh6Ij7Kl8Mn9Op0"],
    ["/key=s3cr3tv4lue/", "s3cr3tv4lue"],
    ["/api_key=Zq9x-Wv8u/openai", "Zq9x-Wv8u"],
    ["/token:Tk7Tk7Tk7/", "Tk7Tk7Tk7"],
  ] as const) {
    it(`is not printed by ModelListingError (http) for …${path}`, async () => {
      const pool = createClientPool();
      const error = await listingError(pool.listModels({ baseUrl: `${server.baseUrl}${path}` }));
      expect(error.code).toBe("http");
      expect(error.message).not.toContain(secret);
      expect(error.url).not.toContain(secret);
      expect(error.message).toContain("[redacted]");
      // The host and the rest of the path still say where it went.
      expect(error.message).toContain(new URL(server.baseUrl).host);
      expect(error.message).toContain("/models");
    });
  }

  it("is not printed by ModelListingError (unreachable)", async () => {
    const secret = "Q1w2E3r4T5y6U7i8O9p0";
    const pool = createClientPool();
    const error = await listingError(
      pool.listModels({ baseUrl: `http://127.0.0.1:${await closedPort()}/v1/${secret}` }),
    );
    expect(error.code).toBe("unreachable");
    expect(error.message).not.toContain(secret);
    expect(error.url).not.toContain(secret);
  });

  it("is not in the SDK's log lines a pooled client hands to onLog", async () => {
    const secret = "abc123def456ghi789jkl";
    const lines: ClientLogEntry[] = [];
    const pool = createClientPool({ onLog: (entry) => lines.push(entry), logLevel: "debug" });
    const client = pool.getClient({ baseUrl: `${server.baseUrl}/sk-${secret}`, apiKey: "k-123456789" });
    await client.models.list().catch(() => {});
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.map((line) => line.message).join("\n")).toContain("/models");
    expect(lines.map((line) => line.message).join("\n")).not.toContain(secret);
  });

  it("is not in an error body that echoes the path (a 404 naming the route), as the SDK's error holds it", async () => {
    const secret = "abc123def456ghi789jkl";
    const client = createClientPool().getClient({
      baseUrl: `${server.baseUrl}/sk-${secret}`,
      apiKey: "k-123456789",
    });
    let caught: unknown;
    try {
      await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ status: 404 });
    expect((caught as Error).message).toContain("/chat/completions");
    expect((caught as Error).message).not.toContain(secret);
    expect(JSON.stringify((caught as { error?: unknown }).error)).not.toContain(secret);
  });

  it("leaves a path of words and short numbers whole (an Azure deployment, a version)", async () => {
    const path = "/openai/deployments/gpt-4o-mini-2024-07-18";
    const error = await listingError(createClientPool().listModels({ baseUrl: `${server.baseUrl}${path}` }));
    expect(error.message).toContain(`${path}/models`);
    expect(error.message).not.toContain("[redacted]");
  });
});
