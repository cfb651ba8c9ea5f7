import {
  type ClientPool,
  type ClientPoolOptions,
  createClientPool,
  defaultClientPool,
  type Endpoint,
} from "@loopwright/client";
import { createBus, defaultBus, type EventBus, EventsError, type EventsSettings } from "@loopwright/events";
import { createHooks, defaultHooks, type HookSettings, type Hooks } from "@loopwright/hooks";
import {
  type Calibration,
  type CalibrationOptions,
  createCalibration,
  defaultCalibration,
} from "@loopwright/ledger";
import {
  type CapabilityStore,
  type CapabilityStoreOptions,
  createCapabilityStore,
  defaultCapabilityStore,
} from "@loopwright/negotiate";
import { type AgentLoopOptions, type AgentLoopResult, type LoopServices, runLoop } from "./agent-loop.js";
import { errorMessage, failedRun, type LoopErrorEvent } from "./errors.js";
import { messagesOf, readOptions, refusedAtStart } from "./loop-run.js";
import { ownView } from "./own.js";
import { ownDescriptors, protoless } from "./protoless.js";

/** `runAgentLoop`'s options on a runtime: the loop's, plus the id to emit the run under. */
export interface RunOptions<Context = unknown> extends AgentLoopOptions<Context> {
  /**
   * Emit every event of the run into this runtime's bus under this id, then `error` (when it
   * throws) and `done`, so a watcher (`runtime.bus.watch(runId)`) needs nothing else. `onEvent` is
   * still told of each event. Absent, nothing is emitted. Empty or not a string, or the id of a run
   * still in progress on the same bus (in this process): refused before anything is sent (an
   * `AgentLoopError` carrying the run, its cause an `EventsError`, `invalid-run-id`). A run's id is
   * free again once it has emitted its `done`. On a bus shared by many processes (one with
   * `claimRun`, such as `@loopwright/redis`'s), the id is claimed across all of them before anything
   * is sent: a run under it still in progress on another host is refused the same way (the same
   * `AgentLoopError`, its cause the bus's `EventsError`, `invalid-run-id`, naming the id). Run ids
   * must be unique across the whole fleet of hosts sharing the bus: namespace them per tenant.
   */
  runId?: string;
}

/**
 * One set of the caches a run learns into — the client pool (with its window-route latches), the
 * capability latches, the calibration readings and the event bus — with the loop as a method that
 * uses them. For a host whose tenants must not share a latch, a pool or a bus.
 */
export interface Runtime {
  /** Pooled `openai` clients and window lookups. */
  readonly clients: ClientPool;
  /** What each endpoint and model refused. */
  readonly capabilities: CapabilityStore;
  /** Characters-per-token readings per (endpoint, model). */
  readonly calibration: Calibration;
  /** The run event bus a host emits into and watchers read. */
  readonly bus: EventBus;
  /** The hooks settings the loop gathers with: the shared budget, the preface, the runner timeout. */
  readonly hooks: Hooks;
  /** `runAgentLoop` with this runtime's caches; given a `runId`, its events go into this runtime's bus. */
  runAgentLoop<Context = unknown>(options: RunOptions<Context>): Promise<AgentLoopResult>;
  /**
   * Drops one tenant's entries: its pooled clients and window-route latches, the capability latches
   * of its endpoint (base URL in any spelling of that server, key, and the headers it is sent: pass
   * the endpoint the runs were given) and the calibration readings taken against them, in shared
   * stores too. Other tenants keep theirs, a tenant told apart only by its headers (an `api-key`
   * header, no `apiKey`) included. Throws `EndpointConfigError` for an unusable base URL.
   */
  forget(endpoint: Pick<Endpoint, "baseUrl" | "apiKey" | "headers">): void;
  /** Drops every cache and latch of this runtime and puts the bus's and the hooks' settings back to the defaults. */
  reset(): void;
  /**
   * Drops every cache, every run buffered on the bus (finishing its watchers) and the bus's sweep
   * timer, so nothing of the runtime stays scheduled. A runtime that is simply dropped is collected
   * too; `close()` frees it at once.
   */
  close(): void;
}

/** Bounds and settings of the caches `createRuntime` makes (each package's defaults where absent). */
export interface RuntimeOptions {
  /** The client pool's: `maxClients`, `maxRoutes`, `onLog`, `logLevel`, window lookup bounds. */
  clients?: ClientPoolOptions | undefined;
  /** The capability store's: `maxEndpoints`. */
  capabilities?: CapabilityStoreOptions | undefined;
  /** The calibration store's: `maxEndpoints`, `maxModels`. */
  calibration?: CalibrationOptions | undefined;
  /** The event bus's settings (buffer and retention). */
  events?: Partial<EventsSettings> | undefined;
  /** The hooks settings: `maxTokens` (the shared budget), `preface`, `timeoutMs`. */
  hooks?: Partial<HookSettings> | undefined;
  /**
   * Stores already built, used as they are instead of making new ones (the bounds above are then
   * not applied to them): e.g. `@loopwright/redis`'s `createRedisStores()`, so runtimes in many
   * processes share one bus and one set of latches. Any left out is made here as usual. The runtime
   * does not own them beyond `reset`/`close` calling their own `reset`/`close`.
   */
  stores?: RuntimeStores | undefined;
}

/** Stores a runtime may be given instead of making its own (see `RuntimeOptions.stores`). */
export interface RuntimeStores {
  clients?: ClientPool | undefined;
  capabilities?: CapabilityStore | undefined;
  calibration?: Calibration | undefined;
  bus?: EventBus | undefined;
  hooks?: Hooks | undefined;
}

function runtimeOf(
  clients: ClientPool,
  capabilities: CapabilityStore,
  calibration: Calibration,
  bus: EventBus,
  hooks: Hooks,
): Runtime {
  return {
    clients,
    capabilities,
    calibration,
    bus,
    hooks,
    runAgentLoop: (options) => runOwned({ clients, capabilities, calibration, hooks }, bus, options),
    forget(endpoint) {
      clients.forget(endpoint);
      const { baseUrl, apiKey, headers } = endpoint;
      // The loop calibrates against the endpoint's capability record. In memory that is a weak key,
      // gone with the record; a shared store names the record by its endpoint, so its readings
      // outlive it and are forgotten by it here. Only looked at: making a record for a tenant the
      // store does not hold would push the least recently used tenant out of a store at its bound.
      const record = capabilities.peekCapabilities?.(baseUrl, apiKey, headers);
      if (record !== undefined) calibration.forget(record);
      capabilities.forget(baseUrl, apiKey, headers);
      // Readings a host took under the base URL go too.
      calibration.forget(baseUrl);
    },
    reset() {
      clients.reset();
      capabilities.reset();
      calibration.reset();
      bus.reset();
      hooks.reset();
    },
    close() {
      clients.reset();
      capabilities.reset();
      calibration.reset();
      bus.close();
      hooks.reset();
    },
  };
}

/**
 * The run ids each bus has a run in progress under, in this process: kept by the bus, so runtimes
 * that share one (`stores.bus`, the default bus) see each other's runs.
 */
const inProgress = new WeakMap<EventBus, Set<string>>();

/** `options` without `runId`, in an object with no prototype, each field copied as it is defined. */
function withoutRunId(options: RunOptions): AgentLoopOptions {
  const rest = Object.create(null) as AgentLoopOptions;
  for (const [name, described] of Object.entries(ownDescriptors(options))) {
    if (name !== "runId") Object.defineProperty(rest, name, described);
  }
  return rest;
}

/**
 * The run's signal for the bus's claim, when it is one; a bad one — one that cannot be read too (a
 * revoked Proxy, a getter that throws) — is left for the loop to refuse, naming it.
 */
function signalLike(signal: unknown): AbortSignal | undefined {
  try {
    return typeof signal === "object" &&
      signal !== null &&
      typeof (signal as AbortSignal).addEventListener === "function" &&
      typeof (signal as AbortSignal).removeEventListener === "function" &&
      typeof (signal as AbortSignal).aborted === "boolean"
      ? (signal as AbortSignal)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the run's signal stopped it: false too for one that cannot be read (a revoked Proxy, an
 * `aborted` getter that throws) — the loop's refusal naming it is what is thrown, not that reading's
 * `TypeError`, raised while the run's `done` was being written.
 */
function stoppedBy(signal: unknown): boolean {
  try {
    return (signal as AbortSignal | null | undefined)?.aborted === true;
  } catch {
    return false;
  }
}

/**
 * Runs the loop; with a `runId`, emits its events into `bus`, closing with `error` (on a throw) and
 * `done`. A `runId` whose last run ended is dropped from the bus first and starts again from seq 1;
 * one a run on the same bus is still running under is refused before anything is sent, since two
 * runs emitting under one id would be one stream with two `done`s, and its watcher would stop at
 * the first. A bus with `claimRun` (one shared by many processes) is asked for the id before
 * anything is sent, and its refusal — another host's run under the id in progress — is thrown the
 * same way, carrying the bus's error.
 */
async function runOwned(services: LoopServices, bus: EventBus, given: RunOptions): Promise<AgentLoopResult> {
  // Read as the host wrote them: never a field only a polluted Object.prototype holds (`runId`, `signal`).
  const options = readOptions(given);
  if (!options || !Object.hasOwn(options, "runId")) return runLoop(services, options);
  const runId = options.runId;
  // The options as read, less runId, their getters kept as getters (a rest spread would call each
  // once, here, and the loop would read that first value for the whole run).
  const rest = withoutRunId(options);
  if (typeof runId !== "string" || runId === "") {
    const refused = new EventsError(
      "invalid-run-id",
      "runAgentLoop: runId must be a non-empty string (the id watchers read the run under), or absent.",
    );
    // Like every other option refused at the start: the run (as given) rides on the error.
    throw refusedAtStart(messagesOf(rest), refused);
  }
  let running = inProgress.get(bus);
  if (running?.has(runId)) {
    throw refusedAtStart(
      messagesOf(rest),
      new EventsError(
        "invalid-run-id",
        `runAgentLoop: a run under runId ${JSON.stringify(runId)} is still in progress on this bus; its ` +
          "watchers would read the two runs as one. Wait for it to end (its done event, or the promise " +
          "runAgentLoop returned), stop it with its signal, or give this run an id of its own.",
      ),
    );
  }
  if (!running) {
    running = new Set();
    inProgress.set(bus, running);
  }
  running.add(runId);
  try {
    // An id whose last run finished is taken afresh: its old buffer is dropped, so a watcher that
    // attaches now reads this run, not the last one's events up to its done.
    // A bus shared by many processes drops only what is this process's: another host's live claim on
    // the id (taken after this run's done) is left for `claimRun` to refuse.
    if (bus.history(runId).at(-1)?.kind === "done") {
      if (typeof bus.releaseRun === "function") bus.releaseRun(runId);
      else bus.endRun(runId);
    }
    // A bus shared by many processes (Redis) claims the id for this run across all of them: a run
    // under it in progress on another host is refused here, before anything is sent or emitted.
    if (typeof bus.claimRun === "function") {
      try {
        await bus.claimRun(runId, signalLike(rest.signal));
      } catch (error) {
        throw refusedAtStart(messagesOf(rest), error);
      }
    }
    const forward = rest.onEvent;
    const onEvent: AgentLoopOptions["onEvent"] = (event) => {
      bus.emit(runId, event);
      forward?.(event);
    };
    try {
      Object.defineProperty(
        rest,
        "onEvent",
        protoless({
          value: onEvent,
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
      const result = await runLoop(services, rest);
      bus.emit(runId, { kind: "done" });
      return result;
    } catch (error) {
      // What the side tasks cost in all, where anything: a fold's summary for a request that then
      // failed came after the last usage event, and a watcher would otherwise never see it.
      const side = failedRun(error)?.sideUsage;
      const spent = side !== undefined && (side.prompt > 0 || side.completion > 0 || side.total > 0);
      const failed: LoopErrorEvent = {
        kind: "error",
        message: errorMessage(error),
        ...(spent ? { sideUsage: side } : {}),
      };
      bus.emit(runId, failed);
      // A run its host or user stopped (its signal) ends `stopped`, as events documents, so a
      // watcher's runMetrics reads "stopped" where it read "failed"; the error still says how.
      bus.emit(runId, stoppedBy(rest.signal) ? { kind: "done", stopped: true } : { kind: "done" });
      throw error;
    }
  } finally {
    // Once its done is out, the id is free for the next run.
    running.delete(runId);
  }
}

/**
 * A runtime with caches of its own, sharing nothing with the default one or any other, each
 * bounded as `options` says (every package's documented default where absent) — or with the
 * stores `options.stores` hands it (a Redis-backed set shared by many processes).
 */
export function createRuntime(options: RuntimeOptions = {}): Runtime {
  // Their own fields only: a polluted `Object.prototype.clients` is no store, and no pool's options.
  const own = ownView(options);
  const stores = ownView(own.stores ?? {});
  return runtimeOf(
    stores.clients ?? createClientPool(own.clients),
    stores.capabilities ?? createCapabilityStore(own.capabilities),
    stores.calibration ?? createCalibration(own.calibration),
    stores.bus ?? createBus(own.events),
    stores.hooks ?? createHooks(own.hooks),
  );
}

/** The runtime the top-level functions use: each package's default instance. */
export const defaultRuntime: Runtime = runtimeOf(
  defaultClientPool,
  defaultCapabilityStore,
  defaultCalibration,
  defaultBus,
  defaultHooks,
);

/**
 * Runs an agent with the default runtime's caches: one turn per step (`runTurn`: retries, refusals
 * answered, the stream read back), the model's tool calls dispatched and answered in the transcript
 * between steps, until a turn asks for no tools. Every turn ends in a `usage` event, one its host
 * stopped too (`turn.stopped`) and one that failed (`turn.failed`).
 *
 * Throws `ToolIterationLimit` when the model still asks after `maxToolIterations` tool steps,
 * `AgentLoopOverflow` (a `ContextOverflow`) for a request too big for the window, and
 * `AgentLoopError` (the cause on `cause`) for anything else — a `LoopOptionError` cause, before
 * anything is sent, for an option the loop does not know or does not do yet, or two tools whose
 * names become one on the wire. Given a `runId`, the run's events go into the default bus, closed
 * by `error` (on a throw) and `done`. Each carries the run, whose transcript always has every tool call
 * answered, so it can be stored or sent again as it is.
 */
export function runAgentLoop<Context = unknown>(options: RunOptions<Context>): Promise<AgentLoopResult> {
  return defaultRuntime.runAgentLoop(options);
}

/**
 * Drops every cache and latch of the default runtime in one call — pooled clients, window-route
 * latches, capability latches, calibration readings, run buffers, event settings and the hooks'
 * budget and preface (`resetHooks`) — so a teardown
 * cannot forget one.
 */
export function resetAll(): void {
  defaultRuntime.reset();
}
