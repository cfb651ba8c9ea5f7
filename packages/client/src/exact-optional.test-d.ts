// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): a host under that setting can hand the client a value
// that may be `undefined` — an environment variable, a forwarded optional parameter — because the
// client reads `undefined` as absent. Each assignment below was a TS2375/TS2379 error before.
import { createClientPool, type Endpoint, getClient, type WindowSettings } from "./index.js";

export function fromEnvironment(headers?: Record<string, string>, model?: string): WindowSettings {
  const endpoint: Endpoint = {
    baseUrl: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8080/v1",
    apiKey: process.env.OPENAI_API_KEY,
    headers,
  };
  getClient(endpoint);
  return { ...endpoint, model };
}

export function pool(maxClients?: number): void {
  createClientPool({ maxClients, onLog: undefined });
}
