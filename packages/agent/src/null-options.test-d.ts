// Type test (compiled by `pnpm type-check`, never run): every option of `new Agent` and of
// `createSession` takes `null`, as the README says ("an option given as null is absent"), so an
// options object read back from JSON or a database row, whose unset columns are null, compiles.
import { Agent, type AgentOptions, createSession, type SessionOptions } from "./index.js";

/** The options whose type does not take `null` (none, or the check below names them). */
type NotNullable<T> = { [K in keyof T]-?: null extends T[K] ? never : K }[keyof T];

export const everyAgentOptionTakesNull: [NotNullable<AgentOptions>] extends [never]
  ? true
  : NotNullable<AgentOptions> = true;
export const everySessionOptionTakesNull: [NotNullable<SessionOptions>] extends [never]
  ? true
  : NotNullable<SessionOptions> = true;

const config = { baseUrl: "http://127.0.0.1:8080/v1", model: "m" };

export function fromRows(): void {
  new Agent({
    config,
    spec: null,
    system: null,
    tools: null,
    messages: null,
    loaded: null,
    catalog: null,
    toolChoice: null,
    autoCompact: null,
    dispatch: null,
    beforeToolCall: null,
    transformContext: null,
  });
  void createSession({
    config,
    system: null,
    maxTurns: null,
    sessionDir: null,
    builtInTools: null,
    mcpServers: null,
    mcpOptions: null,
    catalog: null,
    beforeToolCall: null,
  });
}
