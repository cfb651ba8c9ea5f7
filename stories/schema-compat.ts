// Story (a), schema-compat alone: a host holding the `openai` SDK's tool types makes them acceptable
// to a strict server with `sanitizeTools`, reads a sanitized schema, and sends the result through the
// SDK as it is. Guided by packages/schema-compat/README.md; installs @loopwright/schema-compat and openai.
import assert from "node:assert/strict";
import { dropOptionalNulls, isGrammarError, relaxTools, sanitizeTools } from "@loopwright/schema-compat";
import { startServer } from "@loopwright/testkit";
import OpenAI from "openai";
import type { ChatCompletionFunctionTool, ChatCompletionTool } from "openai/resources/chat/completions";

const searchSchema = {
  type: "object",
  properties: { path: { type: "string" }, glob: { type: "string", pattern: "\\*" } },
  required: ["path"],
};
const functionTools: ChatCompletionFunctionTool[] = [
  {
    type: "function",
    function: { name: "search.files", description: "Find files", parameters: searchSchema, strict: null },
  },
];
const mixed: ChatCompletionTool[] = [
  ...functionTools,
  { type: "custom", custom: { name: "sql", description: "Run a query" } },
];

// SDK function tools in: the element type stays a function tool, so `.function` is there directly.
const declared = sanitizeTools(functionTools, {
  onRename: (from, to) => console.log(`renamed ${from} -> ${to}`),
});
const parameters = declared[0].function.parameters;
console.log(JSON.stringify(parameters));
assert.equal(declared[0].function.name, "search_files");
assert.deepEqual(parameters.required, ["path", "glob"]);
assert.equal(parameters.additionalProperties, false);

// A mixed SDK array: `type === "function"` narrows, and the other tools pass through untouched.
const sanitized = sanitizeTools(mixed);
const names: string[] = [];
for (const tool of sanitized) {
  if (tool.type === "function") names.push(tool.function.name, String(tool.function.parameters.type));
  else names.push(`${tool.type}:${tool.custom.name}`);
}
assert.deepEqual(names, ["search_files", "object", "custom:sql"]);

// The arguments a strict server made the model write, read back against the original schema.
assert.deepEqual(dropOptionalNulls({ path: "src", glob: null }, searchSchema), { path: "src" });

// Out to the SDK with no cast: the sanitized array, then the relaxed one after a grammar refusal.
const server = await startServer({
  replies: [
    {
      type: "error",
      status: 400,
      body: {
        error: {
          message: "JSON schema conversion failed: Unrecognized schema",
          type: "invalid_request_error",
        },
      },
    },
    { content: "found 3 files" },
  ],
});
try {
  const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test", maxRetries: 0 });
  const ask = (tools: ChatCompletionTool[]) =>
    client.chat.completions.create({
      model: "sim",
      messages: [{ role: "user", content: "find the tests" }],
      tools,
    });
  let reply: OpenAI.Chat.Completions.ChatCompletion;
  try {
    reply = await ask(sanitized);
    assert.fail("the first request should have been refused");
  } catch (error) {
    assert.ok(isGrammarError(error), `not read as a grammar refusal: ${String(error)}`);
    reply = await ask(relaxTools(sanitized));
  }
  assert.equal(reply.choices[0]?.message.content, "found 3 files");
  const [strictBody, relaxedBody] = server.chatRequests.map((request) => JSON.stringify(request.body));
  assert.ok(strictBody?.includes('"pattern":"^'), "the strict request keeps the anchored pattern");
  assert.ok(relaxedBody?.includes('"name":"search_files"') && !relaxedBody.includes('"pattern"'));
  console.log("story schema-compat: ok");
} finally {
  await server.close();
}
