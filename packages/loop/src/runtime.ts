import { type ClientPool, createClientPool, defaultClientPool } from "@loopwright/client";
import { createBus, defaultBus, type EventBus } from "@loopwright/events";
import { type Calibration, createCalibration, defaultCalibration } from "@loopwright/ledger";
import { type CapabilityStore, createCapabilityStore, defaultCapabilityStore } from "@loopwright/negotiate";
import { type AgentLoopOptions, type AgentLoopResult, runLoop } from "./agent-loop.js";

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
  /** `runAgentLoop` with this runtime's caches. */
  runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult>;
  /** Drops every cache and latch of this runtime and puts the bus's settings back to the defaults. */
  reset(): void;
}

function runtimeOf(
  clients: ClientPool,
  capabilities: CapabilityStore,
  calibration: Calibration,
  bus: EventBus,
): Runtime {
  return {
    clients,
    capabilities,
    calibration,
    bus,
    runAgentLoop: (options) => runLoop({ clients, capabilities, calibration }, options),
    reset() {
      clients.reset();
      capabilities.reset();
      calibration.reset();
      bus.reset();
    },
  };
}

/** A runtime with caches of its own, sharing nothing with the default one or any other. */
export function createRuntime(): Runtime {
  return runtimeOf(createClientPool(), createCapabilityStore(), createCalibration(), createBus());
}

/** The runtime the top-level functions use: each package's default instance. */
export const defaultRuntime: Runtime = runtimeOf(
  defaultClientPool,
  defaultCapabilityStore,
  defaultCalibration,
  defaultBus,
);

/**
 * Runs an agent with the default runtime's caches: one turn per step (`runTurn`: retries, refusals
 * answered, the stream read back), the model's tool calls dispatched and answered in the transcript
 * between steps, until a turn asks for no tools. Every turn ends in a `usage` event.
 *
 * Throws `ToolIterationLimit` when the model still asks after `maxToolIterations` tool steps,
 * `AgentLoopOverflow` (a `ContextOverflow`) for a request too big for the window, and
 * `AgentLoopError` (the cause on `cause`) for anything else — a `LoopOptionError` cause, before
 * anything is sent, for an option the loop does not know or does not do yet, or two tools whose
 * names become one on the wire. Each carries the run, whose transcript always has every tool call
 * answered, so it can be stored or sent again as it is.
 */
export function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
  return defaultRuntime.runAgentLoop(options);
}

/**
 * Drops every cache and latch of the default runtime in one call — pooled clients, window-route
 * latches, capability latches, calibration readings, run buffers and event settings — so a teardown
 * cannot forget one.
 */
export function resetAll(): void {
  defaultRuntime.reset();
}
