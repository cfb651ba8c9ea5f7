// What writing lone surrogates U+FFFD costs a request, run by `pnpm bench`; prints, never asserts.
//
// buildBody walks every message and tool of every request for half a surrogate pair (wellFormedItems)
// and copies only one that holds one. The walk is linear in the transcript, like the JSON.stringify
// the client does to send the same request anyway; this prints the fastest of each, and their ratio, on transcripts
// of 250 to 4000 turns (a user message of prose, an assistant call, its tool result of ~2 KB), with
// none holding a lone half (the common case: nothing copied) and with one in the last result.
// Measured at about 0.4× JSON.stringify and ×2 per doubling, so it is not cached across requests:
// a cache of messages already seen well formed would be keyed by object, and a host that edits a
// message in place (the agent's `messages` are the host's to edit) would send what it missed.
import { wellFormedItems } from "../src/well-formed.js";

const prose = "The quick brown fox jumps over the lazy dog — ünïcödé and 🦊 emoji included. ".repeat(6);
const result = `${"line of a tool's output, with some numbers 12345 and words\n".repeat(32)}`;

function transcript(turns: number, cut: boolean): unknown[] {
  const messages: unknown[] = [{ role: "system", content: prose }];
  for (let i = 0; i < turns; i++) {
    const id = `call_${i}`;
    messages.push({ role: "user", content: `${prose} (${i})` });
    const call = { id, type: "function", function: { name: "read", arguments: `{"path":"src/f${i}.ts"}` } };
    messages.push({ role: "assistant", content: null, tool_calls: [call] });
    const last = cut && i === turns - 1;
    messages.push({ role: "tool", tool_call_id: id, content: last ? `${result}\ud83e` : result });
  }
  return messages;
}

/** The fastest of `rounds` timings of each run, interleaved, so a busy neighbour moves both sides alike. */
function fastest(runs: (() => unknown)[], rounds: number): number[] {
  const best = runs.map(() => Number.POSITIVE_INFINITY);
  for (const run of runs) run();
  for (let round = 0; round < rounds; round++) {
    runs.forEach((run, k) => {
      const started = performance.now();
      run();
      best[k] = Math.min(best[k] as number, performance.now() - started);
    });
  }
  return best;
}

for (const cut of [false, true]) {
  console.log(cut ? "one lone half, in the last tool result:" : "no lone half (nothing copied):");
  let previous: number | undefined;
  for (const turns of [250, 500, 1000, 2000, 4000]) {
    const messages = transcript(turns, cut);
    const rounds = Math.max(8, Math.round(8_000 / turns));
    const [walked, stringified] = fastest(
      [() => wellFormedItems(messages), () => JSON.stringify(messages)],
      rounds,
    ) as [number, number];
    const growth = previous === undefined ? "" : `, ×${(walked / previous).toFixed(2)} per doubling`;
    previous = walked;
    console.log(
      `  ${turns} turns: wellFormedItems ${walked.toFixed(3)} ms, JSON.stringify ${stringified.toFixed(3)} ms, ` +
        `ratio ${(walked / stringified).toFixed(2)}${growth}`,
    );
  }
}
