import { isCredentialParam, REDACTED } from "@loopwright/client";
import type { ErrorEvent, UsageEvent } from "@loopwright/events";
import { ContextOverflow } from "@loopwright/negotiate";
import type { ToolCallOutcome } from "@loopwright/tool-calls";
import type { ChatMessage } from "./config.js";

/** The run as it stood when the loop stopped: enough to store it, show it, or send it again. */
export interface RunState {
  /** The transcript the loop was given plus what it added; every tool call in it is answered. */
  messages: ChatMessage[];
  /** Token totals over every turn of the run so far. */
  usage: RunUsage;
  /**
   * What the run's side tasks cost, apart from `usage` (which is the turns' alone): the compaction
   * summaries (`summary`) and the preselection (`preselect`), each request the side task made that a
   * server answered, and their sum at the top. Zero where none was made or none reported tokens.
   */
  sideUsage: SideUsage;
  /**
   * Every tool call the model made, in transcript order: its id and (the host's) tool name, whether
   * it was dispatched, shared a repeat's answer, or was refused unrun, whether it succeeded, and how
   * long it ran.
   */
  toolCalls: ToolCallOutcome[];
  /**
   * The tools loaded when the run ended (`toolDiscovery: "ondemand"`), under the host's names, to
   * hand back as the next run's `loaded`; `[]` in eager and proxy mode.
   */
  loaded: string[];
  /** The shortlist the run opened with (the host's `preselected`, or what `preselect: true` picked); `[]` for none. */
  preselected: string[];
  /**
   * The tools the run dispatched, each once, in the order of their first call, under the host's
   * names: a proxied `call_tool` counts as the tool it named, `load_tools` and calls refused unrun
   * not at all. Whether a call succeeded does not matter. `[]` when none ran.
   */
  used: string[];
}

/** Token totals of a run: sums of what each turn's endpoint reported (zero where it reported none). */
export interface RunUsage {
  prompt: number;
  completion: number;
  total: number;
  cached: number;
}

/**
 * Token totals of a run's side tasks: the sum of every side request (the shape of `RunUsage`), and
 * the same by kind — `summary` for compaction's summaries, `preselect` for the preselection.
 */
export interface SideUsage extends RunUsage {
  /** The summaries `config.compact`'s folds asked `tasks.compaction` for. */
  summary: RunUsage;
  /** The preselection `preselect: true` asked `tasks.toolSelect` (or `toolSelectModel`) for. */
  preselect: RunUsage;
}

/**
 * The `usage` event as the loop emits it: `@loopwright/events`' `UsageEvent`, and — once a side task
 * of the run was answered — `sideUsage`, what the side tasks cost so far. `usage` and `turn` stay the
 * turns' own, so a watcher adding up usage events counts no side request, and none twice.
 */
export interface LoopUsageEvent extends UsageEvent {
  /** The run's side usage so far (`RunState.sideUsage`); absent until a side task was answered. */
  sideUsage?: SideUsage;
}

/**
 * The `error` event a run under a `runId` closes with before its `done`: `@loopwright/events`'
 * `ErrorEvent`, and — where the run's side tasks cost anything — `sideUsage`, their totals at the
 * end (`failedRun(error).sideUsage`). A side request made after the run's last usage event (the
 * summary of a fold for a request that then failed) is counted there, so a watcher of the bus ends
 * with what the failed run says.
 */
export interface LoopErrorEvent extends ErrorEvent {
  /** The run's side usage at its end (`failedRun(error).sideUsage`); absent where it is all zero. */
  sideUsage?: SideUsage;
}

const RUN = Symbol.for("@loopwright/loop.run");
const LOOP_OPTION_ERROR = Symbol.for("@loopwright/loop.LoopOptionError");
const AGENT_LOOP_ERROR = Symbol.for("@loopwright/loop.AgentLoopError");
const TOOL_ITERATION_LIMIT = Symbol.for("@loopwright/loop.ToolIterationLimit");
const AGENT_LOOP_OVERFLOW = Symbol.for("@loopwright/loop.AgentLoopOverflow");

function marked(value: unknown, marker: symbol): boolean {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/**
 * What `runAgentLoop` throws for anything but a spent iteration budget: a stop, a refused request,
 * a dropped stream. The message is the cause's own; the cause is on `cause`; the run is on `run`.
 */
export class AgentLoopError extends Error {
  override readonly name: string = "AgentLoopError";
  readonly [AGENT_LOOP_ERROR] = true;
  readonly [RUN] = true;
  /** The run as it stood when it failed. */
  readonly run: RunState;

  constructor(cause: unknown, run: RunState) {
    super(errorMessage(cause), { cause });
    this.run = run;
  }

  /** True for an `AgentLoopError` from any installed copy of this package. */
  static isInstance(value: unknown): value is AgentLoopError {
    return marked(value, AGENT_LOOP_ERROR);
  }
}

/**
 * Thrown when the model still asks for tools after `maxToolIterations` steps ran them. The calls of
 * that last step are answered as not run, so `run.messages` can be sent again as it is.
 */
export class ToolIterationLimit extends Error {
  override readonly name: string = "ToolIterationLimit";
  readonly [TOOL_ITERATION_LIMIT] = true;
  readonly [RUN] = true;
  /** The limit that was reached. */
  readonly limit: number;
  /** The run as it stood when it stopped. */
  readonly run: RunState;

  constructor(limit: number, run: RunState) {
    super(
      `The model was still asking for tools after ${limit} tool ${limit === 1 ? "step" : "steps"} (maxToolIterations). ` +
        "Raise maxToolIterations, or ask for something that needs fewer steps.",
    );
    this.limit = limit;
    this.run = run;
  }

  /** True for a `ToolIterationLimit` from any installed copy of this package. */
  static isInstance(value: unknown): value is ToolIterationLimit {
    return marked(value, TOOL_ITERATION_LIMIT);
  }
}

/**
 * Where the room of a request too big for its window went, by the loop's estimate (the size
 * guard's: characters over the calibrated characters per token, so it can differ from the count an
 * endpoint's refusal names), in tokens.
 */
export interface OverflowBreakdown {
  /** The window measured against: the one the endpoint's refusal named, else `config.contextLength`. */
  window?: number | undefined;
  /** The tool definitions sent (their JSON). */
  tools: number;
  /** The transcript sent, the system prompt included. */
  transcript: number;
  /** The reply's reserve: the request's `max_tokens` (`config.maxTokens`), 0 where it set none. */
  reply: number;
}

/** ContextOverflow's closing advice, replaced by one that fits what takes the room. */
const GENERIC_REMEDY =
  "Shorten the transcript (prune tool results or compact it) or raise the window, then send again.";

/** Says where the room went, as one sentence: the shares that take any, the transcript always. */
function roomSentence(b: OverflowBreakdown): string {
  const shares = [
    ...(b.tools > 0 ? [`the tool definitions take about ${b.tools} tokens`] : []),
    `the transcript ${b.tools > 0 ? "about" : "takes about"} ${b.transcript}${b.tools > 0 ? "" : " tokens"}`,
    ...(b.reply > 0 ? [`the reply's reserve ${b.reply}`] : []),
  ];
  const said = `${shares.length > 1 ? `${shares.slice(0, -1).join(", ")} and ${shares.at(-1)}` : shares[0]} (the loop's estimate)`;
  return b.window !== undefined ? `Of the ${b.window}-token window, ${said}.` : `By size, ${said}.`;
}

/** The advice that fits the largest share: the tools, the reply's reserve, or the transcript. */
function remedyFor(b: OverflowBreakdown | undefined): string {
  if (b && b.tools > 0 && b.tools >= b.transcript && b.tools >= b.reply) {
    return (
      "The tool definitions take the most room: offer fewer tools, or let the model load them as it needs " +
      'them (toolDiscovery "ondemand" or "proxy"), or raise the window, then send again.'
    );
  }
  if (b && b.reply > b.transcript && b.reply > b.tools) {
    return "The reply's reserve takes the most room: lower maxTokens, or raise the window, then send again.";
  }
  return GENERIC_REMEDY;
}

/**
 * A request too big for the model's window, found by the size guard or refused by the endpoint. It
 * is a `ContextOverflow` (a catch written for one still catches it) carrying the run, so a host can
 * compact `run.messages` and send again. The original overflow is on `cause`. With `config.compact`
 * the loop has already tried one forced fold for the request, and the message says how that went
 * (folded and refused again, or why nothing was folded). Where the loop measured the request, the
 * message says what took the room — the tool definitions, the transcript and the reply's reserve,
 * as `breakdown` holds them — and its advice fits the largest: fewer tools or `toolDiscovery`
 * `"ondemand"`/`"proxy"` where the tool definitions outweigh the transcript, a lower `maxTokens`
 * where the reserve does, else shortening the transcript; a larger window in each case.
 */
export class AgentLoopOverflow extends ContextOverflow {
  override readonly name: string = "AgentLoopOverflow";
  readonly [AGENT_LOOP_OVERFLOW] = true;
  readonly [RUN] = true;
  /** The run as it stood when the request was refused. */
  readonly run: RunState;
  /**
   * Where the refused request's room went (tool definitions, transcript, reply's reserve), by the
   * loop's estimate; undefined where the loop did not measure the request.
   */
  readonly breakdown?: OverflowBreakdown;

  /**
   * `note`, where given, is added to the message: what the loop did about the overflow before it
   * gave up (a forced fold, with `config.compact`). `breakdown`, where given, is told and picks the
   * advice. `serverMessage` stays the overflow's own.
   */
  constructor(overflow: ContextOverflow, run: RunState, note?: string, breakdown?: OverflowBreakdown) {
    super(overflow.serverMessage, {
      cause: overflow,
      ...(overflow.window !== undefined ? { window: overflow.window } : {}),
      ...(overflow.promptTokens !== undefined ? { promptTokens: overflow.promptTokens } : {}),
    });
    // The advice goes last, after what was measured and what the loop tried.
    const head = this.message.endsWith(` ${GENERIC_REMEDY}`)
      ? this.message.slice(0, -GENERIC_REMEDY.length - 1)
      : this.message;
    const parts = [head];
    if (breakdown) parts.push(roomSentence(breakdown));
    if (note) parts.push(note);
    parts.push(remedyFor(breakdown));
    this.message = parts.join(" ");
    if (breakdown) this.breakdown = { ...breakdown };
    this.run = run;
  }

  /**
   * True only for an `AgentLoopOverflow` (from any installed copy of this package), not for a bare
   * `ContextOverflow` — which `ContextOverflow.isInstance` also matches.
   */
  static override isInstance(value: unknown): value is AgentLoopOverflow {
    return marked(value, AGENT_LOOP_OVERFLOW);
  }
}

/**
 * What is wrong with what `runAgentLoop` was given, found before anything is sent:
 * - `unknown-option`: an option the loop does not know (a misspelling, or one from a newer loop);
 * - `not-built`: an option the loop knows of but does not do yet, refused rather than dropped;
 * - `tool-name-collision`: two tools whose names become one name on the wire;
 * - `conflicting-options`: two options that say the same thing differently (`system` and `config.prompt`);
 * - `invalid-option`: an option the loop does that cannot work as given (`hooks` without a `run`
 *   function, `config.compact` without a `contextLength` or a `tasks.compaction` model, a `ledger`
 *   that is not an array of `{ through, prompt, epoch }` entries, a message in `messages` that is
 *   not a chat message, a call answered twice or a tool message that answers no call).
 */
export type LoopOptionErrorCode =
  | "unknown-option"
  | "not-built"
  | "tool-name-collision"
  | "conflicting-options"
  | "invalid-option";

/**
 * An option `runAgentLoop` cannot honour, refused at the start (it reaches the caller as the
 * `cause` of an `AgentLoopError`). `option` names it (`config.toolDiscovery`, `hooks`, or a tool's name).
 */
export class LoopOptionError extends Error {
  override readonly name: string = "LoopOptionError";
  readonly [LOOP_OPTION_ERROR] = true;
  readonly code: LoopOptionErrorCode;
  /** The option (or, for a collision, the tools) at fault. */
  readonly option: string;

  constructor(code: LoopOptionErrorCode, option: string, message: string) {
    super(message);
    this.code = code;
    this.option = option;
  }

  /** True for a `LoopOptionError` from any installed copy of this package. */
  static isInstance(value: unknown): value is LoopOptionError {
    return marked(value, LOOP_OPTION_ERROR);
  }
}

/** The run carried by anything `runAgentLoop` threw, or `undefined` for any other value. */
export function failedRun(error: unknown): RunState | undefined {
  if (!marked(error, RUN)) return undefined;
  return (error as { run: RunState }).run;
}

/**
 * What {@link errorMessage} answers for a value none of whose parts can be read (a revoked Proxy; an
 * object whose `message`, `name`, `toString` and `Symbol.toPrimitive` getters all throw), so a host
 * — the agent, saying a tool's failure — can tell that value from one that says something.
 */
export const UNREADABLE_ERROR = "an error that could not be read";

/**
 * A caught unknown as one line a run row or a terminal can hold: an Error's message (with the
 * HTTP status where an API error has one), a string as is, anything else as JSON where it can be.
 * A message that is no string (a parsed error body, a number) is written as JSON (a value under a
 * credential's name such as `authorization` as `[redacted]`) or as text; a part whose reading
 * throws (a getter, a Proxy's trap) is left out; where nothing can be read, "an error that could
 * not be read". Never throws.
 */
export function errorMessage(error: unknown): string {
  return readErrorMessage(error) ?? UNREADABLE_ERROR;
}

/** {@link errorMessage}, or `undefined` where nothing of `error` can be read. Never throws. */
export function readErrorMessage(error: unknown): string | undefined {
  try {
    if (typeof error === "string") return error;
    if (error === undefined || error === null) return String(error);
    if (isError(error)) return errorLine(error);
    return asText(error, false);
  } catch {
    return undefined;
  }
}

/** `value instanceof Error`, false where asking throws (a Proxy's `getPrototypeOf` trap). */
export function isError(value: unknown): value is Error {
  if (typeof value !== "object" || value === null) return false;
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

/** `holder[key]`, or `undefined` where reading it throws (a getter, a Proxy's trap). */
function read(holder: unknown, key: string): unknown {
  try {
    return (holder as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/**
 * A value that is no string as text: JSON where it has some (credential-named values masked where
 * `masked`), else `String`; `undefined` where neither can be had — nor where JSON's `{}` is all of
 * an object that holds what cannot be read (`hidesItself`): a tool that threw an object whose
 * `message`, `name`, `toString` and `Symbol.toPrimitive` are getters that throw was answered
 * `Error: {}`, which says nothing, where it now fails "with an error that could not be read".
 */
function asText(value: unknown, masked: boolean): string | undefined {
  if (typeof value === "string") return value;
  try {
    const json = JSON.stringify(value, masked ? maskCredentials : undefined);
    if (json === "{}" && hidesItself(value)) return undefined;
    if (json !== undefined) return json;
  } catch {
    // A cycle, a BigInt, a throwing toJSON: its text, below.
  }
  try {
    return String(value);
  } catch {
    return undefined; // no toString (a null-prototype object), or one that throws
  }
}

/**
 * Whether `value`, which JSON writes as `{}`, cannot be said as text either (`String` throws) and
 * holds something all the same — keys of its own, or a prototype other than `Object.prototype` or
 * none (a class's getters) — or cannot even be asked (a Proxy's trap throws). An empty object,
 * `{}` or one with no prototype, is said as `{}`, as it was.
 */
function hidesItself(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  try {
    String(value);
    return false;
  } catch {
    // No text either: below, whether there is anything it hides.
  }
  try {
    const prototype: unknown = Object.getPrototypeOf(value);
    return Reflect.ownKeys(value).length > 0 || (prototype !== null && prototype !== Object.prototype);
  } catch {
    return true;
  }
}

/** A JSON replacer writing a value under a credential's name (not an error's `code`) as `[redacted]`. */
function maskCredentials(key: string, value: unknown): unknown {
  if (key === "" || key === "code" || !isCredentialParam(key)) return value;
  return value === null || value === undefined || value === "" ? value : REDACTED;
}

function errorLine(error: Error): string | undefined {
  const raw = read(error, "message");
  const message =
    raw === undefined || raw === null || typeof raw === "function" ? undefined : asText(raw, true);
  const rawName = read(error, "name");
  const name = typeof rawName === "string" ? rawName : undefined;
  let line = message || name || (message ?? name);
  const status = read(error, "status");
  if (typeof status === "number") {
    if (!line) line = String(status);
    else if (!line.startsWith(String(status))) line = `${status} ${line}`;
  }
  // A connection failure says only "Connection error."; the code (or words) underneath say which.
  const detail = causeDetail(error, message);
  if (line === undefined) return detail === undefined ? undefined : `${UNREADABLE_ERROR} (${detail})`;
  // An overflow quotes the server's words, which its cause (the API error) says again after its
  // status ("400 request (…) exceeds …"): said once is enough.
  const repeated = detail !== undefined && overflow(error) && line.includes(detail.replace(/^\d{3} /, ""));
  return detail && !repeated && !line.includes(detail) ? `${line} (${detail})` : line;
}

function overflow(error: Error): boolean {
  try {
    return ContextOverflow.isInstance(error);
  } catch {
    return false;
  }
}

function causeDetail(error: Error, message: string | undefined): string | undefined {
  let cause: unknown = read(error, "cause");
  let deepest: string | undefined;
  for (let depth = 0; depth < 4 && typeof cause === "object" && cause !== null; depth++) {
    const code = read(cause, "code");
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
    const said = read(cause, "message");
    if (typeof said === "string" && said) deepest = said;
    cause = read(cause, "cause");
  }
  return deepest && deepest !== message ? deepest : undefined;
}
