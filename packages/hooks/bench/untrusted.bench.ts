// untrusted and assembleContext on large inputs, run by `pnpm bench`: a page of 10^4, 10^5 and 10^6
// characters of HTML-like text, fenced by `untrusted`, beside a baseline that only replaces `<` with
// `&lt;` (String.prototype.replaceAll), the least any escaping has to do. Prints the fastest of
// several runs, the growth per 10× (linear is 10×) and the ratio to the baseline; never asserts.
import { assembleBlocks } from "../src/assemble-context.js";
import { untrusted } from "../src/untrusted.js";

function page(size: number): string {
  const piece =
    '<div class="post"><a href="/x?a=1&b=2">Read more</a> &amp; more</div>\n' +
    "Plain prose about the release, with a < comparison and a ＜ look-alike.\n";
  return piece.repeat(Math.ceil(size / piece.length)).slice(0, size);
}

function fastest(run: () => unknown, rounds: number): number {
  for (let i = 0; i < 3; i++) run();
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    run();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

const sizes = [10_000, 100_000, 1_000_000];
let previous: number | undefined;
console.log("untrusted(page) vs page.replaceAll('<', '&lt;')");
for (const size of sizes) {
  const text = page(size);
  const fenced = fastest(
    () => untrusted(text, { source: "https://example.com/" }),
    size >= 1_000_000 ? 10 : 40,
  );
  const baseline = fastest(() => text.replaceAll("<", "&lt;"), size >= 1_000_000 ? 10 : 40);
  const growth = previous === undefined ? "" : `  growth ×${(fenced / previous).toFixed(1)}`;
  console.log(
    `  ${String(size).padStart(9)} chars: ${fenced.toFixed(2)} ms, baseline ${baseline.toFixed(2)} ms, ratio ${(fenced / baseline).toFixed(1)}${growth}`,
  );
  previous = fenced;
}

console.log("assembleContext: 50 hooks of 10^4 characters each into a 2000-token budget");
const outcomes = Array.from({ length: 50 }, (_, i) => ({
  id: `hook-${i}`,
  context: page(10_000),
  maxTokens: 500,
}));
const assembled = fastest(() => assembleBlocks(outcomes, 2000), 40);
const join = fastest(() => outcomes.map((o) => o.context.slice(0, 2000)).join("\n\n"), 40);
console.log(
  `  ${assembled.toFixed(3)} ms, baseline (slice and join) ${join.toFixed(3)} ms, ratio ${(assembled / join).toFixed(1)}`,
);

// A hook's text that is one `<` and then a long run of spaces: the tag check after each `<` must read
// that run once, not once per way of splitting it (which was quadratic: 4.4 s at 4·10^4 characters).
console.log("assembleContext: one hook of '<' and a run of spaces, vs text.replaceAll('<', '&lt;')");
let previousRun: number | undefined;
for (const size of [10_000, 100_000, 1_000_000]) {
  const hostile = [{ id: "h", context: `<${" ".repeat(size)}x` }];
  const run = fastest(() => assembleBlocks(hostile, 2000), size >= 1_000_000 ? 5 : 20);
  const text = hostile[0]?.context ?? "";
  const baseline = fastest(() => text.replaceAll("<", "&lt;"), size >= 1_000_000 ? 5 : 20);
  const growth = previousRun === undefined ? "" : `  growth ×${(run / previousRun).toFixed(1)}`;
  console.log(
    `  ${String(size).padStart(9)} chars: ${run.toFixed(2)} ms, baseline ${baseline.toFixed(2)} ms, ratio ${(run / baseline).toFixed(1)}${growth}`,
  );
  previousRun = run;
}
