// parseJson's `takesString`: a number in a model's JSON that JavaScript cannot hold as written is
// handed back as the model's digits where the caller's schema takes a string, and refused
// (a ToolCallsError naming its path and digits) where it does not — never read as another number.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ToolCallsError } from "./errors.js";
import { parseJson } from "./parse-json.js";

const BIG = "12345678901234567891";
const atId = (path: readonly (string | number)[]) => path.length === 1 && path[0] === "id";

/** The exact value of an integer as JavaScript writes it ("1.1920928955078125e+23" included). */
function writtenValue(text: string): bigint {
  const [mantissa = "", exponent = "0"] = text.split("e");
  const [whole = "", fraction = ""] = mantissa.split(".");
  const shift = Number(exponent) - fraction.length;
  const digits = BigInt(`${whole}${fraction}`);
  return shift >= 0 ? digits * 10n ** BigInt(shift) : digits / 10n ** BigInt(-shift);
}

describe("parseJson with takesString", () => {
  it("hands back the digits as a string where the schema takes one, in a fence, in prose, repaired", () => {
    for (const reply of [
      `{"id": ${BIG}, "count": 2}`,
      `Here it is:\n\`\`\`json\n{"id": ${BIG}, "count": 2}\n\`\`\``,
      `I found {'id': ${BIG}, count: 2,} for you.`,
    ]) {
      expect(parseJson(reply, { takesString: atId })).toEqual({ id: BIG, count: 2 });
    }
  });

  it("refuses an integer it cannot hold where the schema takes a number, naming path and digits", () => {
    const error = (() => {
      try {
        parseJson('{"id": "A-7", "lines": [1, 9007199254740993]}', { takesString: atId });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(ToolCallsError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "inexact" });
    expect((error as ToolCallsError).message).toMatch(/9007199254740993 at lines\[1\]/);
    expect((error as ToolCallsError).numbers).toEqual([
      { path: ["lines", 1], digits: "9007199254740993", kind: "integer", as: "number" },
    ]);
  });

  it("settles a whole reply that is one such number by the root path", () => {
    expect(parseJson(BIG, { takesString: (path) => path.length === 0 })).toBe(BIG);
    expect(() => parseJson("1e400", { takesString: () => false })).toThrow(/1e400 at \(the reply\)/);
  });

  it("rounds a long decimal to its nearest double, as before, where no string is taken", () => {
    expect(parseJson('{"x": 0.12345678901234567891}', { takesString: () => false })).toEqual({
      x: 0.12345678901234568,
    });
  });

  it("reads as JSON.parse does without the option, and refuses a takesString that is not a function", () => {
    expect(parseJson(`{"id": ${BIG}}`)).toEqual({ id: Number(BIG) });
    expect(() => parseJson("{}", { takesString: "id" } as never)).toThrow(
      expect.objectContaining({ code: "invalid-options" }),
    );
  });

  it("property: every integer is the one written, or its digits as a string, or refused", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.boolean(), (n, string) => {
        const digits = n.toString();
        let read: unknown;
        let refused: unknown;
        try {
          read = parseJson(`{"n": ${digits}}`, { takesString: () => string });
        } catch (error) {
          refused = error;
        }
        const value = (read as { n?: unknown } | undefined)?.n;
        if (refused !== undefined) {
          // Refused only where no string is taken and the integer cannot be held.
          expect(ToolCallsError.isInstance(refused) && refused.code).toBe("inexact");
          expect([string, Number.isSafeInteger(Number(digits))]).toEqual([false, false]);
        } else if (typeof value === "string") expect(value).toBe(digits);
        // Kept as a number: JavaScript writes it back with the value written (the README's rule:
        // 12345678901234567000 is kept, 2^60 is not), whatever the double's own binary value.
        else expect(writtenValue(String(value))).toBe(n);
      }),
      // Found by CI: written back as 1.1920928955078125e+23, the value written, its double another.
      { examples: [[119209289550781250000000n, false]] },
    );
  });
});
