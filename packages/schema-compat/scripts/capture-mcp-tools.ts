// Connects over stdio to the published MCP reference servers and writes the tools/list they
// answer to test-fixtures/, so the tests can show every real schema survives sanitizeTools.
//   pnpm --filter @loopwright/schema-compat capture
// The capture is committed; rerun it after upgrading either server.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, "../../..");
const bin = (name: string) => join(repoRoot, "node_modules/.bin", name);

/** Starts one server, lists its tools (every page), and closes it. */
export async function listServerTools(command: string, args: string[]): Promise<unknown[]> {
  const client = new Client({ name: "loopwright-schema-compat-capture", version: "0.0.0" });
  const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
  await client.connect(transport);
  try {
    const tools: unknown[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } finally {
    await client.close();
  }
}

async function main(): Promise<void> {
  const sandbox = mkdtempSync(join(tmpdir(), "mcp-fs-"));
  try {
    const servers: Array<[string, string, string[]]> = [
      ["server-everything", bin("mcp-server-everything"), []],
      ["server-filesystem", bin("mcp-server-filesystem"), [sandbox]],
    ];
    for (const [name, command, args] of servers) {
      const tools = await listServerTools(command, args);
      const file = join(here, "../test-fixtures", `${name}.tools.json`);
      writeFileSync(file, `${JSON.stringify({ server: `@modelcontextprotocol/${name}`, tools }, null, 2)}\n`);
      console.log(`${name}: ${tools.length} tools -> ${file}`);
    }
  } finally {
    rmSync(sandbox, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
