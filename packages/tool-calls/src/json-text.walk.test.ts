// The truncation guard (unfinishedValue) and the number-token readers (quoting for takesOnlyString,
// the recovered calls' written numbers) read almost-JSON through one walker: they must agree on
// what is a string, a comment, a key and a value's place, or one would quote a number the other
// reads as cut (or the other way round).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { unfinishedValue } from "./json-text.js";
import { forEachNumberToken } from "./number-text.js";
import { parseToolArguments } from "./parse-tool-arguments.js";

type Leaf = { number: string } | { text: string } | { word: string };
type Node = Leaf | Node[] | { object: [string, Node][] };

const numberToken = fc
  .tuple(
    fc.constantFrom("", "-", "+"),
    fc.stringMatching(/^\d{1,6}$/),
    fc.constantFrom("", ".5", ".10"),
    fc.constantFrom("", "e3", "E-2"),
  )
  .map((parts) => parts.join(""));
/** Text that looks like structure inside a string: brackets, digits, colons, commas, comment marks, quotes. */
const tricky = fc
  .array(
    fc.constantFrom("{", "}", "[", "]", ":", ",", "7", "02134", "//", "#", "/*", "*/", " ", "a", '\\"', "'"),
    {
      maxLength: 6,
    },
  )
  .map((parts) => parts.join(""));
const leaf: fc.Arbitrary<Leaf> = fc.oneof(
  { weight: 3, arbitrary: numberToken.map((number) => ({ number })) },
  tricky.map((text) => ({ text })),
  fc.constantFrom("true", "None", "null").map((word) => ({ word })),
);
const tree = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("node"), { maxLength: 3 }),
    fc
      .array(fc.tuple(fc.stringMatching(/^[a-z]{1,4}$/), tie("node")), { maxLength: 3 })
      .map((entries) => ({ object: entries })),
  ),
})).node;
/** What may sit between tokens: spaces of several kinds (a no-break space among them) and comments. */
const gap = fc.constantFrom("", " ", "\n  ", "\u00a0", " /* 1, [2] */ ", " # {3}\n", " // 'x' 4\n");

interface Written {
  text: string;
  numbers: { path: (string | number)[]; token: string; at: number; inObject: boolean; plusBefore: boolean }[];
  /** True once a number with a plus sign is written: JSON refuses it, and the guard calls it broken. */
  plus: boolean;
  /** Every number token written, a key's earlier values included. */
  total: number;
}

/** Writes `node` as almost-JSON, recording each number's path and where its token starts. */
function write(node: Node, path: (string | number)[], space: string, out: Written, inObject: boolean): void {
  if (Array.isArray(node)) {
    out.text += `[${space}`;
    node.forEach((item, i) => {
      if (i > 0) out.text += `,${space}`;
      write(item, [...path, i], space, out, false);
    });
    out.text += `${space}]`;
  } else if ("object" in node) {
    out.text += `{${space}`;
    // A key written again keeps its last value: only the last of each is expected.
    const last = new Map(node.object.map(([key], i) => [key, i]));
    node.object.forEach(([key, value], i) => {
      if (i > 0) out.text += `,${space}`;
      out.text += i % 2 === 0 ? `'${key}':${space}` : `${key}:${space}`;
      const before = out.numbers.length;
      write(value, [...path, key], space, out, true);
      if (last.get(key) !== i) out.numbers.length = before;
    });
    out.text += `${space}}`;
  } else if ("number" in node) {
    out.numbers.push({ path, token: node.number, at: out.text.length, inObject, plusBefore: out.plus });
    out.plus ||= node.number.startsWith("+");
    out.total++;
    out.text += node.number;
  } else if ("text" in node) out.text += JSON.stringify(node.text);
  else out.text += node.word;
}

describe("the almost-JSON walker the truncation guard and the number readers share", () => {
  it("property: both read the same places — every number token found at its path, the whole text unfinished nowhere but at a plus sign, a cut after a key's colon cut", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.stringMatching(/^[a-z]{1,4}$/), tree), { minLength: 1, maxLength: 4 }),
        gap,
        (entries, space) => {
          const out: Written = { text: "", numbers: [], plus: false, total: 0 };
          write({ object: entries }, [], space, out, false);
          const found: { path: (string | number)[]; token: string }[] = [];
          expect(forEachNumberToken(out.text, ({ path, token }) => found.push({ path: path(), token }))).toBe(
            true,
          );
          // Keys written again: the reader reports every token; those the text keeps are among them, in order.
          const kept = out.numbers.map(({ path, token }) => ({ path, token }));
          for (const number of kept) expect(found).toContainEqual(number);
          expect(found).toHaveLength(out.total);
          // A plus sign is a number begun and not finished for the guard (`+5` is refused unless quoted).
          expect(unfinishedValue(out.text)).toBe(out.plus ? "broken" : undefined);
          for (const number of out.numbers) {
            if (number.inObject)
              expect(unfinishedValue(out.text.slice(0, number.at))).toBe(
                number.plusBefore ? "broken" : "cut",
              );
          }
        },
      ),
    );
  });

  it("reads a number after a no-break space, and none inside strings or comments", () => {
    const text = `{"a":\u00a002134, "b": "[7, 8]", 'c': '{"d": 9}' /* "e": 10 */, # f: 11\n g: [1.10]}`;
    const found: [readonly (string | number)[], string][] = [];
    forEachNumberToken(text, ({ path, token }) => found.push([path(), token]));
    // Before: the no-break space was read as a word, and 02134 after it was not seen.
    expect(found).toEqual([
      [["a"], "02134"],
      [["g", 0], "1.10"],
    ]);
    expect(unfinishedValue(text)).toBeUndefined();
    expect(unfinishedValue(text.slice(0, text.indexOf("02134")))).toBe("cut");
    // So a zip code after a no-break space reaches a string-only place with its zero (was 2134).
    expect(parseToolArguments('{"zip":\u00a002134}', { takesOnlyString: () => true }).value).toEqual({
      zip: "02134",
    });
  });
});
