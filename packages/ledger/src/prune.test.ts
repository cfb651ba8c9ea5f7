import { describe, expect, it } from "vitest";
import { LedgerError } from "./errors.js";
import type { MessageLike } from "./messages.js";
import { pruneToolResults } from "./prune.js";

const result = (id: string, content: string): MessageLike => ({ role: "tool", tool_call_id: id, content });

describe("pruneToolResults", () => {
  const transcript: MessageLike[] = [
    { role: "user", content: "go" },
    result("1", "a".repeat(10_412)),
    result("2", "b".repeat(300)),
    result("3", "short"),
    result("4", "d".repeat(500)),
    result("5", "e".repeat(500)),
  ];

  it("replaces every result but the latest few with a stub saying how much was cleared", () => {
    const pruned = pruneToolResults(transcript, { keepLast: 2 });
    expect(pruned[1]?.content).toBe("[result cleared, 10,412 chars]");
    expect(pruned[2]?.content).toBe("[result cleared, 300 chars]");
    expect(pruned[4]).toBe(transcript[4]);
    expect(pruned[5]).toBe(transcript[5]);
  });

  it("keeps every index and the call id, and leaves the messages it was given alone", () => {
    const pruned = pruneToolResults(transcript, { keepLast: 0 });
    expect(pruned).toHaveLength(transcript.length);
    expect(pruned[1]?.tool_call_id).toBe("1");
    expect(transcript[1]?.content).toHaveLength(10_412);
    expect(pruned[0]).toBe(transcript[0]);
  });

  it("leaves a result at or under maxChars as it is", () => {
    const pruned = pruneToolResults(transcript, { keepLast: 0, maxChars: 300 });
    expect(pruned[2]).toBe(transcript[2]);
    expect(pruned[3]).toBe(transcript[3]);
  });

  it("leaves a stub it wrote alone when pruned again, even with a maxChars under the stub's length", () => {
    const once = pruneToolResults(transcript, { keepLast: 0, maxChars: 0 });
    const twice = pruneToolResults(once, { keepLast: 0, maxChars: 0 });
    expect(twice[1]?.content).toBe("[result cleared, 10,412 chars]");
    expect(twice).toEqual(once);
    expect(twice[1]).toBe(once[1]);
  });

  it("never clears a result that carries tool definitions, however old", () => {
    const definitions = result(
      "load",
      `${JSON.stringify({ name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } })}\n${"x".repeat(400)}`,
    );
    const pruned = pruneToolResults([definitions, ...transcript], { keepLast: 0 });
    expect(pruned[0]).toBe(definitions);
  });

  it("takes the host's own definitions test in place of the default", () => {
    const pruned = pruneToolResults(transcript, {
      keepLast: 0,
      holdsDefinitions: (m) => m.tool_call_id === "1",
    });
    expect(pruned[1]).toBe(transcript[1]);
    expect(pruned[2]).not.toBe(transcript[2]);
  });

  it("refuses a negative keepLast", () => {
    expect(() => pruneToolResults(transcript, { keepLast: -1 })).toThrow(/keepLast/);
  });

  it("refuses options, or a holdsDefinitions, of the wrong type with a typed error naming them", () => {
    for (const options of [null, "keep 5", 5]) {
      const thrown = (() => {
        try {
          pruneToolResults(transcript, options as never);
        } catch (error) {
          return error;
        }
      })();
      expect(LedgerError.isInstance(thrown), String(thrown)).toBe(true);
      expect((thrown as LedgerError).message).toMatch(/options/);
    }
    const thrown = (() => {
      try {
        pruneToolResults(transcript, { keepLast: 0, holdsDefinitions: "load_tools" as never });
      } catch (error) {
        return error;
      }
    })();
    expect(LedgerError.isInstance(thrown), String(thrown)).toBe(true);
    expect((thrown as LedgerError).message).toMatch(/holdsDefinitions/);
  });
});
