// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): `resolveAgentSpec` skips a spec field that is
// `undefined`, so a host building a layer from its own optional values compiles. TS2322 before.
import { type AgentSpec, resolveAgentSpec } from "./index.js";

export function layer(model?: string, temperature?: number) {
  const spec: AgentSpec = {
    spec: "loopwright.agent/1",
    description: undefined,
    model: { name: model, temperature, endpoint: { baseUrl: process.env.OPENAI_BASE_URL } },
  };
  return resolveAgentSpec([spec]);
}
