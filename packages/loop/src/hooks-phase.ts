import {
  type Gathered,
  type HookEvent,
  type HookInput,
  type HookReport,
  type HookRunner,
  type Hooks,
  type InjectingHookEvent,
  turnIndex,
  turnMessages,
} from "@loopwright/hooks";
import { type MessageLike, sameMessage } from "@loopwright/ledger";
import type { ChatMessage } from "./config.js";
import { LoopOptionError } from "./errors.js";
import { type LoopRun, notice } from "./loop-run.js";
import { beforeRequestOnly } from "./step-plan.js";

/**
 * The `hooks` option: the host's runner and what it is handed, gathered once before the first
 * request onto the current question.
 */
export interface LoopHooks<Context = unknown> {
  /**
   * Runs the host's hooks for an event (an MCP pool's `runHooks`, or the host's own function): a
   * `HookRunner`. Written as a method so a runner typed for the host's own context fits.
   */
  run(
    event: HookEvent,
    input: HookInput,
    context: Context,
    signal?: AbortSignal,
  ): ReturnType<HookRunner<Context>>;
  /** Handed to the runner untouched (`{ session: { id } }`, say); a `session.id` there keys `turnMessages`' uuids. */
  context?: Context | undefined;
  /** This run's preface above the blocks, over the runtime's configured one; `""` says none. */
  preface?: string | undefined;
  /** This run's shared budget in tokens, over the configured one (anything but a number above zero keeps that). */
  maxTokens?: number | undefined;
  /** How long each runner call is waited on, over the configured one. */
  timeoutMs?: number | undefined;
}

/** The hooks of a run: how they were asked for, what they added, and which message carries it. */
export interface RunHooks {
  readonly given: LoopHooks;
  /** What `gather` answered; absent until the first request is prepared. */
  gathered?: Gathered;
  /**
   * The question the context goes on: by identity, so a fold or a `beforeStep` that keeps it keeps
   * it found; a `beforeStep` replacement holding it as a copy moves it there (`followQuestion`).
   */
  question?: ChatMessage;
}

/** The hooks functions a run uses: its runtime's instance. */
export type LoopHooksService = Pick<Hooks, "gather" | "notify" | "consult" | "withContext">;

/** The run's hooks, checked; `undefined` when none were given. Throws `LoopOptionError` for a malformed `hooks`. */
export function startHooks(hooks: unknown): RunHooks | undefined {
  if (hooks === undefined) return undefined;
  if (typeof hooks !== "object" || hooks === null || typeof (hooks as LoopHooks).run !== "function") {
    throw new LoopOptionError(
      "invalid-option",
      "hooks",
      "runAgentLoop: hooks must be { run, context? } with run a function (event, input, context, signal) => " +
        "outcomes — an MCP pool's runHooks, or the host's own.",
    );
  }
  const given = hooks as LoopHooks;
  if (given.preface !== undefined && typeof given.preface !== "string") {
    throw new LoopOptionError(
      "invalid-option",
      "hooks.preface",
      'runAgentLoop: hooks.preface must be a string ("" for none), or left out for the configured one.',
    );
  }
  return { given };
}

/** The text a message's content says (text parts joined). */
function textOf(message: ChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => ("text" in part && typeof part.text === "string" ? part.text : ""))
    .filter((text) => text !== "")
    .join("\n");
}

/** The session id in the host's context, where it gives one (`{ session: { id } }`). */
function sessionId(context: unknown): string | undefined {
  const session = (context as { session?: { id?: unknown } } | null | undefined)?.session;
  return typeof session?.id === "string" && session.id !== "" ? session.id : undefined;
}

/**
 * Phase, once before the first request: the `beforeTurn` hooks (and `sessionStart` when this is the
 * session's first turn) gathered into the run's context for the current question — the last `user`
 * message before the step's request-only messages. Every hook's note becomes a notice; a failed, hung or junk-answering hook costs only its
 * own context. Nothing is written into the transcript.
 */
export async function gatherHooks(run: LoopRun, requestOnly = 0): Promise<void> {
  const hooks = run.hooks;
  if (!hooks || hooks.gathered) return;
  // A note for this request alone at the end (`StepPlan.requestOnly`: an Agent's final-turn note) is
  // not the user's question: the hooks are asked about, and their context goes on, the one before it.
  const asked = beforeRequestOnly(run.messages, requestOnly);
  const at = asked.findLastIndex((message) => message.role === "user");
  const question = run.messages[at];
  const turn = turnIndex(asked);
  const events: InjectingHookEvent[] = turn === 0 ? ["sessionStart", "beforeTurn"] : ["beforeTurn"];
  const { given } = hooks;
  const id = sessionId(given.context);
  const gathered = await run.services.hooks.gather(
    given.run,
    events,
    {
      prompt: textOf(question),
      turn,
      ...(id !== undefined && question ? { messages: turnMessages([question], id, at) } : {}),
    },
    given.context,
    {
      ...(given.maxTokens !== undefined ? { maxTokens: given.maxTokens } : {}),
      ...(given.preface !== undefined ? { preface: given.preface } : {}),
      ...(given.timeoutMs !== undefined ? { timeoutMs: given.timeoutMs } : {}),
      ...(run.options.signal ? { signal: run.options.signal } : {}),
      charsPerToken: run.services.calibration.charsPerTokenFor(run.supports, run.params.model),
    },
  );
  for (const note of gathered.notes) notice(run, `Hooks: ${note}`);
  if (gathered.context !== "" && !question) {
    notice(run, "Hooks: the transcript has no user message to put the hooks' context on; it was left out.");
    hooks.gathered = { ...gathered, context: "" };
    return;
  }
  hooks.gathered = gathered;
  if (question) hooks.question = question;
}

/**
 * After `beforeStep` replaced the transcript: where the replacement holds the question not as
 * itself but as the same message read back (a host's store hands back copies), the context moves
 * onto that copy — the last user message equal to it — instead of silently leaving every later
 * request. A replacement without it (the host rewrote or dropped the question) carries no context.
 */
export function followQuestion(run: LoopRun, messages: readonly ChatMessage[]): void {
  const hooks = run.hooks;
  const question = hooks?.question;
  if (!hooks || !question || messages.includes(question)) return;
  const same = messages.findLast(
    (message) => message.role === "user" && sameMessage(message as MessageLike, question as MessageLike),
  );
  if (same) hooks.question = same;
}

/**
 * The transcript as this request sends it: the run's context on the current question (found by
 * identity; `transcript` has the run's indexes). The run's own transcript is never written to.
 */
export function withHookContext(run: LoopRun, transcript: readonly ChatMessage[]): readonly ChatMessage[] {
  const hooks = run.hooks;
  const context = hooks?.gathered?.context;
  if (!hooks?.question || !context) return transcript;
  const at = run.messages.indexOf(hooks.question);
  if (at < 0) return transcript;
  return run.services.hooks.withContext(transcript, at, context, hooks.gathered?.preface ?? "");
}

/** What a finished run adds to its result for the hooks: the context and preface it sent, and `afterTurn`. */
export interface HookResult {
  context?: string | undefined;
  preface?: string | undefined;
  afterTurn?: Promise<HookReport> | undefined;
}

/**
 * The `afterTurn` hooks told the finished turn — the question, the reply, the turn's messages — and
 * not waited on: the promise is the result's `afterTurn`. It never rejects.
 */
export function hookResult(run: LoopRun, reply: string): HookResult {
  const hooks = run.hooks;
  if (!hooks) return {};
  const { given } = hooks;
  const question = hooks.question;
  const at = question ? run.messages.indexOf(question) : -1;
  const id = sessionId(given.context);
  const afterTurn = run.services.hooks
    .notify(
      given.run,
      "afterTurn",
      {
        prompt: textOf(question),
        turn: turnIndex(run.messages.slice(0, at + 1)),
        reply,
        ...(id !== undefined && at >= 0 ? { messages: turnMessages(run.messages.slice(at), id, at) } : {}),
      },
      given.context,
      given.timeoutMs !== undefined ? { timeoutMs: given.timeoutMs } : {},
    )
    .catch(
      (error: unknown): HookReport => ({
        outcomes: [],
        notes: [`The afterTurn hooks could not be told: ${run.redact(String(error))}`],
      }),
    );
  return {
    context: hooks.gathered?.context ?? "",
    preface: hooks.gathered?.preface ?? "",
    afterTurn,
  };
}
