import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fixturesDir } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { ALL_FENCES, DEFAULT_FENCES, type FenceOptions, FenceSplitter, stripThinking } from "./fences.js";

/** Feeds `pieces` to a splitter and rebuilds what a UI would show from the released parts. */
function stream(pieces: string[], options: FenceOptions = {}) {
  const splitter = new FenceSplitter(options);
  let shown = "";
  let thought = "";
  const steps = [];
  for (const piece of [...pieces.map((p) => splitter.push(p)), splitter.flush()]) {
    shown = shown.slice(0, shown.length - piece.retracted) + piece.content;
    thought += piece.reasoning;
    steps.push(piece);
  }
  return { shown, thought, splitter, steps };
}

describe("stripThinking", () => {
  it("reads a long blank run inside a scratchpad, streamed a character at a time, as the whole reads it", () => {
    // A looping model pads its scratchpad with spaces; the splitter once reread the held run on
    // every character (80,000 spaces took 38 s), which the fuzz ladder times. Here: the same text.
    const text = `<think>plan${" ".repeat(5000)}\n\t ${" ".repeat(5000)}more</think>  answer`;
    const splitter = new FenceSplitter();
    const pieces = [...text].map((c) => splitter.push(c));
    pieces.push(splitter.flush());
    expect(pieces.map((p) => p.content).join("")).toBe("answer");
    expect(splitter.reasoning).toBe(stripThinking(text).reasoning);
    expect(splitter.reasoning.startsWith("plan ")).toBe(true);
    expect(splitter.reasoning.endsWith(" more")).toBe(true);
  });

  it("takes a <think> scratchpad out of the answer and drops the blank lines around it", () => {
    expect(stripThinking("<think>\nLet me see.\n</think>\n\nThe answer is 4.")).toEqual({
      content: "The answer is 4.",
      reasoning: "Let me see.",
    });
  });

  it("finds a tag glued to the first word of the scratchpad (llama.cpp before reasoning parsing)", () => {
    expect(stripThinking("<think>Okay, two plus two.</think>4")).toEqual({
      content: "4",
      reasoning: "Okay, two plus two.",
    });
  });

  it("reads gpt-oss harmony served raw: analysis channel is reasoning, final channel header is dropped", () => {
    const raw =
      "<|channel|>analysis<|message|>User greets. Reply briefly.<|end|><|start|>assistant<|channel|>final<|message|>Hello!";
    expect(stripThinking(raw)).toEqual({ content: "Hello!", reasoning: "User greets. Reply briefly." });
  });

  it("reads Kimi's ◁think▷ fence", () => {
    expect(stripThinking("◁think▷short plan◁/think▷Done.")).toEqual({
      content: "Done.",
      reasoning: "short plan",
    });
  });

  it("leaves <thinking> and <reasoning> in the answer by default but strips them with ALL_FENCES", () => {
    const text = "<thinking>hmm</thinking>Yes. <reasoning>why</reasoning>Because.";
    expect(stripThinking(text)).toEqual({ content: text, reasoning: "" });
    expect(stripThinking(text, { fences: ALL_FENCES })).toEqual({
      content: "Yes. Because.",
      reasoning: "hmmwhy",
    });
  });

  it("reads everything as answer with fences: []", () => {
    expect(stripThinking("<think>x</think>y", { fences: [] })).toEqual({
      content: "<think>x</think>y",
      reasoning: "",
    });
    expect(stripThinking("plan</think>y", { fences: [], startInReasoning: true })).toEqual({
      content: "plan</think>y",
      reasoning: "",
    });
  });

  it("gives an empty answer for a reply cut off inside its scratchpad", () => {
    expect(stripThinking("<think>I was still working out wheth")).toEqual({
      content: "",
      reasoning: "I was still working out wheth",
    });
  });

  it("moves everything before a lone </think> to reasoning (the template opened the fence)", () => {
    expect(stripThinking("The user wants a greeting.\n</think>\n\nHi there!")).toEqual({
      content: "Hi there!",
      reasoning: "The user wants a greeting.",
    });
  });

  it("treats a lone closing tag after a complete fence as ordinary text", () => {
    expect(stripThinking("<think>a</think>Use </think> to close.")).toEqual({
      content: "Use </think> to close.",
      reasoning: "a",
    });
  });

  it("does not move the answer for a lone harmony <|end|>, which also ends tool-call messages", () => {
    const leaked = JSON.parse(
      readFileSync(
        join(fixturesDir(), "wire/trtllm/gpt-oss-120b-harmony-tokens-leaked-into-content.json-string.txt"),
        "utf8",
      ),
    ) as string;
    expect(stripThinking(leaked)).toEqual({ content: leaked, reasoning: "" });
  });

  it("leaves Hermes <tool_call> markup in the answer for tool-call recovery to read", () => {
    const text = readFileSync(
      join(fixturesDir(), "wire/vllm/hermes-2-pro-raw-tool-call-markup-in-content.txt"),
      "utf8",
    );
    expect(stripThinking(text, { fences: ALL_FENCES })).toEqual({ content: text, reasoning: "" });
  });

  it("collects every scratchpad of a reply that thinks twice", () => {
    expect(stripThinking("<think>one</think>A <think>two</think>B")).toEqual({
      content: "A B",
      reasoning: "onetwo",
    });
  });

  it("rejects a malformed fence table with a TypeError naming the problem", () => {
    expect(() => stripThinking("x", { fences: [{ open: "", close: "</x>" }] })).toThrow(TypeError);
    expect(() => new FenceSplitter({ fences: "nope" as never })).toThrow(/array/);
  });
});

describe("FenceSplitter", () => {
  it("says closedScratchpad once a closing marker ends a scratchpad the template opened, and only then", () => {
    const read = (pieces: string[], options: FenceOptions = {}) => {
      const splitter = new FenceSplitter(options);
      const seen = pieces.map((piece) => {
        splitter.push(piece);
        return splitter.closedScratchpad;
      });
      splitter.flush();
      return seen;
    };
    // A lone </think>, split across pieces: said once the marker is whole, not before.
    expect(read(["plan", "</th", "ink>Answer"])).toEqual([false, false, true]);
    // The marker first in the reply: nothing to retract, and still said.
    expect(read(["</think>Answer"])).toEqual([true]);
    // startInReasoning said so up front: the marker ends that scratchpad.
    expect(read(["plan", "</think>Answer"], { startInReasoning: true })).toEqual([false, true]);
    // An opened and closed fence, a lone one after it, or harmony's <|end|>: no template-opened scratchpad.
    expect(read(["<think>x</think>Answer", " </think>"])).toEqual([false, false]);
    expect(read(["plan<|end|>Answer"])).toEqual([false]);
  });

  it("holds back a chunk ending in half a tag instead of showing it", () => {
    const splitter = new FenceSplitter();
    expect(splitter.push("Sure. <th")).toEqual({ content: "Sure. ", reasoning: "", retracted: 0 });
    expect(splitter.pending).toBe("<th");
    expect(splitter.push("ink>plan</think>Done")).toEqual({
      content: "Done",
      reasoning: "plan",
      retracted: 0,
    });
  });

  it("releases a held-back fragment once it turns out not to be a tag", () => {
    const splitter = new FenceSplitter();
    expect(splitter.push("a <").content).toBe("a ");
    expect(splitter.push("b> c").content).toBe("<b> c");
  });

  it("releases a trailing half tag as answer when the reply ends", () => {
    const { shown } = stream(["x <thi"]);
    expect(shown).toBe("x <thi");
  });

  it("holds back half a closing tag inside the scratchpad and releases it as reasoning if the reply ends", () => {
    const { shown, thought } = stream(["<think>abc </thi"]);
    expect(shown).toBe("");
    expect(thought).toBe("abc </thi");
  });

  it("retracts text already shown when a lone </think> shows it was scratchpad", () => {
    const splitter = new FenceSplitter();
    expect(splitter.push("Thinking about ").content).toBe("Thinking about ");
    expect(splitter.push("it")).toEqual({ content: "it", reasoning: "", retracted: 0 });
    const step = splitter.push("</think>Answer");
    expect(step).toEqual({
      content: "Answer",
      reasoning: "Thinking about it",
      retracted: "Thinking about it".length,
    });
    expect(splitter.content).toBe("Answer");
  });

  it("never shows anything before the closing tag with startInReasoning", () => {
    const { steps, shown, thought } = stream(["The plan", " is simple.", "</think>", "Hi"], {
      startInReasoning: true,
    });
    expect(steps.slice(0, 3).every((s) => s.content === "" && s.retracted === 0)).toBe(true);
    expect(shown).toBe("Hi");
    expect(thought).toBe("The plan is simple.");
  });

  it("with startInReasoning, also ends the scratchpad at harmony's <|end|>", () => {
    expect(
      stripThinking("plan<|end|><|start|>assistant<|channel|>final<|message|>Hi", { startInReasoning: true }),
    ).toEqual({ content: "Hi", reasoning: "plan" });
  });

  it(
    "splits the default fences the same over any split as stripThinking on the whole text",
    () => {
      const fragments = [
        ...DEFAULT_FENCES.flatMap((f) => [
          f.open,
          f.close,
          f.resume ?? "",
          f.open.slice(0, 3),
          f.close.slice(0, 4),
        ]),
        ...ALL_FENCES.flatMap((f) => [f.open, f.close]),
        "<",
        "</",
        "◁",
        "|",
        " ",
        "\n",
        "\n\n",
        "a",
        "word",
        "é",
        "😀",
        "x<y",
      ];
      const text = fc
        .array(fc.oneof(fc.constantFrom(...fragments.filter((f) => f !== "")), fc.string({ maxLength: 4 })), {
          maxLength: 30,
        })
        .map((parts) => parts.join(""));
      const options = fc.record({
        fences: fc.constantFrom(undefined, DEFAULT_FENCES, ALL_FENCES, []),
        startInReasoning: fc.boolean(),
      });
      fc.assert(
        fc.property(text, fc.array(fc.nat(), { maxLength: 12 }), options, (whole, cuts, opts) => {
          const points = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b);
          const pieces: string[] = [];
          let last = 0;
          for (const p of points) {
            pieces.push(whole.slice(last, p));
            last = p;
          }
          pieces.push(whole.slice(last));
          const expected = stripThinking(whole, opts);
          const { shown, thought, splitter } = stream(pieces, opts);
          expect({ content: splitter.content, reasoning: splitter.reasoning }).toEqual(expected);
          expect(shown).toBe(expected.content);
          expect(thought).toBe(expected.reasoning);
        }),
        propertyRuns(2000),
      );
    },
    propertyTimeout(60_000),
  );
});
