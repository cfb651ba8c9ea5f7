// The release guard: nothing empty is publishable. For every package that is not `"private": true`,
// import its built entry point and refuse (exit 1) when the module exports nothing, when it has not
// been built, or when it depends on a private sibling that would never reach the registry. A package
// with no implementation yet stays private; once it has one and drops `private`, this passes.
//   node scripts/check-publishable.mjs            every package under packages/ and apps/
//   node scripts/check-publishable.mjs <dir> …    only those package folders
// Run by `pnpm check:pkg` (CI) and by `pnpm release` before `changeset publish`. Build first.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const root = resolve(new URL("..", import.meta.url).pathname);
const readPkg = (dir) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));

const all = ["packages", "apps"]
  .filter((group) => existsSync(join(root, group)))
  .flatMap((group) => readdirSync(join(root, group)).map((d) => join(root, group, d)))
  .filter((dir) => existsSync(join(dir, "package.json")));
const byName = new Map(all.map((dir) => [readPkg(dir).name, dir]));
const chosen = process.argv.slice(2).map((d) => resolve(d));

/** The file `import "<name>"` loads: exports["."] (import, then default), else main. */
function entryOf(json) {
  const dot = typeof json.exports === "string" ? json.exports : json.exports?.["."];
  const target = typeof dot === "string" ? dot : (dot?.import ?? dot?.default ?? json.main);
  return typeof target === "string" ? target : typeof json.main === "string" ? json.main : undefined;
}

const problems = [];
const checked = [];
for (const dir of chosen.length > 0 ? chosen : all) {
  const json = readPkg(dir);
  if (json.private) continue;
  const name = json.name;
  for (const dep of Object.keys({ ...json.dependencies, ...json.peerDependencies })) {
    const depDir = byName.get(dep);
    if (depDir && readPkg(depDir).private) {
      problems.push(
        `${name} depends on ${dep}, which is private (never published); publish it first or drop the dependency.`,
      );
    }
  }
  const entry = entryOf(json);
  if (!entry) {
    problems.push(`${name} has no entry point (exports["."] or main) to publish.`);
    continue;
  }
  const file = join(dir, entry);
  if (!existsSync(file)) {
    problems.push(`${name}: ${entry} is missing; build it first (pnpm build).`);
    continue;
  }
  let names;
  try {
    names = Object.keys(await import(pathToFileURL(file).href));
  } catch (error) {
    problems.push(`${name}: importing ${entry} failed: ${error.message}`);
    continue;
  }
  if (names.length === 0) {
    problems.push(
      `${name}: ${entry} exports nothing, so the package would be published empty; implement it or mark it "private": true until it is.`,
    );
    continue;
  }
  checked.push(`${name} (${names.length} exports)`);
}

if (problems.length > 0) {
  console.error(`release guard: refusing to publish\n- ${problems.join("\n- ")}`);
  process.exit(1);
}
console.log(`release guard: ${checked.length} publishable packages, none empty: ${checked.join(", ")}`);
