import type { EndpointCapabilities } from "@loopwright/negotiate";
import { isOverflow, type ModelCapabilities, modelCapabilitiesFor } from "@loopwright/negotiate";
import type { ChatClientLike, Turn, TurnUsage } from "@loopwright/stream";
import { errorMessage } from "./errors.js";
import { ownField, ownView } from "./own.js";
import { type BuildRequest, type RunTurnOptions, runTurn } from "./run-turn.js";

/** Options of `continueTurn`: `runTurn`'s, plus how many continuations to spend. */
export interface ContinueTurnOptions extends RunTurnOptions {
  /**
   * The most requests to spend carrying the answer on (default 1): a whole number from 0, else
   * `continueTurn` throws a `RangeError` before anything is sent.
   */
  maxContinuations?: number | undefined;
  /**
   * The context window in tokens, where known (the loop passes `contextLength`). A piece whose own
   * usage shows its prompt and answer reached it (reasoning left out: a continuation does not send
   * it) is not carried on again, with a notice: the next continuation could not fit.
   */
  contextWindow?: number | undefined;
}

/**
 * The prompt and answer a request's usage reports, where they reached `window` (`undefined` with no
 * window, no usage, or room left). Reasoning tokens are left out: a continuation, which sends the
 * prompt and the answer so far, does not send the reasoning again.
 */
export function windowTaken(usage: TurnUsage, window: number | undefined): number | undefined {
  const taken = usage.prompt + usage.completion - (ownField(usage, "reasoningTokens") ?? 0);
  return window !== undefined && window > 0 && usage.prompt > 0 && taken >= window ? taken : undefined;
}

/** A turn put back together from its pieces; `continuations` counts the extra requests. */
export interface ContinuedTurn extends Turn {
  continuations: number;
}

/**
 * How much of the opening of the answer so far a continuation must repeat, word for word, before it
 * parts from it, to be taken as the answer starting over: 16 characters, or 3 words. Less (`1`,
 * `Yes`, `The`) is begun the same way by real continuations (`The` → ` Th…`) too often to mean
 * anything.
 */
const RESTART_MIN_CHARS = 16;
const RESTART_MIN_WORDS = 3;

/**
 * Whether `soFar` is long enough that a piece repeating all of it shows something — an echo, or the
 * answer starting over — rather than how a real continuation may begin (`1` → `1, 12…`): at least
 * 16 characters or 3 words, leading white space aside.
 */
function showsRepeat(soFar: string): boolean {
  const opening = soFar.trimStart();
  const words = opening.split(/\s+/).filter((word) => word !== "").length;
  return opening.length >= RESTART_MIN_CHARS || words >= RESTART_MIN_WORDS;
}

/**
 * How a continuation's text stands to the answer so far, `soFar`, that was sent as its prefill:
 * - `echo`: it begins with the whole answer so far, exactly — a server that repeats the prefill
 *   before the new text (llama.cpp does) — and only what follows it is new; never when `echoes` is
 *   false (the model's `prefillEcho` latched off: the server showed it does not repeat the prefill);
 * - `restart`: it repeats the opening of the answer so far (at least 16 characters or 3 words,
 *   leading white space aside) and then parts from it, or ends before the whole of it — a server
 *   that ignored the trailing message and had the model begin again; with `echoes` false, also one
 *   that repeats the whole of such an answer so far;
 * - `continuation`: anything else, joined as it is;
 * - `open`: not known yet (`done` false): the text so far is still the answer so far over again.
 */
type PieceReading = "echo" | "restart" | "continuation" | "open";

function readPiece(soFar: string, text: string, done: boolean, echoes = true): PieceReading {
  if (echoes && soFar !== "" && text.startsWith(soFar)) return "echo";
  const lead = text.trimStart();
  const opening = soFar.trimStart();
  if (!done && (soFar.startsWith(text) || opening.startsWith(lead))) return "open";
  let same = 0;
  while (same < lead.length && same < opening.length && lead[same] === opening[same]) same++;
  return showsRepeat(opening.slice(0, same)) ? "restart" : "continuation";
}

/**
 * `readPiece`'s `open` for text that comes a delta at a time, kept up as it comes: each delta is
 * looked at once, so a piece streamed in many small deltas is read in time linear in its length
 * (`readPiece` on the whole text held at every delta took time quadratic in it: trimming and
 * comparing all of it again, 160 000 characters in 4-character deltas held the event loop 60 s).
 * `add` takes the next delta; `reset` starts over from text held (after a retract cut it short).
 */
function openingReader(soFar: string, echoes: boolean) {
  const opening = soFar.trimStart();
  let length = 0; // the length of the text held
  let agree = true; // the text held and `soFar` agree over the shorter of the two
  let leadAt = -1; // where the text held leaves its leading white space; -1 while it is all white space
  let leadAgree = true; // the text held from `leadAt` and `opening` agree over the shorter of the two
  const add = (text: string): void => {
    const at = length;
    length += text.length;
    if (agree && at < soFar.length) agree = soFar.startsWith(text.slice(0, soFar.length - at), at);
    if (leadAt < 0) {
      const first = text.search(/\S/); // \s is the white space trimStart takes off
      if (first >= 0) {
        leadAt = at + first;
        leadAgree = opening.startsWith(text.slice(first, first + opening.length));
      }
    } else if (leadAgree && at - leadAt < opening.length) {
      const from = at - leadAt;
      leadAgree = opening.startsWith(text.slice(0, opening.length - from), from);
    }
  };
  return {
    add,
    reset(held: string): void {
      length = 0;
      agree = true;
      leadAt = -1;
      leadAgree = true;
      add(held);
    },
    /** `readPiece(soFar, held, false, echoes) === "open"` for the text held. */
    open(): boolean {
      if (echoes && soFar !== "" && agree && length >= soFar.length) return false; // an echo
      return (
        (agree && length <= soFar.length) || leadAt < 0 || (leadAgree && length - leadAt <= opening.length)
      );
    },
  };
}

/**
 * A piece that echoed the answer so far with the echo taken off: its content (and the text as
 * written) from where the echo ends. After a lone closing marker the echo is in the piece's
 * reasoning, and is left there: `join` then adds the answer so far to the reasoning only once.
 */
function withoutEcho(piece: Turn, soFar: string): Turn {
  if (ownField(piece, "scratchpadClosed")) return piece;
  const content = piece.content.slice(soFar.length);
  const rest: Turn = { ...piece, content };
  delete rest.rawContent;
  const written = ownField(piece, "rawContent") ?? piece.content;
  const writtenRest = written.startsWith(soFar) ? written.slice(soFar.length) : written;
  if (writtenRest !== content) rest.rawContent = writtenRest;
  return rest;
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
  const uncached = sumOptional(ownField(a, "uncached"), ownField(b, "uncached"));
  const reasoningTokens = sumOptional(ownField(a, "reasoningTokens"), ownField(b, "reasoningTokens"));
  if (uncached !== undefined) usage.uncached = uncached;
  if (reasoningTokens !== undefined) usage.reasoningTokens = reasoningTokens;
  return usage;
}

/**
 * The turn so far with a continuation's piece after it. When a lone closing marker in the piece
 * ended a scratchpad the template opened (`scratchpadClosed`), the answer so far was scratchpad
 * too: the content is the piece's alone, and the answer so far joins the reasoning — unless the
 * piece had started it over or echoed it (`repeated`), whose own reasoning already holds it.
 */
function join(whole: Turn, piece: Turn, repeated = false): Turn {
  const closed = ownField(piece, "scratchpadClosed") === true;
  const joined: Turn = {
    content: closed ? piece.content : whole.content + piece.content,
    toolCalls: piece.toolCalls,
    usage: joinUsage(whole.usage, piece.usage),
    finishReason: piece.finishReason,
    reasoning: whole.reasoning + (closed && !repeated ? whole.content : "") + piece.reasoning,
  };
  if (closed || ownField(whole, "scratchpadClosed")) joined.scratchpadClosed = true;
  const reasoningField = ownField(whole, "reasoningField") ?? ownField(piece, "reasoningField");
  if (reasoningField) joined.reasoningField = reasoningField;
  // The text as written, for a call recovered from it (see `recoverWrittenCalls`).
  const written =
    (ownField(whole, "rawContent") ?? whole.content) + (ownField(piece, "rawContent") ?? piece.content);
  if (written !== joined.content) joined.rawContent = written;
  // What each request's usage discarded (each told as a notice when it came back), together.
  const discarded = [
    ...(ownField(whole, "discardedUsage") ?? []),
    ...(ownField(piece, "discardedUsage") ?? []),
  ];
  if (discarded.length > 0) joined.discardedUsage = discarded;
  const wholeTimings = ownField(whole, "timings");
  const pieceTimings = ownField(piece, "timings");
  if (wholeTimings && pieceTimings) {
    const timings: NonNullable<Turn["timings"]> = {};
    for (const key of ["prefillMs", "decodeMs", "draftTokens", "draftAccepted"] as const) {
      const sum = sumOptional(ownField(wholeTimings, key), ownField(pieceTimings, key));
      if (sum !== undefined) timings[key] = sum;
    }
    if (Object.keys(timings).length > 0) joined.timings = timings;
  }
  return joined;
}

/**
 * Wraps a continuation's callbacks. Its `onOutput`'s opening is held back while it is still the
 * answer so far over again (`readPiece` says `open`): once it holds the whole answer so far (an
 * echoing server), the echo is swallowed and the rest passed on; once it parts from it, it is
 * passed on whole, unless it repeated enough of the opening to be the answer starting over
 * (muted: never shown). What is still held when the piece ends is read the same way by `flush`: a
 * real continuation (a short piece that matched only part of the answer so far) is handed on, a
 * restart cut short is not.
 *
 * A lone closing marker in the piece (`onScratchpadClosed`) makes all of the answer so far, `soFar`
 * (drawn by the time the continuation starts), reasoning along with the piece's own text before
 * it: one `onRetract` takes back `soFar` and what of the piece was passed on, and `soFar` is told
 * to `onThinking` before the piece's reasoning — unless the piece had repeated the answer so far
 * (started it over, muted, or echoed it), whose reasoning already holds it. The stream's own
 * retract for the piece's text is then already counted, and what follows the marker is a new
 * answer, passed on as it comes. When the marker comes before the opening was decided (in the same
 * delta as the echo), the piece's reasoning is held until it shows whether it begins with the
 * answer so far.
 */
function holdOpening(
  soFar: string,
  onOutput: ((text: string) => void) | undefined,
  onRetract: ((chars: number) => void) | undefined,
  onThinking: ((text: string) => void) | undefined,
  onScratchpadClosed: (() => void) | undefined,
  echoes: boolean,
) {
  // Whether a piece that begins with all of the answer so far repeated it (echoed or started it
  // over) rather than carried it on: always on a server that may echo; else only for an answer so
  // far long enough to show a restart.
  const mayRepeat = echoes || showsRepeat(soFar);
  let held = "";
  let mode: "holding" | "passing" | "muted" = "holding";
  // Characters of this piece passed on: all a retract may take back (held or muted text was never shown).
  let passed = 0;
  let closed = false;
  let echoed = false;
  let repeated = false;
  // The marker came while the piece's opening was still undecided: its reasoning (the text before
  // the marker) says whether it echoed the answer so far, and is held in `thought` until it does.
  let awaiting = false;
  let thought = "";
  const settle = (echo: boolean) => {
    awaiting = false;
    repeated = echo;
    const out = thought;
    thought = "";
    if (!echo) onThinking?.(soFar);
    if (out !== "") onThinking?.(out);
  };
  const pass = (text: string) => {
    passed += text.length;
    if (text !== "") onOutput?.(text);
  };
  const reader = openingReader(soFar, echoes);
  const decide = (done: boolean) => {
    if (!done && reader.open()) return;
    const reading = readPiece(soFar, held, done, echoes);
    if (reading === "open") return;
    const out = held;
    held = "";
    if (reading === "restart") {
      mode = "muted"; // the answer over again: the reply so far is already on screen
    } else {
      mode = "passing";
      echoed = reading === "echo";
      pass(echoed ? out.slice(soFar.length) : out);
    }
  };
  return {
    onOutput: (text: string) => {
      if (awaiting) settle(false); // all the text before the marker has come, and it was no echo
      if (mode === "passing") return pass(text);
      if (mode === "muted") return;
      held += text;
      reader.add(text);
      decide(false);
    },
    onScratchpadClosed: () => {
      if (closed) return;
      closed = true;
      repeated = mode === "muted" || echoed;
      onScratchpadClosed?.();
      const chars = soFar.length + passed;
      if (chars > 0) onRetract?.(chars);
      if (mode === "holding" && soFar !== "" && mayRepeat) awaiting = true;
      else if (!repeated && soFar !== "") onThinking?.(soFar);
      held = "";
      passed = 0;
      mode = "passing";
    },
    // The piece's answer so far was reasoning: take back only what of it was passed on.
    onRetract: (chars: number) => {
      if (closed) return; // counted when the marker closed the scratchpad
      const shown = Math.min(chars, passed);
      const kept = Math.max(0, held.length - (chars - shown));
      if (kept < held.length) {
        held = held.slice(0, kept);
        reader.reset(held);
      }
      passed -= shown;
      if (shown > 0) onRetract?.(shown);
    },
    onThinking: (text: string) => {
      if (!awaiting) return onThinking?.(text);
      thought += text;
      if (thought.startsWith(soFar)) settle(true);
      else if (!soFar.startsWith(thought)) settle(false);
    },
    flush: () => {
      if (awaiting) settle(false);
      if (mode === "holding") decide(true);
      held = "";
    },
    /** Whether the piece had repeated the answer so far when a lone closing marker ended its scratchpad. */
    get repeated() {
      return repeated;
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
 * call comes back as it was. A server that repeats the prefill before the new text (llama.cpp
 * b9749 does: its first content delta is the whole answer so far with the first new token glued
 * on) is an echo: a piece that begins with the whole answer so far, exactly, has that taken off
 * and the rest joined, and its echo is never passed to `onOutput` — while the model's
 * `prefillEcho` is open (`true`, the start). The first piece read as a plain continuation (neither
 * an echo nor a restart) with some text in it shows the server does not echo, and latches
 * `prefillEcho` off for the (endpoint, model); from then on a piece that begins with the answer so
 * far is the model's own text: joined whole and passed to `onOutput` whole when the answer so far is
 * short (`1` → `1, 12…` gives `11, 12…`), read as a restart when it is long enough to show one (16
 * characters or 3 words, as below). Before that the two cannot be told apart: the first
 * continuation on a model not met before that begins with all of a short answer so far still loses
 * that repeat (`1, 12…`). `prefillEcho` is left as it is by an echo, by a piece that is empty or
 * only white space (it shows nothing either way, and a latch that never reopens closes only on a
 * clear sign), by a piece after a lone closing marker (below; its opening is reasoning, and counts
 * as a repeat of the answer so far only while `prefillEcho` is open or the answer so far is long
 * enough to show a restart), and by a restart (which latches `assistantPrefill` off, so there is no
 * next continuation to read). Whether the model carries on is
 * latched per (endpoint, model) as `assistantPrefill`: a 400 or 422 for the request latches it off,
 * and so does a continuation that starts the answer over (how a server that ignores the trailing
 * message shows itself): one that repeats at least 16 characters or 3 words of the opening of the
 * answer so far, then parts from it or ends before the whole of it — a shorter repeat (`The` →
 * ` Th…`) is how real continuations begin too often to mean anything. That piece is not joined,
 * but its request counts in `continuations` and its tokens in `usage`, since they were spent, and
 * its text is never passed to `onOutput`: a continuation's opening is held back while it is the
 * answer so far over again. Either way, and on any other failure
 * short of a stop — an overflow included, which latches nothing — the cut-off answer is kept with
 * a notice. A stop rejects with the signal's reason. A continuation is read as answer even under
 * `startInReasoning`: the prefilled answer is already past the scratchpad the template opened.
 * A continuation cut off again before it added any text of its own (a server with no room left
 * stops so) is not carried on further, with a notice: another request would come back the same.
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
  // Its own fields only (never one a polluted Object.prototype holds).
  return carryOn(client, supports, build, turn, ownView(options));
}

/**
 * `continueTurn`, telling `spent` each piece's usage as it comes back (joined or not): what the loop
 * counts in the run's usage when a stop ends the continuation, which throws the pieces away.
 */
export async function carryOn(
  client: ChatClientLike,
  supports: EndpointCapabilities,
  build: BuildRequest,
  turn: Turn,
  options: ContinueTurnOptions,
  spent?: (usage: TurnUsage) => void,
): Promise<ContinuedTurn> {
  const max = options.maxContinuations ?? 1;
  // As the loop's config.maxContinuations: NaN, -1 or "abc" spent none silently, 1.5 spent two, "2" two.
  if (!(typeof max === "number" && Number.isInteger(max) && max >= 0)) {
    throw new RangeError(
      `continueTurn: maxContinuations must be a whole number from 0, got ${typeof max === "string" ? JSON.stringify(max) : String(max)}.`,
    );
  }
  const model: ModelCapabilities | undefined = options.model
    ? modelCapabilitiesFor(supports, options.model)
    : undefined;
  let whole = turn;
  let continuations = 0;
  while (continuations < max && isContinuable(whole) && model?.assistantPrefill !== false) {
    const soFar = whole.content;
    // Read once per piece: what this piece shows latches only after it is read.
    const echoes = model?.prefillEcho !== false;
    const shown = holdOpening(
      soFar,
      options.onOutput,
      options.onRetract,
      options.onThinking,
      options.onScratchpadClosed,
      echoes,
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
          onThinking: shown.onThinking,
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
    spent?.(piece.usage);
    // After a lone closing marker the piece's content is a new answer, not the old one again; the
    // answer so far is in its reasoning when the piece started it over or echoed it. Such a piece
    // leaves `prefillEcho` as it was: what came before the marker is reasoning, read as above.
    if (ownField(piece, "scratchpadClosed")) {
      shown.flush();
      const repeated =
        shown.repeated ||
        ((echoes || showsRepeat(soFar)) &&
          piece.reasoning.startsWith(soFar) &&
          (ownField(piece, "rawContent") ?? "").startsWith(soFar));
      whole = join(whole, piece, repeated);
      continuations++;
      continue;
    }
    const reading = readPiece(soFar, piece.content, true, echoes);
    if (reading === "restart") {
      // Latches assistantPrefill off: whether the server echoes no longer matters, and is not learned.
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
    // A plain continuation with some text in it shows the server does not repeat the prefill: from
    // now on a piece from this model that begins with the answer so far is the model's own text.
    // An empty or blank piece shows nothing (a server may send nothing at all, echo included).
    if (model && reading === "continuation" && piece.content.trim() !== "") model.prefillEcho = false;
    // A server that echoes the prefill (llama.cpp) sends the answer so far again before the new text.
    const added = reading === "echo" ? withoutEcho(piece, soFar) : piece;
    whole = join(whole, added);
    continuations++;
    // Cut off before a token of its own (a server out of room stops so): another request would
    // come back the same, and a run allowed many continuations spent them all on nothing.
    if (added.content === "" && added.reasoning === "" && continuations < max && isContinuable(whole)) {
      options.onNotice?.(
        "The continuation was cut off before it added anything (the server has no room left to carry the " +
          "answer on); the cut-off answer is kept as it was.",
      );
      break;
    }
    const taken = windowTaken(piece.usage, options.contextWindow);
    if (taken !== undefined && continuations < max && isContinuable(whole)) {
      options.onNotice?.(
        `The continuation filled the context window (its prompt and answer took ${taken} of ` +
          `${options.contextWindow} tokens); the answer is not carried on further: another continuation cannot fit.`,
      );
      break;
    }
  }
  return { ...whole, continuations };
}
