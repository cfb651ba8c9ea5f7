// Type test (compiled by `pnpm type-check` through tsconfig.json and tsconfig.exact.json; never
// run): `askJson` given a real ArkType type, or a Valibot schema through `toStandardJsonSchema`,
// answers that library's output type with no cast, morphs and transforms applied. Their declared
// `~standard` (ArkType's on a callable type, Valibot's converter taking `libraryOptions` as well)
// must fit `StandardJsonSchema` as published, or the answer falls back to the plain overload.
import { toStandardJsonSchema } from "@valibot/to-json-schema";
import { type } from "arktype";
import * as v from "valibot";
import { expectTypeOf } from "vitest";
import { askJson, type StandardJsonSchema, type StandardOutput } from "./index.js";

const endpoint = { baseUrl: "http://127.0.0.1:8080/v1" };

const Ark = type({ tools: "string[]", count: "string.numeric.parse", "note?": "string" });

export async function arktype(): Promise<void> {
  const picked = await askJson(endpoint, "m", "", "hi", Ark, { timeoutMs: 30_000 });
  expectTypeOf(picked).toEqualTypeOf<typeof Ark.infer | undefined>();
  if (picked === undefined) return;
  // The morph's number, not the string the model wrote.
  expectTypeOf(picked.count).toEqualTypeOf<number>();
  expectTypeOf(picked.note).toEqualTypeOf<string | undefined>();
  expectTypeOf(Ark).toExtend<StandardJsonSchema>();
  // @ts-expect-error count is a number once checked: a wrong reading fails to compile
  const count: string = picked.count;
  void count;
}

const Vali = v.object({
  tools: v.array(v.string()),
  count: v.pipe(v.string(), v.transform(Number)),
  mode: v.optional(v.picklist(["fast", "slow"]), "fast"),
});

export async function valibot(): Promise<void> {
  const schema = toStandardJsonSchema(Vali);
  const picked = await askJson(endpoint, "m", "", "hi", schema);
  expectTypeOf(picked).toEqualTypeOf<v.InferOutput<typeof Vali> | undefined>();
  expectTypeOf<StandardOutput<typeof schema>>().toEqualTypeOf<{
    tools: string[];
    count: number;
    mode: "fast" | "slow";
  }>();
  // A bare Valibot schema has no converter: it fits only the plain overload's `unknown`, so it
  // is no JSON Schema record either, and is refused at compile time too.
  // @ts-expect-error a Valibot schema without toStandardJsonSchema is no Standard JSON Schema
  await askJson(endpoint, "m", "", "hi", Vali);
}
