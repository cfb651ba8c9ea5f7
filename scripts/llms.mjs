// Generates packages/*/llms.txt from each package's src/index.ts: every export with its signature
// and the whole first paragraph of its own doc comment, read through the TypeScript compiler so
// the index is the exports rather than a second description of them.
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

/** The doc comment's first paragraph, whole: every line up to the first blank one, joined. */
function firstParagraph(symbol, checker) {
  const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
  const paragraph = text.split(/\r?\n\s*\r?\n/)[0] ?? "";
  return paragraph.replace(/\s*\r?\n\s*/g, " ").trim();
}

const squeeze = (text) => text.replace(/\s+/g, " ").trim();
const MAX_SIGNATURE = 400;
const clip = (text) => (text.length > MAX_SIGNATURE ? `${text.slice(0, MAX_SIGNATURE - 1)}…` : text);

/** How the export is called or spelled: a function's signatures, a class's constructors, a type's definition, a const's type. */
function signatureOf(name, symbol, decl, checker) {
  if (!decl) return "";
  const flags = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope;
  const kind = kindOf(decl);
  if (kind === "function") {
    const type = checker.getTypeOfSymbolAtLocation(symbol, decl);
    return type
      .getCallSignatures()
      .map((sig) => `${name}${checker.signatureToString(sig, decl, flags)}`)
      .join("; ");
  }
  if (kind === "class") {
    const type = checker.getTypeOfSymbolAtLocation(symbol, decl);
    const ctors = type
      .getConstructSignatures()
      .map((sig) => `new ${name}${checker.signatureToString(sig, decl, flags)}`);
    return ctors.join("; ");
  }
  const params = decl.typeParameters ? `<${decl.typeParameters.map((p) => p.getText()).join(", ")}>` : "";
  if (kind === "type") return `type ${name}${params} = ${squeeze(decl.type.getText())}`;
  if (kind === "interface") {
    const members = decl.members.map((member) =>
      squeeze(member.getText())
        .replace(/\/\*\*[\s\S]*?\*\/\s*/g, "")
        .replace(/;$/, ""),
    );
    const heritage = decl.heritageClauses
      ? ` ${decl.heritageClauses.map((h) => squeeze(h.getText())).join(" ")}`
      : "";
    return `interface ${name}${params}${heritage} { ${members.join("; ")} }`;
  }
  if (kind === "const")
    return `${name}: ${checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, decl), decl, flags)}`;
  return "";
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
    const decl = target.declarations?.[0];
    const doc = firstParagraph(target, checker);
    if (!doc) missing.push(exported.name);
    const signature = clip(squeeze(signatureOf(exported.name, target, decl, checker)));
    lines.push(`- \`${exported.name}\` (${kindOf(decl)}): ${doc || "(undocumented)"}`);
    if (signature !== "") lines.push(`  \`${signature.replace(/`/g, "'")}\``);
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
