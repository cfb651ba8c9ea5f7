import {
  applyCompaction,
  type BeforeCompactInput,
  estimateFrom,
  type Fold,
  type MessageLike,
  planCompaction,
  runCompaction,
  tokensBetween,
} from "@loopwright/ledger";
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
import { type LoopRun, notice, replaceMessages, throwIfStopped } from "./loop-run.js";

/** A run's compaction: the side task that writes the summary, and whether the run still tries. */
export interface RunCompaction {
  /** The summariser's endpoint, model and settings (`tasks.compaction` through `taskCall`). */
  readonly task: TaskCall;
  /** Set once a fold was vetoed or its summary failed: the run does not try again. */
  off?: string;
  /**
   * The run's summariser, made at its first fold and kept, so a window it learned from a refusal
   * sizes the run's later summaries without being refused again.
   */
  summarise?: SummariseFunction;
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
  return { task };
}

/**
 * What the step's request will take of the window, as `planCompaction`'s `used`. Its prompt: the
 * size guard's own estimate (`stepSize`), or — where the last request reported its prompt and the
 * transcript still holds what it carried — that prompt plus what was appended since
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
  if (reported && reported.length <= messages.length) {
    const appended = tokensBetween(run.measure.ledger, reported.length, messages.length, messages, {
      charsPerToken,
    });
    prompt = Math.max(prompt, reported.prompt + appended);
  }
  return prompt + ceiling > (run.config.contextLength as number) ? prompt + ceiling : prompt;
}

/**
 * Phase, before each request: once `planCompaction` says the `contextLength` window is filling — the
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
): Promise<void> {
  const compaction = run.compaction;
  if (!compaction || compaction.off !== undefined) return;
  const { config, services, options } = run;
  const charsPerToken = services.calibration.charsPerTokenFor(run.supports, config.model);
  const messages = run.messages as MessageLike[];
  const plan = planCompaction(messages, {
    limit: config.contextLength as number,
    used: requestAhead(run, number, toolChoice, charsPerToken),
    charsPerToken,
    estimate: estimateFrom(run.measure.ledger, messages, { charsPerToken }),
  });
  if (!plan) return;
  if (run.hooks) {
    const { given } = run.hooks;
    const input: BeforeCompactInput = {
      messages: messages.slice(plan.from, plan.through),
      from: plan.from,
      through: plan.through,
      ...(plan.previous !== undefined ? { previous: plan.previous } : {}),
    };
    const consulted = await services.hooks.consult(given.run, input, given.context, {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(given.timeoutMs !== undefined ? { timeoutMs: given.timeoutMs } : {}),
    });
    for (const note of consulted.notes) notice(run, `Hooks: ${note}`);
    throwIfStopped(run); // a stop is not a veto
    if (!consulted.proceed) {
      compaction.off = "vetoed";
      notice(run, "The transcript was left as it was; this run does not try to compact again.");
      return;
    }
  }
  const { endpoint, model, options: taskOptions } = compaction.task;
  compaction.summarise ??= summariser(endpoint, model, {
    ...taskOptions,
    ...(options.signal ? { signal: options.signal } : {}),
    clients: services.clients,
    capabilities: services.capabilities,
    // What the summariser says of a stop would call it a failure: the stop speaks for itself.
    onNotice: (text) => {
      if (!options.signal?.aborted) notice(run, text);
    },
  });
  const summarise = compaction.summarise;
  let fold: Fold | undefined;
  try {
    fold = await runCompaction(messages, plan, summarise);
  } catch (error) {
    throwIfStopped(run); // a stop is not a failed summary: the run ends with it, compaction untouched
    notice(
      run,
      `The summary could not be written: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (!fold) {
    throwIfStopped(run);
    compaction.off = "failed";
    notice(
      run,
      `Compaction failed: no summary came back from ${model}, so the transcript was left as it was; ` +
        "this run does not try to compact again.",
    );
    return;
  }
  const after = applyCompaction(messages, fold) as ChatMessage[];
  run.measure.rebase(run.messages, after);
  replaceMessages(run, after);
  notice(
    run,
    `Compacted: messages ${plan.from} to ${plan.through - 1} (about ${plan.folded} tokens) were folded into a ` +
      `summary written by ${model}.`,
  );
}
