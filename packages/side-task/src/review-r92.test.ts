/**
 * askJson with the real schema libraries, over HTTP against the testkit, and its time bound over
 * the check. r91 tested the Standard JSON Schema path with zod and a hand-built imitation of
 * ArkType and Valibot; here are ArkType 2.2 and Valibot 1.5 (`@valibot/to-json-schema`'s
 * `toStandardJsonSchema`) themselves. Before r92 a schema whose `validate` never settled held
 * askJson for ever even with `timeoutMs` set: the bound covered the request alone.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { toJsonSchema, toStandardJsonSchema } from "@valibot/to-json-schema";
import { type } from "arktype";
import * as v from "valibot";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { bodies, isolated, noticed, thrown } from "../test/wire.js";
import { askJson } from "./ask.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const sentSchema = (body: Record<string, unknown> | undefined) =>
  (body?.response_format as { json_schema?: { schema?: Record<string, unknown>; strict?: unknown } })
    ?.json_schema;

const Picked = type({
  tools: "string[]",
  // A morph: the model writes digits, the answer holds the number.
  count: "string.numeric.parse",
  mode: "'fast' | 'slow' = 'fast'",
  "note?": "string",
});

describe("askJson with a real ArkType type", () => {
  it("sends its input's JSON Schema in strict form and answers the morphed, defaulted output, typed", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"tools":["read_file"],"count":"3","mode":null,"note":null}' }],
    });
    const { notices, options } = noticed();
    const picked = await askJson(
      { baseUrl: server.baseUrl },
      "tiny.gguf",
      "Pick.",
      "Which?",
      Picked,
      options,
    );
    expectTypeOf(picked).toEqualTypeOf<typeof Picked.infer | undefined>();
    expect(picked).toEqual({ tools: ["read_file"], count: 3, mode: "fast" });
    expect(notices).toEqual([]);
    // ArkType writes draft 2020-12 with its `$schema`, a pattern for the numeric string and the
    // optional keys left out of `required`; what goes is that made strict-ready: no `$schema`,
    // the pattern told in words, every key required, the optional ones nullable, no others.
    const format = sentSchema(bodies(server)[0]);
    expect(format?.strict).toBe(true);
    expect(format?.schema).toEqual({
      type: "object",
      properties: {
        count: { type: "string", description: expect.stringMatching(/^Must match the regular expression /) },
        tools: { type: "array", items: { type: "string" } },
        mode: { type: ["string", "null"], enum: ["fast", "slow", null] },
        note: { type: ["string", "null"] },
      },
      required: ["count", "tools", "mode", "note"],
      additionalProperties: false,
    });
  });

  it("answers undefined for an invalid answer, the notice naming ArkType's path and words", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"tools":["a",7],"count":"3"}' }],
    });
    const { notices, options } = noticed();
    const picked = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "Which?", Picked, options);
    expect(picked).toBeUndefined();
    expect(notices).toEqual([
      `tiny.gguf's answer does not match the schema: at tools[1]: "tools[1] must be a string (was a number)"; no answer taken.`,
    ]);
  });

  it("sends what JSON Schema can say of an unrepresentable key (its converter never throws); the check refuses the rest", async () => {
    // ArkType's Standard converter leaves out what JSON Schema cannot say (a Date, a narrow)
    // rather than throwing, so this is asked, not refused before the request.
    const When = type({ when: "Date", n: type("number").narrow((n) => n > 1) });
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"when":"2026-01-02","n":0}' }],
    });
    const { notices, options } = noticed();
    const answer = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "When?", When, options);
    expect(answer).toBeUndefined();
    const schema = sentSchema(bodies(server)[0])?.schema as { properties: Record<string, unknown> };
    expect(schema.properties.n).toEqual({ type: "number" });
    // The Date as "any JSON value": no JSON answer can be one, so every answer is refused…
    expect(schema.properties.when).toMatchObject({ description: expect.stringMatching(/^Any JSON value/) });
    expect(notices).toEqual([
      `tiny.gguf's answer does not match the schema: at n: "n must be valid according to an anonymous predicate (was 0)"; no answer taken.`,
    ]);
    // …whereas a date parsed from a string (a morph) is asked as a string and answered as a Date.
    const Parsed = type({ when: "string.date.iso.parse" });
    server.close();
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"when":"2026-01-02T03:04:05Z"}' }],
    });
    const parsed = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "When?", Parsed, isolated());
    expectTypeOf(parsed).toEqualTypeOf<{ when: Date } | undefined>();
    expect(parsed?.when).toEqual(new Date("2026-01-02T03:04:05Z"));
  });
});

const ValibotPicked = v.object({
  tools: v.array(v.string()),
  count: v.pipe(v.string(), v.transform(Number)),
  mode: v.optional(v.picklist(["fast", "slow"]), "fast"),
  note: v.optional(v.string()),
});

describe("askJson with a real Valibot schema", () => {
  it("sends toStandardJsonSchema's input schema in strict form and answers the transformed output, typed", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"tools":["grep"],"count":"2","mode":null,"note":"ok"}' }],
    });
    const { notices, options } = noticed();
    const schema = toStandardJsonSchema(ValibotPicked);
    const picked = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "Which?", schema, options);
    expectTypeOf(picked).toEqualTypeOf<v.InferOutput<typeof ValibotPicked> | undefined>();
    expect(picked).toEqual({ tools: ["grep"], count: 2, mode: "fast", note: "ok" });
    expect(notices).toEqual([]);
    // The input side (the string before the transform); Valibot's `default` told in words.
    expect(sentSchema(bodies(server)[0])?.schema).toEqual({
      type: "object",
      properties: {
        tools: { type: "array", items: { type: "string" } },
        count: { type: "string" },
        note: { type: ["string", "null"] },
        mode: { type: ["string", "null"], enum: ["fast", "slow", null], description: 'Default: "fast".' },
      },
      required: ["tools", "count", "mode", "note"],
      additionalProperties: false,
    });
  });

  it("answers undefined for an invalid answer, the notice naming Valibot's path", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"tools":["a",7],"count":"1"}' }],
    });
    const { notices, options } = noticed();
    const schema = toStandardJsonSchema(ValibotPicked);
    await expect(askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", schema, options)).resolves.toBe(
      undefined,
    );
    expect(notices).toEqual([
      `tiny.gguf's answer does not match the schema: at tools[1]: "Invalid type: Expected string but received 7"; no answer taken.`,
    ]);
  });

  it("is invalid-input before any request where Valibot's converter refuses a schema", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: "{}" }] });
    const Dated = toStandardJsonSchema(v.object({ when: v.date() }));
    const error = await thrown(askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", Dated, isolated()));
    expect(error.code).toBe("invalid-input");
    expect(error.message).toContain('The "date" schema cannot be converted to JSON Schema.');
    // A check action is refused alike: Valibot cannot write it as JSON Schema.
    const Checked = toStandardJsonSchema(
      v.object({
        n: v.pipe(
          v.number(),
          v.check((n) => n > 1),
        ),
      }),
    );
    const again = await thrown(
      askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", Checked, isolated()),
    );
    expect(again.message).toContain('The "check" action cannot be converted to JSON Schema.');
    expect(bodies(server)).toHaveLength(0);
  });

  it("sends a check left out by the caller's own converter call, and still holds the answer to it", async () => {
    // The README's way past a refused v.check(): toJsonSchema told to leave the action out.
    const Over = v.object({
      n: v.pipe(
        v.number(),
        v.check((n) => n > 1, "n must be over 1"),
      ),
    });
    const wrapped = toStandardJsonSchema(Over)["~standard"];
    const lenient = {
      "~standard": {
        ...wrapped,
        jsonSchema: {
          ...wrapped.jsonSchema,
          input: ({ target }: { target: string }) =>
            toJsonSchema(Over, { target: target as "draft-07", typeMode: "input", ignoreActions: ["check"] }),
        },
      },
    };
    server = await startServer({ personality: "llamacpp", replies: [{ content: '{"n":0}' }] });
    const { notices, options } = noticed();
    const answer = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", lenient, options);
    expectTypeOf(answer).toEqualTypeOf<{ n: number } | undefined>();
    expect(answer).toBeUndefined();
    expect(sentSchema(bodies(server)[0])?.schema).toMatchObject({ properties: { n: { type: "number" } } });
    expect(notices).toEqual([
      `tiny.gguf's answer does not match the schema: at n: "n must be over 1"; no answer taken.`,
    ]);
  });

  it("is invalid-input for a bare Valibot schema, the message naming the converter to wrap it in", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: "{}" }] });
    const bare = v.object({ n: v.number() }) as unknown as Parameters<typeof askJson>[4];
    const error = await thrown(askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", bare, isolated()));
    expect(error.code).toBe("invalid-input");
    expect(error.message).toContain('vendor "valibot"');
    expect(error.message).toContain("toStandardJsonSchema from @valibot/to-json-schema");
    expect(bodies(server)).toHaveLength(0);
  });
});

describe("askJson's time bound covers the check", () => {
  /** A zod schema whose asynchronous refinement waits on something that never answers. */
  const Hung = z.object({ ok: z.boolean() }).refine(() => new Promise<boolean>(() => {}));

  it("rejects with timeout when the check never settles, as a request past the bound does", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: '{"ok":true}' }] });
    const run = askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", Hung, {
      ...isolated(),
      // Ample for the request on a loaded machine, so it is the check that runs out of time.
      timeoutMs: 1000,
    });
    const error = await thrown(run);
    expect(error.code).toBe("timeout");
    expect(error.message).toMatch(
      /^askJson: the answer of tiny\.gguf was not checked within 1000 ms, the call's time bound: the schema's ~standard\.validate \(vendor "zod"\) had not settled\. Raise timeoutMs/,
    );
    expect(bodies(server)).toHaveLength(1);
  });

  it("takes the endpoint's requestTimeoutSeconds as the bound where no timeoutMs is given", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: '{"ok":true}' }] });
    const endpoint = { baseUrl: server.baseUrl, requestTimeoutSeconds: 0.2 };
    const error = await thrown(askJson(endpoint, "tiny.gguf", "", "?", Hung, isolated()));
    expect(error.code).toBe("timeout");
    // (The request's own timeout, on a machine too loaded to answer in 200 ms, names the bound alike.)
    expect(error.message).toContain("within 200 ms");
  });

  it("is one deadline for the call: the check gets what the request left, not a bound of its own", async () => {
    // The reply and the check each take 600 ms: each fits in the 1000 ms bound, the two do not.
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"ok":true}', firstByteDelayMs: 600 }],
    });
    const Slow = z
      .object({ ok: z.boolean() })
      .refine(() => new Promise<boolean>((ok) => setTimeout(ok, 600, true)));
    const error = await thrown(
      askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", Slow, { ...isolated(), timeoutMs: 1000 }),
    );
    expect(error.code).toBe("timeout");
  });

  it("keeps timeoutMs: 0 as no bound, for the check too", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: '{"ok":true}' }] });
    // Settles a little later: with no bound it is waited for and answered.
    const Later = z
      .object({ ok: z.boolean() })
      .refine(() => new Promise<boolean>((ok) => setTimeout(ok, 50, true)));
    const answer = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "?", Later, {
      ...isolated(),
      timeoutMs: 0,
    });
    expect(answer).toEqual({ ok: true });
  });
});
