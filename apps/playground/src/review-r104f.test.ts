import { fold, type SequencedEvent } from "@loopwright/events";
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { TurnFold } from "../web/src/turn-fold.js";

/** A turn streamed in `n` small answer chunks, as the page receives it: in frames of ten events. */
function streamed(n: number): { frames: SequencedEvent[][]; all: SequencedEvent[] } {
  const all: SequencedEvent[] = [{ kind: "turn", step: 1, seq: 0 } as SequencedEvent];
  for (let i = 1; i <= n; i++)
    all.push({ kind: "output", text: `chunk${i % 10};`, seq: i } as SequencedEvent);
  const frames: SequencedEvent[][] = [];
  for (let i = 0; i < all.length; i += 10) frames.push(all.slice(i, i + 10));
  return { frames, all };
}

function draw(frames: SequencedEvent[][]): string {
  const turn = new TurnFold();
  let blocks = turn.blocks();
  for (const frame of frames) {
    for (const event of frame) turn.push(event);
    blocks = turn.blocks();
  }
  return JSON.stringify(blocks);
}

describe("the playground page drawing a turn of many small chunks", () => {
  it("does work over the turn that grows with its chunks, not with their square, and draws what fold draws", async () => {
    const small = streamed(2_000);
    const large = streamed(16_000);
    expect(draw(large.frames)).toBe(JSON.stringify(fold(large.all)));
    const few = await countWork(() => draw(small.frames));
    const many = await countWork(() => draw(large.frames));
    // Eight times the chunks: about eight times the work folded once per frame's new events; the
    // whole turn folded again every frame would be about sixty-four times.
    expect(many.total / few.total).toBeLessThan(16);
  });

  it("draws what fold draws when tool cards, a retract and an event out of order come mid-stream", () => {
    const events = [
      { kind: "turn", step: 1, seq: 0 },
      { kind: "thinking", text: "hm", seq: 1 },
      { kind: "output", text: "Hel", seq: 2 },
      { kind: "output", text: "lo", seq: 3 },
      { kind: "output", text: "", seq: 4 },
      { kind: "tool-call", id: "a", name: "ls", args: "{}", seq: 5 },
      { kind: "output", text: "more", seq: 6 },
      { kind: "tool-result", id: "a", ok: true, content: "x", seq: 7 },
      { kind: "output", text: "after", seq: 8 },
      { kind: "usage", seq: 9 },
      { kind: "retract", chars: 2, seq: 10 },
      { kind: "output", text: "late", seq: 12 },
      { kind: "output", text: "early", seq: 11 },
      { kind: "output", text: "end", seq: 13 },
    ] as unknown as SequencedEvent[];
    for (let size = 1; size <= 4; size++) {
      const turn = new TurnFold();
      for (let i = 0; i < events.length; i += size) {
        for (const event of events.slice(i, i + size)) turn.push(event);
        expect(JSON.stringify(turn.blocks())).toBe(JSON.stringify(fold(events.slice(0, i + size))));
      }
    }
  });
});
