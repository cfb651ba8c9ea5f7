// How often a long run's prune and compaction rewrite the prompt's prefix, run by `pnpm bench`. A
// prompt cache matches from the first token, so a request whose early messages changed is prefilled
// again from the first change on. A simulated 1,500-step tool run (results of 200 to 8,000
// characters, a new question every 10 steps, a 32k-token window) is sent three ways: compaction
// alone, when planCompaction says; pruneToolResults on every step as well; and pruning only at the
// point planCompaction fires, compacting only if the pruned transcript still needs it; and both at
// once where planCompaction fires, the fold planned before the prune (its indexes still hold). Each
// strategy's prefilled tokens are set against the baseline of an append-only run, whose every
// request re-reads nothing (only what it appended). Deterministic; numbers are printed, never asserted.
import type { MessageLike } from "../src/messages.js";
import { planCompaction } from "../src/plan-compaction.js";
import { pruneToolResults } from "../src/prune.js";
import { applyCompaction } from "../src/run-compaction.js";
import { messageTokens } from "../src/tokens.js";

const STEPS = Number(process.env.PREFIX_STEPS ?? 1500);
const LIMIT = 32_000;

let seed = 7;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};
const sizes = Array.from({ length: STEPS }, () => 200 + Math.floor(random() * 7800));

type Strategy = (messages: MessageLike[]) => MessageLike[];

const fold = (messages: MessageLike[]): MessageLike[] => {
  const plan = planCompaction(messages, { limit: LIMIT });
  return plan
    ? applyCompaction(messages, { summary: "s".repeat(3200), through: plan.through, at: 0 })
    : messages;
};
const strategies: Record<string, Strategy> = {
  "compaction only": fold,
  "prune every step": (messages) => fold(pruneToolResults(messages)),
  "prune when a fold is due": (messages) =>
    planCompaction(messages, { limit: LIMIT }) ? fold(pruneToolResults(messages)) : messages,
  // The plan made before pruning still applies to what pruning returns (same indexes).
  "prune and fold together": (messages) => {
    const plan = planCompaction(messages, { limit: LIMIT });
    if (!plan) return messages;
    const summary = { summary: "s".repeat(3200), through: plan.through, at: 0 };
    return applyCompaction(pruneToolResults(messages), summary);
  },
};

function simulate(strategy: Strategy | undefined) {
  let messages: MessageLike[] = [{ role: "system", content: "You are a careful agent. ".repeat(40) }];
  let sent: MessageLike[] = [];
  let prefilled = 0;
  let rewrites = 0;
  for (let step = 0; step < STEPS; step++) {
    if (step % 10 === 0) {
      if (step > 0) messages.push({ role: "assistant", content: "Done with that part. ".repeat(10) });
      messages.push({ role: "user", content: `Now part ${step / 10}. `.repeat(10) });
    }
    const id = `call_${step}`;
    messages.push({
      role: "assistant",
      content: "",
      tool_calls: [
        { id, type: "function", function: { name: "read_file", arguments: `{"path":"f${step}"}` } },
      ],
    });
    messages.push({ role: "tool", tool_call_id: id, content: "x".repeat(sizes[step] as number) });
    if (strategy) messages = strategy(messages);
    // The first message that differs from the last request: everything from it is prefilled again.
    let same = 0;
    while (same < sent.length && same < messages.length && sent[same] === messages[same]) same++;
    if (same < sent.length) rewrites++;
    for (let i = same; i < messages.length; i++) prefilled += messageTokens(messages[i] as MessageLike);
    sent = messages.slice();
  }
  return { prefilled, rewrites };
}

const baseline = simulate(undefined).prefilled;
console.log(`prefix rewrites over a ${STEPS}-step run (append-only baseline prefills ${baseline} tokens):`);
for (const [name, strategy] of Object.entries(strategies)) {
  const { prefilled, rewrites } = simulate(strategy);
  console.log(
    `  ${name.padEnd(26)} ${String(rewrites).padStart(5)} rewrites, ${String(prefilled).padStart(9)} tokens prefilled, ${(prefilled / baseline).toFixed(2)}x the baseline`,
  );
}
