import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CalculatorError, calculate } from "./calculator.js";

describe("calculator", () => {
  it("follows arithmetic precedence, parentheses and right-associative powers", () => {
    expect(calculate("17 * 23")).toBe(391);
    expect(calculate("2 + 3 * 4")).toBe(14);
    expect(calculate("(2 + 3) * 4")).toBe(20);
    expect(calculate("2 ^ 3 ^ 2")).toBe(512);
    expect(calculate("2 ** 10")).toBe(1024);
    expect(calculate("-3 + 10 % 4")).toBe(-1);
    expect(calculate("1.5e2 / .5")).toBe(300);
    expect(calculate("6 × 7 ÷ 2")).toBe(21);
  });

  it("refuses anything that is not arithmetic, with a message naming the problem", () => {
    expect(() => calculate("process.exit(1)")).toThrow(/only numbers/);
    expect(() => calculate("(1 + 2")).toThrow(/never closed/);
    expect(() => calculate("4 / 0")).toThrow(/Division by zero/);
    expect(() => calculate("   ")).toThrow(CalculatorError);
    expect(() => calculate("1 2")).toThrow(/Unexpected '2'/);
  });

  it("agrees with JavaScript on sums and products of integers", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        (xs, mul) => {
          const expression = xs.map((x) => `(${x})`).join(mul ? " * " : " + ");
          const expected = xs.reduce((a, b) => (mul ? a * b : a + b), mul ? 1 : 0);
          expect(calculate(expression)).toBe(expected);
        },
      ),
    );
  });

  it("never throws anything but a CalculatorError on arbitrary input", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        // check-tests: allow — not throwing is right too; the property is that whatever it throws is a CalculatorError.
        try {
          calculate(text);
        } catch (error) {
          expect(error).toBeInstanceOf(CalculatorError);
        }
      }),
    );
  });
});
