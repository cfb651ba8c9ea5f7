// A hook's text that leaves a markdown code fence open (a `git diff` or a log cut at the budget, a
// hook that forgot its closing fence) took in its block's own `</context>`, the next hook's block
// and the user's question as code. The fence is closed at the end of its block now, within the
// budget, with a note where the hook's whole text left it open.
import { describe, expect, it } from "vitest";
import { assembleContext } from "./index.js";

const outcome = (id: string, context: string) => ({ id, ok: true, context });

describe("a code fence a hook's text leaves open", () => {
  it("is closed at the end of its block, with a note; the next block stays outside it", () => {
    const notes: string[] = [];
    const text = assembleContext(
      [
        outcome("diff", "Uncommitted changes:\n```diff\n+ const a = 1;"),
        outcome("todo", "Open todos: none."),
      ],
      2000,
      { onNote: (note) => notes.push(note) },
    );
    expect(text).toBe(
      '<context hook="diff">\nUncommitted changes:\n```diff\n+ const a = 1;\n```\n</context>\n\n<context hook="todo">\nOpen todos: none.\n</context>',
    );
    expect(notes).toEqual([
      "Hook diff's context left a code fence open; it was closed at the end of its block.",
    ]);
  });

  it("closes the fence a cut at the budget falls in, inside the budget", () => {
    const notes: string[] = [];
    const log = `Build log:\n~~~~\n${"line of output\n".repeat(400)}~~~~\nBuild failed.`;
    const text = assembleContext([outcome("build", log)], 200, {
      charsPerToken: 4,
      onNote: (note) => notes.push(note),
    });
    expect(text.length).toBeLessThanOrEqual(800);
    expect(text).toMatch(/\nline o[a-z ]* \[…\]\n~~~~\n<\/context>$/);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(
      /^Hook build's context was cut from \d+ to \d+ characters to fit the 200-token hook budget\.$/,
    );
  });

  it("leaves a text whose fences are closed, or that only mentions backticks, as it was", () => {
    const notes: string[] = [];
    const closed = "Run:\n```sh\npnpm test\n```\nThen ``` inline is fine.";
    const inline = "Use ```js``` fences, or `code`.";
    const text = assembleContext([outcome("a", closed), outcome("b", inline)], 2000, {
      onNote: (note) => notes.push(note),
    });
    expect(text).toBe(
      `<context hook="a">\n${closed}\n</context>\n\n<context hook="b">\n${inline}\n</context>`,
    );
    expect(notes).toEqual([]);
  });

  it("a longer closing run closes it; a shorter one, or the other character, does not", () => {
    const notes: string[] = [];
    const longer = "````\ncode\n`````";
    const shorter = "````\ncode\n```";
    const text = assembleContext([outcome("a", longer), outcome("b", shorter)], 2000, {
      onNote: (note) => notes.push(note),
    });
    expect(text).toContain(`<context hook="a">\n${longer}\n</context>`);
    expect(text).toContain(`<context hook="b">\n${shorter}\n\`\`\`\`\n</context>`);
    expect(notes).toEqual([
      "Hook b's context left a code fence open; it was closed at the end of its block.",
    ]);
  });
});
