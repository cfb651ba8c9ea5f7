import type { FunctionToolLike } from "@loopwright/schema-compat";
import type { CatalogServer } from "../catalog.js";

function tool(name: string, description: string, properties: Record<string, unknown>): FunctionToolLike {
  return {
    type: "function",
    function: {
      name,
      description,
      parameters: { type: "object", properties, required: Object.keys(properties) },
    },
  };
}

/** Six tools on two servers, as a host would hold them. */
export const TOOLS: FunctionToolLike[] = [
  tool("create_issue", "Open an issue in a repository.\nMarkdown is allowed.", {
    repo: { type: "string" },
    title: { type: "string" },
  }),
  tool("list_issues", "List a repository's issues.", { repo: { type: "string" } }),
  tool("get_file", "Read a file from a repository.", { repo: { type: "string" }, path: { type: "string" } }),
  tool("read_file", "Read a file from disk.", { path: { type: "string" } }),
  tool("write_file", "Write a file to disk.", { path: { type: "string" }, content: { type: "string" } }),
  tool("list_directory", "List a directory.", { path: { type: "string" } }),
];

/** The same tools, name-only, on the servers they came from (listed out of name order on purpose). */
export const CATALOG: CatalogServer[] = [
  {
    name: "github",
    tools: [
      { name: "list_issues", description: "List a repository's issues." },
      { name: "create_issue", description: "Open an issue in a repository." },
      { name: "get_file" },
    ],
  },
  {
    name: "filesystem",
    tools: [{ name: "write_file" }, { name: "read_file" }, { name: "list_directory" }],
  },
];

/** What `run` threw; fails the test when it returned instead. */
export function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a throw, and the call returned");
}
