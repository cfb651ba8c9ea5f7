// What the prefix-cache model costs a long conversation, measured in the same run: a session that
// only appends (a question and an answer of about 900 tokens each a turn), at 60, 120 and 240
// turns. Per request: process() (render, tokenize, match against every earlier prompt, remember)
// against the baseline of rendering and tokenizing the prompt alone, which any count needs; and
// the heap the cache holds after a collection. Held as a tree of shared prefixes, process() stays
// near the baseline and the heap grows with the conversation, not with the sum of its prompts
// (the list of every prompt's tokens it replaced took 7x the baseline at 240 turns and held
// 1 GB there).
// Run: pnpm --filter @loopwright/testkit bench (node --expose-gc for the heap column)

import { createPrefixCache, renderPrompt, tokenize } from "../src/index.js";

const para =
  "The tool returned a long listing of files, each with its size and its date, 2026-12-02. ".repeat(20);
const cache = createPrefixCache();
const messages: { role: string; content: string }[] = [{ role: "system", content: "You are helpful." }];
const gc = (globalThis as { gc?: () => void }).gc;
const heapMb = () => {
  gc?.();
  return gc ? `${(process.memoryUsage().heapUsed / 1e6).toFixed(0).padStart(5)} MB` : "  (no --expose-gc)";
};
for (let turn = 1; turn <= 240; turn++) {
  messages.push({ role: "user", content: `question ${turn} ${para}` });
  if (turn % 60 === 0 && turn !== 180) {
    const request = { messages };
    const start = process.hrtime.bigint();
    tokenize(renderPrompt(request));
    const base = Number(process.hrtime.bigint() - start) / 1e6;
    const before = process.hrtime.bigint();
    const { promptTokens, cachedTokens } = cache.process(request);
    const took = Number(process.hrtime.bigint() - before) / 1e6;
    console.log(
      `turn ${String(turn).padStart(3)}  prompt ${String(promptTokens).padStart(6)} tokens (${cachedTokens} cached)   tokenize ${base.toFixed(1).padStart(6)} ms   process ${took.toFixed(1).padStart(6)} ms   ratio ${(took / base).toFixed(2)}x   heap ${heapMb()}`,
    );
  } else cache.process({ messages });
  messages.push({ role: "assistant", content: `answer ${turn} ${para}` });
}
