import type { ToolCallDeltaLike } from "./chunk.js";
import type { ToolCall } from "./turn.js";

/**
 * Progress of one tool call while it streams in, for a UI that draws the call as it is written.
 *
 * `index` is the call's position in the turn's `toolCalls` (0 for the first call the model
 * started), `id` and `name` what has arrived so far (possibly empty), `argumentsDelta` the piece
 * of arguments this delta added (possibly empty), and `arguments` all of them so far.
 */
export interface ToolCallProgress {
  index: number;
  id: string;
  name: string;
  argumentsDelta: string;
  arguments: string;
}

interface Slot {
  position: number;
  id: string;
  name: string;
  arguments: string;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/**
 * Reassembles tool calls from streamed pieces, the way real servers send them.
 *
 * Pieces are matched by `index`; a piece with a new `id` under an index already taken starts a
 * new call (servers that number every call 0). Without an `index`, a piece whose `id` was seen
 * continues that call, a piece with a new `id` starts one, and a piece with no `id` continues the
 * latest call (servers that send `index` once, or never). A name is appended piece by piece, but a
 * piece repeating the whole name so far is not appended again (servers that repeat it on every
 * delta). Arguments are concatenated as sent, so a split inside an escape or a character is
 * whole again at the end.
 */
export class ToolCallAssembler {
  private readonly slots: Slot[] = [];
  private readonly byIndex = new Map<number, Slot>();

  /** Adds one piece; returns the call's progress, or `undefined` for a piece that carried nothing. */
  push(piece: ToolCallDeltaLike): ToolCallProgress | undefined {
    if (!piece || typeof piece !== "object") return undefined;
    const id = text(piece.id);
    const fn = piece.function && typeof piece.function === "object" ? piece.function : undefined;
    const name = text(fn?.name);
    const args = text(fn?.arguments);
    if (!id && !name && !args) return undefined;
    const index = typeof piece.index === "number" ? piece.index : undefined;
    let slot: Slot | undefined;
    if (index !== undefined) {
      slot = this.byIndex.get(index);
      if (slot && id && slot.id && id !== slot.id) slot = undefined;
      if (!slot) {
        slot = this.open();
        this.byIndex.set(index, slot);
      }
    } else if (id) {
      for (let i = this.slots.length - 1; i >= 0; i--) {
        if (this.slots[i]?.id === id) {
          slot = this.slots[i];
          break;
        }
      }
      slot ??= this.open();
    } else {
      slot = this.slots[this.slots.length - 1] ?? this.open();
    }
    if (id && !slot.id) slot.id = id;
    if (name && name !== slot.name) slot.name += name;
    if (args) slot.arguments += args;
    return {
      index: slot.position,
      id: slot.id,
      name: slot.name,
      argumentsDelta: args,
      arguments: slot.arguments,
    };
  }

  /** Whether any piece of a call has arrived. */
  get started(): boolean {
    return this.slots.length > 0;
  }

  /** The calls so far, in the order the model started them, ready for an assistant message. */
  calls(): ToolCall[] {
    const out: ToolCall[] = [];
    for (const slot of this.slots) {
      if (!slot.name && !slot.arguments) continue;
      out.push({
        id: slot.id || `call_${slot.position}`,
        type: "function",
        function: { name: slot.name, arguments: slot.arguments },
      });
    }
    return out;
  }

  private open(): Slot {
    const slot: Slot = { position: this.slots.length, id: "", name: "", arguments: "" };
    this.slots.push(slot);
    return slot;
  }
}
