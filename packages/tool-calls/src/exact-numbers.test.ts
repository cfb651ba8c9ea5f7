import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { type ArgumentPath, ToolArgumentsError } from "./index.js";
import { parseToolArguments } from "./parse-tool-arguments.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

const BIG = "12345678901234567891";

/** The error `fn` throws (failing the test when it throws none). */
function thrown(fn: () => unknown): ToolArgumentsError {
  try {
    fn();
  } catch (error) {
    expect(ToolArgumentsError.isInstance(error)).toBe(true);
    return error as ToolArgumentsError;
  }
  throw new Error("expected a ToolArgumentsError, and nothing was thrown");
}

/** `[sign, digits, power of ten]` of a numeral, as exact integers: the number it names. */
function rational(numeral: string): [bigint, bigint] {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(numeral) as RegExpExecArray;
  const fraction = m[3] ?? "";
  const mantissa = BigInt(`${m[1]}${m[2]}${fraction}`);
  return [mantissa, BigInt(Number(m[4] ?? "0") - fraction.length)];
}

/** True when two numerals name the same number (compared as exact integers, scaled alike). */
function sameNumber(a: string, b: string): boolean {
  const [ma, ea] = rational(a);
  const [mb, eb] = rational(b);
  // biome-ignore lint/complexity/useMathMinMax: Math.min takes no bigints.
  const low = ea < eb ? ea : eb;
  return ma * 10n ** (ea - low) === mb * 10n ** (eb - low);
}

describe("parseToolArguments: numbers JavaScript cannot hold as written", () => {
  it("refuses a call whose integers would reach the tool as other integers, naming each path and its digits", () => {
    // Before: {"id":12345678901234567000,"n":9007199254740992} was handed to the tool.
    const error = thrown(() =>
      parseToolArguments(`{"id": ${BIG}, "n": 9007199254740993}`, { name: "get_order" }),
    );
    expect(error.kind).toBe("inexact");
    expect(error.message).toContain("the get_order call");
    expect(error.message).toContain(`${BIG} at id`);
    expect(error.message).toContain("9007199254740993 at n");
    expect(error.message).toContain(`"${BIG}"`);
    expect(error.numbers?.map((n) => [n.path, n.digits, n.kind])).toEqual([
      [["id"], BIG, "integer"],
      [["n"], "9007199254740993", "integer"],
    ]);
  });

  it("hands the exact digits over as a string where the tool takes a string, and refuses the rest", () => {
    const asked: ArgumentPath[] = [];
    const takesString = (path: ArgumentPath) => {
      asked.push(path);
      return path[path.length - 1] === "id";
    };
    const text = `{"items": [{"id": ${BIG}, "qty": 2}], "order": {"id": 9007199254740993}}`;
    const out = parseToolArguments(text, { takesString });
    expect(out.value).toEqual({ items: [{ id: BIG, qty: 2 }], order: { id: "9007199254740993" } });
    expect(out.json).toBe(`{"items":[{"id":"${BIG}","qty":2}],"order":{"id":"9007199254740993"}}`);
    expect(asked).toEqual([
      ["items", 0, "id"],
      ["order", "id"],
    ]);
    expect(out.inexact.map((n) => [n.path, n.as])).toEqual([
      [["items", 0, "id"], "string"],
      [["order", "id"], "string"],
    ]);
    const error = thrown(() => parseToolArguments(`{"items": [{"count": ${BIG}}]}`, { takesString }));
    expect(error.message).toContain(`${BIG} at items[0].count`);
  });

  it("passes integers JavaScript writes back as written, however large, and numbers written inside strings", () => {
    // 12345678901234567000 is the shortest text of its double, so the tool's JSON carries those digits.
    for (const n of [
      "9007199254740991",
      "-9007199254740991",
      "9007199254740992",
      "12345678901234567000",
      "1e20",
    ]) {
      const out = parseToolArguments(`{"n": ${n}, "s": "${BIG}"}`);
      expect(out.json).toBe(`{"n":${JSON.stringify(Number(n))},"s":"${BIG}"}`);
      expect(out.inexact).toEqual([]);
    }
  });

  it("refuses numbers past a double's range (Infinity, or a nonzero read as 0), and keeps the smallest it holds", () => {
    for (const n of ["1e400", "-1e400", "1e-400", "2e308"]) {
      const error = thrown(() => parseToolArguments(`{"x": ${n}}`));
      expect(error.numbers?.[0]).toMatchObject({ path: ["x"], digits: n, kind: "range" });
    }
    expect(parseToolArguments('{"x": 5e-324}').value).toEqual({ x: 5e-324 });
    // 2^60 is held, but JavaScript writes it back as 1152921504606847000: another number for the tool.
    expect(thrown(() => parseToolArguments('{"x": 1152921504606846976}')).kind).toBe("inexact");
  });

  it("rounds a decimal longer than a double to the nearest one and lists it; as a string where the tool takes one", () => {
    const pi = "3.14159265358979323846";
    const out = parseToolArguments(`{"x": ${pi}}`);
    expect(out.value).toEqual({ x: Math.PI });
    expect(out.inexact).toEqual([{ path: ["x"], digits: pi, kind: "precision", as: "number" }]);
    expect(parseToolArguments(`{"x": ${pi}}`, { takesString: () => true }).value).toEqual({ x: pi });
  });

  it("reads repaired, double-encoded and listed arguments the same way", () => {
    for (const text of [
      `{'id': ${BIG}, 'ok': True}`,
      JSON.stringify(`{"id": ${BIG}, "ok": true}`),
      `[{"id": ${BIG}, "ok": true}]`,
      `Here: {"id": ${BIG}, "ok": true} done`,
      `{"id": ${BIG}, "ok": true,}`,
    ]) {
      expect(thrown(() => parseToolArguments(text)).message).toContain(`${BIG} at id`);
      expect(parseToolArguments(text, { takesString: (p) => p[0] === "id" }).value).toEqual({
        id: BIG,
        ok: true,
      });
    }
  });

  it("finds the number after strings holding escaped quotes and backslashes, and none inside them", () => {
    const text = JSON.stringify({ a: 'say "hi" \\', b: `\\"${BIG}"`, c: "x" }).replace(
      /}$/,
      `, "id": ${BIG}}`,
    );
    expect(thrown(() => parseToolArguments(text)).numbers?.map((n) => n.path)).toEqual([["id"]]);
  });

  it("reads a key written twice as JSON does: the last one", () => {
    expect(parseToolArguments(`{"id": ${BIG}, "id": 7}`).value).toEqual({ id: 7 });
    expect(thrown(() => parseToolArguments(`{"id": 7, "id": ${BIG}}`)).kind).toBe("inexact");
  });

  it("forgets only the numbers under a key written again, at any depth, and keeps the rest", () => {
    // The earlier `a` (and the number inside it) is replaced; `b`'s number and the later ones stay.
    const text = `{"a": {"x": [${BIG}], "y": 1e400}, "b": {"z": ${BIG}, "z": {"w": ${BIG}}}, "a": {"y": 1e-400}}`;
    const numbers = thrown(() => parseToolArguments(text)).numbers ?? [];
    expect(numbers.map((n) => [n.path, n.digits])).toEqual([
      [["b", "z", "w"], BIG],
      [["a", "y"], "1e-400"],
    ]);
    // The same key written again inside objects of a list forgets nothing outside them.
    const list = `{"n": [1e400, {"a": ${BIG}, "a": 0}, {"a": 0, "a": ${BIG}}]}`;
    expect(thrown(() => parseToolArguments(list)).numbers?.map((n) => n.path)).toEqual([
      ["n", 0],
      ["n", 2, "a"],
    ]);
  });

  it("refuses a takesString that is not a function, by name", () => {
    expect(() => parseToolArguments("{}", { takesString: "id" } as never)).toThrow(
      /takesString must be a function/,
    );
  });

  const numeral = fc.oneof(
    fc.integer().map(String),
    fc.bigInt({ min: -(10n ** 22n), max: 10n ** 22n }).map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
    fc
      .tuple(
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        fc.stringMatching(/^\d{1,22}$/),
        fc.option(fc.integer({ min: -420, max: 420 })),
      )
      .map(([whole, fraction, power]) => `${whole}.${fraction}${power === null ? "" : `e${power}`}`),
  );
  type Tree = string | Tree[] | { [key: string]: Tree };
  const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
    tree: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      numeral,
      fc.array(tie("tree"), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 4 }), tie("tree"), { maxKeys: 4 }),
    ),
  }));
  const root = fc.dictionary(fc.string({ maxLength: 4 }), tree, { minKeys: 1, maxKeys: 4 });

  /** The JSON text of a tree whose leaves are numerals written as they are, and each leaf's path. */
  function write(node: Tree, path: (string | number)[], leaves: [ArgumentPath, string][]): string {
    if (typeof node === "string") {
      leaves.push([path, node]);
      return node;
    }
    if (Array.isArray(node))
      return `[${node.map((item, i) => write(item, [...path, i], leaves)).join(", ")}]`;
    const parts = Object.entries(node).map(
      ([k, v]) => `${JSON.stringify(k)}: ${write(v, [...path, k], leaves)}`,
    );
    return `{${parts.join(", ")}}`;
  }

  function at(value: unknown, path: ArgumentPath): unknown {
    let node = value;
    for (const step of path) node = (node as Record<string | number, unknown>)[step];
    return node;
  }

  it("hands every number of any JSON text over either exactly or reported (property)", () => {
    fc.assert(
      fc.property(root, fc.boolean(), (args, strings) => {
        const leaves: [ArgumentPath, string][] = [];
        const text = write(args, [], leaves);
        let out: ReturnType<typeof parseToolArguments> | undefined;
        let refused: unknown;
        try {
          out = parseToolArguments(text, strings ? { takesString: () => true } : {});
        } catch (error) {
          refused = error;
        }
        // Refused (never where every place takes a string): each number named would have reached
        // the tool as another number, and is one the text holds at that path.
        expect(refused === undefined || (!strings && ToolArgumentsError.isInstance(refused))).toBe(true);
        const numbers = ToolArgumentsError.isInstance(refused) ? (refused.numbers ?? []) : [];
        expect(refused === undefined || numbers.length > 0).toBe(true);
        for (const n of numbers) {
          const written = Number(n.digits);
          expect(Number.isFinite(written) && sameNumber(JSON.stringify(written), n.digits)).toBe(false);
          expect(
            leaves.some(
              ([path, digits]) => digits === n.digits && JSON.stringify(path) === JSON.stringify(n.path),
            ),
          ).toBe(true);
        }
        if (out === undefined) return;
        const reported = new Map(out.inexact.map((n) => [JSON.stringify(n.path), n]));
        const handed = JSON.parse(out.json);
        for (const [path, digits] of leaves) {
          const value = at(handed, path);
          const report = reported.get(JSON.stringify(path));
          if (typeof value === "string") {
            expect(value).toBe(digits);
            expect(report?.as).toBe("string");
          } else if (!sameNumber(JSON.stringify(value), digits)) {
            // Only a decimal may be rounded, and only when it is listed.
            expect(report).toMatchObject({ digits, kind: "precision", as: "number" });
            expect(value).toBe(Number(digits));
          } else {
            expect(report).toBeUndefined();
          }
        }
      }),
      propertyRuns(300),
    );
  });
});

describe("recoverToolCalls: a call written as text keeps the model's digits in raw", () => {
  const tools = [
    {
      type: "function" as const,
      function: {
        name: "get_order",
        parameters: { type: "object", properties: { id: { type: "integer" } }, required: ["id"] },
      },
    },
  ];
  const replies: Record<string, string> = {
    "Hermes <tool_call>": `<tool_call>\n{"name": "get_order", "arguments": {"id": ${BIG}}}\n</tool_call>`,
    "arguments as a string": `<tool_call>{"name": "get_order", "arguments": "{\\"id\\": ${BIG}}"}</tool_call>`,
    "whole reply JSON": `{"name": "get_order", "parameters": {"id": ${BIG}}}`,
    "Mistral [TOOL_CALLS]": `[TOOL_CALLS] [{"name": "get_order", "arguments": {"id": ${BIG}}}]`,
    "Qwen3-Coder markup": `<tool_call>\n<function=get_order>\n<parameter=id>\n${BIG}\n</parameter>\n</function>\n</tool_call>`,
    pythonic: `[get_order(id=${BIG})]`,
    "Gemma 4": `<|tool_call>call:get_order{id:${BIG}}<tool_call|>`,
    "fenced JSON": `\`\`\`json\n{"name": "get_order", "arguments": {"id": ${BIG}}}\n\`\`\``,
    "Llama <function=…>": `<function=get_order>{"id": ${BIG}}</function>`,
  };
  for (const [format, reply] of Object.entries(replies)) {
    it(`${format}: raw carries ${BIG}, which parseToolArguments hands over or refuses`, () => {
      const { calls } = recoverToolCalls(reply, tools);
      expect(calls).toHaveLength(1);
      const raw = calls[0]?.raw as string;
      // Before: raw was JSON.stringify of the parsed arguments, {"id":12345678901234567000}.
      expect(raw).toContain(BIG);
      expect(parseToolArguments(raw, { takesString: () => true }).value).toEqual({ id: BIG });
      expect(thrown(() => parseToolArguments(raw)).kind).toBe("inexact");
    });
  }
});
