/**
 * askJson over HTTP against the testkit: a server that holds the reply to a json_schema, servers
 * that refuse it (each lesser form latched per model), a reply in prose around a fence, a schema
 * the grammar converter cannot take, and the answers that are not JSON.
 */
import { type Reply, readFixture, readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { bodies, isolated, lmstudioRefusal, olderLlamacpp, systemContent } from "../test/wire.js";
import { askJson } from "./ask.js";
import { SideTaskError } from "./errors.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const person = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer" }, nickname: { type: "string" } },
  required: ["name", "age"],
};

const formatOf = (body: Record<string, unknown>) =>
  body.response_format as Record<string, unknown> | undefined;

describe("askJson", () => {
  it("sends the schema as json_schema, normalised for strict mode, and reads the answer", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: '{"name":"Ada","age":36,"nickname":null}' }],
    });
    const answer = await askJson(
      { baseUrl: server.baseUrl },
      "tiny.gguf",
      "Extract the person.",
      "Ada, 36.",
      person,
      { ...isolated(), name: "person" },
    );
    // The null the normalising asked for in place of the optional nickname is taken out again.
    expect(answer).toEqual({ name: "Ada", age: 36 });
    const [body] = bodies(server);
    expect(formatOf(body ?? {})).toMatchObject({
      type: "json_schema",
      json_schema: {
        name: "person",
        strict: true,
        schema: { type: "object", required: ["name", "age", "nickname"], additionalProperties: false },
      },
    });
    expect(systemContent(body ?? {})).toMatch(/^Extract the person\.\n\nAnswer with one JSON value only/);
  });

  it("gives back as objects the parts of a recursive schema the normalising asked for as JSON text", async () => {
    const outline = {
      type: "object",
      properties: { root: { $ref: "#/$defs/section" } },
      required: ["root"],
      $defs: {
        section: {
          type: "object",
          properties: {
            title: { type: "string" },
            parts: { type: "array", items: { $ref: "#/$defs/section" } },
          },
          required: ["title"],
        },
      },
    };
    const deep = [{ title: "1.1.1", parts: [{ title: "1.1.1.1" }] }];
    server = await startServer({
      personality: "llamacpp",
      replies: [
        {
          content: JSON.stringify({
            root: { title: "1", parts: [{ title: "1.1", parts: JSON.stringify(deep) }] },
          }),
        },
      ],
    });
    const answer = await askJson(
      { baseUrl: server.baseUrl },
      "tiny.gguf",
      "Outline it.",
      "A book.",
      outline,
      {
        ...isolated(),
        name: "outline",
      },
    );
    expect(answer).toEqual({ root: { title: "1", parts: [{ title: "1.1", parts: deep }] } });
    expect(JSON.stringify(formatOf(bodies(server)[0] ?? {}))).toContain("Give this value as JSON text.");
  });

  it("falls back to json_object where the model refuses json_schema, and latches it for that model", async () => {
    server = await startServer({
      replies: (request) => {
        const type = formatOf(request.body as Record<string, unknown>)?.type;
        return type === "json_schema" ? olderLlamacpp() : { content: '{"name":"Bo","age":7}' };
      },
    });
    const options = isolated();
    const endpoint = { baseUrl: server.baseUrl };
    await expect(askJson(endpoint, "old", "", "Bo, 7", person, options)).resolves.toEqual({
      name: "Bo",
      age: 7,
    });
    expect(bodies(server).map((b) => formatOf(b)?.type)).toEqual(["json_schema", "json_object"]);
    await askJson(endpoint, "old", "", "Bo, 7", person, options);
    await askJson(endpoint, "other", "", "Bo, 7", person, options);
    expect(bodies(server).map((b) => formatOf(b)?.type)).toEqual([
      "json_schema",
      "json_object",
      "json_object",
      "json_schema",
      "json_object",
    ]);
  });

  it("asks in words alone where the model refuses json_object too, reading JSON out of prose and a fence", async () => {
    server = await startServer({
      replies: (request) => {
        const type = formatOf(request.body as Record<string, unknown>)?.type;
        if (type === "json_schema") return olderLlamacpp();
        if (type === "json_object") return lmstudioRefusal;
        return { content: 'Sure! Here it is:\n```json\n{"name": "Cy", "age": 41,}\n```\nAnything else?' };
      },
    });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const endpoint = { baseUrl: server.baseUrl };
    await expect(askJson(endpoint, "picky", "", "Cy, 41", person, options)).resolves.toEqual({
      name: "Cy",
      age: 41,
    });
    expect(bodies(server).map((b) => formatOf(b)?.type)).toEqual(["json_schema", "json_object", undefined]);
    expect(notices.join("\n")).toMatch(/refused response_format/);
    // The schema still rides on the system prompt.
    expect(systemContent(bodies(server)[2] ?? {})).toMatch(/"required":\["name","age","nickname"\]/);
    await askJson(endpoint, "picky", "", "Cy, 41", person, options);
    expect(bodies(server).map((b) => formatOf(b)?.type)).toEqual([
      "json_schema",
      "json_object",
      undefined,
      undefined,
    ]);
  });

  it("asks in words alone where the endpoint does not know response_format at all", async () => {
    // OpenAI's recorded unknown-argument refusal, naming response_format (as a relay in front of an
    // older deployment answers).
    server = await startServer({
      personality: { name: "openai", unknownParams: ["response_format"] },
      replies: [{ content: 'Here: {"name": "Di", "age": 5}' }],
    });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const answer = await askJson(
      { baseUrl: server.baseUrl, apiKey: "sk-test" },
      "gpt-4o-mini",
      "",
      "Di, 5",
      person,
      options,
    );
    expect(answer).toEqual({ name: "Di", age: 5 });
    // The no-thinking hint goes first (OpenAI does not know it either), then words: json_object is
    // the field refused by name, and is not sent to be refused again (r95c).
    expect(bodies(server).map((b) => [formatOf(b)?.type, "chat_template_kwargs" in b])).toEqual([
      ["json_schema", true],
      ["json_schema", false],
      [undefined, false],
    ]);
    expect(notices.join("\n")).toMatch(/refused response_format/);
  });

  it("relaxes a schema the server's grammar converter cannot build, and keeps asking with json_schema", async () => {
    server = await startServer({
      replies: [
        // llama.cpp's converter refusing a schema (BrowserOS's report; recorded body).
        {
          type: "error",
          status: 400,
          body: readFixtureJson("errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
        },
        { content: '{"code":"AB-12"}' },
        { content: '{"code":"CD-34"}' },
      ],
    });
    const schema = {
      type: "object",
      properties: { code: { type: "string", pattern: "[A-Z]+-\\d+" } },
      required: ["code"],
    };
    const options = isolated();
    const endpoint = { baseUrl: server.baseUrl };
    await expect(askJson(endpoint, "tiny.gguf", "", "code?", schema, options)).resolves.toEqual({
      code: "AB-12",
    });
    const sent = bodies(server).map(formatOf);
    expect(sent).toHaveLength(2);
    expect(JSON.stringify(sent[0])).toMatch(/"pattern"/);
    const relaxed = sent[1]?.json_schema as Record<string, unknown>;
    expect(JSON.stringify(relaxed.schema)).not.toMatch(/"pattern"/);
    expect(relaxed).not.toHaveProperty("strict");
    // Latched on the endpoint: the next schema goes relaxed first time.
    await expect(askJson(endpoint, "tiny.gguf", "", "code?", schema, options)).resolves.toEqual({
      code: "CD-34",
    });
    expect(server.chatRequests).toHaveLength(3);
  });

  it("sends strict: false as no strictness asked for", async () => {
    server = await startServer({ personality: "openai", replies: [{ content: '{"a":1}' }] });
    const endpoint = { baseUrl: server.baseUrl, apiKey: "sk-test" };
    const loose = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
    await expect(
      askJson(endpoint, "gpt-4o-mini", "", "a?", loose, { ...isolated(), strict: false }),
    ).resolves.toEqual({ a: 1 });
    expect(formatOf(bodies(server)[0] ?? {})).toMatchObject({ type: "json_schema" });
    expect(formatOf(bodies(server)[0] ?? {})?.json_schema).not.toHaveProperty("strict");
  });

  it("passes on a schema the server finds invalid, and latches nothing", async () => {
    // OpenAI's strict structured-output refusal (vercel/ai#6484; the message as recorded).
    const message = readFixture(
      "errors/openai/strict-schema-required-missing-key-response-format.message.txt",
    ).trim();
    const invalid: Reply = {
      type: "error",
      status: 400,
      body: { error: { message, type: "invalid_request_error", param: "response_format", code: null } },
    };
    server = await startServer({ replies: [invalid, { content: '{"a":1}' }] });
    const options = isolated();
    const endpoint = { baseUrl: server.baseUrl };
    const schema = { type: "object", properties: { a: { type: "integer" } } };
    const error = await askJson(endpoint, "gpt-4o", "", "a?", schema, options).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("request-failed");
    expect(String((error as Error).message)).toMatch(/Invalid schema for response_format/);
    expect(server.chatRequests).toHaveLength(1);
    await askJson(endpoint, "gpt-4o", "", "a?", schema, options);
    expect(bodies(server).map((b) => formatOf(b)?.type)).toEqual(["json_schema", "json_schema"]);
  });

  it("answers undefined for a reply with no JSON in it, and for one cut off before its JSON closed", async () => {
    server = await startServer({
      replies: [
        { content: "I cannot tell from that." },
        { content: '{"name": "Dee", "ag', finishReason: "length" },
      ],
    });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const endpoint = { baseUrl: server.baseUrl };
    await expect(askJson(endpoint, "m", "", "?", person, options)).resolves.toBeUndefined();
    await expect(askJson(endpoint, "m", "", "?", person, options)).resolves.toBeUndefined();
    expect(notices.join("\n")).toMatch(/reply ceiling before the JSON was finished/);
  });

  it("says what the model refused with, where it answered a refusal in place of the JSON (OpenAI)", async () => {
    // OpenAI's structured outputs: a safety refusal comes as message.refusal, with no content.
    const completion = {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 0,
      model: "gpt-4o",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            refusal: "I'm sorry, I can't help with that request.",
          },
          finish_reason: "stop",
        },
      ],
    };
    server = await startServer({
      replies: [
        {
          type: "raw",
          headers: { "content-type": "application/json" },
          chunks: [JSON.stringify(completion)],
        },
      ],
    });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    await expect(
      askJson({ baseUrl: server.baseUrl }, "gpt-4o", "", "Who?", person, options),
    ).resolves.toBeUndefined();
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain("gpt-4o refused");
    expect(notices[0]).toContain("I'm sorry, I can't help with that request.");
  });

  it("takes a JSON answer that closed before the ceiling cut off the blank space a grammar let run on", async () => {
    // A grammar that lets whitespace follow the value, or a model that loops on newlines after it,
    // runs into max_tokens with the answer already whole.
    server = await startServer({
      replies: [
        { content: `{"name": "Dee", "age": 41}${"\n".repeat(300)}`, finishReason: "length" },
        { content: `[{"name": "Dee", "age": 41}]  \n \t`, finishReason: "length" },
      ],
    });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const endpoint = { baseUrl: server.baseUrl };
    await expect(askJson(endpoint, "m", "", "Who?", person, options)).resolves.toEqual({
      name: "Dee",
      age: 41,
    });
    const people = { type: "array", items: person };
    await expect(askJson(endpoint, "m", "", "Who?", people, options)).resolves.toEqual([
      { name: "Dee", age: 41 },
    ]);
    expect(notices).toEqual([]);
  });

  it("keeps a number JavaScript cannot hold as the model's digits where the schema takes a string", async () => {
    const order = {
      type: "object",
      properties: { id: { type: "string" }, lines: { type: "integer" } },
      required: ["id", "lines"],
    };
    server = await startServer({ replies: [{ content: '{"id": 12345678901234567891, "lines": 3}' }] });
    const answer = await askJson({ baseUrl: server.baseUrl }, "m", "", "Which order?", order, isolated());
    // Before: { id: 12345678901234567000 }, another order's number.
    expect(answer).toEqual({ id: "12345678901234567891", lines: 3 });
  });

  it("refuses an integer it cannot hold with a typed error naming its path and digits", async () => {
    server = await startServer({ replies: [{ content: '{"name": "Ada", "age": 9007199254740993}' }] });
    const error = await askJson({ baseUrl: server.baseUrl }, "m", "", "Who?", person, isolated()).catch(
      (e: unknown) => e,
    );
    // Before: the answer { name: "Ada", age: 9007199254740992 }, a different number.
    expect(SideTaskError.isInstance(error) && error.code).toBe("inexact-number");
    expect(String((error as Error).message)).toMatch(/askJson: the answer of m .*9007199254740993 at age/);
  });

  it("throws a typed error for a schema that is not an object or a bad name", async () => {
    const endpoint = { baseUrl: "http://127.0.0.1:9/v1" };
    for (const [schema, name, message] of [
      [[], undefined, /schema must be a JSON Schema object/],
      [person, "has space", /name must be 1 to 64 letters/],
    ] as const) {
      const error = await askJson(endpoint, "m", "", "x", schema as never, name ? { name } : {}).catch(
        (e: unknown) => e,
      );
      expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
      expect(String((error as Error).message)).toMatch(message);
    }
  });

  it("refuses options that are not an object with its typed error, as ask does", async () => {
    const endpoint = { baseUrl: "http://127.0.0.1:9/v1" };
    for (const options of [null, "strict", 3]) {
      const error = await askJson(endpoint, "m", "", "x", person, options as never).catch((e: unknown) => e);
      expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
      expect(String((error as Error).message)).toMatch(/askJson: options must be an object/);
    }
  });
});
