// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { withoutCommandLineSecrets } from "./index.js";
import { expectArgs, expectFilledBack, expectHiddenLine } from "./test-support/spec-cases.js";

// fix181: leaks fix180 saw and left.
// 1. An argument holding a command substitution whose quote is left open in it (`["$(TOKEN=QQ\"x)"]`)
//    was read as a command line, which flagged nothing: `QQ` kept in clear in both views. The shell
//    refuses such a text; it goes to the refused-line rule now, as the same text pasted does.
// 4. A continued pair left open by a default at the line's end (fix180 #6) after a URL whose query
//    value holds a run-time part with a blank in it (`srv https://h/p?token=$(a b)x&code=${V:-J`)
//    showed `J` in the display: the part's own words, listed between the URL and the `&`, hid the
//    glue, and the URL's blank failed its query's shape. The `&` and the URL are now the words before
//    the pair that are no part's, and a closed `$(…)`/backtick part is one piece of the URL.

describe("an argument holding a command substitution that leaves a quote open", () => {
  it.each([['$(TOKEN=QQ"x)'], ["$(TOKEN=QQ'x)"]])("%s: the telling name's value hidden to the end", (arg) => {
    expectArgs([arg], ["$(TOKEN=•"], ["$(TOKEN=${TOKEN}"]);
    expectArgs(["--run", arg], ["--run", "$(TOKEN=•"], ["--run", "$(TOKEN=${TOKEN}"]);
  });

  it("pasted, read as before", () => {
    expectHiddenLine('srv $(TOKEN=QQ"x)', "srv $(TOKEN=•", "srv $(TOKEN=${TOKEN}");
  });
});

describe("a continued pair left open at the line's end after a URL whose run-time part holds a blank", () => {
  it.each([
    ["srv https://h/p?token=$(a b)x&code=${V:-J", "srv https://h/p?token=$(a b)•&code=•"],
    ["srv https://h/p?a=`a b`&code=${V:-J", "srv https://h/p?a=`a b`&code=•"],
    ["srv https://h/p?page=$(a b)&sig=${V:-JQ", "srv https://h/p?page=$(a b)&sig=•"],
  ])("%s: the pair's value hidden in the display, filled back byte for byte", (line, shown) => {
    expect(withoutCommandLineSecrets(line, () => "•")).toBe(shown);
    expectFilledBack(line);
  });
});
