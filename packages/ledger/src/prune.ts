import { checkMessages, checkNumber, describe, LedgerError, readSettings, setting } from "./errors.js";
import { contentChars, contentText, isMediaPart, type KeptMessage, type MessageLike } from "./messages.js";

/** Options for {@link pruneToolResults}. */
export interface PruneOptions {
  /** How many of the latest tool results are left alone. 5 unless given. */
  keepLast?: number | undefined;
  /** A result this long or shorter is left alone: a stub would save nothing. 256 unless given. */
  maxChars?: number | undefined;
  /**
   * Whether a tool message holds tool definitions that must never be cleared (a proxied
   * `load_tools` result is the model's only copy of those schemas). The default recognises a result
   * with a line of JSON naming a tool with `parameters`; pass the tool-loading package's own test to
   * use that instead.
   */
  holdsDefinitions?: ((message: MessageLike) => boolean) | undefined;
}

/**
 * The default test for a tool message that carries definitions: some line of its text is a JSON
 * object with a string `name` and an object `parameters`, which is how a proxied load answers.
 * Kept local: the tool-loading package owns the exported `holdsDefinitions`.
 */
export function carriesDefinitions(message: MessageLike): boolean {
  if (setting(message, "role") !== "tool") return false;
  const text = contentText(setting(message, "content") as MessageLike["content"]);
  if (!text.includes('"parameters"')) return false;
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{")) continue;
    try {
      // The line's own fields: a polluted Object.prototype's `name` made every JSON result with a
      // "parameters" key a definition, never cleared.
      const value: unknown = JSON.parse(trimmed);
      const parameters = setting(value, "parameters");
      if (
        typeof setting(value, "name") === "string" &&
        typeof parameters === "object" &&
        parameters !== null
      ) {
        return true;
      }
    } catch {
      // Not JSON: not a definition line.
    }
  }
  return false;
}

function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/**
 * The text a cleared tool result is replaced with, in the specification's words — `[result cleared,
 * 10,412 chars]` — and how many media parts (images, audio, files) there were, where any:
 * `[result cleared, 17 chars, 1 media part]`.
 */
export function clearedStub(chars: number, media = 0): string {
  const parts = media === 0 ? "" : `, ${grouped(media)} media ${media === 1 ? "part" : "parts"}`;
  return `[result cleared, ${grouped(chars)} chars${parts}]`;
}

/**
 * A stub `clearedStub` wrote, or the wording it wrote before (`[tool result cleared: 10,412
 * characters]`, in transcripts stored then): pruned again, it stays as it is, its count and the
 * prefix with it.
 */
const STUB =
  /^\[(?:result cleared, \d{1,3}(?:,\d{3})* chars(?:, \d{1,3}(?:,\d{3})* media parts?)?|tool result cleared: \d{1,3}(?:,\d{3})* characters(?: and \d{1,3}(?:,\d{3})* media parts?)?)\]$/;

/** How many media parts (an image, audio, a file: see `isMediaPart`) a message's content holds. */
function mediaParts(content: MessageLike["content"]): number {
  if (!Array.isArray(content)) return 0;
  let count = 0;
  for (const part of content as readonly unknown[]) if (isMediaPart(part)) count++;
  return count;
}

/**
 * Replaces every tool result but the latest `keepLast` with a short stub saying how many
 * characters were cleared, so the call stays answered and the model knows something was there.
 *
 * The array that comes back has the same length and every index in place (a compaction plan made
 * before pruning still applies); messages it does not clear are the same objects. A result carrying
 * media (an image part, audio, a file) is cleared however short its text, the stub counting its
 * media parts too. Never cleared: a result of `maxChars` or fewer and no media, one that holds tool definitions (`holdsDefinitions`), and a stub an
 * earlier prune wrote (so pruning again changes nothing, whatever `maxChars` says). Pure —
 * the messages given are not changed. Throws `LedgerError` for a malformed transcript, options that
 * are not an object, a negative or fractional `keepLast`/`maxChars`, or a `holdsDefinitions` that is
 * not a function. Generic in the message type: a transcript typed with the `openai` SDK's
 * `ChatCompletionMessageParam` comes back typed so (a cleared result is its tool message with a
 * string `content`), each message still a `MessageLike` whose fields read on any member; a type
 * that cannot hold a tool message (a `role: string`, roles without `"tool"`) comes back as
 * `MessageLike[]` (`KeptMessage`).
 */
export function pruneToolResults<M extends MessageLike>(
  messages: readonly M[],
  given: PruneOptions = {},
): (KeptMessage<M> & MessageLike)[] {
  checkMessages(messages, "pruneToolResults");
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new LedgerError(
      "invalid-option",
      `pruneToolResults: options must be an object ({ keepLast?, maxChars?, holdsDefinitions? }) or left out, and was ${describe(given)}.`,
    );
  }
  // Never from a polluted Object.prototype (an inherited `keepLast: 0` cleared every result).
  const options = readSettings(
    given,
    ["keepLast", "maxChars", "holdsDefinitions"],
    "pruneToolResults: the options",
  );
  if (options.holdsDefinitions !== undefined && typeof options.holdsDefinitions !== "function") {
    throw new LedgerError(
      "invalid-option",
      `pruneToolResults: holdsDefinitions must be a function (message) => boolean, and was ${describe(options.holdsDefinitions)}.`,
    );
  }
  const keepLast = checkNumber(options.keepLast ?? 5, "keepLast", "pruneToolResults", { integer: true });
  const maxChars = checkNumber(options.maxChars ?? 256, "maxChars", "pruneToolResults", { integer: true });
  const holds = options.holdsDefinitions ?? carriesDefinitions;
  let kept = 0;
  // `KeptMessage<M>` is `M` or `MessageLike`, and the messages are `M`s either way.
  const out = messages.slice() as (KeptMessage<M> & MessageLike)[];
  for (let i = out.length - 1; i >= 0; i--) {
    const message = out[i] as KeptMessage<M> & MessageLike;
    if (setting(message, "role") !== "tool") continue;
    if (kept < keepLast) {
      kept++;
      continue;
    }
    const content = setting(message, "content") as MessageLike["content"];
    const chars = contentChars(content);
    // An image (a screenshot a browser tool returned) costs the server hundreds of tokens however
    // short the text beside it: a result carrying media is never too small to clear.
    const media = mediaParts(content);
    if ((chars <= maxChars && media === 0) || holds(message)) continue;
    if (typeof content === "string" && STUB.test(content)) continue;
    // A tool message with string content: still the caller's message type.
    out[i] = { ...message, content: clearedStub(chars, media) } as KeptMessage<M> & MessageLike;
  }
  return out;
}
