// Type test (compiled by `pnpm type-check`, never run): the options the README says read `null` as
// absent — `ledger`, `system`, `parallel`, `recoverToolCalls`, `dedupeToolCalls`, `catalog`, and the
// config's `parallel`, `recoverToolCalls`, `dedupeToolCalls`, `compact`, `contextLength` — take
// `null` in their types, so options read back from JSON or a database row compile.
import { type AgentLoopOptions, type LoopConfig, runAgentLoop } from "./index.js";

export async function fromRow(): Promise<void> {
  const config: LoopConfig = {
    baseUrl: "http://127.0.0.1:8080/v1",
    model: "m",
    parallel: null,
    recoverToolCalls: null,
    dedupeToolCalls: null,
    compact: null,
    contextLength: null,
  };
  const options: AgentLoopOptions = {
    config,
    messages: [{ role: "user", content: "hi" }],
    dispatch: () => "",
    ledger: null,
    system: null,
    parallel: null,
    recoverToolCalls: null,
    dedupeToolCalls: null,
    catalog: null,
  };
  await runAgentLoop(options);
}
