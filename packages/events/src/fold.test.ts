import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBus } from "./bus.js";
import { EventsError } from "./errors.js";
import { fold } from "./fold.js";
import type { RunEvent } from "./types.js";

describe("fold", () => {
  it("joins a token stream into one text block and one reasoning block", () => {
    const blocks = fold([
      { kind: "thinking", text: "let me " },
      { kind: "thinking", text: "think" },
      { kind: "output", text: "Hel" },
      { kind: "output", text: "lo" },
      { kind: "usage", usage: { prompt: 1, completion: 1, total: 2, cached: 0 }, turn: {} as never },
      { kind: "done" },
    ]);
    expect(blocks).toEqual([
      { kind: "reasoning", text: "let me think" },
      { kind: "text", text: "Hello" },
    ]);
  });

  it("takes a retract's characters back from the end of the last text block, dropping it when emptied", () => {
    // A template that opened <think> in the prompt: the plan went out as answer before </think> came.
    const blocks = fold([
      { kind: "turn", step: 1 },
      { kind: "output", text: "pl" },
      { kind: "output", text: "an" },
      { kind: "retract", chars: 4 },
      { kind: "thinking", text: "plan" },
      { kind: "output", text: "Answer" },
    ]);
    expect(blocks).toEqual([
      { kind: "reasoning", text: "plan" },
      { kind: "text", text: "Answer" },
    ]);
    const partly = fold([
      { kind: "output", text: "Sure. plan" },
      { kind: "notice", text: "retrying" },
      { kind: "retract", chars: 4 },
      { kind: "retract", chars: 0 },
      { kind: "retract", chars: -2 },
      { kind: "retract", chars: 1.5 },
      { kind: "retract", chars: "3" } as unknown as RunEvent,
    ]);
    expect(partly).toEqual([
      { kind: "text", text: "Sure. " },
      { kind: "notice", text: "retrying" },
    ]);
    expect(
      fold([
        { kind: "thinking", text: "x" },
        { kind: "retract", chars: 9 },
      ]),
    ).toEqual([{ kind: "reasoning", text: "x" }]);
  });

  it("takes a retract back within its turn only: never past the turn's start or a tool card", () => {
    const before = [
      { kind: "turn", step: 1 },
      { kind: "output", text: "Let me check the weather." },
      { kind: "tool-call", id: "c1", name: "weather", args: "{}" },
      { kind: "tool-result", id: "c1", name: "weather", ok: true, content: "sunny" },
    ] as RunEvent[];
    const card = {
      kind: "tool",
      id: "c1",
      name: "weather",
      args: "{}",
      result: { ok: true, content: "sunny" },
    };
    // Turn 2 drew no answer yet: a retract of 20 has nothing of this turn to take.
    expect(fold([...before, { kind: "turn", step: 2 }, { kind: "retract", chars: 20 }])).toEqual([
      { kind: "text", text: "Let me check the weather." },
      card,
    ]);
    // A tool card is a boundary too, without a turn event between (events passed without them).
    expect(
      fold([...before.slice(1), { kind: "output", text: "So" }, { kind: "retract", chars: 30 }]),
    ).toEqual([{ kind: "text", text: "Let me check the weather." }, card]);
    // A new turn after a text with no card: the previous turn's answer stays.
    expect(
      fold([
        { kind: "output", text: "First answer." },
        { kind: "turn", step: 2 },
        { kind: "output", text: "plan" },
        { kind: "retract", chars: 10 },
        { kind: "thinking", text: "plan" },
      ]),
    ).toEqual([
      { kind: "text", text: "First answer." },
      { kind: "reasoning", text: "plan" },
    ]);
  });

  it("takes nothing from above a gap notice: a slow watcher that missed the turn's text keeps the turn before intact", () => {
    const events = [
      { seq: 1, kind: "turn", step: 1 },
      { seq: 2, kind: "output", text: "Let me check the weather." },
      { seq: 3, kind: "tool-call", id: "c1", name: "weather", args: "{}" },
      { seq: 4, kind: "tool-result", id: "c1", name: "weather", ok: true, content: "sunny" },
      { seq: 5, kind: "turn", step: 2 },
      { seq: 7, kind: "notice", text: "2 events were dropped", dropped: 2 },
      { seq: 8, kind: "retract", chars: 20 },
      { seq: 9, kind: "thinking", text: "It is sunny, say so." },
      { seq: 10, kind: "output", text: "It is sunny." },
    ] as (RunEvent & { seq: number })[];
    expect(fold(events)).toEqual([
      { kind: "text", text: "Let me check the weather." },
      { kind: "tool", id: "c1", name: "weather", args: "{}", result: { ok: true, content: "sunny" } },
      { kind: "notice", text: "2 events were dropped" },
      { kind: "reasoning", text: "It is sunny, say so." },
      { kind: "text", text: "It is sunny." },
    ]);
    // Text drawn after the gap is the end of the answer: that much is taken, and no more.
    const after = [
      { seq: 1, kind: "output", text: "Before the gap " },
      { seq: 3, kind: "notice", text: "2 events were dropped", dropped: 2 },
      { seq: 4, kind: "output", text: "plan" },
      { seq: 5, kind: "retract", chars: 12 },
    ] as (RunEvent & { seq: number })[];
    expect(fold(after)).toEqual([
      { kind: "text", text: "Before the gap " },
      { kind: "notice", text: "2 events were dropped" },
    ]);
  });

  it("takes a retract longer than the last text block from the turn's earlier text blocks, across its reasoning and a continuation's notice", () => {
    // Text, server-parsed reasoning, more text, then a lone </think> taking back both text pieces.
    expect(
      fold([
        { kind: "turn", step: 1 },
        { kind: "output", text: "plan A " },
        { kind: "thinking", text: "x" },
        { kind: "output", text: "plan B" },
        { kind: "retract", chars: 13 },
        { kind: "thinking", text: "plan A plan B" },
        { kind: "output", text: "Answer" },
      ]),
    ).toEqual([
      { kind: "reasoning", text: "xplan A plan B" },
      { kind: "text", text: "Answer" },
    ]);
    // A scratchpad cut off at the ceiling, carried on, and closed in the continuation; the retract
    // ends inside the first text block, which keeps what is before.
    expect(
      fold([
        { kind: "turn", step: 1 },
        { kind: "output", text: "Intro. The user greets me" },
        { kind: "notice", text: "The reply was cut off at the token ceiling (maxTokens); carrying it on." },
        { kind: "output", text: ", I greet back." },
        { kind: "retract", chars: 33 },
        { kind: "thinking", text: "The user greets me, I greet back." },
        { kind: "output", text: "Hello!" },
      ]),
    ).toEqual([
      { kind: "text", text: "Intro. " },
      { kind: "notice", text: "The reply was cut off at the token ceiling (maxTokens); carrying it on." },
      { kind: "reasoning", text: "The user greets me, I greet back." },
      { kind: "text", text: "Hello!" },
    ]);
  });

  it("takes a thinking-retract's characters back from the turn's reasoning only, across its answer, never past the turn's start or a tool card", () => {
    // A call written as text with a </think> in its arguments: its markup was drawn as reasoning.
    expect(
      fold([
        { kind: "turn", step: 1 },
        { kind: "thinking", text: "plan. " },
        { kind: "output", text: "Sure." },
        { kind: "thinking", text: "<tool_call>" },
        { kind: "thinking-retract", chars: 13 },
        { kind: "thinking-retract", chars: 0 },
        { kind: "thinking-retract", chars: -1 },
        { kind: "thinking-retract", chars: 2.5 },
        { kind: "thinking-retract", chars: "3" } as unknown as RunEvent,
      ]),
    ).toEqual([
      { kind: "reasoning", text: "plan" },
      { kind: "text", text: "Sure." },
    ]);
    // Emptied blocks are dropped; the answer is never touched, however many characters are asked.
    expect(
      fold([
        { kind: "thinking", text: "x" },
        { kind: "output", text: "Answer" },
        { kind: "thinking-retract", chars: 50 },
      ]),
    ).toEqual([{ kind: "text", text: "Answer" }]);
    const before: RunEvent[] = [
      { kind: "turn", step: 1 },
      { kind: "thinking", text: "earlier plan" },
      { kind: "tool-call", id: "c1", name: "read", args: "{}" },
    ];
    expect(
      fold([...before, { kind: "thinking", text: "ab" }, { kind: "thinking-retract", chars: 9 }]),
    ).toEqual(fold(before));
    expect(fold([...before, { kind: "turn", step: 2 }, { kind: "thinking-retract", chars: 9 }])).toEqual(
      fold(before),
    );
  });

  it("draws a tool call as a card and fills it in with its result", () => {
    const blocks = fold([
      { kind: "output", text: "Looking." },
      { kind: "tool-call", id: "c1", name: "read", args: '{"path":"a"}' },
      { kind: "tool-call", id: "c2", name: "read", args: '{"path":"b"}' },
      { kind: "tool-result", id: "c2", name: "read", ok: false, content: "ENOENT", ms: 3 },
      { kind: "tool-result", id: "c1", name: "read", ok: true, content: "text" },
      { kind: "output", text: "Done." },
    ]);
    expect(blocks).toEqual([
      { kind: "text", text: "Looking." },
      { kind: "tool", id: "c1", name: "read", args: '{"path":"a"}', result: { ok: true, content: "text" } },
      {
        kind: "tool",
        id: "c2",
        name: "read",
        args: '{"path":"b"}',
        result: { ok: false, content: "ENOENT", ms: 3 },
      },
      { kind: "text", text: "Done." },
    ]);
  });

  it("gives a reused call id's result to the latest card still waiting for one", () => {
    const blocks = fold([
      { kind: "tool-call", id: "0", name: "a", args: "" },
      { kind: "tool-result", id: "0", name: "a", ok: true, content: "first" },
      { kind: "turn", step: 2 },
      { kind: "tool-call", id: "0", name: "b", args: "" },
      { kind: "tool-result", id: "0", name: "b", ok: true, content: "second" },
    ]);
    expect(blocks.map((b) => (b.kind === "tool" ? [b.name, b.result?.content] : b.kind))).toEqual([
      ["a", "first"],
      ["b", "second"],
    ]);
  });

  it("starts a new text block on a new turn, and shows notices and errors as lines", () => {
    const blocks = fold([
      { kind: "output", text: "one" },
      { kind: "notice", text: "retrying" },
      { kind: "output", text: "two" },
      { kind: "turn", step: 2 },
      { kind: "output", text: "three" },
      { kind: "error", message: "boom" },
    ]);
    expect(blocks.map((b) => b.kind)).toEqual(["text", "notice", "text", "text", "error"]);
  });

  it("skips an event whose seq it already folded, so replay and live can overlap", () => {
    const events = [
      { kind: "output" as const, text: "a", seq: 1 },
      { kind: "output" as const, text: "b", seq: 2 },
    ];
    expect(fold([...events, events[1] as RunEvent & { seq: number }])).toEqual([
      { kind: "text", text: "ab" },
    ]);
  });

  it("folds a slow watcher's events with the replay that fills its gap: no event lost, no stale notice", async () => {
    const bus = createBus({ maxEvents: 2, trimSlack: 1 });
    const watcher = bus.watch("r");
    for (let i = 1; i <= 6; i++) bus.emit("r", { kind: "output", text: `t${i} ` });
    bus.emit("r", { kind: "done" });
    const live = [];
    for await (const event of watcher) live.push(event);
    const gap = live.find((event) => event.kind === "notice");
    expect(gap).toMatchObject({ dropped: 4, seq: 4 });
    // The live events alone still say that some were skipped.
    expect(fold(live).map((block) => block.kind)).toEqual(["notice", "text"]);
    const replay = bus.history("r");
    const whole = [{ kind: "text", text: "t1 t2 t3 t4 t5 t6 " }];
    // Sorted by seq (the live copy first on a tie), live first then the replay, or the other way.
    expect(fold([...live, ...replay].sort((a, b) => a.seq - b.seq))).toEqual(whole);
    expect(fold([...replay, ...live])).toEqual(whole);
    expect(fold([...live, ...replay])).toEqual(whole);
  });

  it("folds a watcher's events given before the replay in seq order: the text reads as the replay's", async () => {
    const bus = createBus({ maxEvents: 5, trimSlack: 1 });
    const watcher = bus.watch("r");
    bus.emit("r", { kind: "turn", step: 1 });
    const live: (RunEvent & { seq: number })[] = [];
    const first = await watcher.next();
    if (!first.done) live.push(first.value);
    for (let i = 0; i < 40; i++) bus.emit("r", { kind: "output", text: `${i},` });
    bus.emit("r", { kind: "done" });
    for await (const event of watcher) live.push(event);
    expect(live.some((event) => event.kind === "notice" && "dropped" in event)).toBe(true);
    const replay = bus.history("r");
    const text = Array.from({ length: 40 }, (_, i) => `${i},`).join("");
    expect(fold(replay)).toEqual([{ kind: "text", text }]);
    expect(fold([...live, ...replay])).toEqual(fold(replay));
    expect(fold([...replay, ...live])).toEqual(fold(replay));
  });

  it("keeps an event without a seq just after the event before it, and a gap notice just before the event behind it", () => {
    const at = (seq: number) => ({ kind: "output" as const, text: `t${seq}`, seq });
    const gap = { kind: "notice" as const, text: "skipped", dropped: 2, seq: 4 };
    expect(fold([at(5), { kind: "notice", text: "late" }, at(1), gap, at(2)])).toEqual([
      { kind: "text", text: "t1t2" },
      { kind: "notice", text: "skipped" },
      { kind: "text", text: "t5" },
      { kind: "notice", text: "late" },
    ]);
    // Leading events without a seq stay first.
    expect(fold([{ kind: "notice", text: "hello" }, at(2), at(1)])).toEqual([
      { kind: "notice", text: "hello" },
      { kind: "text", text: "t1t2" },
    ]);
  });

  it("folds any overlap of watched events and the replay as the replay alone", () => {
    const event = fc.oneof(
      fc.record({ kind: fc.constant("output" as const), text: fc.string({ minLength: 1, maxLength: 3 }) }),
      fc.record({ kind: fc.constant("thinking" as const), text: fc.string({ minLength: 1, maxLength: 3 }) }),
      fc.record({ kind: fc.constant("turn" as const), step: fc.nat() }),
      fc.record({
        kind: fc.constant("tool-call" as const),
        id: fc.constantFrom("a", "b"),
        name: fc.constant("f"),
        args: fc.string(),
      }),
      fc.record({
        kind: fc.constant("tool-result" as const),
        id: fc.constantFrom("a", "b"),
        name: fc.constant("f"),
        ok: fc.boolean(),
        content: fc.string(),
      }),
    );
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 30 }),
        fc.array(fc.boolean(), { maxLength: 30 }),
        fc.boolean(),
        fc.boolean(),
        (events, keep, shuffle, replayFirst) => {
          const replay = events.map((e, i) => ({ ...e, seq: i + 1 }) as RunEvent & { seq: number });
          const watched = replay.filter((_, i) => keep[i] === true);
          if (shuffle) watched.reverse();
          const both = replayFirst ? [...replay, ...watched] : [...watched, ...replay];
          expect(fold(both)).toEqual(fold(replay));
        },
      ),
    );
  });

  it("draws a gap notice once, and only while some of its gap is missing", () => {
    const gap = { kind: "notice" as const, text: "skipped", dropped: 2, seq: 3 };
    const at = (seq: number) => ({ kind: "output" as const, text: `t${seq}`, seq });
    expect(fold([at(1), gap, gap, at(4)])).toEqual([
      { kind: "text", text: "t1" },
      { kind: "notice", text: "skipped" },
      { kind: "text", text: "t4" },
    ]);
    // Half the gap filled: the notice stays; all of it: the notice goes.
    expect(fold([at(1), at(2), gap, at(4)]).map((block) => block.kind)).toEqual(["text", "notice", "text"]);
    expect(fold([at(1), at(2), gap, at(3), at(4)])).toEqual([{ kind: "text", text: "t1t2t3t4" }]);
    // A notice without `dropped` is an ordinary event: its seq is folded once like any other.
    expect(fold([{ kind: "notice", text: "retrying", seq: 2 }, at(2)])).toEqual([
      { kind: "notice", text: "retrying" },
    ]);
  });

  it("reads back the same text however the stream was cut into deltas", () => {
    fc.assert(
      fc.property(fc.string(), fc.array(fc.nat(), { maxLength: 20 }), (text, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const pieces: string[] = [];
        let at = 0;
        for (const point of [...points, text.length]) {
          pieces.push(text.slice(at, point));
          at = point;
        }
        const blocks = fold(pieces.map((piece) => ({ kind: "output", text: piece })));
        expect(blocks).toEqual(text === "" ? [] : [{ kind: "text", text }]);
      }),
    );
  });

  it("fills each result into the latest card of its id still waiting, whatever the order and reuse of ids", () => {
    // The rule said plainly, one card at a time: what fold must agree with.
    const expected = (events: RunEvent[]) => {
      const cards: { id: string; name: string; args: string; result?: { ok: boolean; content: string } }[] =
        [];
      for (const event of events) {
        if (event.kind === "tool-call") cards.push({ id: event.id, name: event.name, args: event.args });
        else if (event.kind === "tool-result") {
          const result = { ok: event.ok, content: event.content };
          const card = cards.findLast((c) => c.id === event.id && !c.result);
          if (card) card.result = result;
          else cards.push({ id: event.id, name: event.name, args: "", result });
        }
      }
      return cards.map((card) => ({ kind: "tool", ...card }));
    };
    const id = fc.constantFrom("a", "b", "c", "toString", "__proto__");
    const event = fc.oneof(
      fc.record({ kind: fc.constant("tool-call" as const), id, name: fc.constant("f"), args: fc.string() }),
      fc.record({
        kind: fc.constant("tool-result" as const),
        id,
        name: fc.constant("f"),
        ok: fc.boolean(),
        content: fc.string(),
      }),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        expect(fold(events)).toEqual(expected(events));
      }),
    );
  });

  it.each([
    ["null", null, "null"],
    ["undefined", undefined, "undefined"],
    ["one event instead of a list", { kind: "output", text: "hi", seq: 1 }, "an object"],
    ["a number", 3, "number 3"],
  ])(
    "refuses events that are not a list (%s) with an EventsError naming fold and what it was given",
    (_, events, given) => {
      let thrown: unknown;
      try {
        fold(events as never);
      } catch (error) {
        thrown = error;
      }
      expect(EventsError.isInstance(thrown)).toBe(true);
      expect((thrown as EventsError).code).toBe("invalid-argument");
      expect((thrown as EventsError).message).toMatch(/^fold needs its events as a list/);
      expect((thrown as EventsError).message).toContain(`and was given ${given}. `);
    },
  );
});
