/**
 * Text built by appending pieces, kept to about its own size in memory.
 *
 * V8 keeps `a += b` as a pair pointing at both halves (a "cons string", about 32 bytes) until the
 * text is read, so a turn's text built from a million two-character deltas held 32 MB of pairs
 * beside its 2 MB of characters — once per running copy (the raw content, the answer, the
 * reasoning, a call's arguments). Reading a string makes V8 copy it into one flat string and drop
 * the pairs; doing that once the pairs would outweigh the text (at most one piece in 32
 * characters, after 256 pieces) bounds them to about a byte per character, and costs at most 32
 * characters copied per piece, so building the text stays linear.
 */
export class GrownText {
  private value = "";
  private pieces = 0;

  /** The text so far. */
  get text(): string {
    return this.value;
  }

  /** Replaces the text. */
  set text(value: string) {
    this.value = value;
    this.pieces = 0;
  }

  /** Appends `piece`. */
  add(piece: string): void {
    if (piece === "") return;
    this.value += piece;
    this.pieces = grown(this.value, this.pieces + 1);
  }
}

/** The last flattening search's answer, kept only so an optimising compiler cannot drop the search. */
let _searched = 0;

/** Pieces appended before `grown` looks at whether to flatten. */
const FLATTEN_AFTER = 256;
/** Bytes a V8 cons string (one `+=`) holds, about. */
const PAIR_BYTES = 32;

/**
 * `pieces` appended to `text` since it was last flat: flattens it when their pairs would outweigh
 * it, and returns the count to go on with (0 once flat).
 */
export function grown(text: string, pieces: number): number {
  if (pieces < FLATTEN_AFTER || pieces * PAIR_BYTES < text.length) return pieces;
  // Searching a string needs it flat: V8 copies it into one and frees the pairs. (The answer is
  // kept so the search is not dropped as unused.)
  _searched = text.indexOf("\u0000");
  return 0;
}
