// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): a host that gathers and notifies its hooks itself (the
// README's "host storing context beside its question") hands over what it has, and a reply the SDK
// answers as `string | null` or a reason it may not know is `undefined` there. Every field of the
// hook inputs is optional and the hooks get them as given (a `.mcp.json` hook server as JSON, where
// an `undefined` field is absent), so the types take `undefined` too. TS2379 before, each call.
import type { ChatCompletion } from "openai/resources/chat/completions";
import { gather, type HookRunner, notify } from "./index.js";

declare const run: HookRunner<{ session: { id: string } }>;
declare const completion: ChatCompletion;
const context = { session: { id: "s-1" } };

export async function turn(prompt?: string, turnAt?: number): Promise<void> {
  await gather(run, "beforeTurn", { prompt, turn: turnAt }, context);
  const reply = completion.choices[0]?.message.content ?? undefined;
  await notify(run, "afterTurn", { prompt, reply, messages: undefined }, context);
}

export async function end(reason?: string): Promise<void> {
  await notify(run, "sessionEnd", { reason }, context);
}
