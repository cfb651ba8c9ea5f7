// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { SHELL_MARK, shownServerArgs, withoutServerArgSecrets } from "./spec.js";

/** The words the consent question and the spec view show for a stdio server's `args`, no hide given. */
const shown = (command: string, args: string[]) =>
  shownServerArgs(args, command, withoutServerArgSecrets(command, args)).map((word) => word.text);

describe("shownServerArgs: a program's own text, read in place", () => {
  // r48 F3: a concatenated env value in `node -e`'s or `python3 -c`'s script is hidden whole, to
  // the statement's end; the text after it is shown as written.
  it.each([
    [
      "node",
      ["-e", "process.env.API_KEY='sk-'+'liveSECRETTAIL'; require('./srv')"],
      "process.env.API_KEY=${API_KEY}; require('./srv')",
    ],
    [
      "node",
      ["-e", "process.env.API_KEY='sk-' + 'liveSECRET5b'; go()"],
      "process.env.API_KEY=${API_KEY}; go()",
    ],
    [
      "python3",
      ["-c", "import os; os.environ['API_KEY']='sk-'+'liveSECRET'; run()"],
      "import os; os.environ['API_KEY']=${API_KEY}; run()",
    ],
    [
      "python3",
      ["-c", "import os; os.environ['API_KEY']='sk-' 'liveSECRET6'; run()"],
      "import os; os.environ['API_KEY']=${API_KEY}; run()",
    ],
  ])("%s %j shows no part of the value (r48 F3)", (command, args, script) => {
    const words = shown(command, args);
    expect(words).toEqual([args[0], script, SHELL_MARK]);
    expect(words.join(" ")).not.toContain("liveSECRET");
  });
});

describe("shownServerArgs: a shell's own NAME=value read partly at run time (fix141)", () => {
  it("hides a telling value with literal text beside a $VAR whole, and keeps one that is only run-time text", () => {
    expect(shown("sh", ["-c", "TOKEN=abc$def run"])).toEqual(["-c", "TOKEN=${TOKEN} run", SHELL_MARK]);
    expect(shown("sh", ["-c", "TOKEN=$TOKEN run --api-key k3y-v4lue"])).toEqual([
      "-c",
      "TOKEN=$TOKEN run --api-key ${API_KEY}",
      SHELL_MARK,
    ]);
  });
});
