// Shared by the CLI tests (main.test.ts, mcp.test.ts, web/cli.test.ts); not part of the app.
//
// Those tests start the playground as a user does, a child process per test. Started through
// `node --import tsx src/main.ts`, each child spent about 1.1 s loading tsx and transforming the
// playground's source before running; a file of ten tests spent most of its time there. Instead the
// test file bundles the current source once (Vite, a dev dependency here already) and starts
// `node <bundle>`: the playground's own modules are in the bundle, and every package it imports
// (@loopwright/*, openai, …) stays an import, loaded from node_modules exactly as under tsx.
import { type ChildProcess, execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import { afterAll, beforeAll } from "vitest";

const app = fileURLToPath(new URL("..", import.meta.url));

/** A bundle of the playground's current `src/main.ts`; run it with `node <file> …args`. */
export interface BuiltCli {
  /** The bundle's entry file. */
  file: string;
  /** Deletes the bundle's folder. */
  remove(): Promise<void>;
}

/**
 * Bundles `src/main.ts` as it is now into a fresh folder two levels below the app, as
 * `src/web/server.ts` is, so a path it finds from its own `import.meta.url` (the built page in
 * `dist/web`) means the same place; bare imports resolve from the app's node_modules. A folder per
 * call, so test files bundling at the same time never share one.
 */
export async function buildCli(): Promise<BuiltCli> {
  const outDir = join(app, "node_modules", `.cli-test-${process.pid}-${randomUUID().slice(0, 8)}`);
  await build({
    configFile: false,
    root: app,
    logLevel: "silent",
    build: {
      ssr: join(app, "src", "main.ts"),
      outDir,
      emptyOutDir: true,
      minify: false,
      target: "node20",
      rollupOptions: {
        // Every package stays an import: only the playground's own source is bundled.
        external: (id) => !id.startsWith(".") && !id.startsWith("\0") && !isAbsolute(id),
        output: { format: "es", entryFileNames: "main.mjs", chunkFileNames: "[name]-[hash].mjs" },
      },
    },
  });
  return {
    file: join(outDir, "main.mjs"),
    remove: () => rm(outDir, { recursive: true, force: true }),
  };
}

/**
 * For a test file: bundles the current `src/main.ts` before the file's tests and deletes the bundle
 * after them. Returns a function giving the bundle's entry file (`node <it> …args` starts the
 * playground), to call inside a test.
 */
export function cliForFile(): () => string {
  let cli: BuiltCli | undefined;
  beforeAll(async () => {
    cli = await buildCli();
  }, 60_000);
  afterAll(() => cli?.remove());
  return () => {
    if (!cli) throw new Error("cliForFile: the bundle is made in beforeAll; call this inside a test.");
    return cli.file;
  };
}

/**
 * Runs the bundled CLI (`main()`, from {@link cliForFile}) with `args` to its exit, `input` on its
 * stdin: its exit code and what it printed (stdout, then stderr). No endpoint or model comes from the
 * test's own environment (`OPENAI_BASE_URL`, `LOOPWRIGHT_MODEL` unset) unless `env` gives one.
 */
export function runCli(
  main: () => string,
  args: string[],
  env: Record<string, string | undefined> = {},
  input?: string,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [main(), ...args],
      {
        env: {
          ...process.env,
          OPENAI_BASE_URL: undefined,
          LOOPWRIGHT_MODEL: undefined,
          NO_COLOR: "1",
          ...env,
        },
        timeout: 60_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr }),
    );
    child.stdin?.end(input);
  });
}

/**
 * The page's URL a `playground --web` child prints (`Playground page: http://127.0.0.1:<port>/`);
 * rejects if the child exits first. `printed()` is all it has printed on stdout so far.
 */
export function pageUrlOf(child: ChildProcess): { url: Promise<string>; printed: () => string } {
  let out = "";
  const url = new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /Playground page: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)?.[1];
      if (found) resolve(found);
    });
    child.once("exit", () => reject(new Error(`exited early: ${out}`)));
  });
  return { url, printed: () => out };
}
