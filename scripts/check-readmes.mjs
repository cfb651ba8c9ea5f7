// Compiles every ```ts and ```js block of the Markdown in the repository (the root README.md, each
// app's and each package's top-level *.md: READMEs, COMPOSE.md) under `strict` and
// `noUncheckedIndexedAccess`, so an example also compiles when copied into a stricter project (a JS
// block with checkJs: JSDoc types count, so a wrong call in a JS example fails as it would in TS),
// each block its own module importing the packages by name (their built declarations), then RUNS each
// runnable block and compares what it printed with the comments that document it, so a README's
// code can neither drift from the API it documents nor stop working nor claim an output it no
// longer prints. Build first.
//
// The fence says what a block is (```js takes the same markers):
//   ```ts                   a complete program: compiled, then run with node (30 s timeout each)
//   ```ts norun <reason>    compiled, not run; the reason is required and printed in the summary
//   ```ts fragment          a shape listing or a piece of a larger program: prose, skipped
// (A block that holds a ``` line is fenced with four backticks, ````ts, and read the same.)
// A ```json <file name> block (e.g. ```json .mcp.json) is written under that name into the folder
// where every block of the same Markdown file runs.
//
// What a run gets: its own empty folder under .readme-check/run/ (inside the repository, so `npx`
// finds the devDependencies, e.g. the MCP reference servers, without the registry; npm is set
// offline where the block's environment reaches it); OPENAI_BASE_URL and OPENAI_API_KEY naming
// one real @loopwright/testkit server on 127.0.0.1 (its scripted model, which calls the tools a
// prompt names; /props reports a 16384-token window, as a llama.cpp started with -c 16384 does);
// REDIS_URL naming a redis-server started on a free loopback port when a block imports
// @loopwright/redis (`redis-server` must be on PATH); no stdin. The examples read these variables
// with the default a reader would use, so they still copy as they are. A non-zero exit (a thrown
// error included) or a timeout fails the check, named by Markdown file and line; a stack trace's
// lines are given as Markdown lines. Whatever a block leaves running is ended with it.
//
// Documented output: the `//` comment lines directly under a console.log(...) call (only lines of
// closing brackets, such as the `}` of the loop that logs, may come between; a blank line or code
// ends them) are what that call printed, all its lines in order. They are compared with whitespace
// removed and every quote (' " `, escaped or not) alike, so util.inspect's line breaks and quote
// style do not matter; "…" stands for any text ("…" at the end: the output starts so). A call that
// printed something else, or nothing, fails the check, named by the comment's Markdown line. A
// comment on the console.log line itself is prose, not checked. (Each console.log is attributed to
// its call site through the source maps, by a module run before each block: --import.)
//   node scripts/check-readmes.mjs [file.md …] [--timeout=<s>] [--verbose]
//     exit 1 on a compile error, a failed run, an output comment that does not match or an unknown
//     fence marker; the named Markdown files only, when given; --verbose lists each run's time and
//     each output comment checked, and keeps .readme-check/ (each run's folder holds what it
//     printed, in output.txt)
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createConnection, createServer } from "node:net";
import { availableParallelism } from "node:os";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const work = join(root, ".readme-check");
// The compiled blocks and the packages they import by name. The runs' folders sit beside it, so
// nothing between a run's folder and the repository root holds a node_modules (npx looks there).
const build = join(work, "build");
const args = process.argv.slice(2);
const verbose = args.includes("--verbose");
const timeoutFlag = args.find((arg) => arg.startsWith("--timeout="));
const TIMEOUT_MS = timeoutFlag ? Number(timeoutFlag.slice("--timeout=".length)) * 1000 : 30_000;
const named = args.filter((arg) => !arg.startsWith("--")).map((file) => relative(root, resolve(file)));
const CONCURRENCY = Math.max(2, availableParallelism()); // the runs also wait on the server and on servers they start
const started = Date.now();
rmSync(work, { recursive: true, force: true });
mkdirSync(join(work, "run"), { recursive: true });
mkdirSync(build, { recursive: true });

function markdownFiles() {
  const files = existsSync(join(root, "README.md")) ? ["README.md"] : [];
  for (const parent of ["apps", "packages"]) {
    if (!existsSync(join(root, parent))) continue;
    for (const name of readdirSync(join(root, parent)).sort()) {
      const dir = join(root, parent, name);
      if (!existsSync(join(dir, "package.json"))) continue;
      for (const file of readdirSync(dir).sort()) {
        if (file.endsWith(".md") && file !== "CHANGELOG.md") files.push(join(parent, name, file));
      }
    }
  }
  return files;
}

// The console.log calls of a block whose output the comments under them document (see the header):
// [{ first, last, comment, expected }], the call's first and last line and the first comment line
// counted from the block's first line (1), and the comment lines without their `//`.
function outputClaims(code, language) {
  const kind = language === "js" ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(`block.${language}`, code, ts.ScriptTarget.Latest, true, kind);
  const lines = code.split("\n");
  const lineOf = (position) => source.getLineAndCharacterOfPosition(position).line;
  const claims = [];
  const visit = (node) => {
    if (ts.isCallExpression(node) && node.expression.getText(source) === "console.log") {
      let at = lineOf(node.getEnd()) + 1;
      while (at < lines.length && /^\s*[)\]}][\s)\]};,]*$/.test(lines[at] ?? "")) at += 1;
      const comment = at;
      const expected = [];
      for (; at < lines.length && /^\s*\/\//.test(lines[at] ?? ""); at += 1)
        expected.push((lines[at] ?? "").replace(/^\s*\/\/ ?/, ""));
      if (expected.length > 0)
        claims.push({
          first: lineOf(node.getStart(source)) + 1,
          last: lineOf(node.getEnd()) + 1,
          comment: comment + 1,
          expected,
        });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return claims;
}

// Whitespace and quote style are not compared; "…" in a comment stands for any text.
const normalise = (text) => text.replace(/\\?["'`]/g, '"').replace(/\s+/g, "");
function matchesComment(printed, expected) {
  const pattern = normalise(expected.join("\n"))
    .split("…")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s\\S]*");
  return new RegExp(`^${pattern}$`).test(normalise(printed));
}

const blocks = []; // { file, readme, line, kind: "run" | "norun", reason?, language, claims }
const fragments = [];
const problems = [];
const extraFiles = new Map(); // Markdown file → [{ name, text }]
for (const readme of named.length > 0 ? named : markdownFiles()) {
  const text = readFileSync(join(root, readme), "utf8");
  const slug =
    readme === "README.md"
      ? "root-README"
      : readme
          .replace(/^(?:apps|packages)\//, "")
          .replace(/\W+/g, "-")
          .replace(/^-+/, "");
  const fence = /^(`{3,})(ts|js|json)\b([^\n]*)\n([\s\S]*?)^\1$/gm; // ```` holds a ``` inside
  let count = 0;
  for (let match = fence.exec(text); match; match = fence.exec(text)) {
    const [, , language, info = "", code = ""] = match;
    const line = text.slice(0, match.index).split("\n").length + 1; // the block's first line of code
    const [marker = "", ...rest] = info.trim().split(/\s+/);
    if (language === "json") {
      if (marker !== "")
        extraFiles.set(readme, [...(extraFiles.get(readme) ?? []), { name: marker, text: code }]);
      continue;
    }
    if (marker === "fragment") {
      fragments.push({ readme, line });
      continue;
    }
    if (marker !== "" && marker !== "norun") {
      problems.push(
        `${readme}:${line - 1} unknown fence marker "${info.trim()}" (use fragment or norun <reason>)`,
      );
      continue;
    }
    const reason = rest.join(" ");
    if (marker === "norun" && reason === "") {
      problems.push(`${readme}:${line - 1} a norun block must say why: \`\`\`${language} norun <reason>`);
    }
    count += 1;
    const file = `${slug}-${count}`;
    const kind = marker === "norun" ? "norun" : "run";
    const claims = kind === "run" ? outputClaims(code, language) : [];
    blocks.push({ file, readme, line, kind, reason, language, claims });
    // `export {}` keeps each block a module of its own (top-level await, no shared names).
    writeFileSync(join(build, `${file}.${language}`), `${code}\nexport {};\n`);
  }
}

// The packages by name at run time, as an install would give them (types come from `paths`).
mkdirSync(join(build, "node_modules", "@loopwright"), { recursive: true });
for (const name of readdirSync(join(root, "packages"))) {
  if (existsSync(join(root, "packages", name, "package.json"))) {
    symlinkSync(join(root, "packages", name), join(build, "node_modules", "@loopwright", name), "dir");
  }
}
writeFileSync(
  join(build, "tsconfig.json"),
  JSON.stringify(
    {
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2023", "DOM"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        outDir: "out",
        inlineSourceMap: true,
        skipLibCheck: true,
        allowJs: true,
        checkJs: true,
        types: ["node"],
        paths: { "@loopwright/*": ["../../packages/*/dist/index.d.ts"] },
      },
      include: ["*.ts", "*.js"],
    },
    null,
    2,
  ),
);

const byFile = new Map(blocks.map((block) => [block.file, block]));
const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", build], {
  encoding: "utf8",
});
let compileErrors = 0;
for (const line of `${tsc.stdout}${tsc.stderr}`.split("\n")) {
  const hit = /^(?:\S*\/)?([\w.-]+)\.[jt]s\((\d+),(\d+)\): (error .*)$/.exec(line);
  if (!hit) {
    if (line.trim() !== "" && tsc.status !== 0 && !line.startsWith(" ")) console.error(line);
    continue;
  }
  const [, file = "", at, column, message] = hit;
  const block = byFile.get(file);
  compileErrors += 1;
  console.error(`${block?.readme ?? file}:${(block?.line ?? 1) + Number(at) - 1}:${column} ${message}`);
}
if (tsc.status !== 0 && compileErrors === 0) compileErrors = 1;

async function freePort() {
  const probe = createServer().listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port } = probe.address();
  probe.close();
  return port;
}

const testkitModule = join(root, "packages/testkit/dist/index.js");
if (!existsSync(testkitModule)) {
  console.error(`${relative(root, testkitModule)} is missing: build first (pnpm build)`);
  process.exit(1);
}
const testkit = await import(pathToFileURL(testkitModule).href);
const server = await testkit.startServer({
  scriptedModel: { chunkDelayMs: 0 },
  props: { default_generation_settings: { n_ctx: 16384 } },
});
const env = {
  ...process.env,
  OPENAI_BASE_URL: server.baseUrl,
  OPENAI_API_KEY: "sk-readme-check",
  npm_config_offline: "true",
  npm_config_yes: "true",
};
let redis;
const runnable = blocks.filter((block) => block.kind === "run");
if (
  runnable.some((block) =>
    readFileSync(join(build, `${block.file}.${block.language}`), "utf8").includes('"@loopwright/redis"'),
  )
) {
  const port = await freePort();
  redis = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: "ignore",
    },
  );
  redis.on("error", (error) => {
    console.error(`redis-server did not start (${error.message}); a README block imports @loopwright/redis`);
    process.exit(1);
  });
  env.REDIS_URL = `redis://127.0.0.1:${port}`;
  // Wait until it accepts connections.
  for (let tries = 0; ; tries++) {
    const ok = await new Promise((resolve) => {
      const socket = createConnection(port, "127.0.0.1");
      socket.on("error", () => resolve(false));
      socket.on("connect", () => {
        socket.destroy();
        resolve(true);
      });
    });
    if (ok) break;
    if (tries > 100) throw new Error("redis-server did not accept connections within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// A stack trace names .readme-check/build/<block>.ts:L:C (source maps); say the Markdown line instead.
function toMarkdownLines(text) {
  return text.replace(
    /(?:file:\/\/)?[^\s(]*\.readme-check\/build\/([\w.-]+)\.[jt]s:(\d+)(?::(\d+))?/g,
    (all, file, at, column) => {
      const block = byFile.get(file);
      if (!block) return all;
      return `${block.readme}:${block.line + Number(at) - 1}${column ? `:${column}` : ""}`;
    },
  );
}

// Loaded before each block (--import): every console.log the block's own code makes is also
// written, as printed, with the block line it was called from (the stack's first frame, through the
// source map), to the file README_CHECK_LOG names.
const recorder = join(work, "record-output.mjs");
writeFileSync(
  recorder,
  `import { appendFileSync } from "node:fs";
import { format } from "node:util";
const file = process.env.README_CHECK_LOG;
const print = console.log;
const site = /\\.readme-check\\/build\\/[\\w.-]+\\.[jt]s:(\\d+):\\d+/;
console.log = function log(...args) {
  const holder = {};
  Error.captureStackTrace(holder, log);
  const caller = String(holder.stack).split("\\n").find((line) => line.trimStart().startsWith("at "));
  const at = site.exec(caller ?? "");
  if (file && at) appendFileSync(file, JSON.stringify({ line: Number(at[1]), text: format(...args) }) + "\\n");
  return print.apply(console, args);
};
`,
);
mkdirSync(join(work, "printed"), { recursive: true });

// The process groups of the runs under way, ended with this check when it is interrupted.
const running = new Set();
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    for (const pid of running) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {}
    }
    process.exit(1);
  });
}

function run(block) {
  const cwd = join(work, "run", block.file);
  mkdirSync(cwd, { recursive: true });
  for (const extra of extraFiles.get(block.readme) ?? []) writeFileSync(join(cwd, extra.name), extra.text);
  const script = join(build, "out", `${block.file}.js`);
  const printed = join(work, "printed", `${block.file}.jsonl`);
  return new Promise((resolve) => {
    const begun = Date.now();
    // Its own process group, so a timeout also ends what the block started (an MCP server, say).
    const child = spawn(
      process.execPath,
      ["--enable-source-maps", `--import=${pathToFileURL(recorder)}`, script],
      {
        cwd,
        env: { ...env, README_CHECK_LOG: printed },
        detached: true,
        stdio: ["ignore", "pipe", "pipe"], // a block that reads the terminal reads an end of input
      },
    );
    running.add(child.pid);
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, TIMEOUT_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      running.delete(child.pid);
      // Whatever the block left running in its group (a server it started and did not stop).
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      const ms = Date.now() - begun;
      const failure = timedOut
        ? `did not finish within ${TIMEOUT_MS / 1000} s`
        : code !== 0
          ? `exited with ${code ?? signal}`
          : undefined;
      writeFileSync(join(cwd, "output.txt"), output);
      const calls = existsSync(printed)
        ? readFileSync(printed, "utf8")
            .split("\n")
            .filter((line) => line !== "")
            .map((line) => JSON.parse(line))
        : [];
      resolve({ block, ms, failure, output, mismatches: failure ? [] : compareOutput(block, calls) });
    });
  });
}

// Each documented console.log: what its comment says against everything that call printed.
function compareOutput(block, calls) {
  const mismatches = [];
  for (const claim of block.claims) {
    const printed = calls
      .filter((call) => call.line >= claim.first && call.line <= claim.last)
      .map((call) => call.text)
      .join("\n");
    if (matchesComment(printed, claim.expected)) continue;
    mismatches.push(
      `${block.readme}:${block.line + claim.comment - 1} the comment under line ` +
        `${block.line + claim.first - 1} says it prints:\n${claim.expected.join("\n").replace(/^/gm, "  | ")}\n` +
        `but it printed:\n${printed === "" ? "  | (nothing)" : printed.replace(/^/gm, "  | ")}`,
    );
  }
  return mismatches;
}

const results = [];
if (compileErrors === 0 || existsSync(join(build, "out"))) {
  const queue = runnable.filter((block) => existsSync(join(build, "out", `${block.file}.js`)));
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let block = queue.shift(); block; block = queue.shift()) results.push(await run(block));
    }),
  );
}
await server.close();
if (redis) {
  redis.kill("SIGTERM");
  await once(redis, "exit");
}

const failed = results.filter((result) => result.failure);
for (const { block, failure, output } of failed) {
  console.error(`\n${block.readme}:${block.line - 1} the block ${failure}; it printed:`);
  const printed = toMarkdownLines(output).trimEnd();
  console.error(printed === "" ? "  | (nothing)" : printed.replace(/^/gm, "  | "));
}
const mismatches = results.flatMap((result) => result.mismatches);
for (const mismatch of mismatches) console.error(`\n${mismatch}`);
for (const problem of problems) console.error(problem);

if (verbose) {
  for (const { block, ms } of results.sort((a, b) => b.ms - a.ms))
    console.log(`  ${ms} ms  ${block.readme}:${block.line - 1}`);
  for (const block of runnable)
    for (const claim of block.claims)
      console.log(`  output comment ${block.readme}:${block.line + claim.comment - 1}`);
}
const norun = blocks.filter((block) => block.kind === "norun");
const claims = runnable.reduce((sum, block) => sum + block.claims.length, 0);
console.log(
  `README blocks: ${blocks.length} compiled (${compileErrors} errors), ${results.length - failed.length} of ` +
    `${runnable.length} ran, ${claims - mismatches.length} of ${claims} output comments matched, ` +
    `${norun.length} marked norun, ${fragments.length} fragments skipped ` +
    `(${((Date.now() - started) / 1000).toFixed(1)} s)`,
);
for (const block of norun) console.log(`  norun ${block.readme}:${block.line - 1}: ${block.reason}`);
if (!verbose) rmSync(work, { recursive: true, force: true });
if (
  compileErrors > 0 ||
  failed.length > 0 ||
  results.length < runnable.length ||
  mismatches.length > 0 ||
  problems.length > 0
)
  process.exit(1);
