import { type CatalogServerLike, catalogEntries, checkCap, PRESELECT_MAX } from "./catalog.js";
import { describeValue, SideTaskError } from "./errors.js";
import { ownField } from "./own.js";
import { terms } from "./words.js";

/** Where keyword matching draws its line. */
export interface KeywordOptions {
  /**
   * The BM25 score the best tool must reach before anything can be confident. Default
   * `KEYWORD_MIN_SCORE`. Higher asks more of the words before the model is skipped.
   */
  minScore?: number | undefined;
  /**
   * How far below the last kept tool the best one left out must score, as a fraction of it:
   * `0.5` (the default) means at most half. Lower asks for a cleaner break.
   */
  dropoff?: number | undefined;
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
/** Mild length normalisation: one-line descriptions run from four words to forty. */
const B = 0.5;
/** At least this share of the request's words (numbers and ids aside) must be words the catalogue uses. */
const KNOWN_SHARE = 0.5;
/** The best tool must hold at least this share of the weight of the request's words the catalogue uses. */
const TOP_SHARE = 0.5;

interface Doc {
  name: string;
  tf: Map<string, number>;
  length: number;
}

interface Index {
  key: string;
  docs: Doc[];
  df: Map<string, number>;
  avgLength: number;
}

/** The last index built for each catalogue array, reused while its tools read the same. */
const indexes = new WeakMap<object, Index>();

function indexFor(catalog: readonly CatalogServerLike[]): Index {
  const entries = catalogEntries(catalog, "preselectByKeywords");
  const key = JSON.stringify(entries);
  const cached = indexes.get(catalog);
  if (cached?.key === key) return cached;
  const docs: Doc[] = entries.map((entry) => {
    const words = [...terms(entry.name), ...terms(entry.server), ...terms(entry.description)];
    const tf = new Map<string, number>();
    for (const word of words) tf.set(word, (tf.get(word) ?? 0) + 1);
    return { name: entry.name, tf, length: words.length };
  });
  const df = new Map<string, number>();
  for (const doc of docs) for (const word of doc.tf.keys()) df.set(word, (df.get(word) ?? 0) + 1);
  const avgLength = docs.reduce((sum, doc) => sum + doc.length, 0) / Math.max(1, docs.length);
  const index = { key, docs, df, avgLength };
  indexes.set(catalog, index);
  return index;
}

function positive(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new SideTaskError(
      "invalid-input",
      `preselectByKeywords: ${name} must be a finite number of 0 or more, and was ${describeValue(value)}.`,
    );
  }
  return value;
}

/**
 * Ranks a catalogue's tools against a request by BM25, and says whether the words settle it.
 *
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
  const { docs, df, avgLength } = indexFor(catalog);
  if (typeof prompt !== "string") {
    throw new SideTaskError(
      "invalid-input",
      `preselectByKeywords: the request must be a string, and was ${describeValue(prompt)}.`,
    );
  }
  const cap = checkCap(max, "preselectByKeywords");
  // Read as the host wrote them: never a bar only a polluted Object.prototype holds.
  const minScore = positive(ownField(options, "minScore"), "minScore", KEYWORD_MIN_SCORE);
  const dropoff = positive(ownField(options, "dropoff"), "dropoff", KEYWORD_DROPOFF);
  const n = docs.length;
  const idf = (word: string) => {
    const d = df.get(word) ?? 0;
    return Math.log(1 + (n - d + 0.5) / (d + 0.5));
  };
  // A word "few tools share": held by at most one tool in twenty-five (and at least by one or two).
  const rareDf = Math.max(2, Math.floor(n / 25));
  const asked = [...new Set(terms(prompt))];
  const query = asked.filter((word) => df.has(word));
  const content = asked.filter((word) => !/\d/.test(word));
  const knownShare = content.filter((word) => df.has(word)).length / Math.max(1, content.length);
  const weight = query.reduce((sum, word) => sum + idf(word), 0);
  const rare = new Set(query.filter((word) => (df.get(word) ?? 0) <= rareDf));

  const scored = docs.map((doc, index) => {
    let score = 0;
    let holdsRare = false;
    let held = 0;
    for (const word of query) {
      const tf = doc.tf.get(word);
      if (!tf) continue;
      if (rare.has(word)) holdsRare = true;
      held += idf(word);
      const norm = tf + K1 * (1 - B + (B * doc.length) / Math.max(1, avgLength));
      score += idf(word) * ((tf * (K1 + 1)) / norm);
    }
    return { name: doc.name, score, holdsRare, held, index, doc };
  });
  const ranked = scored.filter((s) => s.score > 0).sort((a, b) => b.score - a.score || a.index - b.index);

  if (ranked.length === 0) return { tools: [], confident: false, ranked: [] };

  // The shortlist ends at the first clean break (the next tool scoring at most `dropoff` of the
  // one before it), else at the sharpest break within the cap.
  const limit = Math.min(cap, ranked.length);
  const score = (i: number) => ranked[i]?.score ?? 0;
  let cut = 0;
  for (let i = 1; i <= limit && cut === 0; i++) if (score(i) <= dropoff * score(i - 1)) cut = i;
  if (cut === 0) {
    let sharpest = Number.POSITIVE_INFINITY;
    for (let i = 1; i <= limit; i++) {
      const ratio = score(i) / score(i - 1);
      if (ratio < sharpest) {
        sharpest = ratio;
        cut = i;
      }
    }
  }
  const kept = ranked.slice(0, cut);
  const firstOut = ranked[cut]?.score ?? 0;
  const lastKept = kept[kept.length - 1]?.score ?? 0;
  const covered = [...rare].every((word) => kept.some((k) => k.doc.tf.has(word)));
  const confident =
    (ranked[0]?.score ?? 0) >= minScore &&
    knownShare >= KNOWN_SHARE &&
    (kept[0]?.held ?? 0) >= TOP_SHARE * weight &&
    kept.every((k) => k.holdsRare) &&
    covered &&
    firstOut <= dropoff * lastKept;
  return {
    tools: kept.map((k) => k.name),
    confident,
    ranked: ranked.map(({ name, score }) => ({ name, score })),
  };
}
