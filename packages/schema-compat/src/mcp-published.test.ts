import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkStrictSchema } from "./check-strict.js";
import { isGrammarError } from "./grammar-error.js";
import { sanitizeSchema } from "./sanitize-schema.js";
import { relaxTools, sanitizeTools } from "./sanitize-tools.js";
import type { FunctionToolLike, JsonSchema } from "./types.js";

const here = dirname(fileURLToPath(import.meta.url));

interface McpTool {
  name: string;
  description?: string;
  inputSchema: unknown;
  outputSchema?: unknown;
}
interface Published {
  server: string;
  source: string;
  tools: McpTool[];
}

/** Schemas as GitHub's, fetch's, sequential-thinking's and Lark's MCP tools publish them (sources in the file). */
const published = (
  JSON.parse(readFileSync(join(here, "../test-fixtures/mcp-published.tools.json"), "utf8")) as {
    servers: Published[];
  }
).servers;
const allTools = published.flatMap((s) => s.tools);
const tool = (name: string) => allTools.find((t) => t.name === name) as McpTool;

const asFunction = (t: McpTool): FunctionToolLike => ({
  type: "function",
  function: { name: t.name, description: t.description, parameters: t.inputSchema },
});

type Props = Record<string, JsonSchema>;
const propsOf = (schema: JsonSchema) => schema.properties as Props;

describe("schemas published by popular MCP servers", () => {
  for (const { server, tools } of published) {
    it(`puts every ${server} tool into the strict subset and its relaxed form`, () => {
      const sanitized = sanitizeTools(tools.map(asFunction)) as FunctionToolLike[];
      const relaxed = relaxTools(tools.map(asFunction)) as FunctionToolLike[];
      expect(sanitized.map((t) => t.function.name)).toEqual(tools.map((t) => t.name));
      for (const t of sanitized)
        expect(checkStrictSchema(t.function.parameters), t.function.name).toEqual([]);
      for (const t of relaxed) {
        expect(checkStrictSchema(t.function.parameters, { relaxed: true }), t.function.name).toEqual([]);
      }
      for (const t of tools) {
        if (t.outputSchema === undefined) continue;
        // An output schema is what a side task would send as a response_format.
        expect(checkStrictSchema(sanitizeSchema(t.outputSchema)), `${t.name} output`).toEqual([]);
        expect(sanitizeSchema(sanitizeSchema(t.outputSchema))).toEqual(sanitizeSchema(t.outputSchema));
      }
    });
  }

  it("keeps fetch's pydantic bounds, format and defaults where the model can read them", () => {
    const params = sanitizeSchema(tool("fetch").inputSchema);
    const { url, max_length: maxLength, raw } = propsOf(params) as Props;
    expect(url).toEqual({
      type: "string",
      description: "URL to fetch. Format: uri. At least 1 character.",
    });
    expect(maxLength).toEqual({
      type: ["integer", "null"],
      exclusiveMinimum: 0,
      exclusiveMaximum: 1000000,
      description: "Maximum number of characters to return. Default: 5000.",
    });
    expect(raw?.description).toContain("Default: false.");
    expect(params.required).toEqual(["url", "max_length", "start_index", "raw"]);
  });

  it("reads pydantic's Optional[str] = None (mcp-server-git) as one nullable string with its default", () => {
    const params = sanitizeSchema(tool("git_branch").inputSchema);
    expect(propsOf(params).contains).toEqual({
      type: ["string", "null"],
      description:
        "The commit sha that branch should contain. Do not pass anything to this param if no commit sha is specified. Default: null.",
    });
    expect(propsOf(sanitizeSchema(tool("git_create_branch").inputSchema)).base_branch).toEqual({
      type: ["string", "null"],
      description: "Base Branch. Default: null.",
    });
  });

  it("reads zod's optional `anyOf: [{ not: {} }, T]` as T, not as any value", () => {
    const params = sanitizeSchema(tool("base_view_set_filter").inputSchema);
    expect(params).not.toHaveProperty("$schema");
    const conditions = propsOf(params).conditions as JsonSchema;
    const tupleItems = (conditions.items as JsonSchema).items as JsonSchema;
    const branches = tupleItems.anyOf as JsonSchema[];
    // Only the value alternatives the schema lists: no bare scalar from the `not: {}` branch.
    expect(branches).not.toContainEqual({ type: "boolean" });
    expect(branches).not.toContainEqual({ type: "number" });
    expect(branches.filter((b) => b.type === "boolean")).toHaveLength(1);
    expect(sanitizeSchema({ type: "object", properties: { gone: { not: {} } } })).toEqual({
      type: "object",
      properties: { gone: { type: "null", description: "Not used; always null." } },
      required: ["gone"],
      additionalProperties: false,
    });
  });

  it("inlines the GitHub output schema's $defs and keeps its nullable arrays", () => {
    const out = sanitizeSchema(tool("create_repository_ruleset").outputSchema);
    expect(JSON.stringify(out)).not.toContain("$ref");
    const conditions = propsOf(out).conditions as JsonSchema;
    const refName = propsOf(conditions).ref_name as JsonSchema;
    expect(propsOf(refName).include).toEqual({ type: ["array", "null"], items: { type: "string" } });
    expect(refName.type).toEqual(["object", "null"]);
  });
});

describe("the published schemas against a llama.cpp server (testkit, real HTTP)", () => {
  let server: TestServer;
  let client: OpenAI;
  beforeAll(async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 65_536 },
      replies: () => ({ content: "ok" }),
    });
    client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test", maxRetries: 0 });
  });
  afterAll(async () => {
    await server.close();
  });

  const send = (tools: unknown[]) =>
    client.chat.completions.create({
      model: "tiny.gguf",
      messages: [{ role: "user", content: "hi" }],
      tools: tools as OpenAI.ChatCompletionTool[],
    });

  it("is refused with a grammar error for zod's raw `not: {}` schema, and accepts it relaxed", async () => {
    const raw = [asFunction(tool("base_view_set_filter"))];
    const refusal = await send(raw).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(OpenAI.APIError);
    expect(isGrammarError(refusal)).toBe(true);
    const reply = await send(relaxTools(raw));
    expect(reply.choices[0]?.message.content).toBe("ok");
  });

  it("accepts every published tool, sanitized and relaxed, in one request", async () => {
    for (const tools of [sanitizeTools(allTools.map(asFunction)), relaxTools(allTools.map(asFunction))]) {
      const reply = await send(tools);
      expect(reply.choices[0]?.message.content).toBe("ok");
    }
    const sent = server.requests.at(-1)?.body as { tools: FunctionToolLike[] };
    expect(sent.tools.map((t) => t.function.name)).toEqual(allTools.map((t) => t.name));
  });
});
