/**
 * r92, found by the random whole-loop run against a real llama.cpp server (live-model.test.ts): a
 * tool with a parameter named `$ref` — a JSON-pointer field, a git ref — failed every run that
 * offered it. llama.cpp (b9749) reads a `$ref` key wherever it stands in a tool's schema as a
 * reference, so the property's own schema (an object) where it expects a string fails the request:
 * 400 "Unable to generate parser for this template. Automatic parser generation failed:
 * [json.exception.type_error.302] type must be string, but is object". The relaxed tools
 * `negotiate` sends after a grammar refusal kept the name, were refused the same way, and the run
 * ended in an `AgentLoopError` before the model said a word.
 *
 * Fixed in schema-compat's sanitizeSchema: the property is sent as `$ref_` (`$ref__2` where that is
 * taken), and restoreArguments hands the tool its own name back, as it does for a name holding half
 * a surrogate pair. The loopback case uses a testkit server that refuses as llama.cpp does; the live
 * case, the real server (skipped with a message where LOOPWRIGHT_LIVE_LLAMA names none).
 */
import {
  type LiveServer,
  liveServerPath,
  type RecordedRequest,
  startLive,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { createRuntime } from "./runtime.js";

const REF_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "resolve",
    description: "Resolve a JSON pointer in a document",
    parameters: {
      type: "object",
      properties: {
        $ref: { type: "string", description: "The pointer" },
        doc: { type: "object", properties: { $ref: { type: "integer" }, $ref_: { type: "string" } } },
      },
      required: ["$ref"],
    },
  },
};

/** Whether a JSON value holds, anywhere, a `$ref` whose value is not a string (llama.cpp's refusal). */
function holdsObjectRef(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsObjectRef);
  if (typeof value !== "object" || value === null) return false;
  return Object.entries(value).some(([k, v]) => (k === "$ref" && typeof v !== "string") || holdsObjectRef(v));
}

/** The same name, its value short (an enum) so the tiny model writes the whole call within its ceiling. */
const LIVE_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "resolve",
    description: "Resolve a JSON pointer",
    parameters: {
      type: "object",
      properties: { $ref: { type: "string", enum: ["#/a", "#/b"] } },
      required: ["$ref"],
      additionalProperties: false,
    },
  },
};

const REFUSAL = {
  error: {
    code: 400,
    message:
      "Unable to generate parser for this template. Automatic parser generation failed: [json.exception.type_error.302] type must be string, but is object",
    type: "invalid_request_error",
  },
};

describe("r92: a tool parameter named $ref, over loopback (a server that refuses it as llama.cpp does)", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("is sent under another name, accepted, and reaches the tool under its own", async () => {
    const replies = (request: RecordedRequest, index: number) => {
      const body = request.body as { tools?: unknown };
      if (holdsObjectRef(body.tools)) return { type: "error" as const, status: 400, body: REFUSAL };
      return index === 0
        ? {
            toolCalls: [
              { id: "c1", name: "resolve", arguments: '{"$ref_":"#/a","doc":{"$ref__2":3,"$ref_":"x"}}' },
            ],
          }
        : { content: "done" };
    };
    server = await startServer({ replies: replies as never });
    const got: unknown[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0 },
      messages: [{ role: "user", content: "resolve #/a" }],
      tools: [REF_TOOL],
      dispatch: ({ args }) => {
        got.push(args);
        return "ok";
      },
    });
    expect(result.stopReason).toBe("answered");
    expect(server.chatRequests.every((r) => !holdsObjectRef((r.body as { tools?: unknown }).tools))).toBe(
      true,
    );
    expect(got).toEqual([{ $ref: "#/a", doc: { $ref: 3, $ref_: "x" } }]);
  });
});

(liveServerPath ? describe : describe.skip)(
  "r92: a tool parameter named $ref, against a live llama.cpp server",
  () => {
    let live: LiveServer;
    beforeAll(async () => {
      live = await startLive({ contextSize: 2048 });
    }, 90_000);
    afterAll(() => live?.stop(), 20_000);

    it("the server refuses the property as written", { timeout: 60_000 }, async () => {
      const response = await fetch(`${live.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "tiny",
          max_tokens: 2,
          messages: [{ role: "user", content: "hi" }],
          tools: [LIVE_TOOL],
        }),
      });
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(/type must be string, but is object/);
    });

    it("a run offering it calls the tool, which gets its own name", { timeout: 120_000 }, async () => {
      const got: Record<string, unknown>[] = [];
      const result = await createRuntime().runAgentLoop({
        config: {
          baseUrl: live.baseUrl,
          model: "tiny",
          maxTokens: 60,
          temperature: 0,
          requestTimeoutSeconds: 110,
        },
        messages: [{ role: "user", content: "Resolve the pointer #/a" }],
        tools: [LIVE_TOOL],
        dispatch: ({ args }) => {
          got.push(args as Record<string, unknown>);
          return "ok";
        },
      });
      expect(result.steps).toBe(2);
      expect(got).toHaveLength(1);
      // Required, so the model wrote it (as `$ref_`), and the tool is handed it as `$ref`.
      expect(Object.keys(got[0] ?? {})).toEqual(["$ref"]);
      expect(["#/a", "#/b"]).toContain(got[0]?.$ref);
    });
  },
);

/**
 * r92, the same random run: a parameter that is an open object (`{ type: "object" }` with no
 * properties, a map the host fills in) is asked of the model as JSON text, strict mode having no
 * way to send it; text that is not JSON (`".$"`, which the tiny model wrote) was handed to the tool
 * as that string, where its own schema takes an object — the tool ran on arguments it refuses.
 * Now the call is answered, naming the argument, and not run; JSON text still reaches it parsed.
 */
describe("r92: a value asked for as JSON text that does not read as one, over loopback", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const OPEN_TOOL: ToolDefinition = {
    type: "function",
    function: {
      name: "configure",
      parameters: {
        type: "object",
        properties: { name: { type: "string" }, opts: { type: "object", properties: {} } },
        required: ["name"],
      },
    },
  };

  async function run(args: string) {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "configure", arguments: args }] }, { content: "done" }],
    });
    const got: unknown[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0 },
      messages: [{ role: "user", content: "configure it" }],
      tools: [OPEN_TOOL],
      dispatch: ({ args }) => {
        got.push(args);
        return "ok";
      },
    });
    const answer = String(result.messages.find((m) => m.role === "tool")?.content);
    return { got, answer, result };
  }

  it("text that is not JSON is answered, naming the argument, and the tool is not run", async () => {
    const { got, answer, result } = await run('{"name":"a","opts":".$"}');
    expect(got).toEqual([]);
    expect(answer).toMatch(/configure call was not run.*"opts".*JSON text/);
    expect(result.stopReason).toBe("answered");
  });

  it("JSON text of an object reaches the tool parsed", async () => {
    const { got } = await run('{"name":"a","opts":"{\\"depth\\":2}"}');
    expect(got).toEqual([{ name: "a", opts: { depth: 2 } }]);
  });

  it("JSON text of another kind (an array where it takes an object) is answered too", async () => {
    const { got, answer } = await run('{"name":"a","opts":"[1]"}');
    expect(got).toEqual([]);
    expect(answer).toMatch(/"opts"/);
  });
});
