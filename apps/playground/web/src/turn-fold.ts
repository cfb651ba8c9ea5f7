// One turn's events folded as they arrive: each frame folds only the events new since the last, so a
// turn streamed in many small chunks costs work linear in its events, not their square.
import { type DisplayBlock, fold, type SequencedEvent } from "@loopwright/events";

/**
 * A turn's events and what `fold` makes of them, kept between frames. `push` adds events (in the
 * order the page received them); `blocks` returns exactly what `fold` over every event pushed so far
 * returns. While the turn's events come in strictly rising `seq` order with no retract and no
 * watcher's gap notice (a live stream), an `output` or `thinking` delta is folded on its own: it
 * joins the last block or starts one, as `fold` would, and `usage` and `done` draw nothing. Any other
 * event (a tool card or result, a notice, an error, a retract, an event out of order or without a
 * seq) folds the whole turn again once, from the start, which is always correct; after a retract, a
 * gap notice or an event out of order every later frame does so, as before.
 */
export class TurnFold {
  private readonly events: SequencedEvent[] = [];
  private folded: DisplayBlock[] = [];
  /** Events pushed but not yet folded: from this index on. */
  private next = 0;
  /** Whether every event so far came in rising seq order with no retract or gap notice. */
  private simple = true;
  private lastSeq = Number.NEGATIVE_INFINITY;
  /** `fold`'s own `joinable`: whether the next delta of the last block's kind joins it. */
  private joinable = false;

  push(event: SequencedEvent): void {
    this.events.push(event);
  }

  blocks(): DisplayBlock[] {
    let whole = false;
    for (; this.next < this.events.length; this.next++) {
      const event = this.events[this.next]!;
      if (whole) {
        this.track(event);
        continue;
      }
      const wasSimple = this.simple;
      const joinable = this.joinable;
      this.track(event);
      if (!(wasSimple && this.simple)) {
        whole = true;
        continue;
      }
      if (event.kind === "usage" || event.kind === "done") continue;
      if ((event.kind === "output" || event.kind === "thinking") && typeof event.text === "string") {
        if (event.text === "") continue;
        const kind = event.kind === "output" ? "text" : "reasoning";
        const last = this.folded.at(-1);
        if (joinable && last?.kind === kind) last.text += event.text;
        else this.folded.push({ kind, text: event.text });
        continue;
      }
      whole = true;
    }
    if (whole) this.folded = fold(this.events);
    return this.folded;
  }

  /** Follows `simple`, `lastSeq` and `joinable` over one more event, as `fold` would read it. */
  private track(event: SequencedEvent): void {
    const seq = event.seq;
    if (
      typeof seq !== "number" ||
      !(seq > this.lastSeq) ||
      event.kind === "retract" ||
      event.kind === "thinking-retract" ||
      (event.kind === "notice" && "dropped" in event)
    ) {
      this.simple = false;
    } else {
      this.lastSeq = seq;
    }
    switch (event.kind) {
      case "output":
      case "thinking":
        if (typeof event.text === "string" && event.text !== "") this.joinable = true;
        break;
      case "tool-call":
      case "tool-result":
      case "notice":
      case "error":
      case "turn":
        this.joinable = false;
        break;
      default:
        break;
    }
  }
}
