// For the crash test: the child it kills, bundled once from the current source. Started through
// `node --import tsx`, each child spent over a second loading tsx and transforming this package's
// source before it wrote a line; the bundle starts in a fraction of that. Only this package's own
// files are bundled: every package it imports (@loopwright/*, openai) stays an import, loaded from
// node_modules as it would be under tsx.
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";

const pkg = fileURLToPath(new URL("../..", import.meta.url));

/**
 * What stands for `@loopwright/tools-mcp` in a child bundled `withoutMcp`: the MCP SDK it loads took
 * about 300 ms of each lock host's start (1.13 s -> 0.82 s, median of 6, on a loaded two-core
 * machine), and the lock tests start some twenty hosts that never open an MCP server.
 */
const NO_MCP = `export function createMcpPool() {
  throw new Error("This test child was bundled without @loopwright/tools-mcp (bundleChild withoutMcp).");
}`;

/**
 * Bundles `entry` (a .ts file of this package) into a fresh folder of its own; `node <file>` runs it.
 * `withoutMcp`: `@loopwright/tools-mcp` is replaced by a stub whose `createMcpPool` throws, for a
 * child that opens no MCP server.
 */
export async function bundleChild(
  entry: string,
  { withoutMcp = false }: { withoutMcp?: boolean } = {},
): Promise<{ file: string; remove(): Promise<void> }> {
  // Under the package's node_modules, so the bundle's imports resolve as the source's do.
  const outDir = join(pkg, "node_modules", `.child-test-${process.pid}-${randomUUID().slice(0, 8)}`);
  const name = basename(entry, extname(entry));
  await build({
    entry: { [name]: entry },
    outDir,
    format: ["esm"],
    target: "node20",
    config: false,
    silent: true,
    dts: false,
    sourcemap: false,
    skipNodeModulesBundle: true,
    outExtension: () => ({ js: ".mjs" }),
    // Kept from the external list (every other package stays an import), for the stub to take its place.
    noExternal: withoutMcp ? ["@loopwright/tools-mcp"] : [],
    esbuildPlugins: withoutMcp
      ? [
          {
            name: "without-mcp",
            setup(bundle) {
              bundle.onResolve({ filter: /^@loopwright\/tools-mcp$/ }, () => ({
                path: "no-mcp",
                namespace: "no-mcp",
              }));
              bundle.onLoad({ filter: /.*/, namespace: "no-mcp" }, () => ({
                contents: NO_MCP,
                loader: "js",
              }));
            },
          },
        ]
      : [],
  });
  return { file: join(outDir, `${name}.mjs`), remove: () => rm(outDir, { recursive: true, force: true }) };
}
