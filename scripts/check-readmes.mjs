// Type-checks every ```ts block of the package READMEs under `strict`, each block its own module,
// importing the packages by name (their built declarations), so a README's code cannot drift from
// the API it documents. A block fenced ```ts fragment (a shape listing, a piece of a larger
// program) is read as prose and skipped. Build first (`pnpm build`).
//   node scripts/check-readmes.mjs   exit 1, naming README and line, for any block that does not compile
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const work = join(root, ".readme-check");
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

const blocks = new Map(); // file name → { readme, line }
for (const name of readdirSync(join(root, "packages")).sort()) {
  const readme = join("packages", name, "README.md");
  if (!existsSync(join(root, readme))) continue;
  const text = readFileSync(join(root, readme), "utf8");
  const fence = /^```ts\n([\s\S]*?)^```$/gm;
  let count = 0;
  for (let match = fence.exec(text); match; match = fence.exec(text)) {
    count += 1;
    const file = `${name}-${count}.ts`;
    const line = text.slice(0, match.index).split("\n").length + 1;
    blocks.set(file, { readme, line });
    // `export {}` keeps each block a module of its own (top-level await, no shared names).
    writeFileSync(join(work, file), `${match[1]}\nexport {};\n`);
  }
}

writeFileSync(
  join(work, "tsconfig.json"),
  JSON.stringify(
    {
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2023", "DOM"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["node"],
        paths: { "@loopwright/*": ["../packages/*/dist/index.d.ts"] },
      },
      include: ["*.ts"],
    },
    null,
    2,
  ),
);

const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", work], {
  encoding: "utf8",
});
let failures = 0;
for (const line of `${tsc.stdout}${tsc.stderr}`.split("\n")) {
  const hit = /^(?:\.readme-check\/)?([\w.-]+\.ts)\((\d+),(\d+)\): (error .*)$/.exec(line);
  if (!hit) {
    if (line.trim() !== "" && tsc.status !== 0 && !line.startsWith(" ")) console.error(line);
    continue;
  }
  const [, file, at, column, message] = hit;
  const block = blocks.get(file ?? "");
  failures += 1;
  console.error(`${block?.readme ?? file}:${(block?.line ?? 1) + Number(at) - 1}:${column} ${message}`);
}
rmSync(work, { recursive: true, force: true });
console.log(`${blocks.size} README blocks checked, ${failures} errors`);
if (failures > 0 || tsc.status !== 0) process.exit(1);
