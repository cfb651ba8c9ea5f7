// The JSON-lines loop of the MCP servers written by hand over stdio for the tests (no SDK):
// initialize, tools/list and any other request answered alike; tools/call left to each server.
import { createInterface } from "node:readline";

/** Writes one JSON-RPC message as a line on stdout. */
export const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

/** A tool result of one text part. */
export const text = (t) => ({ content: [{ type: "text", text: t }] });

/**
 * Serves `tools` as the server `name`: `call(id, tool, args, lines)` answers each tools/call (it may
 * pause `lines`, the stdin reader, to stop reading). Returns the reader.
 */
export function serveLines(name, tools, call) {
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    if (!line.trim()) return;
    const { id, method, params } = JSON.parse(line);
    if (method === "initialize") {
      send({
        jsonrpc: "2.0",
        id,
        result: {
          protocolVersion: params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name, version: "1.0.0" },
        },
      });
    } else if (method === "tools/list") {
      send({ jsonrpc: "2.0", id, result: { tools } });
    } else if (method === "tools/call") {
      call(id, params.name, params.arguments ?? {}, lines);
    } else if (id !== undefined) {
      send({ jsonrpc: "2.0", id, result: {} });
    }
  });
  return lines;
}
