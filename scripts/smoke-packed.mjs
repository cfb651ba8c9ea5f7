// The proof that "install only one package" works: pack every package as it would be published,
// install each tarball alone (its @loopwright siblings from their own tarballs, everything else
// from the registry) into a fresh project, type-check an import of it with skipLibCheck: false,
// and import it under Node. The testkit is then exercised from that install (scripts/smoke-testkit.mjs).
// Then one project with every tarball is a host the packages must also serve: a CommonJS file that
// `require`s each package and calls one export (require(esm), Node >= 20.19 / 22.12; skipped with a
// message on an older Node), and a file that imports each package and reads `watch()`'s events,
// type-checked with TypeScript 5.4 (the oldest the declarations are held to; skipLibCheck: false);
// and a library on loop and agent alone, under an isolated install, emitting its declarations.
// Last, the user stories in stories/ are type-checked and run from the same tarballs, with openai 6
// and 7 (scripts/smoke-stories.mjs).
//   node scripts/smoke-packed.mjs [package-name … | consumers | stories]
import { execFile, execFileSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { runStories, writeStrictConfig } from "./smoke-stories.mjs";

const root = new URL("..", import.meta.url).pathname;
const only = process.argv.slice(2);
const packDir = mkdtempSync(join(tmpdir(), "loopwright-pack-"));
const tsc = join(root, "node_modules/typescript/bin/tsc");

const packages = readdirSync(join(root, "packages"))
  .map((dir) => ({ dir: join(root, "packages", dir), json: readPkg(join(root, "packages", dir)) }))
  .filter((p) => !p.json.private);

function readPkg(dir) {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
}

const tarballs = {};
for (const p of packages) {
  const out = execFileSync("pnpm", ["pack", "--pack-destination", packDir], { cwd: p.dir, encoding: "utf8" });
  const file = out.trim().split("\n").pop().trim();
  tarballs[p.json.name] = file.startsWith("/") ? file : join(packDir, file);
}

const catalog = readFileSync(join(root, "pnpm-workspace.yaml"), "utf8");
const versionOf = (dep) =>
  catalog.match(new RegExp(`^\\s+['"]?${dep}['"]?: (.+)$`, "m"))?.[1]?.trim() ?? "latest";

const failures = [];
const run = promisify(execFile);

/** One package's smoke test in a fresh project; its output is printed whole when it ends. */
async function smoke(p) {
  const name = p.json.name;
  const project = mkdtempSync(join(tmpdir(), "loopwright-smoke-"));
  const log = [];
  const step = async (file, args) => {
    const { stdout, stderr } = await run(file, args, { cwd: project, encoding: "utf8", maxBuffer: 1 << 26 });
    log.push(stdout, stderr);
  };
  try {
    const peers = Object.keys(p.json.peerDependencies ?? {});
    const overrides = Object.fromEntries(Object.entries(tarballs).map(([n, f]) => [n, `file:${f}`]));
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify(
        {
          name: "smoke",
          private: true,
          type: "module",
          dependencies: {
            [name]: `file:${tarballs[name]}`,
            ...Object.fromEntries(peers.map((d) => [d, versionOf(d)])),
            "@types/node": versionOf("@types/node"),
          },
          overrides,
        },
        null,
        2,
      ),
    );
    await step("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]);
    writeFileSync(
      join(project, "smoke.ts"),
      `import * as pkg from "${name}";\nconst names: string[] = Object.keys(pkg);\nconsole.log("${name}", names.length, "exports");\n`,
    );
    writeStrictConfig({ project, files: ["smoke.ts"] });
    await step(process.execPath, [tsc, "-p", project]);
    mkdirSync(join(project, "run"), { recursive: true });
    writeFileSync(
      join(project, "run/smoke.mjs"),
      `import * as pkg from "${name}";\nconsole.log("${name}: imported under Node", process.version, "with", Object.keys(pkg).length, "exports");\n`,
    );
    await step(process.execPath, [join(project, "run/smoke.mjs")]);
    // The testkit is also used, not just imported: personalities, scripted model, every recording.
    if (name === "@loopwright/testkit") {
      copyFileSync(join(root, "scripts/smoke-testkit.mjs"), join(project, "run/testkit.mjs"));
      await step(process.execPath, [join(project, "run/testkit.mjs")]);
    }
  } catch (error) {
    failures.push(name);
    log.push(error.stdout ?? "", error.stderr ?? "", `smoke test failed for ${name}: ${error.message}\n`);
  } finally {
    rmSync(project, { recursive: true, force: true });
    process.stdout.write(log.filter(Boolean).join(""));
  }
}

// One call per package (`pkg` is what `require` returned), made from CommonJS: what it returns is
// printed, and a throw fails the step.
const REQUIRE_CALLS = {
  "@loopwright/agent": 'pkg.messageText({ role: "user", content: "hi" })',
  "@loopwright/client": 'pkg.isCredentialParam("api_key")',
  "@loopwright/events": 'pkg.createBus().history("run-1").length',
  "@loopwright/hooks": "typeof pkg.createHooks()",
  "@loopwright/ledger": 'pkg.estimateTokens("hello world")',
  "@loopwright/loop": 'pkg.errorMessage(new Error("boom"))',
  "@loopwright/negotiate": 'pkg.isToolChoice("auto")',
  "@loopwright/redis": 'new pkg.RedisStoreError("x").name',
  "@loopwright/schema-compat": 'Object.keys(pkg.sanitizeSchema({ type: "object", properties: {} }))',
  "@loopwright/side-task": "pkg.preselectSystem([]).length > 0",
  "@loopwright/spec": 'pkg.looksSecretName("OPENAI_API_KEY")',
  "@loopwright/stream": 'pkg.stripThinking("<think>x</think>answer").content',
  "@loopwright/testkit": 'pkg.tokenize("hello world").length',
  "@loopwright/tool-calls": "pkg.parseJson('{\"a\":1}')",
  "@loopwright/tool-loading": "pkg.catalogText([]).length",
  "@loopwright/tools": "pkg.createToolset([]).tools.length",
  "@loopwright/tools-mcp": 'pkg.toolOutput({ content: [{ type: "text", text: "hi" }] }).text',
};
// TypeScript 5.4 has the one-argument AsyncIterableIterator only: the declarations must not need more.
const OLDEST_TYPESCRIPT = "5.4.5";

/** Every tarball in one project, used as a CommonJS host and checked with the oldest TypeScript. */
async function consumers() {
  const project = mkdtempSync(join(tmpdir(), "loopwright-consumers-"));
  const cleanup = [project];
  const log = [];
  const step = async (file, args) => {
    const { stdout, stderr } = await run(file, args, { cwd: project, encoding: "utf8", maxBuffer: 1 << 26 });
    log.push(stdout, stderr);
  };
  try {
    const names = packages.map((p) => p.json.name).sort();
    const missing = names.filter((name) => !REQUIRE_CALLS[name]);
    if (missing.length) throw new Error(`no REQUIRE_CALLS entry for ${missing.join(", ")}`);
    const peers = [...new Set(packages.flatMap((p) => Object.keys(p.json.peerDependencies ?? {})))];
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify(
        {
          name: "smoke-consumers",
          private: true,
          type: "module",
          dependencies: {
            ...Object.fromEntries(names.map((n) => [n, `file:${tarballs[n]}`])),
            ...Object.fromEntries(peers.map((d) => [d, versionOf(d)])),
            "@types/node": versionOf("@types/node"),
            typescript: OLDEST_TYPESCRIPT,
          },
          overrides: Object.fromEntries(names.map((n) => [n, `file:${tarballs[n]}`])),
        },
        null,
        2,
      ),
    );
    await step("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]);

    // CommonJS: exports["."] must have a condition `require` matches (`default`), or Node refuses
    // with ERR_PACKAGE_PATH_NOT_EXPORTED although TypeScript compiled the host.
    if (process.features.require_module) {
      const lines = names.map((name) => {
        const call = REQUIRE_CALLS[name];
        return `{ const pkg = require("${name}"); console.log("${name}:", JSON.stringify(${call})); }`;
      });
      writeFileSync(join(project, "require.cjs"), `"use strict";\n${lines.join("\n")}\n`);
      await step(process.execPath, ["--no-warnings=ExperimentalWarning", join(project, "require.cjs")]);
      log.push(`every package required from CommonJS under Node ${process.version}\n`);
    } else {
      log.push(
        `CommonJS consumer skipped: Node ${process.version} cannot require an ES module (require(esm) needs Node >= 20.19 or >= 22.12)\n`,
      );
    }

    // TypeScript 5.4, skipLibCheck false: every package's declarations, and watch()'s events typed.
    const imports = names.map((name, i) => `import * as p${i} from "${name}";`).join("\n");
    writeFileSync(
      join(project, "oldest.ts"),
      `${imports}
import { createBus } from "@loopwright/events";
const all: object[] = [${names.map((_, i) => `p${i}`).join(", ")}];
export async function firstSeq(): Promise<number | undefined> {
  for await (const event of createBus().watch("run-1")) {
    // @ts-expect-error: an event is typed, never \`any\`
    const wrong: string = event.nothingHere;
    return event.seq + all.length + wrong.length;
  }
  return undefined;
}
`,
    );
    writeStrictConfig({ project, files: ["oldest.ts"] });
    await step(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "-p", project]);
    log.push(`every package's declarations type-check with TypeScript ${OLDEST_TYPESCRIPT}\n`);

    // An isolated install (as pnpm lays one out): only loop and agent are within the host's reach,
    // their siblings are not. A library built on them, its types inferred, must still emit its
    // declarations (no TS2742: every sibling type in their signatures is re-exported).
    // Its own folder: nothing above it may hold a node_modules with the siblings in it.
    const isolated = mkdtempSync(join(tmpdir(), "loopwright-isolated-"));
    cleanup.push(isolated);
    mkdirSync(join(isolated, "src"), { recursive: true });
    const direct = ["@loopwright/loop", "@loopwright/agent"];
    writeFileSync(
      join(isolated, "package.json"),
      JSON.stringify({
        name: "smoke-isolated",
        private: true,
        type: "module",
        dependencies: {
          ...Object.fromEntries(direct.map((n) => [n, `file:${tarballs[n]}`])),
          openai: versionOf("openai"),
          "@types/node": versionOf("@types/node"),
        },
        overrides: Object.fromEntries(names.map((n) => [n, `file:${tarballs[n]}`])),
      }),
    );
    await step("npm", [
      "install",
      "--prefix",
      isolated,
      "--install-strategy=linked",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      "--loglevel=error",
    ]);
    writeFileSync(
      join(isolated, "src/lib.ts"),
      `import { Agent } from "@loopwright/agent";
import { type AgentLoopOptions, ContextOverflow, runAgentLoop } from "@loopwright/loop";
const base = { config: { baseUrl: "http://127.0.0.1:1/v1", model: "m" }, dispatch: () => "" };
export async function ask(prompt: string) {
  return runAgentLoop({ ...base, messages: [{ role: "user", content: prompt }] });
}
export const answer = async (prompt: string) => (await ask(prompt)).turn;
export const calls = async (prompt: string) => (await ask(prompt)).toolCalls;
export const ledger = async (prompt: string) => (await ask(prompt)).ledger;
export const options = (more: Partial<AgentLoopOptions>) => ({ ...base, ...more });
export const makeAgent = () => new Agent({ config: base.config });
export const lastRun = (agent: Agent) => agent.prompt("x");
export const overflowed = (error: unknown) => error instanceof ContextOverflow;
`,
    );
    writeFileSync(
      join(isolated, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          skipLibCheck: false,
          declaration: true,
          emitDeclarationOnly: true,
          rootDir: "src",
          outDir: "out",
          types: ["node"],
        },
        include: ["src"],
      }),
    );
    await step(process.execPath, [tsc, "-p", isolated]);
    const emitted = readFileSync(join(isolated, "out/lib.d.ts"), "utf8");
    const reached = [...emitted.matchAll(/import\("([^"]+)"\)/g)].map((m) => m[1]);
    const foreign = reached.filter((specifier) => !direct.includes(specifier));
    if (foreign.length)
      throw new Error(`the host's declarations reach past its dependencies: ${foreign.join(", ")}`);
    log.push("a library on loop and agent alone (isolated install) emits its declarations\n");
  } catch (error) {
    failures.push("consumers");
    log.push(error.stdout ?? "", error.stderr ?? "", `consumer smoke test failed: ${error.message}\n`);
  } finally {
    for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
    process.stdout.write(log.filter(Boolean).join(""));
  }
}

// Three at a time: an install mostly waits on the registry, so the packages overlap well on two
// cores (measured: the sequential loop took about two minutes of the CI run). The consumer
// projects (their own installs, from the same tarballs) run beside them as a fourth lane, for the
// same reason; each part writes its log in one piece when it ends, so the logs do not interleave.
const queue = packages.filter((p) => !only.length || only.includes(p.json.name.replace("@loopwright/", "")));
await Promise.all([
  ...Array.from({ length: 3 }, async () => {
    for (let p = queue.shift(); p; p = queue.shift()) await smoke(p);
  }),
  !only.length || only.includes("consumers") ? consumers() : undefined,
]);
if (!only.length || only.includes("stories")) {
  try {
    runStories({ root, tarballs, versionOf, tsc });
  } catch (error) {
    failures.push("stories");
    console.error(`the user stories failed: ${error.message}`);
  }
}
rmSync(packDir, { recursive: true, force: true });
if (failures.length) {
  console.error(`packed-install smoke test failed: ${failures.join(", ")}`);
  process.exit(1);
}
console.log(
  `packed-install smoke test passed for ${only.length ? only.join(", ") : "every package and story"}`,
);
