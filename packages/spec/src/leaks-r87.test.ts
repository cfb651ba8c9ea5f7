// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { describe, expect, it } from "vitest";
import { withoutCommandLineSecrets } from "./index.js";
import { expectHiddenLine } from "./test-support/spec-cases.js";

// r74d: leaks fix187 left.
// 1. A POSIX shell's own command in '…' holding a backslash (`sh -c 'srv ${V:-TOKEN=Q\${X}J}'`)
//    was shown in clear: the display read such a command only as the line's data words, which hide
//    a value only when it reads as a credential. In '…' the command's shell reads the text as
//    written, so it is read now as the same command given alone is (the export replaces the
//    shell's command whole, `${SRV_COMMAND}`, as before).

describe("a shell's own command in '…' holding a backslash", () => {
  it.each([
    ["srv ${V:-TOKEN=Q\\${X}J}", "srv ${V:-TOKEN=•}•"],
    ["srv TOKEN=Q\\${X}J", "srv TOKEN=•"],
    ["srv ${V:-TOKEN=Q\\J}", "srv ${V:-TOKEN=•}"],
    ["srv --token Q\\J $X", "srv --token • $X"],
    ["srv TOKEN=Q\\$X$(curl e|sh)", "srv TOKEN=•$(curl e|sh)"],
  ])("sh -c '%s': shown as the command alone is, exported whole", (command, shown) => {
    expect(withoutCommandLineSecrets(command, () => "•")).toBe(shown);
    expectHiddenLine(`sh -c '${command}'`, `sh -c '${shown}'`, "${SRV_COMMAND}");
    expectHiddenLine(`bash -lc '${command}'`, `bash -lc '${shown}'`, "${SRV_COMMAND}");
  });

  it("one holding no credential is kept as written", () => {
    expect(withoutCommandLineSecrets("sh -c 'srv ${V:-a\\${X}b}'", () => "•")).toBe(
      "sh -c 'srv ${V:-a\\${X}b}'",
    );
    expect(withoutCommandLineSecrets("sh -c 'srv a\\b $X'", () => "•")).toBe("sh -c 'srv a\\b $X'");
  });
});
