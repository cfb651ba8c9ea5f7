import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor, rejection } from "../test/wire.js";
import { readRefusal } from "./refusal.js";
import { isOverflow, isTransient } from "./retry.js";

// Review r77 (R77N-…): what a host would notice, over real HTTP to the testkit.

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** What the real openai client rejects with when the testkit answers `status` with `body`. */
function refused(status: number, body: unknown): Promise<unknown> {
  server.enqueue({ type: "error", status, body });
  return rejection(
    clientFor(server.baseUrl).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    }),
  );
}

describe("R77N-1: an error wrapped as another's cause is read in linear time", () => {
  // The cause's words come back line by line, and each line was searched for among all before it:
  // a 1 MB body of short lines, wrapped once (as a stream reader or a host wraps the client's error),
  // took about a minute to classify, and every classifier reads it again.
  const wrapped = async (lines: number) => {
    const details = Array.from({ length: 16 }, (_, k) => ({
      message: Array.from({ length: lines }, (_, i) => `${k}.${i}`).join("\n"),
    }));
    const error = await refused(500, {
      error: { message: "upstream failed", type: "server_error", details },
    });
    return new Error("the turn failed", { cause: error });
  };

  it("classifies a 16 × 4,000-line body, wrapped, in well under a second, and 4 times the lines in about 4 times that", {
    timeout: 60_000,
  }, async () => {
    const small = await wrapped(1_000);
    const large = await wrapped(4_000);
    const time = (error: unknown) => {
      const started = performance.now();
      expect(isTransient(error)).toBe(true);
      expect(readRefusal(error)).toBeUndefined();
      expect(isOverflow(error)).toBe(false);
      return performance.now() - started;
    };
    time(small); // warm up
    const t1 = Math.max(time(small), 5);
    const t4 = time(large);
    expect(t4).toBeLessThan(1_000);
    expect(t4 / t1).toBeLessThan(10);
  });

  it("still reads the cause's words: a refusal wrapped is answered as it is bare", async () => {
    const error = await refused(400, {
      error: { message: "Unsupported parameter: 'max_tokens' is not supported with this model." },
    });
    expect(readRefusal(new Error("wrapped", { cause: error }))).toEqual({ kind: "token-limit-spelling" });
  });
});
