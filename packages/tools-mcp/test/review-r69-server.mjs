#!/usr/bin/env node
// A small SDK server for the r69 review's tests. Its tool list has a version: the `bump` tool moves
// it to 1, tells the client (tools/list_changed), moves it to 2 50 ms later and tells it again; a
// listing of version 1 is answered 400 ms late (a listing that reads a slow backend), so the
// client's first listing lands after its second. `refuse` answers with a JSON-RPC error whose
// message holds half a surrogate pair. With CHANGE_WHILE_LISTING set, the first listing (version 0)
// is answered after a list_changed for version 2. `lone` answers with half a surrogate pair in its
// text and its structured content. `die` exits; with SLOW_RESTART_FILE set, every start after the
// first (that file exists by then) takes 1.5 s, or with FAIL_RESTART set too, fails.
import { existsSync, writeFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

const marker = process.env.SLOW_RESTART_FILE;
if (marker) {
  if (existsSync(marker) && process.env.FAIL_RESTART) {
    process.stderr.write("cannot start again\n");
    process.exit(1);
  }
  if (existsSync(marker)) await new Promise((resolve) => setTimeout(resolve, 1500));
  else writeFileSync(marker, "started");
}
const label = process.env.LABEL ?? "server";
let version = 0;
const tool = (name) => ({ name, description: `${name} of ${label}`, inputSchema: { type: "object" } });
const server = new Server(
  { name: "review69", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);
let listed = 0;
server.setRequestHandler(ListToolsRequestSchema, async () => {
  const seen = version;
  listed++;
  if (process.env.CHANGE_WHILE_LISTING && listed === 1) {
    // Tools registered while the first listing is answered: the change is told before the answer.
    version = 2;
    await server.sendToolListChanged();
  }
  if (seen === 1) await new Promise((resolve) => setTimeout(resolve, 400));
  return {
    tools: [
      tool("search"),
      tool("bump"),
      tool("lone"),
      tool("die"),
      tool("refuse"),
      tool("flood"),
      tool("listed"),
      tool(`v${seen}`),
    ],
  };
});
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const name = request.params.name;
  if (name === "bump") {
    version = 1;
    await server.sendToolListChanged();
    await new Promise((resolve) => setTimeout(resolve, 50));
    version = 2;
    await server.sendToolListChanged();
    return { content: [{ type: "text", text: "bumped" }] };
  }
  if (name === "lone")
    return {
      content: [{ type: "text", text: "cut inside an emoji \ud83d" }],
      structuredContent: { note: "\udc00 half" },
    };
  if (name === "flood") {
    // A server that says its tools changed 2,000 times in a row; `listed` answers how often it
    // was asked for its tools.
    for (let i = 0; i < 2000; i++) void server.sendToolListChanged();
    return { content: [{ type: "text", text: "flooded" }] };
  }
  if (name === "listed") return { content: [{ type: "text", text: String(listed) }] };
  if (name === "refuse") throw new McpError(-32602, "no such file: caf\ud83d");
  if (name === "die") setTimeout(() => process.exit(0), 10);
  return { content: [{ type: "text", text: `${name} ran on ${label}` }] };
});
await server.connect(new StdioServerTransport());
