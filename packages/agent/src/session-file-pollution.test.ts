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

/** A file of one tool step: the user's words, the assistant's `call`, and the call's answer. */
function stepFile(call: Record<string, unknown>): string {
  const message = (m: unknown) => ({ type: "message", message: m });
  return fileOf(
    message({ role: "user", content: "Go." }),
    message({ role: "assistant", content: null, tool_calls: [call] }),
    message({ role: "tool", tool_call_id: call.id, content: "done" }),
  );
}

/** What reading `path` gives with `fields` on Object.prototype, beside what it gives clean. */
function readBothWays(path: string, fields: Record<string, unknown>) {
  return {
    clean: readSessionFile(path),
    polluted: withPollutedPrototype(fields, () => readSessionFile(path)),
  };
}

describe("a session file is read from its own text, whatever Object.prototype holds", () => {
  it("a function call gains no `custom` part from an object on Object.prototype.custom", () => {
    const path = stepFile({ id: "w1", type: "function", function: { name: "get_weather", arguments: "{}" } });
    // Before: the call came back as `{ …, custom: {} }` (sent so to the model on resume), with a
    // notice that the file held a field `tool_calls[0].custom.p0lluted` it never held.
    const { clean, polluted } = readBothWays(path, { custom: { p0lluted: "P0LLUTED" } });
    expect(polluted).toEqual(clean);
    expect(JSON.stringify(polluted.messages)).not.toContain("custom");
  });

  it("a custom call gains no `function` part from an object on Object.prototype.function", () => {
    const path = stepFile({ id: "c1", type: "custom", custom: { name: "shell", input: "ls" } });
    const { clean, polluted } = readBothWays(path, { function: { p0lluted: "P0LLUTED" } });
    expect(polluted).toEqual(clean);
    expect(JSON.stringify(polluted.messages)).not.toContain('"function"');
  });

  it("a call written without a type is not read as another client's typed call by an inherited `type`", () => {
    const path = stepFile({ id: "w1", function: { name: "get_weather", arguments: "{}" } });
    // Before: a notice that the call had type "tool", and the call rewritten with a type of its own.
    const { clean, polluted } = readBothWays(path, { type: "tool" });
    expect(polluted).toEqual(clean);
  });
});
