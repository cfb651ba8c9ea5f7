// The four user stories of stories/ (schema-compat alone, spec alone, a loop of one's own, the thin
// loop with typed tools), proved from packed tarballs: the packed-install project of
// scripts/smoke-packed.mjs holds two workspaces for them, each installing the tarballs the stories
// import (every other dependency from the registry), one with the catalog's openai and one with
// `openai@7`. Each is type-checked with `strict`, `skipLibCheck: false` and NodeNext; the first's
// stories run under Node against the packed testkit's loopback server (each asserts what it got and
// exits non-zero otherwise), and the second's that use the SDK run under a Node >= 22
// (LOOPWRIGHT_NODE22, or this Node when it is one); with none, it says so and skips that run.
// A story may not cast: `as Type`, `as unknown`, `any`, `@ts-` directives and non-null assertions
// are refused before anything is installed.
// Called by scripts/smoke-packed.mjs, which packs the packages and installs the workspaces
// (`node scripts/smoke-packed.mjs stories` runs the stories alone).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
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

/**
 * Type-checks `files` in `project` as a user's strict NodeNext project would, library declarations
 * included (`skipLibCheck: false`), with the compiler at `tsc`; emits JavaScript into `outDir` when
 * given, nothing otherwise. Throws when the compiler reports an error (printed as it comes).
 */
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
 * The stories' two workspaces for the packed-install project: `tarballs` maps each package name to
 * its .tgz, `versionOf(dep)` is the catalog's version. Each is `{ dir, dependencies, files,
 * ownProject }` (file name to source; `ownProject`: installed alone, not beside the packages);
 * `stories` and `sdkStories` are what runStories runs. Throws when a story casts or
 * imports an unpublished package, before anything is installed.
 */
export function storyWorkspaces({ root, tarballs, versionOf }) {
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
  const files = Object.fromEntries(sources.map(({ file, source }) => [file, source]));
  const workspace = (dir, openai, ownProject) => ({
    dir,
    dependencies: { ...dependencies, openai, "@types/node": versionOf("@types/node") },
    files,
    ownProject,
  });
  return {
    imported,
    stories: stories.map(({ file }) => file),
    sdkStories: stories.filter(({ source }) => importsOf(source).includes("openai")).map(({ file }) => file),
    // openai 7 gets a project of its own: in one install npm settles a shared package's peer once
    // (loop's openai would be the other workspaces' 6 there, and its types would clash with 7's).
    workspaces: [workspace("stories", versionOf("openai"), false), workspace("stories7", "^7", true)],
  };
}

/**
 * Type-checks and runs the stories in the installed workspaces `storyWorkspaces` described (`plan`
 * is what it returned, `dirs` their two folders, openai 6's first); `tsc` is the TypeScript
 * compiler's bin.
 * Throws on the first failure, naming the story and the step.
 */
export function runStories({ dirs, plan, tsc }) {
  const started = Date.now();
  const at = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const [six, seven] = plan.workspaces.map(({ files }, i) => ({ dir: dirs[i], files: Object.keys(files) }));
  const run = (node, dir, file) => {
    const name = file.replace(/\.ts$/, "");
    let output;
    try {
      output = execFileSync(node, [join(dir, "out", `${name}.js`)], {
        cwd: dir,
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

  const openaiOf = (dir) =>
    JSON.parse(readFileSync(join(dir, "node_modules/openai/package.json"), "utf8")).version;
  console.log(
    `stories: ${plan.imported.join(", ")} installed twice: beside the packages with openai ${openaiOf(six.dir)}, alone with openai ${openaiOf(seven.dir)}`,
  );
  typeCheckStrict({ project: six.dir, files: six.files, tsc, outDir: "out" });
  console.log(
    `stories: type-checked (strict, skipLibCheck: false) with openai ${openaiOf(six.dir)} (${at()})`,
  );
  for (const file of plan.stories) run(process.execPath, six.dir, file);

  // openai 7: the same stories against its types, and run where a Node >= 22 is at hand.
  typeCheckStrict({ project: seven.dir, files: seven.files, tsc, outDir: "out" });
  console.log(
    `stories: type-checked (strict, skipLibCheck: false) with openai ${openaiOf(seven.dir)} (${at()})`,
  );
  const node = node22();
  if (node) for (const file of plan.sdkStories) run(node, seven.dir, file);
  else console.log("stories: skipped: no Node >= 22 to run openai 7 (set LOOPWRIGHT_NODE22=/path/to/node)");
  console.log(`stories: passed in ${at()}`);
}
