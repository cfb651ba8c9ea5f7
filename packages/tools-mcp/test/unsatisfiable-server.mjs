#!/usr/bin/env node
// An MCP server written by hand over stdio (no SDK) whose one tool, `pick`, declares a parameter no
// value satisfies (an integer at least 5 and at most 3), as a server with a bug in its schema does.
// It answers a call with the arguments it was given, as JSON text.
import { send, serveLines, text } from "./line-server.mjs";

const TOOLS = [
  {
    name: "pick",
    description: "Picks a number.",
    inputSchema: {
      type: "object",
      properties: { v: { type: "integer", minimum: 5, maximum: 3 } },
      required: ["v"],
    },
  },
];

serveLines("unsatisfiable", TOOLS, (id, _name, args) =>
  send({ jsonrpc: "2.0", id, result: text(JSON.stringify(args)) }),
);
