// `pnpm demo`: builds what the playground needs with its output held back (shown only when the
// build fails), then asks the playground one question and prints the answer as it streams.
//   node scripts/demo.mjs [--prompt "…"] [--model name]
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const bin = (dir, name) => join(root, dir, "node_modules/.bin", name);
const args = process.argv.slice(2);
const prompt = args.length > 0 ? args : ["--prompt", "What time is it, and what is 17 * 23?"];

process.stderr.write(
  "Building the packages the playground uses (their output appears only if the build fails)…\n",
);
const build = spawnSync(
  bin(".", "turbo"),
  ["run", "build", "--filter=@loopwright/playground...", "--output-logs=errors-only"],
  { cwd: root, encoding: "utf8", env: { TURBO_TELEMETRY_DISABLED: "1", ...process.env } },
);
if (build.status !== 0) {
  process.stderr.write(`${build.stdout ?? ""}${build.stderr ?? ""}`);
  process.stderr.write(`\nThe build failed${build.error ? ` (${build.error.message})` : ""}; see above.\n`);
  process.exit(build.status ?? 1);
}

const run = spawnSync(bin("apps/playground", "tsx"), ["src/main.ts", ...prompt], {
  cwd: join(root, "apps/playground"),
  stdio: "inherit",
});
if (run.error) process.stderr.write(`Could not start the playground: ${run.error.message}\n`);
process.exit(run.status ?? 1);
