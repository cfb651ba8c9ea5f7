// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): a host records each request with the counts its
// endpoint reported, straight off the SDK's `usage`, which is optional. `prompt` and `cached` read
// `undefined` as "not reported" (the request is then not recorded), so the type takes it too.
// TS2379 before: `prompt?: number` refused `completion.usage?.prompt_tokens`.
import type { ChatCompletion, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import {
  type BeforeCompactInput,
  type CompactionPlan,
  type LedgerEntry,
  type RecordedLedgerRequest,
  recordRequest,
} from "./index.js";

declare const completion: ChatCompletion;
declare const messages: ChatCompletionMessageParam[];
declare let ledger: LedgerEntry[];

ledger = recordRequest(ledger, undefined, {
  messages,
  prompt: completion.usage?.prompt_tokens,
  cached: completion.usage?.prompt_tokens_details?.cached_tokens,
});

/** A host's own helper that forwards optional counts it was handed. */
export function recorded(prompt?: number, cached?: number): RecordedLedgerRequest {
  return { messages, prompt, cached };
}

// A host that compacts its own way tells its `beforeCompact` hooks what the plan says (hooks'
// `consult(run, input, …)`), the plan's `previous` forwarded as it reads: `string | undefined`.
// TS2375 before: `previous?: string` refused it.
export function beforeCompact(plan: CompactionPlan): BeforeCompactInput {
  return { messages, from: plan.from, through: plan.through, previous: plan.previous };
}
