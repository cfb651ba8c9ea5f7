import { checkEventList } from "./errors.js";
import type { RunEvent } from "./types.js";

/** Answer text: consecutive `output` deltas of one turn, joined. */
export interface TextBlock {
  kind: "text";
  text: string;
}

/** Reasoning: consecutive `thinking` deltas of one turn, joined. */
export interface ReasoningBlock {
  kind: "reasoning";
  text: string;
}

/** A tool call drawn as a card, filled in with its result once that arrives. */
export interface ToolBlock {
  kind: "tool";
  id: string;
  name: string;
  /** The arguments as the `tool-call` event carried them (empty where only a result was seen). */
  args: string;
  /** Absent while the call is still running. */
  result?: { ok: boolean; content: string; ms?: number };
}

/** A notice, as its own line. */
export interface NoticeBlock {
  kind: "notice";
  text: string;
}

/** A failure, as its own line. */
export interface ErrorBlock {
  kind: "error";
  message: string;
}

/** One thing to draw: what `fold` turns a run's events into. */
export type DisplayBlock = TextBlock | ReasoningBlock | ToolBlock | NoticeBlock | ErrorBlock;

/** `String(value)`, or a stand-in where that throws (a symbol is fine; a null-prototype object is not). */
function text(value: unknown): string {
  try {
    return typeof value === "symbol" ? value.toString() : String(value);
  } catch {
    return "(unreadable)";
  }
}

/**
 * `event`'s own fields copied once into an object with no prototype: a field it leaves out reads as
 * `undefined`, never as one a polluted `Object.prototype` holds (`ms`, which every tool card showed;
 * `dropped`, which made every notice a gap notice). `undefined` where reading it throws.
 */
function readable<T>(event: T): T | undefined {
  if (typeof event !== "object" || event === null) return undefined;
  try {
    return Object.assign(Object.create(null) as T & object, event);
  } catch {
    return undefined;
  }
}

type Folded = RunEvent & { seq?: number };

/**
 * The notice a watcher inserts where it skipped events: a `notice` with a `dropped` count and a
 * `seq`. A bus leaves `dropped` out of every notice emitted into it (`withSeq`), so one read from a
 * bus — or from its JSON — is a watcher's; one without a `seq` never came from a watcher (a host's
 * own list of its events, as `onEvent` handed them) and is a plain notice whatever it carries.
 */
function isGapNotice(event: Folded): event is Folded & { kind: "notice"; dropped: number; seq: number } {
  return (
    event.kind === "notice" &&
    typeof (event as { dropped?: unknown }).dropped === "number" &&
    typeof event.seq === "number"
  );
}

/**
 * Whether every event a gap notice stands for is among `list`: the notice at seq `s` with
 * `dropped` n stands for seqs s-n+1 through s. Counted by binary search over the real events'
 * seqs (whole numbers), sorted once and only when there is a gap notice, so many notices stay
 * n log n.
 */
function gapsFilled(list: readonly Folded[]): (notice: Folded & { dropped: number }) => boolean {
  if (!list.some(isGapNotice)) return () => false;
  const seqs = [
    ...new Set(
      list.flatMap((event) =>
        !isGapNotice(event) && Number.isSafeInteger(event.seq) ? [event.seq as number] : [],
      ),
    ),
  ].sort((a, b) => a - b);
  /** How many of `seqs` are below `value`. */
  const below = (value: number) => {
    let lo = 0;
    let hi = seqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((seqs[mid] as number) < value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return ({ seq, dropped }) => {
    if (
      typeof seq !== "number" ||
      !Number.isSafeInteger(seq) ||
      !Number.isSafeInteger(dropped) ||
      dropped < 1
    )
      return false;
    // Distinct whole numbers only are in `seqs`, so as many of them in the range as it is wide is all of it.
    return below(seq + 1) - below(seq - dropped + 1) === dropped;
  };
}

/**
 * Puts `list` in `seq` order, in place and stably, so a slow watcher's events and the replay that
 * fills its gap fold in the run's order whichever was passed first. A real event sorts at its seq;
 * a gap notice (seq = the last event it stands for) just after that seq, so just before the event
 * behind it; an event without a usable seq just after the event before it (at the very start, it
 * stays first). Linear when the list is already in order: the sort runs only if a key goes down.
 */
function inSeqOrder(list: Folded[]): void {
  // Two numbers per event: its seq (or the one before it) and 0, or 1 for a gap notice and for an
  // event without a seq, which then follows whatever it came after.
  const keys: [number, number][] = [];
  let previous: [number, number] = [Number.NEGATIVE_INFINITY, 0];
  let sorted = true;
  for (const event of list) {
    const seq = event.seq;
    const key: [number, number] =
      typeof seq === "number" && !Number.isNaN(seq)
        ? [seq, isGapNotice(event) ? 1 : 0]
        : [previous[0], Math.max(previous[1], 1)];
    if (key[0] < previous[0] || (key[0] === previous[0] && key[1] < previous[1])) sorted = false;
    keys.push(key);
    previous = key;
  }
  if (sorted) return;
  const order = list.map((_, index) => index);
  // Array#sort is stable: on a tie, the copy passed first stays first (and is the one folded).
  order.sort((a, b) => {
    const [seqA, rankA] = keys[a] as [number, number];
    const [seqB, rankB] = keys[b] as [number, number];
    return seqA !== seqB ? (seqA < seqB ? -1 : 1) : rankA - rankB;
  });
  const copy = list.slice();
  order.forEach((from, to) => {
    list[to] = copy[from] as Folded;
  });
}

/**
 * Takes `chars` characters back from the end of the current turn's answer (a `retract` event, `of`
 * `"text"`) or of its reasoning (a `thinking-retract`, `of` `"reasoning"`): from the last block of
 * that kind, then, while characters are left, from the blocks of that kind before it — past the
 * other kind and ordinary notices (a continuation's), never below the turn's floor (the first block
 * after the turn's start, its last tool card or a gap notice). `reach` holds the indices of the
 * blocks of that kind above the floor, in order, so a retract visits only blocks it may take from:
 * a walk back over every block between (a turn of many notices, or of answer and reasoning
 * alternating, retracted many times) was quadratic. A block left with nothing becomes a hole in
 * `blocks` (filled in at the end), and holes at the end are dropped at once, so the last entry is
 * always the last block drawn. A count that is not a positive whole number takes nothing.
 */
function retract(
  blocks: (DisplayBlock | undefined)[],
  chars: unknown,
  reach: number[],
  pieces: Map<DisplayBlock, Pieces>,
): void {
  if (typeof chars !== "number" || !Number.isSafeInteger(chars) || chars < 1) return;
  let left = chars;
  while (left > 0 && reach.length > 0) {
    const index = reach[reach.length - 1] as number;
    const block = blocks[index] as TextBlock | ReasoningBlock;
    const own = pieces.get(block) as Pieces;
    const taken = Math.min(left, own.length);
    left -= taken;
    if (taken === own.length) {
      blocks[index] = undefined;
      pieces.delete(block);
      reach.pop();
    } else {
      own.length -= taken;
      // From the last pieces back: only the piece the cut falls in is sliced.
      let cut = taken;
      while (cut > 0) {
        const piece = own.parts[own.parts.length - 1] as string;
        if (piece.length <= cut) {
          own.parts.pop();
          cut -= piece.length;
        } else {
          own.parts[own.parts.length - 1] = piece.slice(0, piece.length - cut);
          cut = 0;
        }
      }
    }
  }
  while (blocks.length > 0 && blocks[blocks.length - 1] === undefined) blocks.pop();
}

/**
 * A text or reasoning block's deltas while folding, joined once at the end. Joined as they came
 * (`text += delta`, then a retract's `slice`), each retract copied the whole block: V8 flattens a
 * string built by `+=` when it is sliced, so a long answer retracted many times was quadratic
 * (100 000 deltas and retracts took 0.5 s, 200 000 took 22 s).
 */
interface Pieces {
  parts: string[];
  length: number;
}

/**
 * Collapses a run's events into blocks for display: runs of `output` into one text block and of
 * `thinking` into one reasoning block (a new turn, or anything drawn between, starts a new one; a
 * delta never runs on into a block from before the turn's start, even after a retract emptied the turn),
 * each `tool-call` into a card that its `tool-result` (same id, latest unanswered card) fills in,
 * and notices and errors as lines. A `retract` takes its `chars` back from the end of the turn's
 * answer: from the last text block, then from earlier ones of the same turn (across its reasoning
 * and a continuation's notice), dropping a block it empties — never past the turn's start, a tool
 * card or a gap notice (where the text it means may not have been drawn: it then takes back only
 * what was drawn after the gap). A `thinking-retract` takes its `chars` back from the turn's
 * reasoning blocks the same way, never from its answer. `usage`, `turn` and `done` draw nothing. Events are folded in
 * `seq` order (stably; one without a seq, or with `NaN`, keeps its place after the event before it), and an event
 * whose `seq` was already folded is skipped, so replayed and live events can be passed together,
 * in either order. A watcher's
 * gap notice (a `notice` with `dropped` and a `seq`, in memory or parsed from JSON) is the exception:
 * its `seq` is unique only within that watcher, so it never hides the real event of that seq; it is
 * drawn once, and not at all when every event it stands for is among those passed (a replay filled
 * the gap). A host's own notice is never one: a bus leaves `dropped` out of the notices emitted into
 * it, and one without a `seq` (not read from a bus) is a plain notice whatever it carries. Pure: reads
 * only its argument, and never throws over what the events hold: an unknown kind is ignored, and an
 * event that cannot be read (a throwing getter, a revoked Proxy) is not drawn. `events` itself that
 * is not iterable (`null`, one event rather than a list) is an `EventsError` (`invalid-argument`).
 * Linear in the events when they come in `seq` order (n log n otherwise), however many retracts
 * there are: a retract visits only the blocks it may take from.
 */
export function fold(events: Iterable<RunEvent & { seq?: number }>): DisplayBlock[] {
  checkEventList("fold", events);
  // Holes (`undefined`) are blocks a retract emptied, left out at the end; never the last entry.
  const blocks: (DisplayBlock | undefined)[] = [];
  // The text and reasoning blocks' deltas, joined into their `text` at the end.
  const pieces = new Map<DisplayBlock, Pieces>();
  const seen = new Set<number>();
  // The cards still waiting for a result, by id, latest last: a result finds its card at once
  // rather than by a walk back over every block (quadratic in a run of unmatched results).
  const open = new Map<string, ToolBlock[]>();
  let joinable = false;
  // The text and reasoning blocks a retract may touch, by index: those after the turn's start, its
  // last tool card or a gap notice (the floor), which empties both.
  let texts: number[] = [];
  let reasonings: number[] = [];
  // Where the floor is: no delta joins a block below it, even when a retract emptied every block
  // above it (a turn's only answer taken back must not let the next delta run on the turn before).
  let floorAt = 0;
  const raiseFloor = (): void => {
    texts = [];
    reasonings = [];
    floorAt = blocks.length;
  };
  // Each a copy, so a getter or Proxy is read once here; one that throws is an event not drawn.
  const list: (RunEvent & { seq?: number })[] = [];
  for (const raw of events) {
    const event = readable(raw);
    if (event !== undefined) list.push(event);
  }
  inSeqOrder(list);
  const filled = gapsFilled(list);
  const gapsDrawn = new Set<string>();
  for (const event of list) {
    if (isGapNotice(event)) {
      // A gap notice's seq is one a real event of the run carries too (it is only unique within
      // one watcher), so it never hides that event; it is drawn once, and not at all once every
      // event it stands for is among those folded (a replay filled the gap).
      const key = `${String(event.seq)}/${event.dropped}`;
      if (gapsDrawn.has(key) || filled(event)) continue;
      gapsDrawn.add(key);
    } else if (typeof event?.seq === "number" && !Number.isNaN(event.seq)) {
      // NaN is no seq (inSeqOrder reads it so): each such event is its own, never a copy of another.
      if (seen.has(event.seq)) continue;
      seen.add(event.seq);
    }
    const last = blocks[blocks.length - 1];
    switch (event?.kind) {
      case "output":
      case "thinking": {
        if (typeof event.text !== "string" || event.text === "") break;
        const kind = event.kind === "output" ? "text" : "reasoning";
        const own =
          joinable && last?.kind === kind && blocks.length - 1 >= floorAt ? pieces.get(last) : undefined;
        if (own) {
          own.parts.push(event.text);
          own.length += event.text.length;
        } else {
          (kind === "text" ? texts : reasonings).push(blocks.length);
          const block: TextBlock | ReasoningBlock = { kind, text: "" };
          pieces.set(block, { parts: [event.text], length: event.text.length });
          blocks.push(block);
        }
        joinable = true;
        break;
      }
      case "retract":
        retract(blocks, event.chars, texts, pieces);
        break;
      case "thinking-retract":
        retract(blocks, event.chars, reasonings, pieces);
        break;
      case "tool-call": {
        const card: ToolBlock = {
          kind: "tool",
          id: text(event.id),
          name: text(event.name),
          args: text(event.args ?? ""),
        };
        blocks.push(card);
        const waiting = open.get(card.id);
        if (waiting) waiting.push(card);
        else open.set(card.id, [card]);
        joinable = false;
        raiseFloor();
        break;
      }
      case "tool-result": {
        const result = {
          ok: event.ok !== false,
          content: text(event.content ?? ""),
          // A time it can draw: not NaN, negative or Infinity (a card reading "NaN ms").
          ...(typeof event.ms === "number" && event.ms >= 0 && Number.isFinite(event.ms)
            ? { ms: event.ms }
            : {}),
        };
        const card = open.get(text(event.id))?.pop();
        if (card) card.result = result;
        else blocks.push({ kind: "tool", id: text(event.id), name: text(event.name), args: "", result });
        joinable = false;
        raiseFloor();
        break;
      }
      case "notice":
        blocks.push({ kind: "notice", text: text(event.text) });
        joinable = false;
        // Events of this turn may be among those skipped: a retract does not reach above the gap.
        if (isGapNotice(event)) raiseFloor();
        break;
      case "error":
        blocks.push({ kind: "error", message: text(event.message) });
        joinable = false;
        break;
      case "turn":
        joinable = false;
        raiseFloor();
        break;
      default:
        break;
    }
  }
  for (const [block, own] of pieces) (block as TextBlock | ReasoningBlock).text = own.parts.join("");
  return blocks.filter((block): block is DisplayBlock => block !== undefined);
}
