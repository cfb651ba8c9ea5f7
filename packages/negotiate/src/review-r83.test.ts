import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor, fixtureError, rejection } from "../test/wire.js";
import { backoffMs, isTransient, retryAfterMs } from "./retry.js";

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** The real openai client's error for a 429 from the testkit carrying `headers`. */
async function refused429(headers: Record<string, string>): Promise<unknown> {
  server.enqueue({ ...fixtureError("openai/429-request-too-large-tpm-gpt-4o.json", 429), headers });
  return rejection(
    clientFor(server.baseUrl).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    }),
  );
}

const limits = {
  "x-ratelimit-limit-requests": "5000",
  "x-ratelimit-limit-tokens": "30000",
};

describe("r83-1: OpenAI's x-ratelimit-reset-* on a 429 without retry-after", () => {
  it("waits for the reset of what was exhausted: requests or tokens", async () => {
    const requests = await refused429({
      ...limits,
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-remaining-tokens": "29000",
      "x-ratelimit-reset-requests": "6m0s",
      "x-ratelimit-reset-tokens": "20ms",
    });
    expect(retryAfterMs(requests)).toBe(360_000);
    // The same cap a retry-after has.
    expect(backoffMs(0, requests, { random: () => 0 })).toBe(120_000);
    expect(backoffMs(0, requests, { maxHintMs: Number.POSITIVE_INFINITY })).toBe(360_000);

    const tokens = await refused429({
      ...limits,
      "x-ratelimit-remaining-requests": "4999",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-requests": "12ms",
      "x-ratelimit-reset-tokens": "1h2m3.5s",
    });
    expect(retryAfterMs(tokens)).toBe(3_723_500);
    const tokensSoon = await refused429({
      "x-ratelimit-remaining-requests": "4999",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-requests": "6m0s",
      "x-ratelimit-reset-tokens": "1.5s",
    });
    expect(backoffMs(3, tokensSoon, { random: () => 0 })).toBe(1500);
  });

  it("takes the larger reset when neither (or both) remaining counts are 0", async () => {
    const neither = await refused429({
      "x-ratelimit-remaining-requests": "3",
      "x-ratelimit-remaining-tokens": "10",
      "x-ratelimit-reset-requests": "1s",
      "x-ratelimit-reset-tokens": "2.25s",
    });
    expect(retryAfterMs(neither)).toBe(2250);
    const both = await refused429({
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-requests": "3s",
      "x-ratelimit-reset-tokens": "20ms",
    });
    expect(retryAfterMs(both)).toBe(3000);
    // Only one reset sent at all.
    expect(retryAfterMs(await refused429({ "x-ratelimit-reset-tokens": "750ms" }))).toBe(750);
  });

  it("leaves them unread beside a retry-after, and on anything but a 429", async () => {
    const resets = { "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s" };
    expect(retryAfterMs(await refused429({ ...resets, "retry-after": "2" }))).toBe(2000);
    expect(retryAfterMs(await refused429({ ...resets, "retry-after-ms": "150" }))).toBe(150);
    server.enqueue({ type: "error", status: 503, body: { error: { message: "busy" } }, headers: resets });
    const busy = await rejection(
      clientFor(server.baseUrl).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "x" }],
      }),
    );
    expect(retryAfterMs(busy)).toBeUndefined();
    expect(retryAfterMs({ status: 400, headers: resets })).toBeUndefined();
  });

  it("ignores a malformed or zero reset (backoff as before), never NaN", async () => {
    for (const value of [
      "",
      "6",
      "-1s",
      "1e3s",
      "1.s",
      "s",
      "1 s",
      "2s1m",
      "1m1m",
      "ms",
      "1d",
      "0s",
      "0ms",
      "NaNs",
      `${"9".repeat(400)}h`,
    ]) {
      const error = {
        status: 429,
        headers: { "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": value },
      };
      expect(retryAfterMs(error), value).toBeUndefined();
      expect(backoffMs(0, error, { random: () => 0 }), value).toBe(500);
    }
    // A malformed exhausted reset is no hint, even beside a good one for what was not exhausted.
    const mixed = await refused429({
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": "soon",
      "x-ratelimit-reset-requests": "4s",
    });
    expect(retryAfterMs(mixed)).toBeUndefined();
  });

  it("reads any Go duration of h, m, s, ms, µs/us, ns parts as their sum in ms (property)", () => {
    const whole = fc.nat({ max: 10_000 });
    const part = fc.option(fc.tuple(whole, fc.option(fc.nat({ max: 999 }), { nil: undefined })), {
      nil: undefined,
    });
    fc.assert(
      fc.property(fc.tuple(part, part, part, part, part, part), fc.boolean(), (parts, micro) => {
        const units = ["h", "m", "s", "ms", micro ? "µs" : "us", "ns"];
        const scale = [3_600_000, 60_000, 1000, 1, 1e-3, 1e-6];
        let text = "";
        let ms = 0;
        parts.forEach((p, i) => {
          if (!p) return;
          const [n, frac] = p;
          const number = frac === undefined ? String(n) : `${n}.${String(frac).padStart(3, "0")}`;
          text += `${number}${units[i]}`;
          ms += Number(number) * (scale[i] as number);
        });
        const stated = retryAfterMs({
          status: 429,
          headers: { "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": text },
        });
        if (text === "" || ms <= 0) return stated === undefined;
        return stated === Math.ceil(ms) && Number.isFinite(stated);
      }),
    );
  });

  it("never answers NaN or a negative wait for any header text (property)", () => {
    const header = fc.oneof(fc.string(), fc.stringMatching(/^[0-9.hmsuµn]{0,12}$/));
    fc.assert(
      fc.property(header, header, header, header, (rr, rt, qr, qt) => {
        const error = {
          status: 429,
          headers: {
            "x-ratelimit-remaining-requests": rr,
            "x-ratelimit-remaining-tokens": rt,
            "x-ratelimit-reset-requests": qr,
            "x-ratelimit-reset-tokens": qt,
          },
        };
        const stated = retryAfterMs(error);
        const wait = backoffMs(0, error);
        return (
          (stated === undefined || (Number.isFinite(stated) && stated > 0)) &&
          Number.isFinite(wait) &&
          wait >= 0
        );
      }),
    );
  });
});

describe("r83-4: llama.cpp's 500 for n other than 1 is not transient", () => {
  it("'Only one completion choice is allowed' (a 500 server_error) is the same on every resend: not retried", async () => {
    // llama-server's body for { n: 2 } (its oaicompat params parser throws; the handler answers 500).
    server.enqueue({
      type: "error",
      status: 500,
      body: { error: { code: 500, message: "Only one completion choice is allowed", type: "server_error" } },
    });
    const refused = await rejection(
      clientFor(server.baseUrl).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "x" }],
      }),
    );
    expect(isTransient(refused)).toBe(false);
    // An ordinary 500 still is.
    server.enqueue({
      type: "error",
      status: 500,
      body: { error: { message: "boom", type: "server_error" } },
    });
    const boom = await rejection(
      clientFor(server.baseUrl).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "x" }],
      }),
    );
    expect(isTransient(boom)).toBe(true);
  });
});
