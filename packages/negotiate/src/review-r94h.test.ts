/**
 * Round 94 (h): what a host composing its own loop found — a `tool_choice` naming a tool by the name
 * relaxing changed, and the structured-output notice for a plain `json_object` refused.
 */
import { llamacppFormatTypeRefusal, recordedError, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { negotiatedTurn, type SentTools } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { buildBody, type ToolChoice, type ToolDefinition } from "./request-body.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: { name: "fs.read", parameters: { type: "object", properties: { path: { type: "string" } } } },
  },
  {
    type: "function",
    function: { name: "add", parameters: { type: "object", properties: { a: { type: "number" } } } },
  },
];
const MESSAGES = [{ role: "user", content: "Read a.txt." }];
const FS_READ: ToolChoice = { type: "function", function: { name: "fs.read" } };

describe("R94h-2: a tool_choice naming a tool that relaxing renamed", () => {
  it("after a grammar refusal (llamacpp): the re-sent request names the tool as it goes out", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [
        recordedError(400, "llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
        { toolCalls: [{ name: "fs_read", arguments: '{"path": "a.txt"}' }] },
      ],
    });
    const config = { baseUrl: server.baseUrl, model: "qwen" };
    const turn = await negotiatedTurn(config, MESSAGES, TOOLS, { buildOptions: { toolChoice: FS_READ } });
    expect(turn.toolCalls[0]?.function.name).toBe("fs_read");
    const [strict, relaxed] = server.chatRequests.map((r) => r.body as SentTools);
    expect(strict?.tools?.map((t) => t.function.name)).toEqual(["add", "fs.read"]);
    expect(strict?.tool_choice).toEqual(FS_READ);
    // Before: the relaxed request declared fs_read and still asked for fs.read.
    expect(relaxed?.tools?.map((t) => t.function.name)).toEqual(["add", "fs_read"]);
    expect(relaxed?.tool_choice).toEqual({ type: "function", function: { name: "fs_read" } });
    // The caller's choice is untouched.
    expect(FS_READ).toEqual({ type: "function", function: { name: "fs.read" } });
  });

  it("a choice naming the tool as it goes out, and an extraBody tool_choice, go as the tools do", () => {
    const supports = {
      ...createCapabilityStore().capabilitiesFor("http://127.0.0.1:9/v1"),
      strictSchemas: false,
    };
    const asSent = buildBody({ model: "m" }, supports, undefined, MESSAGES, TOOLS, {
      toolChoice: { type: "function", function: { name: "fs_read" } },
    });
    expect(asSent.tool_choice).toEqual({ type: "function", function: { name: "fs_read" } });
    const extra = buildBody(
      { model: "m", extraBody: { tool_choice: FS_READ } },
      supports,
      undefined,
      MESSAGES,
      TOOLS,
    );
    expect(extra.tool_choice).toEqual({ type: "function", function: { name: "fs_read" } });
  });

  it("a choice naming no tool is refused by name, strict or relaxed, before anything is sent", () => {
    const store = createCapabilityStore();
    const strict = store.capabilitiesFor("http://127.0.0.1:9/v1");
    const relaxed = { ...strict, strictSchemas: false };
    const read: ToolChoice = { type: "function", function: { name: "read" } };
    expect(() => buildBody({ model: "m" }, strict, undefined, MESSAGES, TOOLS, { toolChoice: read })).toThrow(
      new RangeError(
        'buildBody: options.toolChoice names the tool "read", which is none of the tools given; the function tools are "fs.read", "add".',
      ),
    );
    expect(() =>
      buildBody({ model: "m" }, relaxed, undefined, MESSAGES, TOOLS, { toolChoice: read }),
    ).toThrow(
      new RangeError(
        'buildBody: options.toolChoice names the tool "read", which is none of the tools given; the function tools are "fs.read" (sent as "fs_read"), "add".',
      ),
    );
    // The four forms still go as they did; with no tools a choice is not sent, and not checked.
    expect(
      buildBody({ model: "m" }, relaxed, undefined, MESSAGES, TOOLS, { toolChoice: "required" }).tool_choice,
    ).toBe("required");
    expect(
      buildBody({ model: "m" }, relaxed, undefined, MESSAGES, [], { toolChoice: read }),
    ).not.toHaveProperty("tool_choice");
  });
});

describe("R94h-3: the structured-output notice says what was refused", () => {
  /** One request as a host sends it through negotiate, and the notices it heard. */
  async function send(
    personality: Parameters<typeof startServer>[0],
    responseFormat: Record<string, unknown>,
  ): Promise<{ notices: string[]; formats: unknown[] }> {
    server = await startServer(personality);
    const config = {
      baseUrl: server.baseUrl,
      model: "gpt-4o",
      extraBody: { response_format: responseFormat },
    };
    const notices: string[] = [];
    await negotiatedTurn(config, MESSAGES, undefined, { onNotice: (text) => notices.push(text) });
    return {
      notices,
      formats: server.chatRequests.map((r) => (r.body as { response_format?: unknown }).response_format),
    };
  }

  it("a plain json_object refused as a field the server does not know (openai): the field, not a JSON schema", async () => {
    const { notices, formats } = await send(
      { personality: { name: "openai", unknownParams: ["response_format"] }, replies: [{ content: "{}" }] },
      { type: "json_object" },
    );
    expect(formats).toEqual([{ type: "json_object" }, undefined]);
    expect(notices).toEqual([
      "gpt-4o refused structured output (response_format, a field it does not take); sending requests without " +
        "one from now on: a response_format of the caller's own (extraBody) is left out, and a side task asks " +
        "for json_object, or for JSON in words.",
    ]);
  });

  it("a JSON schema refused (an older llama.cpp): said as before", async () => {
    const format = { type: "json_schema", json_schema: { name: "c", schema: { type: "object" } } };
    const { notices, formats } = await send(
      { replies: [llamacppFormatTypeRefusal("json_schema"), { content: "{}" }] },
      format,
    );
    expect(formats).toEqual([format, undefined]);
    expect(notices).toEqual([
      "gpt-4o refused structured output (a JSON schema in response_format); sending requests without one " +
        "from now on: a response_format of the caller's own (extraBody) is left out, and a side task asks for " +
        "json_object, or for JSON in words.",
    ]);
  });
});
