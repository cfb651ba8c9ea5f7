import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { apiKeyOf } from "./endpoint.js";
import {
  contextLimitFor,
  createClientPool,
  firstTokenMs,
  redactor,
  resolveApiKey,
  timeoutMs,
} from "./index.js";

// An endpoint's fields are read where the endpoint holds them (or its class does), never from a
// polluted Object.prototype: some code in the process setting Object.prototype.apiKey sent that key
// as a bearer token to every endpoint given none.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function polluted<T>(fields: Record<string, unknown>, body: () => T): T {
  for (const [name, value] of Object.entries(fields)) {
    Object.defineProperty(Object.prototype, name, { value, configurable: true, writable: true });
  }
  const clear = () => {
    for (const name of Object.keys(fields)) delete (Object.prototype as Record<string, unknown>)[name];
  };
  try {
    const result = body();
    if (result instanceof Promise) return result.finally(clear) as T;
    clear();
    return result;
  } catch (error) {
    clear();
    throw error;
  }
}

describe("an endpoint's own fields, never a polluted Object.prototype's", () => {
  it("a pooled client sends no inherited apiKey, and takes no inherited timeout", async () => {
    server = await startServer({ replies: [{ content: "hi" }] });
    const baseUrl = server.baseUrl;
    await polluted({ apiKey: "sk-polluted-0123456789", requestTimeoutSeconds: 0.001 }, async () => {
      const client = createClientPool().getClient({ baseUrl });
      await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] });
    });
    expect(server.chatRequests[0]?.headers.authorization).toBe("Bearer no-key");
  });

  it("the endpoint readers and the redactor ignore inherited fields; a class's getters still count", () => {
    const fields = {
      apiKey: "sk-polluted-0123456789",
      baseUrl: "http://elsewhere.example/v1",
      headers: { authorization: "Bearer polluted-token" },
      requestTimeoutSeconds: 0,
      firstTokenSeconds: 0,
    };
    const read = polluted(fields, () => ({
      key: apiKeyOf({}),
      resolved: resolveApiKey({}, {}),
      timeout: timeoutMs({}),
      first: firstTokenMs({}),
      redacted: redactor({ baseUrl: "http://x.test/v1" })("sk-polluted-0123456789 and polluted-token"),
    }));
    expect(read).toEqual({
      key: "no-key",
      resolved: "no-key",
      timeout: timeoutMs({ requestTimeoutSeconds: undefined }),
      first: firstTokenMs({ firstTokenSeconds: undefined }),
      redacted: "sk-polluted-0123456789 and polluted-token",
    });
    class Keyed {
      get apiKey() {
        return "sk-from-a-getter";
      }
    }
    expect(apiKeyOf(new Keyed())).toBe("sk-from-a-getter");
  });

  it("a window lookup asks with the endpoint's own model only", async () => {
    server = await startServer({
      models: [
        { id: "small", context_length: 4096 },
        { id: "polluted", context_length: 999_999 },
      ],
    });
    const baseUrl = server.baseUrl;
    const window = await polluted({ model: "polluted" }, () => contextLimitFor({ baseUrl }));
    expect(window).not.toBe(999_999);
  });
});
