// Finds property tests the run-count switch cannot reach. LOOPWRIGHT_PROPERTY_SCALE (`pnpm stress`,
// test-support/properties.ts) multiplies fast-check's global run count, which a run's own `numRuns`
// overrides: so a test names its count as `propertyRuns(60)`, and an object literal written with a
// `numRuns` key in a *.test.ts under packages/, apps/ or test-support/ is reported, wherever it is passed. Not in an
// `fc.sample` / `fc.statistics` call: those draw a fixed set of values (often to show a generator
// reaches a case), not a property.
//   node scripts/check-property-runs.mjs      exit 1 when one is found
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { testFiles } from "./test-files.mjs";

const root = new URL("..", import.meta.url).pathname;

/** True inside the arguments of `fc.sample(…)` or `fc.statistics(…)`. */
function inSample(node) {
  for (let n = node.parent; n; n = n.parent) {
    if (
      ts.isCallExpression(n) &&
      ts.isPropertyAccessExpression(n.expression) &&
      ["sample", "statistics"].includes(n.expression.name.text)
    ) {
      return true;
    }
  }
  return false;
}

const files = ["packages", "apps", "test-support"].flatMap((group) => testFiles(join(root, group)));
const findings = [];
for (const file of files) {
  const name = relative(root, file);
  const text = readFileSync(file, "utf8");
  if (!text.includes("numRuns")) continue;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (
      (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) &&
      node.name.getText(source) === "numRuns" &&
      !inSample(node)
    ) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      findings.push(`${name}:${line + 1}  ${node.getText(source).split("\n")[0]}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
if (findings.length > 0) {
  console.error(
    `check-property-runs: ${findings.length} run count(s) LOOPWRIGHT_PROPERTY_SCALE cannot reach; write propertyRuns(n) (test-support/properties.ts):\n${findings.join("\n")}`,
  );
  process.exit(1);
}
console.log(`check-property-runs: ${files.length} test files, every named run count through propertyRuns`);
