// Type test (compiled by `pnpm type-check`, never run): `runAgentLoop`'s `hooks.context` types the
// `run` beside it. The option was `LoopHooks` (context `unknown`), so `context.session.id` below was
// TS18046 "'context' is of type 'unknown'"; now `AgentLoopOptions`/`RunOptions` are generic in it.
import { createRuntime, runAgentLoop } from "./index.js";

const base = {
  config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" },
  messages: [{ role: "user" as const, content: "hi" }],
  dispatch: () => "",
};

export async function inferred(): Promise<void> {
  await runAgentLoop({
    ...base,
    hooks: {
      context: { session: { id: "s-1" } },
      run: (event, _input, context) =>
        event === "beforeTurn" ? [{ id: "memory", context: `session ${context.session.id}` }] : [],
    },
  });
  await createRuntime().runAgentLoop({
    ...base,
    hooks: {
      context: { tenant: 7 },
      run: (_event, _input, context) => [{ id: "tenant", context: context.tenant.toFixed(0) }],
    },
  });
}

export async function wrongField(): Promise<void> {
  await runAgentLoop({
    ...base,
    hooks: {
      context: { session: { id: "s-1" } },
      // @ts-expect-error the context has no `user`.
      run: (_event, _input, context) => [{ id: "x", context: context.user }],
    },
  });
}

export async function withoutContext(): Promise<void> {
  // No context given: `run` is handed `unknown`, as before.
  await runAgentLoop({ ...base, hooks: { run: () => [] } });
}
