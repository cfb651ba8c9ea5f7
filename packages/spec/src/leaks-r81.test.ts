// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, it } from "vitest";
import { expectArgs, expectHiddenLine } from "./test-support/spec-cases.js";

// fix181: leaks fix180 saw and left.
// 1. An argument holding a command substitution whose quote is left open in it (`["$(TOKEN=QQ\"x)"]`)
//    was read as a command line, which flagged nothing: `QQ` kept in clear in both views. The shell
//    refuses such a text; it goes to the refused-line rule now, as the same text pasted does.

describe("an argument holding a command substitution that leaves a quote open", () => {
  it.each([['$(TOKEN=QQ"x)'], ["$(TOKEN=QQ'x)"]])("%s: the telling name's value hidden to the end", (arg) => {
    expectArgs([arg], ["$(TOKEN=•"], ["$(TOKEN=${TOKEN}"]);
    expectArgs(["--run", arg], ["--run", "$(TOKEN=•"], ["--run", "$(TOKEN=${TOKEN}"]);
  });

  it("pasted, read as before", () => {
    expectHiddenLine('srv $(TOKEN=QQ"x)', "srv $(TOKEN=•", "srv $(TOKEN=${TOKEN}");
  });
});
