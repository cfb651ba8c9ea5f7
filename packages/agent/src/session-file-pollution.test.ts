import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { readSessionFile } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("sfp");

// Found by `pnpm fuzz:pollution --scenario agent --values object`: reading a session file took a
// tool call's `custom` (or `function`) part through Object.prototype. Each test fails on the code
// before the fix.

/** A session file of `lines` (each a record, written as JSON), in a fresh folder. */
function fileOf(...lines: unknown[]): string {
  const path = join(tempDir(), "s.jsonl");
  const head = { type: "session", version: 1, id: "s", createdAt: "2026-12-06T00:00:00.000Z" };
  writeFileSync(path, `${[head, ...lines].map((line) => JSON.stringify(line)).join("\n")}\n`);
  return path;
}

const message = (m: unknown) => ({ type: "message", message: m });

describe("a session file is read from its own text, whatever Object.prototype holds", () => {
  it("a function call gains no `custom` part from an object on Object.prototype.custom", () => {
    const path = fileOf(
      message({ role: "user", content: "Weather?" }),
      message({
        role: "assistant",
        content: null,
        tool_calls: [{ id: "w1", type: "function", function: { name: "get_weather", arguments: "{}" } }],
      }),
      message({ role: "tool", tool_call_id: "w1", content: "sunny" }),
    );
    const clean = readSessionFile(path);
    // Before: the call came back as `{ …, custom: {} }` (sent so to the model on resume), with a
    // notice that the file held a field `tool_calls[0].custom.p0lluted` it never held.
    const polluted = withPollutedPrototype({ custom: { p0lluted: "P0LLUTED" } }, () => readSessionFile(path));
    expect(polluted).toEqual(clean);
    expect(JSON.stringify(polluted.messages)).not.toContain("custom");
  });

  it("a custom call gains no `function` part from an object on Object.prototype.function", () => {
    const path = fileOf(
      message({ role: "user", content: "Run it." }),
      message({
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "custom", custom: { name: "shell", input: "ls" } }],
      }),
      message({ role: "tool", tool_call_id: "c1", content: "a b" }),
    );
    const clean = readSessionFile(path);
    const polluted = withPollutedPrototype({ function: { p0lluted: "P0LLUTED" } }, () =>
      readSessionFile(path),
    );
    expect(polluted).toEqual(clean);
    expect(JSON.stringify(polluted.messages)).not.toContain('"function"');
  });

  it("a call written without a type is not read as another client's typed call by an inherited `type`", () => {
    const path = fileOf(
      message({ role: "user", content: "Weather?" }),
      message({
        role: "assistant",
        content: null,
        tool_calls: [{ id: "w1", function: { name: "get_weather", arguments: "{}" } }],
      }),
      message({ role: "tool", tool_call_id: "w1", content: "sunny" }),
    );
    const clean = readSessionFile(path);
    // Before: a notice that the call had type "tool", and the call rewritten with a type of its own.
    const polluted = withPollutedPrototype({ type: "tool" }, () => readSessionFile(path));
    expect(polluted).toEqual(clean);
  });
});
