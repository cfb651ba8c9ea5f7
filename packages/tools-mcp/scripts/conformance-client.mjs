#!/usr/bin/env node
// The client the MCP conformance runner starts: `node conformance-client.mjs <serverUrl>`, with the
// scenario in MCP_CONFORMANCE_SCENARIO. It drives the built pool (dist/) the way a host would:
// connect, list the tools, call each one, close.
import { createMcpPool } from "../dist/index.js";

const url = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
if (!url) {
  console.error("usage: conformance-client.mjs <server-url>");
  process.exit(2);
}

const pool = createMcpPool([{ name: "conformance", type: "http", url }], {
  toolNames: "plain",
  timeoutMs: 10_000,
  connectTimeoutMs: 20_000,
  onNotice: (text) => console.error(`notice: ${text}`),
  // Accept every question with no fields of our own: the pool fills in the schema's defaults.
  elicit: async () => ({ action: "accept", content: {} }),
});
let failed = false;
try {
  const [status] = await pool.connect();
  if (status?.state !== "connected") throw status?.error ?? new Error("not connected");
  console.log(`scenario ${scenario}: connected (${status.transport}), ${status.tools} tools`);
  for (const tool of await pool.tools()) {
    const output = await pool
      .callTool(tool.function.name, {})
      .catch((error) => ({ ok: false, text: String(error?.message ?? error) }));
    console.log(`${tool.function.name}: ${output.ok ? "ok" : "error"}: ${output.text.slice(0, 200)}`);
  }
} catch (error) {
  failed = true;
  console.error(`failed: ${error?.message ?? error}`);
} finally {
  await pool.close();
}
process.exit(failed ? 1 : 0);
