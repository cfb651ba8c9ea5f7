import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ArgumentPath, ToolArgumentsError, ToolCallsError } from "./index.js";
import { parseToolArguments } from "./parse-tool-arguments.js";

/** Only the listed top-level keys take a string (and no number). */
const onlyAt =
  (...keys: string[]) =>
  (path: ArgumentPath): boolean =>
    typeof path[0] === "string" && keys.includes(path[0]);

describe("parseToolArguments: a number written where the tool takes only a string reaches it as written", () => {
  it("keeps a zip code's leading zero, and still repairs one where a number is taken", () => {
    // Before: {"zip": 2134, "count": 2134} — the tool was handed a zip code missing its zero.
    const parsed = parseToolArguments('{"zip": 02134, "count": 02134}', { takesOnlyString: onlyAt("zip") });
    expect(parsed.value).toEqual({ zip: "02134", count: 2134 });
    expect(parsed.json).toBe('{"zip":"02134","count":2134}');
    expect(parsed.inexact).toEqual([{ path: ["zip"], digits: "02134", kind: "text", as: "string" }]);
  });

  it("keeps every form a model writes: trailing zeros, exponents, a plus sign, a bare point", () => {
    const forms = ["1.10", "0012", "1e5", "2.50E-3", "+5", ".5", "-0.50", "12345678901234567890", "-07"];
    for (const form of forms) {
      const parsed = parseToolArguments(`{"version": ${form}}`, { takesOnlyString: onlyAt("version") });
      expect(parsed.value).toEqual({ version: form });
      expect(parsed.inexact.map((n) => [n.digits, n.kind])).toEqual([[form, "text"]]);
    }
  });

  it("leaves a number a string place was given that JavaScript writes back as written, for the tool's validation to refuse", () => {
    const parsed = parseToolArguments('{"zip": 7, "version": -3.5}', {
      takesOnlyString: (path) => path[0] === "zip" || path[0] === "version",
    });
    expect(parsed.value).toEqual({ zip: 7, version: -3.5 });
    expect(parsed.inexact).toEqual([]);
  });

  it("reads +5, .5 and -.5 as the numbers they are where the tool takes a number, as a recovered call does", () => {
    // Before: refused as "a number cut short", where the same call written into the reply ran.
    const forms: [string, number][] = [
      ["+5", 5],
      [".5", 0.5],
      ["-.5", -0.5],
      ["+.25e1", 2.5],
      ["+007", 7],
    ];
    for (const [form, number] of forms) {
      for (const options of [{}, { takesOnlyString: onlyAt("zip") }]) {
        const parsed = parseToolArguments(`{"zip": ${form}, "n": ${form}}`, options);
        const zip = "takesOnlyString" in options ? form : number;
        expect([form, parsed.value]).toEqual([form, { zip, n: number }]);
        expect(JSON.parse(parsed.json)).toEqual({ zip, n: number });
      }
      // Held in a JSON string, and in almost-JSON beside a repair.
      expect(parseToolArguments(JSON.stringify(`{"n": ${form}}`)).value).toEqual({ n: number });
      expect(parseToolArguments(`{n: ${form}, 'm': [${form},],}`).value).toEqual({ n: number, m: [number] });
      // In a fence, or after prose, as the object is taken from them.
      expect(parseToolArguments(`\`\`\`json\n{"n": ${form}}\n\`\`\``).value).toEqual({ n: number });
      expect(parseToolArguments(`Calling it: {"n": ${form}}`).value).toEqual({ n: number });
    }
    // Held in a JSON string after prose, read as the same text written with JSON's numbers.
    expect(parseToolArguments("\"note: {a: .5, b: '.5'}\"").value).toEqual({ a: 0.5, b: ".5" });
  });

  it("still refuses a sign or a point with nothing whole after it, naming what is unfinished", () => {
    for (const form of ["+", "-", ".", "+.", "1.", ".e5"]) {
      let error: unknown;
      try {
        parseToolArguments(`{"n": ${form}, "m": 1}`);
      } catch (caught) {
        error = caught;
      }
      expect([form, ToolArgumentsError.isInstance(error)]).toEqual([form, true]);
      expect((error as ToolArgumentsError).kind).toBe("malformed");
    }
  });

  it("reads the almost-JSON local models write: bare and single-quoted keys, Python literals, a list of one, JSON in a string", () => {
    const takesOnlyString = onlyAt("zip", "skus");
    expect(
      parseToolArguments("{zip: 02134, 'ok': True, skus: [0012, 7, 'x']}", { takesOnlyString }).value,
    ).toEqual({
      zip: "02134",
      ok: true,
      skus: ["0012", 7, "x"],
    });
    expect(parseToolArguments('[{"zip": 02134}]', { takesOnlyString }).value).toEqual({ zip: "02134" });
    expect(parseToolArguments(JSON.stringify('{"zip": 02134}'), { takesOnlyString }).value).toEqual({
      zip: "02134",
    });
    // Comments and strings holding brackets or digits do not move the places read.
    expect(
      parseToolArguments('{"note": "a {b: 1} [2]", // 3\n "zip": 02134 /* 4 */, "n": 1.10}', {
        takesOnlyString,
      }).value,
    ).toEqual({ note: "a {b: 1} [2]", zip: "02134", n: 1.1 });
  });

  it("never closes up a number the text ends inside: cut arguments are still refused", () => {
    let error: unknown;
    try {
      parseToolArguments('{"zip": 0213', { finishReason: "length", takesOnlyString: onlyAt("zip") });
    } catch (caught) {
      error = caught;
    }
    expect(ToolArgumentsError.isInstance(error)).toBe(true);
    expect((error as ToolArgumentsError).kind).toBe("truncated");
  });

  it("numbers JavaScript prints in its own exponent form: text at a string-only place unless written that way; the number at a number place", () => {
    // JavaScript prints 1e21 and past, and below 1e-6, as `1e+21` and `1e-7`: those spellings
    // write back as written and stay numbers (the tool's validation decides); any other spelling
    // of the same number is the model's text where only a string is taken.
    const rows: [written: string, stringOnly: unknown, numberPlace: number, json: string][] = [
      ["1e21", "1e21", 1e21, "1e+21"],
      ["1E21", "1E21", 1e21, "1e+21"],
      ["1e+21", 1e21, 1e21, "1e+21"],
      ["1000000000000000000000", "1000000000000000000000", 1e21, "1e+21"],
      ["2.5e30", "2.5e30", 2.5e30, "2.5e+30"],
      ["1e20", "1e20", 1e20, "100000000000000000000"],
      ["100000000000000000000", 1e20, 1e20, "100000000000000000000"],
      ["0.0000001", "0.0000001", 1e-7, "1e-7"],
      ["1e-7", 1e-7, 1e-7, "1e-7"],
    ];
    for (const [written, stringOnly, numberPlace, json] of rows) {
      const text = `{"zip": ${written}, "count": ${written}}`;
      const parsed = parseToolArguments(text, { takesOnlyString: onlyAt("zip") });
      expect([written, parsed.value]).toEqual([written, { zip: stringOnly, count: numberPlace }]);
      expect(parsed.json).toBe(
        `{"zip":${typeof stringOnly === "string" ? JSON.stringify(stringOnly) : json},"count":${json}}`,
      );
    }
  });

  it("lists only what the tool is handed: a key written again keeps its last value", () => {
    const parsed = parseToolArguments('{"zip": 02134, "zip": "10001"}', { takesOnlyString: onlyAt("zip") });
    expect(parsed.value).toEqual({ zip: "10001" });
    expect(parsed.inexact).toEqual([]);
  });

  it("names a takesOnlyString that is not a function", () => {
    let error: unknown;
    try {
      parseToolArguments("{}", { takesOnlyString: "zip" as never });
    } catch (caught) {
      error = caught;
    }
    expect(ToolCallsError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain("options.takesOnlyString must be a function");
  });

  it("property: each number token at a string-only place reaches the tool as its text, exactly, unless a number writes it back the same", () => {
    const token = fc
      .tuple(
        fc.constantFrom("", "-", "+"),
        fc.oneof(fc.stringMatching(/^\d{1,25}$/), fc.constant("")),
        fc.oneof(fc.constant(""), fc.stringMatching(/^\.\d{1,20}$/)),
        fc.oneof(fc.constant(""), fc.stringMatching(/^[eE][+-]?\d{1,3}$/)),
      )
      .map(([sign, whole, fraction, power]) => `${sign}${whole || (fraction ? "" : "0")}${fraction}${power}`);
    const space = fc.constantFrom("", " ", "\n  ", "\t");
    const leaf = fc.oneof(
      { weight: 3, arbitrary: token.map((text) => ({ token: text })) },
      fc.integer().map((n) => ({ number: n })),
      fc.string({ maxLength: 8 }).map((s) => ({ string: s })),
    );
    type Leaf = { token: string } | { number: number } | { string: string };
    const tree = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        leaf,
        fc.array(tie("node"), { maxLength: 4 }),
        fc.dictionary(fc.string({ maxLength: 5 }), tie("node"), { maxKeys: 4 }).map((o) => ({ object: o })),
      ),
    })).node;
    const root = fc.dictionary(fc.string({ maxLength: 5 }), tree, { maxKeys: 5 });
    fc.assert(
      fc.property(root, space, (args, gap) => {
        const tokens = new Map<string, string>();
        const numbers = new Map<string, number>();
        const write = (node: unknown, path: ArgumentPath): string => {
          if (Array.isArray(node))
            return `[${gap}${node.map((item, i) => write(item, [...path, i])).join(`,${gap}`)}]`;
          const n = node as Leaf | { object: Record<string, unknown> };
          if ("object" in n)
            return `{${gap}${Object.entries(n.object)
              .map(([k, v]) => `${JSON.stringify(k)}:${gap}${write(v, [...path, k])}`)
              .join(",")}}`;
          if ("token" in n) {
            tokens.set(JSON.stringify(path), n.token);
            return n.token;
          }
          if ("number" in n) {
            numbers.set(JSON.stringify(path), n.number);
            return String(n.number);
          }
          return JSON.stringify(n.string);
        };
        const text = `{${gap}${Object.entries(args)
          .map(([k, v]) => `${JSON.stringify(k)}:${gap}${write(v, [k])}`)
          .join(`,${gap}`)}}`;
        const parsed = parseToolArguments(text, {
          takesOnlyString: (path) => tokens.has(JSON.stringify(path)),
        });
        const at = (path: ArgumentPath): unknown =>
          path.reduce<unknown>(
            (node, step) => (node as Record<string | number, unknown>)[step],
            parsed.value,
          );
        // A token a number writes back as written stays a number (nothing is lost); any other
        // reaches the tool as its text.
        const keepsText = (written: string) => String(Number(written)) !== written;
        for (const [key, written] of tokens)
          expect(at(JSON.parse(key))).toBe(keepsText(written) ? written : Number(written));
        for (const [key, number] of numbers) expect(at(JSON.parse(key))).toBe(number);
        expect(parsed.inexact.filter((n) => n.kind === "text")).toHaveLength(
          [...tokens.values()].filter(keepsText).length,
        );
      }),
    );
  });
});

describe("parseToolArguments reports and reads number tokens as the model wrote them, wherever the object starts", () => {
  it("names a rewritten token (.5e400, .123…91) by the model's digits, in `inexact` and in the error", () => {
    // Before: digits "0.12345678901234567891" and "hold 0.5e400 at a": the rewritten token.
    const long = ".12345678901234567891";
    expect(parseToolArguments(`{"a": ${long}}`).inexact).toEqual([
      { path: ["a"], digits: long, kind: "precision", as: "number" },
    ]);
    const asText = parseToolArguments(`[{"a": ${long}}]`, { takesString: () => true });
    expect(asText.value).toEqual({ a: long });
    expect(asText.inexact).toEqual([{ path: ["a"], digits: long, kind: "precision", as: "string" }]);
    const error = (() => {
      try {
        parseToolArguments('{"a": .5e400, "b": +1e400}');
      } catch (caught) {
        return caught;
      }
    })();
    expect(ToolArgumentsError.isInstance(error)).toBe(true);
    expect((error as ToolArgumentsError).message).toContain("hold .5e400 at a and +1e400 at b");
    expect((error as ToolArgumentsError).numbers?.map((n) => n.digits)).toEqual([".5e400", "+1e400"]);
  });

  it("walks from the object's brace, not from a bracket in the prose before it", () => {
    // Before: {zip: 2134} and a refusal of `Step [1/2] {"n": +5}`, where `Calling it:` read 5.
    const zip = parseToolArguments('Note [x]: {"zip": 02134}', { takesOnlyString: onlyAt("zip") });
    expect(zip.value).toEqual({ zip: "02134" });
    expect(zip.inexact).toEqual([{ path: ["zip"], digits: "02134", kind: "text", as: "string" }]);
    expect(parseToolArguments('Step [1/2] {"n": +5}').value).toEqual({ n: 5 });
    expect(parseToolArguments('Step [1/2] {"n": +5}', { takesOnlyString: onlyAt("n") }).value).toEqual({
      n: "+5",
    });
    expect(parseToolArguments('See (a) [b] {"n": .5, "m": [+1, .25]}').value).toEqual({
      n: 0.5,
      m: [1, 0.25],
    });
  });

  it("property: prose with brackets before the object reads the same as the object alone", () => {
    const token = fc.constantFrom("+5", ".5", "-.5", "02134", "1.10", "7", "+007", "1e3");
    const prose = fc.constantFrom("Step [1/2] ", "Note [x]: ", "Calling it: ", "(see [1]) then ");
    fc.assert(
      fc.property(prose, token, fc.boolean(), (before, written, onlyText) => {
        const options = onlyText ? { takesOnlyString: onlyAt("n") } : {};
        const alone = parseToolArguments(`{"n": ${written}}`, options);
        const after = parseToolArguments(`${before}{"n": ${written}}`, options);
        expect(after.value).toEqual(alone.value);
        expect(after.inexact).toEqual(alone.inexact);
      }),
    );
  });
});
