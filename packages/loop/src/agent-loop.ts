import type { ClientPool } from "@loopwright/client";
import { type RunEvent, type RunMetrics, runMetrics } from "@loopwright/events";
import type { Calibration, LedgerEntry } from "@loopwright/ledger";
import type { CapabilityStore, ContextOverflow } from "@loopwright/negotiate";
import type { ChatClientLike, Turn } from "@loopwright/stream";
import type { CatalogServer, PreselectRouting } from "@loopwright/tool-loading";
import { compactStep, foldRefused } from "./compaction-phase.js";
import type { ChatMessage, LoopConfig, ToolChoice, ToolDefinition } from "./config.js";
import { LoopOptionError, type RunState, ToolIterationLimit } from "./errors.js";
import {
  gatherHooks,
  type HookResult,
  hookResult,
  type LoopHooks,
  type LoopHooksService,
} from "./hooks-phase.js";
import {
  askModel,
  keepAnswer,
  type LoopStep,
  measureStep,
  prepareStep,
  recoverCalls,
  refuseAtLimit,
  runTools,
  takeCalls,
} from "./loop-phases.js";
import { failure, type LoopRun, readOptions, runState, runWindow, startRun } from "./loop-run.js";
import type { CallResult, DedupePolicy, Dispatch, DispatchRequest } from "./run-calls.js";
import { tell } from "./tell.js";
import { loadMetrics, openDiscovery, type ToolLoadMetrics } from "./tool-discovery.js";

export type { HookResult, LoopHooks, LoopHooksService } from "./hooks-phase.js";
export { preview } from "./loop-phases.js";
/**
 * What `runAgentLoop` reads. `Context` is the type of `hooks.context`, inferred from it, so the
 * hooks' `run` is handed it typed.
 */
export interface AgentLoopOptions<Context = unknown> {
  /** Endpoint, model parameters, tool and retry policy. */
  config: LoopConfig;
  /** Sent as the first message when given; absent, `config.prompt`'s entries joined (both at once is refused). */
  system?: string | null | undefined;
  /**
   * The transcript so far, ending in the question. Not written to. Checked before anything is sent:
   * a message that is not a chat message, a call answered twice or a tool message answering no call
   * right before it is refused (`LoopOptionError`, `invalid-option`, option `messages`, naming the
   * index). A call no tool message answers (a run that stopped after its host stored the call) is
   * answered `NOT_RUN` right after its other answers, not run, with a notice; the transcript the run
   * hands back carries the answer.
   */
  messages: ReadonlyArray<ChatMessage>;
  /** Every tool the run may call; a step's plan may change them from that step on (`StepPlan.tools`). */
  tools?: ReadonlyArray<ToolDefinition> | undefined;
  /**
   * Runs a tool call; what it returns or throws is what the model reads (nothing, as `(the tool
   * returned no output)`). May be left out by a run that declares no tools (no `tools`, no
   * `catalog`): a call the model writes anyway is answered that there is no such tool. Left out
   * where there are tools, the run is refused before anything is sent (an `AgentLoopError` whose
   * cause, a `TypeError`, names them), as a `beforeStep` plan giving tools is (`LoopOptionError`).
   */
  dispatch?: Dispatch | undefined;
  /** Stops the run: the stream is closed and every pending call answered. */
  signal?: AbortSignal | undefined;
  /** Told of every step as it happens (forward it to `emit`). Not awaited; what it throws is ignored. */
  onEvent?: ((event: RunEvent) => void) | undefined;
  /**
   * Told once a step, before the request goes out, of the model it names (the step's plan's, else
   * `config.model`), the messages and the tools as the client is about to be sent them — the request
   * as first built: a retry sends it again, while a refusal's lesser
   * body and a continuation are not reported; with `config.compact`, a step sent again after a
   * forced fold is told again, folded. For reading (`beforeStep` is where the transcript is
   * changed). Not awaited; what it throws is ignored.
   */
  onRequest?: ((request: LoopRequest, step: number) => void) | undefined;
  /** The client to send with; `getClient(config)` when absent. */
  client?: ChatClientLike | undefined;
  /**
   * The token ledger a previous run handed back, to continue it (indexes into `messages`); absent
   * or `null` starts one. One that is not a ledger is refused before anything is sent
   * (`LoopOptionError`, `invalid-option`, option `ledger`).
   */
  ledger?: readonly LedgerEntry[] | null | undefined;
  /** Run a step's tool calls together rather than one after another; overrides `config.parallel` (default false). */
  parallel?: boolean | null | undefined;
  /** Share one answer between identical calls of a step: true (default), false, or asked per call; overrides `config.dedupeToolCalls`. */
  dedupeToolCalls?: DedupePolicy | null | undefined;
  /**
   * Look for tool calls the server's parser left in the reply as text (Hermes, Qwen, Mistral,
   * Llama 3 …) when a turn has none; default true, overrides `config.recoverToolCalls`. Found calls
   * are run, with a notice.
   */
  recoverToolCalls?: boolean | null | undefined;
  /**
   * The tools by name, grouped by server, for `config.toolDiscovery` `"ondemand"` and `"proxy"`: the
   * text on the end of the system prompt the model loads from. One server named `"tools"` holding
   * every tool when absent. In these modes a tool it does not list is never declared, loaded or
   * run (a call to it is refused with a result the model reads). Not used in eager mode, but checked in every mode before anything is
   * sent (`checkCatalog`'s rule; a Promise, such as `pool.servers()` not awaited, is named):
   * `LoopOptionError`, `invalid-option`, option `catalog`.
   */
  catalog?: readonly CatalogServer[] | null | undefined;
  /**
   * On demand: the tools an earlier run loaded (its result's `loaded`), declared from the first
   * step — the most recent 16 still in the catalogue. Not read in eager or proxy mode (proxied, the
   * transcript holds what is loaded).
   */
  loaded?: readonly string[] | undefined;
  /**
   * A shortlist of tools for the first step (at most 12, catalogued ones): on demand, declared alone
   * on the first step (`"exclusive"`) or loaded beside the catalogue (`"append"`); proxied, written
   * after the question as a `load_tools` exchange. Refused in eager mode.
   */
  preselected?: readonly string[] | undefined;
  /**
   * Make the preselection before the first step with a side task (`tasks.toolSelect`, else
   * `toolSelectModel` on the agent's endpoint; `preselectKeywords` matches words first) when no
   * `preselected` is given; overrides `config.preselect`. Refused in eager mode.
   */
  preselect?: boolean | undefined;
  /** Where an on-demand preselection goes (`"exclusive"` by default); overrides `config.preselectRouting`. */
  preselectRouting?: PreselectRouting | undefined;
  /**
   * The host's hooks: `run` (an MCP pool's `runHooks`, or the host's own function) and the `context`
   * it is handed. The `beforeTurn` hooks (and `sessionStart` on a session's first turn) are gathered
   * once before the first request onto the current question — the last `user` message — of every
   * request, never into the transcript that comes back; the result's `context` and `preface` are what
   * was said, for the host to store beside the question, and its `afterTurn` the `afterTurn` hooks,
   * not waited on. With `config.compact` the `beforeCompact` hooks may veto a fold. A hook that
   * throws, hangs or answers junk is a notice. `preface`, `maxTokens`, `timeoutMs` win over the
   * runtime's hooks settings for this run.
   */
  hooks?: LoopHooks<Context> | undefined;
  /** Told of every call the model made, before it runs (the step limit's unrun calls too). Not awaited; what it throws is ignored. */
  onToolCall?: ((request: DispatchRequest) => void) | undefined;
  /** Told of every call's whole result as it lands. Not awaited; what it throws is ignored. */
  onToolResult?: ((result: CallResult) => void) | undefined;
  /**
   * Told of each step's turn once the model has answered, before its calls run: the `Turn` as the
   * result's `turn` reads it — calls written as text recovered (`call_recovered_0` onward) and the
   * text what is left, the host's tool names, the ids the transcript keeps — with the step number.
   * Its arguments are as the model wrote them (`onMessage`'s assistant message has them repaired).
   * Never a tool result. Not awaited; what it throws is ignored: `onMessage` is the one to store from.
   */
  onTurn?: ((turn: Turn, step: number) => void) | undefined;
  /**
   * Told of each message as the loop appends it — the assistant message as it will be replayed
   * (recovered calls folded in, arguments repaired) with its turn, then each tool result — and
   * awaited, so a host's row is written before the tools run and before the next request. What it
   * throws ends the run (every call still answered).
   */
  onMessage?: ((message: ChatMessage, step: number, turn?: Turn) => unknown) | undefined;
  /**
   * Handed the transcript before each request, with `{ used, limit, model, ledger }` — the prompt
   * the run's last request reported (absent before the first and where nothing was reported), the
   * window (`config.contextLength`, or a smaller one an overflow named for that request's model with
   * `config.compact`), the model that request named, and the token ledger so far
   * (`BeforeStepContext`) — and may return a replacement:
   * where a host prunes or compacts mid-run. The ledger is moved onto the new transcript
   * (`rebaseLedger`). A replacement must keep every tool call answered by the tool messages right
   * after it, and no tool message without its call (refused with a `TypeError`, naming the ids,
   * before anything is sent). Or it returns a `StepPlan` — `{ messages?, toolChoice?, stop?, tools?,
   * catalog?, requestOnly?, model?, extraBody? }` — to also set this step's `tool_choice`, send this
   * step to another model or with other body fields (the AI SDK's `prepareStep` `model` and
   * `providerOptions`), change the run's tools from this step on (tools that joined or left
   * mid-run), or end the run here. Nothing (or `undefined`) keeps the transcript and plans nothing.
   * What it throws ends the run.
   */
  beforeStep?:
    | ((
        messages: readonly ChatMessage[],
        step: number,
        context: BeforeStepContext,
      ) =>
        | readonly ChatMessage[]
        | StepPlan
        | undefined
        | Promise<readonly ChatMessage[] | StepPlan | undefined>)
    | undefined;
}

/**
 * What `beforeStep` may return for one step instead of a bare transcript. Every field is optional;
 * `{}` plans nothing. Refused before anything is sent (`LoopOptionError`, `invalid-option`, option
 * `beforeStep`): a field not listed here, a `toolChoice` that is none of its forms or names a tool
 * the step cannot reach, `"required"` on a step that declares no tools, a `stop` that is not a
 * boolean, a stop on the first step or one beside any other field, `tools` or a `catalog` the
 * options of those names would refuse (an entry that is no function tool with a name, two tools
 * that are one name on the wire, a malformed catalogue), a `model` that is not a non-empty string,
 * an `extraBody` that is not a plain object, sets a field the loop owns or holds a value JSON cannot
 * send as given.
 */
export interface StepPlan {
  /** A replacement transcript, held to the array form's rules. */
  messages?: readonly ChatMessage[] | undefined;
  /**
   * This step's `tool_choice`: `"auto"`, `"none"`, `"required"` or `{ type: "function", function:
   * { name } }` with the host's name of a tool (sent under the wire's name of a renamed one). On
   * demand, a catalogued tool not loaded yet is loaded for it; proxied, a named tool is only reached
   * through `call_tool`, so `call_tool` is what is named. Absent: none is sent. On a `"none"` step
   * calls the model wrote into its text are not recovered. A model whose endpoint refused
   * `tool_choice` is sent none from then on (a `"none"` step then goes without tools).
   */
  toolChoice?: ToolChoice | undefined;
  /**
   * `true`: end the run here, before this step's request. The step before it ran all its calls and
   * every one is answered; the run comes back as a finished run, `stopReason: "stopped"`, its `turn`
   * the last step's (the one that asked for the calls).
   */
  stop?: boolean | undefined;
  /**
   * The run's tools from this step on, in place of what the `tools` option (or an earlier plan)
   * gave: declared on this step's request and every later one — sanitized, renamed and ordered as
   * the option's are, strict or relaxed as the endpoint takes them — and what dispatch, dedupe and
   * recovery read. A `toolChoice` beside it is checked against these tools. A call to a tool no
   * longer there goes as a call to any undeclared name does: eager, to `dispatch`, whose answer (or
   * error) the model reads; in a loading mode, answered by the loop as outside the catalogue. On
   * demand, what is loaded keeps the names still catalogued. Absent: the tools as they were. The
   * tool array sits in the prompt's head on llama.cpp: a changed one costs the prefix cache from
   * there, once, so plan it only when the tools changed.
   */
  tools?: readonly ToolDefinition[] | undefined;
  /**
   * `"ondemand"` and `"proxy"`: the catalogue from this step on, in place of the `catalog` option
   * (or an earlier plan's); `null` for none (one server `tools` holding every tool). Checked as the
   * option is, in every mode; not used in eager mode. The catalogue text on the system prompt is
   * built again only on a step whose plan gives `tools` or `catalog` — costing the prefix cache from
   * the system prompt on, once. Absent: as it was (with new `tools` and no catalogue given, the one
   * built from the tools).
   */
  catalog?: readonly CatalogServer[] | null | undefined;
  /**
   * How many messages at the end of this step's transcript (the plan's `messages`, or the run's as
   * they stand) are the host's for this request alone — a note in-band to the model that the host
   * never stores, such as a session's "the tool budget is spent": sent as they are, but with
   * `config.compact` this step's fold is planned over the messages before them, so it never cuts at
   * one (leaving the question folded away and the note as the only thing the model is asked) nor
   * summarises one as something the user said; they stay at the end, after the summary. A whole
   * number from 0 to the transcript's length; absent or 0, none. Only this step's: the next step's
   * plan says it again.
   */
  requestOnly?: number | undefined;
  /**
   * This step's model, in place of `config.model`, at the same endpoint (the AI SDK's `prepareStep`
   * `model`: a cheap model for tool steps, a strong one for the answer). Only this step's: the next
   * step goes to `config.model` unless its plan names a model again. A non-empty string. Everything
   * the loop learns or latches per model goes by the step's: what the endpoint refused of a model
   * (`tool_choice`, a temperature, a body field, an effort…) is left out of that model's requests
   * alone, the size guard's characters per token are that model's, and with `config.compact` a
   * window an overflow named is that model's and a fold is planned on the last reported prompt only
   * where that request named this model. Of a step to another model than the one before, nothing
   * is expected of the prompt cache (its usage event has no `cacheExpected` and no break, and its
   * ledger entry starts a new epoch): the request before was another model's, and a step back to a
   * model an earlier step used may find that model's prefix still held (a server with a slot or a
   * cache per model) or evicted (one slot) — the loop cannot tell which, so it claims neither. Its
   * usage event's `turn.model` names it. Endpoint-wide latches (strict
   * schemas, usage in the stream) hold for every model, and `config.contextLength` is the run's
   * window whatever the model; `beforeStep`'s `limit`, told before the plan is read, is the window
   * of the model the last request named (its `model`), a window an overflow named for it included.
   */
  model?: string | undefined;
  /**
   * Body fields for this step's request, merged over `config.extraBody` (the AI SDK's
   * `providerOptions`: a `temperature`, a `reasoning_effort`, a `response_format` on the final
   * step). Only this step's, like `toolChoice`. A field set to `undefined` leaves the config's field
   * of that name out of this step's request; `null` is JSON's and is sent. Held to the config's
   * rules: a field the endpoint refuses by name is dropped for that model and the request sent
   * again, as a config's is, and what the model refused of the config's own fields it refuses here
   * too. A plain object; refused before anything is sent where it sets a field the loop owns
   * (`@loopwright/negotiate`'s `OWNED_BODY_FIELDS`, the one list `config.extraBody` is held to:
   * `model`, `messages`, `tools`, `stream`; the plan's `model`, `messages` and `tools` set the first
   * three; one set to `undefined` is let be) or holds a value JSON cannot send as given (`NaN`,
   * `±Infinity`, a BigInt, a cycle). A `stream_options` goes as a config's does, for this step:
   * it replaces the body's own `{ include_usage: true }` whole, and is left out once the endpoint
   * refused `stream_options`. A `tool_choice` here goes as a config's does, and the plan's
   * `toolChoice` wins over it.
   */
  extraBody?: Record<string, unknown> | undefined;
}

/** A step's request as `onRequest` is handed it: what the client is about to be sent. */
export interface LoopRequest {
  /**
   * The model the request names, as sent (the body's `model`): the step's plan's `model` where
   * `beforeStep` planned one (`StepPlan.model`), else `config.model`.
   */
  model: string;
  /** The messages, the system prompt first when there is one. */
  messages: readonly ChatMessage[];
  /** The tools as declared (ordered, strict or relaxed as this endpoint takes them); empty for none. */
  tools: readonly ToolDefinition[];
}

/** What `beforeStep` is told besides the transcript. */
export interface BeforeStepContext {
  /** The prompt tokens the run's last request reported; absent before the first step or where none was reported. */
  used?: number;
  /**
   * The context window, where `config.contextLength` gives one: that of the model the last request
   * named (`model`), whose count `used` is — `config.contextLength`, or with `config.compact` the
   * smaller window an endpoint's refusal named for that model in this run. So a host whose plans
   * route steps to a model served with a smaller window is told that window while they stay on it.
   * Before the first step, the config model's. Told before this step's plan is read: a plan that
   * sends this step to another model than the last is planning against the last one's window (the
   * size guard and, with `compact`, the fold hold the step to its own model's window all the same).
   */
  limit?: number;
  /**
   * The model the run's last request named (that step's plan's `model`, else `config.model`): what
   * `used` counted and `limit` is the window of. Absent before the first step.
   */
  model?: string;
  /** The token ledger so far. */
  ledger: readonly LedgerEntry[];
}

/** The caches a run reads and writes: one runtime's client pool, capability latches and calibration. */
export interface LoopServices {
  clients: Pick<ClientPool, "getClient">;
  capabilities: Pick<CapabilityStore, "capabilitiesFor">;
  calibration: Pick<Calibration, "calibrate" | "charsPerTokenFor">;
  /** The runtime's hooks instance (its budget, preface and timeout). */
  hooks: LoopHooksService;
}

/** What a finished run hands back. */
export interface AgentLoopResult extends RunState, HookResult {
  /** The last turn: the answer. */
  turn: Turn;
  /** How many turns (requests answered) the run took. */
  steps: number;
  /**
   * Why the run ended: `"answered"`, a turn asked for no tools (`turn` is the answer);
   * `"stopped"`, `beforeStep` planned `{ stop: true }` after a tool step (`turn` asked for the calls
   * that ran last, every one answered).
   */
  stopReason: "answered" | "stopped";
  /** The token ledger: one `{ through, prompt, epoch }` per request whose prompt was reported. */
  ledger: LedgerEntry[];
  /**
   * The run added up from the events it emitted (`runMetrics`), with the load counts only the loop
   * sees (`toolsLoaded`, `redundantLoads`, `unknownToolNames`). The largest prompt's `share` is of
   * the window of the model its turn went to: `config.contextLength`, or — with `config.compact`,
   * for a model a step's plan named — the smaller window an endpoint's refusal named for that model
   * in this run (the window `beforeStep` is told as `limit` and the size guard holds that model's
   * requests to), so 250 tokens sent to a model served with 300 read as 0.83, not as 250 of
   * `contextLength`'s 4,000. Without a `contextLength`, no share.
   */
  metrics: RunMetrics & ToolLoadMetrics;
}

/**
 * `runAgentLoop` against the given caches; what `createRuntime().runAgentLoop` and the top-level
 * `runAgentLoop` (the default runtime) both call.
 *
 * Runs an agent: one turn per step (`runTurn`: retries, refusals answered, the stream read back),
 * the model's tool calls dispatched and answered in the transcript between steps, until a turn asks
 * for no tools (`stopReason: "answered"`) or `beforeStep` plans a stop (`"stopped"`). Every turn
 * ends in a `usage` event, one its host stopped too (`turn.stopped`) and one that failed
 * (`turn.failed`).
 *
 * Throws `ToolIterationLimit` when the model still asks after `maxToolIterations` tool steps,
 * `AgentLoopOverflow` (a `ContextOverflow`) for a request too big for the window — with
 * `config.compact`, once the transcript was folded for it (forced) and the step sent again, or
 * nothing could be folded, the message saying which — and
 * `AgentLoopError` (the cause on `cause`) for anything else — a `LoopOptionError` cause, before
 * anything is sent, for an option the loop does not know or does not do yet, a message in
 * `messages` that is not a chat message or a tool message that does not pair with a call, a
 * `config.extraBody` `buildBody` would refuse (or that is no plain object), or two
 * tools whose names become one on the wire. Each carries the run, whose transcript always has every tool call
 * answered, so it can be stored or sent again as it is.
 */
export async function runLoop(services: LoopServices, options: AgentLoopOptions): Promise<AgentLoopResult> {
  const run = startRun(services, readOptions(options));
  try {
    await openDiscovery(run); // a preselection made, carried tools loaded, a proxied one written in
  } catch (error) {
    throw failure(run, error);
  }
  let last: LoopStep | undefined; // the step before this one: what a stop ends on
  for (let number = 1; ; number++) {
    let limited = false;
    try {
      const plan = await prepareStep(run, number);
      if (plan.stop && last) return finished(run, last, "stopped");
      // A request with no message at all is one every endpoint refuses (OpenAI: "[] is too short"):
      // said here, before it is sent. After beforeStep, which may write an empty start's transcript.
      if (run.messages.length === 0 && run.system === "" && !run.discovery) {
        throw new LoopOptionError(
          "invalid-option",
          "messages",
          "runAgentLoop: there is nothing to send — messages is empty, with no system prompt, and beforeStep " +
            "wrote none in: give the conversation, ending in the question.",
        );
      }
      await compactStep(run, number, plan.toolChoice, plan.requestOnly);
      await gatherHooks(run, plan.requestOnly);
      // With compact on, a request refused as too big is folded (forced) and sent once more.
      const refit = run.compaction
        ? (overflow: ContextOverflow) => foldRefused(run, number, plan.toolChoice, overflow, plan.requestOnly)
        : undefined;
      const step = await askModel(run, number, plan.toolChoice, refit);
      measureStep(run, step);
      recoverCalls(run, step);
      if (step.turn.toolCalls.length === 0) {
        tellTurn(run, step);
        await keepAnswer(run, step);
        return finished(run, step, "answered");
      }
      last = step;
      takeCalls(run, step);
      tellTurn(run, step);
      limited = run.toolSteps >= run.limit;
      await (limited ? refuseAtLimit(run, step) : runTools(run, step));
    } catch (error) {
      throw failure(run, error);
    }
    if (limited) throw new ToolIterationLimit(run.limit, runState(run));
  }
}

/**
 * The step's turn told to `onTurn`, a copy (its calls and their functions too): a watcher that
 * rewrites what it is told changes neither the transcript nor the result's `turn`.
 */
function tellTurn(run: LoopRun, step: LoopStep): void {
  const { onTurn } = run.options;
  if (!onTurn) return;
  const { turn } = step;
  const toolCalls = turn.toolCalls.map((call) =>
    call.type === "function" ? { ...call, function: { ...call.function } } : { ...call },
  );
  tell(onTurn, { ...turn, toolCalls }, step.number);
}

/** What a finished run hands back: the answer, the run, and its metrics added up from its events. */
function finished(run: LoopRun, step: LoopStep, stopReason: AgentLoopResult["stopReason"]): AgentLoopResult {
  const { contextLength } = run.config;
  const metrics = runMetrics([...run.kept, { kind: "done" }], contextLength ? { contextLength } : {});
  return {
    turn: step.turn,
    steps: step.number,
    stopReason,
    ledger: run.measure.ledger,
    metrics: { ...metrics, ...largestAgainstItsWindow(run, metrics), ...loadMetrics(run) },
    ...runState(run),
    ...hookResult(run, step.turn.content),
  };
}

/**
 * The largest prompt's `share` of the window of the model its turn went to (`runWindow`: that
 * model's window where a refusal named a smaller one than `contextLength` in this run, else
 * `contextLength`), where `runMetrics`, which knows one window, put it against `contextLength`: a
 * step a plan sent to a model served with 300 tokens, 250 of them filled, read as 6% of a
 * 4,000-token window. Nothing where there is no largest prompt or no window.
 */
function largestAgainstItsWindow(run: LoopRun, metrics: RunMetrics): Pick<RunMetrics, "largestPrompt"> {
  const largest = metrics.largestPrompt;
  if (largest === undefined) return {};
  // runMetrics counts one turn per usage event, from 1, in the order they were emitted.
  const usage = run.kept.filter((event) => event.kind === "usage")[largest.turn - 1];
  const model = usage?.kind === "usage" ? usage.turn?.model : undefined;
  const window = runWindow(run, model ?? run.config.model);
  if (window === undefined || window <= 0) return {};
  return { largestPrompt: { ...largest, share: largest.tokens / window } };
}
