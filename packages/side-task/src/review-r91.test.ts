/**
 * askJson given a Standard Schema (zod ≥ 4.2, or any object holding `~standard.validate` and
 * `~standard.jsonSchema`), over HTTP against the testkit. Before r91 the answer was only ever the
 * caller's cast: a zod schema was refused as "not a JSON Schema object", and with the JSON Schema
 * written out by hand a reply of `{"tools":"x"}` came back as the caller's `{ tools: string[] }`.
 */
import { sanitizeSchema } from "@loopwright/schema-compat";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import * as zm from "zod/mini";
import {
  bodies,
  isolated,
  lmstudioRefusal,
  noticed,
  olderLlamacpp,
  systemContent,
  thrown,
} from "../test/wire.js";
import { askJson } from "./ask.js";
import { ISSUE_CHARS } from "./typed-schema.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const formatOf = (body: Record<string, unknown> | undefined) =>
  (body?.response_format ?? undefined) as { type?: string; json_schema?: { schema?: unknown } } | undefined;

const Picked = z.object({
  tools: z.array(z.string()),
  count: z.string().transform(Number),
  mode: z.enum(["fast", "slow"]).default("fast"),
  tags: z.array(z.string()).default([]),
  note: z.string().optional(),
});

describe("askJson with a Standard Schema", () => {
  it("sends the schema's JSON Schema and answers its output, defaults and transforms applied, typed", async () => {
    server = await startServer({
      personality: "llamacpp",
      // The nulls the normalising asked for in place of the optional and defaulted fields.
      replies: [{ content: '{"tools":["read_file"],"count":"3","mode":null,"tags":null,"note":null}' }],
    });
    const { notices, options } = noticed();
    const picked = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "Pick.", "Which?", Picked, {
      ...options,
      name: "picked",
    });
    expectTypeOf(picked).toEqualTypeOf<z.output<typeof Picked> | undefined>();
    expect(picked).toEqual({ tools: ["read_file"], count: 3, mode: "fast", tags: [] });
    expect(notices).toEqual([]);
    // What went is zod's JSON Schema of the input (the string before the transform), normalised
    // for strict mode as a plain schema is: the defaulted fields optional, so nullable.
    const expected = sanitizeSchema(z.toJSONSchema(Picked, { io: "input", target: "draft-2020-12" }));
    const format = formatOf(bodies(server)[0]);
    expect(format).toMatchObject({ type: "json_schema", json_schema: { name: "picked", strict: true } });
    expect(format?.json_schema?.schema).toEqual(expected);
    expect(format?.json_schema?.schema).toMatchObject({
      properties: { count: { type: "string" }, mode: { type: ["string", "null"] } },
      required: ["tools", "count", "mode", "tags", "note"],
      additionalProperties: false,
    });
    expect(systemContent(bodies(server)[0] ?? {})).toContain(JSON.stringify(expected));
  });

  it("answers undefined for an answer the schema finds invalid, with a notice naming the issue and not the answer", async () => {
    const secret = `private-${"x".repeat(5000)}`;
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: JSON.stringify({ tools: ["a", 7], count: secret }) }],
    });
    const { notices, options } = noticed();
    const picked = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "Which?", Picked, options);
    expect(picked).toBeUndefined();
    expect(notices).toHaveLength(1);
    expect(notices[0]).toBe(
      `tiny.gguf's answer does not match the schema: at tools[1]: "Invalid input: expected string, received number"; no answer taken.`,
    );
  });

  it("bounds a long issue message, the endpoint's key in it masked as in any reply", async () => {
    server = await startServer({
      personality: "openai",
      replies: [{ content: '{"code":"sk-test-1234567890abcdef"}' }],
    });
    // A library that puts the value it refused in its message, 5,000 characters of it.
    const Code = z.object({
      code: z
        .string()
        .refine(() => false, { error: (issue) => `bad ${String(issue.input)} ${"y".repeat(5000)}` }),
    });
    const { notices, options } = noticed();
    const endpoint = { baseUrl: server.baseUrl, apiKey: "sk-test-1234567890abcdef" };
    await expect(askJson(endpoint, "gpt-4o-mini", "", "code?", Code, options)).resolves.toBeUndefined();
    // (OpenAI's refusal of the no-thinking hint is told first.)
    const told = notices.filter((m) => m.includes("does not match the schema"));
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/^gpt-4o-mini's answer does not match the schema: at code: "bad /);
    expect(told[0]).toMatch(/y…"; no answer taken\.$/);
    expect(told[0]).not.toContain("sk-test-1234567890abcdef");
    expect(told[0]?.length).toBeLessThan(ISSUE_CHARS + 120);
  });

  it("validates an almost-JSON reply after parseJson's repair", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [
        { content: "Sure!\n```json\n{'tools': ['grep', 'ls',], count: '2', mode: 'slow', tags: None}\n```" },
      ],
    });
    const { notices, options } = noticed();
    await expect(
      askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "Which?", Picked, options),
    ).resolves.toEqual({ tools: ["grep", "ls"], count: 2, mode: "slow", tags: [] });
    expect(notices).toEqual([]);
  });

  it("still validates an answer asked for in words, after json_schema and json_object were refused", async () => {
    let words = 0;
    server = await startServer({
      replies: (request) => {
        const type = formatOf(request.body as Record<string, unknown>)?.type;
        if (type === "json_schema") return olderLlamacpp();
        if (type === "json_object") return lmstudioRefusal;
        words++;
        // First a valid answer in prose, then one the schema refuses.
        return words === 1
          ? { content: 'Here: {"tools": ["ls"], "count": "1"}' }
          : { content: 'Here: {"tools": "ls", "count": "1"}' };
      },
    });
    const { notices, options } = noticed();
    const endpoint = { baseUrl: server.baseUrl };
    await expect(askJson(endpoint, "picky", "", "Which?", Picked, options)).resolves.toEqual({
      tools: ["ls"],
      count: 1,
      mode: "fast",
      tags: [],
    });
    expect(bodies(server).map((b) => formatOf(b)?.type)).toEqual(["json_schema", "json_object", undefined]);
    // The schema zod gave still rides on the system prompt of the request in words.
    expect(systemContent(bodies(server)[2] ?? {})).toMatch(/"count":\{"type":"string"\}/);
    await expect(askJson(endpoint, "picky", "", "Which?", Picked, options)).resolves.toBeUndefined();
    expect(notices.at(-1)).toMatch(
      /at tools: "Invalid input: expected array, received string"; no answer taken\.$/,
    );
  });

  it("awaits a validate that answers a promise (an async refinement)", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"name":"ab"}' }, { content: '{"name":"a"}' }],
    });
    const Named = z.object({ name: z.string().refine(async (name) => name.length > 1, "too short") });
    const { notices, options } = noticed();
    const endpoint = { baseUrl: server.baseUrl };
    await expect(askJson(endpoint, "m", "", "?", Named, options)).resolves.toEqual({ name: "ab" });
    await expect(askJson(endpoint, "m", "", "?", Named, options)).resolves.toBeUndefined();
    expect(notices).toEqual([`m's answer does not match the schema: at name: "too short"; no answer taken.`]);
  });

  it("takes a callable schema (as an ArkType type is) and a converter that gives only draft-07", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: '{"n":"5"}' }] });
    const targets: string[] = [];
    const check = (value: unknown) => value;
    const schema = Object.assign(check, {
      "~standard": {
        version: 1 as const,
        vendor: "by-hand",
        validate: (value: unknown) => {
          const n = (value as { n?: unknown }).n;
          return typeof n === "string"
            ? { value: { n: Number(n) } }
            : { issues: [{ message: "n", path: ["n"] }] };
        },
        jsonSchema: {
          input: ({ target }: { target: string }) => {
            targets.push(target);
            if (target !== "draft-07") throw new Error(`${target} is not supported`);
            return { type: "object", properties: { n: { type: "string" } }, required: ["n"] };
          },
        },
        types: undefined as unknown as { input: { n: string }; output: { n: number } },
      },
    });
    const answer = await askJson({ baseUrl: server.baseUrl }, "m", "", "?", schema, isolated());
    expectTypeOf(answer).toEqualTypeOf<{ n: number } | undefined>();
    expect(answer).toEqual({ n: 5 });
    expect(targets).toEqual(["draft-2020-12", "draft-07"]);
    expect(formatOf(bodies(server)[0])?.json_schema?.schema).toMatchObject({
      properties: { n: { type: "string" } },
    });
  });

  it("refuses, before any request, a Standard Schema it cannot send or check", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: "{}" }] });
    const endpoint = { baseUrl: server.baseUrl };
    const ask = (schema: unknown) =>
      thrown(askJson(endpoint, "m", "", "?", schema as Readonly<Record<string, unknown>>, isolated()));

    // zod/mini gives the Standard Schema without its JSON Schema converter.
    const mini = await ask(zm.object({ a: zm.string() }));
    expect(mini.code).toBe("invalid-input");
    expect(mini.message).toMatch(/vendor "zod"\) has no ~standard\.jsonSchema\.input/);

    // A converter that throws (zod cannot write a Date as JSON Schema): its words, its error as cause.
    const dated = await ask(z.object({ at: z.date() }));
    expect(dated.code).toBe("invalid-input");
    expect(dated.message).toMatch(/threw for draft-2020-12 and draft-07.*Date cannot be represented/);
    expect(dated.cause).toBeInstanceOf(Error);

    const throwing = await ask({
      get "~standard"(): never {
        throw new Error("no access");
      },
    });
    expect(throwing.message).toBe("askJson: reading the schema's ~standard threw: no access");
    const notObject = await ask({ "~standard": "zod" });
    expect(notObject.message).toMatch(/~standard must be an object .* and was a string/);
    const noValidate = await ask({
      "~standard": { version: 1, vendor: "v", jsonSchema: { input: () => ({}) } },
    });
    expect(noValidate.message).toMatch(/has no ~standard\.validate function/);
    const inputThrows = await ask({
      "~standard": {
        version: 1,
        vendor: "v",
        validate: (value: unknown) => ({ value }),
        jsonSchema: {
          get input(): never {
            throw new Error("converter gone");
          },
        },
      },
    });
    expect(inputThrows.message).toMatch(
      /reading the schema's ~standard\.jsonSchema\.input threw: converter gone/,
    );
    const notSchema = await ask({
      "~standard": {
        version: 1,
        vendor: "v",
        validate: (value: unknown) => ({ value }),
        jsonSchema: { input: () => "{}" },
      },
    });
    expect(notSchema.message).toMatch(/answered a string, not a JSON Schema object/);
    for (const error of [throwing, notObject, noValidate, inputThrows, notSchema])
      expect(error.code).toBe("invalid-input");
    expect(server.chatRequests).toHaveLength(0);
  });

  it("throws invalid-input for a validate that throws, and reads a broken issue list as far as it can", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"a":1}' }, { content: '{"a":1}' }],
    });
    const endpoint = { baseUrl: server.baseUrl };
    const standard = (validate: (value: unknown) => unknown) => ({
      "~standard": {
        version: 1 as const,
        vendor: "v",
        validate,
        jsonSchema: { input: () => ({ type: "object" }) },
      },
    });
    const broken = await thrown(
      askJson(
        endpoint,
        "m",
        "",
        "?",
        standard(() => {
          throw new Error("validator bug");
        }),
        isolated(),
      ),
    );
    expect(broken.code).toBe("invalid-input");
    expect(broken.message).toMatch(
      /~standard\.validate \(vendor "v"\) threw on the answer of m: validator bug/,
    );
    const { notices, options } = noticed();
    const hostileIssue = {
      get message(): never {
        throw new Error("no");
      },
      path: [{ key: "a" }, Symbol("s"), 3],
    };
    await expect(
      askJson(
        endpoint,
        "m",
        "",
        "?",
        standard(() => ({ issues: [hostileIssue] })),
        options,
      ),
    ).resolves.toBeUndefined();
    expect(notices).toEqual([
      `m's answer does not match the schema: at a[a symbol][3]: (no message); no answer taken.`,
    ]);
  });

  it("never reads a polluted Object.prototype['~standard'] into a plain JSON Schema", async () => {
    server = await startServer({ personality: "llamacpp", replies: [{ content: '{"tools":"x"}' }] });
    const proto = Object.prototype as Record<string, unknown>;
    proto["~standard"] = { version: 1, vendor: "evil", validate: () => ({ issues: [{ message: "no" }] }) };
    try {
      // A plain schema is as before: sent as written, the answer unchecked (T is the caller's word).
      const plain = { type: "object", properties: { tools: { type: "array", items: { type: "string" } } } };
      await expect(askJson({ baseUrl: server.baseUrl }, "m", "", "?", plain, isolated())).resolves.toEqual({
        tools: "x",
      });
    } finally {
      delete proto["~standard"];
    }
  });
});
