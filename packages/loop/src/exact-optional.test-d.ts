// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): the loop reads an option or config field that is
// `undefined` as absent, so a host under that setting can forward its own optional parameters and
// environment variables straight in. Each of these was a TS2375/TS2379 error before.
import { type AgentLoopOptions, type LoopConfig, runAgentLoop } from "./index.js";

export async function ask(prompt: string, signal?: AbortSignal, system?: string) {
  return runAgentLoop({
    config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" },
    system,
    signal,
    messages: [{ role: "user", content: prompt }],
    dispatch: () => "",
  });
}

export function configFromEnvironment(maxRetries?: number, contextLength?: number): LoopConfig {
  return {
    baseUrl: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8080/v1",
    model: process.env.MODEL ?? "m",
    apiKey: process.env.OPENAI_API_KEY,
    temperature: undefined,
    maxRetries,
    contextLength,
    maxToolIterations: undefined,
  };
}

export function options(config: LoopConfig, onEvent?: AgentLoopOptions["onEvent"]): AgentLoopOptions {
  return {
    config,
    messages: [{ role: "user", content: "hi" }],
    dispatch: () => "",
    onEvent,
    tools: undefined,
    ledger: undefined,
  };
}
