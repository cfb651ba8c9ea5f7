// A Redis URL may carry the server's password (`redis://:password@host`): what the stores throw and
// report names the server, never the password.
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { freePort } from "../test/redis-server.js";
import { createRedisBus, createRedisStores, RedisStoreError } from "./index.js";

async function failure(promise: Promise<unknown>): Promise<RedisStoreError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(RedisStoreError.isInstance(error), String(error)).toBe(true);
  return error as RedisStoreError;
}

describe("a Redis URL's password", () => {
  it("is not in the error when the server cannot be reached", async () => {
    const port = await freePort();
    for (const url of [
      `redis://alice:pw-sekret-1357@127.0.0.1:${port}`,
      `redis://:pw-sekret-1357@127.0.0.1:${port}/2`,
    ]) {
      const error = await failure(createRedisBus({ url }));
      expect(error.code).toBe("connect");
      expect(error.message).toContain(`127.0.0.1:${port}`);
      expect(inspect(error, { depth: 8 })).not.toContain("pw-sekret-1357");
    }
    const stores = await failure(createRedisStores({ url: `rediss://bob:pw-sekret-1357@127.0.0.1:${port}` }));
    expect(inspect(stores, { depth: 8 })).not.toContain("pw-sekret-1357");
  });

  it("is not in the error for a URL of the wrong kind or one that does not parse", async () => {
    for (const url of [
      "http://alice:pw-sekret-1357@127.0.0.1:1",
      "redis://alice:pw-sekret-1357@[127.0.0.1",
    ]) {
      const error = await failure(createRedisBus({ url }));
      expect(error.code).toBe("invalid-option");
      expect(error.message).toMatch(/`url`/);
      expect(inspect(error, { depth: 8 })).not.toContain("pw-sekret-1357");
    }
  });

  it("is not in the error when it is in the URL's query, which the error leaves out", async () => {
    const port = await freePort();
    const error = await failure(
      createRedisBus({ url: `redis://127.0.0.1:${port}/0?password=pw-sekret-1357#frag` }),
    );
    expect(error.code).toBe("connect");
    expect(error.message).toContain(`redis://127.0.0.1:${port}/0`);
    expect(error.message).not.toContain("?");
    expect(inspect(error, { depth: 8 })).not.toContain("pw-sekret-1357");
  });

  it("with a % that starts no escape is refused naming `url` and how to write it, not as a bare URIError", async () => {
    for (const url of ["redis://:pw-sekret%zz57@127.0.0.1:1/0", "redis://al%ce:pw-sekret-1357@127.0.0.1:1"]) {
      const error = await failure(createRedisStores({ url }));
      expect(error.code).toBe("invalid-option");
      expect(error.message).toMatch(/`url`/);
      expect(error.message).toContain("%25");
      expect(inspect(error, { depth: 8 })).not.toContain("pw-sekret");
    }
  });
});
