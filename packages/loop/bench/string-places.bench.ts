// What reading a call's arguments by its tool's schema costs per call, run by `pnpm bench`: the
// loop reads every call with `takesOnlyString: (path) => takesOnlyStringAt(schema, path)`, which
// walks the schema again for each number token a double would write back otherwise (`02134`), on
// every call of the tool. Timed against the same reading without that option (the baseline) and
// against a reading whose answers are kept per schema object and path (what a cache would save).
// The fastest of interleaved rounds, so a noisy neighbour moves every side alike; printed, never asserted.
import { takesOnlyStringAt, takesStringAt } from "@loopwright/schema-compat";
import { type ArgumentPath, parseToolArguments } from "@loopwright/tool-calls";
import { fastest } from "./timing.js";

/** A tool with the shapes schemas have: a `$ref`'d object, `anyOf` with null, arrays, enums. */
const schema = {
  type: "object",
  $defs: {
    Address: {
      type: "object",
      properties: {
        line: { type: "string" },
        postcode: { anyOf: [{ type: "string" }, { type: "null" }] },
        country: { type: "string", enum: ["GB", "US", "DE"] },
      },
    },
  },
  properties: {
    zip: { type: "string", pattern: "^\\d{5}$" },
    version: { type: "string" },
    count: { type: "integer", minimum: 1 },
    weight: { type: "number" },
    address: { $ref: "#/$defs/Address" },
    tags: { type: "array", items: { type: "string" } },
    express: { type: "boolean" },
    note: { anyOf: [{ type: "string" }, { type: "null" }] },
  },
  required: ["zip"],
};

/** A call with four tokens a double writes back otherwise, at string-only places, and plain numbers. */
const tokens =
  '{"zip": 02134, "version": 1.10, "count": 3, "weight": 2.5, "address": {"line": "1 High St", "postcode": 0012, "country": "GB"}, "tags": [0042, "fragile"], "express": true}';
/** A call with no such token: every number a double writes back as written. */
const plain = '{"zip": "02134", "count": 3, "weight": 2.5, "tags": ["fragile"], "express": true}';
/** A file write of about 20 kB: the schema is never asked, the text is walked once more. */
const write = JSON.stringify({
  zip: "02134",
  note: 'A line of prose with "quotes", a tab\tand some unicode: é ü 漢字.\n'.repeat(300),
});

const takesString = (path: ArgumentPath) => takesStringAt(schema, path);
const uncached = (path: ArgumentPath) => takesOnlyStringAt(schema, path);
/** The answers kept per schema object and path, as a cache would keep them across a run's calls. */
const kept = new WeakMap<object, Map<string, boolean>>();
const cached = (path: ArgumentPath) => {
  let answers = kept.get(schema);
  if (!answers) {
    answers = new Map();
    kept.set(schema, answers);
  }
  const key = JSON.stringify(path);
  let answer = answers.get(key);
  if (answer === undefined) {
    answer = takesOnlyStringAt(schema, path);
    answers.set(key, answer);
  }
  return answer;
};

/** Each subject timed against the first (the baseline): the fastest of interleaved rounds. */
function compare(label: string, subjects: [string, () => unknown][]): void {
  const times = fastest(
    subjects.map(([, fn]) => fn),
    40,
    10,
  );
  const base = times[0] as number;
  console.log(label);
  subjects.forEach(([name], i) => {
    const ns = (times[i] as number) * 1e6;
    console.log(
      `  ${name.padEnd(44)} ${ns.toFixed(0).padStart(8)} ns/call   ${(ns / (base * 1e6)).toFixed(2)}x`,
    );
  });
}

const read = (text: string, only?: (path: ArgumentPath) => boolean) => () =>
  parseToolArguments(text, { name: "ship", takesString, ...(only ? { takesOnlyString: only } : {}) });

console.log(
  `node ${process.version}; fastest of 400 calls in interleaved rounds; ratios against the first line\n`,
);
compare(`a call holding 4 tokens at string-only places (${tokens.length} B)`, [
  ["without takesOnlyString (before the rule)", read(tokens)],
  ["takesOnlyStringAt asked on each call", read(tokens, uncached)],
  ["answers kept per schema and path", read(tokens, cached)],
]);
compare(`a call holding no such token (${plain.length} B)`, [
  ["without takesOnlyString", read(plain)],
  ["takesOnlyStringAt (never asked)", read(plain, uncached)],
]);
compare(`a file write (${(write.length / 1024).toFixed(1)} kB)`, [
  ["without takesOnlyString", read(write)],
  ["takesOnlyStringAt (never asked)", read(write, uncached)],
]);
