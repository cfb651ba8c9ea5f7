import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ToolLoadingError } from "./errors.js";
import { carryOver, expandNames, loadNames } from "./names.js";
import { proxiedCall } from "./proxied-call.js";
import { CATALOG, thrown } from "./test-support/tools.js";

const toolName = fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/);

describe("loadNames", () => {
  it("reads the names however a model wrote them", () => {
    expect(loadNames({ names: ["read_file", "write_file"] })).toEqual(["read_file", "write_file"]);
    expect(loadNames({ names: "read_file, write_file" })).toEqual(["read_file", "write_file"]);
    expect(loadNames({ names: '["read_file","write_file"]' })).toEqual(["read_file", "write_file"]);
    expect(loadNames({ name: "read_file" })).toEqual(["read_file"]);
    expect(loadNames({ tools: ["`read_file`", "'write_file'"] })).toEqual(["read_file", "write_file"]);
  });

  it("refuses arguments that name no tool, telling the model the shape to use", () => {
    for (const args of [{}, { names: [] }, { names: [1, 2] }, { names: " , " }, null]) {
      const error = thrown(() => loadNames(args));
      expect(ToolLoadingError.isInstance(error)).toBe(true);
      expect((error as ToolLoadingError).code).toBe("invalid-names");
      expect(error.message).toContain('{ "names": ["tool_name", ...] }');
    }
  });

  it("reads the same names from an array, a comma list and a JSON array in a string", () => {
    fc.assert(
      fc.property(fc.uniqueArray(toolName, { minLength: 1, maxLength: 12 }), (names) => {
        expect(loadNames({ names })).toEqual(names);
        expect(loadNames({ names: names.join(", ") })).toEqual(names);
        expect(loadNames({ names: names.join(" ") })).toEqual(names);
        expect(loadNames({ names: JSON.stringify(names) })).toEqual(names);
      }),
    );
  });

  it("never returns a name twice, and never an empty one", () => {
    // Random strings alone almost never repeat a name (one list in 3,000 did), so a loadNames that
    // kept duplicates passed this in every run: most entries here are a few names written again,
    // with blanks, quotes or backticks round them or two to an entry, as a model repeats itself.
    const item = fc.oneof(
      fc.string(),
      fc.constantFrom(
        "read_file",
        " read_file ",
        "`read_file`",
        "'a'",
        "a",
        "a, read_file",
        "read_file a",
        " ",
      ),
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 8 }), (items) => {
        let names: string[];
        try {
          names = loadNames({ names: items });
        } catch (error) {
          return ToolLoadingError.isInstance(error);
        }
        return names.length > 0 && new Set(names).size === names.length && names.every((name) => name !== "");
      }),
    );
  });
});

describe("loadNames and expandNames on whatever a model wrote", () => {
  it("give names that are catalogued, or the package's typed error, never another throw", () => {
    const catalogued = CATALOG.flatMap((server) => server.tools.map((tool) => tool.name));
    const word = fc.oneof(
      fc.constantFrom(...catalogued, "github", "*", "fs.*"),
      fc.string({ maxLength: 12 }),
    );
    const args = fc.oneof(
      fc.anything(),
      fc.record({ names: fc.oneof(fc.array(word), word, fc.anything()) }),
      fc.array(word).map((names) => JSON.stringify(names)),
    );
    fc.assert(
      fc.property(args, (value) => {
        let names: string[] = [];
        let refused: unknown;
        try {
          names = loadNames(value);
        } catch (error) {
          refused = error;
        }
        const typed = ToolLoadingError.isInstance(refused) && refused.code === "invalid-names";
        expect(refused === undefined || typed).toBe(true);
        const resolution = expandNames(names, CATALOG);
        for (const name of [...resolution.names, ...resolution.overCap]) expect(catalogued).toContain(name);
        expect(resolution.names.length).toBeLessThanOrEqual(12);
      }),
    );
  });
});

describe("expandNames", () => {
  it("takes exact names, a server's name, server-prefixed names and patterns", () => {
    expect(expandNames(["read_file"], CATALOG).names).toEqual(["read_file"]);
    expect(expandNames(["github"], CATALOG).names).toEqual(["create_issue", "get_file", "list_issues"]);
    expect(expandNames(["github.create_issue", "filesystem/read_file"], CATALOG).names).toEqual([
      "create_issue",
      "read_file",
    ]);
    expect(expandNames(["filesystem__write_file", "github:list_issues"], CATALOG).names).toEqual([
      "write_file",
      "list_issues",
    ]);
    expect(expandNames(["functions.read_file"], CATALOG).names).toEqual(["read_file"]);
    expect(expandNames(["list_*"], CATALOG).names).toEqual(["list_directory", "list_issues"]);
    expect(expandNames(["READ_FILE", "GitHub"], CATALOG).names).toEqual([
      "read_file",
      "create_issue",
      "get_file",
      "list_issues",
    ]);
  });

  it("reports names outside the catalogue as unknown, as the model wrote them", () => {
    const resolution = expandNames(["read_file", "send_email", "send_email"], CATALOG);
    expect(resolution.names).toEqual(["read_file"]);
    expect(resolution.unknown).toEqual(["send_email"]);
  });

  it("holds a load to its cap, and says which names the cap left out", () => {
    const resolution = expandNames(["filesystem", "github"], CATALOG, 4);
    expect(resolution.names).toEqual(["list_directory", "read_file", "write_file", "create_issue"]);
    expect(resolution.overCap).toEqual(["get_file", "list_issues"]);
    expect(resolution.cap).toBe(4);
    expect(expandNames(["github"], CATALOG).cap).toBe(12);
  });

  it("never loads a tool twice, never more than the cap, and only catalogued tools", () => {
    const catalogued = CATALOG.flatMap((server) => server.tools.map((tool) => tool.name));
    const word = fc.oneof(
      fc.constantFrom(...catalogued, "github", "filesystem", "list_*", "nope"),
      fc.string({ maxLength: 6 }),
    );
    fc.assert(
      fc.property(fc.array(word, { maxLength: 10 }), fc.integer({ min: 1, max: 8 }), (requested, cap) => {
        const { names, overCap } = expandNames(requested, CATALOG, cap);
        expect(names.length).toBeLessThanOrEqual(cap);
        expect(new Set([...names, ...overCap]).size).toBe(names.length + overCap.length);
        for (const name of [...names, ...overCap]) expect(catalogued).toContain(name);
      }),
    );
  });

  it("answers a pattern of many stars against a long tool name at once, instead of hanging", () => {
    // A backtracking regex spent minutes here: each * multiplied the ways to split the name.
    const long = "a".repeat(64);
    const catalog = [{ name: "s", tools: [{ name: long }, { name: `${long}b` }] }];
    const pattern = `${"*a".repeat(24)}*b`;
    expect(expandNames([pattern], catalog).names).toEqual([`${long}b`]);
    expect(expandNames([`${"*a".repeat(24)}*`], catalog).names).toEqual([long, `${long}b`]);
  });

  it("matches a pattern the way a shell glob does: * for any run of characters, everything else literally", () => {
    const glob = (pattern: string) =>
      new RegExp(
        `^${pattern
          .split("*")
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
          .join(".*")}$`,
      );
    const piece = fc.constantFrom("a", "b", ".", "(", "?", "_");
    const name = fc.array(piece, { minLength: 1, maxLength: 8 }).map((parts) => parts.join(""));
    const pattern = fc
      .array(fc.oneof(piece, fc.constant("*")), { minLength: 1, maxLength: 8 })
      .map((parts) => parts.join(""))
      .filter((text) => text.includes("*") && !/^functions\./.test(text));
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 6 }), pattern, (names, text) => {
        const catalog = [{ name: "srv", tools: names.map((tool) => ({ name: tool })) }];
        const expected = names.filter((tool) => glob(text.trim()).test(tool)).sort();
        const { names: found, overCap } = expandNames([text], catalog, 100);
        expect(overCap).toEqual([]);
        expect([...found].sort()).toEqual(expected);
      }),
    );
  });

  it("refuses a cap that is not a whole number of at least 1", () => {
    for (const cap of [0, -1, 1.5, Number.NaN]) {
      expect((thrown(() => expandNames(["github"], CATALOG, cap)) as ToolLoadingError).code).toBe(
        "invalid-cap",
      );
    }
  });
});

describe("carryOver", () => {
  it("carries the most recently loaded tools still in the catalogue, each once, in load order", () => {
    const loaded = ["read_file", "gone_tool", "create_issue", "read_file", "list_issues"];
    expect(carryOver(loaded, CATALOG)).toEqual(["create_issue", "read_file", "list_issues"]);
    expect(carryOver(loaded, CATALOG, 2)).toEqual(["read_file", "list_issues"]);
  });

  it("carries 16 unless told otherwise", () => {
    const many = Array.from({ length: 20 }, (_, i) => ({ name: `t${i}` }));
    const carried = carryOver(
      many.map((tool) => tool.name),
      [{ name: "s", tools: many }],
    );
    expect(carried).toHaveLength(16);
    expect(carried[0]).toBe("t4");
  });

  it("refuses a loaded list that is not names", () => {
    expect((thrown(() => carryOver("read_file" as never, CATALOG)) as ToolLoadingError).code).toBe(
      "invalid-names",
    );
  });
});

describe("a server whose name holds a separator", () => {
  // Hosts name servers after their config keys or registry names: "mcp.notion", "io.github/fs".
  const catalog = [
    { name: "mcp.notion", tools: [{ name: "search_pages" }, { name: "get_page" }] },
    { name: "io.github/fs", tools: [{ name: "read_file" }] },
  ];

  it("reaches its tool written as server.tool (or / : __), and all its tools as server.*", () => {
    const resolution = expandNames(
      ["mcp.notion.search_pages", "io.github/fs/read_file", "io.github/fs:read_file", "mcp.notion__get_page"],
      catalog,
    );
    expect(resolution.names).toEqual(["search_pages", "read_file", "get_page"]);
    expect(resolution.unknown).toEqual([]);
    expect(expandNames(["mcp.notion.*"], catalog).names).toEqual(["get_page", "search_pages"]);
  });

  it("runs its tool through call_tool written as server.tool", () => {
    expect(proxiedCall({ name: "mcp.notion.search_pages", arguments: { query: "q" } }, catalog)).toEqual({
      name: "search_pages",
      args: { query: "q" },
      raw: '{"query":"q"}',
    });
  });
});
