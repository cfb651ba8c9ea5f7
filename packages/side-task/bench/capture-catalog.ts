// Captures the retrieval benchmark's catalogue from real, published MCP servers: each is started
// over stdio with the official SDK, asked `tools/list`, and its tools' names and descriptions are
// written to bench/catalog/<id>.json with the package, version and date they came from. Nothing is
// edited by hand. Run with the folder the servers are installed in (npm install --ignore-scripts):
//
//   node --import tsx bench/capture-catalog.ts /path/to/install
//
// The two servers the repository itself installs (server-everything, server-filesystem) are read
// from the repository's node_modules. Credentials some servers demand before they start are given
// dummy values: listing tools calls no remote API.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

interface Source {
  id: string;
  label: string;
  pkg: string;
  bin: string;
  args?: string[];
  env?: Record<string, string>;
  /** Installed in the repository rather than in the install folder. */
  repo?: boolean;
}

const scratch = mkdtempSync(join(tmpdir(), "catalog-"));
const SOURCES: Source[] = [
  {
    id: "everything",
    label: "Everything (MCP reference)",
    pkg: "@modelcontextprotocol/server-everything",
    bin: "dist/index.js",
    args: ["stdio"],
    repo: true,
  },
  {
    id: "filesystem",
    label: "Filesystem",
    pkg: "@modelcontextprotocol/server-filesystem",
    bin: "dist/index.js",
    args: [scratch],
    repo: true,
  },
  {
    id: "memory",
    label: "Memory (knowledge graph)",
    pkg: "@modelcontextprotocol/server-memory",
    bin: "dist/index.js",
    env: { MEMORY_FILE_PATH: join(scratch, "memory.jsonl") },
  },
  {
    id: "github",
    label: "GitHub",
    pkg: "@modelcontextprotocol/server-github",
    bin: "dist/index.js",
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: "dummy" },
  },
  {
    id: "gitlab",
    label: "GitLab",
    pkg: "@modelcontextprotocol/server-gitlab",
    bin: "dist/index.js",
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: "dummy" },
  },
  {
    id: "slack",
    label: "Slack",
    pkg: "@modelcontextprotocol/server-slack",
    bin: "dist/index.js",
    env: { SLACK_BOT_TOKEN: "dummy", SLACK_TEAM_ID: "T0" },
  },
  {
    id: "google-maps",
    label: "Google Maps",
    pkg: "@modelcontextprotocol/server-google-maps",
    bin: "dist/index.js",
    env: { GOOGLE_MAPS_API_KEY: "dummy" },
  },
  {
    id: "brave-search",
    label: "Brave Search",
    pkg: "@modelcontextprotocol/server-brave-search",
    bin: "dist/index.js",
    env: { BRAVE_API_KEY: "dummy" },
  },
  {
    id: "puppeteer",
    label: "Puppeteer browser",
    pkg: "@modelcontextprotocol/server-puppeteer",
    bin: "dist/index.js",
  },
  {
    id: "sequential-thinking",
    label: "Sequential thinking",
    pkg: "@modelcontextprotocol/server-sequential-thinking",
    bin: "dist/index.js",
  },
  { id: "playwright", label: "Playwright browser", pkg: "@playwright/mcp", bin: "cli.js" },
  {
    id: "chrome-devtools",
    label: "Chrome DevTools",
    pkg: "chrome-devtools-mcp",
    bin: "build/src/bin/chrome-devtools-mcp.js",
  },
  { id: "kubernetes", label: "Kubernetes", pkg: "mcp-server-kubernetes", bin: "dist/index.js" },
];

const here = dirname(fileURLToPath(import.meta.url));
const installDir = process.argv[2];
if (!installDir) throw new Error("Give the folder the MCP servers are installed in as the first argument.");
const fromRepo = createRequire(join(here, "..", "..", "..", "package.json"));
const fromInstall = createRequire(join(installDir, "package.json"));

for (const source of SOURCES) {
  const resolver = source.repo ? fromRepo : fromInstall;
  const manifest = resolver.resolve(`${source.pkg}/package.json`);
  const version = (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(dirname(manifest), source.bin), ...(source.args ?? [])],
    env: { PATH: process.env.PATH ?? "", HOME: scratch, ...source.env },
    stderr: "ignore",
  });
  const client = new Client({ name: "loopwright-catalog-capture", version: "0.0.0" });
  await client.connect(transport);
  const tools: { name: string; description?: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    for (const tool of page.tools) tools.push({ name: tool.name, description: tool.description ?? "" });
    cursor = page.nextCursor;
  } while (cursor);
  await client.close();
  const record = {
    id: source.id,
    label: source.label,
    package: source.pkg,
    version,
    source: "tools/list over stdio, @modelcontextprotocol/sdk client",
    captured: new Date().toISOString().slice(0, 10),
    tools,
  };
  writeFileSync(join(here, "catalog", `${source.id}.json`), `${JSON.stringify(record, null, 2)}\n`);
  console.log(`${source.id.padEnd(20)} ${source.pkg}@${version}: ${tools.length} tools`);
}
