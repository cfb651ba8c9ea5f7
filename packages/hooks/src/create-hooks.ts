import type { MessageLike } from "@loopwright/ledger";
import { assembleBlocks } from "./assemble-context.js";
import { arrayOrRevoked } from "./errors.js";
import { consultWith, gatherWith, notifyWith } from "./run-hooks.js";
import { aboveZero, DEFAULT_HOOK_SETTINGS, type HookSettings, mergeSettings } from "./settings.js";
import type {
  AssembleOptions,
  Consulted,
  ConsultOptions,
  Gathered,
  GatherOptions,
  HookInput,
  HookOutcome,
  HookReport,
  HookRunner,
  InjectingHookEvent,
  NotifyingHookEvent,
  NotifyOptions,
} from "./types.js";
import { putContext } from "./with-context.js";

/**
 * One set of hook settings — the shared budget, the preface, the runner timeout — and the functions
 * that read them. The package's top-level functions use a default instance; a runtime whose tenants
 * must not share settings makes its own with {@link createHooks}.
 */
export interface Hooks {
  /** See the top-level `gather`. */
  gather<Context>(
    run: HookRunner<Context>,
    event: InjectingHookEvent | readonly InjectingHookEvent[],
    input: HookInput,
    context: Context,
    options?: GatherOptions | null,
  ): Promise<Gathered>;
  /** See the top-level `notify`. */
  notify<Context>(
    run: HookRunner<Context>,
    event: NotifyingHookEvent,
    input: HookInput,
    context: Context,
    options?: NotifyOptions | null,
  ): Promise<HookReport>;
  /** See the top-level `consult`. */
  consult<Context>(
    run: HookRunner<Context>,
    input: HookInput,
    context: Context,
    options?: ConsultOptions | null,
  ): Promise<Consulted>;
  /** See the top-level `withContext`. */
  withContext<Message extends MessageLike>(
    messages: readonly Message[],
    index: number,
    context: string | null | undefined,
    preface?: string,
  ): Message[];
  /** See the top-level `assembleContext`. */
  assembleContext(outcomes: readonly HookOutcome[], maxTokens?: number, options?: AssembleOptions): string;
  /** Moves this instance's settings and returns the whole set; see `configureHooks`. */
  configure(changes: Partial<HookSettings>): HookSettings;
  /** Puts this instance's settings back to the defaults and returns them. */
  reset(): HookSettings;
  /** A copy of this instance's settings as they stand. */
  settings(): HookSettings;
}

/**
 * Makes a hooks instance with its own settings: the defaults (`HOOK_CONTEXT_TOKENS`, `HOOK_PREFACE`,
 * `HOOK_TIMEOUT_MS`) with `settings` laid over them the way `configure` lays changes.
 */
export function createHooks(settings?: Partial<HookSettings>): Hooks {
  let current = mergeSettings(DEFAULT_HOOK_SETTINGS, settings);
  return {
    gather: (run, event, input, context, options) => gatherWith(current, run, event, input, context, options),
    notify: (run, event, input, context, options) => notifyWith(current, run, event, input, context, options),
    consult: (run, input, context, options) => consultWith(current, run, input, context, options),
    withContext: (messages, index, context, preface) =>
      putContext(messages, index, context, typeof preface === "string" ? preface : current.preface),
    assembleContext: (outcomes, maxTokens, options) =>
      assembleBlocks(
        // A revoked Proxy goes on, where reading it is a note: this never throws.
        arrayOrRevoked(outcomes) === false ? [] : outcomes,
        aboveZero(maxTokens) ? Math.max(1, Math.floor(maxTokens)) : current.maxTokens,
        options,
      ),
    configure(changes) {
      current = mergeSettings(current, changes);
      return { ...current };
    },
    reset() {
      current = { ...DEFAULT_HOOK_SETTINGS };
      return { ...current };
    },
    settings: () => ({ ...current }),
  };
}
