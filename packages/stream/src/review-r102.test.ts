import { growth } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { ToolCallDeltaLike } from "./chunk.js";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";
import { splitAt } from "./test-support/rechunk.js";
import type { ToolCallProgress } from "./tool-call-assembler.js";
import { TurnReader } from "./turn-reader.js";

// Review r102: stream against hostile input — characters cut between a call's argument pieces.

/** A chunk holding one piece of call 0's arguments (the first naming the tool). */
const argumentsChunk = (piece: string, first = false) => ({
  choices: [
    {
      index: 0,
      delta: {
        tool_calls: [
          first
            ? { index: 0, id: "call_1", function: { name: "say", arguments: piece } }
            : { index: 0, function: { arguments: piece } },
        ],
      },
    },
  ],
});

/** Whether `text` holds half a surrogate pair without the other. */
const hasLoneSurrogate = (text: string) =>
  /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

describe("R102-1: a run of emoji cut between every two argument pieces is told in linear time", () => {
  it("tells 16 times the pieces in about 16 times the work, each progress's arguments read", async () => {
    // Every piece after the first ends in the first half of an emoji the next one completes, as a
    // relay cutting UTF-16 at a fixed size does to a run of them. A display reads each progress's
    // arguments: that text was cut from the whole arguments on every such piece, a copy of all of
    // them (40,000 pieces took 6.5 s).
    const tell = (n: number) => {
      let shown = 0;
      const reader = new TurnReader({
        onToolCallDelta: (p) => {
          shown = p.arguments.length;
        },
      });
      reader.read(argumentsChunk('{"e": "\ud83d', true));
      for (let i = 0; i < n; i++) reader.read(argumentsChunk("\ude00 \ud83d"));
      reader.read(argumentsChunk('\ude00"}'));
      expect(shown).toBe(11 + 3 * n);
      return reader.finish();
    };
    // 32,000 pieces against 2,000 in the same run: about 16 linear (measured 9-12), about 256 with
    // the whole arguments cut on every piece (measured 250-400); 64 is the geometric middle.
    expect(await growth(tell, 2_000, 16)).toBeLessThan(64);
    const turn = tell(10);
    expect(turn.toolCalls[0]?.function.arguments).toBe(`{"e": "${"😀 ".repeat(10)}😀"}`);
  }, 60_000);
});

describe("R102-2: each progress's arguments are the argument pieces told so far", () => {
  it(
    "property: astral characters cut at any code units, or each code unit a piece of its own",
    async () => {
      // Opened by the one "[" in it, so no later piece repeats the text before it (which reads as a
      // server resending the arguments whole, a case of its own).
      const text = fc
        .array(fc.constantFrom("a", '"', "😀", "𝄞", " ", "é", "{"), { minLength: 1, maxLength: 14 })
        .map((parts) => `[${parts.join("")}`);
      const check = (told: readonly ToolCallProgress[], whole: string) => {
        let so = "";
        for (const p of told) {
          so += p.argumentsDelta;
          expect(p.arguments).toBe(so);
          expect(hasLoneSurrogate(p.arguments)).toBe(false);
        }
        expect(so).toBe(whole);
      };
      await fc.assert(
        fc.asyncProperty(text, fc.array(fc.nat(), { maxLength: 8 }), async (whole, cuts) => {
          const pieces = splitAt(
            whole,
            cuts.map((c) => c % whole.length),
          );
          const told: ToolCallProgress[] = [];
          const reader = new TurnReader({ onToolCallDelta: (p) => told.push({ ...p }) });
          for (const [i, piece] of pieces.entries()) reader.read(argumentsChunk(piece, i === 0));
          expect(reader.finish().toolCalls[0]?.function.arguments).toBe(whole);
          check(told, whole);
          // Every code unit a piece of its own.
          const one: ToolCallProgress[] = [];
          const single = new TurnReader({ onToolCallDelta: (p) => one.push({ ...p }) });
          for (const [i, unit] of whole.split("").entries()) single.read(argumentsChunk(unit, i === 0));
          expect(single.finish().toolCalls[0]?.function.arguments).toBe(whole);
          check(one, whole);
        }),
        propertyRuns(200),
      );
      // A third of a second alone (6,000 runs at scale 30 found nothing); the allowance is for a machine busy with the rest of the suite.
    },
    propertyTimeout(30_000),
  );

  it("over HTTP, emoji cut between every piece are told whole characters whose arguments add up", async () => {
    const pieces = ['{"e": "\ud83d', ...Array.from({ length: 5 }, () => "\ude00x\ud83d"), '\ude00"}'];
    const { client } = await harness([
      {
        type: "raw",
        headers: sse,
        chunks: [
          ...pieces.map((piece, i) => chunk([argumentsChunk(piece, i === 0).choices[0]])),
          chunk([{ index: 0, delta: {}, finish_reason: "tool_calls" }]),
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const told: ToolCallProgress[] = [];
    const turn = await streamTurn(client, body(), { onToolCallDelta: (p) => told.push({ ...p }) });
    const whole = `{"e": "${"😀x".repeat(5)}😀"}`;
    expect(turn.toolCalls[0]?.function.arguments).toBe(whole);
    let so = "";
    for (const p of told) {
      so += p.argumentsDelta;
      expect(p.arguments).toBe(so);
    }
    expect(so).toBe(whole);
  });
});

describe("R102-3: tool-call pieces a hostile server may send", () => {
  it(
    "property: any indexes, ids, names and arguments read into calls with unique ids, never a throw",
    () => {
      const text = fc.oneof(
        fc.string({ maxLength: 6 }),
        fc.constantFrom(
          "",
          "__proto__",
          "constructor",
          "prototype",
          "toString",
          "a\u0000b",
          "\n\t",
          "\ud83d",
        ),
      );
      const index = fc.oneof(
        fc.integer({ min: -3, max: 3 }),
        fc.constantFrom(
          -1,
          0.5,
          -0,
          1e300,
          Number.MAX_SAFE_INTEGER + 2,
          "1",
          " 2 ",
          "x",
          "__proto__",
          null,
          true,
        ),
        fc.constant(undefined),
      );
      const args = fc.oneof(
        text,
        fc.constantFrom(
          "{",
          "}",
          '{"a":1}',
          '{"a":',
          "[",
          "null",
          '{"__proto__":{"x":1}}',
          '{"constructor":1}',
        ),
        fc.constantFrom<unknown>({ a: 1 }, [1], 5, null, JSON.parse('{"__proto__":{"polluted":1}}')),
      );
      const piece = fc.record(
        {
          index,
          id: fc.oneof(text, fc.constantFrom<unknown>(5, null)),
          type: fc.constant("function"),
          function: fc.record(
            { name: fc.oneof(text, fc.constant<unknown>(7)), arguments: args },
            { requiredKeys: [] },
          ),
        },
        { requiredKeys: [] },
      );
      fc.assert(
        fc.property(
          fc.array(fc.array(piece, { minLength: 1, maxLength: 3 }), { maxLength: 12 }),
          (deltas) => {
            const told: ToolCallProgress[] = [];
            const reader = new TurnReader({ onToolCallDelta: (p) => told.push({ ...p }) });
            // As a server's JSON may hold them, whatever the types say.
            for (const pieces of deltas)
              reader.read({ choices: [{ index: 0, delta: { tool_calls: pieces as ToolCallDeltaLike[] } }] });
            const { toolCalls } = reader.finish();
            const ids = toolCalls.map((call) => call.id);
            expect(new Set(ids).size).toBe(ids.length);
            for (const call of toolCalls) {
              expect(call.id).not.toBe("");
              expect(typeof call.function.name).toBe("string");
              expect(typeof call.function.arguments).toBe("string");
              expect(call.function.name !== "" || call.function.arguments !== "").toBe(true);
              expect(Object.getPrototypeOf(call)).toBe(Object.prototype);
            }
            for (const p of told) expect(Number.isSafeInteger(p.index) && p.index >= 0).toBe(true);
            expect(({} as Record<string, unknown>).polluted).toBeUndefined();
            expect(({} as Record<string, unknown>).x).toBeUndefined();
            // What the turn holds goes back to a server as JSON, unchanged.
            expect(JSON.parse(JSON.stringify(toolCalls))).toEqual(toolCalls);
          },
        ),
        propertyRuns(300),
      );
      // Under a second alone (9,000 runs at scale 30 found nothing); the allowance is for a machine busy with the rest of the suite.
    },
    propertyTimeout(30_000),
  );
});
