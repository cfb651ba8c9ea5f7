import {
  applyCompaction,
  type BeforeCompactInput,
  type CompactionPlan,
  estimateFrom,
  type Fold,
  type MessageLike,
  planCompaction,
  runCompaction,
  tokensBetween,
} from "@loopwright/ledger";
import type { ContextOverflow } from "@loopwright/negotiate";
import {
  type SideTaskError,
  type SummariseFunction,
  summariser,
  type TaskCall,
  type TaskSettings,
  taskCall,
} from "@loopwright/side-task";
import type { ChatMessage, LoopConfig, ToolChoice } from "./config.js";
import { LoopOptionError } from "./errors.js";
import { stepSize } from "./loop-phases.js";
import {
  addSideUsage,
  type LoopRun,
  noteOverflow,
  notice,
  replaceMessages,
  runWindow,
  throwIfStopped,
} from "./loop-run.js";
import { beforeRequestOnly } from "./step-plan.js";

/** A run's compaction: the side task that writes the summary, and whether the run still tries. */
export interface RunCompaction {
  /** The summariser's endpoint, model and settings (`tasks.compaction` through `taskCall`). */
  readonly task: TaskCall;
  /** Set once a fold was vetoed or its summary failed: the run does not try again. */
  off?: string | undefined;
  /**
   * The run's summariser, made at its first fold and kept, so a window it learned from a refusal
   * sizes the run's later summaries without being refused again.
   */
  summarise?: SummariseFunction | undefined;
  /** The window `summarise` was made with (`contextLength`), where it was handed one. */
  summaryWindow?: number | undefined;
  /**
   * By model (a step's plan may name another than `config.model`): the smallest window an endpoint's
   * refusal named for it in this run (`ContextOverflow.window`) where it is below `contextLength`:
   * the folds of that model's steps are planned against it from then on.
   */
  readonly windows: Map<string, number>;
  /** Whether the summary is written by the run's own model at its own endpoint (the same window). */
  readonly sameModel: boolean;
}

function refuse(option: string, message: string): never {
  throw new LoopOptionError("invalid-option", option, message);
}

/**
 * The run's compaction when `config.compact` is `true` (a spec's `limits.compact`), checked;
 * `undefined` otherwise. Throws `LoopOptionError` (`invalid-option`) when it cannot work: no
 * `contextLength` window to fill, or no `tasks.compaction` model to write the summary (the main
 * model never writes it).
 */
export function startCompaction(config: LoopConfig): RunCompaction | undefined {
  if (config.compact !== true) return undefined;
  const limit = config.contextLength;
  if (!(typeof limit === "number" && Number.isFinite(limit) && limit > 0)) {
    refuse(
      "config.compact",
      "config.compact folds the transcript once the context window fills, and needs config.contextLength " +
        `(the window in tokens, above zero); it was ${String(limit)}.`,
    );
  }
  let task: TaskCall;
  try {
    task = taskCall(config.tasks?.compaction as TaskSettings | undefined, {}, config);
  } catch (error) {
    refuse("config.tasks.compaction", `config.compact: ${(error as SideTaskError).message}`);
  }
  if (task.model === "") {
    refuse(
      "config.tasks.compaction",
      "config.compact needs tasks.compaction naming the model that writes the summary; the main model is " +
        "never used for it. Give tasks.compaction.model, or leave compact off.",
    );
  }
  // On no prototype: its optional fields are read where unset, and a polluted
  // `Object.prototype.summarise` was taken for the run's summariser (every fold failed), `.off` for
  // a veto (no fold was tried), `.window` for a window a refusal named.
  return Object.assign(Object.create(null) as RunCompaction, {
    task,
    sameModel: task.model === config.model && task.endpoint.baseUrl === config.baseUrl,
    windows: new Map<string, number>(),
  });
}

/** The window the run's folds are planned against: `contextLength`, or a smaller one a refusal named. */
function windowOf(run: LoopRun): number {
  return runWindow(run) as number;
}

/**
 * What the step's request will take of the window, as `planCompaction`'s `used`. Its prompt: the
 * size guard's own estimate (`stepSize`), or — where the last request reported its prompt, named
 * this step's model (another model's tokenizer counts another number) and the transcript still
 * holds what it carried — that prompt plus what was appended since
 * (`tokensBetween`: the call and its results, which no request has measured yet), whichever is
 * larger. With the reply ceiling added where the two would not fit the window together, which is
 * what the guard refuses: such a request is past three quarters of it, so a fold is planned for
 * it, while one that fits is planned for at 75 % of its prompt, as before.
 */
function requestAhead(
  run: LoopRun,
  number: number,
  toolChoice: ToolChoice | undefined,
  charsPerToken: number,
): number {
  const { size, ceiling } = stepSize(run, number, toolChoice, charsPerToken);
  let prompt = size - ceiling;
  const reported = run.reported;
  const messages = run.messages as MessageLike[];
  if (reported && reported.model === run.params.model && reported.length <= messages.length) {
    const appended = tokensBetween(run.measure.ledger, reported.length, messages.length, messages, {
      charsPerToken,
    });
    prompt = Math.max(prompt, reported.prompt + appended);
  }
  return prompt + ceiling > windowOf(run) ? prompt + ceiling : prompt;
}

/**
 * The share of the window a forced fold brings the refused request down to, by the loop's count
 * (`planCompaction`'s `target`): as far as the last user message where nothing less does.
 */
const FORCED_TARGET = 0.75;

/**
 * Phase, before each request: once `planCompaction` says the window is filling (`contextLength`, or
 * a smaller one an endpoint's refusal named earlier in the run) — the
 * request about to go out (`requestAhead`: what was appended since the last reported prompt
 * counted) past three quarters of it, or too big for it with its reply ceiling — the oldest stretch is folded into a summary the `tasks.compaction` model writes (`summariser`) — the
 * `beforeCompact` hooks asked first where the run has hooks (`consult`: a veto from a hook that ran
 * leaves the transcript as it was) — and the ledger is moved onto the folded transcript. A veto, or a
 * summary that failed or came back empty, leaves the transcript as it was, with a notice, and the run
 * does not try again. A stop while the hooks or the summariser are asked ends the run with the
 * signal's reason, the transcript as it was. Every tool call stays answered: the cut lands on a user message.
 */
export async function compactStep(
  run: LoopRun,
  number: number,
  toolChoice: ToolChoice | undefined,
  requestOnly = 0,
): Promise<void> {
  const compaction = run.compaction;
  if (!compaction || compaction.off !== undefined) return;
  const plan = planFold(run, number, toolChoice, false, requestOnly);
  if (plan) await fold(run, compaction, plan, false);
}

/**
 * After the step's request came back as a `ContextOverflow` (the endpoint refused it, or the size
 * guard found it too big), with `config.compact` on: the fold `compactStep` makes, planned on the
 * refused request — taken as filling the window whatever the loop's count said, and brought down to
 * three quarters of it, as far as the last user message where nothing less does — and forced. The
 * window is `contextLength`, or the window the refusal names (`overflow.window`, llama.cpp's `n_ctx`)
 * where that is smaller: the run's later folds are planned against it too, and where the summary is
 * written by the run's own model at its own endpoint the summariser is handed it (`contextLength`),
 * so the summary request is sized to fit it from the first. A
 * `beforeCompact` veto (this step's or an earlier one's) is noted and overridden. A notice names the
 * refusal. Resolves once folded, for the step to be sent again; otherwise throws `overflow`, noted
 * (`noteOverflow`) with why nothing was folded: no user message to cut at (one long tool run under a
 * single question), or a summary that failed (now or earlier in the run). A stop throws the stop.
 */
export async function foldRefused(
  run: LoopRun,
  number: number,
  toolChoice: ToolChoice | undefined,
  overflow: ContextOverflow,
  requestOnly = 0,
): Promise<void> {
  const compaction = run.compaction;
  if (!compaction) throw overflow;
  // A server whose window is smaller than contextLength (llama.cpp started with a smaller -c): the
  // fold is planned against the window its refusal named, and so is every later one.
  // Learnt for the model that refused: a step of another model keeps its own window.
  const named = overflow.window;
  const model = run.params.model;
  if (
    named !== undefined &&
    named < (compaction.windows.get(model) ?? (run.config.contextLength as number))
  ) {
    compaction.windows.set(model, named);
  }
  const why = "With compact on, the loop did not fold the transcript and send it again:";
  if (compaction.off === "failed") {
    throw noteOverflow(
      overflow,
      `${why} a summary already failed in this run, so it does not compact again.`,
    );
  }
  const plan = planFold(run, number, toolChoice, true, requestOnly);
  if (!plan) {
    throw noteOverflow(
      overflow,
      `${why} there is nothing to fold, no user message after the first to cut at (one long tool run under a ` +
        "single question keeps its whole transcript).",
    );
  }
  notice(
    run,
    `The request was refused as too big for the window (${overflow.serverMessage}); folding the transcript ` +
      "(compact) and sending it once more.",
  );
  const failed = await fold(run, compaction, plan, true);
  if (failed !== undefined) throw noteOverflow(overflow, `${why} ${failed}.`);
}

/**
 * Where to fold the transcript for the step's request (`planCompaction`), or `undefined` for no fold.
 * `forced`: the request was refused as too big, so it is taken as filling the window at least, and the
 * plan has to bring it down to `FORCED_TARGET` of it. `requestOnly`: how many messages at the end are
 * the host's for this request alone (`StepPlan.requestOnly`); the plan is made over the messages
 * before them — the request's size still counts them — so its cut is never one of them and its folded
 * stretch never holds one, and they stay at the end after the fold (`applyCompaction` keeps
 * everything from the cut on). Planned over them, a session's "tool budget spent" note (a user
 * message) was the cut: the question went into the summary and the note was all the model was asked.
 */
function planFold(
  run: LoopRun,
  number: number,
  toolChoice: ToolChoice | undefined,
  forced: boolean,
  requestOnly: number,
): CompactionPlan | undefined {
  const { services } = run;
  const charsPerToken = services.calibration.charsPerTokenFor(run.supports, run.params.model);
  const all = run.messages as MessageLike[];
  const messages = beforeRequestOnly(all, requestOnly) as MessageLike[];
  const limit = windowOf(run);
  const ahead = requestAhead(run, number, toolChoice, charsPerToken);
  return planCompaction(messages, {
    limit,
    used: forced ? Math.max(ahead, limit) : ahead,
    ...(forced ? { target: FORCED_TARGET } : {}),
    charsPerToken,
    estimate: estimateFrom(run.measure.ledger, all, { charsPerToken }),
  });
}

/**
 * Folds as `plan` says: the hooks consulted (`forced`: a veto noted, not honoured), the summary
 * written, the transcript and the ledger moved onto the fold, with notices. Resolves `undefined` once
 * folded; otherwise why not, the transcript as it was and the run's compaction off (a veto, a summary
 * that failed). A stop throws the stop.
 */
async function fold(
  run: LoopRun,
  compaction: RunCompaction,
  plan: CompactionPlan,
  forced: boolean,
): Promise<string | undefined> {
  const { services, options } = run;
  const messages = run.messages as MessageLike[];
  if (run.hooks) {
    const { given } = run.hooks;
    const input: BeforeCompactInput = {
      messages: messages.slice(plan.from, plan.through),
      from: plan.from,
      through: plan.through,
      ...(plan.previous !== undefined ? { previous: plan.previous } : {}),
    };
    const consulted = await services.hooks.consult(given.run, input, given.context, {
      ...(forced ? { forced } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(given.timeoutMs !== undefined ? { timeoutMs: given.timeoutMs } : {}),
    });
    // A stop is not a veto, nor hooks that failed: what consult says of it would call it one.
    throwIfStopped(run);
    for (const note of consulted.notes) notice(run, `Hooks: ${note}`);
    if (!consulted.proceed) {
      compaction.off = "vetoed";
      notice(run, "The transcript was left as it was; this run does not try to compact again.");
      return `a beforeCompact hook vetoed the fold${consulted.vetoedBy ? ` (${consulted.vetoedBy})` : ""}`;
    }
  }
  const { endpoint, model, options: taskOptions } = compaction.task;
  // On the run's own model and endpoint, the run's window is the summariser's too: `contextLength`,
  // or a smaller one a refusal named. Handed it from the first fold, the summary request is sized to
  // fit it; before, it was handed only a window a refusal named, so the first summary of a stretch
  // bigger than the window was sent whole to the server the loop had been told the size of, refused
  // (llama.cpp's 400), and only then cut and asked again. Made again where it learns a smaller one.
  const window = compaction.sameModel ? runWindow(run, run.config.model) : undefined;
  if (window !== undefined && window !== compaction.summaryWindow) {
    compaction.summarise = undefined;
    compaction.summaryWindow = window;
  }
  compaction.summarise ??= summariser(endpoint, model, {
    ...taskOptions,
    ...(window !== undefined ? { contextLength: window } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    clients: services.clients,
    capabilities: services.capabilities,
    // Each summary request's cost, kept apart from the turns' usage (result.sideUsage, usage events).
    onUsage: (report) => addSideUsage(run, "summary", report.usage),
    // What the summariser says of a stop would call it a failure: the stop speaks for itself.
    onNotice: (text) => {
      if (!options.signal?.aborted) notice(run, text);
    },
  });
  const summarise = compaction.summarise;
  let folded: Fold | undefined;
  try {
    folded = await runCompaction(messages, plan, summarise);
  } catch (error) {
    throwIfStopped(run); // a stop is not a failed summary: the run ends with it, compaction untouched
    notice(
      run,
      `The summary could not be written: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (!folded) {
    throwIfStopped(run);
    compaction.off = "failed";
    notice(
      run,
      `Compaction failed: no summary came back from ${model}, so the transcript was left as it was; ` +
        "this run does not try to compact again.",
    );
    return `no summary came back from ${model}`;
  }
  const after = applyCompaction(messages, folded) as ChatMessage[];
  run.measure.rebase(run.messages, after);
  replaceMessages(run, after);
  notice(
    run,
    `Compacted: messages ${plan.from} to ${plan.through - 1} (about ${plan.folded} tokens) were folded into a ` +
      `summary written by ${model}.`,
  );
  return undefined;
}
