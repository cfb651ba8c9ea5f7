import type { ToolCallDeltaLike } from "./chunk.js";
import { jsonText } from "./errors.js";
import { grown } from "./grown-text.js";
import type { ToolCall } from "./turn.js";

/**
 * Progress of one tool call while it streams in, for a UI that draws the call as it is written.
 *
 * `index` is the call's position in the turn's `toolCalls` (0 for the first call the model
 * started), `id` and `name` what has arrived so far (possibly empty), `argumentsDelta` the piece
 * of arguments this delta added (possibly empty), and `arguments` all of them so far. `streamTurn`
 * never tells half a character: a first half of a surrogate pair ending a piece comes with the next.
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
  /** Pieces appended to `arguments` since it was last one flat string (see `grown`). */
  pieces: number;
  /** The server resends the whole arguments so far on every piece, rather than the new part. */
  cumulative: boolean;
  /**
   * Set while the pieces have looked resent cumulatively without proving it: the incremental reading
   * kept beside the cumulative one, so it can still win if a later piece, or the end, shows the
   * stream was incremental after all (a nested object repeating its parent's first key can look
   * cumulative for several pieces).
   */
  alt: Alternative | undefined;
  /** What the arguments' text can still be, kept up to date piece by piece (see `JsonShape`). */
  shape: JsonShape;
  /** A piece named this call's tool again, alone, after its arguments were whole JSON. */
  renamed: boolean;
}

/** The incremental reading of pieces that look cumulative: `before` + the slot's arguments, and its shape. */
interface Alternative {
  before: string;
  shape: JsonShape;
}

const WHITESPACE = /\s/;

/**
 * Whether a growing text can be one whole JSON object or array, tracked a piece at a time: the
 * brackets and strings it has opened, and where its first value closed. Only a text shaped like a
 * whole value is handed to `JSON.parse`, once per place its value closes, so asking after every
 * piece costs the piece, not the whole text (a server sending thousands of pieces each shaped
 * like a whole object after an unfinished one would otherwise be parsed over and over).
 */
class JsonShape {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private started = false;
  /** The text cannot become one whole value by growing: wrong first character, or more after it. */
  private broken = false;
  /** The length at which the top-level value closed, or -1. */
  private closedAt = -1;
  private length = 0;
  private parsed: { at: number; value: unknown } | undefined;

  /** A tracker in the same state, to read on separately. */
  copy(): JsonShape {
    const other = new JsonShape();
    other.depth = this.depth;
    other.inString = this.inString;
    other.escaped = this.escaped;
    other.started = this.started;
    other.broken = this.broken;
    other.closedAt = this.closedAt;
    other.length = this.length;
    other.parsed = this.parsed;
    return other;
  }

  /** Reads `piece`, the text added at the end. */
  add(piece: string): void {
    for (let i = 0; i < piece.length && !this.broken; i++) {
      const c = piece[i] as string;
      if (this.closedAt >= 0) {
        if (!WHITESPACE.test(c)) this.broken = true;
        continue;
      }
      if (!this.started) {
        if (WHITESPACE.test(c)) continue;
        this.started = true;
        if (c !== "{" && c !== "[") this.broken = true;
        else this.depth = 1;
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === "\\") this.escaped = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') this.inString = true;
      else if (c === "{" || c === "[") this.depth++;
      else if (c === "}" || c === "]") {
        this.depth--;
        if (this.depth === 0) this.closedAt = this.length + i + 1;
      }
    }
    this.length += piece.length;
  }

  /** The parsed value when `text` (everything added so far) is one whole JSON value, else `undefined`. */
  whole(text: string): unknown {
    if (this.broken || this.closedAt < 0) return undefined;
    if (this.parsed?.at !== this.closedAt) {
      this.parsed = { at: this.closedAt, value: completeJson(text.slice(0, this.closedAt)) };
    }
    return this.parsed.value;
  }
}

/**
 * A piece's (or a choice's) `index`: a number, or a string of digits as some servers and relays
 * write it (`"1"`), read as that number; anything else is no index. (A string index read as none
 * sent every later call's name into the first call: `get_weather` and `get_time` became
 * `get_weatherget_time`; a choice's, every later choice's text into the first.)
 */
export function indexOf(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  return typeof value === "string" && /^\s*\d{1,9}\s*$/.test(value) ? Number(value) : undefined;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/**
 * The arguments a piece carries, as text. A server that sends them as a JSON object rather than
 * the string OpenAI specifies (older TGI, some relays) gets them serialised, whole; an object nested
 * deeper than that can write (a hostile server's) is text saying so, which no reader takes for
 * arguments, so the call is answered as unreadable rather than the read failing with a RangeError.
 */
function argumentsOf(value: unknown): { text: string; whole: boolean } {
  if (typeof value === "string") return { text: value, whole: false };
  if (value !== null && typeof value === "object") return { text: jsonText(value), whole: true };
  return { text: "", whole: false };
}

/**
 * Whether a piece's name is the whole name so far sent again (servers that repeat it on every
 * delta) rather than its next part. Only a piece that also repeats the call's id, brings arguments,
 * or comes after the arguments began is a repeat: a name is written before its arguments, so `run`
 * then `run` alone is the name `runrun` streamed in two halves.
 */
function repeatsName(slot: Slot, name: string, id: string, args: string): boolean {
  if (name !== slot.name) return false;
  return (id !== "" && id === slot.id) || args !== "" || slot.arguments !== "";
}

/** The parsed value when `text` is one complete JSON object or array, else `undefined`. */
function completeJson(text: string): unknown {
  const t = text.trim();
  const first = t[0];
  const last = t[t.length - 1];
  if (!((first === "{" && last === "}") || (first === "[" && last === "]"))) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.hasOwn(b, k)) return false;
    if (!sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** Replaces a call's arguments with `text`. */
function setArguments(slot: Slot, text: string): void {
  slot.arguments = text;
  slot.pieces = 0;
  slot.shape = new JsonShape();
  slot.shape.add(text);
}

/** Adds `piece` to the end of a call's arguments. */
function appendArguments(slot: Slot, piece: string): void {
  slot.arguments += piece;
  slot.pieces = grown(slot.arguments, slot.pieces + 1);
  slot.shape.add(piece);
}

/**
 * A call's arguments at the end. When pieces made them look resent cumulatively and nothing settled
 * it, the reading that is whole JSON wins (the cumulative one if both or neither are).
 */
function settled(slot: Slot): string {
  if (slot.alt === undefined) return slot.arguments;
  const joined = slot.alt.before + slot.arguments;
  if (completeJson(slot.arguments) === undefined && completeJson(joined) !== undefined) return joined;
  return slot.arguments;
}

/** What a call the server sent without an id is named by when the caller names no `idPrefix`. */
export const DEFAULT_ID_PREFIX = "call_";

/**
 * Reassembles tool calls from streamed pieces, the way real servers send them.
 *
 * Pieces are matched by `index`; a piece with a new `id` and a name under an index already taken
 * starts a new call (servers that number every call 0), and so does one naming another tool once
 * that call's arguments are whole JSON, or naming the same tool alone before another value opens
 * (the same servers, sending no id), and a nameless piece under a new index
 * continues the call with its `id`, or without one the latest call (also with an `id` no call has,
 * when it brings arguments and the latest call is named and not yet whole JSON). Without an `index`, a piece whose `id` was
 * seen continues that call, a piece with a new `id` and a name starts one, and any other piece
 * continues the latest call (servers that send `index` once, or never) — unless that call is
 * already whole JSON and the piece brings a name and arguments, which starts the next call. A name is appended
 * piece by piece, but a piece repeating the whole name so far together with the id, with arguments,
 * or after the arguments began is not appended again (servers that repeat it on every delta); a bare
 * piece equal to the name so far is its second half (`run` + `run` is `runrun`). Arguments are concatenated as sent, so a split inside an escape or a
 * character is whole again at the end; a piece that repeats everything so far and more (servers
 * that resend the arguments cumulatively) replaces them, and a piece that repeats a finished
 * call's arguments whole is not added twice.
 */
export class ToolCallAssembler {
  private readonly slots: Slot[] = [];
  /** What a call the server sent without an id is named by, before its position (`call_`). */
  private readonly idPrefix: string;
  private readonly byIndex = new Map<number, Slot>();
  /** The latest call with each id. */
  private readonly byId = new Map<string, Slot>();

  /**
   * `idPrefix` names the calls the server sent without ids (default `"call_"`, then the position):
   * a host's own loop gives each step its own, so step two's first call is not `call_0` again.
   */
  constructor(options: { idPrefix?: string | undefined } = {}) {
    this.idPrefix = options.idPrefix ?? DEFAULT_ID_PREFIX;
  }

  /**
   * Whether the last piece `push` told left the call's `arguments` as they were told before it
   * with its `argumentsDelta` added at the end (for a call told nothing before, as `""` with it
   * added): false where it replaced them (a server resending them whole, cumulatively, or as an
   * object). Lets a reader that tells the arguments without their last half character build that
   * text by adding to what it told, rather than cutting the whole arguments (a copy of all of them)
   * on every piece.
   */
  get appended(): boolean {
    return this.lastAppended;
  }

  private lastAppended = true;
  /** Arguments a call had that a piece replaced, so far (see {@link appended}). */
  private replacements = 0;

  /** Adds one piece; returns the call's progress, or `undefined` for a piece that carried nothing. */
  push(piece: ToolCallDeltaLike): ToolCallProgress | undefined {
    const before = this.replacements;
    const progress = this.take(piece);
    this.lastAppended = this.replacements === before;
    return progress;
  }

  private take(piece: ToolCallDeltaLike): ToolCallProgress | undefined {
    if (!piece || typeof piece !== "object") return undefined;
    const id = text(piece.id);
    const fn = piece.function && typeof piece.function === "object" ? piece.function : undefined;
    const name = text(fn?.name);
    const args = argumentsOf(fn?.arguments);
    if (!id && !name && !args.text) return undefined;
    const index = indexOf(piece.index);
    let slot: Slot | undefined;
    if (index !== undefined) {
      slot = this.byIndex.get(index);
      // A new id under a taken index is a new call only if it names its tool: some servers mint a
      // fresh id on every piece of one call, others number every call 0.
      if (slot && id && slot.id && id !== slot.id && name) slot = undefined;
      // Another tool's name after the call's arguments are whole JSON is another call (servers that
      // number every call 0 and send no id).
      if (
        slot &&
        name &&
        name !== slot.name &&
        !(id && id === slot.id) &&
        slot.shape.whole(slot.arguments) !== undefined
      ) {
        slot = undefined;
      }
      if (!slot && !name) {
        // A call is named in its first piece, so a nameless piece under a new index belongs to a
        // call already begun: the one with its id, or without an id the latest. Opening a call for
        // it would leave a nameless call, or two calls with one id, that no endpoint accepts back.
        const latest = this.slots[this.slots.length - 1];
        slot = id ? this.byId.get(id) : latest;
        // An id seen on no call, on a piece bringing arguments while the latest call is named and its
        // arguments not yet whole: that call's next piece, under an id and index the server changed
        // mid-call (fresh per piece). A piece bringing only an id still opens a call: its name comes next.
        if (
          !slot &&
          latest !== undefined &&
          args.text !== "" &&
          latest.name !== "" &&
          latest.shape.whole(latest.arguments) === undefined
        ) {
          slot = latest;
        }
        if (slot) this.byIndex.set(index, slot);
      }
      if (!slot) {
        slot = this.open();
        this.byIndex.set(index, slot);
      }
    } else {
      if (id) slot = this.byId.get(id);
      if (!slot) {
        const latest = this.slots[this.slots.length - 1];
        const startsCall =
          latest === undefined ||
          (id !== "" && name !== "") ||
          // A whole named call after a finished one (Gemini proxies with empty ids); a name alone
          // may still be the rest of the latest call's name.
          (name !== "" &&
            args.text !== "" &&
            latest.name !== "" &&
            latest.shape.whole(latest.arguments) !== undefined);
        slot = startsCall ? this.open() : latest;
      }
    }
    if (
      name !== "" &&
      name === slot.name &&
      args.text === "" &&
      !(id && id === slot.id) &&
      slot.shape.whole(slot.arguments) !== undefined
    ) {
      slot.renamed = true;
    }
    if (id && !slot.id) this.identify(slot, id);
    if (name && !repeatsName(slot, name, id, args.text)) slot.name += name;
    const added = this.addArguments(slot, args.text, args.whole);
    if (added === undefined) {
      // The piece was a further call's whole arguments sent under a finished call's index: a new call.
      slot.renamed = false;
      const next = this.open();
      next.name = name || slot.name;
      if (id && id !== slot.id) this.identify(next, id);
      this.replaceArguments(next, args.text);
      if (index !== undefined) this.byIndex.set(index, next);
      return this.progress(next, args.text);
    }
    return this.progress(slot, added);
  }

  /** Whether any piece of a call has arrived. */
  get started(): boolean {
    return this.slots.length > 0;
  }

  /**
   * The calls so far, in the order the model started them, ready for an assistant message.
   *
   * Their ids are unique, as every endpoint requires of one message's calls (and of the results
   * answering them): a call without an id gets `call_<position>` (the `idPrefix` given, then the
   * position) unless the server gave another
   * call that id, and an id the server gave two calls stays on the first and is `<id>_<position>`
   * on each later one (with `_` added until no other call holds it).
   */
  calls(): ToolCall[] {
    const out: ToolCall[] = [];
    const kept = this.slots.filter((slot) => slot.name || slot.arguments);
    // The server's own ids win over one made up here.
    const given = new Set(kept.map((slot) => slot.id).filter((id) => id !== ""));
    const used = new Set<string>();
    for (const slot of kept) {
      let id = slot.id || `${this.idPrefix}${slot.position}`;
      if (used.has(id) || (slot.id === "" && given.has(id))) {
        id = `${id}_${slot.position}`;
        while (used.has(id) || given.has(id)) id += "_";
      }
      used.add(id);
      out.push({ id, type: "function", function: { name: slot.name, arguments: settled(slot) } });
    }
    return out;
  }

  /**
   * Adds a piece of arguments to a call; returns the text it added, or `undefined` when the piece
   * is a second, different whole JSON value after a finished one, or the start of one after the tool
   * was named again (a further call).
   */
  private addArguments(slot: Slot, piece: string, whole: boolean): string | undefined {
    if (piece === "") return "";
    let so = slot.arguments;
    if (so === "") {
      this.replaceArguments(slot, piece);
      return piece;
    }
    const alt = slot.alt;
    if (alt !== undefined) {
      slot.alt = undefined;
      if (piece.startsWith(so)) {
        // Everything so far again: cumulative still fits, and so does incremental. Both readings
        // go on; one that is whole JSON while the other is not settles it.
        alt.before += so;
        alt.shape.add(piece);
        const added = piece.slice(so.length);
        appendArguments(slot, added);
        const cumulative = slot.shape.whole(slot.arguments) !== undefined;
        const incremental = alt.shape.whole(alt.before + slot.arguments) !== undefined;
        if (cumulative && !incremental) slot.cumulative = true;
        else if (incremental && !cumulative) {
          this.replaceArguments(slot, alt.before + slot.arguments);
          return piece;
        } else slot.alt = alt;
        return added;
      }
      // It was an incremental stream whose pieces happened to repeat the text before them.
      so = alt.before + so;
      this.replaceArguments(slot, so);
    }
    if (
      piece.startsWith(so) &&
      (slot.cumulative ||
        (piece.length > so.length &&
          // One piece alone: the appended reading wins when it is whole JSON and the other is not.
          (completeJson(piece) !== undefined || completeJson(so + piece) === undefined)))
    ) {
      if (!slot.cumulative) {
        const shape = slot.shape.copy();
        shape.add(piece);
        slot.alt = { before: so, shape };
      }
      appendArguments(slot, piece.slice(so.length));
      return piece.slice(so.length);
    }
    const looksWhole = whole || (piece.length > 1 && completeJson(piece) !== undefined);
    if (looksWhole) {
      const before = slot.shape.whole(so);
      if (before !== undefined) {
        // A finished call's arguments again (perhaps re-serialised): already there — unless the
        // tool was named again alone first, which makes them the next call's, as in pieces.
        if (!slot.renamed && sameJson(before, completeJson(piece))) return "";
        return undefined;
      }
      if (whole) {
        this.replaceArguments(slot, piece);
        return piece;
      }
    }
    // The tool named again after a whole call, then another value opening: the next call to the
    // same tool, under the same index (or none) and with no id (servers that number every call 0).
    // Without that naming piece, a value after a whole one is a server repeating the arguments, and
    // never read as a second call to run.
    if (slot.renamed && /^\s*[{[]/.test(piece) && slot.shape.whole(so) !== undefined) return undefined;
    slot.renamed = false;
    appendArguments(slot, piece);
    return piece;
  }

  /** `setArguments`, counting a replacement where the call had arguments. */
  private replaceArguments(slot: Slot, text: string): void {
    if (slot.arguments !== "") this.replacements++;
    setArguments(slot, text);
  }

  private progress(slot: Slot, added: string): ToolCallProgress {
    return {
      index: slot.position,
      id: slot.id,
      name: slot.name,
      argumentsDelta: added,
      arguments: slot.arguments,
    };
  }

  private identify(slot: Slot, id: string): void {
    slot.id = id;
    this.byId.set(id, slot);
  }

  private open(): Slot {
    const slot: Slot = {
      position: this.slots.length,
      id: "",
      name: "",
      arguments: "",
      pieces: 0,
      cumulative: false,
      alt: undefined,
      shape: new JsonShape(),
      renamed: false,
    };
    this.slots.push(slot);
    return slot;
  }
}
