#!/usr/bin/env node
// An MCP server written by hand, line by line over stdio (no SDK), for what an SDK server will not
// do on cue: write one answer larger than a client takes, with its id first or last; page its
// tools without end; answer slowly from tools that are not read-only, or never. Run by the tests.
//
//   PAGES=1      tools/list always answers with a nextCursor, each page after PAGE_MS (default 0)
//   ID_FIRST=1   answers are written {"jsonrpc","id","result"}; otherwise as the SDK writes them,
//                {"result","jsonrpc","id"}, the id last
//   HOSTILE_NAMES=1  lists tools named with 5,000 characters and with terminal escapes, a line
//                break, a NUL and a right-to-left override (the SDK checks nothing a server
//                lists), and `twice` twice (first plain, then read-only); a call to one answers
//                with a JSON-RPC error, or never where the name starts with `hang`
//   PROTO_SCHEMA=1  lists `proto_args` too, whose input schema has a property named `__proto__`
//                (and one named `name`, both required), and whose output schema has one; a call
//                answers with the arguments it was given as text and as structured content
import { createInterface } from "node:readline";

const PAGES = process.env.PAGES === "1";
const PAGE_MS = Number(process.env.PAGE_MS ?? 0);
const ID_FIRST = process.env.ID_FIRST === "1";

const write = (text) => process.stdout.write(`${text}\n`);
const send = (message) => write(JSON.stringify(message));
const answer = (id, result) =>
  ID_FIRST ? send({ jsonrpc: "2.0", id, result }) : send({ result, jsonrpc: "2.0", id });
const text = (t) => ({ content: [{ type: "text", text: t }] });
const object = (properties = {}) => ({ type: "object", properties });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const TOOLS = [
  { name: "echo", inputSchema: object({ text: { type: "string" } }), annotations: { readOnlyHint: true } },
  {
    name: "write_slow",
    description: "Sleeps `ms`, then answers.",
    inputSchema: object({ ms: { type: "number" } }),
  },
  { name: "write_hang", description: "Never answers.", inputSchema: object() },
  {
    name: "big",
    description: "Answers with `bytes` characters of text.",
    inputSchema: object({ bytes: { type: "number" } }),
    annotations: { readOnlyHint: true },
  },
  {
    name: "odd_content",
    description:
      "Answers with `count` content parts of `type` (default `video`, a type MCP has not; `text` writes them with no text).",
    inputSchema: object({ count: { type: "number" }, type: { type: "string" } }),
    annotations: { readOnlyHint: true },
  },
  {
    name: "mixed_content",
    description:
      "Answers with a text part, a `video` part (none when `plain`), a small image and a text part, and structured content holding a key `__proto__`.",
    inputSchema: object({ plain: { type: "boolean" } }),
    annotations: { readOnlyHint: true },
  },
  {
    name: "long_error",
    description: "Answers with a JSON-RPC error whose message is `bytes` characters.",
    inputSchema: object({ bytes: { type: "number" } }),
    annotations: { readOnlyHint: true },
  },
  {
    name: "big_notice",
    description: "Sends a log notification of `bytes` characters, then answers small.",
    inputSchema: object({ bytes: { type: "number" } }),
    annotations: { readOnlyHint: true },
  },
];

const LONG = "x".repeat(5000);
const CONTROL = "wipe\u001b[2J\u001b[31mred\nnext line\u0000nul\u202eevil";
const HOSTILE_NAMES = [
  ...[LONG, CONTROL, `hang${LONG}`, `hang${CONTROL}`].map((name) => ({ name, inputSchema: object() })),
  { name: "twice", description: "The first.", inputSchema: object({ a: { type: "string" } }) },
  {
    name: "twice",
    description: "The second.",
    inputSchema: object({ b: { type: "number" } }),
    annotations: { readOnlyHint: true },
  },
];

// Parsed, so `__proto__` is a key of its own in each schema, as a server's JSON reads.
const PROTO_TOOL = JSON.parse(
  JSON.stringify({
    name: "proto_args",
    description: "Answers with its arguments.",
    annotations: { readOnlyHint: true },
  }).replace(
    /}$/,
    ',"inputSchema":{"type":"object","properties":{"__proto__":{"type":"string","description":"The odd one."},"name":{"type":"string"}},"required":["__proto__","name"]},"outputSchema":{"type":"object","properties":{"__proto__":{"type":"string"},"name":{"type":"string"}}}}',
  ),
);

let running = 0;
let most = 0;

createInterface({ input: process.stdin }).on("line", async (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const { id, method, params } = message;
  if (id === undefined) return;
  if (method === "initialize") {
    return answer(id, {
      protocolVersion: params.protocolVersion,
      capabilities: { tools: { listChanged: true }, logging: {} },
      serverInfo: { name: "raw", version: "1.0.0" },
    });
  }
  if (method === "tools/list" && PAGES) {
    const page = Number(params?.cursor ?? 0);
    await sleep(PAGE_MS);
    return answer(id, {
      tools: [{ name: `page${page}`, inputSchema: object() }],
      nextCursor: String(page + 1),
    });
  }
  if (method === "tools/list") {
    if (process.env.PROTO_SCHEMA === "1") return answer(id, { tools: [...TOOLS, PROTO_TOOL] });
    return answer(id, { tools: process.env.HOSTILE_NAMES === "1" ? HOSTILE_NAMES : TOOLS });
  }
  if (method !== "tools/call") return answer(id, {});
  if (process.env.HOSTILE_NAMES === "1") {
    if (String(params.name).startsWith("hang")) return;
    return send({ jsonrpc: "2.0", id, error: { code: -32603, message: "refused" } });
  }
  const args = params.arguments ?? {};
  switch (params.name) {
    case "echo":
      return answer(id, text(String(args.text)));
    case "write_slow": {
      running++;
      most = Math.max(most, running);
      await sleep(Number(args.ms ?? 1000));
      running--;
      return answer(id, text(`slept; most at once: ${most}`));
    }
    case "write_hang":
      return;
    case "big":
      return answer(id, text("x".repeat(Number(args.bytes))));
    case "odd_content":
      return answer(id, {
        content: Array.from({ length: Number(args.count) }, () => ({
          type: args.type ?? "video",
          url: "file:///v.mp4",
        })),
      });
    case "proto_args":
      return answer(id, { content: [{ type: "text", text: JSON.stringify(args) }], structuredContent: args });
    case "mixed_content":
      return answer(id, {
        content: [
          { type: "text", text: "before" },
          ...(args.plain ? [] : [{ type: "video", url: "file:///v.mp4", mimeType: "video/mp4" }]),
          { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
          { type: "text", text: "after" },
        ],
        // Parsed, so `__proto__` is a key of its own, as a server's JSON reads.
        structuredContent: JSON.parse('{"__proto__":{"polluted":true},"frames":24}'),
      });
    case "long_error":
      return send({ jsonrpc: "2.0", id, error: { code: -32603, message: "e".repeat(Number(args.bytes)) } });
    case "big_notice":
      send({
        jsonrpc: "2.0",
        method: "notifications/message",
        params: { level: "info", data: "y".repeat(Number(args.bytes)) },
      });
      return answer(id, text("after the notice"));
    default:
      return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${params.name}` } });
  }
});
