// Type tests: the readers a host passes as `parse` type-check, as they did before the reader was
// handed options. Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import type { FunctionToolLike } from "@loopwright/schema-compat";
import { parseJson, parseToolArguments } from "@loopwright/tool-calls";
import { expectTypeOf } from "vitest";
import {
  createToolLoading,
  type ProxiedCallOptions,
  type ProxiedParseOptions,
  proxiedCall,
  type ToolLoadingOptions,
} from "./index.js";

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

// parseToolArguments passed as it is answers { value, json, repaired, inexact }, which would reach
// the tool as its arguments: refused at compile time, with the fix in the error.
export function calls(tools: FunctionToolLike[]) {
  // @ts-expect-error parse answers the arguments, not a reading of them
  proxiedCall({ name: "f", arguments: "{}" }, [], { parse: parseToolArguments, tools });
  // @ts-expect-error parse answers the arguments, not a reading of them
  createToolLoading({ mode: "proxy", tools, parse: parseToolArguments });
  proxiedCall({ name: "f", arguments: "{}" }, [], {
    parse: (text, o) => parseToolArguments(text, o).value,
    tools,
  });
  createToolLoading({ mode: "proxy", tools, parse: JSON.parse });
  createToolLoading({ mode: "proxy", tools, parse: parseJson });
  createToolLoading({ mode: "proxy", tools, parse: (text) => text.length });
  createToolLoading({ mode: "proxy", tools, parse: (text, o) => o?.takesOnlyString?.([text]) });
  proxiedCall({ name: "f" }, []);
}
