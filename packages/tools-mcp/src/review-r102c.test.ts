// Review r102c: what in a stdio server's command line is a credential, caught up with spec's
// finder (r101b, r101e). A `.mcp.json` may write a password as a Windows-style switch
// (`/p:Password=X`, `/password:X`, `/Password X`), as dotnet's `-p:Password=X`, as a header after a
// flag's `=` (`--header=X-Api-Key: X`) or as a separate `-H` word, or in a connection string
// (`Server=db;Password=X;`), and SQL Server's clients take it after `-P` or `/P` (`sqlcmd -U sa -P
// X`). Before, none of them was masked: a server that printed its arguments on stderr had the
// password quoted in clear in the pool's error, and a tool's result echoing it reached the model.
// Against the fixture server, which prints its arguments when told to fail.
import { afterEach, describe, expect, it } from "vitest";
import { failedWithArgs } from "../test/support.js";
import type { McpServerConfig } from "./config.js";
import type { McpPool } from "./index.js";
import { resultSecretsOf, secretsOf } from "./redact.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

const stdio = (command: string, args: string[]): McpServerConfig => ({
  name: "x",
  type: "stdio",
  command,
  args,
});
/** True when a value is masked both in what is reported about the server and in its results. */
const masked = (server: McpServerConfig, value: string) =>
  secretsOf(server).includes(value) && resultSecretsOf(server).includes(value);

describe("a password in a server's arguments as Windows tools, dotnet, curl and sqlcmd take it", () => {
  it("is not quoted by the pool's error when the server prints its arguments", async () => {
    const message = await failedWithArgs(pools, [
      "/etc/passwd",
      "/p:Password=msbuild-pw-1a2b",
      "/password:switch-pw-3c4d",
      "/Password",
      "alone-pw-5e6f",
      "-p:DbPassword=dotnet-pw-7a8b",
      "--header=X-Api-Key: header-key-9c0d",
      "-H",
      "Authorization: Bearer bearer-tok-1e2f",
      "/p:Configuration=Release",
      "sqlcmd",
      "-S",
      "db",
      "-U",
      "sa",
      "-P",
      "sqlcmd-pw-3a4b",
    ]);
    expect(message).toContain(
      "fixture: started with --fail /etc/passwd /p:Password=*** /password:*** /Password *** -p:DbPassword=*** --header=X-Api-Key: *** -H Authorization: *** /p:Configuration=Release sqlcmd -S db -U sa -P ***",
    );
  });

  it.each([
    ["a switch's value", "tool", ["/password:pw-value-8c7b"]],
    ["a switch alone's next word", "robocopy", ["a", "b", "/Password", "pw-value-8c7b"]],
    ["msbuild's property", "msbuild", ["/p:Password=pw-value-8c7b", "app.sln"]],
    ["msbuild's long property", "msbuild", ["/property:DbPassword=pw-value-8c7b;Configuration=Release"]],
    ["msbuild's property after another", "msbuild", ["/p:Configuration=Release;DbPassword=pw-value-8c7b"]],
    ["a connection string's password", "node", ["server.js", "Server=db;User ID=sa;Password=pw-value-8c7b;"]],
    [
      "a connection string's password after a flag's =",
      "node",
      ["server.js", "--conn=Server=db;Pwd=pw-value-8c7b"],
    ],
    ["dotnet's property", "dotnet", ["build", "-p:Password=pw-value-8c7b"]],
    ["dotnet's long property", "dotnet", ["build", "--property:Password=pw-value-8c7b"]],
    ["an assignment after a flag's =", "docker", ["run", "--env=GITHUB_TOKEN=pw-value-8c7b"]],
    ["a header after a flag's =", "curl", ["--header=X-Api-Key: pw-value-8c7b"]],
    ["a header as its own word", "curl", ["-H", "X-Api-Key: pw-value-8c7b"]],
    ["sqlcmd's -P", "sqlcmd", ["-S", "db", "-U", "sa", "-P", "pw-value-8c7b"]],
    ["sqlcmd.exe's /P", "C:\\Tools\\sqlcmd.exe", ["/S", "db", "/U", "sa", "/P", "pw-value-8c7b"]],
    ["bcp's -P", "bcp", ["t", "out", "f", "-U", "sa", "-P", "pw-value-8c7b"]],
    ["osql's -P", "/opt/mssql-tools/bin/osql", ["-P", "pw-value-8c7b"]],
    [
      "sqlcmd's -P, run by another program",
      "docker",
      ["exec", "-i", "mssql", "sqlcmd", "-P", "pw-value-8c7b"],
    ],
  ])("masks %s", (_form, command, args) => {
    expect(masked(stdio(command, args), "pw-value-8c7b")).toBe(true);
  });

  it("masks each word of a header's value but the scheme word", () => {
    const server = stdio("curl", ["--header=Authorization: Bearer tok-value-8c7b"]);
    expect(masked(server, "tok-value-8c7b")).toBe(true);
    expect(secretsOf(server)).not.toContain("Bearer");
  });

  it.each([
    ["ssh's port", "ssh", ["-P", "2222", "host"]],
    ["scp's port", "scp", ["-P", "2222", "a", "b:c"]],
    ["another program's -P", "tool", ["-P", "8080"]],
    ["a Unix path, then a word", "tool", ["/usr/bin/password-helper", "keep-me-42x9"]],
    ["a path holding a telling word", "tool", ["/opt/token/bin", "keep-me-42x9"]],
    ["a switch that tells nothing", "msbuild", ["/p:Configuration=Release", "/verbosity:minimal"]],
    ["a header that tells nothing", "curl", ["-H", "Accept: application/json"]],
  ])("leaves %s alone", (_form, command, args) => {
    const secrets = secretsOf(stdio(command, args));
    for (const arg of args) expect(secrets, arg).not.toContain(arg);
    expect(secrets).not.toContain("Release");
    expect(secrets).not.toContain("application/json");
  });
});
