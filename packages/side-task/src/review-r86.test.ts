/**
 * r86c review of side-task under an enumerable field on `Object.prototype` (withPollutedPrototype),
 * found by `pnpm fuzz:pollution --scenario sidetask`. Before: `Object.prototype.cached_tokens = 1`
 * counted a cached token in every side task's usage (a compaction summary's and a preselection's,
 * so in a run's `sideUsage`), and `Object.prototype.value` (or `.writable`) made every side task
 * whose options held a getter throw "Invalid property descriptor".
 */
import { startServer, type TestServer, withPollutedPrototype } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { realCatalog } from "../bench/load-catalog.js";
import { isolated } from "../test/wire.js";
import { ask } from "./ask.js";
import { preselect } from "./preselect.js";
import type { SideTaskUsage } from "./usage.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

const cat = [
  { name: "fs", tools: [{ name: "read_file", description: "Read a file" }] },
  { name: "maps", tools: [{ name: "maps_elevation", description: "Get elevation data" }] },
];

describe("R86C-1: a side task's usage counts only what the server reported", () => {
  it("Object.prototype.cached_tokens adds no cached token to a preselection's usage", async () => {
    server = await startServer({
      replies: [
        { content: '{"tools":["maps_elevation"]}', usage: { prompt_tokens: 300, completion_tokens: 9 } },
      ],
    });
    const reports: SideTaskUsage[] = [];
    const chosen = await withPollutedPrototype({ cached_tokens: 1 }, () =>
      preselect({ baseUrl: server?.baseUrl ?? "" }, "small", cat, "How high is Denver?", {
        ...isolated(),
        onUsage: (report) => void reports.push(report),
      }),
    );
    expect(chosen).toEqual(["maps_elevation"]);
    // Before: cached 1 and uncached 299, from the polluted field.
    expect(reports.map((report) => report.usage)).toEqual([
      { prompt: 300, completion: 9, total: 309, cached: 0 },
    ]);
  });
});

describe("R86C-2: options with a getter are read under a polluted Object.prototype.value", () => {
  for (const name of ["value", "writable"]) {
    it(`preselect takes keywords from a getter with Object.prototype.${name} set`, async () => {
      const options = {
        ...isolated(),
        get keywords() {
          return true;
        },
      };
      // Keywords settle this one: no request, so only the options' reading is under test.
      const chosen = await withPollutedPrototype({ [name]: "P0LLUTED" }, () =>
        preselect(
          { baseUrl: "http://127.0.0.1:9" },
          "small",
          realCatalog(),
          "Remove the prometheus helm release",
          options,
        ),
      );
      // Before: "Invalid property descriptor. Cannot both specify accessors and a value or writable attribute".
      expect(chosen).toContain("uninstall_helm_chart");
    });
  }
});

describe("R86C-3: a side task with thinking off asks for no reasoning effort it was not given", () => {
  it("ask answers with Object.prototype.reasoningEffort = true", async () => {
    server = await startServer({ replies: [{ content: "Notes." }] });
    // Before: "negotiate: reasoningEffort must be the asked reasoning_effort as a string" — the
    // request's settings held none, and the polluted one was read (every summary failed with it).
    const answer = await withPollutedPrototype({ reasoningEffort: true }, () =>
      ask({ baseUrl: server?.baseUrl ?? "" }, "small", "Be brief.", "Summarise.", isolated()),
    );
    expect(answer).toBe("Notes.");
  });
});
