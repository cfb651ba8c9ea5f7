import type {
  ChunkLike,
  ContentPartLike,
  DeltaLike,
  TimingsLike,
  ToolCallDeltaLike,
  UsageLike,
} from "./chunk.js";
import { type Fence, type FenceSplit, FenceSplitter } from "./fences.js";
import { GrownText, grown } from "./grown-text.js";
import { ownChunk } from "./own-chunk.js";
import { held } from "./own-field.js";
import { indexOf, ToolCallAssembler, type ToolCallProgress } from "./tool-call-assembler.js";
import { normalizeFinishReason, type Turn, type TurnTimings } from "./turn.js";
import { discardedOf, laterUsage, noteDiscarded, readUsage, reportsUsage } from "./usage.js";

/** The slot a legacy `function_call` delta goes to, apart from any `tool_calls` index. */
const LEGACY_INDEX = -1;

/** What a {@link TurnReader} tells its caller while it reads. */
export interface TurnReaderOptions {
  fences?: readonly Fence[] | undefined;
  startInReasoning?: boolean | undefined;
  onOutput?: ((text: string) => void) | undefined;
  /** Told how many characters of answer text already given to `onOutput` turned out to be reasoning. */
  onRetract?: ((chars: number) => void) | undefined;
  /** Told once when a lone closing marker ends a scratchpad the template opened, before `onRetract`. */
  onScratchpadClosed?: (() => void) | undefined;
  onThinking?: ((text: string) => void) | undefined;
  onToolCallDelta?: ((progress: ToolCallProgress) => void) | undefined;
  /** Called once, on the first chunk that carries text, reasoning or a piece of a tool call. */
  onProduced?: (() => void) | undefined;
  /** What a call the server sent without an id is named by, before its position; default `"call_"`. */
  idPrefix?: string | undefined;
}

/** The named field a delta's reasoning came in, where it came in one a request can carry back. */
function reasoningFieldOf(delta: DeltaLike): Turn["reasoningField"] {
  if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "")
    return "reasoning_content";
  return typeof delta.reasoning === "string" && delta.reasoning !== "" ? "reasoning" : undefined;
}

/** Reasoning text carried by a delta: the first field, in the order servers are known to use them. */
function deltaReasoning(delta: DeltaLike): string {
  const rc = delta.reasoning_content;
  if (typeof rc === "string" && rc !== "") return rc;
  const r = delta.reasoning;
  if (typeof r === "string") {
    if (r !== "") return r;
  } else if (r && typeof r === "object") {
    const t = typeof r.text === "string" ? r.text : typeof r.content === "string" ? r.content : r.summary;
    if (typeof t === "string" && t !== "") return t;
  }
  const details = delta.reasoning_details;
  if (Array.isArray(details)) {
    let out = "";
    for (const d of details) {
      if (!d || typeof d !== "object") continue;
      if (typeof d.text === "string") out += d.text;
      else if (typeof d.summary === "string") out += d.summary;
    }
    return out;
  }
  return "";
}

const TEXT_PARTS = new Set(["text", "output_text"]);
const THINKING_PARTS = new Set(["thinking", "reasoning"]);

function partsText(parts: readonly ContentPartLike[], kind: "text" | "thinking"): string {
  let out = "";
  for (const part of parts) {
    if (!part || typeof part !== "object") continue;
    const type = part.type;
    if (kind === "text") {
      if ((type === undefined || TEXT_PARTS.has(type)) && typeof part.text === "string") out += part.text;
    } else if (type !== undefined && THINKING_PARTS.has(type)) {
      const t = part.thinking ?? part.reasoning ?? part.text;
      if (typeof t === "string") out += t;
      else if (Array.isArray(t)) out += partsText(t, "text");
    }
  }
  return out;
}

/** The server's error for a choice that finished `"error"` with no error object beside it. */
const FINISHED_IN_ERROR =
  'the server ended the turn with finish_reason "error" and sent no error saying why (a router\'s provider failed mid-answer, most often)';

/** Whether an `error` member says something went wrong (`null`, `false` and `""` say nothing did). */
function isError(error: unknown): boolean {
  return error !== undefined && error !== null && error !== false && error !== "";
}

/**
 * The error a chunk carries when the server put one in the stream in a shape the client passed on
 * as a chunk rather than throwing: a truthy `error` member, with or without `choices` (OpenRouter's
 * mid-stream error is a chunk with both, its choice finishing with `"error"`; the openai SDK's own
 * reader throws on it, a host's client may hand it on), a truthy `error` on the first choice
 * (OpenRouter's `StreamingChoice` carries one beside `finish_reason: "error"`, which no client
 * throws on), a first choice finishing `"error"` with no error object (an error saying so stands
 * for it), a bare `{"object":"error","message":…}` (vLLM's error body), or an `event: error`
 * whose data is `{"message":…,"type"|"code":…}` with no `choices`. `undefined` for an ordinary chunk.
 */
export function chunkError(chunk: ChunkLike): unknown {
  if (!chunk || typeof chunk !== "object") return undefined;
  const { error } = chunk;
  if (isError(error)) return error;
  if (Array.isArray(chunk.choices)) {
    for (const choice of chunk.choices) {
      if (!choice || typeof choice !== "object") continue;
      // Only the choice that is read (0, or one without an index): another choice's error is its own.
      const index = indexOf(choice.index);
      if (index !== undefined && index !== 0) continue;
      if (isError(choice.error)) return choice.error;
      // A choice that finishes "error" failed whether or not an error object came with it: what it
      // wrote is a partial turn, never a whole one (a tool call cut mid-arguments would be run).
      if (typeof choice.finish_reason === "string" && choice.finish_reason.toLowerCase() === "error") {
        return { message: FINISHED_IN_ERROR };
      }
    }
    return undefined;
  }
  if (chunk.object === "error") return chunk;
  if (
    typeof chunk.message === "string" &&
    chunk.message !== "" &&
    (chunk.type !== undefined || chunk.code !== undefined) &&
    chunk.usage === undefined
  ) {
    return chunk;
  }
  return undefined;
}

/**
 * Reads streamed chunks, in order, into a {@link Turn}: the state machine under `streamTurn`,
 * without the network. Never throws on a malformed chunk; a shape it does not know is skipped.
 */
export class TurnReader {
  private splitter: FenceSplitter;
  /** Whether any content has gone to the splitter yet. */
  private contentRead = false;
  private readonly calls: ToolCallAssembler;
  private readonly options: TurnReaderOptions;
  private readonly reasoning = new GrownText();
  /** The content as it arrived, before the fences split it. */
  private readonly written = new GrownText();
  private reasoningField: Turn["reasoningField"];
  private usage: UsageLike | undefined;
  /** Each usage field sent a value no count can be, with the last such value as text. */
  private readonly discarded = new Map<string, string>();
  private timings: TimingsLike | undefined;
  private finishReason = "";
  private produced = false;
  /** Whether a lone closing marker ended a template-opened scratchpad (told to `onScratchpadClosed`). */
  private scratchpadClosed = false;
  /** The first half of a surrogate pair that ended the reasoning so far, told with the next piece. */
  private thinkingHeld = "";
  /** Per call (by position), what `onToolCallDelta` was last told of it (see {@link ToldCall}). */
  private readonly toldCalls = new Map<number, ToldCall>();

  constructor(options: TurnReaderOptions = {}) {
    // Read once, by the fields the options hold: an option left out is absent, whatever a polluted
    // Object.prototype holds under its name (an inherited onThinking string was called).
    const read = (key: keyof TurnReaderOptions) =>
      typeof options === "object" && options !== null ? held(options, key) : undefined;
    this.options = {
      fences: read("fences") as TurnReaderOptions["fences"],
      startInReasoning: read("startInReasoning") as boolean | undefined,
      onOutput: read("onOutput") as TurnReaderOptions["onOutput"],
      onRetract: read("onRetract") as TurnReaderOptions["onRetract"],
      onScratchpadClosed: read("onScratchpadClosed") as TurnReaderOptions["onScratchpadClosed"],
      onThinking: read("onThinking") as TurnReaderOptions["onThinking"],
      onToolCallDelta: read("onToolCallDelta") as TurnReaderOptions["onToolCallDelta"],
      onProduced: read("onProduced") as TurnReaderOptions["onProduced"],
      idPrefix: read("idPrefix") as string | undefined,
    };
    this.calls = new ToolCallAssembler({ idPrefix: this.options.idPrefix ?? undefined });
    this.splitter = new FenceSplitter({
      fences: this.options.fences,
      startInReasoning: this.options.startInReasoning,
    });
  }

  /** Whether a chunk carrying text, reasoning or a piece of a tool call has been read. */
  get hasProduced(): boolean {
    return this.produced;
  }

  /** Whether a finish reason has arrived. */
  get finished(): boolean {
    return this.finishReason !== "";
  }

  /** Reads one chunk; returns whether it carried anything (text, reasoning, calls, a finish, usage). */
  read(sent: ChunkLike): boolean {
    if (!sent || typeof sent !== "object") return false;
    // Its own fields only (a chunk streamTurn already read so is taken as it is): an inherited
    // `content` (Object.prototype.content = "x", set by polluting code) went onto every answer.
    const chunk = ownChunk(sent);
    let carried = false;
    // A usage object with no count in it (`"usage": {}`) reports nothing: it must not replace one
    // that did.
    const usage = reportsUsage(chunk.usage)
      ? chunk.usage
      : reportsUsage(chunk.x_groq?.usage)
        ? chunk.x_groq?.usage
        : undefined;
    noteDiscarded(this.discarded, chunk.usage);
    noteDiscarded(this.discarded, chunk.x_groq?.usage);
    if (usage) {
      this.usage = laterUsage(this.usage, usage);
      carried = true;
    }
    // Cumulative on every chunk where a server sends them: the last one holds the whole turn.
    if (chunk.timings && typeof chunk.timings === "object") this.timings = chunk.timings;
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return carried;
    for (const choice of choices) {
      if (!choice || typeof choice !== "object") continue;
      // Only choice 0 (or one without an index) is read; `"1"` is choice 1, as a relay may write it.
      const index = indexOf(choice.index);
      if (index !== undefined && index !== 0) continue;
      const delta = choice.delta;
      if (delta && typeof delta === "object" && this.readDelta(delta)) carried = true;
      else if (!this.produced) {
        // A choice carrying a whole `message` and no `delta`, or one that says nothing (a completion
        // sent as one event of the stream), is read as one delta holding all of it — unless deltas
        // already brought the reply, which the message would only repeat.
        const whole = messageAsDelta(choice.message);
        if (whole && this.readDelta(whole)) carried = true;
      }
      const finish = choice.finish_reason;
      if (typeof finish === "string" && finish !== "") {
        this.finishReason = normalizeFinishReason(finish);
        carried = true;
      }
      noteDiscarded(this.discarded, choice.usage);
      if (!usage && reportsUsage(choice.usage)) {
        this.usage = laterUsage(this.usage, choice.usage);
        carried = true;
      }
    }
    return carried;
  }

  /** Ends the reading: releases any held-back text to the callbacks and returns the turn. */
  finish(): Turn {
    this.deliver(this.splitter.flush());
    if (this.thinkingHeld !== "") {
      const held = this.thinkingHeld;
      this.thinkingHeld = "";
      this.options.onThinking?.(held);
    }
    for (const { held } of this.toldCalls.values()) {
      if (held !== undefined) this.options.onToolCallDelta?.({ ...held.progress, argumentsDelta: held.half });
    }
    this.toldCalls.clear();
    return this.snapshot();
  }

  /** The turn as read so far, without releasing anything or telling the callbacks. */
  snapshot(): Turn {
    const pending = this.splitter.pending;
    const inside = this.splitter.inReasoning;
    const content = inside ? this.splitter.content : this.splitter.content + pending;
    return {
      content,
      toolCalls: this.calls.calls(),
      usage: readUsage(this.usage),
      finishReason: this.finishReason,
      reasoning: inside ? this.reasoning.text + pending : this.reasoning.text,
      ...(this.reasoningField ? { reasoningField: this.reasoningField } : {}),
      ...(this.scratchpadClosed ? { scratchpadClosed: true as const } : {}),
      ...(this.written.text !== content ? { rawContent: this.written.text } : {}),
      ...readTimings(this.timings),
      ...this.discardedUsage(),
    };
  }

  /** `{ discardedUsage }` where a usage count the turn has none of was sent as no count can be. */
  private discardedUsage(): { discardedUsage?: Turn["discardedUsage"] } {
    if (this.discarded.size === 0) return {};
    const discarded = discardedOf(this.discarded, this.usage);
    return discarded.length > 0 ? { discardedUsage: discarded } : {};
  }

  private readDelta(delta: DeltaLike): boolean {
    let carried = false;
    const thought = deltaReasoning(delta);
    if (thought !== "") {
      this.parsedByServer();
      carried = true;
      this.markProduced();
      this.reasoning.add(thought);
      this.reasoningField ??= reasoningFieldOf(delta);
      this.tellThinking(thought);
    }
    let content = delta.content;
    if (content && typeof content === "object" && !Array.isArray(content))
      content = [content as ContentPartLike];
    if (typeof content === "string") {
      if (content !== "") {
        carried = true;
        this.markProduced();
        this.readContent(content);
      }
    } else if (Array.isArray(content)) {
      const parts = content as readonly ContentPartLike[];
      const thinking = partsText(parts, "thinking");
      if (thinking !== "") {
        this.parsedByServer();
        carried = true;
        this.markProduced();
        this.reasoning.add(thinking);
        this.tellThinking(thinking);
      }
      const text = partsText(parts, "text");
      if (text !== "") {
        carried = true;
        this.markProduced();
        this.readContent(text);
      }
    }
    const refusal = delta.refusal;
    if (typeof refusal === "string" && refusal !== "") {
      carried = true;
      this.markProduced();
      this.readContent(refusal);
    }
    const calls = delta.tool_calls;
    const pieces: readonly ToolCallDeltaLike[] | undefined = Array.isArray(calls)
      ? calls
      : calls && typeof calls === "object"
        ? [calls as ToolCallDeltaLike]
        : undefined;
    if (pieces) {
      for (const piece of pieces) {
        if (this.readCall(piece)) carried = true;
      }
    }
    const legacy = delta.function_call;
    if (legacy && typeof legacy === "object" && this.readCall({ index: LEGACY_INDEX, function: legacy })) {
      carried = true;
    }
    return carried;
  }

  private readCall(piece: ToolCallDeltaLike): boolean {
    const progress = this.calls.push(piece);
    if (progress === undefined) return false;
    this.markProduced();
    this.tellCall(progress);
    return true;
  }

  /**
   * Tells `onToolCallDelta` a piece of a call, holding back a first half of a surrogate pair that
   * ends its arguments until the call's next piece, as `onOutput` and `onThinking` do: neither
   * `argumentsDelta` nor `arguments` ends in half a character. Released at the end if nothing
   * completes it.
   */
  private tellCall(progress: ToolCallProgress): void {
    const tell = this.options.onToolCallDelta;
    if (tell === undefined) return;
    const told = this.toldCalls.get(progress.index);
    const delta =
      told?.held === undefined ? progress.argumentsDelta : told.held.half + progress.argumentsDelta;
    // Only the piece is looked at: reading the end of the whole arguments (a string built piece by
    // piece) makes V8 copy all of it each time, the square of their length over a call.
    if (!endsInFirstHalf(delta)) {
      this.toldCalls.set(progress.index, { arguments: progress.arguments, pieces: 0, held: undefined });
      tell(delta === progress.argumentsDelta ? progress : { ...progress, argumentsDelta: delta });
      return;
    }
    const piece = delta.slice(0, -1);
    const held = { half: delta.slice(-1), progress };
    if (!this.calls.appended) {
      // The server replaced the arguments: cut from the whole, when read.
      const shown = withoutLastHalf(progress, piece);
      this.toldCalls.set(progress.index, { arguments: "", pieces: 0, held, whole: shown });
      tell(shown);
      return;
    }
    // The piece was added to the arguments told before (with the half held then): the arguments
    // without the half are those with the rest of the piece. Cutting the last character off the
    // whole arguments instead copied all of them on every piece that ended in a first half (a relay
    // cutting a run of emoji between its pieces made that every piece: the square of their length).
    const before = told === undefined ? "" : told.whole === undefined ? told.arguments : told.whole.arguments;
    const text = before + piece;
    const pieces = told === undefined || told.whole !== undefined ? 1 : grown(text, told.pieces + 1);
    this.toldCalls.set(progress.index, { arguments: text, pieces, held });
    tell({ ...progress, argumentsDelta: piece, arguments: text });
  }

  /**
   * The server sent the scratchpad in a field of its own: its reasoning parser took it out of the
   * content, so content the template began inside `<think>` (`startInReasoning`) is the answer and
   * will hold no closing marker. Read before any content, it ends that implicit scratchpad.
   */
  private parsedByServer(): void {
    if (this.contentRead || !this.splitter.inReasoning) return;
    this.contentRead = true;
    this.splitter = new FenceSplitter({ fences: this.options.fences });
  }

  private readContent(text: string): void {
    this.contentRead = true;
    this.written.add(text);
    this.deliver(this.splitter.push(text));
  }

  private deliver(split: FenceSplit): void {
    if (!this.scratchpadClosed && this.splitter.closedScratchpad) {
      this.scratchpadClosed = true;
      this.options.onScratchpadClosed?.();
    }
    // Before the reasoning it turned out to be, so a display takes the text back, then shows it as reasoning.
    if (split.retracted > 0) this.options.onRetract?.(split.retracted);
    if (split.reasoning !== "") {
      this.reasoning.add(split.reasoning);
      this.tellThinking(split.reasoning);
    }
    if (split.content !== "") this.options.onOutput?.(split.content);
  }

  /**
   * Tells `onThinking` a piece of reasoning, holding back a first half of a surrogate pair that ends
   * it until the next piece (a server that cut a character between two deltas): never half a
   * character, as `onOutput` is never told one. Released at the end if nothing completes it.
   */
  private tellThinking(text: string): void {
    let told = this.thinkingHeld === "" ? text : this.thinkingHeld + text;
    const last = told.charCodeAt(told.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      this.thinkingHeld = told.slice(-1);
      told = told.slice(0, -1);
    } else this.thinkingHeld = "";
    if (told !== "") this.options.onThinking?.(told);
  }

  private markProduced(): void {
    if (this.produced) return;
    this.produced = true;
    this.options.onProduced?.();
  }
}

/**
 * What `onToolCallDelta` was last told of one call: its `arguments`, the pieces added to that text
 * since it was last flat (see `grown`), and the first half of a surrogate pair held back from the
 * end of the call's arguments with the progress it was held from (told with the call's next piece,
 * or at the end). `whole`: told instead of `arguments` where the server had replaced the arguments,
 * cut from them only if read.
 */
interface ToldCall {
  arguments: string;
  pieces: number;
  held: { half: string; progress: ToolCallProgress } | undefined;
  whole?: ToolCallProgress;
}

/**
 * `progress` told with `argumentsDelta` and its `arguments` without the first half of a surrogate
 * pair that ends them, cut only when read (cutting the arguments copies them all).
 */
function withoutLastHalf(progress: ToolCallProgress, argumentsDelta: string): ToolCallProgress {
  let cut: string | undefined;
  const whole = progress.arguments;
  return {
    index: progress.index,
    id: progress.id,
    name: progress.name,
    argumentsDelta,
    get arguments(): string {
      cut ??= endsInFirstHalf(whole) ? whole.slice(0, -1) : whole;
      return cut;
    },
  };
}

/** Whether `text` ends in the first half of a surrogate pair (its second yet to come). */
function endsInFirstHalf(text: string): boolean {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff;
}

/** A whole message's fields as a delta: its tool calls numbered by position, as a stream numbers them. */
function messageAsDelta(message: unknown): DeltaLike | undefined {
  if (!message || typeof message !== "object" || Array.isArray(message)) return undefined;
  const { tool_calls: calls, ...rest } = message as DeltaLike;
  if (!Array.isArray(calls)) return message as DeltaLike;
  const numbered = calls.map((call: ToolCallDeltaLike, index) =>
    call && typeof call === "object" && typeof call.index !== "number" ? { ...call, index } : call,
  );
  return { ...rest, tool_calls: numbered };
}

/** A time or count the server measured: a number from 0 to 2^53 - 1 (`1e308` is none, as in usage). */
function measured(value: unknown): number | undefined {
  return typeof value === "number" && value >= 0 && value <= Number.MAX_SAFE_INTEGER ? value : undefined;
}

/** `{ timings }` with the fields the server measured, or nothing where it measured none. */
function readTimings(raw: TimingsLike | undefined): { timings?: TurnTimings } {
  if (!raw) return {};
  const timings: TurnTimings = {};
  const prefill = measured(raw.prompt_ms);
  const decode = measured(raw.predicted_ms);
  const drafted = measured(raw.draft_n);
  const accepted = measured(raw.draft_n_accepted);
  if (prefill !== undefined) timings.prefillMs = prefill;
  if (decode !== undefined) timings.decodeMs = decode;
  if (drafted !== undefined) timings.draftTokens = drafted;
  if (accepted !== undefined) timings.draftAccepted = accepted;
  return Object.keys(timings).length > 0 ? { timings } : {};
}
