// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, it } from "vitest";
import { expectHiddenLine } from "./test-support/spec-cases.js";

// r76a: what r75c left on the command-line path. An argument starting with empty defaults
// (`["${X:-}TOKEN=QJ"]`) is read as the rest alone is (leaks-r88), but the same word on a pasted
// command line (`srv ${X:-}TOKEN=QJ`, `srv ${X:-}--token=QJ`) was kept in clear in both views, where
// tools-mcp, X unset, gives the server `srv TOKEN=QJ` (hidden when written so). A word starting with
// empty defaults written bare is read now as the rest is, the defaults kept as written.

describe("a pasted command line's word starting with empty defaults", () => {
  it.each([
    ["srv ${X:-}TOKEN=QJ", "srv ${X:-}TOKEN=•", "srv ${X:-}TOKEN=${TOKEN}"],
    ["srv ${X:-}${Y:-}TOKEN=QJ", "srv ${X:-}${Y:-}TOKEN=•", "srv ${X:-}${Y:-}TOKEN=${TOKEN}"],
    ["srv ${X:-}--token=QJ", "srv ${X:-}--token=•", "srv ${X:-}--token=${TOKEN}"],
    ["srv ${X:-}${V:-TOKEN=QJ}", "srv ${X:-}${V:-TOKEN=•}", "srv ${X:-}${V:-TOKEN=${TOKEN}}"],
    // Hidden before, but exported `${TOKEN}` standing for `${X:-}QJ`: the defaults are kept out of it now.
    ["srv --token ${X:-}QJ", "srv --token ${X:-}•", "srv --token ${X:-}${TOKEN}"],
  ])("%s: the rest read as it is written alone", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });
});

// The same word in "…" (`srv "${X:-}TOKEN=QJ"`): tools-mcp fills the defaults inside the quotes too
// and the server gets `srv "TOKEN=QJ"` (hidden when written so, as `srv "${V:-TOKEN=QJ}"` is). In
// '…' the defaults are the shell's text, and such a word is kept as `srv '${V:-TOKEN=QJ}'` is.

describe("a pasted command line's word in double quotes starting with empty defaults", () => {
  it.each([
    ['srv "${X:-}TOKEN=QJ"', 'srv "${X:-}TOKEN=•"', 'srv "${X:-}TOKEN=${TOKEN}"'],
    ['srv "${X:-}"TOKEN=QJ', 'srv "${X:-}"TOKEN=•', 'srv "${X:-}"TOKEN=${TOKEN}'],
    ['srv --token "${X:-}QJ"', 'srv --token "${X:-}•"', 'srv --token "${X:-}${TOKEN}"'],
  ])("%s: the rest read as it is written alone", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it("in single quotes, kept as written, as before (not changed here)", () => {
    expectHiddenLine("srv '${X:-}TOKEN=QJ'", "srv '${X:-}TOKEN=QJ'", "srv '${X:-}TOKEN=QJ'");
  });
});
