#!/usr/bin/env node
// An MCP server written by hand over stdio (no SDK) for the r72 review's tests: a tool whose
// parameters are named after its credential (API_TOKEN, from its environment), as a server that
// takes a per-account field keyed by its token does.
//
//   `args`  takes `q` (required), `<token>` and `x_<token>` (optional strings), `x_***` (an optional
//           string, named as the masked form of `x_<token>` reads) and `opts` (an optional object
//           with an optional `<token>`), and answers with the arguments it was given, as JSON text
//           with the token written `<token>` (the pool masks the token itself in what it answers).
//   `free`  (r73a) as `args` does, its parameters `<token>` (an optional string), `bag` (a free-form
//           object: `{type:"object"}`, no properties), `map` (an object whose `additionalProperties`
//           are objects with an optional `<token>`) and `list` (an array of `$defs/item`, an object
//           with an optional `<token>`).
import { send, serveLines, text } from "./line-server.mjs";

const token = process.env.API_TOKEN ?? "no-token";

const TOOLS = [
  {
    name: "args",
    description: "Answers with the arguments it was given.",
    inputSchema: {
      type: "object",
      properties: {
        q: { type: "string" },
        [token]: { type: "string", description: "The account's field" },
        [`x_${token}`]: { type: "string" },
        "x_***": { type: "integer" },
        opts: { type: "object", properties: { [token]: { type: "string" } } },
      },
      required: ["q"],
    },
  },
  {
    name: "free",
    description: "Answers with the arguments it was given.",
    inputSchema: {
      type: "object",
      properties: {
        [token]: { type: "string" },
        bag: { type: "object" },
        map: {
          type: "object",
          additionalProperties: { type: "object", properties: { [token]: { type: "string" } } },
        },
        list: { type: "array", items: { $ref: "#/$defs/item" } },
      },
      $defs: { item: { type: "object", properties: { [token]: { type: "string" } } } },
    },
  },
];

serveLines("review72", TOOLS, (id, name, args) => {
  if (name === "args" || name === "free")
    send({ jsonrpc: "2.0", id, result: text(JSON.stringify(args).replaceAll(token, "<token>")) });
  else send({ jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${name}` } });
});
