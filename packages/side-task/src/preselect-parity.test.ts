/**
 * A preselection and a `load_tools` call read a name the same way: for one catalogue, the tools a
 * preselection reply keeps are exactly the tools `@loopwright/tool-loading`'s `expandNames` loads for
 * the same names — case, `server.tool`, `functions.tool`, a server's name, `*` patterns, any Unicode —
 * and the prompt shows a description's line as the catalogue text shows it. A catalogue whose names
 * would break a line is refused by both.
 */
import { catalogText, expandNames } from "@loopwright/tool-loading";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { SideTaskError } from "./errors.js";
import { type CatalogServerLike, preselectByKeywords, preselection, preselectSystem } from "./index.js";

const catalog: CatalogServerLike[] = [
  {
    name: "github",
    label: "GitHub",
    tools: [
      { name: "github_create_issue", description: "Open an issue" },
      { name: "github_list_issues", description: "List issues" },
    ],
  },
  { name: "fs", tools: [{ name: "read_file" }, { name: "Ärger_melden" }] },
];

describe("a preselection reads a name as load_tools does", () => {
  it("keeps server.tool, a server's name and a pattern, as a load would load them", () => {
    const asked = ["github.github_create_issue", "fs", "github_*", "fs/read_file", "ärger_MELDEN"];
    expect(preselection({ tools: asked }, catalog)).toEqual(expandNames(asked, catalog).names);
    expect(preselection({ tools: ["github.github_create_issue"] }, catalog)).toEqual(["github_create_issue"]);
    expect(preselection({ tools: ["fs"] }, catalog)).toEqual(["read_file", "Ärger_melden"].sort());
    expect(preselection({ tools: ["github_*"] }, catalog)).toEqual([
      "github_create_issue",
      "github_list_issues",
    ]);
  });

  it("keeps the same tools as expandNames for any names and any catalogue (fast-check)", () => {
    const word = fc.constantFrom(
      "read",
      "Read",
      "ǅemal",
      "ǆemal",
      "éclair",
      "Éclair",
      "ß",
      "SS",
      "日本",
      "a_b",
      "x",
    );
    const toolName = fc.tuple(word, fc.constantFrom("", "_file", "_2")).map(([a, b]) => `${a}${b}`);
    const server = fc.record({
      name: fc.constantFrom("github", "GitHub", "fs", "Ω", "tools"),
      tools: fc.uniqueArray(
        toolName.map((name) => ({ name })),
        { selector: (tool) => tool.name, maxLength: 5 },
      ),
    });
    /** How a model might write a name for this catalogue: as listed, in another case, namespaced, as a pattern. */
    const spellings = (servers: { name: string; tools: { name: string }[] }[]) => {
      const tools = servers.flatMap((s) => s.tools.map((t) => t.name));
      const serverNames = servers.map((s) => s.name);
      return fc.oneof(
        fc.constantFrom("", " ", "*", "nothing", "functions.", ...tools, ...serverNames),
        fc
          .tuple(fc.constantFrom(...tools, "x"), fc.constantFrom("up", "low", "fn", "pattern", "pad"))
          .map(([name, how]) =>
            how === "up"
              ? name.toUpperCase()
              : how === "low"
                ? name.toLowerCase()
                : how === "fn"
                  ? `functions.${name}`
                  : how === "pattern"
                    ? `${name.slice(0, 2)}*`
                    : ` ${name} `,
          ),
        fc
          .tuple(
            fc.constantFrom(...serverNames, "nope"),
            fc.constantFrom(".", "/", ":", "__"),
            fc.constantFrom(...tools, "*", ""),
          )
          .map(([s, sep, t]) => `${s}${sep}${t}`),
      );
    };
    const cases = fc
      .array(server, { maxLength: 4 })
      .chain((servers) =>
        fc.tuple(
          fc.constant(servers),
          fc.array(spellings(servers), { maxLength: 8 }),
          fc.integer({ min: 1, max: 6 }),
        ),
      );
    fc.assert(
      fc.property(cases, ([servers, names, cap]) => {
        expect(preselection({ tools: names }, servers, cap)).toEqual(expandNames(names, servers, cap).names);
      }),
      propertyRuns(300),
    );
  });
});

describe("the preselection's prompt cleans a description's line as the catalogue text does", () => {
  it("shows the same line for any short description, breaks and control characters included (fast-check)", () => {
    const piece = fc.constantFrom(
      "Open",
      " an issue",
      "\t",
      "\r\n",
      "\u2028",
      "\u0085",
      "\u0007",
      "é",
      "🙂",
      "  ",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (parts) => {
        const description = parts.join("");
        const cat = [{ name: "s", tools: [{ name: "t", description }] }];
        const listed = catalogText(cat, { descriptions: true })
          .split("\n")
          .find((line) => line.startsWith("- t"));
        const shown = preselectSystem(cat)
          .split("\n")
          .find((line) => line.startsWith("- t"));
        expect(shown).toBe(listed);
      }),
    );
  });
});

describe("a name that would break a line", () => {
  it("is refused by the preselection, as load_tools' catalogue refuses it, naming the tool", () => {
    for (const name of ["evil\u2028tool", "evil\ntool", "tab\there"]) {
      const bad = [{ name: "s", tools: [{ name }, { name: "ok" }] }];
      expect(() => expandNames(["ok"], bad)).toThrow(/line break or control character/);
      expect(() => preselectSystem(bad)).toThrow(SideTaskError);
      expect(() => preselection({ tools: ["ok"] }, bad)).toThrow(/line break or control character/);
      expect(() => preselectByKeywords(bad, "ok")).toThrow(SideTaskError);
    }
    const badServer = [{ name: "s\u2029", tools: [{ name: "ok" }] }];
    expect(() => preselectSystem(badServer)).toThrow(/line break or control character/);
  });
});
