// Shared by the ledger's review tests; not published (package.json `files` leaves src/test-support out).
import type { MessageLike } from "../messages.js";
import type { CompactionPlan } from "../plan-compaction.js";

/** A system message, a 200-character question, its answer, and a second question. */
export const messages: MessageLike[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "x".repeat(200) },
  { role: "assistant", content: "Done." },
  { role: "user", content: "And now?" },
];

/** A plan folding messages 1 and 2 of {@link messages} in a 100-token window. */
export const plan: CompactionPlan = {
  from: 1,
  through: 3,
  limit: 100,
  used: 90,
  folded: 60,
  kept: 30,
  after: 30,
  summaryTokens: 10,
};
