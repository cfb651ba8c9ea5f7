// Scaffolds packages/<name> with the house skeleton. Used once per package; kept so a new package
// starts the same way the others did.  usage: node scripts/new-package.mjs <name> "<description>" [--neutral] [--deps a,b] [--peers openai,zod] [--ext jsonrepair]
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [name, description, ...rest] = process.argv.slice(2);
if (!name || !description) throw new Error("usage: new-package <name> <description> [flags]");
const flag = (f) => rest.includes(f);
const list = (f) => {
  const i = rest.indexOf(f);
  return i >= 0 && rest[i + 1] ? rest[i + 1].split(",").filter(Boolean) : [];
};
const dir = join("packages", name);
if (existsSync(join(dir, "package.json"))) throw new Error(`${dir} exists`);
mkdirSync(join(dir, "src"), { recursive: true });

const deps = Object.fromEntries([
  ...list("--deps").map((d) => [`@loopwright/${d}`, "workspace:^"]),
  ...list("--ext").map((d) => [d, "catalog:"]),
]);
const peers = Object.fromEntries(list("--peers").map((p) => [p, p === "openai" ? "^6 || ^7" : "^4"]));
const pkg = {
  name: `@loopwright/${name}`,
  version: "0.1.0",
  // Private until it exports something: the release guard (scripts/check-publishable.mjs) refuses
  // to publish an empty module. Remove this line once src/index.ts has the package's exports.
  private: true,
  description,
  license: "MIT",
  type: "module",
  sideEffects: false,
  engines: { node: ">=20" },
  exports: {
    ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
    "./package.json": "./package.json",
  },
  main: "./dist/index.js",
  types: "./dist/index.d.ts",
  files: ["dist", "src", "!src/**/*.test.ts", "llms.txt"],
  scripts: {
    build: "tsup",
    test: "vitest run",
    "type-check": "tsc --noEmit",
    "check:pkg": "publint --strict && attw --pack . --profile esm-only",
  },
  ...(Object.keys(deps).length ? { dependencies: deps } : {}),
  ...(Object.keys(peers).length ? { peerDependencies: peers } : {}),
  devDependencies: Object.fromEntries(list("--peers").map((p) => [p, "catalog:"])),
  publishConfig: { access: "public" },
  repository: { type: "git", url: "git+https://github.com/loopwright/loopwright.git", directory: dir },
};
writeFileSync(join(dir, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync(
  join(dir, "tsconfig.json"),
  `${JSON.stringify(
    {
      extends: "../../tsconfig.base.json",
      compilerOptions: { types: flag("--neutral") ? [] : ["node"], noEmit: true },
      include: ["src", "*.config.ts"],
    },
    null,
    2,
  )}\n`,
);
writeFileSync(
  join(dir, "tsup.config.ts"),
  `import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "es2022",
  platform: "${flag("--neutral") ? "neutral" : "node"}",
});
`,
);
writeFileSync(
  join(dir, "vitest.config.ts"),
  `import { defineProject } from "vitest/config";

// A worker imports the package's modules once for all its files (the root vitest.config.ts says
// what that asks of a test file). A file that replaces a module with \`vi.mock\` is named
// *.isolated.test.ts and runs in a vitest.isolated.config.ts of its own (see packages/loop).
export default defineProject({
  test: { isolate: false, name: "${name}", environment: "node" },
});
`,
);
writeFileSync(
  join(dir, "README.md"),
  `# @loopwright/${name}\n\n${description}\n\n**Not yet implemented: see the roadmap** (the open issues). This package exports nothing yet.\n`,
);
writeFileSync(join(dir, "src/index.ts"), "export {};\n");
console.log(`created ${dir}`);
