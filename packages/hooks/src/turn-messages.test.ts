import type { MessageLike } from "@loopwright/ledger";
import { describe, expect, it } from "vitest";
import { HooksError, turnIndex, turnMessages } from "./index.js";

const transcript: MessageLike[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "What time is it?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "clock", arguments: "{}" } }],
  },
  { role: "tool", tool_call_id: "c1", content: "12:00" },
  { role: "assistant", content: [{ type: "text", text: "Noon." }] },
  { role: "user", content: "Thanks" },
];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("turnMessages", () => {
  it("hands a hook each message's text, role, tool calls and stored index, without the system prompt", () => {
    const handed = turnMessages(transcript, "s-1");
    expect(handed.map(({ uuid: _, ...rest }) => rest)).toEqual([
      { index: 1, role: "user", content: "What time is it?" },
      { index: 2, role: "assistant", content: "", toolCalls: [{ id: "c1", name: "clock", arguments: "{}" }] },
      { index: 3, role: "tool", content: "12:00", toolCallId: "c1" },
      { index: 4, role: "assistant", content: "Noon." },
      { index: 5, role: "user", content: "Thanks" },
    ]);
    for (const message of handed) expect(message.uuid).toMatch(UUID);
    expect(new Set(handed.map((m) => m.uuid)).size).toBe(handed.length);
  });

  it("gives a message the same uuid after a fold, given the stored index of the array's first message", () => {
    const before = turnMessages(transcript, "s-1");
    const afterFold: MessageLike[] = [
      { role: "system", content: "Summary of the conversation so far" },
      ...transcript.slice(3),
    ];
    const after = turnMessages(afterFold.slice(1), "s-1", 3);
    expect(after.map((m) => m.uuid)).toEqual(before.filter((m) => m.index >= 3).map((m) => m.uuid));
    expect(turnMessages(transcript, "s-2")[0]?.uuid).not.toBe(before[0]?.uuid);
  });

  it("refuses a bad session or offset", () => {
    expect(() => turnMessages(transcript, 7 as never)).toThrow(HooksError);
    expect(() => turnMessages(transcript, "s", -1)).toThrow(/offset must be a whole number, 0 or more/);
    expect(() => turnMessages({} as never, "s")).toThrow(/turnMessages: messages must be an array/);
  });
});

describe("turnIndex", () => {
  it("counts the turn the transcript ends in from 0, with the turns a fold took out", () => {
    expect(turnIndex([])).toBe(0);
    expect(turnIndex(transcript.slice(0, 2))).toBe(0);
    expect(turnIndex(transcript)).toBe(1);
    expect(turnIndex(transcript.slice(3), 4)).toBe(4);
    expect(() => turnIndex(transcript, 0.5)).toThrow(HooksError);
  });
});
