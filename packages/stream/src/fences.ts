import { GrownText } from "./grown-text.js";
import { held } from "./own-field.js";

/**
 * A pair of markers a model writes around its scratchpad when the server leaves it in `content`.
 *
 * `open` starts the scratchpad and `close` ends it. `resume`, where a format has one, is a header
 * the model writes right after `close` to start its answer (gpt-oss harmony's final channel); it is
 * dropped with the fence rather than shown as answer.
 */
export interface Fence {
  readonly open: string;
  readonly close: string;
  readonly resume?: string;
  /**
   * A chat template may open this fence in the prompt, so the reply can hold only the closing
   * marker: one arriving before any opening marker ends a scratchpad that began with the reply.
   */
  readonly implicitOpen?: boolean;
}

const THINK: Fence = { open: "<think>", close: "</think>", implicitOpen: true };
const HARMONY: Fence = {
  open: "<|channel|>analysis<|message|>",
  close: "<|end|>",
  resume: "<|start|>assistant<|channel|>final<|message|>",
};
const KIMI: Fence = { open: "◁think▷", close: "◁/think▷", implicitOpen: true };
const THINKING: Fence = { open: "<thinking>", close: "</thinking>" };
const REASONING: Fence = { open: "<reasoning>", close: "</reasoning>" };

/**
 * The fences no model writes as an answer: `<think>`, raw gpt-oss harmony analysis, Kimi's `◁think▷`.
 *
 * What `streamTurn` uses unless told otherwise.
 */
export const DEFAULT_FENCES: readonly Fence[] = Object.freeze([THINK, HARMONY, KIMI]);

/**
 * The default fences plus `<thinking>` and `<reasoning>`, for answers read by code (side tasks).
 *
 * A model might be quoting those two in an answer meant for a person, so they are not a default.
 */
export const ALL_FENCES: readonly Fence[] = Object.freeze([...DEFAULT_FENCES, THINKING, REASONING]);

/** Options of `FenceSplitter` and `stripThinking`: the fence table and whether text starts fenced. */
export interface FenceOptions {
  /** The fences to recognise; `[]` reads all text as answer. Default {@link DEFAULT_FENCES}. */
  fences?: readonly Fence[] | undefined;
  /**
   * The text starts inside a scratchpad (the template opened `<think>` in the prompt), so
   * everything up to the first closing marker is reasoning and never answer.
   */
  startInReasoning?: boolean | undefined;
}

/**
 * What one `FenceSplitter.push` or `flush` released: new answer, new reasoning, retracted answer.
 *
 * `content` is new answer text and `reasoning` new scratchpad text. `retracted` is the length of
 * answer text released earlier that has turned out to be scratchpad (a closing marker arrived with
 * no opening one): that text is gone from the answer and is included at the start of `reasoning`.
 */
export interface FenceSplit {
  content: string;
  reasoning: string;
  retracted: number;
}

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!isSpace(text.charCodeAt(i))) return false;
  return true;
}

function leadingSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/**
 * 1 when `text` ends in the first half of a surrogate pair, else 0: a server that cut a character
 * outside the Basic Multilingual Plane between two deltas (`"\ud83d"` then `"\ude00"`) has its
 * first half held back with the next piece, so no callback is told half a character (written out
 * alone, each half is U+FFFD: "😀" drawn as "��").
 */
function halfCharTail(text: string): number {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? 1 : 0;
}

/** Length of the longest tail of `text` that is a proper prefix of one of `markers`. */
function heldTail(text: string, markers: readonly string[]): number {
  let best = 0;
  for (const marker of markers) {
    const max = Math.min(marker.length - 1, text.length);
    for (let k = max; k > best; k--) {
      if (text.endsWith(marker.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

function validateFences(given: unknown): readonly Fence[] {
  if (!Array.isArray(given)) throw new TypeError("fences must be an array of { open, close } markers.");
  const fences: Fence[] = [];
  for (const fence of given as unknown[]) {
    // Each fence read once, by its own fields: the table the splitter keeps has all four written.
    const f: Partial<Fence> | null =
      typeof fence === "object" && fence !== null
        ? {
            open: held(fence, "open") as string,
            close: held(fence, "close") as string,
            resume: held(fence, "resume") as string,
            implicitOpen: held(fence, "implicitOpen") as boolean,
          }
        : null;
    if (
      !f ||
      typeof f.open !== "string" ||
      typeof f.close !== "string" ||
      f.open === "" ||
      f.close === "" ||
      (f.resume !== undefined && (typeof f.resume !== "string" || f.resume === "")) ||
      (f.implicitOpen !== undefined && typeof f.implicitOpen !== "boolean")
    ) {
      throw new TypeError(
        `Each fence needs non-empty string "open" and "close" markers (and "resume", if given); got ${JSON.stringify(fence)}.`,
      );
    }
    fences.push(f as Fence);
  }
  return fences;
}

/**
 * Where a closer of `fences` that would outrank `hit`'s closer found at `at` may begin, its first
 * part at the end of `buf`: one starting earlier, or at `at` and of a fence listed before `hit`'s.
 * -1 when none may. Only the last `longest` characters are looked at.
 */
function outrankedCloser(
  buf: string,
  pos: number,
  at: number,
  hit: Fence,
  fences: readonly Fence[],
  longest: number,
): number {
  for (let q = Math.max(pos, buf.length - longest + 1); q <= at; q++) {
    const tail = buf.slice(q);
    for (const fence of fences) {
      if (q === at && fence === hit) break;
      if (fence.close.length > tail.length && fence.close.startsWith(tail)) return q;
    }
  }
  return -1;
}

/**
 * Splits a streamed reply into answer and scratchpad as it arrives, fenced text going to reasoning.
 *
 * Feed it the content deltas in order with {@link FenceSplitter.push} and call
 * {@link FenceSplitter.flush} at the end. A piece ending in what could be the start of a marker is
 * held back until the next piece settles it, so half a tag is never released as answer (and one
 * ending in a whole marker a longer one of the table could still outrank); so is the
 * first half of a surrogate pair, so half a character is never released either. Blank space
 * right after an opening or closing marker, and right before a closing one, is dropped. The closing
 * marker of an `implicitOpen` fence arriving before any opening marker (a template that opened the
 * fence in the prompt) moves all answer so far to reasoning and says so in `retracted`. A reply cut off inside a fence leaves the answer as it was
 * before the fence. Over any split of a text the totals equal {@link stripThinking} of the whole.
 * Throws a `TypeError` for a malformed fence table; never throws while splitting.
 */
export class FenceSplitter {
  private readonly fences: readonly Fence[];
  private readonly answerMarkers: readonly string[];
  private readonly openMarkers: readonly string[];
  private readonly implicit: readonly Fence[];
  private readonly closeMarkers: readonly string[];
  private readonly markerStarts: string;
  private held = "";
  /**
   * `held` is only blank space inside a fence (no half marker): more blank space is appended to it
   * as it comes, rather than read again with it each piece — a long run streamed a character at a
   * time would otherwise be read once per character.
   */
  private heldBlank = false;
  private fence: Fence | undefined;
  private inside: boolean;
  private sawMarker = false;
  private dropSpace = false;
  private resume: string | undefined;
  private readonly contentTotal = new GrownText();
  private readonly reasoningTotal = new GrownText();
  private closedUnopened = false;
  /** For the piece being read: where each marker searched for is next (see `next`). */
  private readonly found = new Map<string, number>();
  /** The last character read before `held` (answer, reasoning or a marker), to tell a marker right after a backtick. */
  private lastRead = "";
  /** `held` holds a whole marker another one may still outrank (see `outranked`): `flush` reads it. */
  private heldWhole = false;
  /** Set by `flush`: the text has ended, so no marker can still grow. */
  private ended = false;
  /** The longest marker of the table. */
  private readonly longest: number;

  constructor(options: FenceOptions = {}) {
    this.fences = validateFences(held(options, "fences") ?? DEFAULT_FENCES);
    this.openMarkers = this.fences.map((f) => f.open);
    this.closeMarkers = this.fences.map((f) => f.close);
    this.implicit = this.fences.filter((f) => f.implicitOpen === true);
    this.answerMarkers = [...this.openMarkers, ...this.implicit.map((f) => f.close)];
    let starts = "";
    for (const marker of this.answerMarkers) if (!starts.includes(marker[0]!)) starts += marker[0];
    this.markerStarts = starts;
    this.longest = Math.max(0, ...this.fences.flatMap((f) => [f.open.length, f.close.length]));
    this.inside = held(options, "startInReasoning") === true && this.fences.length > 0;
    this.sawMarker = this.inside;
    this.dropSpace = this.inside;
  }

  /** All answer text released so far (after any retraction). */
  get content(): string {
    return this.contentTotal.text;
  }

  /** All scratchpad text released so far. */
  get reasoning(): string {
    return this.reasoningTotal.text;
  }

  /** Text held back as a possible half marker (or half a character), released by the next piece or by `flush()`. */
  get pending(): string {
    return this.held;
  }

  /** Whether the text read so far ends inside a fence. */
  get inReasoning(): boolean {
    return this.inside;
  }

  /**
   * Whether a closing marker ended a scratchpad the template opened in the prompt: one of an
   * `implicitOpen` fence arriving before any marker (all answer before it moved to reasoning), or,
   * with `startInReasoning: true`, the marker that ends the scratchpad the text began in.
   */
  get closedScratchpad(): boolean {
    return this.closedUnopened;
  }

  /** Takes the next piece of text; returns what it released as answer and as reasoning. */
  push(text: string): FenceSplit {
    const out: FenceSplit = { content: "", reasoning: "", retracted: 0 };
    if (typeof text !== "string" || text === "") return out;
    if (this.fences.length === 0) {
      const all = this.held === "" ? text : this.held + text;
      const keep = halfCharTail(all);
      this.held = keep > 0 ? all.slice(all.length - keep) : "";
      this.emitContent(all.slice(0, all.length - keep), out);
      return out;
    }
    if (this.heldBlank && this.inside && isBlank(text)) {
      this.held += text;
      return out;
    }
    this.heldBlank = false;
    this.heldWhole = false;
    const buf = this.held === "" ? text : this.held + text;
    this.found.clear();
    this.held = "";
    let pos = 0;
    while (pos < buf.length) {
      if (this.dropSpace) {
        pos = leadingSpace(buf, pos);
        if (pos === buf.length) break;
        if (!this.inside && this.resume !== undefined) {
          const resume = this.resume;
          if (buf.startsWith(resume, pos)) {
            pos += resume.length;
            this.resume = undefined;
            continue;
          }
          const rest = buf.length - pos;
          if (rest < resume.length && resume.startsWith(buf.slice(pos))) {
            this.held = buf.slice(pos);
            pos = buf.length;
            break;
          }
          this.resume = undefined;
        }
        this.dropSpace = false;
      }
      if (this.inside) pos = this.readInside(buf, pos, out);
      else {
        pos = this.readAnswer(buf, pos, out);
      }
    }
    const read = buf.length - this.held.length;
    if (read > 0) this.lastRead = buf[read - 1] as string;
    return out;
  }

  /** Releases what was held back as a possible half marker, at the end of the text. */
  flush(): FenceSplit {
    const out: FenceSplit = { content: "", reasoning: "", retracted: 0 };
    if (this.heldWhole) {
      // A whole marker was held for a longer one that could have outranked it: the text ended
      // without it, so the held text is read as the whole text reads it.
      this.heldWhole = false;
      this.ended = true;
      const held = this.push(this.held);
      this.ended = false;
      out.content += held.content;
      out.reasoning += held.reasoning;
      out.retracted += held.retracted;
    }
    const rest = this.held;
    this.held = "";
    this.heldBlank = false;
    if (rest === "") return out;
    if (this.inside) this.emitReasoning(rest, out);
    else this.emitContent(rest, out);
    return out;
  }

  /**
   * Where `needle` is next in `buf` from `pos` on, or -1: remembered for the piece being read, so a
   * marker that is absent (or far ahead) is not searched for again from every marker read before it
   * (`<think>x</think>` repeated, with `ALL_FENCES`, searched the rest of the text for `<thinking>`
   * once per marker: the square of its length).
   */
  private next(buf: string, needle: string, pos: number): number {
    const known = this.found.get(needle);
    if (known !== undefined && (known === -1 || known >= pos)) return known;
    const at = buf.indexOf(needle, pos);
    this.found.set(needle, at);
    return at;
  }

  /**
   * Whether the marker of `length` at `at` is written as inline code, a backtick right before it
   * and right after it: `true`, `false`, or `undefined` when the backtick before it is there and
   * the text ends with the marker (the next piece says).
   */
  private inlineCode(buf: string, at: number, length: number): boolean | undefined {
    const before = at > 0 ? buf[at - 1] : this.lastRead;
    if (before !== "`") return false;
    if (at + length === buf.length) return undefined;
    return buf[at + length] === "`";
  }

  private emitContent(text: string, out: FenceSplit): void {
    if (text === "") return;
    out.content += text;
    this.contentTotal.add(text);
  }

  private emitReasoning(text: string, out: FenceSplit): void {
    if (text === "") return;
    out.reasoning += text;
    this.reasoningTotal.add(text);
  }

  /** Reads answer text from `pos`; returns the position after what it consumed. */
  private readAnswer(buf: string, pos: number, out: FenceSplit): number {
    let quick = true;
    for (let i = 0; i < this.markerStarts.length; i++) {
      if (this.next(buf, this.markerStarts[i]!, pos) !== -1) {
        quick = false;
        break;
      }
    }
    if (quick) {
      const keep = halfCharTail(buf);
      this.emitContent(pos === 0 && keep === 0 ? buf : buf.slice(pos, buf.length - keep), out);
      this.held = keep > 0 ? buf.slice(buf.length - keep) : "";
      return buf.length;
    }
    let at = -1;
    let hit: Fence | undefined;
    let closing = false;
    // Where each fence's marker is next, searched again only past one written as inline code.
    const opens = this.fences.map((fence) => this.next(buf, fence.open, pos));
    const closes = this.fences.map((fence) =>
      !this.sawMarker && fence.implicitOpen === true ? this.next(buf, fence.close, pos) : -1,
    );
    for (;;) {
      at = -1;
      hit = undefined;
      let which = 0;
      for (let k = 0; k < this.fences.length; k++) {
        const i = opens[k] as number;
        if (i !== -1 && (at === -1 || i < at)) {
          [at, hit, closing, which] = [i, this.fences[k], false, k];
        }
        const j = closes[k] as number;
        if (j !== -1 && (at === -1 || j < at)) {
          [at, hit, closing, which] = [j, this.fences[k], true, k];
        }
      }
      if (hit === undefined) break;
      const marker = closing ? hit.close : hit.open;
      const quoted = this.inlineCode(buf, at, marker.length);
      if (quoted === false) break;
      if (quoted === undefined) {
        // A backtick before it and nothing after it yet: whether it is inline code comes next.
        this.emitContent(buf.slice(pos, at), out);
        this.held = buf.slice(at);
        return buf.length;
      }
      // Written between backticks (`` `<think>` ``): text about the marker, not the marker.
      (closing ? closes : opens)[which] = this.next(buf, marker, at + marker.length);
    }
    if (hit === undefined) {
      const markers = this.sawMarker ? this.openMarkers : this.answerMarkers;
      const keep = Math.max(heldTail(buf, markers), halfCharTail(buf));
      this.emitContent(buf.slice(pos, buf.length - keep), out);
      this.held = keep > 0 ? buf.slice(buf.length - keep) : "";
      return buf.length;
    }
    const undecided = this.outranked(buf, pos, at, hit, closing);
    if (undecided >= 0) {
      this.emitContent(buf.slice(pos, undecided), out);
      this.held = buf.slice(undecided);
      this.heldWhole = true;
      return buf.length;
    }
    this.sawMarker = true;
    if (closing) {
      // A closing marker with no opening one: the answer so far was scratchpad.
      this.closedUnopened = true;
      const moved = this.contentTotal.text;
      out.retracted += moved.length - out.content.length;
      out.content = "";
      this.contentTotal.text = "";
      this.emitReasoning(withoutTrailingBlank(moved + buf.slice(pos, at)), out);
      this.enterAnswer(hit);
      return at + hit.close.length;
    }
    this.emitContent(buf.slice(pos, at), out);
    this.fence = hit;
    this.inside = true;
    this.dropSpace = true;
    return at + hit.open.length;
  }

  /**
   * Where a marker that would outrank the one found at `at` (`hit`'s opener, or its closer when
   * `closing`) may begin, its first part at the end of `buf` and the rest to come: one starting
   * earlier, or at `at` and read first (the table's order, each fence's opener before its closer) —
   * with `<a>` and an `implicitOpen` closer `<`, a piece ending in `<` is not yet the closer. -1 when
   * none may (or the text has ended). Only the last {@link longest} characters are looked at.
   */
  private outranked(buf: string, pos: number, at: number, hit: Fence, closing: boolean): number {
    if (this.ended) return -1;
    const from = Math.max(pos, buf.length - this.longest + 1);
    for (let q = from; q <= at; q++) {
      const tail = buf.slice(q);
      // At `at` itself only the markers read before the one found outrank it.
      for (const fence of this.fences) {
        const markers =
          !this.sawMarker && fence.implicitOpen === true ? [fence.open, fence.close] : [fence.open];
        for (const marker of markers) {
          if (q === at && fence === hit && marker === (closing ? hit.close : hit.open)) break;
          if (marker.length > tail.length && marker.startsWith(tail)) return q;
        }
        if (q === at && fence === hit) break;
      }
    }
    return -1;
  }

  private readInside(buf: string, pos: number, out: FenceSplit): number {
    let at = -1;
    let hit: Fence | undefined;
    // The fences that may close here, and where each one's closer is next: searched again only past
    // one written as inline code (reasoning about `` `</think>` `` is still reasoning).
    const fences = this.fence !== undefined ? [this.fence] : this.fences;
    const closes = fences.map((fence) => this.next(buf, fence.close, pos));
    for (;;) {
      at = -1;
      hit = undefined;
      let which = 0;
      for (let k = 0; k < fences.length; k++) {
        const i = closes[k] as number;
        if (i !== -1 && (at === -1 || i < at)) [at, hit, which] = [i, fences[k], k];
      }
      if (hit === undefined) break;
      const quoted = this.inlineCode(buf, at, hit.close.length);
      if (quoted === false) break;
      if (quoted === undefined) {
        // A backtick before it and nothing after it yet: whether it closes the fence comes next.
        this.emitReasoning(buf.slice(pos, at), out);
        this.held = buf.slice(at);
        return buf.length;
      }
      closes[which] = this.next(buf, hit.close, at + hit.close.length);
    }
    if (at === -1 || hit === undefined) {
      // Hold back a possible half marker and the blank space before it, which the marker would drop.
      const keep = Math.max(
        heldTail(buf, this.fence !== undefined ? [this.fence.close] : this.closeMarkers),
        halfCharTail(buf),
      );
      let end = buf.length - keep;
      while (end > pos && isSpace(buf.charCodeAt(end - 1))) end--;
      this.emitReasoning(buf.slice(pos, end), out);
      this.held = end < buf.length ? buf.slice(end) : "";
      this.heldBlank = keep === 0 && this.held !== "";
      return buf.length;
    }
    const undecided = this.ended ? -1 : outrankedCloser(buf, pos, at, hit, fences, this.longest);
    if (undecided >= 0) {
      let end = undecided;
      while (end > pos && isSpace(buf.charCodeAt(end - 1))) end--;
      this.emitReasoning(buf.slice(pos, end), out);
      this.held = buf.slice(end);
      this.heldWhole = true;
      return buf.length;
    }
    // Inside with no fence of its own: the scratchpad `startInReasoning` said the template opened.
    if (this.fence === undefined) this.closedUnopened = true;
    let end = at;
    while (end > pos && isSpace(buf.charCodeAt(end - 1))) end--;
    this.emitReasoning(buf.slice(pos, end), out);
    this.enterAnswer(hit);
    return at + hit.close.length;
  }

  private enterAnswer(fence: Fence): void {
    this.inside = false;
    this.fence = undefined;
    this.dropSpace = true;
    this.resume = fence.resume;
  }
}

/**
 * Splits a whole reply into answer and scratchpad, exactly as a FenceSplitter fed it in one piece.
 *
 * Returns `{ content, reasoning }`. Reads only `text`; throws a `TypeError` for a malformed fence
 * table and never otherwise.
 */
export function stripThinking(
  text: string,
  options: FenceOptions = {},
): { content: string; reasoning: string } {
  const splitter = new FenceSplitter(options);
  splitter.push(typeof text === "string" ? text : "");
  splitter.flush();
  return { content: splitter.content, reasoning: splitter.reasoning };
}

/**
 * `text` without the spaces, tabs and line ends it ends in. A walk back, not
 * `replace(/[ \t\r\n]+$/, "")`: that regex is tried again from every blank of a run that does not
 * reach the end, so a scratchpad holding a long run of blanks before a lone `</think>` (80 000
 * spaces: 17 s) held the event loop for the square of its length.
 */
function withoutTrailingBlank(text: string): string {
  let end = text.length;
  for (;;) {
    const c = text.charCodeAt(end - 1);
    if (end === 0 || (c !== 32 && c !== 9 && c !== 13 && c !== 10)) break;
    end--;
  }
  return text.slice(0, end);
}
