/**
 * Review r91: the latches negotiate makes are told by negotiate itself, so a run hears each once.
 *
 * The turn used to compare three latches before and after its attempts and tell them (R89-5); a
 * caller's own `response_format` a model refused was left out of every later turn without a word.
 * negotiate now tells each latch it makes through the `onNotice` the turn hands it, and the turn's
 * own comparison is gone: each latch is told once (not twice), the dropped `response_format` too,
 * and the ceiling respelled `max_completion_tokens` (a rename that loses nothing) in neither place.
 * Over HTTP, through `runAgentLoop` on a runtime of its own.
 */
import {
  llamacppFormatTypeRefusal,
  type Reply,
  recordedError,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { twoRunsOnOneRuntime } from "../test/notices.js";
import type { ToolDefinition } from "./config.js";

const READ: ToolDefinition = {
  type: "function",
  function: {
    name: "read_file",
    description: "Read a file",
    strict: true,
    parameters: {
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
      additionalProperties: false,
    },
  },
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Two runs on one runtime against `replies`; every notice event, every body the server took. */
async function twoRuns(replies: Reply[], config: Record<string, unknown>) {
  server = await startServer({ replies });
  return twoRunsOnOneRuntime(server, [READ], config);
}

describe("R91-2: a run hears each latch negotiate makes once", () => {
  it("stream_options, a temperature and strict tools refused in one turn: three notices, once each", async () => {
    const { notices, bodies } = await twoRuns(
      [
        recordedError(400, "relay-new-api/unknown-parameter-stream-options-with-request-ids.json"),
        recordedError(400, "openai/temperature-0-unsupported-value.json"),
        recordedError(400, "openai/strict-schema-root-additionalproperties-chat.json"),
        { content: "Fine.", usage: false },
        { content: "Again.", usage: false },
      ],
      { temperature: 0 },
    );
    expect(bodies.map((b) => ["stream_options" in b, "temperature" in b])).toEqual([
      [true, true],
      [false, true],
      [false, false],
      [false, false],
      [false, false],
    ]);
    expect(notices.map((n) => n.split(";")[0])).toEqual([
      "The server refused stream_options",
      "sim refused the temperature asked (it takes only its own default)",
      "The server refused the request's schemas in strict form",
    ]);
  });

  it("a response_format of the caller's own the model refused: left out, and said so once", async () => {
    // An older llama.cpp, which takes response_format but no JSON schema in it (capture 23).
    const older = llamacppFormatTypeRefusal("json_schema");
    const format = { type: "json_schema", json_schema: { name: "c", schema: { type: "object" } } };
    const { notices, bodies } = await twoRuns(
      [older, { content: "{}", usage: false }, { content: "{}", usage: false }],
      { extraBody: { response_format: format } },
    );
    expect(bodies.map((b) => "response_format" in b)).toEqual([true, false, false]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^sim refused structured output \(a JSON schema in response_format\)/);
  });

  it("the ceiling respelled max_completion_tokens: renamed, told in neither layer", async () => {
    const { notices, bodies } = await twoRuns(
      [
        recordedError(400, "openai/max-tokens-unsupported-use-max-completion-tokens.json"),
        { content: "Fine.", usage: false },
        { content: "Again.", usage: false },
      ],
      { maxTokens: 64 },
    );
    expect(bodies.map((b) => [b.max_tokens, b.max_completion_tokens])).toEqual([
      [64, undefined],
      [undefined, 64],
      [undefined, 64],
    ]);
    expect(notices).toEqual([]);
  });
});
