// Type tests: pool options read back from JSON or a database row, every unset column `null`, compile
// as they are handed to createMcpPool (the runtime reads each `null` as not given; config.test.ts
// shows it for every option). Checked by `pnpm type-check` (tsc includes src); nothing here runs.
import { createMcpPool, type McpPoolOptions } from "./index.js";

/** What a nullable column holds once read back: the value, or `null`. */
type Row<T> = { [K in keyof T]-?: Exclude<T[K], undefined> | null };

const row: Row<McpPoolOptions> = {
  timeoutMs: null,
  connectTimeoutMs: null,
  toolNames: null,
  images: null,
  maxRestarts: null,
  stderrLines: null,
  maxMessageBytes: null,
  serializeWrites: null,
  reaper: null,
  hooks: null,
  hookTimeoutMs: null,
  onNotice: null,
  onToolsChanged: null,
  elicit: null,
  clientInfo: null,
};

export function handedOver() {
  createMcpPool({ mcpServers: {} }, row);
  createMcpPool({ mcpServers: {} }, null);
  createMcpPool({ mcpServers: {} }, { timeoutMs: null, toolNames: null });
}

// An option's own type still holds: a null is not given, not any value.
// @ts-expect-error toolNames is "prefixed" or "plain" (or null)
export const wrong: McpPoolOptions = { toolNames: "short" };
