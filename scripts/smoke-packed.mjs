// The proof that "install only one package" works: pack every package as it would be published and
// install every tarball into ONE project with npm's isolated layout (`--install-strategy=linked`),
// each package in a workspace of its own (its tarball, its peers from the registry; its
// @loopwright siblings come from their own tarballs). Each package's store folder links only what
// that package declares (dependencies and peers), and the project's root node_modules holds nothing
// but @types/node (checked), so an import a package makes, in its code or its declarations, of a
// package it does not declare cannot resolve. No package's declarations may declare a global or
// an ambient module (one would reach every package in the one program). Then one strict program (skipLibCheck: false)
// type-checks a file per package that imports it, and one Node process imports each package from
// its workspace; the testkit is then exercised from its workspace (scripts/smoke-testkit.mjs).
// The same install holds the hosts the packages must also serve: a workspace with every tarball,
// where a CommonJS file `require`s each package and calls one export (require(esm), Node >= 20.19 /
// 22.12; skipped with a message on an older Node) and a file that imports each package and reads
// `watch()`'s events is type-checked with TypeScript 5.4 (the oldest the declarations are held to;
// skipLibCheck: false); and a workspace with loop and agent alone, a library on them emitting its
// declarations. Last, the user stories in stories/ are type-checked and run with openai 6 from a
// workspace of the same install, and with openai 7 from a project of its own installed beside it
// (one install settles loop's openai peer once) (scripts/smoke-stories.mjs).
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
import { runStories, storyWorkspaces, writeStrictConfig } from "./smoke-stories.mjs";

const root = new URL("..", import.meta.url).pathname;
const only = process.argv.slice(2);
const wanted = (part) => !only.length || only.includes(part);
const packDir = mkdtempSync(join(tmpdir(), "loopwright-pack-"));
const tsc = join(root, "node_modules/typescript/bin/tsc");

const packages = readdirSync(join(root, "packages"))
  .map((dir) => ({ dir: join(root, "packages", dir), json: readPkg(join(root, "packages", dir)) }))
  .filter((p) => !p.json.private);
const shortName = (name) => name.replace("@loopwright/", "");

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
const project = mkdtempSync(join(tmpdir(), "loopwright-smoke-"));
const dependsOn = (names) => Object.fromEntries(names.map((n) => [n, `file:${tarballs[n]}`]));
const peersOf = (list) =>
  Object.fromEntries(
    [...new Set(list.flatMap((p) => Object.keys(p.json.peerDependencies ?? {})))].map((d) => [
      d,
      versionOf(d),
    ]),
  );

/** Runs `file args` in `cwd`; its output goes to `log`, and so does a failure's before it throws. */
async function step(log, cwd, file, args) {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, encoding: "utf8", maxBuffer: 1 << 26 });
    log.push(stdout, stderr);
  } catch (error) {
    log.push(error.stdout ?? "", error.stderr ?? "");
    throw error;
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

/**
 * The workspaces of the one project, each `{ dir, dependencies, files }` (file name to text);
 * `ownProject` marks one installed alone instead, `path` (set below) is where it lands.
 */
const workspaces = [];
const selected = packages.filter((p) => wanted(shortName(p.json.name)));
for (const p of selected) {
  const name = p.json.name;
  workspaces.push({
    dir: `pkg/${shortName(name)}`,
    // The package and its peers, as a user installs it; nothing else is within its reach.
    dependencies: { ...dependsOn([name]), ...peersOf([p]) },
    files: {
      "smoke.ts": `import * as pkg from "${name}";\nconst names: string[] = Object.keys(pkg);\nconsole.log("${name}", names.length, "exports");\n`,
      "smoke.mjs": `import * as pkg from "${name}";\nconsole.log("${name}: imported under Node", process.version, "with", Object.keys(pkg).length, "exports");\n`,
    },
  });
}
const names = packages.map((p) => p.json.name).sort();
// A library on loop and agent alone: only they are within its reach, their siblings are not.
const direct = ["@loopwright/loop", "@loopwright/agent"];
const missingCalls = names.filter((name) => !REQUIRE_CALLS[name]);
if (wanted("consumers") && missingCalls.length) {
  failures.push("consumers");
  console.error(`consumer smoke test failed: no REQUIRE_CALLS entry for ${missingCalls.join(", ")}`);
} else if (wanted("consumers")) {
  workspaces.push({
    dir: "consumers",
    dependencies: {
      ...dependsOn(names),
      ...peersOf(packages),
      "@types/node": versionOf("@types/node"),
      typescript: OLDEST_TYPESCRIPT,
    },
    files: {},
  });
  workspaces.push({
    dir: "isolated",
    dependencies: {
      ...dependsOn(direct),
      openai: versionOf("openai"),
      "@types/node": versionOf("@types/node"),
    },
    files: {},
  });
}
let stories;
if (wanted("stories")) {
  try {
    stories = storyWorkspaces({ root, tarballs, versionOf });
    workspaces.push(...stories.workspaces);
  } catch (error) {
    failures.push("stories");
    console.error(`the user stories failed: ${error.message}`);
  }
}

const npmInstall = [
  "install",
  "--install-strategy=linked",
  "--no-audit",
  "--no-fund",
  "--ignore-scripts",
  "--loglevel=error",
];
const shared = workspaces.filter((w) => !w.ownProject);
const alone = workspaces.filter((w) => w.ownProject);
// Where each workspace lands: the shared ones in the project, one installed alone in a folder of its own.
for (const w of shared) w.path = join(project, w.dir);
for (const w of alone) w.path = mkdtempSync(join(tmpdir(), `loopwright-smoke-${w.dir}-`));

const writeJson = (file, json) => writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
const writeFiles = (w) => {
  for (const [file, text] of Object.entries(w.files)) writeFileSync(join(w.path, file), text);
};

/** Writes the project and its workspaces, and installs them all at once, isolated. */
async function install() {
  if (!shared.length) return;
  writeJson(join(project, "package.json"), {
    name: "smoke",
    private: true,
    type: "module",
    workspaces: shared.map((w) => w.dir),
    // For `types: ["node"]` in the strict configs; nothing else lives at the root.
    devDependencies: { "@types/node": versionOf("@types/node") },
    overrides: dependsOn(names),
  });
  for (const w of shared) {
    mkdirSync(w.path, { recursive: true });
    const name = `smoke-${w.dir.replace("/", "-")}`;
    writeJson(join(w.path, "package.json"), {
      name,
      private: true,
      type: "module",
      dependencies: w.dependencies,
    });
    writeFiles(w);
  }
  const log = [];
  await step(log, project, "npm", npmInstall);
  process.stdout.write(log.filter(Boolean).join(""));
  // Node and TypeScript look in every node_modules above a store folder: the root's must hold
  // nothing a package could reach without declaring it.
  const top = readdirSync(join(project, "node_modules")).filter(
    (entry) => ![".store", ".package-lock.json", ".bin"].includes(entry),
  );
  const types = top.includes("@types") ? readdirSync(join(project, "node_modules/@types")) : [];
  const stray = [
    ...top.filter((e) => e !== "@types"),
    ...types.filter((t) => t !== "node").map((t) => `@types/${t}`),
  ];
  if (stray.length)
    throw new Error(`the project's root node_modules holds ${stray.join(", ")}: any package could reach it`);
  console.log(`${shared.length} workspaces installed into one project (npm, --install-strategy=linked)`);
}

/** A workspace that must not share the install (the stories with openai 7), as a project of its own. */
async function installAlone(w) {
  writeJson(join(w.path, "package.json"), {
    name: `smoke-${w.dir}`,
    private: true,
    type: "module",
    dependencies: w.dependencies,
    overrides: dependsOn(names),
  });
  writeFiles(w);
  const log = [];
  await step(log, w.path, "npm", npmInstall);
  process.stdout.write(log.filter(Boolean).join(""));
  console.log(`${w.dir} installed into a project of its own`);
}

/** The package a compiler error line is about: its own smoke file, or its declarations in the store. */
function packageOfError(line) {
  const own = /^pkg\/([^/]+)\/smoke\.ts/.exec(line)?.[1];
  if (own) return `@loopwright/${own}`;
  return /\.store\/(@loopwright\/[^@/]+)@/.exec(line)?.[1];
}

/** One strict program over every package's import, one Node process importing each, the testkit used. */
async function smokePackages() {
  if (!selected.length) return;
  const log = [];
  try {
    // One program reads every package's declarations together, where a global or an ambient module
    // one package declared would be seen by all the others: a package leaning on another's could
    // pass here and fail installed alone. None declares any; this keeps it so.
    const ambient = selected.flatMap((p) =>
      readdirSync(join(p.dir, "dist"), { recursive: true })
        .filter((file) => /\.d\.[cm]?ts$/.test(file))
        .filter((file) =>
          /^\s*declare\s+(global\b|module\s+["'])/m.test(readFileSync(join(p.dir, "dist", file), "utf8")),
        )
        .map((file) => ({ name: p.json.name, file })),
    );
    for (const { name, file } of ambient) {
      failures.push(name);
      log.push(
        `smoke test failed for ${name}: dist/${file} declares a global or an ambient module, which the one program over every package would share with the others\n`,
      );
    }
    writeStrictConfig({ project, files: selected.map((p) => `pkg/${shortName(p.json.name)}/smoke.ts`) });
    try {
      await step(log, project, process.execPath, [tsc, "-p", project]);
      log.push(
        `${selected.length} packages type-check (strict, skipLibCheck: false), each from its own workspace\n`,
      );
    } catch (error) {
      const named = [
        ...new Set(
          `${error.stdout ?? ""}`
            .split("\n")
            .filter((line) => /error TS\d+/.test(line))
            .map(packageOfError),
        ),
      ];
      for (const name of named) {
        failures.push(name ?? "a package's types");
        log.push(`smoke test failed for ${name ?? "(a file outside any package)"}: its types do not check\n`);
      }
      if (!named.length) failures.push("the packages' type-check");
    }
    // Each import in its own try: one that throws fails its package, and the others still run.
    const imports = selected.map((p) => {
      const file = `./pkg/${shortName(p.json.name)}/smoke.mjs`;
      return `try { await import("${file}"); } catch (error) { failed.push("${p.json.name}"); console.error("smoke test failed for ${p.json.name}: its import under Node threw:", error); }`;
    });
    writeFileSync(
      join(project, "imports.mjs"),
      `const failed = [];\n${imports.join("\n")}\nif (failed.length) { console.log(JSON.stringify(failed)); process.exitCode = 1; }\n`,
    );
    try {
      await step(log, project, process.execPath, [join(project, "imports.mjs")]);
    } catch (error) {
      const named = /^\[.*\]$/m.exec(error.stdout ?? "")?.[0];
      failures.push(...(named ? JSON.parse(named) : ["the packages' Node imports"]));
    }
    // The testkit is also used, not just imported: personalities, scripted model, every recording.
    if (selected.some((p) => p.json.name === "@loopwright/testkit")) {
      const dir = join(project, "pkg/testkit");
      copyFileSync(join(root, "scripts/smoke-testkit.mjs"), join(dir, "testkit.mjs"));
      try {
        await step(log, dir, process.execPath, [join(dir, "testkit.mjs")]);
      } catch (error) {
        failures.push("@loopwright/testkit (exercised)");
        log.push(`smoke test failed for @loopwright/testkit's exercise: ${error.message}\n`);
      }
    }
  } finally {
    process.stdout.write(log.filter(Boolean).join(""));
  }
}

/** The workspace with every tarball as a CommonJS host and under the oldest TypeScript; the library on loop+agent. */
async function consumers() {
  const host = join(project, "consumers");
  const log = [];
  try {
    // CommonJS: exports["."] must have a condition `require` matches (`default`), or Node refuses
    // with ERR_PACKAGE_PATH_NOT_EXPORTED although TypeScript compiled the host.
    if (process.features.require_module) {
      const lines = names.map((name) => {
        const call = REQUIRE_CALLS[name];
        return `{ const pkg = require("${name}"); console.log("${name}:", JSON.stringify(${call})); }`;
      });
      writeFileSync(join(host, "require.cjs"), `"use strict";\n${lines.join("\n")}\n`);
      await step(log, host, process.execPath, [
        "--no-warnings=ExperimentalWarning",
        join(host, "require.cjs"),
      ]);
      log.push(`every package required from CommonJS under Node ${process.version}\n`);
    } else {
      log.push(
        `CommonJS consumer skipped: Node ${process.version} cannot require an ES module (require(esm) needs Node >= 20.19 or >= 22.12)\n`,
      );
    }

    // TypeScript 5.4, skipLibCheck false: every package's declarations, and watch()'s events typed.
    const imports = names.map((name, i) => `import * as p${i} from "${name}";`).join("\n");
    writeFileSync(
      join(host, "oldest.ts"),
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
    writeStrictConfig({ project: host, files: ["oldest.ts"] });
    await step(log, host, process.execPath, [join(host, "node_modules/typescript/bin/tsc"), "-p", host]);
    log.push(`every package's declarations type-check with TypeScript ${OLDEST_TYPESCRIPT}\n`);

    // The isolated layout (as pnpm lays one out too): only loop and agent are within the library's
    // reach (its workspace declares them alone; the root's node_modules holds only @types/node), their
    // siblings are not. A library built on them, its types inferred, must still emit its
    // declarations (no TS2742: every sibling type in their signatures is re-exported).
    const isolated = join(project, "isolated");
    mkdirSync(join(isolated, "src"), { recursive: true });
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
    await step(log, isolated, process.execPath, [tsc, "-p", isolated]);
    const emitted = readFileSync(join(isolated, "out/lib.d.ts"), "utf8");
    const reached = [...emitted.matchAll(/import\("([^"]+)"\)/g)].map((m) => m[1]);
    const foreign = reached.filter((specifier) => !direct.includes(specifier));
    if (foreign.length)
      throw new Error(`the host's declarations reach past its dependencies: ${foreign.join(", ")}`);
    log.push("a library on loop and agent alone (isolated install) emits its declarations\n");
  } catch (error) {
    failures.push("consumers");
    log.push(`consumer smoke test failed: ${error.message}\n`);
  } finally {
    process.stdout.write(log.filter(Boolean).join(""));
  }
}

try {
  if (workspaces.length) {
    let installed = false;
    try {
      await Promise.all([install(), ...alone.map(installAlone)]);
      installed = true;
    } catch (error) {
      failures.push("the install");
      console.error(`${error.stdout ?? ""}${error.stderr ?? ""}the packed install failed: ${error.message}`);
    }
    if (installed) {
      // Two lanes, one a core: each writes its log in one piece when it ends, so they do not
      // interleave. The stories (synchronous) come after them.
      const hosts = workspaces.some((w) => w.dir === "consumers");
      await Promise.all([smokePackages(), hosts ? consumers() : undefined]);
      if (stories) {
        try {
          runStories({ dirs: stories.workspaces.map((w) => w.path), plan: stories, tsc });
        } catch (error) {
          failures.push("stories");
          console.error(`the user stories failed: ${error.message}`);
        }
      }
    }
  }
} finally {
  for (const w of alone) rmSync(w.path, { recursive: true, force: true });
  rmSync(project, { recursive: true, force: true });
  rmSync(packDir, { recursive: true, force: true });
}
if (failures.length) {
  console.error(`packed-install smoke test failed: ${[...new Set(failures)].join(", ")}`);
  process.exit(1);
}
console.log(
  `packed-install smoke test passed for ${only.length ? only.join(", ") : "every package and story"}`,
);
