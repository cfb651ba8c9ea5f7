// planCompaction on long transcripts, run by `pnpm bench`: 10^3, 10^4 and 10^5 messages, each
// timed as the median of several runs, with the ratios between sizes (linear growth is 10× per
// step). The same is done for planCompaction driven by estimateFrom over a recorded ledger.
// Numbers are printed, never asserted.
import { estimateFrom, type LedgerEntry, recordRequest } from "../src/ledger.js";
import { type MessageLike, messageChars } from "../src/messages.js";
import { planCompaction } from "../src/plan-compaction.js";

function transcript(size: number): MessageLike[] {
  const messages: MessageLike[] = [{ role: "system", content: "You are a careful assistant. ".repeat(20) }];
  let call = 0;
  while (messages.length < size) {
    messages.push({
      role: "user",
      content: `Question ${messages.length}: what changed in the build? `.repeat(3),
    });
    for (let step = 0; step < 2 && messages.length < size; step++) {
      const id = `call_${call++}`;
      messages.push({
        role: "assistant",
        content: "",
        tool_calls: [
          { id, type: "function", function: { name: "read_file", arguments: `{"path":"src/${id}.ts"}` } },
        ],
      });
      messages.push({ role: "tool", tool_call_id: id, content: "export const value = 1;\n".repeat(40) });
    }
    messages.push({ role: "assistant", content: "The build now runs the type check first. ".repeat(4) });
  }
  return messages.slice(0, size);
}

function ledgerFor(messages: MessageLike[]): LedgerEntry[] {
  let ledger: LedgerEntry[] = [];
  let prompt = 1000;
  let previous: { messages: MessageLike[] } | undefined;
  for (let i = 0; i < messages.length; i++) {
    prompt += Math.ceil(JSON.stringify(messages[i]).length / 3);
    if (messages[i]?.role !== "user" && messages[i]?.role !== "tool") continue;
    const request = { messages: messages.slice(0, i + 1) };
    ledger = recordRequest(ledger, previous, { ...request, prompt });
    previous = request;
  }
  return ledger;
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

/**
 * The fastest of many runs, the sizes interleaved round by round: on a shared machine the median
 * carries whatever else was running, and the minimum is the closest reading of the work itself.
 */
function fastest(runs: (() => unknown)[], rounds: number, perRound: number): number[] {
  const best = runs.map(() => Number.POSITIVE_INFINITY);
  for (const run of runs) for (let i = 0; i < 5; i++) run(); // warm-up: let the JIT settle
  for (let round = 0; round < rounds; round++) {
    runs.forEach((run, k) => {
      gc(); // a collection left over from building the transcript is not planCompaction's time
      for (let i = 0; i < perRound; i++) {
        const started = performance.now();
        run();
        best[k] = Math.min(best[k] as number, performance.now() - started);
      }
    });
  }
  return best;
}

const sizes = [1_000, 10_000, 100_000];
const limit = 200_000;
const transcripts = sizes.map(transcript);
// recordRequest compares each request with the one before, so a ledger is built once, outside the
// timing; at 10^5 messages that build is itself slow, so it is left out there.
const ledgers = transcripts.map((messages) => (messages.length <= 10_000 ? ledgerFor(messages) : []));
// The baseline: one bare pass reading each message's characters, the least any plan has to do.
// Past a few MB of transcript both are bound by memory, not by the algorithm; the ratio of the
// two at each size is what shows whether planCompaction itself grows linearly.
const bare = fastest(
  transcripts.map((messages) => () => {
    let chars = 0;
    for (const message of messages) chars += messageChars(message);
    return chars;
  }),
  5,
  5,
);
const plain = fastest(
  transcripts.map((messages) => () => planCompaction(messages, { limit, used: limit })),
  5,
  5,
);
const measured = fastest(
  transcripts.map(
    (messages, k) => () =>
      planCompaction(messages, { limit, used: limit, estimate: estimateFrom(ledgers[k] ?? [], messages) }),
  ),
  5,
  5,
);

const row = (label: string, values: number[]) => {
  const [a, b, c] = values as [number, number, number];
  console.log(
    `${label.padEnd(34)} ${a.toFixed(2).padStart(8)} ms ${b.toFixed(2).padStart(8)} ms ${c.toFixed(2).padStart(9)} ms` +
      `   ×${(b / a).toFixed(1)} then ×${(c / b).toFixed(1)} per 10× messages`,
  );
};
console.log(
  `${"planCompaction (fastest of 25)".padEnd(34)} ${"10^3".padStart(11)} ${"10^4".padStart(11)} ${"10^5".padStart(12)}`,
);
row("baseline: one pass over the messages", bare);
row("default estimate", plain);
row("estimate: estimateFrom(ledger, …)", measured);
const over = (values: number[]) => values.map((v, k) => (v / (bare[k] as number)).toFixed(1)).join(" / ");
console.log(
  `planCompaction over the baseline at 10^3 / 10^4 / 10^5: ${over(plain)} (default), ${over(measured)} (estimateFrom)`,
);
