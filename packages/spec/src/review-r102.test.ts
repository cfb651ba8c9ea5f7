// r102: dotnet's MSBuild property switch written with a dash (`-p:Password=X`,
// `--property:DbPassword=X`, `-property:…`) was kept in clear by withoutArgSecrets, on a pasted
// command line and in an export, and findSpecSecrets reported nothing — while msbuild's own
// `/p:Password=X` was hidden since r101e. tools-mcp's copy of the rule already hid it (r102c); its
// parity test left the form out until spec read it too. A dash flag with `:` after its name is now
// read as a Windows switch is: its value hidden under a telling name, else read as the assignment it
// holds.
import { describe, expect, it } from "vitest";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { exportedArgs, exportedCommand, withArgs } from "./test-support/spec-cases.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

const PW = "S3cretValue99";

describe("a dash flag with its value after a colon (dotnet's -p:)", () => {
  it.each([
    [
      ["build", `-p:Password=${PW}`],
      ["build", `-p:Password=\${PASSWORD}`],
    ],
    [
      ["build", `--property:DbPassword=${PW}`],
      ["build", `--property:DbPassword=\${DBPASSWORD}`],
    ],
    [
      ["build", `-property:ConnectionPassword=${PW}`],
      ["build", `-property:ConnectionPassword=\${CONNECTIONPASSWORD}`],
    ],
    [
      ["run", `-api-key:${PW}`],
      ["run", `-api-key:\${API_KEY}`],
    ],
  ])("has its value hidden in args and is reported: %j", (args, exported) => {
    expect(withoutArgSecrets(args)).toEqual(exported);
    expect(exportedArgs(args)).toEqual(exported);
    expect(findSpecSecrets(withArgs(args)).map((hint) => hint.sign)).not.toEqual([]);
  });

  it("is hidden on a pasted command line", () => {
    expect(withoutCommandLineSecrets(`dotnet build -p:Password=${PW} app.sln`)).toBe(
      `dotnet build -p:Password=\${PASSWORD} app.sln`,
    );
    expect(exportedCommand(`dotnet build --property:DbPassword=${PW}`)).not.toContain(PW);
  });

  it.each([["-p:Configuration=Release"], ["--listen:8080"], ["-Xss:512k"], ["--verbosity:minimal"]])(
    "leaves a dash flag that tells nothing as it is: %s",
    (arg) => {
      expect(withoutArgSecrets([arg, "next-value-1"])).toEqual([arg, "next-value-1"]);
      expect(withoutCommandLineSecrets(`tool ${arg} next-value-1`)).toBe(`tool ${arg} next-value-1`);
      expect(findSpecSecrets(withArgs([arg, "next-value-1"]))).toEqual([]);
    },
  );
});
