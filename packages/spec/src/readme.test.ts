/// <reference types="node" />
// The README's example is the first thing a user runs: it is run here, against the built package
// (imported by its own name), and what it prints must match the comments written under it.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

describe("the README example", () => {
  it("runs and prints what its comments say", () => {
    const code = /```js\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(code).toContain('from "@loopwright/spec"');
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", code], {
      cwd: packageDir,
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    // Each comment right after a console.log line is that line's output ("…" ends a prefix).
    const expected = [...code.matchAll(/console\.log\([^\n]*\n(?:\s*\}\n)?\s*\/\/ ([^\n]+)/g)].map(
      (m) => m[1] ?? "",
    );
    expect(expected.length).toBe(4);
    const printed = run.stdout.trim().split("\n");
    expected.forEach((line, index) => {
      const got = printed[index] ?? "";
      if (line.endsWith("…")) expect(got.startsWith(line.slice(0, -1))).toBe(true);
      else expect(got).toBe(line);
    });
  });
});

describe("the README's field table", () => {
  it("lists every field of the document's schema", async () => {
    const { agentSpecJsonSchema } = await import("./schema.js");
    const listed = new Set([...readme.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]));
    const missing: string[] = [];
    const walk = (node: Record<string, unknown>, path: string) => {
      const props = node.properties as Record<string, Record<string, unknown>> | undefined;
      for (const [key, child] of Object.entries(props ?? {})) {
        const at = path === "" ? key : `${path}.${key}`;
        const inner = resolveNode(child);
        // An object's fields are listed one by one; a leaf, a list or a map is listed itself.
        if ((!inner.properties || inner.list || inner.map) && !listed.has(at)) missing.push(at);
        walk(inner, inner.list ? `${at}[]` : inner.map ? `${at}.*` : at);
      }
    };
    const root = agentSpecJsonSchema() as Record<string, unknown>;
    const defs = (root.$defs ?? {}) as Record<string, Record<string, unknown>>;
    const resolveNode = (node: Record<string, unknown>): Record<string, unknown> => {
      const ref = node.$ref as string | undefined;
      if (ref) return resolveNode(defs[ref.split("/").pop() ?? ""] ?? {});
      const options = (node.anyOf ?? node.oneOf) as Record<string, unknown>[] | undefined;
      const object = options?.map(resolveNode).find((option) => option.properties || option.items);
      if (object) return object;
      if (node.type === "array" && node.items)
        return { ...resolveNode(node.items as Record<string, unknown>), list: true };
      if (node.additionalProperties && typeof node.additionalProperties === "object" && !node.properties)
        return { ...resolveNode(node.additionalProperties as Record<string, unknown>), map: true };
      return node;
    };
    walk(root, "");
    expect(missing).toEqual([]);
  });
});
