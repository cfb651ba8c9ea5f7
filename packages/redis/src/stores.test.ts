// createRedisStores hands its options to the four stores it makes; a refusal must still name the
// function the host called and the option as the host wrote it, and come before anything connects.
import { describe, expect, it } from "vitest";
import { freePort } from "../test/redis-server.js";
import {
  createRedisCalibration,
  createRedisCapabilityStore,
  createRedisStores,
  RedisStoreError,
} from "./index.js";

async function refusal(made: Promise<{ close(): Promise<void> }>): Promise<RedisStoreError> {
  const error = await made.then(
    async (stores) => {
      await stores.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(RedisStoreError.isInstance(error), String(error)).toBe(true);
  return error as RedisStoreError;
}

const INNER = /createRedis(?:CapabilityStore|Calibration|RouteLatches|Bus)\b/;

describe("createRedisStores refusing an option meant for one of its stores", () => {
  it("names createRedisStores and the option as written, before connecting (nothing listens at the URL)", async () => {
    // Nothing listens on this port: a refusal that came after a connection attempt would be `connect`.
    const url = `redis://127.0.0.1:${await freePort()}`;
    const cases: [Record<string, unknown>, string, string][] = [
      [{ syncMs: 0 }, "syncMs", "was given 0"],
      [{ syncMs: Number.POSITIVE_INFINITY }, "syncMs", "was given Infinity"],
      [{ syncMs: "250" }, "syncMs", 'was given the string "250"'],
      [{ maxPending: 0 }, "maxPending", "was given 0"],
      [{ maxStreamLength: 1.5 }, "maxStreamLength", "was given 1.5"],
      [{ maxPending: "10" }, "maxPending", "was given a string"],
      [{ writeTimeoutMs: -1 }, "writeTimeoutMs", "was given -1"],
    ];
    for (const [bad, name, given] of cases) {
      const error = await refusal(
        createRedisStores({ url, ...bad } as Parameters<typeof createRedisStores>[0]),
      );
      expect(error.code, JSON.stringify(bad)).toBe("invalid-option");
      expect(error.message.startsWith(`createRedisStores: \`${name}\` must be`), error.message).toBe(true);
      expect(error.message).toContain(given);
      expect(error.message).not.toMatch(INNER);
    }
  });

  it("names createRedisStores when its stores cannot reach Redis", async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const error = await refusal(createRedisStores({ url, connectTimeoutMs: 500 }));
    expect(error.code).toBe("connect");
    expect(error.message.startsWith("createRedisStores"), error.message).toBe(true);
    expect(error.message).not.toMatch(INNER);
  });

  it("a store made on its own still names its own factory", async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const error = await refusal(createRedisCapabilityStore({ url, syncMs: -5 }));
    expect(error.code).toBe("invalid-option");
    expect(error.message).toMatch(/^createRedisCapabilityStore: `syncMs` must be .*was given -5\.$/);
  });

  it("createRedisCalibration refuses an `endpointIdOf` that is not a function, before connecting", async () => {
    // Nothing listens on this port: a refusal that came after a connection attempt would be `connect`.
    const url = `redis://127.0.0.1:${await freePort()}`;
    const cases: [unknown, string][] = [
      ["caps", 'was given the string "caps".'],
      [{ endpointIdOf() {} }, "was given an object."],
      [[], "was given an array."],
      [42, "was given a number."],
      [true, "was given a boolean."],
    ];
    for (const [bad, given] of cases) {
      const error = await refusal(
        createRedisCalibration({ url, endpointIdOf: bad } as Parameters<typeof createRedisCalibration>[0]),
      );
      expect(error.code, String(bad)).toBe("invalid-option");
      expect(error.message).toMatch(/^createRedisCalibration: `endpointIdOf` must be a function \(/);
      expect(error.message.endsWith(given), error.message).toBe(true);
    }
    // Left out, or a function, it is not the refusal: the attempt goes on to connect (and finds nothing).
    for (const fine of [undefined, null, () => "id"]) {
      const error = await refusal(
        createRedisCalibration({ url, connectTimeoutMs: 300, endpointIdOf: fine } as Parameters<
          typeof createRedisCalibration
        >[0]),
      );
      expect(error.code, String(fine)).toBe("connect");
    }
  });
});
