// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): `Agent` and `createSession` read an option that is
// `undefined` as absent, so a host under that setting can forward its own optional values. Each
// object below was a TS2375/TS2379 error before.
import { type AfterToolCallResult, Agent, type BeforeToolCallResult, createSession } from "./index.js";

export function agent(system?: string, maxRetries?: number): Agent {
  return new Agent({
    config: {
      baseUrl: "http://127.0.0.1:8080/v1",
      model: "m",
      apiKey: process.env.OPENAI_API_KEY,
      maxRetries,
    },
    system,
    tools: undefined,
  });
}

export async function session(sessionDir?: string, system?: string): Promise<void> {
  await createSession({
    config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m", apiKey: process.env.OPENAI_API_KEY },
    system,
    sessionDir,
    maxTurns: undefined,
  });
}

// A hook answer's `args` and `result` take any value a hook means, under either setting
// (hook-answers-exact.test-d.ts has what only `exactOptionalPropertyTypes` refuses).
export const answers: [BeforeToolCallResult, BeforeToolCallResult, AfterToolCallResult, AfterToolCallResult] =
  [
    { block: false, args: { path: "/tmp/x" } },
    { block: true, reason: "no", terminate: undefined },
    { result: null, isError: false },
    { result: { rows: 3 }, terminate: undefined },
  ];
