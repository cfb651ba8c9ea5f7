import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findFences } from "./json-text.js";
import { parseJson } from "./parse-json.js";
import { recoverToolCalls } from "./recover-tool-calls.js";

// Review r79: what r77b/r78b left in @loopwright/tool-calls.

const rm = '<tool_call>{"name": "rm", "arguments": {"path": "/"}}</tool_call>';
const fence = (marker: string, info: string, body: string) => `${marker}${info}\n${body}\n${marker}`;

describe("R79-4: a ```json line inside a fenced block does not close it (CommonMark: a closing fence has no info string)", () => {
  it("leaves a call quoted after a ```json line inside a block as the example it is", () => {
    for (const reply of [
      `To document it:\n\`\`\`markdown\nWrite a call like this:\n\`\`\`json\n${rm}\n\`\`\`\nThat is all.`,
      `Like this:\n\`\`\`\nfirst line\n\`\`\`json\n${rm}\n\`\`\`\n\nDone.`,
      `Like this:\n\`\`\`\nfirst line\n\`\`\` python\n${rm}\n\`\`\`\n\nDone.`,
    ]) {
      const read = recoverToolCalls(reply, ["rm"]);
      expect(read.calls, reply).toEqual([]);
      expect(read.text).toBe(reply);
    }
  });

  it("still closes at a bare run, one after the JSON on its line, and one before an end-of-turn token", () => {
    expect(findFences('```json\n{"a": 1}```\nmore', 5).map((f) => f.body)).toEqual(['{"a": 1}']);
    expect(findFences("```\nx\n```  \n", 5).map((f) => [f.body, f.closed])).toEqual([["x\n", true]]);
    expect(findFences("```tool_code\nf()\n```<end_of_turn>", 5).map((f) => f.body)).toEqual(["f()\n"]);
    // A block opened with four backticks is closed only by four or more.
    expect(findFences("````\na\n```\nb\n````\n", 5).map((f) => f.body)).toEqual(["a\n```\nb\n"]);
  });

  it("property: a block's lines that start with ``` and an info string are its text", () => {
    const line = fc.constantFrom("```json", "``` python", "```ts", "text", "{", "}", "", "`x`");
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.constantFrom("", "json", "md"), (lines, info) => {
        const body = lines.join("\n");
        const fences = findFences(`Intro.\n\`\`\`${info}\n${body}\n\`\`\`\nAfter.`, 5);
        expect(fences.length).toBe(1);
        expect(fences[0]?.body).toBe(`${body}\n`);
        expect(fences[0]?.closed).toBe(true);
      }),
    );
  });
});

describe("R79-4: parseJson reads a ~~~ fence as it reads a backtick one", () => {
  it("takes the fenced object over one in the prose before it", () => {
    const prose = 'Note: use {"b": 2} style. Result:\n';
    expect(parseJson(`${prose}\`\`\`json\n{"a": 1}\n\`\`\`\n`)).toEqual({ a: 1 });
    expect(parseJson(`${prose}~~~json\n{"a": 1}\n~~~\n`)).toEqual({ a: 1 });
  });

  it("property: the same reply fenced with ``` or ~~~ reads the same", () => {
    const word = fc.constantFrom("see", '{"b": 2}', "[1]", "note", "{x}", " ", "\n", "`");
    const json = fc.dictionary(fc.constantFrom("a", "b", "c"), fc.oneof(fc.integer(), fc.string()), {
      minKeys: 1,
    });
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 6 }),
        json,
        fc.constantFrom("", "json"),
        (before, value, info) => {
          const prose = `${before.join(" ")}\n`;
          const body = JSON.stringify(value, null, 1);
          const ticks = parseJson(`${prose}${fence("```", info, body)}\n`);
          const tildes = parseJson(`${prose}${fence("~~~", info, body)}\n`);
          expect(tildes).toEqual(ticks);
          expect(tildes).toEqual(value);
        },
      ),
    );
  });
});
