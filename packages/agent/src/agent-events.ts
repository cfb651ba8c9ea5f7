import type { TurnUsage } from "@loopwright/events";
import type { ChatMessage, DispatchRequest, SideUsage } from "@loopwright/loop";
import type { AgentMessage } from "./messages.js";

/** How an agent run ended. */
export type AgentRunStatus =
  /** The model answered without asking for tools, and no queued message was left to deliver. */
  | "ok"
  /** Every call of the last tool step asked to end the run (`terminate`). */
  | "terminated"
  /** `shouldStopAfterTurn` said stop. */
  | "stopped"
  /** `abort()` was called. */
  | "aborted"
  /** The loop failed (the endpoint refused, the tool budget ran out…); `error` says why. */
  | "error";

/**
 * What an agent tells its subscribers, in order, one tagged union on `type`. A UI can render a run
 * from these alone: `agent_start`, then per turn `turn_start`, the messages it adds
 * (`message_start` / `message_update`… / `message_end`), its tool calls (`tool_execution_start` /
 * `tool_execution_update`… / `tool_execution_end`), `turn_end`; last `agent_end`.
 */
export type AgentEvent =
  | { type: "agent_start" }
  | {
      type: "agent_end";
      messages: AgentMessage[];
      status: AgentRunStatus;
      error?: string;
      /**
       * What the run's side tasks (compaction summaries, the preselection) cost in all, apart from
       * the turns' usage; absent where they cost nothing. Counts a side request no usage event came
       * after (a fold's summary for a request that then failed).
       */
      sideUsage?: SideUsage;
    }
  | { type: "turn_start" }
  | { type: "turn_end"; message: ChatMessage | undefined; toolResults: ChatMessage[] }
  | { type: "message_start"; message: AgentMessage }
  | {
      type: "message_update";
      /** The assistant message so far (text accumulated). */
      message: ChatMessage;
      /** What this update added. */
      delta: { type: "text" | "thinking"; text: string };
    }
  | {
      /**
       * A late `</think>` took the last `chars` characters of the answer text so far back as
       * reasoning: `message` no longer holds them, and the reasoning follows as `thinking` updates.
       */
      type: "message_retract";
      message: ChatMessage;
      chars: number;
    }
  | {
      /**
       * The last `chars` characters of the reasoning streamed for this message (its `thinking`
       * updates) were no reasoning: a tool call written as text with `<think>` or `</think>` in its
       * arguments was first drawn as reasoning. What the message keeps as reasoning follows as
       * `thinking` updates. The answer text is untouched.
       */
      type: "thinking_retract";
      message: ChatMessage;
      chars: number;
    }
  | { type: "message_end"; message: AgentMessage }
  | {
      type: "tool_execution_start";
      toolCallId: string;
      toolName: string;
      /** The arguments as read (`{}` where they could not be read). */
      args: Record<string, unknown>;
      /** The arguments as the model wrote them, where the call had such text. */
      rawArgs?: string;
    }
  | { type: "tool_execution_update"; toolCallId: string; toolName: string; partialResult: unknown }
  | { type: "tool_execution_end"; toolCallId: string; toolName: string; result: string; isError: boolean }
  /**
   * A turn's token counts as the endpoint reported them; `sideUsage`, once the run's side tasks
   * (compaction summaries, the preselection) cost anything, their totals over the run so far — not
   * in `usage`, so a listener adding up `usage` counts no side request. Every turn ends in one: a
   * turn the run was stopped during, or that failed (its stream dropped, the endpoint refused it),
   * has `ended` set, and its `usage` is only what the endpoint reported by then (usually zero).
   */
  | { type: "usage"; usage: TurnUsage; sideUsage?: SideUsage; ended?: "stopped" | "failed" }
  /** Something the loop wants a person to know (a retry, a recovered call). */
  | { type: "notice"; text: string }
  /** `autoCompact`: the loop folded the transcript; `messages` is the agent's transcript from now on. */
  | { type: "compacted"; messages: AgentMessage[] };

/** A subscriber: awaited in registration order; handed the run's signal. What it throws is ignored. */
export type AgentListener = (event: AgentEvent, signal: AbortSignal | undefined) => void | Promise<void>;

/** What `beforeToolCall` is handed. */
export interface BeforeToolCallContext {
  toolCall: DispatchRequest;
  /** The arguments as parsed (and repaired). */
  args: Record<string, unknown>;
  /** The transcript so far, the assistant message that asked for the call included. */
  messages: readonly AgentMessage[];
}

/**
 * What `beforeToolCall` may return, read by these keys only: nothing (`undefined`/`null`) to let the
 * call run; `{ block: true, reason }` to answer it with the reason instead (the model reads it as an
 * error), `terminate: true` beside it to ask the run to end after this step; `{ args }` to run it
 * with other arguments (a plain object). `meta` holds the host's own data (audit, policy, lease):
 * never read, never named in a notice. Only a plain object (`{ … }`, JSON-parsed, any realm's, or
 * with no prototype) is read: anything else — an `Error`, a fetch `Response` whose body was not read,
 * a `Map`, a class instance — is not run, and so are `args` that are not a plain object (an
 * un-awaited rewrite's Promise, a `Date`), `args` JSON cannot write (a Proxy whose trap throws, a
 * cycle) and an answer whose reading throws (a Proxy's trap: its text goes to the host's notice
 * only). `reason` and `terminate: true` belong to a block: without
 * `block: true` the call is not run. Any other key whose value is not `undefined`/`null` fails
 * closed: beside `block: true` the call is blocked as asked, with a notice naming the key; otherwise
 * it is not run. A call not run for such an answer is answered, for the model, with `Not run: the
 * host's policy hook stopped this call to <name> (its answer could not be read).`, which names none
 * of the host's keys; a notice tells the host what was wrong ("… not a field it reads (block, reason,
 * terminate, args; put the host's own data in meta)"). So `{ block: false, meta: { ruleId } }` runs
 * and `{ block: false, ruleId }` does not.
 *
 * `args` does not admit `undefined`: an own `args` key holding `undefined` (a rewrite that produced
 * nothing) is not run. Under `exactOptionalPropertyTypes` the type refuses it (`{ args: maybe }`
 * with `maybe` possibly undefined: leave the key out instead, `...(maybe && { args: maybe })`);
 * without that setting TypeScript reads every optional property as admitting `undefined`, so only
 * the run-time check refuses it.
 */
export type BeforeToolCallResult =
  | undefined
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook that returns nothing is allowed.
  | void
  | { block: true; reason?: string | undefined; terminate?: boolean | undefined; meta?: unknown }
  | { block?: false | undefined; args?: Record<string, unknown>; meta?: unknown };

/** What `afterToolCall` is handed. */
export interface AfterToolCallContext extends BeforeToolCallContext {
  /** What the tool returned, or the error it threw. */
  result: unknown;
  isError: boolean;
}

/**
 * What `afterToolCall` may return, read by these keys only: nothing (`undefined`/`null`) to keep the
 * result; `result` (and `isError`) to replace it; `terminate` to ask the run to end after this step.
 * The run ends only when every call of the step asked to. `isError` and `terminate` are read only as
 * booleans. `meta` holds the host's own data (audit, latency): never read, never named in a notice.
 * Any other key whose value is not `undefined`/`null` fails closed: beside `result` the result is
 * used, with a notice naming the key; without it (`{ redacted }`, `{ message: "Output withheld" }`,
 * `{ auditId }`) the tool's result is withheld, as it is for an answer that is not a plain object (a
 * string, a list, an `Error`, a fetch `Response` whose body was not read, a `Map`, a class instance),
 * for a `result` that is a Promise (an un-awaited redaction) or that JSON cannot write (a Proxy
 * whose trap throws, a cycle), and for an answer whose reading throws (a Proxy's trap: its text goes
 * to the host's notice only).
 * A withheld call is answered, for the model, with `Result withheld: the host's policy hook withheld
 * the result of this call to <name> (its answer could not be read).` — never quoting the answer nor
 * naming the host's keys —, and a notice tells the host what was wrong. So
 * `{ result: r, meta: { auditId } }` sends `r`.
 *
 * `result` is any value but `undefined` (`null` is a value): an own `result` key holding
 * `undefined` (a redaction that returned nothing) withholds the tool's result, and a Promise (an
 * un-awaited redaction) does too. A `result` typed `unknown` must be narrowed first. Under
 * `exactOptionalPropertyTypes` the type refuses `{ result: undefined }` and `{ result: maybe }` with
 * `maybe` possibly undefined (leave the key out to keep the tool's result); without that setting
 * TypeScript reads every optional property as admitting `undefined`, so only the run-time check
 * refuses it.
 */
export type AfterToolCallResult =
  | undefined
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook that returns nothing is allowed.
  | void
  | {
      // biome-ignore lint/complexity/noBannedTypes: `{}` is every value but undefined and null.
      result?: {} | null;
      isError?: boolean | undefined;
      terminate?: boolean | undefined;
      meta?: unknown;
    };

/** What a finished run hands back. */
export interface AgentRunResult {
  status: AgentRunStatus;
  /** The messages the run added to the transcript. */
  messages: AgentMessage[];
  /** Why, when `status` is `"error"`. */
  error?: string;
  /** What was thrown, when `status` is `"error"` (the loop's `AgentLoopError`, `ToolIterationLimit`…). */
  cause?: unknown;
  /**
   * What the run's side tasks (compaction summaries, the preselection) cost in all, summed over its
   * loop runs, apart from the turns' usage; absent where they cost nothing. A failed run's too.
   */
  sideUsage?: SideUsage;
}
