import { type CatalogServerLike, catalogEntries, checkCap, PRESELECT_MAX } from "./catalog.js";
import { describeValue, SideTaskError } from "./errors.js";
import { terms } from "./words.js";

/** Where keyword matching draws its line. */
export interface KeywordOptions {
  /**
   * The BM25 score the best tool must reach before anything can be confident. Default
   * `KEYWORD_MIN_SCORE`. Higher asks more of the words before the model is skipped.
   */
  minScore?: number;
  /**
   * How far below the last kept tool the best one left out must score, as a fraction of it:
   * `0.5` (the default) means at most half. Lower asks for a cleaner break.
   */
  dropoff?: number;
}

/** One tool's score against a request. */
export interface KeywordScore {
  name: string;
  score: number;
}

/** What keyword matching found. */
export interface KeywordPreselection {
  /** The shortlist: the tools above the sharpest break in the ranking, at most the cap. */
  tools: string[];
  /**
   * True only when the words settle it: the best score reaches `minScore`, every kept tool matched
   * a word few tools share, every such word of the request is held by a kept tool, and the best
   * tool left out scores at most `dropoff` of the last one kept. Never true when nothing matched.
   */
  confident: boolean;
  /** Every tool that matched a word, best first (ties in catalogue order). */
  ranked: KeywordScore[];
}

/** The default `minScore`. */
export const KEYWORD_MIN_SCORE = 2;
/** The default `dropoff`. */
export const KEYWORD_DROPOFF = 0.5;

const K1 = 1.2;
const B = 0.75;
/** How many times a tool's name counts against its description: the name is what it is. */
const NAME_WEIGHT = 2;

interface Doc {
  name: string;
  tf: Map<string, number>;
  length: number;
}

function positive(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new SideTaskError(
      "invalid-input",
      `preselectByKeywords: ${name} must be a number of 0 or more, and was ${describeValue(value)}.`,
    );
  }
  return value;
}

/**
 * Ranks every tool of a catalogue against a request by BM25 over the tool's name, its server's
 * label and its one-line description, with English function words dropped and words cut to a
 * rough stem, and says whether the words alone settle which tools the request needs.
 *
 * BM25 rather than counting shared words, because words every tool uses ("list", "get", "file")
 * would otherwise hand the top to the longest description. `confident` is hard to earn on purpose
 * (see `KeywordPreselection`): a near-tie across the line means the ranking chose arbitrarily,
 * which is the case a model is worth spending on. Pure: reads only its arguments, no I/O. Throws
 * `SideTaskError` (`invalid-input`) for a catalogue that is not a list of servers, a prompt that
 * is not a string, or a bad option or cap.
 */
export function preselectByKeywords(
  catalog: readonly CatalogServerLike[],
  prompt: string,
  options: KeywordOptions = {},
  max: number = PRESELECT_MAX,
): KeywordPreselection {
  const entries = catalogEntries(catalog, "preselectByKeywords");
  if (typeof prompt !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `preselectByKeywords: the request must be a string, and was ${describeValue(prompt)}.`,
    );
  }
  const cap = checkCap(max, "preselectByKeywords");
  const minScore = positive(options?.minScore, "minScore", KEYWORD_MIN_SCORE);
  const dropoff = positive(options?.dropoff, "dropoff", KEYWORD_DROPOFF);

  const docs: Doc[] = entries.map((entry) => {
    const words = [
      ...Array.from({ length: NAME_WEIGHT }, () => terms(entry.name)).flat(),
      ...terms(entry.server),
      ...terms(entry.description),
    ];
    const tf = new Map<string, number>();
    for (const word of words) tf.set(word, (tf.get(word) ?? 0) + 1);
    return { name: entry.name, tf, length: words.length };
  });
  const n = docs.length;
  const df = new Map<string, number>();
  for (const doc of docs) for (const word of doc.tf.keys()) df.set(word, (df.get(word) ?? 0) + 1);
  const avgLength = docs.reduce((sum, doc) => sum + doc.length, 0) / Math.max(1, n);
  const idf = (word: string) => {
    const d = df.get(word) ?? 0;
    return Math.log(1 + (n - d + 0.5) / (d + 0.5));
  };
  // A word "few tools share": held by at most one tool in twenty-five (and at least by one or two).
  const rareDf = Math.max(2, Math.floor(n / 25));
  const query = [...new Set(terms(prompt))].filter((word) => df.has(word));
  const rare = new Set(query.filter((word) => (df.get(word) ?? 0) <= rareDf));

  const scored = docs.map((doc, index) => {
    let score = 0;
    let holdsRare = false;
    for (const word of query) {
      const tf = doc.tf.get(word);
      if (!tf) continue;
      if (rare.has(word)) holdsRare = true;
      const norm = tf + K1 * (1 - B + (B * doc.length) / Math.max(1, avgLength));
      score += idf(word) * ((tf * (K1 + 1)) / norm);
    }
    return { name: doc.name, score, holdsRare, index, doc };
  });
  const ranked = scored.filter((s) => s.score > 0).sort((a, b) => b.score - a.score || a.index - b.index);

  if (ranked.length === 0) return { tools: [], confident: false, ranked: [] };

  // The shortlist ends at the sharpest break in the first `cap` scores.
  const window = ranked.slice(0, cap + 1);
  let cut = Math.min(cap, ranked.length);
  let sharpest = Number.POSITIVE_INFINITY;
  for (let i = 1; i <= Math.min(cap, ranked.length); i++) {
    const after = window[i]?.score ?? 0;
    const ratio = after / (window[i - 1]?.score ?? 1);
    if (ratio < sharpest) {
      sharpest = ratio;
      cut = i;
    }
  }
  const kept = ranked.slice(0, cut);
  const firstOut = ranked[cut]?.score ?? 0;
  const lastKept = kept[kept.length - 1]?.score ?? 0;
  const covered = [...rare].every((word) => kept.some((k) => k.doc.tf.has(word)));
  const confident =
    (ranked[0]?.score ?? 0) >= minScore &&
    kept.every((k) => k.holdsRare) &&
    covered &&
    firstOut <= dropoff * lastKept;
  return {
    tools: kept.map((k) => k.name),
    confident,
    ranked: ranked.map(({ name, score }) => ({ name, score })),
  };
}
