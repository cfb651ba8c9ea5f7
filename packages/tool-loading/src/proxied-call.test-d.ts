// Type tests: the readers a host passes as `parse` type-check, as they did before the reader was
// handed options. Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import { parseJson, parseToolArguments } from "@loopwright/tool-calls";
import { expectTypeOf } from "vitest";
import type { ProxiedCallOptions, ProxiedParseOptions, ToolLoadingOptions } from "./index.js";

type Reader = NonNullable<ProxiedCallOptions["parse"]>;
type LoadingReader = NonNullable<ToolLoadingOptions["parse"]>;

// JSON.parse (its second parameter a reviver), tool-calls' parseJson (its own options) and a
// one-argument reader: each accepted by both options, as each was before the options were added.
const yaml = (text: string): unknown => text.split(":");
export const asIs: ProxiedCallOptions[] = [{ parse: JSON.parse }, { parse: parseJson }, { parse: yaml }];
export const inLoading: Pick<ToolLoadingOptions, "parse">[] = [
  { parse: JSON.parse },
  { parse: parseJson },
  { parse: yaml },
  { parse: (text) => text.length },
];

// A two-argument reader is handed the inner tool's options, typed.
export const lenient: ProxiedCallOptions = { parse: (text, o) => parseToolArguments(text, o).value };
export const asked: ToolLoadingOptions["parse"] = (text, o) => o?.takesOnlyString?.([text]);
expectTypeOf<ProxiedParseOptions>().toExtend<NonNullable<Parameters<Reader>[1]>>();
expectTypeOf<Parameters<LoadingReader>[0]>().toEqualTypeOf<string>();
