// The proof that "install only one package" works: pack every package as it would be published,
// install each tarball alone (its @loopwright siblings from their own tarballs, everything else
// from the registry) into a fresh project, type-check an import of it with skipLibCheck: false,
// and import it under Node. The testkit is then exercised from that install (scripts/smoke-testkit.mjs).
// Last, the user stories in stories/ are type-checked and run from the same tarballs, with openai 6
// and 7 (scripts/smoke-stories.mjs).
//   node scripts/smoke-packed.mjs [package-name … | stories]
import { execFile, execFileSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { runStories, writeStrictConfig } from "./smoke-stories.mjs";

const root = new URL("..", import.meta.url).pathname;
const only = process.argv.slice(2);
const packDir = mkdtempSync(join(tmpdir(), "loopwright-pack-"));
const tsc = join(root, "node_modules/typescript/bin/tsc");

const packages = readdirSync(join(root, "packages"))
  .map((dir) => ({ dir: join(root, "packages", dir), json: readPkg(join(root, "packages", dir)) }))
  .filter((p) => !p.json.private);

function readPkg(dir) {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
}

const tarballs = {};
for (const p of packages) {
  const out = execFileSync("pnpm", ["pack", "--pack-destination", packDir], { cwd: p.dir, encoding: "utf8" });
  const file = out.trim().split("\n").pop().trim();
  tarballs[p.json.name] = file.startsWith("/") ? file : join(packDir, file);
}

const catalog = readFileSync(join(root, "pnpm-workspace.yaml"), "utf8");
const versionOf = (dep) =>
  catalog.match(new RegExp(`^\\s+['"]?${dep}['"]?: (.+)$`, "m"))?.[1]?.trim() ?? "latest";

const failures = [];
const run = promisify(execFile);

/** One package's smoke test in a fresh project; its output is printed whole when it ends. */
async function smoke(p) {
  const name = p.json.name;
  const project = mkdtempSync(join(tmpdir(), "loopwright-smoke-"));
  const log = [];
  const step = async (file, args) => {
    const { stdout, stderr } = await run(file, args, { cwd: project, encoding: "utf8", maxBuffer: 1 << 26 });
    log.push(stdout, stderr);
  };
  try {
    const peers = Object.keys(p.json.peerDependencies ?? {});
    const overrides = Object.fromEntries(Object.entries(tarballs).map(([n, f]) => [n, `file:${f}`]));
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify(
        {
          name: "smoke",
          private: true,
          type: "module",
          dependencies: {
            [name]: `file:${tarballs[name]}`,
            ...Object.fromEntries(peers.map((d) => [d, versionOf(d)])),
            "@types/node": versionOf("@types/node"),
          },
          overrides,
        },
        null,
        2,
      ),
    );
    await step("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]);
    writeFileSync(
      join(project, "smoke.ts"),
      `import * as pkg from "${name}";\nconst names: string[] = Object.keys(pkg);\nconsole.log("${name}", names.length, "exports");\n`,
    );
    writeStrictConfig({ project, files: ["smoke.ts"] });
    await step(process.execPath, [tsc, "-p", project]);
    mkdirSync(join(project, "run"), { recursive: true });
    writeFileSync(
      join(project, "run/smoke.mjs"),
      `import * as pkg from "${name}";\nconsole.log("${name}: imported under Node", process.version, "with", Object.keys(pkg).length, "exports");\n`,
    );
    await step(process.execPath, [join(project, "run/smoke.mjs")]);
    // The testkit is also used, not just imported: personalities, scripted model, every recording.
    if (name === "@loopwright/testkit") {
      copyFileSync(join(root, "scripts/smoke-testkit.mjs"), join(project, "run/testkit.mjs"));
      await step(process.execPath, [join(project, "run/testkit.mjs")]);
    }
  } catch (error) {
    failures.push(name);
    log.push(error.stdout ?? "", error.stderr ?? "", `smoke test failed for ${name}: ${error.message}\n`);
  } finally {
    rmSync(project, { recursive: true, force: true });
    process.stdout.write(log.filter(Boolean).join(""));
  }
}

// Three at a time: an install mostly waits on the registry, so the packages overlap well on two
// cores (measured: the sequential loop took about two minutes of the CI run).
const queue = packages.filter((p) => !only.length || only.includes(p.json.name.replace("@loopwright/", "")));
await Promise.all(
  Array.from({ length: 3 }, async () => {
    for (let p = queue.shift(); p; p = queue.shift()) await smoke(p);
  }),
);
if (!only.length || only.includes("stories")) {
  try {
    runStories({ root, tarballs, versionOf, tsc });
  } catch (error) {
    failures.push("stories");
    console.error(`the user stories failed: ${error.message}`);
  }
}
rmSync(packDir, { recursive: true, force: true });
if (failures.length) {
  console.error(`packed-install smoke test failed: ${failures.join(", ")}`);
  process.exit(1);
}
console.log(
  `packed-install smoke test passed for ${only.length ? only.join(", ") : "every package and story"}`,
);
