// Type test (compiled by `pnpm type-check` through tsconfig.json and tsconfig.exact.json, which
// adds `exactOptionalPropertyTypes` to the base's `noUncheckedIndexedAccess`; never run): `askJson`
// given a Standard Schema answers its output type with no cast, and given a plain JSON Schema still
// answers the caller's `T`. Before the overloads every answer was `unknown` unless cast, and a
// zod schema was refused outright (it is no `Record<string, unknown>`).
import { expectTypeOf } from "vitest";
import { z } from "zod";
import { askJson, PRESELECT_SCHEMA, type StandardJsonSchema, type StandardOutput } from "./index.js";

const endpoint = { baseUrl: "http://127.0.0.1:8080/v1" };

const Picked = z.object({
  tools: z.array(z.string()),
  count: z.string().transform(Number),
  mode: z.enum(["fast", "slow"]).default("fast"),
  note: z.string().optional(),
  reason: z.string().nullable(),
});

export async function inferred(): Promise<void> {
  const picked = await askJson(endpoint, "m", "Pick tools.", "Which?", Picked, { name: "picked" });
  // The output: the transform's number, the default's non-optional enum.
  expectTypeOf(picked).toEqualTypeOf<z.output<typeof Picked> | undefined>();
  expectTypeOf(picked).toEqualTypeOf<
    | {
        tools: string[];
        count: number;
        mode: "fast" | "slow";
        note?: string | undefined;
        reason: string | null;
      }
    | undefined
  >();
  if (picked === undefined) return;
  // noUncheckedIndexedAccess: an element read by index may be absent, as with any string[].
  expectTypeOf(picked.tools[0]).toEqualTypeOf<string | undefined>();
  // @ts-expect-error tools is string[], not string: a wrong reading fails to compile
  const first: string = picked.tools;
  void first;
}

export async function plainStillCast(): Promise<void> {
  const cast = await askJson<{ tools: string[] }>(endpoint, "m", "", "hi", PRESELECT_SCHEMA);
  expectTypeOf(cast).toEqualTypeOf<{ tools: string[] } | undefined>();
  const bare = await askJson(endpoint, "m", "", "hi", { type: "object" });
  expectTypeOf(bare).toEqualTypeOf<unknown>();
  // A JSON Schema a library wrote out is a plain schema: T by cast, as before.
  const written = await askJson<{ ok: boolean }>(
    endpoint,
    "m",
    "",
    "hi",
    z.toJSONSchema(z.object({ ok: z.boolean() })),
  );
  expectTypeOf(written).toEqualTypeOf<{ ok: boolean } | undefined>();
}

export async function noCastOverASchema(): Promise<void> {
  // A Standard Schema answers its own type; a cast to another is refused rather than believed.
  // @ts-expect-error the type comes from the schema, not from a cast
  await askJson<{ tools: number[] }>(endpoint, "m", "", "hi", Picked);
}

/** A library other than zod, by shape alone: a callable type as ArkType's, with a converter. */
declare const callable: ((value: unknown) => unknown) & StandardJsonSchema<{ n: string }, { n: number }>;

export async function anyLibrary(): Promise<void> {
  expectTypeOf(await askJson(endpoint, "m", "", "hi", callable)).toEqualTypeOf<{ n: number } | undefined>();
  expectTypeOf<StandardOutput<typeof callable>>().toEqualTypeOf<{ n: number }>();
}

/** A schema that declares no `types`: nothing to infer, so the answer is `unknown`, not `never`. */
declare const untyped: {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => unknown;
    readonly jsonSchema: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>;
    };
  };
};

export async function noTypes(): Promise<void> {
  expectTypeOf(await askJson(endpoint, "m", "", "hi", untyped)).toEqualTypeOf<unknown>();
}

export async function withOptions(signal?: AbortSignal, timeoutMs?: number): Promise<void> {
  // exactOptionalPropertyTypes: options forwarded as possibly undefined still compile.
  const answer = await askJson(endpoint, "m", "", "hi", Picked, {
    signal,
    timeoutMs,
    name: undefined,
    strict: null,
  });
  expectTypeOf(answer).toEqualTypeOf<z.output<typeof Picked> | undefined>();
}
