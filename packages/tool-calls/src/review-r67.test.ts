import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { parseJson } from "./parse-json.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

// R67L-3: Gemma 4's `<|tool_call>call:name{…}` (and FunctionGemma's `<start_function_call>`) was
// read by walking from each opener to where its braces close, charged to no budget: a looping reply
// of openers that never close walked the rest of the reply from each of up to 256 of them. 400 KB
// took 19 s here, 200 KB 4 s (every other format: tens of milliseconds).

const tools = [
  {
    name: "write_file",
    inputSchema: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } } },
  },
];

describe("R67L-3: Gemma calls are read in time linear in the reply", () => {
  // The timeout is the hang guard (the walk from each opener took 19 s on 400 KB); no timing is asserted.
  it("reads 400 KB of Gemma openers that never close, and recovers nothing", { timeout: 8_000 }, () => {
    for (const unit of ["<|tool_call>call:write_file{", "<start_function_call>call:write_file{"]) {
      const text = unit.repeat(Math.floor(400_000 / unit.length));
      expect(recoverToolCalls(text, tools)).toEqual({ calls: [], text });
    }
  });

  it("still recovers the call after a run of openers that never closed", () => {
    const junk = "<|tool_call>call:write_file{path:".repeat(200);
    const real = '<|tool_call>call:write_file{path:<|"|>a.txt<|"|>,content:<|"|>one<|"|>}<tool_call|>';
    const { calls, text } = recoverToolCalls(`${junk}${real}`, tools);
    expect(calls.map((c) => c.args)).toEqual([{ path: "a.txt", content: "one" }]);
    expect(text).toBe(junk.trim());
  });

  it("keeps an opener written inside a string argument as that argument's text", () => {
    const content =
      "Gemma writes <|tool_call>call:x{ to call a tool, and <start_function_call> for FunctionGemma";
    const reply = `<|tool_call>call:write_file{path:<|"|>doc.md<|"|>,content:<|"|>${content}<|"|>}<tool_call|>`;
    expect(recoverToolCalls(reply, tools).calls.map((c) => c.args)).toEqual([{ path: "doc.md", content }]);
    const quoted = `<start_function_call>call:write_file{path:"doc.md",content:${JSON.stringify(content)}}<end_function_call>`;
    expect(recoverToolCalls(quoted, tools).calls.map((c) => c.args)).toEqual([{ path: "doc.md", content }]);
  });

  const text = fc
    .array(
      fc.constantFrom(
        "a",
        " ",
        "\n",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        '"',
        "'",
        "\\",
        "<",
        ">",
        "<|tool_call>",
        "call:",
        "é",
      ),
      { maxLength: 10 },
    )
    .map((parts) => parts.join(""))
    .filter((s) => !s.includes('<|"|>'));

  it("property: a Gemma call's string arguments reach the tool exactly as written, after any junk", () => {
    fc.assert(
      fc.property(
        text,
        text,
        fc.nat({ max: 40 }),
        fc.boolean(),
        (path, content, junkCount, functionGemma) => {
          const [open, close, quote] = functionGemma
            ? ["<start_function_call>", "<end_function_call>", "<escape>"]
            : ["<|tool_call>", "<tool_call|>", '<|"|>'];
          if (path.includes(quote) || content.includes(quote)) return;
          const junk = `${open}call:write_file{path:`.repeat(junkCount);
          const call = `${open}call:write_file{path:${quote}${path}${quote},content:${quote}${content}${quote}}${close}`;
          const { calls } = recoverToolCalls(`${junk}${call}`, tools);
          expect(calls.map((c) => c.args)).toEqual([{ path, content }]);
        },
      ),
      propertyRuns(1500),
    );
  });
});

// R67L-5: parseJson took the first `{` in the reply as the object's start even where it was prose
// ("Note { then …"): the rest of the reply, prose words and the real object, was repaired into one
// object, with words as keys and `null`s the model never wrote.
describe("R67L-5: parseJson reads no object from a brace in prose", () => {
  it("skips a brace in prose for the object after it", () => {
    expect(parseJson('Note { then {"a": 1} done')).toEqual({ a: 1 });
    expect(parseJson('Use { carefully. Answer: {"a": 1}')).toEqual({ a: 1 });
    expect(parseJson("Note { then [1, 2] done")).toEqual([1, 2]);
    expect(parseJson("Note { then nothing at all")).toBeUndefined();
  });

  it("still reads what an object opens on: bare keys, comments, a cut right after the brace", () => {
    expect(parseJson("Here: {path: 'a.txt'}")).toEqual({ path: "a.txt" });
    expect(parseJson("Here: {1: 'x'}")).toEqual({ 1: "x" });
    expect(parseJson("Here: {ключ: 1}")).toEqual({ ключ: 1 });
    expect(parseJson("Here: { // the answer\n a: 1}")).toEqual({ a: 1 });
    expect(parseJson('Here: { "a": [1, 2')).toEqual({ a: [1, 2] });
    expect(parseJson("Here: {")).toEqual({});
    expect(parseJson('Answer: {{"a": 1}}')).toEqual({ a: 1 });
  });

  const word = fc.stringMatching(/^[a-z]{1,8}$/);
  const prose = fc.array(word, { maxLength: 6 }).map((words) => words.join(" "));

  it("property: the object after a brace in prose is read exactly as written", () => {
    fc.assert(
      fc.property(prose, prose, prose, fc.jsonValue({ maxDepth: 3 }), (before, between, after, held) => {
        const value = { held };
        const reply = `${before} { ${between} ${JSON.stringify(value)} ${after}`;
        expect(parseJson(reply)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      propertyRuns(2000),
    );
  });
});
