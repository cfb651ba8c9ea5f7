import { ALL_FENCES, stripThinking } from "../../../stream/src/fences.js";

/** The end-of-turn tokens the property tests put between parts, gpt-oss's `<|end|>` among them. */
const TOKENS: ReadonlySet<string> = new Set([
  "<|eot_id|>",
  "<|eot|>",
  "<|im_end|>",
  "</s>",
  "<end_of_turn>",
  "<eos>",
  "<|endoftext|>",
  "<|end|>",
  "<|observation|>",
]);

const MARK = "MARK_TURN_END";

/**
 * The parts of a reply recoverToolCalls reads, as its README says where a reply ends: up to the
 * first end-of-turn token with more than blank space and end tokens after it, that is not inside
 * reasoning as the stream reads the reply (`opener` put back for a scratchpad the template opened
 * in the prompt), and is not gpt-oss's `<|end|>` after a Harmony message (`<|message|>` since the
 * last token). The parts are whole: no token here is inside a call, a code block or inline code.
 */
export function partsInTurn(parts: readonly string[], opener = ""): string[] {
  let stretch = "";
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    if (!TOKENS.has(part)) {
      stretch += part;
      continue;
    }
    const harmony = part === "<|end|>" && stretch.includes("<|message|>");
    stretch = "";
    if (harmony) continue;
    if (parts.slice(i + 1).every((p) => p.trim() === "" || TOKENS.has(p))) break;
    const before = `${opener}${parts.slice(0, i).join("")}${MARK}`;
    if (stripThinking(before, { fences: ALL_FENCES }).content.includes(MARK)) return parts.slice(0, i);
  }
  return [...parts];
}
