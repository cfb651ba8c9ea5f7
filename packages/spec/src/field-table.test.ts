/// <reference types="node" />
// The README lists the document's fields in a table (| `path` | …): every field of the schema must
// be in it, so a new field cannot ship undocumented. (Its example is run, and its printed output
// compared with its comments, by `pnpm check:readmes`.)
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

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
