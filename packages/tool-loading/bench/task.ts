// The scripted 30-step task the benchmark drives: fix a failing parser test in a repository,
// open a pull request and tell the team. Tool results are code, test output, listings and API
// JSON of the sizes such tools return, generated deterministically so every run is the same.
import type { Task, TaskStep, Use } from "../src/test-support/drive.js";

/** A small deterministic generator (mulberry32), so the task is the same text on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = random(20261201);
const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;

const IDENTS = [
  "token",
  "offset",
  "source",
  "node",
  "cursor",
  "depth",
  "line",
  "column",
  "buffer",
  "state",
  "scope",
  "value",
];
const TYPES = ["Token", "Node", "Span", "ParseError", "Cursor", "Scope"];

/** TypeScript-looking source of about `chars` characters. */
function code(chars: number): string {
  const lines: string[] = [];
  let size = 0;
  let n = 0;
  while (size < chars) {
    const a = pick(IDENTS);
    const b = pick(IDENTS);
    const t = pick(TYPES);
    const line = pick([
      `export function read${t}(${a}: ${t}, ${b}: number): ${t} | undefined {`,
      `  const ${a}${n} = ${b}.slice(${n % 7}, ${a}.length - ${n % 3});`,
      `  if (${a}.kind === "${b}" && ${b} > ${n}) return ${a};`,
      `  // ${a} is past the end of the ${b}: report it rather than read on.`,
      `  throw new ParseError(\`unexpected \${${a}.kind} at \${${b}}\`);`,
      "}",
      `  for (const ${a} of ${b}s) ${a}s.push(${a});`,
    ]);
    lines.push(line);
    size += line.length + 1;
    n++;
  }
  return lines.join("\n");
}

/** Test-runner output of about `chars` characters, failing or passing. */
function testOutput(chars: number, failing: boolean): string {
  const lines = [" RUN  v4.1.12 /work/repo"];
  let n = 0;
  while (lines.join("\n").length < chars) {
    const name = `${pick(IDENTS)} ${pick(["reads", "splits", "keeps", "rejects"])} a ${pick(IDENTS)}`;
    const bad = failing && n % 5 === 2;
    lines.push(` ${bad ? "×" : "✓"} src/${pick(IDENTS)}.test.ts > ${name} ${Math.floor(rand() * 40)}ms`);
    if (bad) lines.push(`   AssertionError: expected ${n} to be ${n + 1} // Object.is equality`);
    n++;
  }
  lines.push(failing ? " Test Files  1 failed | 11 passed (12)" : " Test Files  12 passed (12)");
  return lines.join("\n");
}

/** A JSON listing of `count` records built by `record`. */
function listing(count: number, record: (i: number) => Record<string, unknown>): string {
  return JSON.stringify(Array.from({ length: count }, (_, i) => record(i)));
}

const repo = { owner: "acme", repo: "parser" };
const issue = (i: number) => ({
  number: 400 + i,
  title: `${pick(TYPES)} ${pick(["loses", "misreads", "drops"])} the ${pick(IDENTS)} after a ${pick(IDENTS)}`,
  state: "open",
  labels: [pick(["bug", "parser", "good first issue"])],
  user: pick(["dana", "lee", "sam"]),
  comments: Math.floor(rand() * 9),
});

const use = (tool: string, args: Record<string, unknown>, result: string): Use => ({ tool, args, result });
const read = (path: string, chars: number) => use("read_file", { path }, code(chars));
const run = (command: string, chars: number, failing: boolean) =>
  use("run_command", { cwd: ".", command }, testOutput(chars, failing));

const steps: TaskStep[] = [
  { uses: [use("list_issues", { ...repo, state: "open", labels: ["parser"] }, listing(10, issue))] },
  {
    uses: [
      use(
        "get_issue",
        { ...repo, issue_id: "412" },
        JSON.stringify({
          ...issue(12),
          body: `Parsing \`a?.b\` after a template literal drops the next token.\n\n${code(400)}`,
        }),
      ),
    ],
  },
  {
    uses: [
      use(
        "search_files",
        { path: ".", pattern: "**/parser*.ts" },
        ["src/parser.ts", "src/parser.test.ts", "src/parser-state.ts", "bench/parser.bench.ts"].join("\n"),
      ),
    ],
  },
  { uses: [read("src/parser.ts", 2400)] },
  { uses: [read("src/parser.test.ts", 1800)] },
  { uses: [run("pnpm vitest run src/parser.test.ts", 1200, true)] },
  { uses: [read("src/tokens.ts", 1500)] },
  {
    uses: [
      use(
        "edit_file",
        { path: "src/parser.ts", edits: [{ oldText: "cursor + 1", newText: "cursor + token.length" }] },
        `--- src/parser.ts\n+++ src/parser.ts\n${code(300)}`,
      ),
    ],
  },
  { uses: [run("pnpm vitest run src/parser.test.ts", 600, true)], load: ["list_directories"] },
  {
    uses: [
      use(
        "list_directories",
        { path: "src", recursive: true },
        ["src/", ...IDENTS.map((i) => `src/${i}.ts`)].join("\n"),
      ),
    ],
  },
  { uses: [read("src/parser-state.ts", 1200)] },
  {
    uses: [
      use(
        "edit_file",
        {
          path: "src/parser-state.ts",
          edits: [{ oldText: "depth--", newText: "depth = Math.max(0, depth - 1)" }],
        },
        `--- src/parser-state.ts\n+++ src/parser-state.ts\n${code(250)}`,
      ),
    ],
  },
  {
    uses: [run("pnpm vitest run src/parser.test.ts", 500, false)],
    load: ["list_commits", "get_commit", "create_branch", "get_file_contents", "update_file_contents"],
  },
  {
    uses: [
      use(
        "list_commits",
        { ...repo, path: "src/parser.ts" },
        listing(8, (i) => ({
          sha: `9f${i}c0de${i}`,
          message: `parser: ${pick(IDENTS)} ${pick(["fix", "refactor"])}`,
          author: pick(["dana", "lee"]),
        })),
      ),
    ],
  },
  {
    uses: [
      use(
        "get_commit",
        { ...repo, sha: "9f3c0de3" },
        JSON.stringify({ sha: "9f3c0de3", files: [{ filename: "src/parser.ts", patch: code(700) }] }),
      ),
    ],
  },
  {
    uses: [
      use(
        "create_branch",
        { ...repo, branch: "fix/optional-chain-after-template", from_branch: "main" },
        JSON.stringify({ ref: "refs/heads/fix/optional-chain-after-template", sha: "a1b2c3d" }),
      ),
    ],
  },
  {
    uses: [
      use(
        "get_file_contents",
        { ...repo, path: "CHANGELOG.md", branch: "main" },
        `# Changelog\n\n${code(900)}`,
      ),
    ],
  },
  {
    uses: [
      use(
        "update_file_contents",
        {
          ...repo,
          path: "CHANGELOG.md",
          branch: "fix/optional-chain-after-template",
          message: "changelog",
          content: "- parser: keep the token after a template literal",
          sha: "c0ffee",
        },
        JSON.stringify({ commit: { sha: "d4e5f6" } }),
      ),
    ],
  },
  { uses: [run("pnpm lint", 300, false)] },
  {
    uses: [
      use(
        "edit_file",
        { path: "src/parser.test.ts", edits: [{ oldText: "it.todo(", newText: "it(" }] },
        `--- src/parser.test.ts\n+++ src/parser.test.ts\n${code(220)}`,
      ),
    ],
  },
  {
    uses: [run("pnpm test", 700, false)],
    load: ["create_pull_request", "list_workflow_runs", "get_workflow_run"],
  },
  {
    uses: [
      use(
        "create_pull_request",
        {
          ...repo,
          title: "parser: keep the token after a template literal",
          head: "fix/optional-chain-after-template",
          base: "main",
          body: "Fixes #412.",
        },
        JSON.stringify({ number: 431, html_url: "https://example.test/acme/parser/pull/431", state: "open" }),
      ),
    ],
  },
  {
    uses: [
      use(
        "list_workflow_runs",
        { ...repo, branch: "fix/optional-chain-after-template" },
        listing(4, (i) => ({
          id: 7700 + i,
          name: pick(["ci", "lint", "bench"]),
          status: "completed",
          conclusion: i === 1 ? "failure" : "success",
        })),
      ),
    ],
  },
  {
    uses: [
      use(
        "get_workflow_run",
        { ...repo, run_id: 7701 },
        JSON.stringify({ id: 7701, conclusion: "failure", log: testOutput(600, true) }),
      ),
    ],
    load: [
      "list_messages",
      "create_message",
      "create_issue_comment",
      "update_issue",
      "list_pull_request_reviews",
      "read_file",
    ],
  },
  {
    uses: [
      use(
        "list_messages",
        { workspace_id: "T01", channel_id: "C-parser" },
        listing(6, (i) => ({
          ts: `1733050${i}00.0001`,
          user: pick(["dana", "lee"]),
          text: `the ${pick(IDENTS)} ${pick(IDENTS)} is flaky again?`,
        })),
      ),
    ],
  },
  {
    uses: [
      use(
        "create_message",
        {
          workspace_id: "T01",
          channel_id: "C-parser",
          text: "PR #431 fixes #412; CI's bench job fails on main too.",
        },
        JSON.stringify({ ok: true, ts: "1733050900.0002" }),
      ),
    ],
  },
  {
    uses: [
      use(
        "create_issue_comment",
        { ...repo, issue_number: 412, body: "Fixed in #431." },
        JSON.stringify({ id: 99001, html_url: "https://example.test/acme/parser/issues/412#c99001" }),
      ),
    ],
  },
  {
    uses: [
      use(
        "update_issue",
        { ...repo, issue_id: "412", labels: ["parser", "fixed-in-pr"] },
        JSON.stringify({ number: 412, labels: ["parser", "fixed-in-pr"] }),
      ),
    ],
  },
  {
    uses: [
      use(
        "list_pull_request_reviews",
        { ...repo, pull_number: 431 },
        listing(2, (i) => ({
          id: 5100 + i,
          user: pick(["dana", "lee"]),
          state: i ? "APPROVED" : "COMMENTED",
          body: "Looks right.",
        })),
      ),
    ],
  },
  {
    uses: [
      use(
        "create_message",
        { workspace_id: "T01", channel_id: "C-parser", text: "#431 is approved; merging after CI." },
        JSON.stringify({ ok: true, ts: "1733051000.0003" }),
      ),
    ],
  },
];

/** The task: 30 steps of tool work, then the answer. */
export const TASK: Task = {
  system:
    "You are a careful software engineer working in the acme/parser repository. Use the tools to investigate before changing anything, run the tests after each change, and keep the team informed.",
  question:
    "Issue #412 says the parser drops the token after a template literal when it is followed by optional chaining. Find the cause, fix it with a test, open a pull request and let #parser know.",
  firstLoad: ["list_issues", "get_issue", "search_files", "read_file", "run_command", "edit_file"],
  steps,
  answer:
    "Fixed: the parser advanced its cursor by one instead of by the token's length. PR #431 is open and approved.",
};
