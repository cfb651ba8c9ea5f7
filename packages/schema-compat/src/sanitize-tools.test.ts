import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { listServerTools } from "../scripts/capture-mcp-tools.js";
import { checkStrictSchema } from "./check-strict.js";
import { SchemaCompatError } from "./errors.js";
import { relaxTools, sanitizeTools } from "./sanitize-tools.js";
import type { FunctionToolLike, ToolLike } from "./types.js";

const here = dirname(fileURLToPath(import.meta.url));
const bin = (name: string) => join(here, "../../../node_modules/.bin", name);

interface McpTool {
  name: string;
  description?: string;
  inputSchema: unknown;
}

/** An MCP tools/list entry as the function tool an OpenAI-compatible request declares. */
const asFunction = (tool: McpTool): FunctionToolLike => ({
  type: "function",
  function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
});

function captured(server: string): McpTool[] {
  const file = join(here, "../test-fixtures", `${server}.tools.json`);
  return (JSON.parse(readFileSync(file, "utf8")) as { tools: McpTool[] }).tools;
}

function expectAllStrict(tools: McpTool[]): void {
  const sanitized = sanitizeTools(tools.map(asFunction)) as FunctionToolLike[];
  const relaxed = relaxTools(tools.map(asFunction)) as FunctionToolLike[];
  expect(sanitized.map((t) => t.function.name)).toEqual(tools.map((t) => t.name));
  for (const tool of sanitized) {
    expect(checkStrictSchema(tool.function.parameters), tool.function.name).toEqual([]);
  }
  for (const tool of relaxed) {
    expect(checkStrictSchema(tool.function.parameters, { relaxed: true }), tool.function.name).toEqual([]);
  }
}

describe("sanitizeTools on real MCP servers", () => {
  for (const server of ["server-everything", "server-filesystem"]) {
    it(`puts every tool of @modelcontextprotocol/${server} (captured) into the strict subset`, () => {
      const tools = captured(server);
      expect(tools.length).toBeGreaterThan(10);
      expectAllStrict(tools);
    });
  }

  it("does the same for the tools the servers list when started now", async () => {
    const sandbox = mkdtempSync(join(tmpdir(), "schema-compat-"));
    try {
      const [everything, filesystem] = await Promise.all([
        listServerTools(bin("mcp-server-everything"), []),
        listServerTools(bin("mcp-server-filesystem"), [sandbox]),
      ]);
      expectAllStrict([...(everything as McpTool[]), ...(filesystem as McpTool[])]);
    } finally {
      rmSync(sandbox, { recursive: true, force: true });
    }
  }, 20_000);

  it("keeps an optional MCP parameter's default for the model to read", () => {
    const tool = captured("server-filesystem").find((t) => t.name === "list_directory_with_sizes") as McpTool;
    const [out] = sanitizeTools([asFunction(tool)]) as FunctionToolLike[];
    const params = out?.function.parameters as { properties: Record<string, Record<string, unknown>> };
    expect(params.properties.sortBy).toEqual({
      type: ["string", "null"],
      enum: ["name", "size", null],
      description: 'Sort entries by name or size. Default: "name".',
    });
  });
});

describe("sanitizeTools", () => {
  it("makes names OpenAI refuses legal and unique, and says so", () => {
    const renamed: Array<[string, string]> = [];
    const tools: ToolLike[] = [
      { type: "function", function: { name: "github.search issues" } },
      { type: "function", function: { name: "github_search_issues" } },
      { type: "function", function: { name: "x".repeat(80) } },
    ];
    const out = sanitizeTools(tools, {
      onRename: (from, to) => renamed.push([from, to]),
    }) as FunctionToolLike[];
    const names = out.map((t) => t.function.name);
    expect(names[0]).toBe("github_search_issues");
    expect(names[1]).toBe("github_search_issues_2");
    expect(names[2]).toHaveLength(64);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(renamed.map(([from]) => from)).toEqual([
      "github.search issues",
      "github_search_issues",
      "x".repeat(80),
    ]);
  });

  it("drops a description that is not text and passes other tools and fields through", () => {
    const custom = { type: "custom", custom: { name: "grammar" } };
    const out = sanitizeTools([
      { type: "function", function: { name: "a", description: 42 as never, strict: true } },
      custom,
    ]);
    expect(out[0]).toEqual({
      type: "function",
      function: {
        name: "a",
        strict: true,
        parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
      },
    });
    expect(out[1]).toEqual(custom);
  });

  it("cuts a description over OpenAI's 1,024 characters and moves the rest into the parameters", () => {
    // getsentry/sentry-mcp#106: "Invalid 'tools[13].function.description': string too long.
    // Expected a string with maximum length 1024, but got a string with length 1103 instead."
    const sentence =
      "Search for issues in Sentry by a natural language query, with filters for project and time. ";
    const long = sentence.repeat(14).trim();
    const tool: FunctionToolLike = {
      type: "function",
      function: {
        name: "search_issues",
        description: long,
        parameters: { type: "object", properties: { q: { type: "string" } }, description: "Search input" },
      },
    };
    for (const [out] of [sanitizeTools([tool]), relaxTools([tool])] as FunctionToolLike[][]) {
      const description = out?.function.description as string;
      expect(description.length).toBeLessThanOrEqual(1024);
      expect(description.endsWith(".…")).toBe(true);
      const params = out?.function.parameters as { description: string };
      expect(params.description.startsWith("(Tool description, continued:) Search for issues")).toBe(true);
      expect(params.description.endsWith("Search input")).toBe(true);
      // Nothing of the text is lost: the two parts hold every sentence.
      const rest = params.description.slice(
        "(Tool description, continued:) ".length,
        -" Search input".length,
      );
      expect(`${description.slice(0, -1)} ${rest}`).toBe(long);
    }
    const once = sanitizeTools([tool]);
    expect(sanitizeTools(once)).toEqual(once);
  });

  it("never cuts a long description between the two halves of an emoji", () => {
    const long = "😀".repeat(800); // 1,600 UTF-16 units, no space or sentence to cut at
    const [tool] = sanitizeTools([
      { type: "function", function: { name: "t", description: long, parameters: {} } },
    ]);
    const head = tool?.type === "function" ? (tool.function.description as string) : "";
    const params = tool?.type === "function" ? (tool.function.parameters.description as string) : "";
    expect(head.length).toBeLessThanOrEqual(1024);
    // No high surrogate without its low half after it, and no low half without its high half before it.
    const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    for (const text of [head, params]) expect(lone.test(text)).toBe(false);
  });

  it("throws a SchemaCompatError for something that is not a tool array", () => {
    expect(() => sanitizeTools({} as never)).toThrow(SchemaCompatError);
    expect(() => relaxTools([null] as never)).toThrow(/index 0/);
  });

  it("throws a SchemaCompatError naming the entry for a tool that cannot be read (a throwing getter, a revoked Proxy)", () => {
    const getter = {
      type: "function",
      function: {
        get name(): string {
          throw new Error("no name today");
        },
      },
    };
    const { proxy, revoke } = Proxy.revocable({ type: "function" }, {});
    revoke();
    const fine = { type: "function", function: { name: "ok", parameters: {} } };
    for (const [tools, index] of [
      [[fine, getter], 1],
      [[proxy], 0],
    ] as const) {
      for (const fn of [sanitizeTools, relaxTools]) {
        let caught: unknown;
        try {
          fn(tools as never);
        } catch (error) {
          caught = error;
        }
        expect(SchemaCompatError.isInstance(caught)).toBe(true);
        expect((caught as SchemaCompatError).code).toBe("invalid-tools");
        expect((caught as Error).message).toContain(`index ${index}`);
        expect((caught as Error).cause).toBeInstanceOf(Error);
      }
    }
  });
});

describe("sanitizeTools names outside printable ASCII", () => {
  // The names @loopwright/loop declares for these tools (its wireNameOf): the letters and digits
  // kept, each run of other characters one `_`, none at either end, `tool` for none, then `_` and
  // the FNV-1a hash of the whole name. Written out here so the two packages cannot drift apart.
  const table: Array<[string, string]> = [
    ["検索", "tool_fea3073b"],
    ["読む", "tool_76959028"],
    ["書く", "tool_0a641458"],
    ["_中_", "tool_9e2b35d2"],
    ["🙂", "tool_8d31631e"],
    ["search_🙂", "search_e9f02d7d"],
    ["café", "caf_3308be7c"],
    ["über_", "ber_697fe365"],
    ["naïve.read file", "na_ve_read_file_bb86ef3c"],
    ["Ünïcødé-name", "n_c_d_-name_17fdece0"],
    ["ééé-z", "-z_b157593d"],
    ["a\u0000b", "a_b_10f3abd2"],
    ["tab\there", "tab_here_a0c92419"],
    ["\u0007", "tool_020c5866"],
    ["ab\u007fc", "ab_c_cf50fd64"],
    ["read\u200bfile", "read_file_5002124c"],
    [`${"x".repeat(70)}é`, `${"x".repeat(55)}_68c653fc`],
    // Printable ASCII keeps the old rule: punctuation to `_`, no hash.
    ["fs.read", "fs_read"],
    ["github.search issues", "github_search_issues"],
  ];

  const named = (name: string): ToolLike => ({ type: "function", function: { name, parameters: {} } });
  const namesOf = (tools: ToolLike[]): string[] =>
    (sanitizeTools(tools) as FunctionToolLike[]).map((t) => t.function.name);

  it("gives each the name the loop declares it under", () => {
    for (const [name, wire] of table) {
      expect(namesOf([named(name)]), JSON.stringify(name)).toEqual([wire]);
      expect(wire).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    }
  });

  it("gives the same names whatever the order of the tools, on every call", () => {
    const unique = table.filter(([name]) => name !== "github.search issues");
    const forward = namesOf(unique.map(([name]) => named(name)));
    expect(forward).toEqual(unique.map(([, wire]) => wire));
    const backward = namesOf([...unique].reverse().map(([name]) => named(name)));
    expect(backward).toEqual([...forward].reverse());
    expect(namesOf(unique.map(([name]) => named(name)))).toEqual(forward);
  });

  it("keeps distinct non-ASCII names distinct, and tells onRename", () => {
    const renamed: Array<[string, string]> = [];
    const out = sanitizeTools([named("読む"), named("書く"), named("検索")], {
      onRename: (from, to) => renamed.push([from, to]),
    }) as FunctionToolLike[];
    expect(new Set(out.map((t) => t.function.name)).size).toBe(3);
    expect(renamed).toEqual([
      ["読む", "tool_76959028"],
      ["書く", "tool_0a641458"],
      ["検索", "tool_fea3073b"],
    ]);
  });
});
