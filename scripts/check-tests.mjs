// Finds tests that cannot fail. Reads every *.test.ts / *.test-d.ts under packages/, apps/ and
// test-support/ (and any file given) with the TypeScript parser and reports:
//   catch-only      a try/catch whose catch asserts while its try neither asserts nor throws (and no
//                   `throw`/`expect.fail` follows a catch that returns): when the code under test
//                   stops throwing, nothing runs and the test still passes;
//   built-value     expect(x).matcher(y) where x and y are both literals the test wrote, or a const
//                   holding a literal that is only ever read by expect(): it checks the test itself;
//   same-both-sides expect(a).toBe(a) / toEqual(a) / toStrictEqual(a) with the same expression twice;
//   skippable       in a function with no assertion that always runs, `if (…) { expect(…) }` (or
//                   `cond && expect(…)`) with no else that asserts or throws: when the condition is
//                   false the test checks nothing and passes.
// A line `// check-tests: allow <reason>` just above the statement accepts it.
//   node scripts/check-tests.mjs [file …]      exit 1 when anything is found
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { testFiles } from "./test-files.mjs";

const root = resolve(new URL("..", import.meta.url).pathname);
/** Test files, and the type-declaration tests (`*.test-d.ts`) beside them. */
const TEST_FILE = /\.test(-d)?\.tsx?$/;

const selfTest = process.argv.includes("--self-test");
const given = process.argv
  .slice(2)
  .filter((a) => a !== "--self-test")
  .map((f) => resolve(f));
const files =
  given.length > 0
    ? given
    : ["packages", "apps", "test-support"].flatMap((d) => {
        try {
          return testFiles(join(root, d), TEST_FILE);
        } catch {
          return [];
        }
      });

const ASSERT_MATCHERS = new Set(["toBe", "toEqual", "toStrictEqual"]);

/** The callee name of `expect(...)`, `expect.soft(...)`, `assert(...)`, `assert.x(...)`, `expect.fail()`… */
function isAssertion(node) {
  if (!ts.isCallExpression(node)) return false;
  let callee = node.expression;
  while (ts.isPropertyAccessExpression(callee)) callee = callee.expression;
  while (ts.isCallExpression(callee)) {
    callee = callee.expression;
    while (ts.isPropertyAccessExpression(callee)) callee = callee.expression;
  }
  return (
    ts.isIdentifier(callee) &&
    (callee.text === "expect" || callee.text === "assert" || callee.text === "expectTypeOf")
  );
}

/** True when `node` holds an assertion (or, with `orThrow`, a throw) anywhere inside, nested functions excluded. */
function contains(node, orThrow) {
  let found = false;
  const visit = (n) => {
    if (found) return;
    if (n !== node && (ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isArrowFunction(n))) {
      // A callback passed inline (e.g. `.then(() => expect(…))`) still runs as part of this code.
      if (!ts.isCallExpression(n.parent)) return;
    }
    if (isAssertion(n) || (orThrow && ts.isThrowStatement(n))) {
      found = true;
      return;
    }
    ts.forEachChild(n, visit);
  };
  visit(node);
  return found;
}

/** A literal the test wrote: numbers, strings, booleans, null, undefined, and arrays/objects of them. */
function isBuiltLiteral(node) {
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression?.(node))
    return isBuiltLiteral(node.expression);
  if (
    ts.isNumericLiteral(node) ||
    ts.isStringLiteral(node) ||
    ts.isNoSubstitutionTemplateLiteral(node) ||
    node.kind === ts.SyntaxKind.TrueKeyword ||
    node.kind === ts.SyntaxKind.FalseKeyword ||
    node.kind === ts.SyntaxKind.NullKeyword ||
    (ts.isIdentifier(node) && node.text === "undefined")
  )
    return true;
  if (ts.isPrefixUnaryExpression(node)) return isBuiltLiteral(node.operand);
  if (ts.isArrayLiteralExpression(node)) return node.elements.every(isBuiltLiteral);
  if (ts.isObjectLiteralExpression(node))
    return node.properties.every((p) => ts.isPropertyAssignment(p) && isBuiltLiteral(p.initializer));
  return false;
}

/** The `expect(x)` call at the start of a matcher chain, or undefined. */
function expectCallOf(node) {
  if (!ts.isCallExpression(node)) return undefined;
  let callee = node.expression;
  while (ts.isPropertyAccessExpression(callee)) {
    callee = callee.expression;
    if (
      ts.isCallExpression(callee) &&
      ts.isIdentifier(callee.expression) &&
      callee.expression.text === "expect"
    )
      return callee;
  }
  return undefined;
}

/**
 * True when the try statement's catch leaves (return/throw) and the statement right after the try
 * fails the test (`throw …`, `expect.fail(…)`, `expect.unreachable(…)`): "did not throw" is caught.
 */
function failsAfter(tryStatement) {
  const last = tryStatement.catchClause.block.statements.at(-1);
  if (!last || !(ts.isReturnStatement(last) || ts.isThrowStatement(last))) return false;
  const siblings = tryStatement.parent.statements;
  const next = siblings?.[siblings.indexOf(tryStatement) + 1];
  if (!next) return false;
  if (ts.isThrowStatement(next)) return true;
  const call = ts.isExpressionStatement(next) ? next.expression : undefined;
  return (
    !!call &&
    ts.isCallExpression(call) &&
    ts.isPropertyAccessExpression(call.expression) &&
    ["fail", "unreachable"].includes(call.expression.name.text)
  );
}

/** The function (test callback, helper) a node sits in, or the file. */
function enclosingFunction(node) {
  let n = node.parent;
  while (n && !ts.isFunctionLike(n) && !ts.isSourceFile(n)) n = n.parent;
  return n;
}

/** True when `fn` has an assertion that no if/else, `&&`, ternary or catch can skip (loops count as run). */
function assertsUnconditionally(fn) {
  let found = false;
  const visit = (n) => {
    if (found) return;
    if (n !== fn && ts.isFunctionLike(n) && !ts.isCallExpression(n.parent)) return;
    if (ts.isIfStatement(n) || ts.isCatchClause(n) || ts.isConditionalExpression(n)) return;
    if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.AmpersandAmpersandToken) return;
    if (isAssertion(n)) {
      found = true;
      return;
    }
    ts.forEachChild(n, visit);
  };
  if (fn) ts.forEachChild(fn, visit);
  return found;
}

function allowed(sf, node) {
  const text = sf.getFullText();
  const lineStart = text.lastIndexOf("\n", node.getStart(sf) - 1);
  const before = text.slice(Math.max(0, text.lastIndexOf("\n", lineStart - 1)), lineStart);
  return /check-tests:\s*allow\b/.test(before);
}

/** Every finding in `files`, as `path:line  rule: message`. */
function check(files) {
  const findings = [];
  for (const file of files) {
    const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const report = (node, rule, message) => {
      if (allowed(sf, node)) return;
      const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      findings.push(`${relative(root, file)}:${line + 1}  ${rule}: ${message}`);
    };

    /** Locals initialised with a literal, with how they are read. */
    const literalLocals = new Map();
    const collect = (node) => {
      if (
        ts.isVariableDeclaration(node) &&
        ts.isIdentifier(node.name) &&
        node.initializer &&
        isBuiltLiteral(node.initializer) &&
        ts.isVariableDeclarationList(node.parent) &&
        node.parent.flags & ts.NodeFlags.Const
      ) {
        literalLocals.set(node.name, { reads: 0, expectReads: 0 });
      }
      ts.forEachChild(node, collect);
    };
    collect(sf);
    const declByName = new Map([...literalLocals.keys()].map((id) => [id.text, id]));

    const visit = (node) => {
      if (ts.isTryStatement(node) && node.catchClause) {
        if (contains(node.catchClause.block, false) && !contains(node.tryBlock, true) && !failsAfter(node)) {
          report(
            node,
            "catch-only",
            "the assertions run only when the try block throws; assert after the try/catch on what was caught.",
          );
        }
      }
      const expectCall = expectCallOf(node);
      if (expectCall && expectCall.arguments.length > 0) {
        const subject = expectCall.arguments[0];
        // `expect(["a", "b"]).toContain(name)` reads the code's value through the matcher: fine.
        if (isBuiltLiteral(subject) && node.arguments.every(isBuiltLiteral)) {
          report(node, "built-value", `expect(${subject.getText(sf)}) checks a value the test wrote itself.`);
        }
        const matcher = node.expression;
        if (
          ts.isPropertyAccessExpression(matcher) &&
          ASSERT_MATCHERS.has(matcher.name.text) &&
          node.arguments.length === 1 &&
          node.arguments[0].getText(sf) === subject.getText(sf)
        ) {
          report(
            node,
            "same-both-sides",
            `expect(${subject.getText(sf)}).${matcher.name.text}(the same expression) cannot fail.`,
          );
        }
      }
      if (ts.isIfStatement(node) && contains(node.thenStatement, false)) {
        const elseAsserts = node.elseStatement && contains(node.elseStatement, true);
        if (!elseAsserts && !assertsUnconditionally(enclosingFunction(node))) {
          report(
            node,
            "skippable",
            `the assertion under \`if (${node.expression.getText(sf).slice(0, 60)})\` is skipped when that is false; assert the condition, or add an else that fails.`,
          );
        }
      }
      if (
        ts.isBinaryExpression(node) &&
        node.operatorToken.kind === ts.SyntaxKind.AmpersandAmpersandToken &&
        ts.isExpressionStatement(node.parent) &&
        contains(node.right, false) &&
        !assertsUnconditionally(enclosingFunction(node))
      ) {
        report(node, "skippable", "`cond && expect(…)` skips the assertion when cond is false.");
      }
      if (ts.isIdentifier(node) && !ts.isVariableDeclaration(node.parent)) {
        const decl = declByName.get(node.text);
        const info = decl && literalLocals.get(decl);
        if (info) {
          info.reads++;
          if (
            ts.isCallExpression(node.parent) &&
            ts.isIdentifier(node.parent.expression) &&
            node.parent.expression.text === "expect"
          )
            info.expectReads++;
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    for (const [id, info] of literalLocals) {
      if (info.expectReads > 0 && info.reads === info.expectReads) {
        report(
          id,
          "built-value",
          `\`${id.text}\` is a literal the test wrote and is only ever given to expect().`,
        );
      }
    }
  }

  return findings;
}

// --self-test: the checker must flag each bad snippet with its rule and pass each good one.
if (selfTest) {
  const cases = [
    ["catch-only", `it("x", () => { try { f(); } catch (e) { expect(e).toBeDefined(); } });`],
    ["built-value", `it("x", () => { expect(1 + 1 === 2 ? true : false); expect(true).toBe(true); });`],
    ["built-value", `it("x", () => { const v = { a: 1 }; expect(v).toEqual({ a: 1 }); });`],
    ["same-both-sides", `it("x", () => { expect(f()).toEqual(f()); });`],
    ["skippable", `it("x", () => { const r = f(); if (r) { expect(r.a).toBe(1); } });`],
    ["skippable", `it("x", () => { const r = f(); r && expect(r.a).toBe(1); });`],
    [null, `it("x", () => { let t; try { f(); } catch (e) { t = e; } expect(t).toBeDefined(); });`],
    [
      null,
      `async function g() { try { await f(); } catch (e) { expect(e).toBeDefined(); return e; } throw new Error("no"); }`,
    ],
    [null, `it("x", () => { try { f(); expect.unreachable(); } catch (e) { expect(e).toBeDefined(); } });`],
    [null, `it("x", () => { expect(["a", "b"]).toContain(f()); });`],
    [null, `it("x", () => { const r = f(); expect(r).toBeDefined(); if (r.a) expect(r.a).toBe(1); });`],
    [null, `it("x", () => { const r = f(); if (r) expect(r).toBe(1); else expect.fail("none"); });`],
    [
      null,
      `it("x", () => {\n  // check-tests: allow a property: not throwing is right too\n  try { f(); } catch (e) { expect(e).toBeDefined(); }\n});`,
    ],
  ];
  const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const dir = mkdtempSync(join(tmpdir(), "check-tests-"));
  const wrong = [];
  cases.forEach(([rule, code], i) => {
    const file = join(dir, `case${i}.test.ts`);
    writeFileSync(file, code);
    const found = check([file]);
    const ok = rule === null ? found.length === 0 : found.some((f) => f.includes(`  ${rule}:`));
    if (!ok) wrong.push(`case ${i} (${rule ?? "clean"}): ${found.join("; ") || "nothing found"}\n  ${code}`);
  });
  rmSync(dir, { recursive: true, force: true });
  if (wrong.length > 0) {
    console.error(`check-tests self-test failed:\n${wrong.join("\n")}`);
    process.exit(1);
  }
  console.log(`check-tests self-test: ${cases.length} cases read as expected`);
}

const findings = check(files);
if (findings.length > 0) {
  console.error(`check-tests: ${findings.length} assertion(s) that cannot fail:\n${findings.join("\n")}`);
  process.exit(1);
}
console.log(`check-tests: ${files.length} test files, no assertion that cannot fail`);
