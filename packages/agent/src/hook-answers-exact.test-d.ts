// Type test (compiled only by tsconfig.exact.json, which sets `exactOptionalPropertyTypes`; never
// run): a hook answer's own `args` or `result` key holding `undefined` is refused at run time (a
// rewrite or redaction that produced nothing), and under that setting the types refuse it too.
// Without the setting TypeScript reads every optional property as admitting `undefined`, so these
// lines compile there: tsconfig.json leaves this file out. Each `@ts-expect-error` compiled before.
import type { AfterToolCallResult, BeforeToolCallResult } from "./index.js";

declare const maybeArgs: Record<string, unknown> | undefined;
declare const maybeText: string | undefined;

// @ts-expect-error an own args key that may hold undefined: leave the key out instead.
export const rewriteMaybe: BeforeToolCallResult = { block: false, args: maybeArgs };
// @ts-expect-error the same without block.
export const argsMaybe: BeforeToolCallResult = { args: maybeArgs };
// @ts-expect-error an own result key holding undefined withholds the tool's result.
export const nothing: AfterToolCallResult = { result: undefined };
// @ts-expect-error a redaction that may have produced nothing.
export const redactedMaybe: AfterToolCallResult = { result: maybeText };

// What is read is still taken: a key left out where the value is missing.
export const rewrite: BeforeToolCallResult = { block: false, ...(maybeArgs && { args: maybeArgs }) };
export const redacted: AfterToolCallResult = maybeText === undefined ? undefined : { result: maybeText };
