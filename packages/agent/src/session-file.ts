import {
  appendFileSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { types } from "node:util";
import type { ChatMessage } from "@loopwright/loop";
import { escapeControls, quotedEcho } from "./echo.js";
import { AgentError, errorText, kindOf } from "./errors.js";
import { APPEND, READ_UTF8, REPLACE } from "./fs-options.js";
import {
  type AgentMessage,
  answeredPrefix,
  callProblem,
  cutText,
  fieldOf,
  hasCalls,
  isRecord as isObject,
  isPart,
  LLM_ROLES,
  type MessageToolCall,
  messageText,
  toolCallsOf,
} from "./messages.js";
import { setting } from "./own.js";
import { type DroppedLine, keepDroppedLines } from "./session-dropped.js";

/** One item of a session's todo list. */
export interface Todo {
  content: string;
  status: TodoStatus;
}

/** Where a todo stands. */
export type TodoStatus = "pending" | "inProgress" | "completed";

/** A session file's records, one JSON object per line. */
type SessionRecord =
  | { type: "session"; version: 1; id: string; createdAt: string }
  | { type: "message"; message: AgentMessage }
  | { type: "todos"; todos: Todo[] }
  | { type: "loaded"; loaded: string[] };

/** What reading a session file gives back. */
export interface LoadedSession {
  messages: AgentMessage[];
  todos: Todo[];
  /** On demand: the tools the session's runs had loaded when it was last written (the last `loaded` record); `[]` when none. */
  loaded: string[];
  createdAt: string | undefined;
  /** What was wrong with the file and dropped (a torn last line, a line it could not read), and the calls of a cut-off tool step answered `NOT_RECORDED`. */
  notices: string[];
}

/** A session as `listSessions` describes it. */
export interface SessionMeta {
  id: string;
  /** The first user message, shortened; absent for a session that never had one. */
  title?: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * The longest name the store gives a file of a session: `<id>.jsonl.dropped.<pid>.tmp` (a rewrite's
 * temporary file of the `.dropped` file), with a pid of 7 digits (Linux's largest is 4194304).
 */
const LONGEST_SUFFIX = ".jsonl.dropped.4194304.tmp";

/**
 * The most UTF-8 bytes a session id may take: every file the store names after it (the session
 * file, `.lock`, `.dropped` and the rewrites' temporary files) then fits a file name of 255 bytes.
 */
const MAX_SESSION_ID_BYTES = 255 - LONGEST_SUFFIX.length;

/**
 * The file of a session id inside a directory. Throws `AgentError` (`invalid-input`) for an id that
 * is not one path segment, that holds a lone UTF-16 surrogate (the file system would name its file
 * with U+FFFD, the file of every other such id), or that takes more than 229 bytes in UTF-8
 * (so that every file named after it fits a file name of 255 bytes).
 */
export function sessionPath(dir: string, sessionId: string): string {
  pathArgument("sessionPath", "dir", dir);
  if (typeof sessionId !== "string") {
    throw new AgentError(
      "invalid-input",
      `sessionPath: sessionId must be a string; got ${kindOf(sessionId)}.`,
    );
  }
  if (
    sessionId === "" ||
    sessionId === "." ||
    sessionId === ".." ||
    /[/\\]/.test(sessionId) ||
    sessionId.includes("\0")
  ) {
    throw new AgentError(
      "invalid-input",
      `A session id must be one path segment (no "/", "\\\\" or NUL, not "." or ".."); got ${quotedEcho(sessionId)}.`,
    );
  }
  if (!sessionId.isWellFormed()) {
    throw new AgentError(
      "invalid-input",
      `A session id must be well-formed text; got ${quotedEcho(sessionId)}, which holds a lone UTF-16 surrogate (its file would be named with U+FFFD in its place, the file of other such ids).`,
    );
  }
  const bytes = Buffer.byteLength(sessionId);
  if (bytes > MAX_SESSION_ID_BYTES) {
    throw new AgentError(
      "invalid-input",
      `A session id must take at most ${MAX_SESSION_ID_BYTES} bytes in UTF-8 (the names of its files, up to <id>${LONGEST_SUFFIX}, must fit 255 bytes); got one of ${bytes} bytes: ${quotedEcho(sessionId)}.`,
    );
  }
  return join(dir, `${sessionId}.jsonl`);
}

/** A file name as a file system that ignores case and Unicode normalization (macOS, Windows) compares it. */
function folded(name: string): string {
  return name.normalize("NFC").toLowerCase();
}

/**
 * Throws `AgentError` (`invalid-input`) when `dir` holds the file of another session whose id
 * differs from `sessionId` only by case or Unicode normalization ("Chat" for "chat") and none of
 * `sessionId`'s own: a file system that ignores case (macOS, Windows) opens that session's file for
 * `sessionId`, resuming another conversation under its lock, so such an id is refused on every file
 * system alike (a directory copied there keeps working). A pair that exists already, each its own
 * file on a file system that tells case apart, opens as before. A directory that cannot be listed
 * (missing) refuses nothing.
 */
export function refuseCaseTwin(dir: string, sessionId: string): void {
  const own = `${sessionId}.jsonl`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  if (names.includes(own)) return;
  const key = folded(own);
  const twin = names.find((name) => name.endsWith(".jsonl") && folded(name) === key);
  if (twin === undefined) return;
  const other = twin.slice(0, -".jsonl".length);
  // Twins by Unicode normalization read alike ("é" composed, and "e" with a combining accent): each
  // is named with its code points too, or the message named one id twice to the eye.
  const alike = sessionId.toLowerCase() !== other.toLowerCase();
  // Each id named as echoes are (cut at 60, controls escaped); the one to open is given whole, as
  // the id to pass (a file's name, at most 255 bytes: bounded), its controls written \uXXXX.
  const named = (id: string) => (alike ? `${quotedEcho(id)} (${codePoints(id)})` : quotedEcho(id));
  throw new AgentError(
    "invalid-input",
    `Session id ${named(sessionId)} differs from the session ${named(other)} in ${dir} only by case (or Unicode normalization): a file system that ignores case opens that session's file for it, so it is refused everywhere. Open ${escapeControls(JSON.stringify(other))}, or choose an id that differs by more than case.`,
  );
}

/** The first 40 code points of `id` as `U+00E9 U+0074 …` (a longer id: "…" after them). */
function codePoints(id: string): string {
  const points: string[] = [];
  for (const char of id) {
    if (points.length === 40) {
      points.push("…");
      break;
    }
    points.push(`U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`);
  }
  return points.join(" ");
}

/**
 * Throws `AgentError` (`invalid-input`) for a path argument that is not a non-empty string: `fs`
 * reads a number as an open file descriptor (0 is stdin, where a read waits), and an `undefined`
 * directory would list nothing as a missing one does.
 */
function pathArgument(fn: string, name: string, value: unknown): void {
  if (typeof value !== "string" || value === "") {
    throw new AgentError(
      "invalid-input",
      `${fn}: ${name} must be a path (a non-empty string); got ${value === "" ? '""' : kindOf(value)}.`,
    );
  }
}

/** `text` cut to `max` characters for a notice. */
function clip(text: string, max = 75): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${cutText(flat, max - 1)}…` : flat;
}

/** How many of the prompts a file ends in unanswered its notice names before the last one. */
const NAMED_PROMPTS = 3;

/**
 * The prompts a session file (or seed) ends in unanswered, as its notice names them: each quoted and
 * clipped to 75 characters, and past four the first three and the last with how many are between
 * (`"a", "b", "c", … and 15,996 more, "z"`). Every one named, 16,000 of them made a notice of about
 * a megabyte, shown to the person and kept in the timeline.
 */
function namedPrompts(texts: readonly string[]): string {
  const quote = (text: string) => escapeControls(JSON.stringify(clip(text)));
  if (texts.length <= NAMED_PROMPTS + 1) return texts.map(quote).join(", ");
  const between = texts.length - NAMED_PROMPTS - 1;
  return `${texts.slice(0, NAMED_PROMPTS).map(quote).join(", ")}, … and ${between.toLocaleString("en-US")} more, ${quote(texts[texts.length - 1] as string)}`;
}

/**
 * Reads a session file. A leading UTF-8 byte order mark is skipped. A last line without its newline
 * (a write cut off by a crash) is dropped, and so is a line that is not JSON or not a record this
 * module writes (a message without a role, a system, developer, user or tool message without
 * content, tool calls that are not a list of `{ id, function: { name, arguments } }` or that give
 * one id twice, a chat message's content part an endpoint would
 * refuse (no string `type`, a text part without its text, an image part without its url), todos
 * that are not a list of `{ content, status }`, a record nested deeper than `MAX_RECORD_DEPTH`
 * levels), together with the tool messages answering a dropped assistant message's calls (the tool
 * messages that follow it up to the next other chat message, whatever their ids: a later step
 * reusing an id keeps its answers) — each with a notice. A tool step cut off mid-run (the host
 * stopped while its calls ran) is kept: the assistant message, the results that were written (the
 * session writes each as its call finishes), and for each call without one a tool message
 * `NOT_RECORDED`, with a notice naming those calls; messages after such a step that would break the
 * transcript (a non-tool chat message before the step's end, an answer to no open call) are dropped
 * with a notice, as is everything after an answer to no call. A step's answers are read in the order
 * of its calls. A stored call whose `type` is another string (`"tool"`, `"function_call"`, `""`) but
 * which holds a well-formed `function` is read as that function call, with a notice. Returns an
 * empty session for a missing file. Throws `AgentError` (`storage`) when the file cannot be read, and
 * (`invalid-input`) for a path that is not a non-empty string (a number would be read as a file descriptor).
 */
export function readSessionFile(path: string): LoadedSession {
  pathArgument("readSessionFile", "path", path);
  const { lost: _, ...loaded } = readSession(path);
  return loaded;
}

/**
 * `readSessionFile`, and the lines of the file it did not keep as written (`lost`, by line number,
 * each once): every line it dropped (the torn last line, a line it could not read, a dropped
 * message's answers, messages after an unfinished step) and every line it kept but rewrote (a
 * call whose `type` it read as "function", a record with top-level fields this version does not
 * write; `rewritten`), each with its text as it was (a byte order
 * mark before the first line is no part of it). What a session copies to `<file>.dropped` before
 * its rewrite, as the one account of what that rewrite loses. Not in it: blank lines; the session
 * header and well-formed todo and loaded records, state the rewrite writes as it then stands (the
 * last todo and loaded lists); a step's answers put in the order of its calls, each still written
 * as it was; and the `NOT_RECORDED` answers to a cut-off step's calls, which add messages and
 * rewrite no line.
 *
 * With `unanswered` (a session opening its own file), user messages the transcript ends in with no
 * assistant message after them (the host died while a prompt waited for the model) are dropped too,
 * with a notice: kept, the next prompt would be sent joined onto them. App-only messages after them
 * (roles the default `convertToLlm` does not send) answer nothing: they are looked past and kept. A tool step cut off mid-run
 * is not one: it is kept with its calls answered `NOT_RECORDED`, as above.
 *
 * With `seed` (the file an `importPath` names, read to seed a new session and never written), the
 * notices call it "the seed", each begins "importPath <path>: ", and a dropped prompt is "not
 * carried into the new session": the new session's own file never held what they tell of.
 */
export function readSession(
  path: string,
  unanswered = false,
  seed = false,
): LoadedSession & { lost: DroppedLine[] } {
  let text: string;
  try {
    text = readFileSync(path, READ_UTF8);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT")
      return { messages: [], todos: [], loaded: [], createdAt: undefined, notices: [], lost: [] };
    throw new AgentError(
      "storage",
      `Could not read ${seed ? "the importPath seed" : "the session file"} ${path}: ${errorText(error)}`,
      {
        cause: error,
      },
    );
  }
  // A byte order mark an editor put first is no part of the header line.
  if (text.startsWith("\uFEFF")) text = text.slice(1);
  const notices: string[] = [];
  /** How the notices name the file: a session's own, or the seed an importPath names. */
  const file = seed ? "the seed" : "the session file";
  const lines = text.split("\n");
  const torn = lines.pop() ?? "";
  /** The lines not kept as written, by line number: a line dropped after it was rewritten counts once. */
  const lost = new Map<number, DroppedLine>();
  const drop = (at: number) => lost.set(at + 1, { line: at + 1, text: lines[at] as string });
  if (torn !== "") {
    notices.push(
      `The last line of ${file} was cut off mid-write (${torn.length} characters) and was dropped.`,
    );
    lost.set(lines.length + 1, { line: lines.length + 1, text: torn });
  }
  const messages: AgentMessage[] = [];
  /** The index in `lines` each of `messages` was read from. */
  const from: number[] = [];
  let todos: Todo[] = [];
  let loaded: string[] = [];
  let createdAt: string | undefined;
  /**
   * True from an assistant message dropped as malformed until the next chat message that is not a
   * tool message: the tool messages in between answer its calls, whatever their ids say.
   */
  let inDroppedStep = false;
  /**
   * True from a dropped line that follows no open question — the file's start, or a finished answer
   * (an assistant message without calls) — until the next user message: an assistant message there
   * answers a question that was dropped (a prompt's line cut or corrupted). Kept, it would open the
   * transcript or follow another answer, which an endpoint that makes roles alternate refuses at
   * every later prompt; it goes with its question, its tool steps with it.
   */
  let inOrphanAnswer = false;
  /** The role of the last chat message kept (`undefined` before the first, as after a system message). */
  let lastKept: "user" | "answered" | "open" | undefined;
  const dropLine = (at: number) => {
    drop(at);
    if (lastKept === undefined || lastKept === "answered") inOrphanAnswer = true;
  };
  /** The line numbers of the messages read that say nothing (`saysNothing`). */
  const silent: number[] = [];
  lines.forEach((line, at) => {
    if (line.trim() === "") return;
    let record: SessionRecord;
    try {
      record = JSON.parse(line) as SessionRecord;
    } catch {
      notices.push(`Line ${at + 1} of ${file} is not JSON and was dropped.`);
      dropLine(at);
      return;
    }
    const read = withFunctionTypes(record, at + 1, notices, file);
    // Kept in its normalised form, the line as written would be lost with the rewrite.
    if (read !== record) lost.set(at + 1, { line: at + 1, text: line, rewritten: true });
    record = read;
    const problem = recordProblem(record);
    if (problem) {
      notices.push(`Line ${at + 1} of ${file} is ${problem} and was dropped.`);
      // A header, a todo or loaded list, a system or app-only message was never a prompt nor part
      // of an answer: an answer after it (a greeting the host put first) is as the file had it.
      if (orphansWhatFollows(record)) dropLine(at);
      else drop(at);
      // Its calls' answers go with it: left behind, they would answer nothing, and everything
      // after them would be cut as an unfinished step.
      if (isAssistantRecord(record)) inDroppedStep = true;
      return;
    }
    if (inDroppedStep && record.type === "message") {
      const role = fieldOf(record.message, "role");
      if (role === "tool") {
        notices.push(
          `Line ${at + 1} of ${file} answers tool call ${quotedEcho(fieldOf(record.message, "tool_call_id") as string)} of a message that was dropped, and was dropped with it.`,
        );
        drop(at);
        return;
      }
      // An app-only message is never sent and does not end the step (the Agent writes one between
      // a call and its answer); any other chat message does.
      if (LLM_ROLES.has(role as string)) inDroppedStep = false;
    }
    if (inOrphanAnswer && record.type === "message") {
      const role = fieldOf(record.message, "role");
      if (role === "assistant" || role === "tool") {
        notices.push(
          `Line ${at + 1} of ${file} holds ${role === "tool" ? "a tool result" : "an answer"} to a prompt whose line was dropped, and was dropped with it (kept, the conversation would ${lastKept === undefined ? "open with an answer" : "hold two answers in a row"}, which endpoints that make roles alternate refuse).`,
        );
        drop(at);
        return;
      }
      if (role === "user") inOrphanAnswer = false;
    }
    const extra = unwrittenFields(record);
    if (extra.length > 0) {
      // The rewrite writes only the fields this version writes: the line as it was is copied.
      notices.push(
        `Line ${at + 1} of ${file} has field(s) ${extra.map((key) => JSON.stringify(key)).join(", ")} that this version does not write; it was read without them.`,
      );
      lost.set(at + 1, { line: at + 1, text: line, rewritten: true });
    }
    if (record.type === "message") {
      const sent = withSentFieldsOnly(record.message, at + 1, notices, file);
      if (sent !== record.message) {
        lost.set(at + 1, { line: at + 1, text: line, rewritten: true });
        record = { ...record, message: sent };
      }
    }
    if (record.type === "session") createdAt = record.createdAt;
    else if (record.type === "message") {
      if (saysNothing(record.message)) silent.push(at + 1);
      const role = fieldOf(record.message, "role");
      if (role === "user") lastKept = "user";
      else if (role === "assistant") {
        const calls = setting(record.message, "tool_calls");
        lastKept = Array.isArray(calls) && calls.length > 0 ? "open" : "answered";
      } else if (role === "tool") lastKept = "open";
      messages.push(record.message);
      from.push(at);
    } else if (record.type === "todos") todos = record.todos;
    else if (record.type === "loaded") loaded = record.loaded;
  });
  const keep = answeredPrefix(messages);
  let cutStep = false;
  if (keep < messages.length) {
    const step = closeCutStep(messages, keep);
    const end = step ? step.end : keep;
    if (step && step.missing.length > 0) {
      cutStep = true;
      notices.push(
        `The host stopped in the middle of a tool step: no result was recorded for tool call(s) ${step.missing.map(describeCall).join(", ")}; ` +
          "each is answered as not recorded (it may or may not have run).",
      );
    }
    if (end < messages.length) {
      notices.push(
        step
          ? `${messages.length - end} message(s) after a tool step whose calls were not all answered before them were dropped.`
          : `${messages.length - end} message(s) from a tool message that answers no open call on were dropped.`,
      );
      for (const at of from.slice(end)) drop(at);
    }
    messages.splice(keep, messages.length - keep, ...(step ? step.kept : []));
  }
  if (unanswered) {
    // A kept cut-off step ends in its answers, never a user message: the trailing user messages all
    // come before `keep`, where `from` still gives each one's line.
    // App-only messages (roles the default convertToLlm does not send: a UI note, a status line)
    // after the prompt answer nothing: the prompt is still unanswered, and they are kept.
    let end = messages.length;
    const prompts: number[] = [];
    for (; end > 0; end--) {
      const role = fieldOf(messages[end - 1], "role");
      if (role === "user") prompts.push(end - 1);
      else if (typeof role === "string" && LLM_ROLES.has(role)) break;
    }
    // Gathered from the end, oldest first once turned round (not put at the front one by one).
    prompts.reverse();
    if (prompts.length > 0) {
      const named = namedPrompts(prompts.map((at) => messageText(messages[at] as AgentMessage)));
      const one = prompts.length === 1;
      notices.push(
        seed
          ? `The seed ends in ${one ? "a prompt" : "prompts"} (${named}) the model never answered: not carried into the new session, so its next prompt is not joined onto ${one ? "it" : "them"}; send ${one ? "it" : "them"} again if still wanted.`
          : `The session file ends in ${one ? "a prompt" : "prompts"} (${named}) the model never answered (the host stopped while waiting for it): not kept in the conversation, so the next prompt is not joined onto ${one ? "it" : "them"}; send it again.`,
      );
      for (const at of prompts) drop(from[at] as number);
      for (const at of [...prompts].reverse()) messages.splice(at, 1);
    }
    // A file that ends in a tool step's results, every call answered, is a run that stopped before
    // the model's next turn: the host was killed while it waited for the model, or the run was
    // stopped then. Nothing is wrong with the transcript, but without a word the person was never
    // told that the task did not finish (a cut step says so in its own notice, above).
    if (!seed && !cutStep && endsInResults(messages)) {
      notices.push(
        "The conversation ends in tool results the model has not answered yet (the last run stopped, or the host did, before the model's next turn): the next prompt is sent after them, and session.agent.continue() has the model go on from them.",
      );
    }
  }
  // Kept (the session writes the empty answer a model gave), but never sent: the loop leaves it out
  // of every request, and the user messages around it (or the next prompt) reach the model as one.
  const empty = silent.filter((line) => !lost.has(line) || lost.get(line)?.rewritten === true);
  if (empty.length > 0) {
    const one = empty.length === 1;
    notices.push(
      `${one ? "Line" : "Lines"} ${empty.join(", ")} of ${file} ${one ? "holds an assistant message" : "hold assistant messages"} that ${one ? "says" : "say"} nothing (no text, no tool calls): kept, but never sent to the model (endpoints refuse an empty answer), so the user messages on either side of ${one ? "it" : "each"} — or the next prompt — reach the model as one message.`,
    );
  }
  inCallOrder(messages);
  return {
    messages,
    todos,
    loaded,
    createdAt,
    // A seed's notices name it: the session's own file never held what they tell of.
    notices: seed ? notices.map((notice) => `importPath ${path}: ${notice}`) : notices,
    lost: [...lost.values()].sort((a, b) => a.line - b.line),
  };
}

/** The fields the writer writes in each kind of record. */
const WRITTEN_FIELDS: Readonly<Record<string, readonly string[]>> = {
  session: ["type", "version", "id", "createdAt"],
  message: ["type", "message"],
  todos: ["type", "todos"],
  loaded: ["type", "loaded"],
};

/** A kept record's top-level fields the writer does not write (a newer version's, a hand edit's): the rewrite would lose them. */
function unwrittenFields(record: SessionRecord): string[] {
  const written = WRITTEN_FIELDS[record.type] ?? [];
  return Object.keys(record).filter((key) => !written.includes(key));
}

/**
 * The answer a session gives, on reopening, a call of a tool step the host stopped in whose result
 * was never written: the call may have run (and done what it does) or not.
 */
export const NOT_RECORDED =
  "Not recorded: the host stopped before this call's result was written down; the call may or may not have run. Check before running it again.";

/**
 * How deep a line's record may nest (the record itself is level 1, a message in it level 2). A
 * session refuses to write a message that would nest deeper (`AgentError` `invalid-input`), and the
 * reader drops a deeper line with a notice: a file is read and written again whole on opening, and
 * JSON text nested some thousands of levels deep overflows the stack there. Far below that bound.
 */
export const MAX_RECORD_DEPTH = 1000;

/**
 * The tool step `messages[from]` opens when its calls were not all answered: the assistant message,
 * then what follows it while each message is an answer to one of its calls not answered yet or an
 * app-only message (up to `end`), then a `NOT_RECORDED` answer for each call still without one
 * (`missing`, in the calls' order). Undefined when `messages[from]` is no assistant message with calls.
 */
function closeCutStep(
  messages: readonly AgentMessage[],
  from: number,
): { kept: AgentMessage[]; end: number; missing: MessageToolCall[] } | undefined {
  const head = messages[from];
  if (!hasCalls(head)) return undefined;
  const ids = toolCallsOf(head).map((call) => call.id);
  const open = new Set(ids);
  let end = from + 1;
  for (; end < messages.length; end++) {
    const role = fieldOf(messages[end], "role");
    if (!LLM_ROLES.has(role as string)) continue;
    if (role === "tool" && open.delete(fieldOf(messages[end], "tool_call_id") as string)) continue;
    break;
  }
  const missing = toolCallsOf(head).filter((call) => open.has(call.id));
  const answers = missing.map(
    (call): ChatMessage => ({ role: "tool", tool_call_id: call.id, content: NOT_RECORDED }),
  );
  return { kept: [...messages.slice(from, end), ...answers], end, missing };
}

/** Whether the last chat message an endpoint is sent is a tool result (app-only messages looked past). */
function endsInResults(messages: readonly AgentMessage[]): boolean {
  for (let at = messages.length - 1; at >= 0; at--) {
    const role = fieldOf(messages[at], "role");
    if (typeof role === "string" && LLM_ROLES.has(role)) return role === "tool";
  }
  return false;
}

/**
 * A call for a notice a person reads: the tool and what it was asked (`run_command
 * {"command":"make deploy"}`), then its id. The id alone (`"zhTJ8ACWf2e7IQFtCsjSDtVaVKHjcjQu"`,
 * as llama.cpp makes them) left the user unable to tell which side effect to check.
 */
function describeCall(call: MessageToolCall): string {
  const fn = setting(call, "function");
  const name = setting(fn, "name");
  const args = setting(fn, "arguments");
  const what = typeof name === "string" ? clip(name, 64) : "a tool";
  const asked = typeof args === "string" && args.trim() !== "" ? ` ${clip(args, 120)}` : "";
  return `${what}${asked} (id ${quotedEcho(call.id)})`;
}

/**
 * Puts each tool step's answers in the order of its calls, in place (the places the answers hold
 * stay theirs; an app-only message between them keeps its own). The session writes each answer as
 * its call finishes, so a parallel step's answers reach the file in the order they finished, while
 * the run's transcript holds them in the calls' order: read back, the two are the same.
 */
function inCallOrder(messages: AgentMessage[]): void {
  for (let at = 0; at < messages.length; at++) {
    const calls = fieldOf(messages[at], "role") === "assistant" ? toolCallsOf(messages[at]) : [];
    if (calls.length < 2) continue;
    const rank = new Map(calls.map((call, k) => [call.id, k]));
    const places: number[] = [];
    let end = at + 1;
    for (; end < messages.length; end++) {
      const role = fieldOf(messages[end], "role");
      if (role === "tool") places.push(end);
      else if (LLM_ROLES.has(role as string)) break;
    }
    const rankOf = (k: number) =>
      rank.get(fieldOf(messages[k], "tool_call_id") as string) ?? Number.MAX_SAFE_INTEGER;
    const answers = [...places].sort((x, y) => rankOf(x) - rankOf(y)).map((k) => messages[k] as AgentMessage);
    places.forEach((place, k) => {
      messages[place] = answers[k] as AgentMessage;
    });
    at = end - 1;
  }
}

/** JSON.rawJSON's values (Node 21 on) are written as the primitive they hold. */
const isRawJSON = (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON;

/**
 * Whether `root`, written by `JSON.stringify` as the property `key` of what holds it, nests deeper
 * than `MAX_RECORD_DEPTH` with `root` itself at `level`. It measures what is written, as
 * `JSON.stringify` writes it: an object's (or bigint's) `toJSON` method's result, called with the
 * property's key, in place of the value; a Number, String, Boolean or BigInt object as its
 * primitive; an array's items by index and an object's own enumerable string keys; functions,
 * symbols and undefined as nothing deeper. An object written at several places (shared by two
 * fields, one shallow and one deep) is written whole at each, so it counts at each: the walk (depth
 * first, with its own stack, no recursion) works out each object's written height once, then adds
 * it at every place the object is reached, so the deepest place decides and the walk stays linear in
 * the objects and fields it looks at. A `toJSON` is called once per object and key. What
 * `JSON.stringify` refuses, writing nothing, is answered as what it is: "cycle" for an object
 * reached again inside itself, "bigint" for a BigInt (or BigInt object) without a `toJSON`; the walk
 * stops there, as it does as soon as any place is deeper than the bound (also where `toJSON` or a
 * getter makes new objects without end). Throws what a getter or `toJSON` throws.
 */
function tooDeep(root: unknown, key: string, level: number): boolean | "cycle" | "bigint" {
  /** Written height of each object looked into whole: 1 for one holding no object written deeper. */
  const heights = new Map<object, number>();
  /** The objects on the path being walked. */
  const open = new Set<object>();
  const called = new Map<object, Map<string, unknown>>();
  /** A BigInt met where `JSON.stringify` would write it (it throws there). */
  let bigint = false;
  /** What `JSON.stringify` looks into for `raw` written as property `name`: an object, or undefined for none. */
  const written = (raw: unknown, name: string): object | undefined => {
    let value = raw;
    if ((typeof value === "object" && value !== null) || typeof value === "bigint") {
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") {
        if (typeof value === "object") {
          let results = called.get(value);
          if (!results) {
            results = new Map();
            called.set(value, results);
          }
          if (results.has(name)) {
            value = results.get(name);
          } else {
            const result = toJSON.call(value, name) as unknown;
            results.set(name, result);
            value = result;
          }
        } else {
          value = toJSON.call(value, name);
        }
      }
    }
    if (
      typeof value === "bigint" ||
      (typeof value === "object" && value !== null && types.isBigIntObject(value))
    ) {
      bigint = true;
      return undefined;
    }
    if (typeof value !== "object" || value === null) return undefined;
    if (
      types.isNumberObject(value) ||
      types.isStringObject(value) ||
      types.isBooleanObject(value) ||
      isRawJSON?.(value)
    ) {
      return undefined;
    }
    return value;
  };
  interface Frame {
    value: object;
    /** An object's keys; undefined for an array (its indices). */
    keys: string[] | undefined;
    length: number;
    next: number;
    /** The tallest height among what it holds so far. */
    tallest: number;
  }
  const enter = (value: object): Frame => {
    open.add(value);
    const keys = Array.isArray(value) ? undefined : Object.keys(value);
    return { value, keys, length: keys ? keys.length : (value as unknown[]).length, next: 0, tallest: 0 };
  };
  const top = written(root, key);
  if (bigint) return "bigint";
  if (top === undefined) return false;
  if (level > MAX_RECORD_DEPTH) return true;
  const stack: Frame[] = [enter(top)];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.next < frame.length) {
      const name = frame.keys ? (frame.keys[frame.next] as string) : String(frame.next);
      frame.next++;
      const child = written((frame.value as Record<string, unknown>)[name], name);
      if (bigint) return "bigint";
      if (child === undefined) continue;
      // The child is written at this depth, and its own contents below it.
      const depth = level + stack.length;
      const height = heights.get(child);
      if (height !== undefined) {
        if (depth + height - 1 > MAX_RECORD_DEPTH) return true;
        if (height > frame.tallest) frame.tallest = height;
        continue;
      }
      if (open.has(child)) return "cycle"; // JSON.stringify writes nothing.
      if (depth > MAX_RECORD_DEPTH) return true;
      stack.push(enter(child));
      continue;
    }
    stack.pop();
    open.delete(frame.value);
    const height = frame.tallest + 1;
    heights.set(frame.value, height);
    const parent = stack[stack.length - 1];
    if (parent && height > parent.tallest) parent.tallest = height;
  }
  return false;
}

/**
 * Why a session file cannot hold `message`, said to follow "it" ("nests …", "holds …", "cannot …"),
 * or undefined when it can: it nests deeper than its record may, or `JSON.stringify` cannot write it
 * (a BigInt, a cycle, a getter or `toJSON` that throws). What the session checks before it writes a
 * message, so it never writes a line its reader drops, nor tries a write that fails each time: until
 * r103 a message JSON cannot write was left to fail its write, a `storage` error naming no message,
 * and held back every message after it from the file, each write trying it again.
 */
export function depthProblem(message: unknown): string | undefined {
  // Its record is level 1, the message (its property "message") level 2.
  let deep: ReturnType<typeof tooDeep>;
  try {
    deep = tooDeep(message, "message", 2);
  } catch (error) {
    return `cannot be written as JSON: a getter or toJSON in it threw (${(errorText(error).split("\n")[0] ?? "").slice(0, 200)})`;
  }
  if (deep === "bigint") {
    return "holds a BigInt, which JSON cannot write (give it as a string or a number)";
  }
  if (deep === "cycle") return "holds a cycle (an object inside itself), which JSON cannot write";
  if (!deep) return undefined;
  return `nests deeper than a session file holds: more than ${MAX_RECORD_DEPTH - 1} levels, the message itself the first (MAX_RECORD_DEPTH, ${MAX_RECORD_DEPTH}, counts the line's record around it)`;
}

/**
 * `record` with each stored tool call whose `type` is a string other than "function" or "custom"
 * (another client's "tool" or "function_call", an empty column) but whose `function` object holds a
 * string name and arguments read as the function call it is, with a notice; anything else as it was.
 */
function withFunctionTypes(
  record: SessionRecord,
  line: number,
  notices: string[],
  file = "the session file",
): SessionRecord {
  if (!isObject(record) || record.type !== "message") return record;
  const message = record.message as unknown;
  if (!isObject(message) || fieldOf(message, "role") !== "assistant") return record;
  const own = setting(message, "tool_calls");
  if (!Array.isArray(own)) return record;
  let changed = false;
  const calls = own.map((call: unknown) => {
    // Own fields only, as everywhere a line is read: the file's text made them.
    const type = setting(call, "type");
    if (!isObject(call) || typeof type !== "string" || type === "function" || type === "custom") return call;
    const fn = setting(call, "function");
    if (typeof setting(fn, "name") !== "string" || typeof setting(fn, "arguments") !== "string") return call;
    const id = setting(call, "id");
    notices.push(
      `Line ${line} of ${file} has tool call ${typeof id === "string" ? quotedEcho(id) : `(its id ${kindOf(id)})`} with type ${quotedEcho(type)}; it was read as the function call it holds.`,
    );
    changed = true;
    return { ...call, type: "function" };
  });
  return changed ? ({ ...record, message: { ...message, tool_calls: calls } } as SessionRecord) : record;
}

/** The fields the endpoint takes of a chat message, by role (the SDK's message params; reasoning replayed as it came). */
const SENT_FIELDS: Readonly<Record<string, readonly string[]>> = {
  system: ["role", "content", "name"],
  developer: ["role", "content", "name"],
  user: ["role", "content", "name"],
  assistant: [
    "role",
    "content",
    "name",
    "tool_calls",
    "refusal",
    "audio",
    "function_call",
    "reasoning_content",
    "reasoning",
  ],
  tool: ["role", "content", "tool_call_id"],
};
/** The fields of a stored tool call, and of its `function` or `custom` part. */
const CALL_FIELDS = ["id", "type", "function", "custom"];
const CALL_PART_FIELDS: Readonly<Record<string, readonly string[]>> = {
  function: ["name", "arguments"],
  custom: ["name", "input"],
};

/** `value`'s own keys not in `keep`, each prefixed with `at` (`__proto__` included: `JSON.parse` makes it an own key). */
function otherKeys(value: Record<string, unknown>, keep: readonly string[], at: string): string[] {
  return Object.keys(value)
    .filter((key) => !keep.includes(key))
    .map((key) => `${at}${key}`);
}

/** A copy of `value` holding only its own `keep` keys (a `__proto__` key is never among them). */
function picked(value: Record<string, unknown>, keep: readonly string[]): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of keep) if (Object.hasOwn(value, key)) copy[key] = value[key];
  return copy;
}

/**
 * A chat message read from a file (checked by `recordProblem`) with only the fields an endpoint
 * takes of its role, in it and in its tool calls: a field another program or version wrote (a
 * `__proto__` key, a timestamp, a note) was sent to the model as it was read, and a strict endpoint
 * refuses a message with a field it does not know. Each field left out is named in a notice. An
 * app-only message (never sent) is returned as it is, as is a message with nothing to leave out.
 */
function withSentFieldsOnly(
  message: AgentMessage,
  line: number,
  notices: string[],
  file: string,
): AgentMessage {
  const m = message as unknown as Record<string, unknown>;
  const role = fieldOf(m, "role") as string;
  const keep = Object.hasOwn(SENT_FIELDS, role) ? SENT_FIELDS[role] : undefined;
  if (!keep) return message;
  const extra = otherKeys(m, keep, "");
  // Only an assistant message's own calls are sent (`recordProblem` checked each is an object);
  // another role's `tool_calls` is a field its role does not take, left out whole. Never
  // Object.prototype's: a text answer with a field to leave out was written back with its calls.
  const own = role === "assistant" ? setting(m, "tool_calls") : undefined;
  const calls = Array.isArray(own) && own.every(isObject) ? (own as Record<string, unknown>[]) : undefined;
  calls?.forEach((call, k) => {
    extra.push(...otherKeys(call, CALL_FIELDS, `tool_calls[${k}].`));
    for (const [part, fields] of Object.entries(CALL_PART_FIELDS)) {
      // The call's own part only: a `custom` object on Object.prototype was read as every function
      // call's custom part, its fields reported as extra and the call rewritten with `custom: {}`.
      const inner = setting(call, part);
      if (isObject(inner)) extra.push(...otherKeys(inner, fields, `tool_calls[${k}].${part}.`));
    }
  });
  if (extra.length === 0) return message;
  notices.push(
    `Line ${line} of ${file} holds ${role === "assistant" ? "an" : "a"} ${role} message with field(s) ${extra.map((key) => JSON.stringify(key)).join(", ")} that no endpoint takes of it; it was read without them (they would have been sent to the model).`,
  );
  const copy = picked(m, keep);
  if (calls) {
    copy.tool_calls = calls.map((call) => {
      const c = picked(call, CALL_FIELDS);
      for (const [part, fields] of Object.entries(CALL_PART_FIELDS)) {
        const inner = setting(call, part);
        if (isObject(inner)) c[part] = picked(inner, fields);
      }
      return c;
    });
  }
  return copy as unknown as AgentMessage;
}

/**
 * Whether `message` is an assistant message that says nothing — no tool calls, no refusal, no text
 * (only blanks) — which the loop leaves out of every request, as endpoints refuse one.
 */
function saysNothing(message: AgentMessage): boolean {
  if (
    fieldOf(message, "role") !== "assistant" ||
    toolCallsOf(message).length > 0 ||
    setting(message, "refusal")
  )
    return false;
  const content = fieldOf(message, "content") as ChatMessage["content"];
  if (content === null || content === undefined) return true;
  if (typeof content === "string") return content.trim() === "";
  return content.every(
    (part) => part?.type === "text" && (typeof part.text !== "string" || part.text.trim() === ""),
  );
}

/** True for a (malformed) message record of an assistant message, as far as it can be read. */
function isAssistantRecord(record: unknown): boolean {
  return (
    isObject(record) &&
    record.type === "message" &&
    isObject(record.message) &&
    fieldOf(record.message, "role") === "assistant"
  );
}

const TODO_STATUSES: ReadonlySet<unknown> = new Set(["pending", "inProgress", "completed"]);
/**
 * What keeps a parsed line from being a record this module writes (said without quoting the
 * line), or undefined for one it could have written.
 */
/**
 * Whether a record dropped as malformed leaves an answer after it without its question: one that
 * may have been a user message, or was a step of the conversation (an assistant or tool message:
 * what follows it continues that answer). A header, a todo or loaded list, or a message of a role
 * that is neither (a system prompt, an app-only note) leaves nothing so: what follows it is as the
 * file had it.
 */
function orphansWhatFollows(record: unknown): boolean {
  if (!isObject(record)) return true;
  const type = setting(record, "type");
  if (type === "session" || type === "todos" || type === "loaded") return false;
  if (type !== "message") return true;
  const role = setting(setting(record, "message"), "role");
  return (
    typeof role !== "string" || role === "" || role === "user" || role === "assistant" || role === "tool"
  );
}

function recordProblem(record: unknown): string | undefined {
  if (!isObject(record)) return "JSON but not a record";
  // Read and written again whole on opening: a nesting far deeper would overflow the stack there.
  // The session never writes one (it refuses such a message), so it came from elsewhere.
  if (tooDeep(record, "", 1) === true) return `a record nested deeper than ${MAX_RECORD_DEPTH} levels`;
  // Every field the line's own, never a polluted Object.prototype's (`tool_call_id` let a tool
  // message without one through, and the agent then refused the whole transcript).
  const type = setting(record, "type");
  if (type === "session") {
    return typeof setting(record, "createdAt") === "string"
      ? undefined
      : "a session header without its createdAt";
  }
  if (type === "todos") {
    const todos = setting(record, "todos");
    const ok =
      Array.isArray(todos) &&
      todos.every(
        (t) =>
          isObject(t) &&
          typeof setting(t, "content") === "string" &&
          TODO_STATUSES.has(setting(t, "status") as TodoStatus),
      );
    return ok ? undefined : "a todo list that is not a list of { content, status }";
  }
  if (type === "loaded") {
    const loaded = setting(record, "loaded");
    const ok = Array.isArray(loaded) && loaded.every((name) => typeof name === "string");
    return ok ? undefined : "a loaded list that is not a list of tool names";
  }
  if (type !== "message") return "a record of no known type";
  const message = setting(record, "message");
  const role = setting(message, "role");
  // An empty role is no role: the agent refuses a transcript holding one, so the session would not open.
  if (!isObject(message) || typeof role !== "string" || role === "") return "a message without a role";
  const content = setting(message, "content");
  if (content !== undefined && content !== null && typeof content !== "string" && !Array.isArray(content)) {
    return "a message whose content is neither text nor a list of parts";
  }
  // Only an assistant message goes without content (its tool calls say it all); the loop refuses a
  // system, developer, user or tool message without it, so every later prompt of the session would fail.
  if ((content === undefined || content === null) && LLM_ROLES.has(role) && role !== "assistant") {
    return `a ${role} message without content (text or a list of parts)`;
  }
  // A chat message is sent to the endpoint as it is read: a part it would refuse would fail every
  // later request of the session. An app-only message (any other role) is never sent.
  if (Array.isArray(content) && LLM_ROLES.has(role) && !content.every(isPart)) {
    return "a message with a content part that is not { type, … } (a text part without its text, an image part without its url)";
  }
  if (role === "tool" && typeof setting(message, "tool_call_id") !== "string") {
    return "a tool message without its tool_call_id";
  }
  const calls = setting(message, "tool_calls");
  if (role === "assistant" && calls !== undefined && calls !== null) {
    if (!Array.isArray(calls)) return "an assistant message whose tool_calls is not a list";
    for (const call of calls) {
      const problem = callProblem(call);
      if (problem) return `an assistant message with ${problem}`;
    }
    // One answer would stand for two calls (strict endpoints refuse a repeated id); the loop never
    // gives two calls of one message the same id.
    const seen = new Set<string>();
    for (const call of calls) {
      const id = setting(call, "id") as string;
      if (seen.has(id)) return `an assistant message that gives tool call id ${quotedEcho(id)} twice`;
      seen.add(id);
    }
  }
  return undefined;
}

/** Appends records to a session file, one line per `write`, so a crash loses at most the line being written. */
export class SessionFile {
  readonly path: string;
  /** The loaded list the file holds last (what `appendLoaded` compares with). */
  #loaded: readonly string[] = [];
  /**
   * Whether an append failed since the file was last written whole: it may have written part of
   * its line (a disk that filled up mid-write), so the next line starts on a line of its own.
   */
  #torn = false;

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Appends one message. Throws `AgentError` (`invalid-input`, nothing written) for a message nested
   * deeper than the file holds (`MAX_RECORD_DEPTH`), and (`storage`) when the write fails.
   */
  appendMessage(message: AgentMessage): void {
    const problem = depthProblem(message);
    if (problem) {
      throw new AgentError(
        "invalid-input",
        `The ${describeMessage(message)} was not written to the session file ${this.path}: it ${problem}.`,
      );
    }
    this.#append({ type: "message", message });
  }

  /** Appends the todo list as it now stands (the last one read wins). */
  appendTodos(todos: readonly Todo[]): void {
    this.#append({ type: "todos", todos: [...todos] });
  }

  /** Appends what on-demand runs have loaded, when it differs from what the file holds last (the last one read wins). */
  appendLoaded(loaded: readonly string[]): void {
    if (sameNames(loaded, this.#loaded)) return;
    this.#append({ type: "loaded", loaded: [...loaded] });
    this.#loaded = [...loaded];
  }

  /**
   * Before a rewrite that leaves out what the reader dropped: appends `lines`, the lines of the file
   * as it is that the reader did not keep as written (`readSession`'s `lost`), to `<file>.dropped`,
   * under a header for this open, and returns the notice saying where they are (undefined when
   * there are none). That file stays under `DROPPED_LIMIT_BYTES`, losing the oldest opens' drops
   * first. Throws `AgentError` (`storage`) when it cannot be written.
   */
  keepDropped(lines: readonly DroppedLine[], notices: readonly string[]): string | undefined {
    return keepDroppedLines(this.path, lines, notices);
  }

  /**
   * Writes the whole state through a temporary file and a rename, so the file is never half-written.
   * Throws `AgentError` (`invalid-input`, the file as it was) when a message is nested deeper than
   * the file holds (`MAX_RECORD_DEPTH`), and (`storage`) when the write fails.
   */
  rewrite(
    id: string,
    createdAt: string,
    messages: readonly AgentMessage[],
    todos: readonly Todo[],
    loaded: readonly string[] = [],
  ): void {
    messages.forEach((message, at) => {
      const problem = depthProblem(message);
      if (!problem) return;
      throw new AgentError(
        "invalid-input",
        `The session file ${this.path} was not written: its message ${at} (the ${describeMessage(message)}) ${problem}.`,
      );
    });
    const records: SessionRecord[] = [
      { type: "session", version: 1, id, createdAt },
      ...messages.map((message) => ({ type: "message" as const, message })),
      ...(todos.length > 0 ? [{ type: "todos" as const, todos: [...todos] }] : []),
      ...(loaded.length > 0 ? [{ type: "loaded" as const, loaded: [...loaded] }] : []),
    ];
    const temp = `${this.path}.${process.pid}.tmp`;
    try {
      writeFileSync(temp, records.map((r) => `${JSON.stringify(r)}\n`).join(""), REPLACE);
      renameSync(temp, this.path);
      this.#loaded = [...loaded];
      this.#torn = false;
    } catch (error) {
      // What was written of it (a disk that filled up, a rename refused) is not left behind.
      removeTemp(temp);
      throw new AgentError("storage", `Could not write the session file ${this.path}: ${errorText(error)}`, {
        cause: error,
      });
    }
  }

  /** Whether the file is there; true too when that cannot be told (a failure other than ENOENT). */
  exists(): boolean {
    try {
      statSync(this.path);
      return true;
    } catch (error) {
      return (error as { code?: string }).code !== "ENOENT";
    }
  }

  #append(record: SessionRecord): void {
    let size: number | undefined;
    try {
      size = statSync(this.path).size;
    } catch {
      size = undefined;
    }
    try {
      // After a failed append the file may end in part of a line: a newline first keeps that part
      // a line of its own (dropped on reading as not JSON), not the head of this record's line.
      appendFileSync(this.path, `${this.#torn ? "\n" : ""}${JSON.stringify(record)}\n`, APPEND);
      this.#torn = false;
    } catch (error) {
      // What it wrote of its line (all of it but the newline, even) is taken back where it can be,
      // so a retry neither follows a fragment nor repeats the record.
      try {
        if (size === undefined) throw error;
        truncateSync(this.path, size);
      } catch {
        this.#torn = true;
      }
      throw new AgentError(
        "storage",
        `Could not append to the session file ${this.path}: ${errorText(error)}`,
        {
          cause: error,
        },
      );
    }
  }
}

/** A message as an error names it: by its role, and a tool message by the call it answers. */
/** Removes a rewrite's temporary file, if it is there (what cannot be removed stays, for the next open). */
function removeTemp(temp: string): void {
  try {
    unlinkSync(temp);
  } catch {
    // Not created, or cannot be removed.
  }
}

/**
 * Removes the temporary files a rewrite of the session file `path` (or of its `.dropped` file) left
 * behind when its process stopped between writing one and renaming it over the file:
 * `<file>.<pid>.tmp` and `<file>.dropped.<pid>.tmp`. The file itself still holds what it held before
 * that rewrite. Called once the file's lock is taken, so no other opener is writing one. Returns a
 * notice naming those removed, if any.
 */
export function removeLeftTemps(path: string): string | undefined {
  const dir = dirname(path);
  const name = basename(path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  const removed: string[] = [];
  for (const entry of names) {
    if (!entry.startsWith(`${name}.`) || !entry.endsWith(".tmp")) continue;
    const middle = entry.slice(name.length + 1, -".tmp".length);
    if (!/^(dropped\.)?\d+$/.test(middle)) continue;
    try {
      unlinkSync(join(dir, entry));
      removed.push(entry);
    } catch {
      // Gone meanwhile, or not this user's to remove: left as it is.
    }
  }
  if (removed.length === 0) return undefined;
  removed.sort();
  const one = removed.length === 1;
  return `Opening ${path}: removed ${removed.length} temporary ${one ? "file" : "files"} a rewrite of the session file left unfinished (the process stopped before renaming ${one ? "it" : "them"}): ${removed.join(", ")}; the session file holds what it held before that rewrite.`;
}

export function describeMessage(message: unknown): string {
  const given = fieldOf(message, "role");
  const answers = fieldOf(message, "tool_call_id");
  const role = typeof given === "string" ? `message with role ${JSON.stringify(given)}` : "message";
  return typeof answers === "string" ? `${role} (answering ${quotedEcho(answers)})` : role;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, at) => name === b[at]);
}

/**
 * Every session in a directory, most recently updated first: its id, title (the first user
 * message, shortened), creation and update times. The id is the file's name, the one
 * `createSession({ sessionId })` opens it by, whatever its header says (a copied file keeps the
 * header of the one it was copied from). A header without a string `createdAt` gives the update
 * time instead. Files that are not session files (no session header on the first line, or a name
 * `sessionPath` would not take) are skipped, and so is anything not named `.jsonl` (a
 * `<file>.lock`, a `<file>.dropped`); a missing directory lists nothing, and a session deleted
 * while this lists the directory is left out. Throws `AgentError` (`invalid-input`) for a `dir` that
 * is not a non-empty string.
 */
export function listSessions(dir: string): SessionMeta[] {
  pathArgument("listSessions", "dir", dir);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".jsonl"));
  } catch {
    return [];
  }
  const out: SessionMeta[] = [];
  for (const name of names) {
    const id = name.slice(0, -".jsonl".length);
    let path: string;
    try {
      path = sessionPath(dir, id);
    } catch {
      continue;
    }
    let first: unknown;
    try {
      first = JSON.parse(
        readFileSync(path, READ_UTF8)
          .replace(/^\uFEFF/, "")
          .split("\n", 1)[0] ?? "",
      );
    } catch {
      continue;
    }
    if (!isObject(first) || first.type !== "session") continue;
    const loaded = readSessionFile(path);
    const user = loaded.messages.find((m) => fieldOf(m, "role") === "user");
    const title = user ? cutText(messageText(user).replace(/\s+/g, " ").trim(), 60) : "";
    let updatedAt: string;
    try {
      updatedAt = statSync(path).mtime.toISOString();
    } catch {
      // Deleted (or moved away) while this listed it: it is no longer a session of the directory.
      continue;
    }
    out.push({
      id,
      ...(title ? { title } : {}),
      createdAt: loaded.createdAt ?? updatedAt,
      updatedAt,
    });
  }
  return out.sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
}
