// What the terminal playground prints of text it did not write itself (a tool's arguments and
// result, an MCP server's stderr in a notice, a `.mcp.json` entry, the model's answer): every character that would act
// on the terminal instead of showing is written as an escape, so that text cannot set the window
// title, erase or redraw lines, move the cursor or reorder what is shown.

// C0 and C1 controls, DEL, and the invisible characters that reorder or join text (bidi
// embeddings, overrides and isolates, marks, zero-width, line and paragraph separators, BOM).
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it escapes.
const UNSEEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `text` with each control or invisible character written as an escape (`\x1b`, `\r`, `\u202e`). */
export function escapeUnseen(text: string): string {
  return text.replace(UNSEEN, (c) => {
    const code = c.charCodeAt(0);
    return (
      NAMED[c] ??
      (code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`)
    );
  });
}

/** `text` escaped as {@link escapeUnseen} does, its line breaks (`\n`) kept: for a notice of several lines. */
export function printable(text: string): string {
  return text.split("\n").map(escapeUnseen).join("\n");
}

/**
 * A piece of the model's streamed answer (or reasoning), escaped as {@link escapeUnseen} does but
 * with its line breaks and tabs kept: a model quoting a file it read cannot act on the terminal
 * either. Each character is escaped on its own, so a piece cut anywhere needs nothing from the next.
 */
export function streamed(text: string): string {
  return text.replace(/[^\n\t]+/g, escapeUnseen);
}

/** `text` on one line (each run of whitespace one space), cut at `max` characters, then escaped. */
export function clip(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, " ");
  return escapeUnseen(flat.length > max ? `${flat.slice(0, max)}…` : flat);
}

/**
 * Where the model's reasoning starts and where the answer after it starts, for output without
 * colour (piped, or NO_COLOR), where the dim style that sets reasoning apart is off: a line
 * `reasoning:` before the first reasoning text, and `answer:` before the answer that follows it.
 * With colour each mark is empty. `reset()` after a tool call or a retraction: what follows starts
 * afresh.
 */
export function phaseMarks(color: boolean): { thinking(): string; answer(): string; reset(): void } {
  let phase: "none" | "reasoning" | "answer" = "none";
  return {
    thinking() {
      if (phase === "reasoning") return "";
      phase = "reasoning";
      return color ? "" : "\nreasoning:\n";
    },
    answer() {
      const after = phase === "reasoning";
      phase = "answer";
      return after && !color ? "\nanswer:\n" : "";
    },
    reset() {
      phase = "none";
    },
  };
}
