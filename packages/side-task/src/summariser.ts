import type { Endpoint } from "@loopwright/client";
import { REFUSAL_CHARS } from "./ask.js";
import { checkOptions, checkTarget, type SideTaskOptions, sideCall } from "./call.js";
import { describeValue, errorText, isPlainObject, SideTaskError } from "./errors.js";
import { escapeHeaders, headerName, keepEndsEscaped } from "./headers.js";
import { ownField, ownView } from "./own.js";
import {
  checkWhole,
  fitStretch,
  inputBudget,
  MIN_SUMMARY_INPUT,
  middleCut,
  overflowFacts,
  replyRoom,
  SUMMARY_CHARS_PER_TOKEN,
} from "./summary-budget.js";
import { headOf, quotedText } from "./text.js";

/** The summariser's reply ceiling when none is given. */
export const SUMMARY_MAX_TOKENS = 1024;

/** The most characters of one message the summariser is shown; a longer one is cut in the middle. */
export const SUMMARY_MESSAGE_CHARS = 4000;

/** The system prompt the summariser writes with. */
export const SUMMARISER_SYSTEM = [
  "You keep the working notes of a conversation between a user and an assistant that uses tools.",
  "The conversation below is being removed to save space; your notes replace it, so write down",
  "everything the assistant will need to carry on: what the user asked for and their constraints,",
  "decisions made, facts learned from tool results (names, paths, values, errors), what is done and",
  "what is still open. Be concise and concrete. Write only the notes, with no preamble.",
].join(" ");

/** A transcript message as the summariser reads it (structurally any chat message). */
export interface SummaryMessageLike {
  role: string;
  content?: unknown | undefined;
  name?: string | undefined;
  tool_call_id?: string | undefined;
  tool_calls?:
    | readonly { function?: { name?: string | undefined; arguments?: string | undefined } | undefined }[]
    | null
    | undefined;
}

/** The narrow `AbortSignal` shape ledger's compaction hands a summariser. */
export interface SummarySignalLike {
  readonly aborted: boolean;
}

/** A summarise function as `@loopwright/ledger`'s `runCompaction` and `compactTranscript` take one. */
export type SummariseFunction = (
  messages: readonly SummaryMessageLike[],
  previous: string | undefined,
  signal?: SummarySignalLike,
) => Promise<string | undefined>;

/** Options of `summariser`: those of every side task, the system prompt, and how much it may be shown. */
export interface SummariserOptions extends SideTaskOptions {
  /** Replaces `SUMMARISER_SYSTEM`. */
  system?: string | null | undefined;
  /**
   * The most characters of user turn (the notes so far and the stretch) one summary is asked with;
   * a longer stretch keeps the question it opens with and its newest messages, and its middle is
   * left out with a marker. Default: what fits `contextLength` where that is given, else no limit
   * until the server refuses the request as too big (then what fits the window it names).
   */
  inputChars?: number | null | undefined;
  /** The compaction model's context window in tokens, where the host knows it: sizes `inputChars`. */
  contextLength?: number | null | undefined;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        // A part's own fields: never a text or type only a polluted Object.prototype holds.
        const text = ownField(part, "text");
        if (typeof text === "string") return text;
        return ownField(part, "type") === "image_url" ? "[image]" : "";
      })
      .join("\n");
  }
  return "";
}

/**
 * A message's text as a block shows it: every line that reads like one of the transcript's block
 * headers (`[user]`, `[tool result from x]`, `[assistant called y]`) with a backslash before its
 * bracket, so text a tool brought back cannot pass itself off as the user or the assistant; then
 * cut in the middle to `SUMMARY_MESSAGE_CHARS`, the line either side of the cut escaped too (the cut
 * can make a header-like line of part of one).
 */
function shown(text: string): string {
  const escaped = escapeHeaders(text);
  return escaped.length <= SUMMARY_MESSAGE_CHARS
    ? escaped
    : keepEndsEscaped(escaped, Math.floor(SUMMARY_MESSAGE_CHARS / 2));
}

/** A call's arguments as stored: the model's JSON text, or the object a host parsed it into. */
function argumentsText(args: unknown): string {
  if (typeof args === "string") return args;
  if (args === undefined || args === null) return "";
  try {
    return JSON.stringify(args) ?? "";
  } catch {
    return "";
  }
}

/**
 * The characters the stretch holds, whole, counted as the ledger's `messageChars` counts a message:
 * its content's text (a string, or the text of each part; an image or other media part not at
 * all), its replayed reasoning, and each tool call's name and arguments (arguments a host parsed
 * into an object counted as their JSON). A message that throws when
 * read counts what its blocks show.
 */
function stretchChars(messages: readonly SummaryMessageLike[], blocks: readonly string[]): number {
  let chars = 0;
  try {
    for (const message of messages) {
      if (!isPlainObject(message)) continue;
      const {
        content,
        reasoning_content: replayed,
        reasoning,
      } = ownView(message) as SummaryMessageLike & {
        reasoning_content?: unknown;
        reasoning?: unknown;
      };
      if (typeof content === "string") chars += content.length;
      else if (Array.isArray(content)) {
        for (const part of content as readonly unknown[]) {
          const text = ownField(part, "text");
          if (typeof text === "string") chars += text.length;
        }
      }
      if (typeof replayed === "string") chars += replayed.length;
      else if (typeof reasoning === "string") chars += reasoning.length;
      const calls = ownField(message, "tool_calls");
      for (const call of Array.isArray(calls) ? calls : []) {
        const name = callField(call, "name");
        if (typeof name === "string") chars += name.length;
        chars += argumentsText(callField(call, "arguments")).length;
      }
    }
    return chars;
  } catch {
    return blocks.reduce((sum, block) => sum + block.length, 0);
  }
}

/** The folded stretch as plain text, one block per message, for the summariser to read. */
export function transcriptText(messages: readonly SummaryMessageLike[]): string {
  return transcriptBlocks(messages).join("\n\n");
}

/**
 * The blocks of {@link transcriptText}: one a message, and one a call it made. Throws `SideTaskError`
 * (`invalid-input`) naming the message's index for a message whose role is not a string (an object
 * without a prototype threw a bare TypeError from `String()`), or one that throws when read (a getter).
 */
function transcriptBlocks(messages: readonly SummaryMessageLike[]): string[] {
  const blocks: string[] = [];
  for (let index = 0; index < messages.length; index++) {
    try {
      messageBlocks(messages[index], index, blocks);
    } catch (error) {
      if (SideTaskError.isInstance(error)) throw error;
      throw new SideTaskError(
        "invalid-input",
        `summariser: message ${index} of the messages to fold could not be read (${errorText(error)}).`,
        { cause: error },
      );
    }
  }
  return blocks;
}

/** `call.function[name]`, each read where the host's object holds it (never from Object.prototype). */
function callField(call: unknown, name: "name" | "arguments"): unknown {
  return ownField(ownField(call, "function"), name);
}

/** Adds the blocks of the message at `index` to `blocks`: none for an entry that is not a message. */
function messageBlocks(entry: SummaryMessageLike | undefined, index: number, blocks: string[]): void {
  if (!isPlainObject(entry) || entry === undefined) return;
  // The message's own fields: never a role, name or tool call only a polluted Object.prototype holds.
  const message = ownView(entry);
  const given: unknown = message.role;
  if (typeof given !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `summariser: message ${index} of the messages to fold needs its role as a string ("user", "assistant", "tool"), and was ${describeValue(given)}.`,
    );
  }
  const text = shown(contentText(message.content).trim());
  const role = headerName(given);
  if (role === "tool") {
    const named = typeof message.name === "string" ? headerName(message.name) : "";
    const name = named ? ` from ${named}` : "";
    blocks.push(`[tool result${name}]\n${text}`);
    return;
  }
  if (text) blocks.push(`[${role}]\n${text}`);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const call of calls) {
    const named = callField(call, "name");
    const name = (typeof named === "string" && headerName(named)) || "a tool";
    blocks.push(`[${role} called ${name}]\n${shown(argumentsText(callField(call, "arguments")))}`);
  }
}

/**
 * A reply cut off (`finish_reason: "length"`) before its ceiling: the window it points at, what
 * filled it, and whether that window is known (`inferred: false`) or only prompt plus completion.
 */
interface RanOut {
  window: number;
  prompt: number;
  completion: number;
  /**
   * `false`: prompt plus completion reached a window known before the reply (given as
   * `contextLength`, named by a refusal, or the one this summary was asked again within), which is
   * evidence the window ran out. `true`: the reply only stopped short of its `max_tokens`, with no
   * window reached; the window is prompt plus completion, a guess (a server's own cap on a reply, or
   * a time limit, stops it the same way).
   */
  inferred: boolean;
  /**
   * `true`: prompt plus completion reached a window that was itself only guessed from an earlier
   * stop short of the ceiling (`inferred: false` then only says two stops agree on it).
   */
  guessed?: boolean;
}

/**
 * Whether a reply cut off (`finish_reason: "length"`) ran out of the model's window rather than
 * into the `max_tokens` it was sent, by the usage the server counted: prompt plus completion
 * reaching the known `window` (evidence), or else a completion stopped short of `maxSent` (a
 * ceiling stops it at exactly that many), read as prompt plus completion filling a window none
 * knew (`inferred`). llama.cpp takes any prompt that fits and writes until its window is full, so a
 * summary asked with the whole ceiling there ends this way. Where `guessed`, `window` is only a guess
 * read from an earlier stop: a reply that spent its whole ceiling hit the ceiling, whatever it
 * reached (the ask sized the input and `max_tokens` to fill that guess between them). `undefined`
 * for a reply that finished, one that spent its whole ceiling short of any known window, or no usage.
 */
function outOfWindow(
  reply: { finishReason: string | undefined; usage?: { prompt?: number; completion?: number } },
  window: number | undefined,
  maxSent: number,
  guessed = false,
): RanOut | undefined {
  if (reply.finishReason !== "length") return undefined;
  const prompt = reply.usage?.prompt;
  const completion = reply.usage?.completion;
  if (prompt === undefined || completion === undefined || prompt < 1) return undefined;
  if (guessed && completion >= maxSent) return undefined;
  if (window !== undefined && prompt + completion >= window) {
    return { window, prompt, completion, inferred: false, ...(guessed ? { guessed } : {}) };
  }
  if (completion >= maxSent) return undefined;
  return { window: prompt + completion, prompt, completion, inferred: true };
}

/**
 * A summarise function for `@loopwright/ledger`'s compaction, written by a side task.
 *
 * For `runCompaction` and `compactTranscript`: it shows `model` at `endpoint` the folded stretch as text (each message cut to
 * `SUMMARY_MESSAGE_CHARS`), with the earlier notes to continue where there are some, and answers
 * the new notes. A line that reads like a block header (`[user]`, also with blanks or invisible
 * characters around it, or made one by a cut) is shown escaped (`\[user]`), and a tool name goes into
 * its header on one line without brackets, cut to 64 characters: a tool result cannot pose as the
 * user. Defaults: ceiling `SUMMARY_MAX_TOKENS`, temperature 0.3, the no-thinking hints.
 * The whole user turn is held to `inputChars` (else what fits `contextLength`): the stretch keeps
 * its opening question and its newest messages, its middle replaced by a marker. With neither, a
 * request the server refuses as too big is cut to the window the refusal names and sent once more,
 * and the function's later summaries start within that size. A reply that ran out of the window
 * rather than into its ceiling — `finish_reason: "length"` with, by the server's usage, prompt plus
 * completion reaching the known window (`contextLength`, or one a refusal named; llama.cpp takes any
 * prompt that fits and writes until its window is full) — is read the same way: its notice says the
 * window ran out, the input is cut to that window and asked once more, and later summaries start
 * within it. A `length` reply short of the `max_tokens` sent that reaches no known window is only a
 * guess at the window (prompt plus completion; a hosted model's own cap on a reply, or a time limit,
 * stops it the same way): that summary is cut to it and asked once more, its notice saying it was
 * read from the stop, and nothing is remembered — later summaries are sized as before; a second
 * reply that spends the `max_tokens` it was sent there hit its ceiling, not the guessed window (its
 * input and reply were sized to fill the guess between them). One summary is asked again at most once. Where the window is known
 * (`contextLength`, or a refusal), the reply asked for is the ceiling held to half the window, the
 * room the input was sized beside, so prompt plus `max_tokens` stays inside it (vLLM refuses more).
 *
 * The function it returns never throws for a failed side task: it answers `undefined` (which the
 * compaction reads as "no fold", leaving the transcript as it was) and tells `onNotice` why,
 * including for a summary cut off at the ceiling and an empty one (an `onNotice` that throws changes
 * nothing). It throws `SideTaskError` (`invalid-input`) only
 * for messages that are not an array, and for a message whose role is not a string or that throws
 * when read (a getter), naming its index; an entry that is not an object is passed over. `summariser`
 * itself throws `invalid-input` for a missing endpoint or model, or options that are not an object
 * or hold an option of the wrong type (a non-function `onNotice`, a `signal` that is not one, a
 * `system` that is not a string, an `inputChars` or `contextLength` that is not a whole number of 1
 * or more; `null` in any of these reads as absent).
 */
export function summariser(
  endpoint: Endpoint,
  model: string,
  options: SummariserOptions = {},
): SummariseFunction {
  // Read as the host wrote them: never a field only a polluted Object.prototype holds.
  options = ownView(options);
  const target = ownView(endpoint);
  checkTarget(target, model, "summariser");
  checkOptions(options, "summariser");
  const { system: givenSystem, inputChars, contextLength, ...rest } = options;
  if (givenSystem != null && typeof givenSystem !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `summariser: system must be a string ("" for none), and was ${describeValue(givenSystem)}.`,
    );
  }
  // Absent (null reads as absent): the summariser's own.
  const system = givenSystem ?? SUMMARISER_SYSTEM;
  const givenBudget = checkWhole(inputChars, "inputChars", "summariser");
  const window = checkWhole(contextLength, "contextLength", "summariser");
  // The reply's room: the ceiling sent, or the task's own where none is sent.
  const ceiling = options.maxTokens || SUMMARY_MAX_TOKENS;
  const budget =
    givenBudget ??
    (window === undefined ? undefined : inputBudget(window, ceiling, system.length, SUMMARY_CHARS_PER_TOKEN));
  // What an overflow refusal taught this function: its later summaries start within it.
  let learned: number | undefined;
  let learnedWindow: number | undefined;
  return async (messages, previous, signal) => {
    if (!Array.isArray(messages)) {
      throw new SideTaskError(
        "invalid-input",
        `summariser: the messages to fold must be an array, and were ${describeValue(messages)}.`,
      );
    }
    // A host's notice sink that throws changes nothing: the answer is still `undefined`, not its error.
    const notice = (text: string) => {
      try {
        options.onNotice?.(text);
      } catch {
        // ignored: the notice was the host's to take
      }
    };
    const blocks = transcriptBlocks(messages);
    if (!blocks.join("").trim()) return undefined;
    // The notes too are shown escaped: a summary may quote a header-like line it was shown.
    const notes = typeof previous === "string" ? escapeHeaders(previous.trim()) : "";
    /** The user turn, held to `room` characters where given: the notes take at most half of it. */
    const compose = (room: number | undefined): string => {
      const kept = room === undefined ? notes : middleCut(notes, Math.floor(room / 2));
      const lead = kept
        ? `Notes so far:\n${kept}\n\nContinue these notes with what happened next:\n\n`
        : "The conversation to take notes of:\n\n";
      return lead + (room === undefined ? blocks.join("\n\n") : fitStretch(blocks, room - lead.length));
    };
    const callerSignal = options.signal ?? (signal instanceof AbortSignal ? signal : undefined);
    // The compaction's signal in the narrow shape it is typed as ({ aborted }, another realm's or a
    // polyfill's AbortSignal): read before each request, so an abandoned compaction sends nothing more.
    const narrow =
      options.signal == null && signal != null && !(signal instanceof AbortSignal) ? signal : undefined;
    /**
     * Asks for the summary of `input`. Where the window is known, the reply asked for is the room
     * the input was budgeted beside, not the whole ceiling: vLLM refuses prompt + max_tokens past it.
     */
    const send = (input: string, windowTokens: number | undefined) =>
      narrow?.aborted === true
        ? Promise.reject(new SideTaskError("aborted", "summariser: abandoned by the caller's signal."))
        : sideCall(
            endpoint,
            model,
            system,
            input,
            {
              ...rest,
              ...(windowTokens === undefined ? {} : { maxTokens: replyRoom(windowTokens, ceiling) }),
              ...(callerSignal ? { signal: callerSignal } : {}),
            },
            { maxTokens: SUMMARY_MAX_TOKENS, temperature: 0.3 },
            "summariser",
          );
    const tooSmall = (room: number, tokens?: number) => {
      notice(
        `The window of ${model}${tokens ? ` (${tokens} tokens)` : ""} leaves ${room} characters for the conversation, too few to summarise it; the transcript was left as it was.`,
      );
      return undefined;
    };
    const start = learned === undefined ? budget : Math.min(learned, budget ?? learned);
    const knownWindow =
      learnedWindow === undefined ? window : Math.min(learnedWindow, window ?? learnedWindow);
    if (start !== undefined && start < MIN_SUMMARY_INPUT) return tooSmall(start, window);
    try {
      let input = compose(start);
      // The window the request was sized to (undefined: none known), and whether it was asked again.
      let asked = knownWindow;
      // Whether `asked` is only a guess read from a stop (not `contextLength`, a refusal or a learned window).
      let askedGuessed = false;
      let again = false;
      let reply: Awaited<ReturnType<typeof send>>;
      /**
       * Sizes the user turn to a window of `tokens` (the chars a token held measured against
       * `promptTokens` where the server counted the prompt just sent) and, where `keep`, remembers
       * it for this function's later summaries (a window a refusal named or a reply reached, never
       * one only guessed); `undefined` where too little room is left (said so).
       */
      const refit = (tokens: number, promptTokens: number | undefined, keep: boolean): string | undefined => {
        const sent = system.length + input.length;
        const perToken = promptTokens
          ? Math.min(SUMMARY_CHARS_PER_TOKEN * 2, sent / promptTokens)
          : SUMMARY_CHARS_PER_TOKEN;
        const room = Math.min(inputBudget(tokens, ceiling, system.length, perToken), input.length - 1);
        if (room < MIN_SUMMARY_INPUT) {
          tooSmall(room, tokens);
          return undefined;
        }
        if (keep) {
          learned = room;
          learnedWindow = Math.min(tokens, learnedWindow ?? tokens);
        }
        asked = tokens;
        askedGuessed = !keep;
        again = true;
        input = compose(room);
        return input;
      };
      try {
        reply = await send(input, asked);
      } catch (error) {
        // Refused as too big: sized to the window the refusal names (measured against the prompt it
        // counted, where it says), and asked once more.
        const facts =
          SideTaskError.isInstance(error) && error.code === "request-failed"
            ? overflowFacts(error)
            : undefined;
        if (facts === undefined) throw error;
        if (refit(facts.window, facts.prompt, true) === undefined) return undefined;
        notice(
          `The conversation to summarise did not fit ${model}'s window (${facts.window} tokens); its middle was left out and the summary asked for again.`,
        );
        reply = await send(input, asked);
      }
      /** The `max_tokens` the last request was sent with. */
      const maxSent = () => (asked === undefined ? ceiling : replyRoom(asked, ceiling));
      let ranOut = outOfWindow(reply, asked, maxSent());
      if (ranOut !== undefined && !again) {
        // llama.cpp takes a prompt that fits and writes until its window is full: not the ceiling.
        // Cut to that window and asked once more, as for a refusal. A window only guessed from a
        // stop short of the ceiling (a hosted model's own cap on a reply stops it so too) sizes this
        // summary alone: later ones start as they would have.
        const sentCeiling = maxSent();
        if (refit(ranOut.window, ranOut.prompt, !ranOut.inferred) === undefined) return undefined;
        notice(
          ranOut.inferred
            ? `The summary from ${model} ran out of its window (${ranOut.window} tokens: ${ranOut.prompt} of prompt, ${ranOut.completion} of reply), as read from its stop short of the ${sentCeiling}-token ceiling (no known window was reached); its input was cut to fit and the summary asked for again, and later summaries are not held to that window.`
            : `The summary from ${model} ran out of its window (${ranOut.window} tokens: ${ranOut.prompt} of prompt, ${ranOut.completion} of reply); its input was cut to fit and the summary asked for again.`,
        );
        reply = await send(input, asked);
        ranOut = outOfWindow(reply, asked, maxSent(), askedGuessed);
      }
      if (reply.finishReason === "length") {
        notice(
          ranOut === undefined
            ? `The summary from ${model} was cut off at its reply ceiling; the transcript was left as it was.`
            : ranOut.inferred
              ? `The summary from ${model} stopped ${ranOut.completion} tokens in, short of its ${maxSent()}-token ceiling and of any window known (${ranOut.prompt} tokens of prompt), before it was finished; the transcript was left as it was.`
              : ranOut.guessed
                ? `The summary from ${model} ran out of its window again (${ranOut.window} tokens, as read from its stops short of the ceiling: ${ranOut.prompt} of prompt, ${ranOut.completion} of reply) before it was finished; the transcript was left as it was.`
                : `The summary from ${model} ran out of its window (${ranOut.window} tokens) before it was finished; the transcript was left as it was.`,
        );
        return undefined;
      }
      if (reply.text === "" && reply.refusal !== undefined) {
        notice(
          `${model} refused to write the summary: ${quotedText(headOf(reply.refusal, REFUSAL_CHARS))}; the transcript was left as it was.`,
        );
        return undefined;
      }
      if (reply.text === "") {
        // A thinking model can spend the whole reply in its scratchpad, which is taken out.
        notice(
          `${model} wrote an empty summary (nothing outside its scratchpad); the transcript was left as it was.`,
        );
        return undefined;
      }
      // A summary is only worth taking where it is shorter than what it replaces (the notes so far
      // and the stretch, as the transcript holds them): a model that ignored its ceiling would make
      // the transcript grow. Measured whole, as the ledger counts them — not as the prompt showed
      // them, cut to SUMMARY_MESSAGE_CHARS a message.
      const replaced = (typeof previous === "string" ? previous.length : 0) + stretchChars(messages, blocks);
      if (reply.text.length > replaced) {
        const about = (chars: number) => Math.ceil(chars / SUMMARY_CHARS_PER_TOKEN);
        notice(
          `The summary from ${model} (about ${about(reply.text.length)} tokens) is longer than what it would replace (about ${about(replaced)} tokens); the transcript was left as it was.`,
        );
        return undefined;
      }
      return reply.text;
    } catch (error) {
      if (SideTaskError.isInstance(error) && error.code === "invalid-input") throw error;
      notice(`The summary could not be written, so the transcript was left as it was: ${errorText(error)}`);
      return undefined;
    }
  };
}
