#!/usr/bin/env node
// A Streamable HTTP MCP server on the official SDK (stateless: a server and transport per request)
// whose tools are given as JSON in HTTP_TOOLS: `[{ entry, result }]`, each tool's `tools/list`
// entry and `tools/call` result sent exactly as given. GET /seen answers the headers of every MCP
// request received so far. Prints `listening <port>` once it listens on a free loopback port. Run
// in a process of its own, so a test that pollutes its own Object.prototype does not pollute it.
import { createServer } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const tools = JSON.parse(process.env.HTTP_TOOLS ?? "[]");
const seen = [];
const http = createServer((request, response) => {
  if (request.method === "GET" && request.url === "/seen") {
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(seen));
    return;
  }
  seen.push(request.headers);
  const server = new Server({ name: "http-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.map((t) => t.entry) }));
  server.setRequestHandler(
    CallToolRequestSchema,
    (call) => tools.find((t) => t.entry.name === call.params.name)?.result ?? { content: [] },
  );
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  response.on("close", () => {
    void transport.close();
    void server.close();
  });
  void server.connect(transport).then(() => transport.handleRequest(request, response));
});
http.listen(0, "127.0.0.1", () => console.log(`listening ${http.address().port}`));
