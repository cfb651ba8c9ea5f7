#!/usr/bin/env node
// A small MCP server on the official SDK, for what the published servers cannot be made to do on
// cue: hang until cancelled (and record the cancellation), change its tools, fail at start, and
// show whether writes overlap. Run by the tests over stdio.
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

if (process.argv.includes("--fail")) {
  console.error("fixture: loading configuration");
  console.error(`fixture: started with ${process.argv.slice(2).join(" ")}`);
  console.error(`fixture: refusing token=${process.env.API_TOKEN ?? ""}`);
  // A long line whose credential straddles the 500-character cut of a kept stderr line.
  console.error(`${"x".repeat(480)} token=${process.env.API_TOKEN ?? ""}`);
  console.error("fixture: cannot start without a database");
  process.exit(3);
}

if (process.argv.includes("--fail-encoded")) {
  // The credential as servers and libraries really write it: in a URL, in JSON, base64 in a Basic
  // header and alone, a hex key in capitals, wrapped over two lines, and cut across two writes.
  const token = process.env.API_TOKEN ?? "";
  const hex = process.env.HEX_TOKEN ?? "";
  console.error(`fixture: GET https://api.example/v1/items?key=${encodeURIComponent(token)} failed`);
  console.error(`fixture: config ${JSON.stringify({ token })}`);
  console.error(`fixture: php config {"token":${JSON.stringify(token).replaceAll("/", "\\/")}}`);
  console.error(`fixture: Authorization: Basic ${Buffer.from(`user:${token}`).toString("base64")}`);
  console.error(`fixture: token as base64 ${Buffer.from(token).toString("base64")}`);
  console.error(`fixture: key ${hex.toUpperCase()} refused`);
  console.error(`fixture: wrapped token ${token.slice(0, 10)}\n${token.slice(10)} (end)`);
  process.stderr.write(`fixture: chunked token ${token.slice(0, 7)}`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  process.stderr.write(`${token.slice(7)} (end)\n`);
  console.error("fixture: cannot start without a database");
  process.exit(3);
}

const log = process.env.CANCEL_LOG;
const object = (properties = {}, required = []) => ({ type: "object", properties, required });
const tools = [
  {
    name: "hang",
    description: "Never answers until cancelled.",
    inputSchema: object(),
    annotations: { readOnlyHint: true },
  },
  { name: "add_tool", description: "Adds a tool called added_tool.", inputSchema: object() },
  { name: "fail", description: "Always fails.", inputSchema: object(), annotations: { readOnlyHint: true } },
  {
    name: "refuse",
    description: "Throws (a JSON-RPC error, not an isError result) quoting its API_TOKEN.",
    inputSchema: object(),
    annotations: { readOnlyHint: true },
  },
  {
    name: "refuse_encoded",
    description: "Throws quoting its API_TOKEN in JSON and in a URL.",
    inputSchema: object(),
    annotations: { readOnlyHint: true },
  },
  {
    name: "whoami",
    description: "Says its process id.",
    inputSchema: object(),
    annotations: { readOnlyHint: true },
  },
  {
    name: "write_note",
    description: "Writes a note (slowly), and says how many writes were running.",
    inputSchema: object({ text: { type: "string" } }, ["text"]),
    annotations: { readOnlyHint: false, idempotentHint: false },
  },
  {
    name: "read_note",
    description: "Reads the notes (slowly), and says how many reads were running.",
    inputSchema: object({ tag: { type: "string", description: "optional filter" } }),
    annotations: { readOnlyHint: true },
  },
  {
    name: "hook",
    description: "A hook: adds context, and vetoes a compaction.",
    inputSchema: object({ event: { type: "string" }, input: {}, context: {} }, ["event"]),
  },
  {
    name: "set.flag",
    description: "Sets a flag (idempotent). Its name has a dot, which OpenAI refuses.",
    inputSchema: object({ on: { type: "boolean" } }, ["on"]),
    annotations: { idempotentHint: true },
  },
];
if (process.argv.includes("--leaky")) {
  tools.push({
    name: "leak",
    description: `Answers with its API_TOKEN (${process.env.API_TOKEN ?? ""}): in text, a resource, a link and structured content (form: all), in structured content alone (structured), or as an isError result (error).`,
    inputSchema: object(
      {
        form: {
          type: "string",
          enum: ["all", "structured", "error"],
          description: `token ${process.env.API_TOKEN ?? ""}`,
        },
      },
      ["form"],
    ),
    annotations: { readOnlyHint: true },
  });
}
if (process.argv.includes("--deep")) {
  tools.push({
    name: "deep",
    description:
      "Answers with structured content nested `depth` levels deep, its API_TOKEN at the top and at the bottom; with text, a line of text too.",
    inputSchema: object({ depth: { type: "integer" }, text: { type: "boolean" } }, ["depth"]),
    annotations: { readOnlyHint: true },
  });
}
/** Stands for the deep tool's nested value until the answer is written (JSON.stringify cannot write that depth). */
const DEEP = "fixture:deep";
let writes = 0;
let reads = 0;
let maxWrites = 0;
let maxReads = 0;

const server = new Server(
  { name: "fixture", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args = {} } = request.params;
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  switch (name) {
    case "hang":
      return new Promise((_resolve, reject) => {
        extra.signal.addEventListener("abort", () => {
          if (log) appendFileSync(log, `cancelled ${extra.requestId}\n`);
          reject(new Error("cancelled"));
        });
      });
    case "add_tool":
      if (!tools.some((t) => t.name === "added_tool")) {
        tools.push({ name: "added_tool", description: "Appeared later.", inputSchema: object() });
      }
      await server.sendToolListChanged();
      return text("added");
    case "added_tool":
      return text("the added tool ran");
    case "fail":
      return { content: [{ type: "text", text: "the disk is full" }], isError: true };
    case "refuse":
      throw new Error(`refusing token=${process.env.API_TOKEN ?? ""}`);
    case "refuse_encoded": {
      const token = process.env.API_TOKEN ?? "";
      throw new Error(
        `refusing ${JSON.stringify({ token })} from https://api.example/v1?key=${encodeURIComponent(token)}`,
      );
    }
    case "whoami":
      return text(String(process.pid));
    case "write_note": {
      writes++;
      maxWrites = Math.max(maxWrites, writes);
      await sleep(150);
      writes--;
      return text(`wrote ${String(args.text)}; most writes at once: ${maxWrites}`);
    }
    case "read_note": {
      reads++;
      maxReads = Math.max(maxReads, reads);
      await sleep(150);
      reads--;
      return text(
        `tag ${args.tag === undefined ? "absent" : JSON.stringify(args.tag)}; most reads at once: ${maxReads}`,
      );
    }
    case "hook":
      return {
        content: [
          { type: "text", text: `context for ${args.event} in session ${args.context?.session?.id ?? "?"}` },
        ],
        structuredContent: { veto: args.event === "beforeCompact" },
      };
    case "leak": {
      const token = process.env.API_TOKEN ?? "";
      const structuredContent = {
        token,
        nested: { list: [`Bearer ${token}`] },
        mode: process.env.MODE ?? "",
      };
      if (args.form === "structured") return { content: [], structuredContent };
      if (args.form === "error")
        return { content: [{ type: "text", text: `refused: ${JSON.stringify({ token })}` }], isError: true };
      return {
        content: [
          { type: "text", text: `my token is ${token}; mode ${process.env.MODE ?? ""}` },
          {
            type: "resource",
            resource: {
              uri: `secret://creds?key=${encodeURIComponent(token)}`,
              mimeType: "text/plain",
              text: `token=${token}`,
            },
          },
          {
            type: "resource_link",
            uri: `https://api.example/v1?key=${encodeURIComponent(token)}`,
            name: "creds",
            description: `base64 ${Buffer.from(token).toString("base64")}`,
          },
        ],
        structuredContent,
      };
    }
    case "deep": {
      const token = process.env.API_TOKEN ?? "";
      return {
        content: args.text ? [{ type: "text", text: `a result ${args.depth} levels deep` }] : [],
        structuredContent: { token, next: DEEP, depth: args.depth },
      };
    }
    case "set.flag":
      return text(`flag ${args.on ? "on" : "off"}`);
    default:
      return { content: [{ type: "text", text: `no tool ${name}` }], isError: true };
  }
});
const transport = new StdioServerTransport();
const send = transport.send.bind(transport);
transport.send = async (message) => {
  const structured = message.result?.structuredContent;
  if (structured?.next !== DEEP) return send(message);
  // Written by hand: each level is {"next": …}, with {"token": …} at the bottom.
  const bottom = JSON.stringify({ token: structured.token });
  const nested = `${'{"next":'.repeat(structured.depth)}${bottom}${"}".repeat(structured.depth)}`;
  const line = JSON.stringify(message).replace(JSON.stringify(DEEP), nested);
  await new Promise((resolve) => process.stdout.write(`${line}\n`, resolve));
};
await server.connect(transport);
