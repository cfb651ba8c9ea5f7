// The preselection retrieval benchmark, run by `pnpm bench`: preselectByKeywords (BM25) against
// plain word-overlap scoring, in the same run, over a real catalogue (bench/catalog/, tool lists
// captured from published MCP servers by capture-catalog.ts) and a labelled set of requests
// (bench/requests.txt). Prints recall@5 and recall@12, how often `confident` was claimed and how
// often it was right, and the time per request. Numbers are printed, never asserted.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { descriptionLine } from "@loopwright/tool-loading";
import type { CatalogServerLike } from "../src/catalog.js";
import { catalogEntries } from "../src/catalog.js";
import { type KeywordOptions, preselectByKeywords } from "../src/keywords.js";
import { terms } from "../src/words.js";
import { capturedServers, realCatalog } from "./load-catalog.js";

const here = dirname(fileURLToPath(import.meta.url));

interface Labelled {
  request: string;
  /** Each slot: the tools any one of which does that part of the job. */
  slots: string[][];
}

function loadRequests(known: Set<string>, file: string): Labelled[] {
  const lines = readFileSync(join(here, file), "utf8").split("\n");
  const out: Labelled[] = [];
  for (const line of lines) {
    if (!line.trim() || line.startsWith("#")) continue;
    const [request, labels] = line.split(" => ");
    if (!request || !labels) throw new Error(`${file}: no " => " in ${JSON.stringify(line)}`);
    const slots = labels.split(",").map((slot) => slot.trim().split("|"));
    for (const name of slots.flat()) {
      if (!known.has(name)) throw new Error(`${file}: ${name} is not in the catalogue (${request})`);
    }
    out.push({ request: request.trim(), slots });
  }
  return out;
}

type Ranker = (request: string) => string[];

/** Plain word overlap over the same fields: how many distinct words of the request a tool shares. */
function overlapRanker(catalog: CatalogServerLike[], words: (text: string) => string[]): Ranker {
  const docs = catalogEntries(catalog, "bench").map((entry) => ({
    name: entry.name,
    words: new Set(
      words(`${entry.name} ${entry.server} ${descriptionLine(entry.description, Number.POSITIVE_INFINITY)}`),
    ),
  }));
  return (request) => {
    const asked = new Set(words(request));
    return docs
      .map((doc, index) => ({
        name: doc.name,
        index,
        score: [...asked].filter((w) => doc.words.has(w)).length,
      }))
      .filter((d) => d.score > 0)
      .sort((a, b) => b.score - a.score || a.index - b.index)
      .map((d) => d.name);
  };
}

const rawWords = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);

function slotRecall(slots: string[][], shortlist: readonly string[]): number {
  const have = new Set(shortlist);
  return slots.filter((slot) => slot.some((name) => have.has(name))).length / slots.length;
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
}

/** The fastest round of each ranker over every request, the rankers interleaved round by round. */
function timesPerRequest(rankers: Ranker[], requests: Labelled[]): number[] {
  const best = rankers.map(() => Number.POSITIVE_INFINITY);
  for (const ranker of rankers) for (const { request } of requests) ranker(request); // warm-up
  for (let round = 0; round < 9; round++) {
    rankers.forEach((ranker, k) => {
      const started = performance.now();
      for (const { request } of requests) ranker(request);
      best[k] = Math.min(
        best[k] ?? Number.POSITIVE_INFINITY,
        (performance.now() - started) / requests.length,
      );
    });
  }
  return best;
}

const sources = capturedServers();
const catalog = realCatalog();
const entries = catalogEntries(catalog, "bench");
const known = new Set(entries.map((e) => e.name));
const requests = loadRequests(known, "requests.txt");
const heldOut = loadRequests(known, "requests-heldout.txt");

console.log(
  `Catalogue: ${entries.length} tools from ${sources.length} published MCP servers (${sources
    .map((s) => `${s.package}@${s.version}`)
    .join(", ")}).`,
);
console.log(
  `Requests: ${requests.length} labelled, ${requests.reduce((n, r) => n + r.slots.length, 0)} tool slots.\n`,
);

const rankers: [string, Ranker][] = [
  [
    "preselectByKeywords (BM25)",
    (request) => preselectByKeywords(catalog, request).ranked.map((r) => r.name),
  ],
  ["word overlap, same words", overlapRanker(catalog, terms)],
  ["word overlap, raw words", overlapRanker(catalog, rawWords)],
];
const times = timesPerRequest(
  rankers.map(([, ranker]) => ranker),
  requests,
);
const baselineMs = times[1] ?? 1;
console.log("| scorer | recall@5 | recall@12 | all needed in top 12 | ms per request | time vs overlap |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const [k, [name, ranker]] of rankers.entries()) {
  const lists = requests.map((r) => ranker(r.request));
  const r5 = mean(requests.map((r, i) => slotRecall(r.slots, (lists[i] ?? []).slice(0, 5))));
  const r12 = mean(requests.map((r, i) => slotRecall(r.slots, (lists[i] ?? []).slice(0, 12))));
  const all12 = mean(
    requests.map((r, i) => (slotRecall(r.slots, (lists[i] ?? []).slice(0, 12)) === 1 ? 1 : 0)),
  );
  const ms = times[k] ?? 0;
  console.log(
    `| ${name} | ${r5.toFixed(3)} | ${r12.toFixed(3)} | ${all12.toFixed(3)} | ${ms.toFixed(3)} | ${(ms / baselineMs).toFixed(2)}× |`,
  );
}

function confidence(options: KeywordOptions, requests: Labelled[]) {
  let claimed = 0;
  let right = 0;
  let sizes = 0;
  const wrong: string[] = [];
  for (const r of requests) {
    const found = preselectByKeywords(catalog, r.request, options);
    if (!found.confident) continue;
    claimed++;
    sizes += found.tools.length;
    if (slotRecall(r.slots, found.tools) === 1) right++;
    else wrong.push(`${r.request} → ${found.tools.join(", ")}`);
  }
  return { claimed, right, sizes, wrong };
}

const defaults = confidence({}, requests);
console.log(
  `\nconfident (defaults): claimed on ${defaults.claimed} of ${requests.length} requests (the model skipped), right on ${defaults.right} (${(
    (100 * defaults.right) / Math.max(1, defaults.claimed)
  ).toFixed(
    1,
  )}%), shortlist ${(defaults.sizes / Math.max(1, defaults.claimed)).toFixed(1)} tools on average.`,
);
for (const line of defaults.wrong) console.log(`  wrong: ${line}`);

console.log("\nThe bar moved (minScore, dropoff → claimed / right):");
const grid: string[] = [];
for (const minScore of [1, 2, 4]) {
  for (const dropoff of [0.3, 0.5, 0.7]) {
    const c = confidence({ minScore, dropoff }, requests);
    grid.push(`  ${minScore}, ${dropoff} → ${c.claimed} / ${c.right}`);
  }
}
console.log(grid.join("\n"));

const held = confidence({}, heldOut);
const heldRanked = heldOut.map((r) => preselectByKeywords(catalog, r.request).ranked.map((x) => x.name));
console.log(
  `\nHeld out (${heldOut.length} requests written after the bar was set): recall@5 ${mean(
    heldOut.map((r, i) => slotRecall(r.slots, (heldRanked[i] ?? []).slice(0, 5))),
  ).toFixed(3)}, recall@12 ${mean(
    heldOut.map((r, i) => slotRecall(r.slots, (heldRanked[i] ?? []).slice(0, 12))),
  ).toFixed(3)}; confident claimed on ${held.claimed}, right on ${held.right}.`,
);
for (const line of held.wrong) console.log(`  wrong: ${line}`);
