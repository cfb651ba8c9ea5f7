import { ContextOverflow } from "@loopwright/negotiate";
import { describeValue, SideTaskError } from "./errors.js";
import { keepEndsEscaped } from "./headers.js";

/**
 * Characters a token is taken to hold when sizing the summariser's input against a window with
 * nothing measured: fewer than the usual four, since a stretch is tool results, JSON and code,
 * which tokenise densely, and a request refused as too big costs the whole compaction.
 */
export const SUMMARY_CHARS_PER_TOKEN = 3;

/** Tokens kept free for the chat template's own text around the two messages. */
const TEMPLATE_TOKENS = 64;

/** The fewest characters worth asking a summary of; a window leaving less is not tried. */
export const MIN_SUMMARY_INPUT = 400;

/** What an overflow refusal says about the window: its size and the prompt that did not fit, where it says. */
export interface OverflowFacts {
  /** The context window in tokens. */
  window: number;
  /** The refused prompt's size in tokens, where the server said. */
  prompt?: number;
}

/**
 * What a refused side task's error says about the window: the window and the refused prompt as
 * `@loopwright/negotiate`'s `ContextOverflow.fromError` reads them (llama.cpp's `n_ctx` and
 * `n_prompt_tokens` in its body, else the sizes written in the message in the servers' words it
 * knows: llama.cpp's, vLLM's, SGLang's, OpenAI's, LM Studio's, OpenRouter's, Mistral's, TGI's,
 * Cerebras's), through the `cause` chain (a `SideTaskError` holds
 * the SDK's error). `undefined` where no window is named.
 */
export function overflowFacts(error: unknown): OverflowFacts | undefined {
  const { window, promptTokens } = ContextOverflow.fromError(error);
  if (window === undefined) return undefined;
  return promptTokens === undefined ? { window } : { window, prompt: promptTokens };
}

/**
 * The reply tokens a window of `window` tokens is budgeted to leave: the `ceiling`, held to half the
 * window. What {@link inputBudget} sizes the input beside, and so the `max_tokens` to send with it: a
 * server that counts prompt plus `max_tokens` against the window (vLLM) refuses a larger one.
 */
export function replyRoom(window: number, ceiling: number): number {
  return Math.max(1, Math.min(ceiling, Math.floor(window / 2)));
}

/**
 * The characters of user turn that fit a window of `window` tokens beside `systemChars` of system
 * prompt and a reply of {@link replyRoom} tokens, at `charsPerToken`.
 */
export function inputBudget(
  window: number,
  ceiling: number,
  systemChars: number,
  charsPerToken: number,
): number {
  const reply = replyRoom(window, ceiling);
  const tokens = window - reply - TEMPLATE_TOKENS - Math.ceil(systemChars / charsPerToken);
  // A twentieth short of the estimate: the divisor is an average and the template is a guess.
  return Math.max(0, Math.floor(tokens * charsPerToken * 0.95));
}

/** Checks an optional positive whole number option, naming it; `null` reads as absent. */
export function checkWhole(value: unknown, name: string, where: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new SideTaskError(
      "invalid-input",
      `${where}: ${name} must be a whole number of 1 or more, and was ${describeValue(value)}.`,
    );
  }
  return value;
}

/**
 * `text` (its header-like lines already escaped) cut in the middle to at most `max` characters (for
 * a `max` of 60 or more), the cut marked with `what` after the number of characters left out, and
 * the line either side of the cut escaped where the cut fell inside it (`keepEndsEscaped`).
 */
export function middleCut(text: string, max: number, what = "characters left out"): string {
  if (text.length <= max) return text;
  // The marker, and a backslash either side that escaping a cut line can add.
  const mark = `\n[… ${text.length} ${what} …]\n`.length + 2;
  return keepEndsEscaped(text, Math.max(0, Math.floor((max - mark) / 2)), what);
}

const SEPARATOR = "\n\n";
/** The least room a block is cut down to rather than left out: its marker and some text either side. */
const MIN_CUT = 100;
/** How a block of the stretch cut in its middle says so. */
const ENTRY_CUT = "characters of this entry left out";

function marker(entries: number, chars: number): string {
  const what = entries === 1 ? "entry" : "entries";
  return `[… ${entries} ${what} of the conversation left out here (${chars.toLocaleString("en-US")} characters) to fit the model's window …]`;
}

function cutEntry(block: string, max: number): string {
  return middleCut(block, max, ENTRY_CUT);
}

/**
 * The blocks of a stretch joined, held to `room` characters: whole where they fit; otherwise the
 * question the stretch opens with (its first `[user]` block, else its first block), a marker saying
 * how many entries and characters were left out, and as many of the newest blocks as fit (the newest
 * cut in the middle where even it alone does not). Where that question is the last block, the marker
 * comes before it, since every entry left out did. The question is cut to a quarter of the room
 * while newer blocks compete for it, and to all the room they leave where every block after it is
 * shown (it closes the stretch, or they are short). A block cut in its middle says so in its own
 * line (`[… 212 characters of this entry left out …]`), and the line either side of that cut is
 * escaped where the cut split it (`keepEndsEscaped`); the marker for dropped entries appears only
 * where one was. Never longer than `room` where `room` holds the marker and a little more.
 */
export function fitStretch(blocks: readonly string[], room: number): string {
  const whole = blocks.join(SEPARATOR);
  if (whole.length <= room) return whole;
  const found = blocks.findIndex((block) => block.startsWith("[user]\n"));
  const q = Math.max(found, 0);
  const first = blocks[q] as string;
  let question = cutEntry(first, Math.floor(room / 4));
  // The marker and its separator before its numbers are known: the widest they can be.
  const markRoom = marker(blocks.length, whole.length).length + SEPARATOR.length;
  let left = room - question.length - markRoom - SEPARATOR.length;
  // Gathered newest first and turned round once: putting each at the front moved every block
  // already kept, quadratic in the blocks kept.
  const tail: string[] = [];
  let newestCut = false;
  for (let i = blocks.length - 1; i > q; i--) {
    const block = blocks[i] as string;
    const cost = block.length + (tail.length > 0 ? SEPARATOR.length : 0);
    if (cost <= left) {
      tail.push(block);
      left -= cost;
      continue;
    }
    // The newest entry is kept whatever its size, cut in the middle to what is left.
    if (tail.length === 0 && left >= MIN_CUT) {
      tail.push(cutEntry(block, left));
      newestCut = true;
    }
    break;
  }
  tail.reverse();
  const omitted = blocks.length - 1 - tail.length;
  const marked = omitted > 0 ? markRoom : 0;
  if (!newestCut && tail.length === blocks.length - 1 - q) {
    // Every block after the question is shown whole: the question takes the room they leave.
    const after = tail.length > 0 ? SEPARATOR.length + tail.join(SEPARATOR).length : 0;
    question = cutEntry(first, room - after - marked);
  } else if (newestCut && omitted === 0) {
    // The question and the newest block alone, no marker between them: the newest takes its room too.
    tail[0] = cutEntry(blocks.at(-1) as string, room - question.length - SEPARATOR.length);
  }
  const shown = question.length + tail.reduce((sum, block) => sum + block.length, 0);
  const gone = Math.max(0, blocks.reduce((sum, block) => sum + block.length, 0) - shown);
  if (omitted === 0) return [question, ...tail].join(SEPARATOR);
  // The marker stands where entries went: before a question that closes the stretch (all of them
  // came before it), else after the question (those before it, if any, and those after).
  const mark = marker(omitted, gone);
  return (q === blocks.length - 1 ? [mark, question] : [question, mark, ...tail]).join(SEPARATOR);
}
