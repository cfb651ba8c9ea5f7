// Every @loopwright type a package's published declarations name must be nameable from that package.
// Under an isolated install (pnpm, `npm --install-strategy=linked`) a host sees only the packages it
// depends on, so a sibling type that appears in an exported signature but is not re-exported cannot be
// written in an annotation, and `declaration: true` fails with TS2742. For each package this reads the
// built dist/index.d.ts, lists the names it imports from `@loopwright/<sibling>`, and fails when one of
// them is not exported. A name the sibling exports as a value (a class such as `ContextOverflow`) must
// also be a value of the package at run time (dist/index.js), so `instanceof` works without the sibling.
// Build first.
//   node scripts/check-reexports.mjs [package-dir-name …]
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = new URL("..", import.meta.url).pathname;
const only = process.argv.slice(2);

// Gaps in packages this check does not yet hold to, each to be removed when it is closed (a listed
// name that is exported after all is reported, so the list cannot go stale).
const PENDING = {};

/** `{ a, b as c }` → [["a", "a"], ["b", "c"]] (the imported name, the local name). */
function specifiers(list) {
  return list
    .split(",")
    .map((part) => part.trim().replace(/^type\s+/, ""))
    .filter(Boolean)
    .map((part) => {
      const [name, local = name] = part.split(/\s+as\s+/);
      return [name.trim(), local.trim()];
    });
}

const problems = [];
const checked = [];
const dirs = readdirSync(join(root, "packages")).filter(
  (dir) => existsSync(join(root, "packages", dir, "package.json")) && (!only.length || only.includes(dir)),
);
for (const dir of dirs.sort()) {
  const dts = join(root, "packages", dir, "dist/index.d.ts");
  if (!existsSync(dts)) {
    problems.push(`packages/${dir}/dist/index.d.ts is missing: build first (pnpm build)`);
    continue;
  }
  const text = readFileSync(dts, "utf8");
  const imported = []; // { sibling, name, local }
  for (const match of text.matchAll(/^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(@loopwright\/[^']+)';/gm)) {
    for (const [name, local] of specifiers(match[1])) imported.push({ sibling: match[2], name, local });
  }
  const exported = new Set();
  for (const match of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)) {
    for (const [, as] of specifiers(match[1])) exported.add(as);
  }
  for (const match of text.matchAll(
    /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:class|interface|type|function|const|enum)\s+(\w+)/gm,
  ))
    exported.add(match[1]);

  // An `export { X }` may re-export a local name imported under another name: compare local names too.
  const isExported = ({ name, local }) => exported.has(name) || exported.has(local);
  const pending = new Set(PENDING[dir] ?? []);
  const gaps = imported.filter((entry) => !isExported(entry) && !pending.has(entry.name));
  for (const { sibling, name } of gaps)
    problems.push(
      `@loopwright/${dir} names ${name} from ${sibling} in its declarations but does not export it: add it to ` +
        `the \`export type { … } from "${sibling}"\` list at the end of packages/${dir}/src/index.ts`,
    );
  for (const name of pending)
    if (imported.some((entry) => entry.name === name && isExported(entry)))
      problems.push(
        `@loopwright/${dir} now exports ${name}: remove it from PENDING in scripts/check-reexports.mjs`,
      );

  // Values (classes, functions) of a sibling must be values here too, not only types.
  const siblings = [...new Set(imported.filter(isExported).map((entry) => entry.sibling))];
  let own;
  for (const sibling of siblings) {
    const siblingDir = sibling.replace("@loopwright/", "");
    const siblingJs = join(root, "packages", siblingDir, "dist/index.js");
    if (!existsSync(siblingJs)) continue;
    const values = await import(pathToFileURL(siblingJs).href);
    own ??= await import(pathToFileURL(join(root, "packages", dir, "dist/index.js")).href);
    for (const { name, local } of imported.filter(
      (entry) => entry.sibling === sibling && isExported(entry),
    )) {
      if (name in values && !(local in own) && !(name in own))
        problems.push(
          `@loopwright/${dir} exports ${name} from ${sibling} only as a type, but it is a value there ` +
            `(a class or function): export it with \`export { ${name} } from "${sibling}"\``,
        );
    }
  }
  checked.push(`${dir} (${imported.length} sibling names${pending.size ? `, ${pending.size} pending` : ""})`);
}

if (problems.length) {
  for (const problem of problems) console.error(problem);
  console.error(`re-export check failed: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`every sibling type in the declarations is re-exported: ${checked.join(", ")}`);
for (const [dir, names] of Object.entries(PENDING))
  console.log(`  pending in ${dir}: ${names.join(", ")} (not re-exported yet)`);
