/**
 * English function words, dropped before keyword matching.
 *
 * Dropped from a request and from the catalogue before matching: over a
 * catalogue of a few dozen one-line descriptions the inverse document frequency cannot be trusted
 * to sink them, and "for" found in one description would score as the request's rarest word.
 */
export const FUNCTION_WORDS: ReadonlySet<string> = new Set(
  (
    "a about above across after again against all almost along also although am among an and " +
    "another any anybody anyone anything are around as at be because been before being below " +
    "beside besides between both but by can cannot could did do does doing done down during each " +
    "either else enough etc even ever every few for from further had has have having he her here " +
    "hers herself him himself his how however i if in into is it its itself just least less let " +
    "like may me might mine more most much must my myself neither no nor not now of off often on " +
    "once one only onto or other others otherwise our ours ourselves out over own per please " +
    "perhaps quite rather really same shall she should since so some somebody someone something " +
    "such than that the their theirs them themselves then there these they this those though " +
    "through thus till to too toward towards under unless until up upon us very via was we were " +
    "what whatever when whenever where whereas wherever whether which while who whom whose why " +
    "will with within without would yet you your yours yourself yourselves ok okay thanks thank " +
    "hi hello hey want wants need needs i'd i'm it's"
  ).split(" "),
);

/** Cuts a word to a rough stem, so "files", "listing" and "created" meet "file", "list" and "create". */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3) return w;
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (/(?:ss|x|ch|sh)es$/.test(w) && w.length > 4) w = w.slice(0, -2);
  else if (w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.endsWith("ing") && w.length > 5) w = w.slice(0, -3);
  else if (w.endsWith("ed") && w.length > 4) w = w.slice(0, -2);
  if (/([b-df-hj-np-tv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  if (w.endsWith("e") && w.length >= 4) w = w.slice(0, -1);
  return w;
}

/**
 * `word` without the apostrophes it opens or ends with. Index loops, not `/^'+|'+$/`: that regex
 * tried `'+$` at every apostrophe of a run inside a word and read on to the run's end each time, so
 * a pasted run of 100,000 of them took seconds.
 */
function trimApostrophes(word: string): string {
  let start = 0;
  let end = word.length;
  while (start < end && word[start] === "'") start++;
  while (end > start && word[end - 1] === "'") end--;
  return word.slice(start, end);
}

/**
 * The words of a text as matching terms: split on anything that is not a letter or digit and at
 * camelCase and snake_case seams, lower-cased, function words dropped, stemmed (a stem that is a
 * function word dropped too).
 */
export function terms(text: string): string[] {
  const spaced = text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    // "HTMLParser" → "HTML Parser". A lookahead, not ([A-Z]+)([A-Z][a-z]), whose backtracking made
    // a long run of capitals cost the square of its length.
    .replace(/([A-Z])(?=[A-Z][a-z])/g, "$1 ")
    .toLowerCase();
  const out: string[] = [];
  for (const word of spaced.split(/[^\p{L}\p{N}']+/u)) {
    const bare = trimApostrophes(word);
    if (bare === "" || FUNCTION_WORDS.has(bare)) continue;
    const plain = bare.replace(/'s$/, "").replace(/'/g, "");
    if (plain === "" || FUNCTION_WORDS.has(plain)) continue;
    // A stem can be a function word the word was not ("ourr" → "our", "thee" → "the", "thises" →
    // "this"): dropped too, or it scored as a rare term against a catalogue that has none.
    const stemmed = stem(plain);
    if (FUNCTION_WORDS.has(stemmed)) continue;
    out.push(stemmed);
  }
  return out;
}
