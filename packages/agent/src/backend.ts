import { type AgentLoopOptions, type AgentLoopResult, type Runtime, runAgentLoop } from "@loopwright/loop";

/**
 * What runs one agent loop for an `Agent`: the seam for other wire protocols (an Anthropic or
 * Responses backend implements the same contract as `runAgentLoop` — every tool call answered,
 * failures thrown as the loop's errors carrying the run).
 */
export interface AgentBackend {
  run(options: AgentLoopOptions): Promise<AgentLoopResult>;
}

/**
 * The OpenAI-compatible backend: `@loopwright/loop`'s `runAgentLoop`, with the given runtime's
 * caches (the default runtime's when absent).
 */
export function loopBackend(runtime?: Pick<Runtime, "runAgentLoop">): AgentBackend {
  return { run: (options) => (runtime ? runtime.runAgentLoop(options) : runAgentLoop(options)) };
}
