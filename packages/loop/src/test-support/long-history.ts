import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import type { ChatMessage } from "../config.js";

/** A history long enough that a 1600-token window folds it before the first request. */
export function longHistory(): ChatMessage[] {
  const history: ChatMessage[] = [];
  for (const chapter of ["one", "two", "three", "four"]) {
    history.push(
      { role: "user", content: `Summarise chapter ${chapter}.` },
      { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(250).trim()}` },
    );
  }
  history.push({ role: "user", content: "And chapter five?" });
  return history;
}

/** Whether a recorded request is a compaction's summary (its system prompt the summariser's). */
export const isSummary = (request: { body: unknown }) =>
  (request.body as { messages: ChatMessage[] }).messages[0]?.content === SUMMARISER_SYSTEM;
