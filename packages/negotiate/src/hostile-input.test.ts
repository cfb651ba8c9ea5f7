import { describe, expect, it } from "vitest";
import { ContextOverflow } from "./errors.js";
import { readRefusal } from "./refusal.js";
import { backoffMs, isModelLoading, isOverflow, isTransient } from "./retry.js";

/** Errors a host's own code or a broken proxy may hand over: none of them is JSON. */
function exotic(): unknown[] {
  const cycle: Record<string, unknown> = { status: 400 };
  cycle.error = cycle;
  cycle.cause = cycle;
  const getter = Object.defineProperty({ status: 400 }, "error", {
    enumerable: true,
    get() {
      throw new Error("no");
    },
  });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const throwingProxy = new Proxy(
    {},
    {
      get() {
        throw new Error("trap");
      },
      has() {
        throw new Error("trap");
      },
      ownKeys() {
        throw new Error("trap");
      },
    },
  );
  return [
    Object.create(null),
    Object.assign(Object.create(null), { status: 400, message: "maximum context length is 8192" }),
    cycle,
    getter,
    proxy,
    throwingProxy,
    { status: 400n, error: { message: 1n } },
    { status: Symbol("s"), message: Symbol("m"), code: Symbol("c") },
    Symbol("bare"),
    10n,
    { status: 429, headers: { "retry-after": Symbol("x") } },
    { status: 400, error: { message: "x".repeat(10) }, headers: proxy },
  ];
}

describe("the classifiers never throw on what a server or a host hands them", () => {
  it("answers for cycles, BigInts, symbols, throwing getters, Proxies and null-prototype objects", () => {
    for (const error of exotic()) {
      expect(() => readRefusal(error)).not.toThrow();
      expect(typeof isOverflow(error)).toBe("boolean");
      expect(typeof isTransient(error)).toBe("boolean");
      expect(typeof isModelLoading(error)).toBe("boolean");
      expect(Number.isFinite(backoffMs(1, error, { random: () => 0.5 }))).toBe(true);
      expect(ContextOverflow.isInstance(ContextOverflow.fromError(error))).toBe(true);
    }
  });
});
