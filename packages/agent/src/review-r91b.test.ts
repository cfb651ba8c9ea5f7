// r91 review: a malformed line that could never have been a prompt (the session header, a todo
// list, an answer of another role) no longer takes the answer after it, as if its question was lost.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { withPollutedPrototype } from "@loopwright/testkit";
import { defineTool } from "@loopwright/tools";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentError, readSessionFile, toAgentTool } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("agent-review-r91b");
const message = (m: object) => JSON.stringify({ type: "message", message: m });
const greeting = message({ role: "assistant", content: "Hi! Ask me anything." });

function read(lines: string[]) {
  const file = join(tempDir(), "chat.jsonl");
  writeFileSync(file, `${lines.join("\n")}\n`);
  return readSessionFile(file);
}

describe("r91b session: only a line that could have been a prompt orphans the answer after it", () => {
  it("keeps a host's greeting after a session header without its createdAt", () => {
    const { messages, notices } = read([JSON.stringify({ type: "session", version: 1, id: "s" }), greeting]);
    // Before: the greeting was dropped "as an answer to a prompt whose line was dropped".
    expect(messages).toEqual([{ role: "assistant", content: "Hi! Ask me anything." }]);
    expect(notices).toEqual([
      "Line 1 of the session file is a session header without its createdAt and was dropped.",
    ]);
  });

  it("keeps the answer after a malformed todo list, and still drops one after a malformed prompt", () => {
    const header = JSON.stringify({
      type: "session",
      version: 1,
      id: "s",
      createdAt: "2026-01-01T00:00:00.000Z",
    });
    const todos = read([
      header,
      JSON.stringify({ type: "todos", todos: "x" }),
      greeting,
      message({ role: "user", content: "q" }),
    ]);
    expect(todos.messages.map((m) => (m as { role: string }).role)).toEqual(["assistant", "user"]);
    expect(todos.notices.some((n) => /prompt whose line was dropped/.test(n))).toBe(false);
    // A user message the reader refuses (content that is a number) was a prompt: its answer goes.
    const prompt = read([
      header,
      message({ role: "user", content: "one" }),
      message({ role: "assistant", content: "First." }),
      message({ role: "user", content: 7 }),
      message({ role: "assistant", content: "Second." }),
    ]);
    expect(prompt.messages.map((m) => (m as { content: string }).content)).toEqual(["one", "First."]);
    expect(prompt.notices.some((n) => /Line 5 .* prompt whose line was dropped/.test(n))).toBe(true);
  });
});

describe("r91b session: what a dropped system message or answer step leaves", () => {
  const header = JSON.stringify({
    type: "session",
    version: 1,
    id: "s",
    createdAt: "2026-01-01T00:00:00.000Z",
  });
  it("keeps a greeting after a malformed system message, and drops the rest of a malformed step after an answer", () => {
    const system = read([header, message({ role: "system", content: 7 }), greeting]);
    expect(system.messages).toEqual([{ role: "assistant", content: "Hi! Ask me anything." }]);
    // A malformed step after a finished answer: what follows it would be a second answer in a row.
    const step = read([
      header,
      message({ role: "user", content: "one" }),
      message({ role: "assistant", content: "First." }),
      message({ role: "assistant", content: 7, tool_calls: [] }),
      message({ role: "assistant", content: "Then this." }),
    ]);
    expect(step.messages.map((m) => (m as { content: string }).content)).toEqual(["one", "First."]);
  });
});

describe("r91b toAgentTool: a tool's check and execute are its own, never Object.prototype's", () => {
  it("refuses a tool without check (an older @loopwright/tools) though Object.prototype.check is a function", async () => {
    const typed = defineTool({
      name: "look",
      description: "Looks",
      input: z.object({ q: z.string() }),
      execute: (args) => `looked for ${args.q}`,
    });
    const { check: _check, ...older } = typed;
    const polluter = async () => ({ q: "what the polluter chose" });
    // Before: taken, and every call ran the polluter's check, its answer handed to execute.
    const thrown = withPollutedPrototype({ check: polluter }, () => {
      try {
        toAgentTool(older as typeof typed);
        return undefined;
      } catch (error) {
        return error;
      }
    });
    expect(thrown).toBeInstanceOf(AgentError);
    expect((thrown as AgentError).message).toMatch(/named "look" without check/);
    // The tool as it is still adapts, and runs its own check.
    const tool = toAgentTool(typed);
    await expect(
      tool.execute({ q: "keys" }, { toolCallId: "c1", onUpdate: () => {}, terminate: () => {} }),
    ).resolves.toBe("looked for keys");
  });
});
