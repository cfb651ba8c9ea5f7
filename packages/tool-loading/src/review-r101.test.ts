/**
 * Review r101 of tool loading against the seed and hostile input: a catalogued tool whose name is
 * longer than `MAX_NAME_LENGTH` was listed in the catalogue and could never be loaded or called
 * through `call_tool`; a catalogued name holding a comma (or a server's holding ": ") was listed
 * bare in the catalogue's comma-separated line, where it read as two tools.
 */
import type { FunctionToolLike } from "@loopwright/schema-compat";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { catalogText } from "./catalog.js";
import { expandNames, MAX_NAME_LENGTH, toolNameResolver } from "./names.js";
import { proxiedCall } from "./proxied-call.js";
import { createToolLoading } from "./tool-loading.js";

const tool = (name: string): FunctionToolLike => ({
  type: "function",
  function: {
    name,
    description: `runs ${name.slice(0, 20)}`,
    parameters: { type: "object", properties: {} },
  },
});

describe("r101-1: a catalogued tool named longer than MAX_NAME_LENGTH", () => {
  // A host's own naming (a server label and a path folded into the name) can run past 256.
  const long = `fs_${"deep_".repeat(60)}read`;
  const server = `srv_${"x".repeat(MAX_NAME_LENGTH)}`;
  const tools = [tool(long), tool("read_file")];
  const catalog = [
    { name: "files", tools: [{ name: long }, { name: "read_file" }] },
    { name: server, tools: [{ name: "read_file" }] },
  ];

  it("is listed in the catalogue and loads by its name (it was answered 'Not in the catalogue')", () => {
    expect(long.length).toBeGreaterThan(MAX_NAME_LENGTH);
    const loading = createToolLoading({ mode: "ondemand", tools, catalog });
    expect(loading.catalogText).toContain(long);
    const route = loading.route(
      { id: "c1", name: "load_tools", args: { names: [long] } },
      { loaded: [], messages: [] },
    );
    expect(route.kind === "load" && route.content).toBe(`Loaded: ${long}. Call them by name.`);
    expect(route.kind === "load" && route.loaded).toEqual([long]);
    expect(expandNames([` ${long} `], catalog).names).toEqual([long]);
  });

  it("loads by its server's name, the server's name being as long", () => {
    expect(expandNames([server], catalog).names).toEqual(["read_file"]);
  });

  it("runs through call_tool, proxied (it was refused as not in the catalogue)", () => {
    const loading = createToolLoading({ mode: "proxy", tools, catalog });
    const route = loading.route(
      { id: "c1", name: "call_tool", args: { name: long, arguments: { a: 1 } } },
      { loaded: [], messages: [] },
    );
    expect(route).toMatchObject({ kind: "dispatch", name: long, args: { a: 1 }, proxied: true });
    expect(proxiedCall({ name: long, arguments: {} }, catalog).name).toBe(long);
    expect(toolNameResolver([long])(long)).toBe(long);
  });

  it("a name as long that is not catalogued still matches nothing, and the answer says why", () => {
    const loading = createToolLoading({ mode: "ondemand", tools, catalog });
    const route = loading.route(
      { id: "c1", name: "load_tools", args: { names: [`${long}x`, `Files.${long}`] } },
      { loaded: [], messages: [] },
    );
    expect(route.kind === "load" && route.fresh).toEqual([]);
    expect(route.kind === "load" && route.content).toContain(
      "A name is read up to 256 characters; a longer one matches nothing.",
    );
  });
});

describe("r101-2: a name holding the catalogue line's own punctuation", () => {
  const names = ["a,b", "a", "b", '"q"', "q", "x: y"];
  const tools = names.map(tool);
  const catalog = [
    { name: "odd", tools: names.map((name) => ({ name })) },
    { name: "k8s: prod", tools: [{ name: "q" }] },
  ];

  it("is written quoted, so the line names each tool once (a,b read as the tools a and b)", () => {
    const text = catalogText(catalog);
    expect(text.split("\n").slice(3)).toEqual(['"k8s: prod": q', 'odd: "\\"q\\"", a, "a,b", b, q, "x: y"']);
    const described = catalogText(catalog, { descriptions: true });
    expect(described.split("\n").slice(3)).toEqual([
      '## "k8s: prod"',
      "- q",
      "## odd",
      '- "\\"q\\""',
      "- a",
      '- "a,b"',
      "- b",
      "- q",
      '- "x: y"',
    ]);
    // Every other name is written as it was.
    expect(catalogText([{ name: "files", tools: [{ name: "read file" }, { name: "x;y" }] }])).toContain(
      "\nfiles: read file, x;y",
    );
  });

  it("loads from the catalogue as written, quotes and all, or without them (ondemand and proxy)", () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const loading = createToolLoading({ mode, tools, catalog });
      const load = (entry: string) => {
        const route = loading.route(
          { id: "c1", name: "load_tools", args: { names: [entry] } },
          { loaded: [], messages: [] },
        );
        return route.kind === "load" ? route.fresh : [];
      };
      expect(load('"a,b"')).toEqual(["a,b"]);
      expect(load("a,b")).toEqual(["a,b"]);
      expect(load('"\\"q\\""')).toEqual(['"q"']);
      expect(load('"x: y"')).toEqual(["x: y"]);
      expect(load('"k8s: prod"')).toEqual(["q"]);
    }
  });
});

/**
 * The entries a catalogue line lists after `server: `, as written, read as a model would: split at
 * ", " outside a JSON string (a bare name holds no comma).
 */
const listed = (list: string) =>
  [...list.matchAll(/ ?("(?:[^"\\]|\\.)*"|[^,]+)(?:,|$)/gy)].map((match) => match[1] as string);
/** The name an entry stands for: a JSON string's text, else the entry. */
const meant = (entry: string) => (entry.startsWith('"') ? (JSON.parse(entry) as string) : entry);

describe("r101-2: the catalogue line and a load of what it lists, for any names (fast-check)", () => {
  // Names from the line's own punctuation, quotes, blanks, stars and separators a load reads.
  const name = fc
    .array(fc.constantFrom("a", "b", ",", ":", " ", '"', "\\", "*", ".", "_", "[", "'", ";"), {
      minLength: 1,
      maxLength: 8,
    })
    .map((chars) => chars.join(""))
    .filter((text) => text.trim() === text && !/^\*+$/.test(text));

  it("lists every catalogued name once, as it is, and each loads alone by what the line shows", () => {
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 8 }), (names) => {
        const catalog = [{ name: "s", tools: names.map((n) => ({ name: n })) }];
        const line = catalogText(catalog).split("\n")[3] as string;
        expect(line.startsWith("s: ")).toBe(true);
        expect(listed(line.slice(3)).map(meant)).toEqual(
          [...names].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)),
        );
        const loading = createToolLoading({ mode: "ondemand", tools: names.map(tool), catalog });
        for (const entry of listed(line.slice(3))) {
          const route = loading.route(
            { id: "c1", name: "load_tools", args: { names: [entry] } },
            { loaded: [], messages: [] },
          );
          expect(route.kind === "load" && route.fresh).toEqual([meant(entry)]);
        }
      }),
    );
  });
});
