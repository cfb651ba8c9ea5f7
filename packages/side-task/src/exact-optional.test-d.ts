// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): the side tasks read an option or endpoint field that is
// `undefined` as absent, so a host can forward its own optional values. TS2379 errors before.
import { askJson } from "./index.js";

export function classify(text: string, signal?: AbortSignal, timeoutMs?: number): Promise<unknown> {
  return askJson(
    { baseUrl: "http://127.0.0.1:8080/v1", apiKey: process.env.OPENAI_API_KEY },
    "m",
    "Classify the text.",
    text,
    { type: "object", properties: { label: { type: "string" } } },
    { signal, timeoutMs, name: undefined },
  );
}
