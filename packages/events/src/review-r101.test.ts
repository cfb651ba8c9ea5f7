// Review r101: runMetrics over events as a store or another process hands them back — any kind,
// any field of any type, numbers a server never reports (NaN, -1, 1e308, 2^53, "8192"), getters
// that throw. What a host notices is the summary: it never throws over what the events hold, and
// every number in it is one it can show (finite, not negative, counts whole) and survives JSON.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { runMetrics } from "./run-metrics.js";
import type { RunEvent } from "./types.js";

const aNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.nat({ max: 200_000 }),
  fc.constantFrom(
    0,
    -1,
    0.5,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER,
    2 ** 53,
    Number.NaN,
    "8192",
    null,
    true,
  ),
  fc.double(),
);

/** An object holding some of `keys`, each a hostile number, and now and then a getter that throws. */
const someOf = (keys: readonly string[]): fc.Arbitrary<unknown> =>
  fc
    .tuple(
      fc.dictionary(fc.constantFrom(...keys), aNumber, { maxKeys: keys.length }),
      fc.option(fc.constantFrom(...keys)),
    )
    .map(([fields, throwing]) => {
      if (throwing === null) return fields;
      return Object.defineProperty({ ...fields }, throwing, {
        enumerable: true,
        get() {
          throw new Error("unreadable");
        },
      });
    });

const aTurn = fc.record(
  {
    usage: someOf(["prompt", "completion", "total", "cached", "uncached", "reasoningTokens"]),
    timings: someOf(["prefillMs", "decodeMs", "totalMs", "firstTokenMs", "draftTokens", "draftAccepted"]),
    finishReason: fc.constantFrom("stop", "length", 5, null),
    cacheBroken: fc.constantFrom(true, false, "yes"),
    cacheBreakReason: fc.constantFrom("tools", "system", "__proto__", "toString", 7),
  },
  { requiredKeys: [] },
);

const anEvent: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({ kind: fc.constant("usage"), turn: fc.oneof(aTurn, aNumber) }, { requiredKeys: ["kind"] }),
  fc.record(
    {
      kind: fc.constant("tool-result"),
      name: fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor"), aNumber),
      ok: fc.constantFrom(true, false, "false", undefined),
      ms: aNumber,
    },
    { requiredKeys: ["kind"] },
  ),
  fc.constantFrom("tool-call", "notice", "error", "done", "output", "unknown").map((kind) => ({ kind })),
  fc.record({ kind: fc.constant("done"), stopped: fc.constantFrom(true, false, "true") }),
  fc.constantFrom(null, 5, "usage", []),
);

/** Every number in `value`, at any depth. */
function numbersOf(value: unknown, into: number[] = []): number[] {
  if (typeof value === "number") into.push(value);
  else if (typeof value === "object" && value !== null)
    for (const inner of Object.values(value)) numbersOf(inner, into);
  return into;
}

describe("runMetrics over events it did not make", () => {
  it(
    "property: never throws over what the events hold, and every number it answers is finite, not negative, and survives JSON",
    () => {
      fc.assert(
        fc.property(
          fc.array(anEvent, { maxLength: 30 }),
          fc.option(fc.integer({ min: 1, max: 1_000_000 })),
          (events, window) => {
            const metrics = runMetrics(
              events as RunEvent[],
              window === null ? undefined : { contextLength: window },
            );
            for (const n of numbersOf(metrics)) {
              expect(Number.isFinite(n)).toBe(true);
              expect(n).toBeGreaterThanOrEqual(0);
            }
            for (const key of [
              "turns",
              "toolCalls",
              "toolErrors",
              "cutOff",
              "cacheBreaks",
              "notices",
              "errors",
            ] as const) {
              expect(Number.isSafeInteger(metrics[key])).toBe(true);
            }
            expect(["completed", "failed", "stopped", "unfinished"]).toContain(metrics.outcome);
            expect(JSON.parse(JSON.stringify(metrics))).toEqual(metrics);
          },
        ),
        propertyRuns(300),
      );
    },
    propertyTimeout(20_000),
  );
});
