/**
 * Round 94 (p): an `allowed_tools` tool_choice naming tools relaxing renamed.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { negotiatedTurn, type SentTools } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { buildBody, type ToolDefinition } from "./request-body.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Strict, and a schema OpenAI's strict mode refuses (no additionalProperties: false): the first
// request is refused, negotiate relaxes the tools, and relaxing renames `fs.read` to `fs_read`.
const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "fs.read",
      strict: true,
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  },
  {
    type: "function",
    function: { name: "add", parameters: { type: "object", properties: { a: { type: "number" } } } },
  },
];
const MESSAGES = [{ role: "user", content: "Read a.txt." }];

/** An `allowed_tools` choice listing `names`, frozen all the way down: buildBody must copy, not write. */
function allowed(...names: string[]) {
  return Object.freeze({
    type: "allowed_tools",
    allowed_tools: Object.freeze({
      mode: "required",
      tools: Object.freeze(
        names.map((name) => Object.freeze({ type: "function", function: Object.freeze({ name }) })),
      ),
    }),
  });
}

describe("R94p-1: an allowed_tools tool_choice names its tools as they go out", () => {
  it("after a strict-schema refusal (openai): the re-sent request lists fs_read", async () => {
    server = await startServer({
      personality: "openai",
      replies: [{ toolCalls: [{ name: "fs_read", arguments: '{"path": "a.txt"}' }] }],
    });
    const choice = allowed("fs.read", "add", "gone");
    const config = { baseUrl: server.baseUrl, model: "gpt-4o", extraBody: { tool_choice: choice } };
    const turn = await negotiatedTurn(config, MESSAGES, TOOLS);
    expect(turn.toolCalls[0]?.function.name).toBe("fs_read");
    const [strict, relaxed] = server.chatRequests.map((r) => r.body as SentTools);
    expect(strict?.tool_choice).toEqual(allowed("fs.read", "add", "gone"));
    expect(relaxed?.tools?.map((t) => t.function.name)).toEqual(["add", "fs_read"]);
    // Before: sent as given, still allowing `fs.read`, which the request no longer declares.
    // A name of no tool stays as given (`gone`), as an extraBody choice naming no tool does.
    expect(relaxed?.tool_choice).toEqual(allowed("fs_read", "add", "gone"));
    expect(choice).toEqual(allowed("fs.read", "add", "gone"));
  });

  it("built directly: renamed in a copy, other fields and entries kept; strict tools keep the names", () => {
    const strict = createCapabilityStore().capabilitiesFor("http://127.0.0.1:9/v1");
    const relaxed = { ...strict, strictSchemas: false };
    const choice = {
      type: "allowed_tools",
      allowed_tools: {
        mode: "auto",
        tools: [
          { type: "function", function: { name: "fs.read" } },
          { type: "custom", custom: { name: "fs.read" } },
          { type: "function", function: { name: "fs_read" } },
        ],
      },
    };
    const before = structuredClone(choice);
    const body = buildBody(
      { model: "m", extraBody: { tool_choice: choice } },
      relaxed,
      undefined,
      MESSAGES,
      TOOLS,
    );
    expect(body.tool_choice).toEqual({
      type: "allowed_tools",
      allowed_tools: {
        mode: "auto",
        tools: [
          { type: "function", function: { name: "fs_read" } },
          { type: "custom", custom: { name: "fs.read" } },
          { type: "function", function: { name: "fs_read" } },
        ],
      },
    });
    expect(choice).toEqual(before);
    const asGiven = buildBody(
      { model: "m", extraBody: { tool_choice: choice } },
      strict,
      undefined,
      MESSAGES,
      TOOLS,
    );
    expect(asGiven.tool_choice).toEqual(before);
  });
});
