import { describe, expect, it } from "vitest";
import { createBus } from "./bus.js";
import { fold } from "./fold.js";
import type { RunEvent, SequencedEvent } from "./types.js";
import { withSeq } from "./with-seq.js";

async function readAll(stream: AsyncIterable<SequencedEvent>): Promise<SequencedEvent[]> {
  const out: SequencedEvent[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

/** What a page reading the run over SSE holds: each event written as JSON and parsed back. */
const overJson = (events: readonly SequencedEvent[]): SequencedEvent[] =>
  events.map((event) => JSON.parse(JSON.stringify(event)) as SequencedEvent);

// A host's own notice about its own loss, with a `dropped` count of its own.
const HOST_NOTICE = { kind: "notice", text: "dropped 3 rows", dropped: 3 } as const;

describe("a host's notice carrying `dropped`", () => {
  // A turn whose answer is taken back across the host's notice, as across any plain notice.
  const run: RunEvent[] = [
    { kind: "turn", step: 1 },
    { kind: "output", text: "<tool_call>" },
    HOST_NOTICE,
    { kind: "retract", chars: "<tool_call>".length },
    { kind: "thinking", text: "a call, written as text" },
    { kind: "done" },
  ];
  const expected = [
    { kind: "notice", text: "dropped 3 rows" },
    { kind: "reasoning", text: "a call, written as text" },
  ];

  it("is stored, read and folded as a plain notice, in memory and after JSON", async () => {
    const bus = createBus();
    const watcher = bus.watch("r91");
    for (const event of run) bus.emit("r91", event);
    const history = bus.history("r91");
    // `dropped` is the watcher's mark: left out of what the bus stores, hands out and writes.
    expect(history[2]).toEqual({ kind: "notice", text: "dropped 3 rows", seq: 3 });
    expect(JSON.stringify(history)).not.toContain('"dropped"');
    const seen = await readAll(watcher);
    expect(seen).toEqual(history);
    // It had been read as a gap: the retract stopped at it and the answer stayed on screen.
    expect(fold(history)).toEqual(expected);
    expect(fold(overJson(history))).toEqual(expected);
    // Replay and live together: drawn once, like any event.
    expect(fold([...seen, ...history])).toEqual(expected);
    // The object the host passed is untouched.
    expect(HOST_NOTICE.dropped).toBe(3);
  });

  it("is a plain notice in a host's own list of its events, which carry no seq", () => {
    expect(fold(run)).toEqual(expected);
  });

  it("is left out of the copy withSeq makes, the part a bus of its own (Redis) stores", () => {
    expect(withSeq(HOST_NOTICE, 4)).toEqual({ kind: "notice", text: "dropped 3 rows", seq: 4 });
    const parsed = JSON.parse('{"kind":"notice","text":"t","dropped":2,"__proto__":{"x":1}}') as RunEvent;
    expect(Object.hasOwn(withSeq(parsed, 1), "dropped")).toBe(false);
    // Only a notice's: another kind's field of that name is the host's own data.
    const output = { kind: "output", text: "x", dropped: 1 } as unknown as RunEvent;
    expect(withSeq(output, 1)).toMatchObject({ dropped: 1 });
  });
});

describe("a watcher's own gap notice", () => {
  /** A run a watcher fell behind on: its reads, and the run's history. */
  async function behind(): Promise<{ seen: SequencedEvent[]; history: SequencedEvent[] }> {
    const bus = createBus({ maxEvents: 3, trimSlack: 1 });
    const watcher = bus.watch("gap");
    bus.emit("gap", { kind: "turn", step: 1 });
    for (let i = 0; i < 8; i++) bus.emit("gap", { kind: "output", text: `${i}` });
    bus.emit("gap", { kind: "done" });
    return { seen: await readAll(watcher), history: bus.history("gap") };
  }

  it("still carries `dropped`, in memory and after JSON, and fold still knows it", async () => {
    const { seen, history } = await behind();
    const gap = seen.find((event) => event.kind === "notice");
    expect(gap).toMatchObject({ kind: "notice", dropped: expect.any(Number) });
    for (const events of [seen, overJson(seen)]) {
      const blocks = fold(events);
      // Drawn, and the answer before it kept apart from the one after (a retract stops at a gap).
      expect(blocks.map((block) => block.kind)).toEqual(["notice", "text"]);
    }
    // The replay fills the gap: the notice is not drawn, and the answer is whole — in memory and after JSON.
    const whole = [{ kind: "text", text: "01234567" }];
    expect(fold([...seen, ...history])).toEqual(whole);
    expect(fold(overJson([...seen, ...history]))).toEqual(whole);
    expect(fold(overJson([...history, ...seen]))).toEqual(whole);
  });
});
