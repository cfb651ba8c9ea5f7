/**
 * askJson with a property named `$ref`. r92f made `sanitizeSchema` send such a property as `$ref_`
 * (llama.cpp answers a `$ref` property name with a 400); askJson sends its schema through the same
 * sanitizer, so a model writes `$ref_`, and the caller must get its own `$ref` back — with a plain
 * JSON Schema, with zod, nested, and with a number JavaScript cannot hold written there. Over the
 * testkit as a server would answer the sanitized schema, and live where the server is present.
 */
import {
  type LiveServer,
  liveServerPath,
  startLive,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { bodies, isolated, noticed } from "../test/wire.js";
import { askJson } from "./ask.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const REF_SCHEMA = { type: "object", properties: { $ref: { type: "string" } }, required: ["$ref"] } as const;

const sentSchema = (body: Record<string, unknown> | undefined) =>
  (body?.response_format as { json_schema?: { schema?: Record<string, unknown> } })?.json_schema?.schema;

async function answering(content: string): Promise<TestServer> {
  server = await startServer({ personality: "llamacpp", replies: [{ content }] });
  return server;
}

describe("askJson with a property named $ref", () => {
  it("sends it as $ref_ and hands the caller its own $ref back", async () => {
    const s = await answering('{"$ref_":"x"}');
    const { notices, options } = noticed();
    const answer = await askJson({ baseUrl: s.baseUrl }, "m", "Point.", "Where?", REF_SCHEMA, options);
    expect(answer).toEqual({ $ref: "x" });
    expect(notices).toEqual([]);
    // What went is what llama.cpp takes: no property named `$ref` anywhere in the schema sent.
    expect(sentSchema(bodies(s)[0])?.properties).toEqual({ $ref_: { type: "string" } });
  });

  it("answers zod's output with its $ref, typed", async () => {
    const s = await answering('{"$ref_":"x"}');
    const { notices, options } = noticed();
    const answer = await askJson(
      { baseUrl: s.baseUrl },
      "tiny.gguf",
      "Point.",
      "Where?",
      z.object({ $ref: z.string() }),
      options,
    );
    expectTypeOf(answer).toEqualTypeOf<{ $ref: string } | undefined>();
    expect(answer).toEqual({ $ref: "x" });
    expect(notices).toEqual([]);
  });

  it("restores $ref inside arrays and anyOf branches, and keeps a long number's digits there", async () => {
    const schema = {
      type: "object",
      properties: {
        list: { type: "array", items: { type: "object", properties: { $ref: { type: "string" } } } },
        either: {
          anyOf: [
            { type: "object", properties: { $ref: { type: "string" } }, required: ["$ref"] },
            { type: "string" },
          ],
        },
        id: { type: "object", properties: { $ref: { type: "string" } }, required: ["$ref"] },
      },
      required: ["list", "either", "id"],
    };
    const s = await answering(
      '{"list":[{"$ref_":"a"}],"either":{"$ref_":"b"},"id":{"$ref_":12345678901234567891}}',
    );
    const answer = await askJson({ baseUrl: s.baseUrl }, "tiny.gguf", "Point.", "Where?", schema, isolated());
    expect(answer).toEqual({
      list: [{ $ref: "a" }],
      either: { $ref: "b" },
      id: { $ref: "12345678901234567891" },
    });
  });
});

const live = liveServerPath ? describe : describe.skip;
if (!liveServerPath)
  console.warn(
    "side-task r93 live test skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run it.",
  );

live("askJson with a $ref property against a live llama.cpp server", { timeout: 120_000 }, () => {
  let liveServer: LiveServer;
  beforeAll(async () => {
    liveServer = await startLive();
  }, 90_000);
  afterAll(() => liveServer?.stop(), 20_000);

  it("is taken by the server's grammar and answered with the caller's own $ref", async () => {
    const schema = { ...REF_SCHEMA, properties: { $ref: { type: "string", maxLength: 8 } } };
    const answer = await askJson<{ $ref?: unknown }>(
      { baseUrl: liveServer.baseUrl },
      "tiny",
      "Point.",
      "Where?",
      schema,
      { ...isolated(), maxTokens: 64, extraBody: { seed: 4 }, timeoutMs: 110_000 },
    );
    expect(answer).toBeDefined();
    expect(Object.keys(answer ?? {})).toEqual(["$ref"]);
    expect(typeof answer?.$ref).toBe("string");
  });
});
