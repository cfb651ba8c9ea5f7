// The benchmark's catalogue (tool lists captured from published MCP servers by capture-catalog.ts),
// read by the benchmark and by the tests that need a real catalogue. A tool name two servers share
// is taken as `<server id>_<name>` on the later one, as a pool would.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CatalogServerLike } from "../src/catalog.js";

/** One captured server, as capture-catalog.ts writes it. */
export interface CapturedServer {
  id: string;
  label: string;
  package: string;
  version: string;
  tools: { name: string; description: string }[];
}

const folder = join(dirname(fileURLToPath(import.meta.url)), "catalog");

/** Every captured server, in file-name order. */
export function capturedServers(): CapturedServer[] {
  return readdirSync(folder)
    .filter((file) => file.endsWith(".json"))
    .sort()
    .map((file) => JSON.parse(readFileSync(join(folder, file), "utf8")) as CapturedServer);
}

/** The captured servers (all, or those with the ids given) as a catalogue. */
export function realCatalog(ids?: readonly string[]): CatalogServerLike[] {
  const taken = new Set<string>();
  return capturedServers()
    .filter((server) => !ids || ids.includes(server.id))
    .map((server) => ({
      name: server.id,
      label: server.label,
      tools: server.tools.map((tool) => {
        const name = taken.has(tool.name) ? `${server.id.replace(/\W/g, "_")}_${tool.name}` : tool.name;
        taken.add(name);
        return { name, description: tool.description };
      }),
    }));
}
