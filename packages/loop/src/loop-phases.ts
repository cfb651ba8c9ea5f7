import { firstTokenMs, timeoutMs } from "@loopwright/client";
import type { TurnMetrics, TurnTimings } from "@loopwright/events";
import { canonicalJson } from "@loopwright/ledger";
import { buildBody, ContextOverflow, type ModelParams, type RequestBody } from "@loopwright/negotiate";
import type { Turn } from "@loopwright/stream";
import { type ToolCallOutcome, toolForArguments } from "@loopwright/tool-calls";
import { toolNameResolver } from "@loopwright/tool-loading";
import type { ChatCompletionMessageToolCall } from "openai/resources/chat/completions";
import type { AssistantMessage, AssistantToolCall, ChatMessage, LoopConfig, ToolChoice } from "./config.js";
import { carryOn, isContinuable, windowTaken } from "./continue-turn.js";
import { errorMessage, LoopOptionError, type LoopUsageEvent, type RunUsage } from "./errors.js";
import { followQuestion, withHookContext } from "./hooks-phase.js";
import {
  append,
  copySideUsage,
  emitEvent,
  hostCallback,
  type LoopRun,
  NO_SIDE_USAGE,
  noteOverflow,
  notice,
  replaceMessages,
  runWindow,
  taggedDedupe,
  throwIfStopped,
} from "./loop-run.js";
import { namedTools, noDispatch, toolsNeedingDispatch } from "./no-dispatch.js";
import { hasOwnKey, ownField } from "./own.js";
import {
  type CallResult,
  type DispatchRequest,
  harmonyHead,
  NOT_RUN,
  replayedCalls,
  runCalls,
  speakingWire,
} from "./run-calls.js";
import {
  type BuildRequest,
  ceilingOf,
  firstBody,
  type RunTurnOptions,
  requestSize,
  runTurn,
} from "./run-turn.js";
import { type ReadPlan, readPlan } from "./step-plan.js";
import { tell } from "./tell.js";
import {
  callNames,
  callRouter,
  callSchemas,
  keepToolState,
  planTools,
  recoverableTools,
  routedOnce,
  stepChoice,
  stepTools,
  watchedCall,
} from "./tool-discovery.js";
import { renameCalls, wireMessages, withSystem } from "./tool-names.js";
import { listFaults, messageFaults, unpaired, withCallTypes } from "./transcript-check.js";
import { recoverWrittenCalls } from "./written-calls.js";

const NOT_RUN_AT_LIMIT = "Not run: the run reached its tool-step limit (maxToolIterations).";
const PREVIEW_CHARS = 2000;

/**
 * Cuts a long argument or result for a watcher (never between the two halves of a surrogate pair);
 * the model always reads the whole text.
 */
export function preview(text: string, max = PREVIEW_CHARS): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  const end = max > 0 && last >= 0xd800 && last <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end)}… [${text.length - end} more characters]`;
}

/**
 * A call's arguments as a `tool-call` event shows them: as read, or, where they could not be read
 * (read as `{}` from text that is no empty object), the text the model wrote, so a watcher does not
 * show `{}` beside an error saying the arguments were unreadable.
 */
export function shownArgs(request: { args: Record<string, unknown>; raw?: string | undefined }): string {
  const read = JSON.stringify(request.args);
  if (read === "{}" && request.raw !== undefined && !/^\s*(\{\s*\})?\s*$/.test(request.raw)) {
    return preview(request.raw);
  }
  return preview(read);
}

/** One step's state: its number, the turn as the phases have made it so far, and how it was asked. */
export interface LoopStep {
  readonly number: number;
  /** The model the step's request named (`LoopRun.params.model`: the plan's, else the config's). */
  readonly model: string;
  /** The `tool_choice` `beforeStep` planned for the step, as the wire names it; absent for none. */
  readonly toolChoice?: ToolChoice;
  /** The turn as answered; recovery and distinct ids replace it. */
  turn: Turn;
  /** What the step's first request reported (a continuation's pieces are summed on `turn.usage`). */
  firstUsage: Turn["usage"];
  /** The body as first built (what `onRequest` saw); absent only if none was built. */
  firstBody: RequestBody | undefined;
  /** The body the endpoint answered: after a refusal, a lesser one than the first. */
  answeredBody: RequestBody | undefined;
  /** The divisor the request was sized with. */
  charsPerToken: number;
  /** When the request went out, and when the first token came back. */
  started: number;
  firstAt: number | undefined;
}

/**
 * Phase: `beforeStep` may replace the transcript (the ledger moves onto the replacement), give the
 * run new tools or a new catalogue from this step on (`planTools`, before the choice is checked),
 * and plan the step's `tool_choice` or a stop. What it planned is handed back for `askModel` and the loop,
 * the `tool_choice` checked and named as the wire does (`stepChoice`) before anything else of the
 * step runs: a choice the step cannot honour is refused before a summary or a hook is asked. The
 * whole plan is checked before any of it is applied: a plan refused for any part changes nothing
 * of the run (its tools, catalogue or what is loaded). The step's model and body fields
 * (`run.params`) are the plan's over the config's, this step only: a step without a plan, or whose
 * plan gives neither, goes back to the config's.
 */
export async function prepareStep(
  run: LoopRun,
  step: number,
): Promise<{ toolChoice: ToolChoice | undefined; stop: boolean; requestOnly: number }> {
  const { beforeStep } = run.options;
  // The model the step before named (its plan's, else the config's): `used` is that model's count.
  const last = step > 1 ? run.params.model : undefined;
  run.params = run.config; // until a plan says otherwise, for this step
  if (!beforeStep) return { toolChoice: undefined, stop: false, requestOnly: 0 };
  // Not called once the run is stopped (a signal aborted before the run began): its plan would be
  // dropped, and what it does meanwhile (a summary request, a store read) paid for nothing.
  throwIfStopped(run);
  // That model's window, as `used` is its count: the window an overflow named for a model a plan
  // routed to (with compact on) is the one a host pruning against `limit` must keep to while its
  // plans stay on that model. Before the first step, the config model's.
  const limit = runWindow(run, last ?? run.config.model);
  // Raced with the run's stop: a beforeStep that stalls (a summariser, a store read) ends with it.
  const { answer } = await hostCallback(run, "beforeStep", () =>
    beforeStep([...run.messages], step, {
      ...(run.used !== undefined ? { used: run.used } : {}),
      ...(limit ? { limit } : {}),
      ...(last !== undefined ? { model: last } : {}),
      ledger: [...run.measure.ledger],
    }),
  );
  const plan = readingAnswer(() => readPlan(answer, step));
  // The whole plan is checked before any of it is applied: a refused plan changes nothing of the
  // run (its tools, catalogue and what is loaded, as failedRun reports them). The transcript first.
  const { messages } = plan;
  const replaced = messages === undefined ? undefined : readingAnswer(() => plannedMessages(messages));
  const length = (replaced ?? run.messages).length;
  if (plan.requestOnly > length) {
    throw new LoopOptionError(
      "invalid-option",
      "beforeStep",
      `beforeStep planned requestOnly: ${plan.requestOnly}, but the step's transcript holds ${length} ` +
        "message(s); requestOnly counts messages at its end.",
    );
  }
  // New tools next: a toolChoice in the same plan is checked against them, and both are undone
  // when that choice is refused.
  const restore = keepToolState(run);
  let planned: { toolChoice: ToolChoice | undefined; stop: boolean; requestOnly: number };
  try {
    if (plan.tools !== undefined || plan.catalog !== undefined) {
      // A run started without dispatch (it had no tools) has nothing to run the planned ones with.
      const needing =
        run.options.dispatch === undefined ? toolsNeedingDispatch(plan.tools, plan.catalog) : [];
      if (needing.length > 0) {
        throw new LoopOptionError(
          "invalid-option",
          "beforeStep",
          `beforeStep planned tools (${namedTools(needing)}) for a run given no dispatch to run them; ` +
            "give runAgentLoop a dispatch to plan tools.",
        );
      }
      planTools(run, plan.tools, plan.catalog);
    }
    planned = {
      toolChoice: stepChoice(run, step, plan.toolChoice),
      stop: plan.stop,
      requestOnly: plan.requestOnly,
    };
  } catch (error) {
    restore();
    throw error;
  }
  run.params = stepParams(run.config, plan);
  if (replaced === undefined) return planned;
  run.measure.rebase(run.messages, replaced);
  followQuestion(run, replaced);
  replaceMessages(run, replaced);
  return planned;
}

/**
 * The model settings of a step whose plan read `plan`: the config itself where the plan gives no
 * `model` and no `extraBody`; else the config's with the plan's model, and the plan's body fields
 * merged over `config.extraBody` (a field the plan sets to `undefined` left out, `null` sent as
 * JSON's null). A `config.extraBody` that is not an object is left as it is, for `buildBody` to
 * refuse as it always does.
 */
function stepParams(config: LoopConfig, plan: ReadPlan): ModelParams {
  if (plan.model === undefined && plan.extraBody === undefined) return config;
  let extraBody = config.extraBody;
  if (plan.extraBody !== undefined && (extraBody == null || isFields(extraBody))) {
    const merged: Record<string, unknown> = { ...extraBody };
    for (const [field, value] of Object.entries(plan.extraBody)) {
      if (value === undefined) delete merged[field];
      else merged[field] = value;
    }
    extraBody = merged;
  }
  return {
    model: plan.model ?? config.model,
    temperature: config.temperature,
    maxTokens: config.maxTokens,
    reasoningEffort: config.reasoningEffort,
    extraBody,
  };
}

/**
 * The `reasoning_effort` a step's request asks for, as `buildBody` writes it: a string
 * `extraBody.reasoning_effort` (the config's, or a step's plan's merged over it) where there is one —
 * merged last, it is what goes out, climbed as the config's would be — else `reasoningEffort`.
 * What the notice of an effort stepped up names: told against `config.reasoningEffort`, a body
 * field's effort climbed without a word, and a config's effort the model refused was told as
 * stepped up on a request that sent the body field's.
 */
function askedEffort(params: ModelParams): string | undefined {
  const fields = params.extraBody;
  // Its own field, as buildBody reads it: never a polluted Object.prototype's.
  const field =
    isFields(fields) && Object.hasOwn(fields, "reasoning_effort") ? fields.reasoning_effort : undefined;
  return typeof field === "string" ? field : params.reasoningEffort;
}

/** Whether `value` is an object of fields (not an array, not `null`). */
function isFields(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A step's planned transcript as the run takes it (each call stored without its type given one),
 * or a `TypeError` naming what an endpoint would refuse in it: a message of the wrong shape, a call
 * no tool message answers right after it, a tool message that answers no call, two calls of one
 * assistant message sharing an id.
 */
/**
 * `read` of what `beforeStep` answered, where reading it may throw: a revoked Proxy, a getter that
 * throws, a Proxy's trap — the host's value failing, not the loop — is a `LoopOptionError` naming
 * `beforeStep` and what the reading said (before, the run's error was the engine's words alone:
 * "Cannot perform 'IsArray' on a proxy that has been revoked"). The loop's own refusals of the
 * answer (a `LoopOptionError`, a `TypeError` saying "beforeStep …") pass as they are.
 */
function readingAnswer<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (
      LoopOptionError.isInstance(error) ||
      (error instanceof TypeError && error.message.startsWith("beforeStep"))
    ) {
      throw error;
    }
    throw new LoopOptionError(
      "invalid-option",
      "beforeStep",
      `beforeStep returned a value that could not be read (${errorMessage(error)}); return an array of ` +
        "messages, a step plan of plain fields, or nothing.",
    );
  }
}

function plannedMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  const shapes = messageFaults(messages);
  if (shapes.length > 0) {
    throw new TypeError(
      `beforeStep returned a transcript in which ${listFaults(shapes)}; it would fail inside the run ` +
        "or be sent for the endpoint to refuse. Give each message as the endpoint takes it.",
    );
  }
  const replaced = withCallTypes(messages); // a call stored without its type, as a function call
  const pairing = unpaired(replaced);
  const missing = pairing.missing.map(({ id }) => id);
  const stray = pairing.stray.map(({ id }) => id);
  const shared = pairing.shared.map(({ id }) => id);
  if (missing.length > 0 || stray.length > 0 || shared.length > 0) {
    const faults = [
      ...(shared.length > 0
        ? [`an assistant message two of whose tool calls share an id (${shared.join(", ")})`]
        : []),
      ...(missing.length > 0
        ? [`tool calls no tool message answers right after them (${missing.join(", ")})`]
        : []),
      ...(stray.length > 0
        ? [
            `tool messages that answer no call right before them, or one already answered (${stray.join(", ")})`,
          ]
        : []),
    ];
    throw new TypeError(
      `beforeStep returned a transcript with ${faults.join(" and ")}; an endpoint refuses that. ` +
        "Keep or drop each call together with its result, the results right after the call.",
    );
  }
  return replaced;
}

/**
 * How the step's request is built, per attempt: the transcript with the hooks' context on the
 * current question (this request only) and the wire's tool names in replayed calls (the transcript
 * keeps the host's), what says nothing left out, behind one system message (the step's system
 * prompt, per `toolDiscovery`, with the transcript's leading ones joined to it), and the step's tools.
 */
function stepBody(run: LoopRun, number: number, toolChoice: ToolChoice | undefined): BuildRequest {
  // The context goes on first, by the transcript's own indexes; then what says nothing is left out.
  const transcript = wireMessages(withHookContext(run, run.messages), run.names.toWire);
  const { tools, system } = stepTools(run, number);
  const sent = withSystem(system, transcript);
  // The step's model and body fields (`run.params`), as they are while the step is built.
  const { config, params } = run;
  return (supports, model) =>
    buildBody(params, supports, model, sent, tools, { order: config.toolOrder, toolChoice });
}

/**
 * What the step's request takes of the window as `runTurn`'s size guard will count it (the prompt
 * estimate plus the reply ceiling, `requestSize`), and the ceiling alone, from the transcript as it
 * stands: what `compactStep` plans on.
 */
export function stepSize(
  run: LoopRun,
  number: number,
  toolChoice: ToolChoice | undefined,
  charsPerToken: number,
): { size: number; ceiling: number } {
  const body = firstBody(stepBody(run, number, toolChoice), run.supports, run.params.model);
  return { size: requestSize(body, charsPerToken), ceiling: ceilingOf(body) };
}

/**
 * Where the step's request came back as a `ContextOverflow`: makes the transcript smaller (a forced
 * fold, `foldRefused`) for the request to be sent once more, or throws why it could not.
 */
export type Refit = (overflow: ContextOverflow) => Promise<void>;

/**
 * Phase: the step's request — built, sent with `runTurn`, and carried on past the ceiling where
 * allowed — with the `tool_choice` `prepareStep` planned for it (as the wire names it). Given
 * `refit` (`config.compact`), a first request that comes back as a `ContextOverflow` — the endpoint's
 * refusal, or the size guard's before sending — is refitted and the request built again from the
 * transcript and sent once more, within the same turn (`onRequest` told of it as the step's request
 * again); a second overflow is thrown, noted (`noteOverflow`). One that came after part of the reply
 * streamed, or a continuation's, is never refitted: the reply has been shown.
 */
export async function askModel(
  run: LoopRun,
  number: number,
  toolChoice?: ToolChoice,
  refit?: Refit,
): Promise<LoopStep> {
  const { config, options, supports, params } = run;
  emitEvent(run, { kind: "turn", step: number });
  let bodyOf = stepBody(run, number, toolChoice);
  const step: Omit<LoopStep, "turn" | "firstUsage"> = {
    number,
    model: params.model,
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    firstBody: undefined,
    answeredBody: undefined,
    charsPerToken: run.services.calibration.charsPerTokenFor(supports, params.model),
    started: Date.now(),
    firstAt: undefined,
  };
  let lastBody: RequestBody | undefined;
  const mark = () => {
    step.firstAt ??= Date.now();
  };
  const build: BuildRequest = (supports, model) => {
    const body = bodyOf(supports, model);
    lastBody = body;
    if (!step.firstBody) {
      step.firstBody = body;
      // Copies: a watcher that pushes onto what it was handed does not change what is sent.
      tell(
        options.onRequest,
        {
          model: body.model,
          messages: [...(body.messages as ChatMessage[])],
          tools: [...(body.tools ?? [])],
        },
        number,
      );
    }
    return body;
  };
  const turnOptions: RunTurnOptions = {
    // The step's model: what the endpoint refuses of one model is latched for that model alone.
    model: params.model,
    // A field the step's plan added is dropped on a refusal as a config's is.
    droppable: Object.keys(params.extraBody ?? {}),
    // The effort the body asks for, which the notice of a step-up names: an extraBody one, sent over
    // config.reasoningEffort (buildBody merges it last), else the config's.
    reasoningEffort: askedEffort(params),
    signal: options.signal,
    idleMs: timeoutMs(config),
    firstChunkMs: firstTokenMs(config),
    maxRetries: config.maxRetries,
    ...(config.maxRetryWaitSeconds !== undefined
      ? { backoff: { maxHintMs: config.maxRetryWaitSeconds * 1000 } }
      : {}),
    loadingTimeoutMs:
      config.loadingTimeoutSeconds === undefined ? undefined : config.loadingTimeoutSeconds * 1000,
    contextLimit: runWindow(run),
    charsPerToken: step.charsPerToken,
    calibration: run.services.calibration,
    onNotice: (text) => notice(run, text),
    onOutput: (text) => {
      mark();
      emitEvent(run, { kind: "output", text });
    },
    // A lone </think> turned answer already sent into reasoning: watchers take it back.
    onRetract: (chars) => emitEvent(run, { kind: "retract", chars }),
    onThinking: (text) => {
      mark();
      emitEvent(run, { kind: "thinking", text });
    },
    onToolCallDelta: mark,
  };
  // What the step's requests that came back reported, for the usage event a stop or a failure ends the turn in.
  let first: Turn["usage"] | undefined;
  let spent: RunUsage = ZERO_USAGE;
  try {
    return await answer();
  } catch (error) {
    // Stopped by its host mid-turn, or failed (a stream dropped, a server error, retries spent, the
    // size guard or an overflow, a silent endpoint): the turn still ends in its usage event, marked
    // which, with what came back before it; the run's error event follows.
    endedStep(run, step, first, spent, options.signal?.aborted ? "stopped" : "failed");
    throw error;
  }

  async function answer(): Promise<LoopStep> {
    let turn: Turn;
    try {
      turn = await runTurn(run.client, supports, build, turnOptions);
    } catch (error) {
      // Only a request nothing came back for: a reply already streamed to the watchers is not asked again.
      const shown = step.firstAt !== undefined;
      if (!refit || shown || !ContextOverflow.isInstance(error) || options.signal?.aborted) throw error;
      await refit(error);
      // Held to the window the refusal named for the step's model, which the fold learnt: held to
      // the one before (contextLength), a folded request still too big for it was sent to be refused
      // again.
      turnOptions.contextLimit = runWindow(run);
      // The step's request as the refitted transcript makes it, told and measured as the step's own.
      bodyOf = stepBody(run, number, toolChoice);
      step.firstBody = undefined;
      step.started = Date.now();
      try {
        turn = await runTurn(run.client, supports, build, turnOptions);
      } catch (again) {
        if (!ContextOverflow.isInstance(again) || options.signal?.aborted) throw again;
        // The size guard's own overflow has no cause (a server's refusal carries it): then nothing went.
        const held = (again as { cause?: unknown }).cause === undefined;
        throw noteOverflow(
          again,
          held
            ? "With compact on, the loop folded the transcript once, and the folded request was still too big " +
                "for the window, so it was not sent again."
            : "With compact on, the loop folded the transcript once and sent it again, and the folded request " +
                "was refused too.",
        );
      }
    }
    const firstUsage = turn.usage;
    first = firstUsage;
    step.answeredBody = lastBody;
    const continuations = config.maxContinuations ?? 0;
    // A reply that filled a known window leaves no room to carry it on: measureStep says so.
    if (continuations > 0 && isContinuable(turn) && !filledWindow(run, turn.usage)) {
      notice(run, `${cutOffAt(lastBody)}; carrying it on.`);
      // What the first request and each piece that came back reported: counted in the run's usage
      // when a stop or a failure ends the continuation (the turn is not kept, but its requests were paid for).
      spent = addUsage(ZERO_USAGE, turn.usage);
      try {
        turn = await carryOn(
          run.client,
          supports,
          build,
          turn,
          {
            ...turnOptions,
            contextLimit: undefined, // the size guard spoke for the first request; the server weighs the rest
            contextWindow: runWindow(run), // each piece's usage: stop where it filled it
            maxContinuations: continuations,
          },
          (usage) => {
            spent = addUsage(spent, usage);
          },
        );
      } catch (error) {
        run.usage = addUsage(run.usage, spent);
        throw error;
      }
    }
    return { ...step, turn, firstUsage };
  }
}

/**
 * The usage event of a step that ended without an answer: stopped by its host (`turn.stopped`) or
 * failed (`turn.failed`; the run's error event follows). Its usage is what the step's requests
 * reported before that — the pieces of a continuation that came back, already in the run's usage —
 * or zero, the turn's times as measured, and the request's context as estimated (shares of the first
 * request's reported prompt, where it reported one). Nothing is recorded in the ledger or fed to the
 * calibration: no answer is kept. Without it a watcher read a turn that never ended, and its
 * `runMetrics` missed what `failedRun(error).usage` counts.
 */
function endedStep(
  run: LoopRun,
  step: Omit<LoopStep, "turn" | "firstUsage">,
  first: Turn["usage"] | undefined,
  spent: RunUsage,
  how: "stopped" | "failed",
): void {
  const metrics: TurnMetrics = {
    usage: { ...spent },
    finishReason: "",
    model: step.model,
    timings: stepTimings(step),
    ...(how === "stopped" ? { stopped: true as const } : { failed: true as const }),
  };
  if (step.firstBody) run.measure.estimate(step.firstBody, step.charsPerToken, first?.prompt ?? 0, metrics);
  tellUsage(run, metrics);
}

/** The step's times as the loop measures them: to its first token, and to now. */
function stepTimings(step: Pick<LoopStep, "started" | "firstAt">): TurnTimings {
  return {
    totalMs: Date.now() - step.started,
    ...(step.firstAt ? { firstTokenMs: step.firstAt - step.started } : {}),
  };
}

/** Emits the step's `usage` event: the run's totals so far, the turn's `metrics` and the ledger. */
function tellUsage(run: LoopRun, metrics: TurnMetrics): void {
  // The run's totals as a copy: a watcher that rewrites the event's usage does not rewrite the run's.
  const event: LoopUsageEvent = {
    kind: "usage",
    usage: { ...run.usage },
    turn: metrics,
    ledger: [...run.measure.ledger],
    // Once a side task was answered: what the side tasks cost so far, apart from the turns' totals.
    ...(run.sideUsage !== NO_SIDE_USAGE ? { sideUsage: copySideUsage(run.sideUsage) } : {}),
  };
  emitEvent(run, event);
}

/** Phase: the step's usage added to the run's, measured, and told in one `usage` event. */
export function measureStep(run: LoopRun, step: LoopStep): void {
  const { turn } = step;
  run.usage = addUsage(run.usage, turn.usage);
  // The last request's prompt, or nothing where it reported none (never an older request's).
  run.used = step.firstUsage.prompt > 0 ? step.firstUsage.prompt : undefined;
  run.reported =
    run.used !== undefined ? { prompt: run.used, length: run.messages.length, model: step.model } : undefined;
  const metrics: TurnMetrics = {
    usage: turn.usage,
    finishReason: turn.finishReason,
    model: step.model,
    timings: {
      ...ownField(turn, "timings"), // what the server measured (llama.cpp: prefill, decode, draft acceptance)
      ...stepTimings(step),
    },
  };
  if (step.firstBody) {
    run.measure.measure(
      {
        turn,
        firstUsage: step.firstUsage,
        firstBody: step.firstBody,
        answeredBody: step.answeredBody ?? step.firstBody,
        transcript: run.messages,
        charsPerToken: step.charsPerToken,
        model: step.model,
      },
      metrics,
    );
  }
  tellUsage(run, metrics);
  if (turn.finishReason === "length") notice(run, cutOffNotice(run, step));
}

/** `windowTaken` against the run's `contextLength`: where it is reached, no continuation fits (r55-3). */
function filledWindow(run: LoopRun, usage: Turn["usage"]): number | undefined {
  return windowTaken(usage, runWindow(run));
}

/**
 * Where a reply that stopped with `finish_reason: "length"` was cut off, from the request it answered:
 * at the ceiling it carried, or — none carried — at the server's own limit, which is the context
 * window filling up or a cap the server puts on replies by default.
 */
function cutOffAt(body: RequestBody | undefined): string {
  return body && ceilingOf(body) > 0
    ? "The reply was cut off at the token ceiling (maxTokens)"
    : "The reply was cut off at the server's length limit (no maxTokens was set: the context window " +
        "is full, or the server caps replies by default)";
}

/**
 * The notice for a step's reply left cut off: the window by name where the step's first request
 * showed it full (then it was not carried on, `askModel`), with why no continuation was spent on it;
 * else `cutOffAt`'s words.
 */
function cutOffNotice(run: LoopRun, step: LoopStep): string {
  const taken = filledWindow(run, step.firstUsage);
  if (taken === undefined) return `${cutOffAt(step.answeredBody ?? step.firstBody)}.`;
  const carry =
    (run.config.maxContinuations ?? 0) > 0 && isContinuable(step.turn)
      ? " It is not carried on: a continuation cannot fit."
      : "";
  // The window it filled: the step's model's, which an overflow may have named smaller than
  // contextLength (it said "took 300 of its 4000 tokens" of a model served with 300).
  const window = runWindow(run);
  const limit = run.config.contextLength;
  const which =
    window !== undefined && window !== limit
      ? `the window the server named for ${step.model}; contextLength is ${limit}`
      : "contextLength";
  return (
    `The reply was cut off with the context window full: the prompt and the reply's answer took ${taken} of its ` +
    `${window} tokens (${which}); compact or shorten the transcript, or raise ` +
    `the window.${carry}`
  );
}

/**
 * Phase: a turn with no calls, some text and tools to call has the calls a server's parser left in
 * the text taken out of it and made real (`recoverToolCalls`), with a notice. Not on a step planned
 * `tool_choice: "none"`: a server that renders the tools anyway (llama.cpp) lets a model write call
 * markup as its answer, and the host asked for an answer. On every step (no tools, or
 * `tool_choice: "none"`, too), a reply that ran past its end-of-turn token into a turn the model
 * invented, ends with such tokens, or opens with gpt-oss's final-channel header served raw, keeps
 * only its own answer, with a notice. A turn that came with calls keeps them; its text loses only
 * that, and markup of exactly the calls the server sent (a server streaming it as text as well).
 */
export function recoverCalls(run: LoopRun, step: LoopStep): void {
  if ((run.options.recoverToolCalls ?? run.config.recoverToolCalls) === false) return;
  const { turn } = step;
  if (!(ownField(turn, "rawContent") ?? turn.content).trim()) return;
  // With no tool to call (or none asked for), the reply is still read for where it ends: the text
  // after an end-of-turn token the server did not stop at is no part of the answer.
  const tools = step.toolChoice === "none" || run.tools.length === 0 ? [] : recoverableTools(run);
  // A reply cut at the token ceiling inside a call leaves that call in the text, never closed up and
  // run; a call is read from the text as written, before the fences took `<think>…</think>` out.
  const found = recoverWrittenCalls(turn, tools);
  if (!found) return;
  if (turn.toolCalls.length > 0) {
    // The server sent calls: the text is read only for what is no part of the answer — where the
    // reply ends, and calls written there that are the calls sent (a server streaming the markup as
    // text too). A call written there and not sent is left as the model wrote it, and not run.
    if (hasOwnKey(found, "unread") || !sameCalls(found.calls, turn.toolCalls)) return;
    step.turn = { ...found.turn, toolCalls: turn.toolCalls };
    redrawReasoning(run, turn.reasoning, found.turn.reasoning);
    redrawAnswer(run, turn.content, found.turn.content);
    const n = found.calls.length;
    notice(
      run,
      n === 0
        ? tookOut(turn.content.length - found.turn.content.length)
        : `Took ${n === 1 ? "the tool call" : `the ${n} tool calls`} the reply also wrote as text out of its answer: the server sent ${n === 1 ? "it as a call" : "them as calls"} too.`,
    );
    return;
  }
  if (hasOwnKey(found, "unread")) {
    notice(
      run,
      `Left ${found.unread} tool call${found.unread === 1 ? "" : "s"} written into the reply as text unrun: its text could not be read as written.`,
    );
    return;
  }
  const { calls } = found;
  if (calls.length === 0) {
    // The answer is the reply up to where it ends; what was drawn after that is taken back.
    step.turn = found.turn;
    redrawReasoning(run, turn.reasoning, found.turn.reasoning);
    redrawAnswer(run, turn.content, found.turn.content);
    notice(run, tookOut(turn.content.length - found.turn.content.length));
    return;
  }
  const toolCalls = calls.map((c) => ({
    id: c.id,
    type: "function" as const,
    // The model's argument text, which keeps the digits of a number JS cannot hold.
    function: { name: c.name, arguments: c.raw ?? JSON.stringify(c.args) },
  }));
  step.turn = { ...found.turn, toolCalls };
  redrawReasoning(run, turn.reasoning, found.turn.reasoning);
  redrawAnswer(run, turn.content, found.turn.content);
  notice(
    run,
    `Recovered ${calls.length} tool call${calls.length === 1 ? "" : "s"} written into the reply as text ` +
      "(the server's tool-call parser missed them).",
  );
}

/** The notice for `gone` characters of a reply read as no part of its answer. */
function tookOut(gone: number): string {
  return (
    `Took ${gone} character${gone === 1 ? "" : "s"} out of the answer: the end-of-turn tokens it ends with, ` +
    "text past one the server did not stop at (a turn the model went on to invent), or gpt-oss's channel markup served raw."
  );
}

/**
 * Whether each call read from a reply's text is one of the calls the server sent (the same name and
 * the same arguments, each sent call matched once): then the text was that markup written twice.
 */
function sameCalls(
  written: ReadonlyArray<{ name: string; args: unknown }>,
  sent: ReadonlyArray<{ type?: string; function?: { name: string; arguments: string } }>,
): boolean {
  const left = sent.map((call) => {
    if (call.function === undefined) return undefined;
    try {
      return { name: call.function.name, args: canonicalJson(JSON.parse(call.function.arguments || "{}")) };
    } catch {
      return undefined;
    }
  });
  for (const call of written) {
    const args = canonicalJson(call.args);
    const at = left.findIndex((one) => one !== undefined && one.name === call.name && one.args === args);
    if (at < 0) return false;
    left[at] = undefined;
  }
  return true;
}

/** How many leading UTF-16 units `drawn` and `kept` share, never parting a surrogate pair. */
function sharedStart(drawn: string, kept: string): number {
  let same = 0;
  const most = Math.min(drawn.length, kept.length);
  while (same < most && drawn.charCodeAt(same) === kept.charCodeAt(same)) same++;
  // Never part a surrogate pair: a retract and what follows it each hold whole characters.
  if (same > 0 && same < most && /[\uD800-\uDBFF]/.test(drawn.charAt(same - 1))) same--;
  return same;
}

/**
 * Brings what the watchers drew of a turn's answer (`drawn`, its `output`) to the answer kept
 * (`kept`) once calls were taken out of its text: a `retract` for what was drawn after the kept
 * answer — the calls' markup, a piece of a closing tag — so `fold(events)` shows what the
 * transcript stores. Where the kept answer is not all of what was drawn up to that point (text
 * after a call, the blank lines around it closed up), the retract goes back to where the two
 * part and the rest of the kept answer follows as `output`: never a character the transcript
 * does not hold.
 */
function redrawAnswer(run: LoopRun, drawn: string, kept: string): void {
  const same = sharedStart(drawn, kept);
  if (drawn.length > same) emitEvent(run, { kind: "retract", chars: drawn.length - same });
  if (kept.length > same) emitEvent(run, { kind: "output", text: kept.slice(same) });
}

/**
 * The same for the turn's reasoning: a call written with a `<think>` or `</think>` inside its
 * arguments had its markup (and the answer before it, for a lone `</think>`) drawn as `thinking`.
 * A `thinking-retract` takes back what was drawn after the reasoning kept, and the rest of the
 * reasoning kept, if any, follows as `thinking`.
 */
function redrawReasoning(run: LoopRun, drawn: string, kept: string): void {
  const same = sharedStart(drawn, kept);
  if (drawn.length > same) emitEvent(run, { kind: "thinking-retract", chars: drawn.length - same });
  if (kept.length > same) emitEvent(run, { kind: "thinking", text: kept.slice(same) });
}

/** Phase: a turn that asked for nothing is the answer, appended to the transcript. */
export async function keepAnswer(run: LoopRun, step: LoopStep): Promise<void> {
  await append(run, step.number, { role: "assistant", content: step.turn.content }, step.turn);
}

/**
 * Phase: the step limit reached — the calls are told to the watchers and answered without running,
 * so the transcript the error carries can be sent again.
 */
export async function refuseAtLimit(run: LoopRun, step: LoopStep): Promise<void> {
  const { turn } = step;
  const calls = replayedCalls(turn.toolCalls, turn.finishReason, callSchemas(run), callRouter(run));
  refuseCalls(run, turn, calls, NOT_RUN_AT_LIMIT);
  await appendCalls(run, step, calls, NOT_RUN_AT_LIMIT);
  try {
    for (const call of calls) {
      await append(run, step.number, { role: "tool", tool_call_id: call.id, content: NOT_RUN_AT_LIMIT });
    }
  } catch (error) {
    answerMissing(run.messages, calls, NOT_RUN_AT_LIMIT);
    throw error;
  }
}

/**
 * Calls answered without running (`content` says why), told as if they had been refused: each to
 * `onToolCall` and as a `tool-call` event (a `call_tool` as the tool it names), then its result to
 * `onToolResult` and as a `tool-result` event, and counted in `toolCalls`. `calls` are the turn's
 * replayable calls, or some of them (matched to the turn's own by id, for the model's raw text).
 */
function refuseCalls(run: LoopRun, turn: Turn, calls: readonly AssistantToolCall[], content: string): void {
  const watched = watchedCall(run); // a call_tool as the tool it names
  const raw = new Map(turn.toolCalls.map((call) => [call.id, call.function.arguments]));
  const requests = calls.map((call) =>
    watched({
      id: call.id,
      name: call.function.name,
      args: JSON.parse(call.function.arguments) as Record<string, unknown>,
      raw: raw.get(call.id) ?? call.function.arguments,
    }),
  );
  for (const request of requests) {
    emitEvent(run, {
      kind: "tool-call",
      id: request.id,
      name: request.name,
      args: preview(JSON.stringify(request.args)),
    });
    tell(run.options.onToolCall, { ...request, args: { ...request.args } });
  }
  for (const request of requests) {
    const result: CallResult = { id: request.id, name: request.name, ok: false, content, source: "refused" };
    emitEvent(run, { kind: "tool-result", ...result });
    tell(run.options.onToolResult, { ...result }); // a copy: what the watcher does to it is its own
    run.toolCalls.push(outcomeOf(result));
  }
}

/**
 * Phase: the step's calls run (`runCalls`) and answered in the transcript, the assistant message
 * first. Throws what `onMessage` threw, or the stop, with every call still answered.
 */
export async function runTools(run: LoopRun, step: LoopStep): Promise<void> {
  const { turn } = step;
  const { options, config } = run;
  run.toolSteps++;
  const routes = routedOnce(run, step.number); // each call routed once, read by both
  const replayed = replayedCalls(turn.toolCalls, turn.finishReason, callSchemas(run), routes.first);
  await appendCalls(run, step, replayed, NOT_RUN);
  let ran: Awaited<ReturnType<typeof runCalls>>;
  try {
    // The loop's own words in an answer name each tool as the request declared it to the model.
    const calling = speakingWire(
      {
        dispatch: options.dispatch ?? noDispatch,
        signal: options.signal,
        ...(config.toolTimeoutSeconds !== undefined ? { timeoutMs: config.toolTimeoutSeconds * 1000 } : {}),
        finishReason: turn.finishReason,
        tools: callSchemas(run),
        parallel: options.parallel ?? config.parallel ?? undefined,
        dedupe: taggedDedupe(options.dedupeToolCalls ?? config.dedupeToolCalls ?? undefined),
        route: routes.again, // load_tools and call_tool, per toolDiscovery, as routed above
        // A tool's error often quotes the request it sent: the endpoint's credentials never reach the
        // model, the transcript or a watcher through it (a routing header's words, as in a reply, do).
        redact: run.redactCredentials,
        onToolCall: (r: DispatchRequest) => {
          emitEvent(run, { kind: "tool-call", id: r.id, name: r.name, args: shownArgs(r) });
          tell(options.onToolCall, r);
        },
        onToolResult: (r: CallResult) => {
          emitEvent(run, { kind: "tool-result", ...r, content: preview(r.content) });
          tell(options.onToolResult, r);
        },
      },
      run.names.toWire,
    );
    ran = await runCalls(turn.toolCalls, calling);
  } catch (error) {
    // The dedupe predicate threw before any call ran: each is answered as not run, and told so.
    answerMissing(run.messages, replayed, NOT_RUN);
    refuseCalls(run, turn, replayed, NOT_RUN);
    throw error;
  }
  run.toolCalls.push(...ran.outcomes.map(outcomeOf));
  let appended = 0;
  try {
    for (const result of ran.results) {
      appended++;
      await append(run, step.number, result);
    }
  } catch (error) {
    // The calls ran: the transcript keeps what they returned, not a "not run" they would be retried on.
    run.messages.push(...ran.results.slice(appended));
    throw error;
  }
  if (ran.stopped !== undefined) throw ran.stopped;
}

/**
 * The assistant message that asked for the calls, appended. It carries the turn's scratchpad, in the
 * field the server streamed it in: thinking models read the analysis behind a call off it on the
 * next request (DeepSeek's thinking mode refuses a request without it). When `onMessage` throws,
 * every call is answered with `unanswered` (and counted as refused) before the error goes on.
 */
async function appendCalls(
  run: LoopRun,
  step: LoopStep,
  calls: AssistantToolCall[],
  unanswered: string,
): Promise<void> {
  const { turn } = step;
  const message: AssistantMessage = { role: "assistant", content: turn.content || null, tool_calls: calls };
  if (turn.reasoning.trim() !== "")
    message[ownField(turn, "reasoningField") ?? "reasoning_content"] = turn.reasoning;
  try {
    await append(run, step.number, message, turn);
  } catch (error) {
    answerMissing(run.messages, calls, unanswered);
    // Told to the watchers and counted like any call answered without running (the step limit's
    // are already).
    const counted = new Set(run.toolCalls.map((c) => c.id));
    refuseCalls(
      run,
      turn,
      calls.filter((call) => !counted.has(call.id)),
      unanswered,
    );
    throw error;
  }
}

/** A call's result as the run's `toolCalls` lists it. */
function outcomeOf(result: CallResult): ToolCallOutcome {
  return {
    id: result.id,
    name: result.name,
    source: result.source,
    ok: result.ok,
    ...(result.ms !== undefined ? { ms: result.ms } : {}),
  };
}

/**
 * Phase: the step's calls under the host's tool names (the model wrote the wire's) and with ids
 * the transcript has not used — some servers (DeepSeek, GLM) repeat one across parallel calls, one
 * that sends none gets `call_0` from the stream every step, recovered calls are `call_recovered_0`
 * every step, and a transcript whose results cannot be told apart is refused on the next request.
 */
export function takeCalls(run: LoopRun, step: LoopStep): void {
  const calls = shortIds(run, renameCalls(spelledCalls(run, step.turn.toolCalls), callNames(run)));
  const known = usedIds(run);
  step.turn = { ...step.turn, toolCalls: distinctIds(calls, known.ids, known.next) };
}

/**
 * Eager mode: the calls with a name no declared tool has, that names exactly one of them another way,
 * under that tool's wire name, with a notice — blank space around it, OpenAI's `functions.`
 * namespace (`functions.read_file`, which models trained on their own transcripts write), gpt-oss's
 * Harmony markup after it (`create_event<|channel|>analysis`) or its `json` glued on (`shelljson`),
 * or a difference in case alone from one tool (`Read_File`). Such a call ran nowhere before: `dispatch`
 * was handed a name no tool has. The transcript keeps the name it ran under, so the model reads the
 * tool's own spelling back. On demand and proxied, the catalogue's resolver reads other spellings.
 */
function spelledCalls<T extends ChatCompletionMessageToolCall>(
  run: LoopRun,
  calls: readonly T[],
): readonly T[] {
  if (run.discovery || calls.length === 0) return calls;
  const wire = run.tools.flatMap((tool) => (tool.type === "function" ? [tool.function.name] : []));
  const spelled = toolNameResolver(wire);
  // A name a tool has stays as written; one that spells exactly one tool another way becomes its.
  const resolve = (written: string): string | undefined => {
    const name = spelled(written);
    return name === written ? undefined : name;
  };
  let changed = false;
  const renamed = calls.map((call) => {
    if (call.type !== "function") return call;
    const written = call.function.name;
    const name = resolve(written);
    const fitted = name === undefined ? commentaryTool(run, call) : undefined;
    if (name === undefined && fitted === undefined) return call;
    changed = true;
    const host = (wireName: string) => JSON.stringify(run.names.toHost.get(wireName) ?? wireName);
    notice(
      run,
      name !== undefined
        ? `The model called ${JSON.stringify(written)}, which no tool is named; it ran as ${host(name)}, the one tool that name spells.`
        : `The model's call was named only with gpt-oss's markup (${JSON.stringify(written)}); it ran as ${host(fitted as string)}, the one tool whose parameters take every argument it sent.`,
    );
    return { ...call, function: { ...call.function, name: name ?? fitted } } as T;
  });
  return changed ? renamed : calls;
}

/**
 * The tool a call names only with Harmony markup on the commentary channel (where gpt-oss calls
 * tools; `<|channel|>commentary`, no recipient) is for: the one declared tool whose parameters
 * take every argument the call sent, as `recoverToolCalls` reads such a call written as text. A
 * call on the analysis channel is the model's reasoning and names no tool: it is answered, not run.
 */
function commentaryTool(run: LoopRun, call: ChatCompletionMessageToolCall): string | undefined {
  if (call.type !== "function") return undefined;
  const written = call.function.name;
  if (written.trim() === "" || harmonyHead(written) !== "" || !/<\|channel\|>\s*commentary\b/.test(written)) {
    return undefined;
  }
  let args: unknown;
  try {
    args = JSON.parse(call.function.arguments === "" ? "{}" : call.function.arguments);
  } catch {
    return undefined;
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
  return toolForArguments(args as Record<string, unknown>, run.tools);
}

/** The longest tool-call id the loop keeps as a server gave it (real ones are some 30 characters). */
const MAX_TOOL_CALL_ID = 128;

/**
 * The calls with each id longer than `MAX_TOOL_CALL_ID` replaced by `call_long` (made distinct by
 * `distinctIds`), with a notice: the transcript keeps the id, and every later request would send it
 * twice (the call and its answer) — a 100,000-character id took some 50,000 tokens of each.
 */
function shortIds<T extends { id: string }>(run: LoopRun, calls: T[]): T[] {
  const long = calls.filter((call) => call.id.length > MAX_TOOL_CALL_ID);
  if (long.length === 0) return calls;
  const longest = Math.max(...long.map((call) => call.id.length));
  const one = long.length === 1;
  notice(
    run,
    `The server gave ${one ? "a tool call id" : `${long.length} tool call ids`} longer than ${MAX_TOOL_CALL_ID} characters ` +
      `(${one ? "" : "the longest "}${longest}); ${one ? "it was" : "each was"} replaced by a short one (call_long…) in the transcript: ` +
      "kept, it would be sent again with every later request.",
  );
  return calls.map((call) => (call.id.length > MAX_TOOL_CALL_ID ? { ...call, id: "call_long" } : call));
}

/**
 * Every tool-call id the transcript holds: its calls' and its tool messages'. Read incrementally —
 * only what was appended since the last step — so a long run does not read its whole transcript
 * again for them every step.
 */
function usedIds(run: LoopRun): NonNullable<LoopRun["knownIds"]> {
  const known = run.knownIds ?? { ids: new Set<string>(), read: 0, next: new Map<string, number>() };
  run.knownIds = known;
  const { messages } = run;
  for (; known.read < messages.length; known.read++) {
    const message = messages[known.read] as ChatMessage;
    if (message.role === "tool") known.ids.add(message.tool_call_id);
    else if (message.role === "assistant")
      for (const call of ownField(message, "tool_calls") ?? []) known.ids.add(call.id);
  }
  return known;
}

const ZERO_USAGE: RunUsage = { prompt: 0, completion: 0, total: 0, cached: 0 };

function addUsage(total: RunUsage, usage: Turn["usage"] | RunUsage): RunUsage {
  return {
    prompt: total.prompt + usage.prompt,
    completion: total.completion + usage.completion,
    total: total.total + usage.total,
    cached: total.cached + usage.cached,
  };
}

/** The call a tool message answers, or `undefined` for any other message. */
const answeredId = (message: ChatMessage): string | undefined =>
  message.role === "tool" ? message.tool_call_id : undefined;

/** Appends an answer for every call that has none yet, so a failing host callback leaves a sendable transcript. */
function answerMissing(messages: ChatMessage[], calls: ReadonlyArray<{ id: string }>, content: string): void {
  // Only this step's answers count: a host's history may hold an answer under the same id.
  const from = messages.findLastIndex((m) => m.role === "assistant");
  const answered = new Set(messages.slice(from + 1).map(answeredId));
  for (const call of calls) {
    if (!answered.has(call.id)) messages.push({ role: "tool", tool_call_id: call.id, content });
  }
}

/**
 * The calls with every id distinct, from each other and from `used`: a repeat, or an id `used`
 * holds, gets `<id>_2`, `<id>_3` … (the first of a step's repeats keeps its own when it is new).
 */
function distinctIds<T extends { id: string }>(
  calls: readonly T[],
  used: ReadonlySet<string>,
  next: Map<string, number>,
): T[] {
  const given = new Set(calls.map((call) => call.id));
  const kept = new Set<string>(); // ids this step has handed out so far
  return calls.map((call) => {
    if (!used.has(call.id) && !kept.has(call.id)) {
      kept.add(call.id);
      return call;
    }
    // From where the last renaming of this id stopped: a server that sends none repeats call_0 every step.
    let n = next.get(call.id) ?? 2;
    while (used.has(`${call.id}_${n}`) || given.has(`${call.id}_${n}`) || kept.has(`${call.id}_${n}`)) n++;
    next.set(call.id, n + 1);
    const id = `${call.id}_${n}`;
    kept.add(id);
    return { ...call, id };
  });
}
