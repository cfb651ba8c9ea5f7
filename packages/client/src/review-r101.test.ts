// Review r101: the window lookups against listings and native routes that answer anything at all —
// wrong types, a window of NaN, -1, 0.5, 1e308 or "8192", deep nesting, text that is not JSON —
// over real loopback HTTP. What a host notices is the answer: contextLimitFor never rejects for what
// a server says, and answers 0 or a whole number of tokens the server actually sent; listModels
// rejects only with a ModelListingError.

import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { type ScriptedHttp, scriptedHttp } from "../test/http.js";
import { ModelListingError } from "./errors.js";
import { createClientPool } from "./pool.js";

/** What each route answers in the case being run: a status and the body's exact text. */
const answers = new Map<string, [number, string]>();
let server: ScriptedHttp;

beforeAll(async () => {
  server = await scriptedHttp((path) => answers.get(path) ?? [404, "{}"]);
});
afterAll(async () => {
  await server.close();
});

/** A window as a server might misreport it: right, wrong in range, or of the wrong type. */
const aWindow: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: 1, max: 1_048_576 }),
  fc.constantFrom(
    0,
    -1,
    0.5,
    8191.9,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER,
    2 ** 53,
    "8192",
    "NaN",
    "",
    true,
  ),
  fc.double(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.constantFrom("n_ctx", "value", "context_length"), fc.integer(), { maxKeys: 2 }),
);

const WINDOW_PLACES = [
  ["context_length"],
  ["max_model_len"],
  ["max_context_length"],
  ["loaded_context_length"],
  ["meta", "n_ctx"],
  ["meta", "n_ctx_train"],
  ["top_provider", "context_length"],
  ["capabilities", "limits", "max_prompt_tokens"],
  ["default_generation_settings", "n_ctx"],
] as const;

/** A listing entry (or a `/props` body) with windows put in the places servers put them. */
const anEntry: fc.Arbitrary<Record<string, unknown>> = fc
  .record(
    {
      id: fc.oneof(fc.constant("m"), fc.constant("other"), fc.integer(), fc.constant(null)),
      state: fc.constantFrom("loaded", "not-loaded"),
      windows: fc.array(fc.tuple(fc.constantFrom(...WINDOW_PLACES), aWindow), { maxLength: 4 }),
    },
    { requiredKeys: ["windows"] },
  )
  .map(({ windows, ...rest }) => {
    const entry: Record<string, unknown> = { ...rest };
    for (const [place, value] of windows) {
      let at = entry;
      for (const key of place.slice(0, -1)) {
        const next = at[key];
        at[key] = typeof next === "object" && next !== null ? next : {};
        at = at[key] as Record<string, unknown>;
      }
      at[place[place.length - 1] as string] = value;
    }
    return entry;
  });

/** A body's text: a listing of those entries in one of its shapes, any JSON, or no JSON at all. */
const aBody: fc.Arbitrary<string> = fc.oneof(
  fc.array(anEntry, { maxLength: 4 }).map((data) => JSON.stringify({ data })),
  fc.array(anEntry, { maxLength: 4 }).map((data) => JSON.stringify(data)),
  fc.array(anEntry, { maxLength: 4 }).map((models) => JSON.stringify({ models })),
  anEntry.map((entry) => JSON.stringify(entry)),
  fc.jsonValue().map((value) => JSON.stringify(value)),
  fc.constantFrom("", "{", "<html>502 Bad Gateway</html>", "null", `${"[".repeat(5000)}${"]".repeat(5000)}`),
  fc
    .nat({ max: 3000 })
    .map((depth) => `{"data":[{"id":"m","context_length":${"[".repeat(depth)}1${"]".repeat(depth)}}]}`),
);

const aRoute: fc.Arbitrary<[number, string]> = fc.tuple(fc.constantFrom(200, 200, 200, 404, 500), aBody);

/** Every number anywhere in the bodies' JSON, floored: what an answer may be taken from. */
function numbersIn(texts: readonly string[]): Set<number> {
  const found = new Set<number>();
  const pending: unknown[] = [];
  for (const text of texts) {
    try {
      pending.push(JSON.parse(text));
    } catch {
      // Not JSON: holds no window.
    }
  }
  for (let value = pending.pop(); pending.length > 0 || value !== undefined; value = pending.pop()) {
    if (typeof value === "number") found.add(Math.floor(value));
    else if (typeof value === "object" && value !== null) pending.push(...Object.values(value));
  }
  return found;
}

describe("window lookups against whatever a server answers", () => {
  it(
    "property: contextLimitFor answers 0 or a whole number the server sent, never rejects; listModels rejects only with ModelListingError",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          aRoute,
          aRoute,
          aRoute,
          fc.constantFrom("m", undefined),
          async (models, props, lmstudio, model) => {
            answers.set("/v1/models", models);
            answers.set("/props", props);
            answers.set("/api/v0/models", lmstudio);
            const settings = {
              baseUrl: server.baseUrl,
              apiKey: "sk-r101-tenant",
              ...(model ? { model } : {}),
            };
            const pool = createClientPool();
            const limit = await pool.contextLimitFor(settings);
            expect(Number.isSafeInteger(limit) && limit >= 0).toBe(true);
            if (limit > 0) expect(numbersIn([models[1], props[1], lmstudio[1]]).has(limit)).toBe(true);
            const served = await createClientPool().servedWindow(settings);
            if (served !== undefined) {
              expect(Number.isSafeInteger(served) && served >= 1).toBe(true);
              expect(numbersIn([props[1], lmstudio[1]]).has(served)).toBe(true);
            }
            const listed = await createClientPool()
              .listModels(settings)
              .catch((error: unknown) => error);
            if (!Array.isArray(listed)) expect(ModelListingError.isInstance(listed)).toBe(true);
          },
        ),
        propertyRuns(60),
      );
    },
    propertyTimeout(120_000),
  );
});
