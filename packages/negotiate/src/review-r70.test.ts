import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor, rejection } from "../test/wire.js";
import { backoffMs, retryAfterMs } from "./retry.js";

// Review r70 (R70F-…): what a host would notice, over real HTTP to the testkit.

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** What the real openai client rejects with when the testkit answers `status` with `body` (and `headers`). */
function refused(status: number, body: unknown, headers?: Record<string, string>): Promise<unknown> {
  server.enqueue({ type: "error", status, body, ...(headers ? { headers } : {}) });
  return rejection(
    clientFor(server.baseUrl).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    }),
  );
}

describe("R70F-1: a wait too long for a number is no hint, so backoffMs stays finite", () => {
  // Each hint here is finite as written but past a double once made ms (×1000, ×60,000): it read as
  // Infinity, and backoffMs with maxHintMs: Infinity ("honour any hint in full") answered Infinity,
  // which setTimeout runs at once (a hot retry loop) and a sleep helper never ends.
  const nines = "9".repeat(308);
  it("reads each such hint as none, and backs off exponentially instead", async () => {
    const errors = [
      await refused(503, { error: "Model m is currently loading", estimated_time: 1e306 }),
      await refused(429, { error: { message: `Rate limit reached. Please try again in ${nines}s.` } }),
      await refused(429, { error: { message: `Please retry after ${nines} seconds.` } }),
      await refused(429, { error: { message: "rate limited" } }, { "retry-after": nines }),
    ];
    for (const error of errors) {
      expect(retryAfterMs(error)).toBeUndefined();
      const wait = backoffMs(0, error, { maxHintMs: Number.POSITIVE_INFINITY, random: () => 1 });
      expect(wait).toBe(1000);
    }
  });

  it("still honours a long finite hint in full under maxHintMs: Infinity", async () => {
    const error = await refused(429, { error: { message: "rate limited" } }, { "retry-after": "86400" });
    expect(retryAfterMs(error)).toBe(86_400_000);
    expect(backoffMs(0, error, { maxHintMs: Number.POSITIVE_INFINITY })).toBe(86_400_000);
  });
});
