// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, it } from "vitest";
import { expectArgs, expectHiddenLine } from "./test-support/spec-cases.js";

// r75c: what r74d left on the plain path (no default around the value).
// 1. A telling value holding a reference tools-mcp fills, on a line the shell refuses read as a
//    command line (`srv TOKEN=Q"${X}J`) or given as an argument (`["TOKEN=Q\"${X}J"]`), was
//    exported `TOKEN=${TOKEN}`, `${TOKEN}` standing for `Q"${X}J`: tools-mcp does not read a value
//    it fills again, so the export filled back gave the server `${X}` as written where the
//    original gave X's value. Each such reference is kept as written now, the text around it
//    hidden apart, in both views (as r74d's `srv ${V:-TOKEN=Q"${X}J}` is).

describe("a telling value holding a reference tools-mcp fills, no default around it", () => {
  it.each([
    ['srv TOKEN=Q"${X}J', "srv TOKEN=•${X}•", "srv TOKEN=${TOKEN}${X}${TOKEN_2}"],
    ['srv --token=Q"${X}J', "srv --token=•${X}•", "srv --token=${TOKEN}${X}${TOKEN_2}"],
  ])("pasted, %s: the reference kept as written in both views", (line, shown, exported) => {
    expectHiddenLine(line, shown, exported);
  });

  it.each([
    [['TOKEN=Q"${X}J'], ["TOKEN=•${X}•"], ["TOKEN=${TOKEN}${X}${TOKEN_2}"]],
    [["TOKEN=Q${X}J"], ["TOKEN=•${X}•"], ["TOKEN=${TOKEN}${X}${TOKEN_2}"]],
    [['--token=Q"${X}J'], ["--token=•${X}•"], ["--token=${TOKEN}${X}${TOKEN_2}"]],
    [
      ["--token", 'Q"${X}J'],
      ["--token", "•${X}•"],
      ["--token", "${TOKEN}${X}${TOKEN_2}"],
    ],
  ])("as arguments, %j: the same", (args, shown, exported) => {
    expectArgs(args, shown, exported);
  });

  it("on a line the shell accepts, the export still hides the value whole, as before (not changed here)", () => {
    expectHiddenLine('srv TOKEN="Q${X}J"', 'srv TOKEN="•${X}•"', 'srv TOKEN="${TOKEN}"');
  });
});

// 2. `["$(id)${V:-TOKEN=QJ}"]` is kept in clear in both views. tools-mcp passes `$(id)` as text and
//    fills the default: the server gets `$(id)TOKEN=QJ`, which is read as `["$(id)TOKEN=QJ"]` is (a
//    name glued after a `$(…)` is no telling name; kept before and after this round). But an argument
//    starting with empty defaults (`["${X:-}TOKEN=QJ"]`, `["${X:-}${V:-TOKEN=QJ}"]`) was kept in
//    clear too, where tools-mcp, X unset, gives the server exactly `TOKEN=QJ` (hidden when written so).
//    The rest of such an argument is read now as the argument alone is, the empty defaults kept.

describe("an argument starting with empty defaults", () => {
  it.each([
    [["${X:-}TOKEN=QJ"], ["${X:-}TOKEN=•"], ["${X:-}TOKEN=${TOKEN}"]],
    [["${X:-}${V:-TOKEN=QJ}"], ["${X:-}${V:-TOKEN=•}"], ["${X:-}${V:-TOKEN=${TOKEN}}"]],
    [["${X:-}${Y:-}--token=QJ"], ["${X:-}${Y:-}--token=•"], ["${X:-}${Y:-}--token=${TOKEN}"]],
    [
      ["--token", "${X:-}QJ"],
      ["--token", "${X:-}•"],
      ["--token", "${X:-}${TOKEN}"],
    ],
  ])("%j: the rest read as the argument alone is", (args, shown, exported) => {
    expectArgs(args, shown, exported);
  });
});
