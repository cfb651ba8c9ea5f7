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

/** Bundles `entry` (a .ts file of this package) into a fresh folder of its own; `node <file>` runs it. */
export async function bundleChild(entry: string): Promise<{ file: string; remove(): Promise<void> }> {
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
  });
  return { file: join(outDir, `${name}.mjs`), remove: () => rm(outDir, { recursive: true, force: true }) };
}
