/** A point in a session where a host runs hooks (the spec's and the hooks package's names). */
export type HookEvent =
  | "sessionStart"
  | "beforeTurn"
  | "afterTurn"
  | "beforeCompact"
  | "sessionEnd"
  | "sessionDelete";

/**
 * A hook a pool's server runs: the spec's `hooks` entry. The pool calls `tool` on `server` with
 * `{ event, input, context }` for each event in `events`.
 */
export interface McpHookSpec {
  id: string;
  /**
   * The events it runs on. Required, but in an entry with `enabled: false` (`{ id, enabled: false }`,
   * a stronger spec layer switching a hook off), which runs on none.
   */
  events?: readonly string[] | null | undefined;
  server?: string | undefined;
  tool?: string | undefined;
  /** Its share of the hook context budget, in tokens; passed on in its outcome. */
  maxTokens?: number | undefined;
  /**
   * How long the hook may take once its server is up, its wait for a turn at the server's write
   * gate included (default: the pool's `hookTimeoutMs`). A non-negative number (0: the default);
   * `createMcpPool` refuses any other value (`invalid-config`), and takes `null` as not given.
   */
  timeoutSeconds?: number | undefined;
  /** `false` switches the hook off (it never runs); `createMcpPool` refuses anything but a boolean or `null`. */
  enabled?: boolean | null | undefined;
}

/**
 * One hook's outcome, in the shape the hooks package and the ledger's compaction read: its `id`
 * (and `name`, the same), whether it ran (`ok`), what it adds to the request (`context`, the tool's
 * text), a `veto` (`structuredContent.veto === true`, read by `beforeCompact`), the failure as
 * text (`error`), and how long it took.
 */
export interface HookOutcome {
  id: string;
  name: string;
  event: HookEvent;
  ok: boolean;
  context?: string;
  veto?: boolean;
  error?: string;
  /** The hook's call ran past its timeout (then also `ok: false`). */
  timedOut?: boolean;
  maxTokens?: number;
  ms: number;
}

/**
 * Runs every hook registered for `event` and reports each one's outcome — structurally the hooks
 * package's `HookRunner`, so a pool's `runHooks` passes straight to `gather`, `notify` and the
 * compaction's `hooks.run` without either package importing the other. `signal` (the caller
 * stopped waiting) stops the calls in flight, which the servers are told to cancel. Never rejects
 * for a hook that failed: that is an outcome with `ok: false`.
 */
export type HookRunner = (
  event: HookEvent,
  input: unknown,
  context?: unknown,
  signal?: AbortSignal,
) => Promise<HookOutcome[]>;
