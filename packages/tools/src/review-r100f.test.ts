// r100f: a zod `.regex(/…/flags)` reached the model as its source alone (z.toJSONSchema drops the
// flags). defineTool now writes each flag's meaning into the pattern where that is exact, and
// refuses the tool where it cannot be.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { propertyRuns } from "../../../test-support/properties.js";
import { defineTool, ToolInputError } from "./index.js";
import { flaglessPattern } from "./regex-flags.js";

function declared(field: z.ZodType): Record<string, unknown> {
  const tool = defineTool({
    name: "pick",
    description: "Picks a code.",
    input: z.object({ code: field }),
    execute: () => "ok",
  });
  const parameters = tool.declaration.function.parameters as {
    properties: Record<string, Record<string, unknown>>;
  };
  return parameters.properties.code as Record<string, unknown>;
}

function refusedWith(field: z.ZodType): ToolInputError {
  try {
    declared(field);
  } catch (error) {
    expect(ToolInputError.isInstance(error)).toBe(true);
    return error as ToolInputError;
  }
  throw new Error("defineTool took the tool");
}

describe("defineTool and a regular expression's flags", () => {
  it("writes i, s, m and y into the pattern the model is shown", () => {
    expect(declared(z.string().regex(/^abc$/i)).pattern).toBe("^[aA][bB][cC]$");
    expect(declared(z.string().regex(/^[a-c_]+$/i)).pattern).toBe("^[a-c_ABC]+$");
    expect(declared(z.string().regex(/^a.b$/s)).pattern).toBe("^a[\\s\\S]b$");
    expect(declared(z.string().regex(/^x$/m)).pattern).toBe(
      "(?<![^\\n\\r\\u2028\\u2029])x(?![^\\n\\r\\u2028\\u2029])",
    );
    expect(declared(z.string().regex(/x|y/y)).pattern).toBe("^(?:x|y)");
    // Two expressions: each its own entry of allOf, each rewritten.
    expect(declared(z.string().regex(/^a/i).regex(/b$/)).allOf).toEqual([
      { pattern: "^[aA]" },
      { pattern: "b$" },
    ]);
  });

  it("leaves a pattern whose flags change nothing as it was", () => {
    expect(declared(z.string().regex(/^\d+$/g)).pattern).toBe("^\\d+$");
    expect(declared(z.string().regex(/^\p{L}+$/u)).pattern).toBe("^\\p{L}+$");
  });

  it("refuses a tool whose flag cannot be written exactly, naming the tool, the field and the flag", () => {
    const cases: [z.ZodType, string][] = [
      [z.string().regex(/^é$/i), 'the i flag with the character "é"'],
      [z.string().regex(/^k$/iu), "the i flag with the u flag (Unicode case folding)"],
      [z.string().regex(/^(a)\1$/i), "the i flag with a backreference"],
      [z.string().regex(/^[à-ÿ]$/i), "the i flag with a class range past ASCII"],
    ];
    for (const [field, why] of cases) {
      const error = refusedWith(field);
      expect(error.code).toBe("invalid-tool");
      expect(error.tool).toBe("pick");
      expect(error.message).toContain("at #/properties/code");
      expect(error.message).toContain(why);
    }
  });
});

describe("flaglessPattern", () => {
  const atom = fc.constantFrom(
    "a",
    "B",
    "z",
    "_",
    "-",
    "1",
    ".",
    "^",
    "$",
    "\\d",
    "\\w",
    "\\W",
    "\\s",
    "\\b",
    "\\B",
    "\\x41",
    "\\u0062",
    "[a-c]",
    "[^b]",
    "[W-c]",
    "[-a]",
    "[a-]",
    "[\\w-]",
    "[\\d-z]",
    "[^\\W]",
    "[.^$]",
    "(?:a|B)",
    "(?=a)",
    "(?!b)",
    "(?<=a)",
  );
  const term = fc
    .tuple(atom, fc.constantFrom("", "*", "+", "?", "{1,2}"))
    .map(([a, q]) => (/^[\^$]|^\\[bB]|^\(\?[=!<][=!]?/.test(a) && !a.startsWith("(?<n") ? a : a + q));
  // A named group once at most (a name may not repeat), so its name's letters are in play.
  const source = fc
    .tuple(fc.constantFrom("", "(?<n>z)"), fc.array(term, { minLength: 1, maxLength: 6 }))
    .chain(([named, terms]) =>
      fc.constantFrom(
        named + terms.join(""),
        `${terms.slice(0, 2).join("")}|${named}${terms.slice(2).join("")}`,
      ),
    );
  const flags = fc.subarray(["g", "i", "m", "s", "y"]).map((f) => f.join(""));
  const text = fc
    .array(
      fc.constantFrom(
        "a",
        "A",
        "b",
        "B",
        "c",
        "C",
        "w",
        "W",
        "x",
        "X",
        "z",
        "Z",
        "_",
        "-",
        "1",
        " ",
        "\n",
        "\r",
        "\u2028",
        "é",
        "ſ",
        "\u212a",
        ".",
      ),
      {
        maxLength: 8,
      },
    )
    .map((chars) => chars.join(""));

  it("matches exactly what the flagged expression matches, on drawn strings", () => {
    fc.assert(
      fc.property(source, flags, fc.array(text, { minLength: 1, maxLength: 8 }), (src, f, texts) => {
        const result = flaglessPattern(src, f);
        expect(result.refused).toBeUndefined();
        const flagless = new RegExp(result.pattern as string);
        for (const t of texts)
          expect(flagless.test(t), `${src} /${f} on ${JSON.stringify(t)}`).toBe(new RegExp(src, f).test(t));
      }),
      propertyRuns(300),
    );
  });
});
