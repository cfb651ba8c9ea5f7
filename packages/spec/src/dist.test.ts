/// <reference types="node" />
// The built bundle must load where a browser form would load it: no Node module, no Node global.
// Checked two ways on dist/index.js (run `pnpm build` first): its import specifiers are read, and
// it is run — with zod, itself loaded the same way — in a fresh vm context that has the web's
// URL but no require, process or Buffer, importing nothing but zod.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const bundlePath = fileURLToPath(new URL("../dist/index.js", import.meta.url));
const zodEntry = join(dirname(createRequire(import.meta.url).resolve("zod/package.json")), "index.js");

/** Every module specifier a piece of ESM names: static imports and re-exports, dynamic import, require. */
function specifiers(code: string): string[] {
  const found = new Set<string>();
  const patterns = [
    /\bimport\s*(?:[\w$*{}\s,]+\s*from\s*)?["']([^"']+)["']/g,
    /\bexport\s*[\w$*{}\s,]+\s*from\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g,
    /\brequire\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) found.add(match[1] as string);
  return [...found].sort();
}

// Runs in a child Node with --experimental-vm-modules. Linking refuses anything but zod's own
// files; the context holds only what a browser page also has.
const CHILD = `
import vm from "node:vm";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [bundlePath, zodEntry] = process.argv.slice(-2);
const context = vm.createContext({ URL, URLSearchParams, console });
const zodRoot = new URL(".", pathToFileURL(zodEntry));
const cache = new Map();
const refused = [];
function load(url) {
  if (!cache.has(url)) {
    const source = readFileSync(new URL(url), "utf8");
    cache.set(url, new vm.SourceTextModule(source, { context, identifier: url }));
  }
  return cache.get(url);
}
async function linker(specifier, referrer) {
  if (specifier === "zod") return load(pathToFileURL(zodEntry).href);
  const target = new URL(specifier, referrer.identifier).href;
  if ((specifier.startsWith("./") || specifier.startsWith("../")) && target.startsWith(zodRoot.href)) return load(target);
  refused.push(specifier);
  throw new Error("the bundle reached for " + specifier);
}
const entry = load(pathToFileURL(bundlePath).href);
let outcome;
try {
  await entry.link(linker);
  await entry.evaluate();
  const api = entry.namespace;
  const run = vm.runInContext(\`(api) => {
    const pasted = JSON.parse(\${JSON.stringify(JSON.stringify({
      spec: "loopwright.agent/1",
      model: { name: "m", temperature: 9, endpoint: { baseUrl: "https://u:p@h.example/v1" } },
      tools: { servers: [] },
      bundle: { mcpServers: [{ name: "gh", command: "npx", env: { GITHUB_TOKEN: "x" } }] },
    }))});
    const parsed = api.parseSpec(pasted, { bundle: true });
    const config = api.resolveAgentSpec([parsed.spec]);
    return {
      globals: [typeof process, typeof require, typeof Buffer, typeof URL],
      warnings: parsed.warnings.map(String),
      config,
      exported: api.exportSpec(parsed.spec).bundle,
      secrets: api.findSpecSecrets(parsed.spec),
      schemaId: api.agentSpecJsonSchema().$id,
    };
  }\`, context);
  outcome = { ok: true, value: run(api), refused };
} catch (error) {
  outcome = { ok: false, error: String(error && error.stack || error), refused };
}
console.log(JSON.stringify(outcome));
`;

describe("the built bundle (dist/index.js) loads in a browser", () => {
  let dir = "";
  beforeAll(() => {
    if (!existsSync(bundlePath))
      throw new Error("dist/index.js is missing: run `pnpm build` in packages/spec first.");
    dir = mkdtempSync(join(tmpdir(), "spec-dist-"));
    writeFileSync(join(dir, "child.mjs"), CHILD);
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("imports nothing but zod, and touches no Node global", () => {
    const code = readFileSync(bundlePath, "utf8");
    expect(specifiers(code)).toEqual(["zod"]);
    expect(code).not.toMatch(/\bprocess\.|\bBuffer\.|\b__dirname\b|\b__filename\b|\brequire\s*\(/);
  });

  it("the specifier scan would catch a Node import", () => {
    expect(specifiers(`import { readFileSync } from "node:fs";\nconst m = await import("crypto");`)).toEqual([
      "crypto",
      "node:fs",
    ]);
  });

  it("runs in a context without require, process or Buffer", () => {
    const child = spawnSync(
      process.execPath,
      ["--experimental-vm-modules", "--no-warnings", join(dir, "child.mjs"), bundlePath, zodEntry],
      { encoding: "utf8", timeout: 60_000 },
    );
    const line = child.stdout.trim().split("\n").pop() ?? "";
    expect(line, child.stderr).not.toBe("");
    const outcome = JSON.parse(line);
    expect(outcome.error).toBeUndefined();
    expect(outcome.refused).toEqual([]);
    expect(outcome.value.globals).toEqual(["undefined", "undefined", "undefined", "function"]);
    expect(outcome.value.warnings).toEqual([
      "model.temperature: expected a number from 0 to 2, got a number; dropped, not corrected, so a weaker layer's value applies.",
    ]);
    expect(outcome.value.config).toMatchObject({
      model: "m",
      apiKey: "",
      servers: [],
      baseUrl: "https://u:p@h.example/v1",
    });
    expect(outcome.value.exported).toEqual({ mcpServers: [{ name: "gh", command: "npx" }] });
    expect(outcome.value.secrets).toEqual([
      { path: "model.endpoint.baseUrl", sign: "userinfo" },
      { path: "bundle.mcpServers[0].env.GITHUB_TOKEN", server: "gh", sign: "field" },
    ]);
    expect(outcome.value.schemaId).toBe("https://unpkg.com/@loopwright/spec/schema/agent.schema.json");
  });
});
