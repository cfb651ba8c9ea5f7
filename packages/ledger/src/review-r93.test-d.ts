// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): a host that stored a plan (a row with a nullable
// column) hands it back to `runCompaction` with `previous` as it reads, `string | undefined`.
// `runCompaction` reads `undefined` there as "no earlier summary", so the type takes it too.
// TS2375 before: `CompactionPlan.previous?: string` refused it.
import { type CompactionPlan, type MessageLike, runCompaction } from "./index.js";

declare const messages: MessageLike[];
declare const row: Omit<CompactionPlan, "previous"> & { previous: string | null };

export function fromRow(): CompactionPlan {
  return { ...row, previous: row.previous ?? undefined };
}

export const folded = runCompaction(messages, fromRow(), async () => "summary");
