import { describe, expect, it } from "vitest";
import { CATALOG, TOOLS } from "./test-support/tools.js";
import { createToolLoading } from "./tool-loading.js";

// Review r90 (found by loop's discovery model): a server's name or a `*` pattern called as if it were
// one tool — directly, or through call_tool — was answered `"github" is not in the catalogue`, though
// the catalogue text the model reads lists `github: create_issue, get_file, list_issues`. The model
// was told something false and pointed nowhere; it now hears that the name stands for several tools,
// and which ones to call by name. Still refused, never run, and still counted as a name the model
// asked for that names no tool.

const route = (mode: "ondemand" | "proxy", name: string, args: Record<string, unknown> = {}) =>
  createToolLoading({ mode, tools: TOOLS, catalog: CATALOG }).route(
    { id: "c1", name, args },
    { loaded: [], messages: [] },
  );

describe("R90-1: a server's name or a pattern called as a tool", () => {
  it.each(["ondemand", "proxy"] as const)(
    "%s: a server's name is answered with its tools, not 'not in the catalogue'",
    (mode) => {
      const direct = route(mode, "github", { repo: "x" });
      expect(direct).toMatchObject({ kind: "refuse", unknown: ["github"] });
      if (direct.kind !== "refuse") return;
      expect(direct.content).not.toMatch(/not in the catalogue/);
      expect(direct.content).toMatch(/"github" stands for several tools of the catalogue/);
      expect(direct.content).toMatch(/: create_issue, get_file, list_issues\.$/);
      if (mode === "proxy") expect(direct.content).toMatch(/through call_tool/);

      const proxied = route(mode, "call_tool", { name: "github", arguments: { repo: "x" } });
      expect(proxied).toMatchObject({ kind: "refuse", unknown: ["github"] });
      if (proxied.kind !== "refuse") return;
      expect(proxied.content).toMatch(/^call_tool: "github" stands for several tools/);
      expect(proxied.content).toMatch(/create_issue, get_file, list_issues\.$/);
    },
  );

  it("a pattern names what it matches; one that matches nothing, and a made-up name, are still not in the catalogue", () => {
    const pattern = route("ondemand", "list_*");
    expect(pattern.kind === "refuse" && pattern.content).toMatch(
      /"list_\*" stands for several tools .*: list_directory, list_issues\.$/,
    );
    for (const name of ["nothing_*", "made_up"]) {
      const refused = route("ondemand", name);
      expect(refused.kind === "refuse" && refused.content, name).toMatch(/is not in the catalogue/);
    }
  });

  it("the first step of an exclusive preselection still points at its shortlist", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const refused = loading.route(
      { id: "c1", name: "github", args: {} },
      { loaded: [], messages: [], step: 0, preselected: ["read_file"], routing: "exclusive" },
    );
    expect(refused.kind === "refuse" && refused.content).toMatch(/not one of the tools this step offers/);
  });
});
