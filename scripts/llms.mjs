// Generates packages/*/llms.txt from each package's src/index.ts: every export with the first
// line of its own doc comment, read through the TypeScript compiler so the index is the exports
// rather than a second description of them.
//   node scripts/llms.mjs          regenerate every llms.txt
//   node scripts/llms.mjs --check  exit 1 when a committed llms.txt differs from what it would be
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const check = process.argv.includes("--check");
const root = new URL("..", import.meta.url).pathname;
const packagesDir = join(root, "packages");

function kindOf(decl) {
  if (!decl) return "value";
  if (ts.isFunctionDeclaration(decl)) return "function";
  if (ts.isClassDeclaration(decl)) return "class";
  if (ts.isInterfaceDeclaration(decl)) return "interface";
  if (ts.isTypeAliasDeclaration(decl)) return "type";
  if (ts.isEnumDeclaration(decl)) return "enum";
  if (ts.isVariableDeclaration(decl)) {
    const init = decl.initializer;
    if (init && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))) return "function";
    return "const";
  }
  return "value";
}

function firstDocLine(symbol, checker) {
  const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
  return text.split(/\r?\n/)[0]?.trim() ?? "";
}

export function render(pkgDir) {
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const entry = join(pkgDir, "src/index.ts");
  const program = ts.createProgram([entry], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  const moduleSymbol = source && checker.getSymbolAtLocation(source);
  const lines = [`# ${pkg.name}`, "", `> ${pkg.description}`, ""];
  const exports = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
  if (exports.length === 0) {
    lines.push("Nothing is exported yet: see the roadmap.", "");
    return lines.join("\n");
  }
  lines.push("## Exports", "");
  const missing = [];
  for (const exported of [...exports].sort((a, b) => a.name.localeCompare(b.name))) {
    const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const doc = firstDocLine(target, checker);
    if (!doc) missing.push(exported.name);
    lines.push(`- \`${exported.name}\` (${kindOf(target.declarations?.[0])}): ${doc || "(undocumented)"}`);
  }
  lines.push("");
  return { text: lines.join("\n"), missing };
}

let drift = 0;
let undocumented = 0;
for (const name of readdirSync(packagesDir).sort()) {
  const dir = join(packagesDir, name);
  if (!existsSync(join(dir, "src/index.ts"))) continue;
  const out = render(dir);
  const text = typeof out === "string" ? out : out.text;
  const missing = typeof out === "string" ? [] : out.missing;
  for (const m of missing) {
    undocumented++;
    console.error(`${name}: export \`${m}\` has no doc comment`);
  }
  const file = join(dir, "llms.txt");
  const current = existsSync(file) ? readFileSync(file, "utf8") : undefined;
  if (check) {
    if (current !== text) {
      drift++;
      console.error(`${name}/llms.txt is out of date: run \`pnpm llms\` and commit it`);
    }
  } else if (current !== text) {
    writeFileSync(file, text);
    console.log(`wrote packages/${name}/llms.txt`);
  }
}
if (drift || (check && undocumented)) process.exit(1);
