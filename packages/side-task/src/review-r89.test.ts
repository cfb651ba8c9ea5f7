/**
 * Review r89, found by the latching model (latching-model.test.ts): `onNotice` is "told, in words,
 * when a request is changed to get past a refusal", yet four of the changes a side task makes to
 * get past one were made without a word — a JSON schema the model refused (asked again with
 * json_object: the reply no longer held to the schema), a schema the endpoint could not build a
 * grammar from (sent relaxed, its constraints only in words), a temperature the model refused
 * (sent with none: the model's default, not the 0 asked), and `max_tokens` refused for
 * `max_completion_tokens`. `negotiate` latches those four silently; the side task now says so. The
 * relaxed schema is told only where its latch holds: a relaxed request refused alike takes it back
 * (the grammar was the caller's own), and then nothing changed. Over HTTP against the testkit.
 *
 * Since r91 negotiate tells these itself (a host's own loop hears them too) and the side task's own
 * comparison is gone: the wordings below are negotiate's, and the ceiling renamed
 * `max_completion_tokens` is not told — a rename that loses nothing, as in turns.
 */
import {
  llamacppFormatTypeRefusal,
  type Reply,
  readFixture,
  recordedError,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated } from "../test/wire.js";
import { ask, askJson } from "./ask.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const schema = { type: "object", properties: { a: { type: "string" } }, required: ["a"] };
const coded = {
  type: "object",
  properties: { code: { type: "string", pattern: "^[A-Z]+-\\d+$" } },
  required: ["code"],
};

const formatOf = (body: Record<string, unknown>) =>
  (body.response_format as { type?: string; json_schema?: { strict?: boolean } } | undefined) ?? {};

function told() {
  const notices: string[] = [];
  return { notices, options: { ...isolated(), onNotice: (m: string) => notices.push(m) } };
}

describe("R89-1: a change made to get past a refusal is told, whichever latch made it", () => {
  it("a JSON schema refused (an older llama.cpp): asked with json_object, and said so", async () => {
    server = await startServer({
      replies: [llamacppFormatTypeRefusal("json_schema"), { content: '{"a":"x"}' }],
    });
    const { notices, options } = told();
    await expect(askJson({ baseUrl: server.baseUrl }, "old", "", "a?", schema, options)).resolves.toEqual({
      a: "x",
    });
    expect(bodies(server).map((b) => formatOf(b).type)).toEqual(["json_schema", "json_object"]);
    expect(notices).toHaveLength(1);
    // r91: told by negotiate itself, in its words.
    expect(notices[0]).toMatch(/^old refused structured output \(a JSON schema in response_format\)/);
  });

  it("a temperature refused (OpenAI, only the default): sent without one, and said so", async () => {
    server = await startServer({
      replies: [recordedError(400, "openai/temperature-0-unsupported-value.json"), { content: "A title" }],
    });
    const { notices, options } = told();
    await ask({ baseUrl: server.baseUrl }, "o-model", "", "Name it.", { ...options, temperature: 0 });
    expect(bodies(server).map((b) => b.temperature)).toEqual([0, undefined]);
    expect(notices).toEqual([
      // r91: told by negotiate itself, in its words.
      "o-model refused the temperature asked (it takes only its own default); sending requests without one from now on.",
    ]);
  });

  it("max_tokens refused for max_completion_tokens: renamed, not told (r91: a rename loses nothing, as in turns)", async () => {
    server = await startServer({
      replies: [
        recordedError(400, "openai/max-tokens-unsupported-use-max-completion-tokens.json"),
        { content: "A title" },
      ],
    });
    const { notices, options } = told();
    await ask({ baseUrl: server.baseUrl }, "o-model", "", "Name it.", options);
    expect(bodies(server).map((b) => [b.max_tokens, b.max_completion_tokens])).toEqual([
      [512, undefined],
      [undefined, 512],
    ]);
    expect(notices).toEqual([]);
  });

  it("a schema the endpoint could not build a grammar from: relaxed, and said so once it holds", async () => {
    server = await startServer({
      replies: [
        recordedError(400, "llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
        { content: '{"code":"AB-1"}' },
      ],
    });
    const { notices, options } = told();
    await expect(
      askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "code?", coded, options),
    ).resolves.toEqual({ code: "AB-1" });
    const [strict, relaxed] = bodies(server).map(formatOf);
    expect(strict?.json_schema?.strict).toBe(true);
    expect(relaxed?.json_schema).not.toHaveProperty("strict");
    expect(notices).toHaveLength(1);
    // r91: told by negotiate itself as the call that relaxed it ends, in its words.
    expect(notices[0]).toMatch(
      /^The server could not build a grammar from the request's schemas; sending tool and response_format schemas relaxed/,
    );
  });

  it("a response_format of the caller's own refused by name: left out, and said so", async () => {
    const unknown: Reply = {
      type: "error",
      status: 400,
      body: JSON.parse(
        readFixture("errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json")
          .split("reasoning_effort")
          .join("response_format"),
      ),
    };
    server = await startServer({ replies: [unknown, { content: "yes" }] });
    const { notices, options } = told();
    await ask({ baseUrl: server.baseUrl }, "o-model", "", "Yes or no?", {
      ...options,
      extraBody: { response_format: { type: "json_object" } },
    });
    expect(bodies(server).map((b) => formatOf(b).type)).toEqual(["json_object", undefined]);
    // r91: told by negotiate itself, in its words.
    expect(notices).toHaveLength(1);
    // r94h: the field was refused by name, a plain json_object in it — no JSON schema was sent.
    expect(notices[0]).toMatch(
      /^o-model refused structured output \(response_format, a field it does not take\);/,
    );
  });

  it("a grammar of the caller's own refused alike when relaxed: the latch taken back, nothing told", async () => {
    // llama.cpp words a grammar it cannot parse as it words a schema's: relaxed once, refused again.
    const own = recordedError(400, "llamacpp/failed-to-parse-grammar-own-grammar-b9749.json");
    server = await startServer({ replies: [own, own, { content: '{"code":"AB-1"}' }] });
    const { notices, options } = told();
    const error = await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "code?", coded, {
      ...options,
      extraBody: { grammar: "root ::= x" },
    }).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe("request-failed");
    expect(server.chatRequests).toHaveLength(2);
    expect(notices).toEqual([]);
    // The next schema goes strict again: nothing was latched.
    await askJson({ baseUrl: server.baseUrl }, "tiny.gguf", "", "code?", coded, options);
    expect(formatOf(bodies(server)[2] ?? {}).json_schema?.strict).toBe(true);
  });
});
