// What sending nine-character tool-call ids costs a request, run by `pnpm bench`; prints, never asserts.
//
// Once a model refused an id, buildBody passes every request's transcript through shortToolCallIds
// (a SHA-256 per id that is not already nine letters and digits). Timed on transcripts of 250 to
// 4000 calls (each with its result), beside a baseline of what buildBody already does to every
// transcript — copy the array — and of JSON.stringify of the same messages (what the client does to
// send them anyway). Linear growth is ×2 per doubling; the ratio to JSON.stringify should stay flat.
import { shortToolCallIds } from "../src/tool-call-ids.js";

function transcript(calls: number): unknown[] {
  const messages: unknown[] = [{ role: "user", content: "Add these up." }];
  for (let i = 0; i < calls; i++) {
    const id = `call_recovered_${i}`;
    const call = { id, type: "function", function: { name: "add", arguments: `{"a":${i},"b":1}` } };
    messages.push({ role: "assistant", content: null, tool_calls: [call] });
    messages.push({ role: "tool", tool_call_id: id, content: String(i + 1) });
  }
  return messages;
}

function msPer(run: () => unknown, rounds: number): number {
  for (let i = 0; i < 5; i++) run();
  const start = performance.now();
  for (let i = 0; i < rounds; i++) run();
  return (performance.now() - start) / rounds;
}

let previous: number | undefined;
for (const calls of [250, 500, 1000, 2000, 4000]) {
  const messages = transcript(calls);
  const rounds = Math.max(5, Math.round(20_000 / calls));
  const mapped = msPer(() => shortToolCallIds(messages), rounds);
  const copied = msPer(() => [...messages], rounds);
  const stringified = msPer(() => JSON.stringify(messages), rounds);
  const growth = previous === undefined ? "" : `, ×${(mapped / previous).toFixed(2)} per doubling`;
  previous = mapped;
  console.log(
    `${calls} calls: shortToolCallIds ${mapped.toFixed(3)} ms (copy ${copied.toFixed(4)} ms, ` +
      `JSON.stringify ${stringified.toFixed(3)} ms, ratio ${(mapped / stringified).toFixed(2)})${growth}`,
  );
}
