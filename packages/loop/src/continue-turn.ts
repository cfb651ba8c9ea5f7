import type { EndpointCapabilities } from "@loopwright/negotiate";
import { isOverflow, type ModelCapabilities, modelCapabilitiesFor } from "@loopwright/negotiate";
import type { ChatClientLike, Turn, TurnUsage } from "@loopwright/stream";
import { errorMessage } from "./errors.js";
import { type BuildRequest, type RunTurnOptions, runTurn } from "./run-turn.js";

/** Options of `continueTurn`: `runTurn`'s, plus how many continuations to spend. */
export interface ContinueTurnOptions extends RunTurnOptions {
  /** The most requests to spend carrying the answer on (default 1). */
  maxContinuations?: number;
}

/** A turn put back together from its pieces; `continuations` counts the extra requests. */
export interface ContinuedTurn extends Turn {
  continuations: number;
}

/** How much of the answer a continuation must not start with, word for word, to count as carrying on. */
const RESTART_PROBE = 64;
/**
 * The least an answer so far must hold for a continuation that begins with it to be taken as the
 * answer starting over: 16 characters, or 3 words. Anything shorter (`1`, `Yes`, `The`) is begun
 * the same way by real continuations (`1` → `1, 12 and 13…`, an answer of `11, 12 and 13`) too
 * often to mean anything.
 */
const RESTART_MIN_CHARS = 16;
const RESTART_MIN_WORDS = 3;

/** The opening of the answer so far a restart would repeat, or `""` when it is too short to tell. */
function restartProbe(soFar: string): string {
  const probe = soFar.trimStart().slice(0, RESTART_PROBE);
  const words = probe.split(/\s+/).filter((word) => word !== "").length;
  return probe.length >= RESTART_MIN_CHARS || words >= RESTART_MIN_WORDS ? probe : "";
}

function sumOptional(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a + b;
}

function joinUsage(a: TurnUsage, b: TurnUsage): TurnUsage {
  const usage: TurnUsage = {
    prompt: a.prompt + b.prompt,
    completion: a.completion + b.completion,
    total: a.total + b.total,
    cached: a.cached + b.cached,
  };
  // A field only one piece reported is dropped rather than half-counted.
  const uncached = sumOptional(a.uncached, b.uncached);
  const reasoningTokens = sumOptional(a.reasoningTokens, b.reasoningTokens);
  if (uncached !== undefined) usage.uncached = uncached;
  if (reasoningTokens !== undefined) usage.reasoningTokens = reasoningTokens;
  return usage;
}

/**
 * The turn so far with a continuation's piece after it. When a lone closing marker in the piece
 * ended a scratchpad the template opened (`scratchpadClosed`), the answer so far was scratchpad
 * too: the content is the piece's alone, and the answer so far joins the reasoning — unless the
 * piece had started it over (`restarted`), whose own reasoning already repeats it.
 */
function join(whole: Turn, piece: Turn, restarted = false): Turn {
  const closed = piece.scratchpadClosed === true;
  const joined: Turn = {
    content: closed ? piece.content : whole.content + piece.content,
    toolCalls: piece.toolCalls,
    usage: joinUsage(whole.usage, piece.usage),
    finishReason: piece.finishReason,
    reasoning: whole.reasoning + (closed && !restarted ? whole.content : "") + piece.reasoning,
  };
  if (closed || whole.scratchpadClosed) joined.scratchpadClosed = true;
  const reasoningField = whole.reasoningField ?? piece.reasoningField;
  if (reasoningField) joined.reasoningField = reasoningField;
  // The text as written, for a call recovered from it (see `recoverWrittenCalls`).
  const written = (whole.rawContent ?? whole.content) + (piece.rawContent ?? piece.content);
  if (written !== joined.content) joined.rawContent = written;
  if (whole.timings && piece.timings) {
    const timings: NonNullable<Turn["timings"]> = {};
    for (const key of ["prefillMs", "decodeMs", "draftTokens", "draftAccepted"] as const) {
      const sum = sumOptional(whole.timings[key], piece.timings[key]);
      if (sum !== undefined) timings[key] = sum;
    }
    if (Object.keys(timings).length > 0) joined.timings = timings;
  }
  return joined;
}

/**
 * Wraps a continuation's callbacks. Its `onOutput`'s opening is held back until it is known not to
 * be the answer starting over: passed on once it parts from `probe`, never if it repeats all of it.
 * What is still held when the piece ends (a short piece that matched only part of the probe) is a
 * real continuation, and `flush` hands it on.
 *
 * A lone closing marker in the piece (`onScratchpadClosed`) makes all of the answer so far, `soFar`
 * (drawn by the time the continuation starts), reasoning along with the piece's own text before
 * it: one `onRetract` takes back `soFar` and what of the piece was passed on, and `soFar` is told
 * to `onThinking` before the piece's reasoning — unless the piece had started the answer over
 * (muted), whose reasoning repeats it. The stream's own retract for the piece's text is then
 * already counted, and what follows the marker is a new answer, passed on as it comes.
 */
function holdOpening(
  probe: string,
  soFar: string,
  onOutput: ((text: string) => void) | undefined,
  onRetract: ((chars: number) => void) | undefined,
  onThinking: ((text: string) => void) | undefined,
  onScratchpadClosed: (() => void) | undefined,
) {
  let held = "";
  let mode: "holding" | "passing" | "muted" = "holding";
  // Characters of this piece passed on: all a retract may take back (held or muted text was never shown).
  let passed = 0;
  let closed = false;
  let restarted = false;
  const pass = (text: string) => {
    passed += text.length;
    onOutput?.(text);
  };
  return {
    onOutput: (text: string) => {
      if (mode === "passing") return pass(text);
      if (mode === "muted") return;
      held += text;
      const lead = held.trimStart();
      if (probe !== "" && lead.startsWith(probe)) {
        mode = "muted"; // the answer over again: the reply so far is already on screen
        held = "";
      } else if (!probe.startsWith(lead)) {
        mode = "passing";
        const out = held;
        held = "";
        pass(out);
      }
    },
    onScratchpadClosed: () => {
      if (closed) return;
      closed = true;
      restarted = mode === "muted";
      onScratchpadClosed?.();
      const chars = soFar.length + passed;
      if (chars > 0) onRetract?.(chars);
      if (!restarted && soFar !== "") onThinking?.(soFar);
      held = "";
      passed = 0;
      mode = "passing";
    },
    // The piece's answer so far was reasoning: take back only what of it was passed on.
    onRetract: (chars: number) => {
      if (closed) return; // counted when the marker closed the scratchpad
      const shown = Math.min(chars, passed);
      held = held.slice(0, Math.max(0, held.length - (chars - shown)));
      passed -= shown;
      if (shown > 0) onRetract?.(shown);
    },
    flush: () => {
      if (mode === "holding" && held !== "") pass(held);
      held = "";
      mode = "passing";
    },
    /** Whether the piece had started the answer over when a lone closing marker ended its scratchpad. */
    get restarted() {
      return restarted;
    },
  };
}

/** Whether a turn is an answer begun and cut off at the ceiling — the only kind worth carrying on. */
export function isContinuable(turn: Turn): boolean {
  // Cut off inside a scratchpad: content is empty. Ending in a tool call: parseToolArguments reports it.
  return turn.finishReason === "length" && turn.toolCalls.length === 0 && turn.content.trim() !== "";
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === "number" ? status : undefined;
}

/**
 * Carries on an answer the token ceiling cut off: sends the request again with the answer so far as
 * a trailing assistant message, which llama.cpp renders as a prefill, and joins the pieces into one
 * turn — content and reasoning joined, token counts summed, `continuations` counting the extra
 * requests, timings summed, a field only one piece reported dropped.
 *
 * Only an answer begun and cut off is continued; one cut off in its scratchpad or ending in a tool
 * call comes back as it was. Whether the model carries on is latched per (endpoint, model) as
 * `assistantPrefill`: a 400 or 422 for the request latches it off, and so does a continuation that
 * starts the answer over word for word (how a server that ignores the trailing message shows
 * itself; only for an answer so far of at least 16 characters or 3 words, since a shorter one such
 * as `1` is begun the same way by real continuations, whose pieces are joined) — that piece is not joined, but its request counts in `continuations` and its tokens in
 * `usage`, since they were spent, and its text is never passed to `onOutput`: a continuation's
 * opening is held back until it parts from the answer so far. Either way, and on any other failure
 * short of a stop — an overflow included, which latches nothing — the cut-off answer is kept with
 * a notice. A stop rejects with the signal's reason. A continuation is read as answer even under
 * `startInReasoning`: the prefilled answer is already past the scratchpad the template opened.
 *
 * Unless it was not: a template that opened the scratchpad in the prompt, served with no reasoning
 * parser and cut off before its closing marker, streams the scratchpad as answer, and the lone
 * closing marker arrives in a continuation (`scratchpadClosed` on the piece). The answer so far was
 * then scratchpad too: the joined turn's content is what followed the marker, and the answer so far
 * joins the reasoning, before the piece's. `onRetract` takes back the answer so far and what of the
 * piece was passed on, in one call, and `onThinking` is told the answer so far before the piece's
 * reasoning — so a display that drew the turn's `onOutput` (the loop's events, and `fold` over
 * them) ends as the turn does. It counts the whole answer so far as drawn: the turn handed in is
 * taken to have been given to the same `onOutput`.
 */
export async function continueTurn(
  client: ChatClientLike,
  supports: EndpointCapabilities,
  build: BuildRequest,
  turn: Turn,
  options: ContinueTurnOptions = {},
): Promise<ContinuedTurn> {
  const max = options.maxContinuations ?? 1;
  const model: ModelCapabilities | undefined = options.model
    ? modelCapabilitiesFor(supports, options.model)
    : undefined;
  let whole = turn;
  let continuations = 0;
  while (continuations < max && isContinuable(whole) && model?.assistantPrefill !== false) {
    const soFar = whole.content;
    const probe = restartProbe(soFar);
    const shown = holdOpening(
      probe,
      soFar,
      options.onOutput,
      options.onRetract,
      options.onThinking,
      options.onScratchpadClosed,
    );
    let piece: Turn;
    try {
      piece = await runTurn(
        client,
        supports,
        (supports, caps) => {
          const body = build(supports, caps);
          return { ...body, messages: [...body.messages, { role: "assistant", content: soFar }] };
        },
        // The prefilled answer is past any scratchpad the template opened: the piece is answer.
        {
          ...options,
          startInReasoning: false,
          onOutput: shown.onOutput,
          onRetract: shown.onRetract,
          onScratchpadClosed: shown.onScratchpadClosed,
        },
      );
    } catch (error) {
      if (options.signal?.aborted) throw error;
      const status = statusOf(error);
      if (isOverflow(error)) {
        // The answer so far plus the room to carry it on no longer fit: what was said stands.
        options.onNotice?.(
          `The continuation did not fit the context window (${errorMessage(error)}); the cut-off answer is kept as it was.`,
        );
      } else if (model && (status === 400 || status === 422)) {
        model.assistantPrefill = false;
        options.onNotice?.(
          `The server refused a trailing assistant message (${errorMessage(error)}); ` +
            "cut-off answers from this model are kept as they are from now on.",
        );
      } else {
        options.onNotice?.(
          `Could not continue the cut-off answer (${errorMessage(error)}); it is kept as it was.`,
        );
      }
      break;
    }
    // After a lone closing marker the piece's content is a new answer, not the old one again.
    if (!piece.scratchpadClosed && probe !== "" && piece.content.trimStart().startsWith(probe)) {
      if (model) model.assistantPrefill = false;
      // The answer is not joined, but the request was made and its tokens spent.
      whole = { ...whole, usage: joinUsage(whole.usage, piece.usage) };
      continuations++;
      options.onNotice?.(
        "The model started the answer over instead of carrying it on (the server ignores a trailing " +
          "assistant message); the cut-off answer is kept.",
      );
      break;
    }
    shown.flush();
    whole = join(whole, piece, shown.restarted);
    continuations++;
  }
  return { ...whole, continuations };
}
