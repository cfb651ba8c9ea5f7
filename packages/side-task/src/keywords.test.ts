/**
 * preselectByKeywords: BM25 over a real catalogue, function words dropped, and a `confident` that
 * is hard to earn — with properties that hold for any request.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { realCatalog } from "../bench/load-catalog.js";
import { SideTaskError } from "./errors.js";
import { preselectByKeywords } from "./keywords.js";
import { FUNCTION_WORDS, terms } from "./words.js";

const catalog = realCatalog();

describe("preselectByKeywords", () => {
  it.each([
    ["Cordon and drain node ip-10-0-1-5 for maintenance", "node_management"],
    ["Remove the prometheus helm release", "uninstall_helm_chart"],
    ["Resize the browser window to 375 by 812", "browser_resize"],
  ])("settles %j on its own words, shortlisting %s", (request, tool) => {
    const found = preselectByKeywords(catalog, request);
    expect(found.confident).toBe(true);
    expect(found.tools).toContain(tool);
    expect(found.tools.length).toBeLessThanOrEqual(12);
  });

  it("ranks the tool whose distinctive words match above ones that only share common words", () => {
    const found = preselectByKeywords(catalog, "Get the elevation of a list of locations");
    expect(found.ranked[0]?.name).toBe("maps_elevation");
  });

  it("is not confident where the request speaks words the catalogue does not use", () => {
    const found = preselectByKeywords(catalog, "How high above sea level is Denver?");
    expect(found.confident).toBe(false);
  });

  it("is not confident where nothing matched, and says so with an empty shortlist", () => {
    expect(preselectByKeywords(catalog, "zxqv plorb")).toEqual({ tools: [], confident: false, ranked: [] });
  });

  it("drops function words, so a request of nothing else matches nothing", () => {
    expect(preselectByKeywords(catalog, "Could you do it for me with all of those, please?").ranked).toEqual(
      [],
    );
  });

  it("is not confident on a near-tie across the line", () => {
    const twins = [
      {
        name: "docs",
        tools: [
          { name: "open_report", description: "Open the quarterly report." },
          { name: "open_summary", description: "Open the quarterly summary." },
        ],
      },
    ];
    const found = preselectByKeywords(twins, "open the quarterly figures", {}, 1);
    expect(found.tools).toEqual(["open_report"]);
    expect(found.confident).toBe(false);
  });

  it("moves the bar with minScore and dropoff", () => {
    const clear = "Remove the prometheus helm release";
    expect(preselectByKeywords(catalog, clear).confident).toBe(true);
    expect(preselectByKeywords(catalog, clear, { minScore: 1000 }).confident).toBe(false);
    const close = "Dump the entire knowledge graph you have stored";
    expect(preselectByKeywords(catalog, close).confident).toBe(false);
    expect(preselectByKeywords(catalog, close, { dropoff: 0.7 })).toMatchObject({
      confident: true,
      tools: ["read_graph"],
    });
  });

  it("throws a typed error for a catalogue that is not a list, a request that is not text, or a bad cap", () => {
    for (const call of [
      () => preselectByKeywords({} as never, "x"),
      () => preselectByKeywords(catalog, 3 as never),
      () => preselectByKeywords(catalog, "x", {}, 0),
      () => preselectByKeywords(catalog, "x", { dropoff: -1 }),
    ]) {
      expect(() => call()).toThrow(SideTaskError);
    }
  });

  it("keeps its promises for any request", () => {
    const names = new Set(catalog.flatMap((server) => server.tools.map((tool) => tool.name)));
    fc.assert(
      fc.property(fc.string({ maxLength: 120 }), fc.integer({ min: 1, max: 20 }), (request, cap) => {
        const found = preselectByKeywords(catalog, request, {}, cap);
        const scores = found.ranked.map((r) => r.score);
        expect(scores).toEqual([...scores].sort((a, b) => b - a));
        expect(found.tools.length).toBeLessThanOrEqual(cap);
        expect(found.tools).toEqual(found.ranked.slice(0, found.tools.length).map((r) => r.name));
        for (const name of found.tools) expect(names.has(name)).toBe(true);
        if (found.confident) expect(found.tools.length).toBeGreaterThan(0);
      }),
      propertyRuns(200),
    );
  });
});

describe("terms", () => {
  it("splits names at their seams and meets plural and verb forms at one stem", () => {
    expect(terms("listDirectoryWithSizes")).toEqual(terms("list directory with size"));
    expect(terms("create_pull_request")).toEqual(["creat", "pull", "request"]);
    expect(terms("files listed")).toEqual(terms("file list"));
  });

  it("splits a run of capitals before a capitalised word, as it always has, for any text", () => {
    // The split as first written, with a backtracking regex whose time grew with the square of a run of capitals.
    const before = (text: string) =>
      terms(text.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2"));
    expect(terms("HTMLParser")).toEqual(["html", "parser"]);
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9 _']{0,40}$/), (text) => {
        expect(terms(text)).toEqual(before(text));
      }),
    );
  });

  it("trims the apostrophes round a word as it always has, for any text", () => {
    // The trim as first written, with a regex whose `'+$` backtracked through every run inside a word.
    const before = (word: string) => word.replace(/^'+|'+$/g, "");
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z' ]{0,40}$/), (text) => {
        // Words trimmed beforehand by the regex come out of terms as the words themselves do.
        expect(terms(text)).toEqual(terms(text.split(" ").map(before).join(" ")));
      }),
    );
    expect(terms("'rock'n'roll''")).toEqual(terms("rocknroll"));
  });

  it("reads a run of 100,000 apostrophes inside a word at once, not in a time that grows with its square", () => {
    // Quadratic, this took about 10 s (the test's timeout is 5 s) and froze the process meanwhile.
    const catalogue = [{ name: "fs", tools: [{ name: "read_file", description: "Read a file." }] }];
    const request = `read a${"'".repeat(100_000)}b file`;
    expect(preselectByKeywords(catalogue, request).tools).toEqual(["read_file"]);
    expect(terms(`a${"'".repeat(100_000)}b ${"'".repeat(100_000)}c${"'".repeat(100_000)}`)).toEqual([
      "ab",
      "c",
    ]);
  });

  it("drops a word whose stem is a function word (a CI run's seed found OUR'r, read as our)", () => {
    expect(terms("OUR'r thee files")).toEqual(["fil"]);
  });

  it("never yields a function word from a function word with an ending the stemmer cuts (property)", () => {
    const word = fc.constantFrom(...FUNCTION_WORDS);
    const ending = fc.constantFrom("s", "es", "ed", "ing", "e", "'s", "'r", "double");
    fc.assert(
      fc.property(word, ending, fc.boolean(), (w, end, upper) => {
        const written = end === "double" ? w + w.slice(-1) : w + end;
        for (const term of terms(upper ? written.toUpperCase() : written)) {
          expect(FUNCTION_WORDS.has(term), `${written} → ${term}`).toBe(false);
        }
      }),
      propertyRuns(200),
    );
  });

  it("never yields an empty word or a function word, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        for (const word of terms(text)) {
          expect(word).not.toBe("");
          expect(FUNCTION_WORDS.has(word)).toBe(false);
        }
      }),
    );
  });
});
