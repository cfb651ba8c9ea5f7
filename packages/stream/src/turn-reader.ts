import type { ChunkLike, ContentPartLike, DeltaLike, UsageLike } from "./chunk.js";
import { type Fence, type FenceSplit, FenceSplitter } from "./fences.js";
import { ToolCallAssembler, type ToolCallProgress } from "./tool-call-assembler.js";
import type { Turn } from "./turn.js";
import { readUsage } from "./usage.js";

/** What a {@link TurnReader} tells its caller while it reads. */
export interface TurnReaderOptions {
  fences?: readonly Fence[];
  startInReasoning?: boolean;
  onOutput?: (text: string) => void;
  onThinking?: (text: string) => void;
  onToolCallDelta?: (progress: ToolCallProgress) => void;
  /** Called once, on the first chunk that carries text, reasoning or a piece of a tool call. */
  onProduced?: () => void;
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

function partsText(parts: readonly ContentPartLike[], kind: "text" | "thinking"): string {
  let out = "";
  for (const part of parts) {
    if (!part || typeof part !== "object") continue;
    if (kind === "text") {
      if (part.type === "text" && typeof part.text === "string") out += part.text;
    } else if (part.type === "thinking") {
      const t = part.thinking;
      if (typeof t === "string") out += t;
      else if (Array.isArray(t)) out += partsText(t, "text");
    }
  }
  return out;
}

/**
 * Reads streamed chunks, in order, into a {@link Turn}: the state machine under `streamTurn`,
 * without the network. Never throws on a malformed chunk; a shape it does not know is skipped.
 */
export class TurnReader {
  private readonly splitter: FenceSplitter;
  private readonly calls = new ToolCallAssembler();
  private readonly options: TurnReaderOptions;
  private reasoning = "";
  private usage: UsageLike | undefined;
  private finishReason = "";
  private produced = false;

  constructor(options: TurnReaderOptions = {}) {
    this.options = options;
    this.splitter = new FenceSplitter({ fences: options.fences, startInReasoning: options.startInReasoning });
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
  read(chunk: ChunkLike): boolean {
    if (!chunk || typeof chunk !== "object") return false;
    let carried = false;
    const usage = chunk.usage ?? chunk.x_groq?.usage;
    if (usage && typeof usage === "object") {
      this.usage = usage;
      carried = true;
    }
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return carried;
    for (const choice of choices) {
      if (!choice || typeof choice !== "object") continue;
      if (typeof choice.index === "number" && choice.index !== 0) continue;
      const delta = choice.delta;
      if (delta && typeof delta === "object" && this.readDelta(delta)) carried = true;
      const finish = choice.finish_reason;
      if (typeof finish === "string" && finish !== "") {
        this.finishReason = finish;
        carried = true;
      }
    }
    return carried;
  }

  /** Ends the reading: releases any held-back text to the callbacks and returns the turn. */
  finish(): Turn {
    this.deliver(this.splitter.flush());
    return this.snapshot();
  }

  /** The turn as read so far, without releasing anything or telling the callbacks. */
  snapshot(): Turn {
    const pending = this.splitter.pending;
    const inside = this.splitter.inReasoning;
    return {
      content: inside ? this.splitter.content : this.splitter.content + pending,
      toolCalls: this.calls.calls(),
      usage: readUsage(this.usage),
      finishReason: this.finishReason,
      reasoning: inside ? this.reasoning + pending : this.reasoning,
    };
  }

  private readDelta(delta: DeltaLike): boolean {
    let carried = false;
    const thought = deltaReasoning(delta);
    if (thought !== "") {
      carried = true;
      this.markProduced();
      this.reasoning += thought;
      this.options.onThinking?.(thought);
    }
    const content = delta.content;
    if (typeof content === "string") {
      if (content !== "") {
        carried = true;
        this.markProduced();
        this.deliver(this.splitter.push(content));
      }
    } else if (Array.isArray(content)) {
      const thinking = partsText(content, "thinking");
      if (thinking !== "") {
        carried = true;
        this.markProduced();
        this.reasoning += thinking;
        this.options.onThinking?.(thinking);
      }
      const text = partsText(content, "text");
      if (text !== "") {
        carried = true;
        this.markProduced();
        this.deliver(this.splitter.push(text));
      }
    }
    const pieces = delta.tool_calls;
    if (Array.isArray(pieces)) {
      for (const piece of pieces) {
        const progress = this.calls.push(piece);
        if (progress === undefined) continue;
        carried = true;
        this.markProduced();
        this.options.onToolCallDelta?.(progress);
      }
    }
    return carried;
  }

  private deliver(split: FenceSplit): void {
    if (split.reasoning !== "") {
      this.reasoning += split.reasoning;
      this.options.onThinking?.(split.reasoning);
    }
    if (split.content !== "") this.options.onOutput?.(split.content);
  }

  private markProduced(): void {
    if (this.produced) return;
    this.produced = true;
    this.options.onProduced?.();
  }
}
