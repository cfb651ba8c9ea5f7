/** How much of a name or value the model wrote the agent's own words echo: it can be any size. */
const ECHOED_CHARS = 60;

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidirectional marks,
 * embeddings, overrides and isolates: what an echoed name or value writes as `\uXXXX` — the set
 * `@loopwright/tools` escapes in what it echoes of a model's text, and the loop in its own words
 * (`review-r103e.test.ts` holds this copy to tools' set). A copy: the loop does not export its own.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
/** `CONTROLS` without its global flag: a test that keeps no `lastIndex` between names. */
const CONTROL_FOUND = new RegExp(CONTROLS.source);

/** `text` with each character of `CONTROLS` written `\uXXXX`. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Text the model wrote as a JSON string (its quotes and backslashes escaped, so its end is plain),
 * cut to 60 characters with its length said, half a surrogate pair written U+FFFD, and each of
 * `CONTROLS` written `\uXXXX`: a 10 MB value is not sent back whole on every later request, and a
 * right-to-left override or a terminal's escape in it does not turn the words around it where a
 * host shows them.
 */
export function quotedEcho(text: string): string {
  const sound = text.toWellFormed();
  const last = sound.charCodeAt(ECHOED_CHARS - 1);
  const cut =
    sound.length <= ECHOED_CHARS
      ? sound
      : `${sound.slice(0, last >= 0xd800 && last <= 0xdbff ? ECHOED_CHARS - 1 : ECHOED_CHARS)}… (${text.length} characters)`;
  return escapeControls(JSON.stringify(cut));
}

/**
 * A tool's name as the loop's own words say it ("the add tool did not finish…"): as it is where a
 * tool could be named so (60 characters at most, well formed, nothing `CONTROLS` holds), quoted as
 * `quotedEcho` writes it otherwise — the loop's `echoedName`, which it does not export.
 */
export function echoedName(name: string): string {
  return name.length <= ECHOED_CHARS && name.isWellFormed() && !CONTROL_FOUND.test(name)
    ? name
    : quotedEcho(name);
}
