/**
 * Round 94 (r): reading an object whose schema is a recursive union (`$ref` back to a union whose
 * branches share the recursive field), as a linked list or a tree of replies is written.
 * And a zod object handed over as a tool's parameters: the refusal names the tool.
 */
import { growth } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Chain, chain } from "../test-support/recursive-chain.js";
import { SchemaCompatError } from "./errors.js";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";
import { relaxTools, sanitizeTools } from "./sanitize-tools.js";

describe("an object of a recursive union", () => {
  it("costs about twice as much at twice the depth, not twice as much per level", async () => {
    // Before, each level of the object read the union's branches nested under each other once more
    // (the `next` of either branch is the whole union again), so the walk doubled per level: 20
    // levels took about 20× as long as 15, and a 40-level list the model wrote did not come back in an hour.
    // Timed in CPU time, the best of three (the testkit's `growth`): a wall-clock ratio read 15.5
    // here on a two-core machine loaded with the rest of the suite and two CPU burners, a
    // neighbour's slice counted against the longer run.
    // The walk that doubled per level reads 2^12 = 4096 here (12 levels against 24); linear reads about
    // 2. Each timed call reads the list 20 times, so the shorter run lasts some milliseconds of CPU
    // (one read of 12 levels took well under one, and a stray collection in it read 12+ under the
    // whole suite's load); the bound, 64, is far from both.
    const ratio = await growth(
      (depth) => {
        for (let i = 0; i < 20; i++) dropOptionalNulls(chain(depth, true), Chain);
      },
      12,
      2,
    );
    expect(ratio).toBeLessThan(64);
  }, 120_000);

  it("reads a 30-level list, every null left out dropped", () => {
    for (const read of [dropOptionalNulls, restoreArguments]) {
      expect(read(chain(30, true), Chain)).toEqual(chain(30, false));
    }
  }, 120_000);
});

describe("a validator object handed over as a tool's parameters", () => {
  it("is refused naming the tool, not only its index", () => {
    const tools = [
      { type: "function" as const, function: { name: "noop", parameters: { type: "object" } } },
      {
        type: "function" as const,
        function: { name: "get_weather", parameters: z.object({ city: z.string() }) },
      },
    ];
    for (const run of [() => sanitizeTools(tools), () => relaxTools(tools)]) {
      expect(run).toThrow(SchemaCompatError);
      expect(run).toThrow(/index 1 .*"get_weather".*zod schema object/);
    }
  });
});
