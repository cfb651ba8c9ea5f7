// Lists the property descriptors and Proxy handlers written as object literals with a prototype, and
// the reads of a descriptor that keep one. The engine reads a descriptor's `get`, `set`, `value`,
// `writable`, … and a handler's traps through the prototype too: with `Object.prototype.get` set by
// some code in the host's process (prototype pollution), every `Object.defineProperty(o, k, { value })`
// throws "Getter must be a function", and a `"value" in descriptor` of an accessor answers yes.
// So, in every package's sources (tests apart):
// - a literal given to `Object.defineProperty`/`Reflect.defineProperty`, to `Object.defineProperties`
//   or `Object.create`'s second argument (each member), or as `new Proxy`'s handler is wrapped in the
//   package's `protoless(…)` (or starts with `__proto__: null`);
// - `Object.getOwnPropertyDescriptor(s)` and `Reflect.getOwnPropertyDescriptor` are called only
//   through the package's `ownDescriptor(s)` (its `protoless.ts`), which hands them back prototype-less.
// A descriptor built elsewhere and passed by name is the author's to make prototype-less.
//   node scripts/check-descriptors.mjs      exit 1 when one is found
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const root = new URL("..", import.meta.url).pathname;
const dirs = [
  ...readdirSync(join(root, "packages")).map((pkg) => join(root, "packages", pkg, "src")),
  join(root, "apps", "playground", "src"),
];
const isMember = (node, object, name) =>
  ts.isPropertyAccessExpression(node) &&
  ts.isIdentifier(node.expression) &&
  node.expression.text === object &&
  node.name.text === name;

const found = [];
for (const dir of dirs) {
  let names;
  try {
    names = readdirSync(dir, { recursive: true });
  } catch {
    continue;
  }
  for (const name of names) {
    if (!/\.m?ts$/.test(name) || /\.test(-d)?\.ts$/.test(name) || name.endsWith(".d.ts")) continue;
    const file = join(dir, name);
    const text = readFileSync(file, "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const at = (node) =>
      `${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
    const literal = (node, what) => {
      if (!node || !ts.isObjectLiteralExpression(node)) return;
      const first = node.properties[0];
      if (first && ts.isPropertyAssignment(first) && first.name.getText(source) === "__proto__") return;
      found.push(`${at(node)}: ${what} written as a literal with a prototype: wrap it in protoless(…)`);
    };
    const visit = (node) => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        if (isMember(callee, "Object", "defineProperty") || isMember(callee, "Reflect", "defineProperty"))
          literal(node.arguments[2], "a property descriptor");
        if (isMember(callee, "Object", "defineProperties") || isMember(callee, "Object", "create")) {
          const map = node.arguments[1];
          if (map && ts.isObjectLiteralExpression(map))
            for (const member of map.properties)
              if (ts.isPropertyAssignment(member)) literal(member.initializer, "a property descriptor");
        }
        const read =
          isMember(callee, "Object", "getOwnPropertyDescriptor") ||
          isMember(callee, "Object", "getOwnPropertyDescriptors") ||
          isMember(callee, "Reflect", "getOwnPropertyDescriptor");
        if (read && !file.endsWith("protoless.ts"))
          found.push(`${at(node)}: a descriptor read with its prototype: call ownDescriptor(s) instead`);
      }
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "Proxy")
        literal(node.arguments?.[1], "a Proxy handler");
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
}
for (const line of found) console.log(line);
if (found.length > 0) {
  console.error(`${found.length} descriptors or handlers a polluted Object.prototype reaches`);
  process.exit(1);
}
console.log("check-descriptors: every descriptor and Proxy handler written here has no prototype");
