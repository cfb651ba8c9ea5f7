// Where the lines an open drops from a session file go: appended to one `<file>.dropped` (a name
// no session file has: those end in `.jsonl`), a header per open, kept under a size limit by
// removing the oldest opens' drops first.
import { appendFileSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { AgentError, errorText } from "./errors.js";
import { APPEND, READ_UTF8, REPLACE } from "./fs-options.js";
import { isRecord } from "./messages.js";

/**
 * The size the dropped-lines file is kept under (4 MiB): an open that would take it past this
 * removes the oldest opens' drops first. The newest open's drops are always kept whole, even alone
 * over the limit.
 */
export const DROPPED_LIMIT_BYTES = 4 * 1024 * 1024;

/**
 * The dropped-lines file of a session file: `<id>.jsonl.dropped`. It does not end in `.jsonl`, so
 * it is never another session's file (a session id `notes.jsonl.dropped` has the file
 * `notes.jsonl.dropped.jsonl`).
 */
export function droppedPath(file: string): string {
  return `${file}.dropped`;
}

/**
 * Whether `line` is an `open` header as `keepDroppedLines` writes one: a JSON record
 * `{ "type": "open", "at": <text>, "pid": <whole number>, "notices": [<text>, …] }`.
 */
function isHeader(line: string): boolean {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return false;
  }
  return (
    isRecord(record) &&
    record.type === "open" &&
    typeof record.at === "string" &&
    Number.isSafeInteger(record.pid) &&
    Array.isArray(record.notices) &&
    record.notices.every((notice) => typeof notice === "string")
  );
}

/**
 * Whether `text`, the dropped-lines file as it is, is one this module wrote: empty (or blank), or
 * its first line a whole `open` header (`isHeader`). Anything else is someone else's file — a
 * pretty-printed JSON document starting `{`, a header cut off part way (a crash inside the very
 * first append, which leaves a file to move aside by hand as any foreign one) — and is never
 * appended to or trimmed.
 */
function isDroppedFile(text: string): boolean {
  if (text.trim() === "") return true;
  const end = text.indexOf("\n");
  return isHeader(end === -1 ? text : text.slice(0, end));
}

/**
 * A line of a session file that an open does not write back as it was: its 1-based number and its
 * text as it was in the file. `rewritten` marks a line the reader kept in a normalised form (the
 * rewritten file holds that form), as against one it dropped.
 */
export interface DroppedLine {
  line: number;
  text: string;
  rewritten?: true;
}

/** Splits a dropped-lines file into its opens' blocks (each from its header line); anything before the first header is a block of its own. */
function blocks(text: string): string[] {
  const out: string[] = [];
  let current = "";
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (isHeader(line) && current !== "") {
      out.push(current);
      current = "";
    }
    current += `${line}\n`;
  }
  if (current !== "") out.push(current);
  return out;
}

/**
 * Appends `lines`, the lines of the session file `file` (as it is now, before the rewrite) that
 * the reader did not keep as written (its `lost`: the one account of them, the file is not read
 * again), to `<file>.dropped`: a header `{ type: "open", at, pid, notices }` and one
 * `{ type: "line", line, text }` per line (with `rewritten: true` for a line the reader kept in a
 * normalised form), the line's text as it was. Past `limit` bytes the oldest opens' blocks are
 * removed first (the file is then rewritten through a temporary file and a rename). Returns the
 * notice to show, or undefined when `lines` is empty. Throws `AgentError` (`storage`) when the
 * dropped-lines file cannot be written, and, writing nothing, when an existing `<file>.dropped`
 * is not one this module wrote (its first line is not a whole `open` header): its content is never
 * folded into, or trimmed away from, the drops.
 */
export function keepDroppedLines(
  file: string,
  lines: readonly DroppedLine[],
  notices: readonly string[],
  limit = DROPPED_LIMIT_BYTES,
): string | undefined {
  if (lines.length === 0) return undefined;
  const target = droppedPath(file);
  const header = { type: "open", at: new Date().toISOString(), pid: process.pid, notices: [...notices] };
  const block = [
    header,
    ...lines.map(({ line, text, rewritten }) => ({
      type: "line",
      line,
      text,
      ...(rewritten ? { rewritten } : {}),
    })),
  ]
    .map((record) => `${JSON.stringify(record)}\n`)
    .join("");
  let existing = "";
  try {
    existing = readFileSync(target, READ_UTF8);
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") {
      throw new AgentError("storage", `Could not read ${target}: ${errorText(error)}`, { cause: error });
    }
  }
  if (!isDroppedFile(existing)) {
    throw new AgentError(
      "storage",
      `The session file ${file} has ${lines.length} line(s) it cannot read back, to be kept in ${target} ` +
        `before the file is rewritten, but ${target} is not a dropped-lines file (its first line is not an ` +
        `"open" header), so nothing was written and the session was not opened. Move ${target} aside ` +
        "(or delete it), then open the session again.",
    );
  }
  let removed = 0;
  try {
    const size = (s: string) => Buffer.byteLength(s);
    // A last line cut off (by hand, or a crash mid-append) stays a line of its own.
    const torn = existing !== "" && !existing.endsWith("\n");
    if (size(existing) + size(block) + 1 <= limit) {
      appendFileSync(target, torn ? `\n${block}` : block, APPEND);
    } else {
      const older = blocks(existing);
      let total = older.reduce((sum, b) => sum + size(b), 0) + size(block);
      while (older.length > 0 && total > limit) {
        total -= size(older.shift() as string);
        removed++;
      }
      const temp = `${target}.${process.pid}.tmp`;
      try {
        writeFileSync(temp, older.join("") + block, REPLACE);
        renameSync(temp, target);
      } catch (error) {
        // What was written of it is not left behind.
        try {
          unlinkSync(temp);
        } catch {}
        throw error;
      }
    }
  } catch (error) {
    throw new AgentError(
      "storage",
      `Could not write the dropped lines of ${file} to ${target}: ${errorText(error)}`,
      {
        cause: error,
      },
    );
  }
  const said = lines.some((entry) => entry.rewritten)
    ? `The ${lines.length} line(s) dropped from the session file or rewritten on reading are kept, as they were, in ${target}.`
    : `The ${lines.length} line(s) dropped from the session file are kept in ${target}.`;
  return (
    said +
    (removed > 0
      ? ` To keep that file under ${mib(limit)}, the drops of its ${removed} oldest open(s) were removed from it.`
      : "")
  );
}

function mib(bytes: number): string {
  const value = bytes / (1024 * 1024);
  return `${Number.isInteger(value) ? value : value.toFixed(2)} MiB`;
}
