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

function readable<T>(event: T): T | undefined {
  if (typeof event !== "object" || event === null) return undefined;
  try {
    return { ...event };
  } catch {
    return undefined;
  }
}

/**
 * Collapses a run's events into blocks for display: runs of `output` into one text block and of
 * `thinking` into one reasoning block (a new turn, or anything drawn between, starts a new one),
 * each `tool-call` into a card that its `tool-result` (same id, latest unanswered card) fills in,
 * and notices and errors as lines. `usage`, `turn` and `done` draw nothing. An event whose `seq`
 * was already folded is skipped, so replayed and live events can be passed together. Pure: reads
 * only its argument, never throws: an unknown kind is ignored, and an event that cannot be read
 * (a throwing getter, a revoked Proxy) is not drawn.
 */
export function fold(events: Iterable<RunEvent & { seq?: number }>): DisplayBlock[] {
  const blocks: DisplayBlock[] = [];
  const seen = new Set<number>();
  // The cards still waiting for a result, by id, latest last: a result finds its card at once
  // rather than by a walk back over every block (quadratic in a run of unmatched results).
  const open = new Map<string, ToolBlock[]>();
  let joinable = false;
  for (const raw of events) {
    // A copy, so a getter or Proxy is read once here; one that throws is an event not drawn.
    const event = readable(raw);
    if (event === undefined) continue;
    if (typeof event?.seq === "number") {
      if (seen.has(event.seq)) continue;
      seen.add(event.seq);
    }
    const last = blocks[blocks.length - 1];
    switch (event?.kind) {
      case "output":
      case "thinking": {
        if (typeof event.text !== "string" || event.text === "") break;
        const kind = event.kind === "output" ? "text" : "reasoning";
        if (joinable && last?.kind === kind) last.text += event.text;
        else blocks.push({ kind, text: event.text });
        joinable = true;
        break;
      }
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
        break;
      }
      case "tool-result": {
        const result = {
          ok: event.ok !== false,
          content: text(event.content ?? ""),
          ...(typeof event.ms === "number" ? { ms: event.ms } : {}),
        };
        const card = open.get(text(event.id))?.pop();
        if (card) card.result = result;
        else blocks.push({ kind: "tool", id: text(event.id), name: text(event.name), args: "", result });
        joinable = false;
        break;
      }
      case "notice":
        blocks.push({ kind: "notice", text: text(event.text) });
        joinable = false;
        break;
      case "error":
        blocks.push({ kind: "error", message: text(event.message) });
        joinable = false;
        break;
      case "turn":
        joinable = false;
        break;
      default:
        break;
    }
  }
  return blocks;
}
