// The four user stories of stories/ (schema-compat alone, spec alone, a loop of one's own, the thin
// loop with typed tools), proved from packed tarballs: one fresh npm project installs the tarballs
// the stories import (every other dependency from the registry), type-checks them with `strict`,
// `skipLibCheck: false` and NodeNext, and runs each under Node against the packed testkit's
// loopback server; each story asserts what it got and exits non-zero otherwise. A story may not
// cast: `as Type`, `as unknown`, `any`, `@ts-` directives and non-null assertions are refused
// before anything is installed. Then the same project takes `openai@7`, type-checks the stories
// again against its types and runs the ones that use the SDK under a Node >= 22 (LOOPWRIGHT_NODE22,
// or this Node when it is one); with none, it says so and skips that run.
// Called by scripts/smoke-packed.mjs, which packs the packages (`node scripts/smoke-packed.mjs stories`
// runs the stories alone).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** What a story may not contain: every way to tell the compiler to stop checking. */
const CASTS = [
  [/(?<!\*\s*)\bas\s+(?!const\b)[\w$[{(<]/, "an `as` cast"],
  [/(?<![\w$.])any(?![\w$])(?=\s*(?:[[\]>,;)=|&]|$))/, "`any`"],
  [/[\w$)\]]!(?=[.[;,)])/, "a non-null assertion"],
  [/<(?:unknown|any)>\s*[\w$(]/, "an angle-bracket cast"],
];

/** Comments, strings and template text blanked out (line breaks kept): only code is searched. */
const NOT_CODE = /\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g;
const blank = (text) => text.replace(/[^\n]/g, " ");

/** The lines of a TypeScript source that cast, each with what it does. */
export function findCasts(source) {
  const original = source.split("\n");
  const code = source.replace(NOT_CODE, (m) =>
    m[0] === "/" ? blank(m) : m[0] + blank(m.slice(1, -1)) + m[0],
  );
  const found = [];
  code.split("\n").forEach((line, index) => {
    const text = original[index] ?? "";
    for (const [pattern, what] of CASTS) {
      if (pattern.test(line)) found.push(`line ${index + 1}: ${what}: ${text.trim()}`);
    }
    // A directive lives in a comment, so it is looked for in the line as written.
    if (/@ts-(?:ignore|expect-error|nocheck)/.test(text))
      found.push(`line ${index + 1}: a @ts- directive: ${text.trim()}`);
  });
  return found;
}

/** The `ts` block of the loop's COMPOSE.md, as a user copies it into compose-loop.ts. */
function composeLoop(markdown) {
  const block = /```ts\n([\s\S]*?)```/.exec(markdown)?.[1];
  if (!block) throw new Error("COMPOSE.md in the packed @loopwright/loop has no ```ts block");
  return block;
}

/** Bare package names a source imports (`@scope/name` or `name`, subpaths cut off). */
function importsOf(source) {
  const names = new Set();
  for (const [, spec] of source.matchAll(/\bfrom\s+"([^"./][^"]*)"/g)) {
    if (spec.startsWith("node:")) continue;
    const parts = spec.split("/");
    names.add(spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]);
  }
  return [...names];
}

/**
 * Type-checks `files` in `project` as a user's strict NodeNext project would, library declarations
 * included (`skipLibCheck: false`), with the compiler at `tsc`; emits JavaScript into `outDir` when
 * given, nothing otherwise. Throws when the compiler reports an error (printed as it comes).
 */
/** Writes the strict NodeNext tsconfig the packed imports and the stories are checked under. */
export function writeStrictConfig({ project, files, outDir }) {
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        skipLibCheck: false,
        types: ["node"],
        ...(outDir ? { rootDir: ".", outDir } : { noEmit: true }),
      },
      files,
    }),
  );
}

function typeCheckStrict({ project, files, tsc, outDir }) {
  writeStrictConfig({ project, files, outDir });
  execFileSync(process.execPath, [tsc, "-p", project], { cwd: project, stdio: "inherit" });
}

function nodeMajor(node) {
  try {
    const version = execFileSync(node, ["-p", "process.versions.node"], { encoding: "utf8" }).trim();
    return { version, major: Number(version.split(".")[0]) };
  } catch {
    return { version: "unrunnable", major: 0 };
  }
}

/** A Node >= 22 to run the stories with openai@7 (which needs it), or undefined. */
function node22() {
  const given = process.env.LOOPWRIGHT_NODE22;
  if (given) {
    const { version, major } = nodeMajor(given);
    if (major >= 22) return given;
    console.log(`LOOPWRIGHT_NODE22=${given} is Node ${version}, not >= 22; ignored`);
  }
  return Number(process.versions.node.split(".")[0]) >= 22 ? process.execPath : undefined;
}

/**
 * Runs the stories against the packed tarballs. `tarballs` maps each package name to its .tgz;
 * `versionOf(dep)` is the catalog's version; `tsc` the TypeScript compiler's bin. Throws on the
 * first failure, naming the story and the step.
 */
export function runStories({ root, tarballs, versionOf, tsc }) {
  const started = Date.now();
  const at = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const storiesDir = join(root, "stories");
  const stories = readdirSync(storiesDir)
    .filter((file) => file.endsWith(".ts"))
    .sort()
    .map((file) => ({ file, source: readFileSync(join(storiesDir, file), "utf8") }));
  if (stories.length === 0) throw new Error("stories/ holds no story");

  // The loop a user copies from the guide, taken from the tarball that ships it.
  const loopTarball = tarballs["@loopwright/loop"];
  const guide = execFileSync("tar", ["-xOzf", loopTarball, "package/COMPOSE.md"], { encoding: "utf8" });
  const sources = [...stories, { file: "compose-loop.ts", source: composeLoop(guide) }];

  const casts = sources.flatMap(({ file, source }) => findCasts(source).map((line) => `${file} ${line}`));
  if (casts.length) throw new Error(`a story casts instead of type-checking:\n  ${casts.join("\n  ")}`);

  const imported = [...new Set(sources.flatMap(({ source }) => importsOf(source)))].sort();
  const missing = imported.filter((name) => name.startsWith("@loopwright/") && !tarballs[name]);
  if (missing.length) throw new Error(`the stories import unpublished packages: ${missing.join(", ")}`);
  const dependencies = Object.fromEntries(
    imported.map((name) => [name, tarballs[name] ? `file:${tarballs[name]}` : versionOf(name)]),
  );
  const project = mkdtempSync(join(tmpdir(), "loopwright-stories-"));
  const install = () =>
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], {
      cwd: project,
      stdio: "inherit",
    });
  const writeManifest = (openai) =>
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify(
        {
          name: "stories",
          private: true,
          type: "module",
          dependencies: { ...dependencies, openai, "@types/node": versionOf("@types/node") },
          overrides: Object.fromEntries(Object.entries(tarballs).map(([n, f]) => [n, `file:${f}`])),
        },
        null,
        2,
      ),
    );
  const typeCheck = (outDir) =>
    typeCheckStrict({ project, files: sources.map(({ file }) => file), tsc, outDir });
  const run = (node, outDir, file) => {
    const name = file.replace(/\.ts$/, "");
    let output;
    try {
      output = execFileSync(node, [join(project, outDir, `${name}.js`)], {
        cwd: project,
        encoding: "utf8",
        timeout: 60_000,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      throw new Error(
        `story ${file} failed under ${node}:\n${error.stdout ?? ""}${error.stderr ?? error.message}`,
      );
    }
    if (!output.trimEnd().endsWith(`story ${name}: ok`)) {
      throw new Error(`story ${file} did not finish ("story ${name}: ok" missing):\n${output}`);
    }
    console.log(`  ${file}: ok (Node ${nodeMajor(node).version}, ${at()})`);
  };

  try {
    for (const { file, source } of sources) writeFileSync(join(project, file), source);
    console.log(`stories: installing ${imported.join(", ")} into one project`);
    writeManifest(versionOf("openai"));
    install();
    typeCheck("out");
    console.log(
      `stories: type-checked (strict, skipLibCheck: false) with openai ${versionOf("openai")} (${at()})`,
    );
    for (const { file } of stories) run(process.execPath, "out", file);

    // openai 7: the same stories against its types, and run where a Node >= 22 is at hand.
    writeManifest("^7");
    install();
    const { version } = JSON.parse(readFileSync(join(project, "node_modules/openai/package.json"), "utf8"));
    typeCheck("out7");
    console.log(`stories: type-checked (strict, skipLibCheck: false) with openai ${version} (${at()})`);
    const node = node22();
    const sdkStories = stories.filter(({ source }) => importsOf(source).includes("openai"));
    if (node) for (const { file } of sdkStories) run(node, "out7", file);
    else console.log("stories: skipped: no Node >= 22 to run openai 7 (set LOOPWRIGHT_NODE22=/path/to/node)");
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
  console.log(`stories: passed in ${at()}`);
}
