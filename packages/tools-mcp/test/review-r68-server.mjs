#!/usr/bin/env node
// A small SDK server for the r68 review's tests: it waits START_MS before it answers anything (a
// slow start: a download, a database), and lists a tool whose one-line description has an emoji
// standing where the catalogue's cut falls (its first argument, or a default one of 198 letters and 🙂).
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const startMs = Number(process.env.START_MS ?? 0);
// `--lone`: a description and a parameter's description each cut inside an emoji (half a pair).
const lone = process.argv[2] === "--lone";
const description = lone
  ? "Finds files \ud83d"
  : (process.argv[2] ?? `${"a".repeat(198)}🙂 and more after it`);
const server = new Server({ name: "review", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "hook",
      description,
      inputSchema: {
        type: "object",
        properties: { event: { type: "string", ...(lone ? { description: "\udc00 the event" } : {}) } },
      },
      annotations: { readOnlyHint: true },
    },
    {
      name: "lines",
      description: "Answers with `count` lines of `width` characters (a log dump, a file listing).",
      inputSchema: {
        type: "object",
        properties: { count: { type: "number" }, width: { type: "number" } },
      },
      annotations: { readOnlyHint: true },
    },
    {
      name: "env",
      description: "Answers with the names of its environment variables.",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === "lines") {
    const { count = 0, width = 1 } = request.params.arguments ?? {};
    return { content: [{ type: "text", text: `${"x".repeat(width)}\n`.repeat(count) }] };
  }
  const text =
    request.params.name === "env"
      ? JSON.stringify(Object.keys(process.env).sort())
      : `hook ran for ${String(request.params.arguments?.event)}`;
  return { content: [{ type: "text", text }] };
});
if (startMs > 0) await new Promise((resolve) => setTimeout(resolve, startMs));
await server.connect(new StdioServerTransport());
