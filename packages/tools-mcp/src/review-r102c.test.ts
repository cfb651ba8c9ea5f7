// Review r102c: what in a stdio server's command line is a credential, caught up with spec's
// finder (r101b, r101e). A `.mcp.json` may write a password as a Windows-style switch
// (`/p:Password=X`, `/password:X`, `/Password X`), as dotnet's `-p:Password=X`, as a header after a
// flag's `=` (`--header=X-Api-Key: X`) or as a separate `-H` word, or in a connection string
// (`Server=db;Password=X;`), and SQL Server's clients take it after `-P` or `/P` (`sqlcmd -U sa -P
// X`). Before, none of them was masked: a server that printed its arguments on stderr had the
// password quoted in clear in the pool's error, and a tool's result echoing it reached the model.
// Against the fixture server, which prints its arguments when told to fail. Then the pool's errors
// about a server's hostile tool names, against the raw server (no SDK) listing them.
import { afterEach, describe, expect, it } from "vitest";
import { controlsMismatch } from "../../../test-support/controls-parity.js";
import { failedWithArgs, NODE, RAW } from "../test/support.js";
import type { McpServerConfig } from "./config.js";
import { echoedName } from "./errors.js";
import { createMcpPool, type McpPool, McpPoolError } from "./index.js";
import { resultSecretsOf, secretsOf } from "./redact.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

/** C0 controls but the tab and line break, DEL, and C1 controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
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

// The clients spec's finder knows by their password forms, which tools-mcp did not: MySQL's
// `-pX`, redis-cli's `-a X`, mongosh's `-p X`, sshpass's `-p X`, lftp's `-u user,X`; and a
// telling flag's value that starts with `-` (`--token -VJJ`). Each was quoted in clear.
describe("a password as a known client takes it", () => {
  it.each([
    ["MySQL's -pX", "mysql", ["-u", "app", "-ppw-value-8c7b", "shop"]],
    ["MySQL's -pX after other options", "mysqldump", ["-vNppw-value-8c7b"]],
    ["MySQL's -pX, run by another program", "docker", ["exec", "db", "mysql", "-ppw-value-8c7b"]],
    ["redis-cli's -a", "redis-cli", ["-h", "cache", "-a", "pw-value-8c7b", "ping"]],
    ["mongosh's -p", "mongosh", ["-u", "app", "-p", "pw-value-8c7b"]],
    ["sshpass's -p", "sshpass", ["-p", "pw-value-8c7b", "ssh", "host"]],
    ["sshpass's -pX", "sshpass", ["-ppw-value-8c7b", "ssh", "host"]],
    ["lftp's -u user,X", "lftp", ["-u", "app,pw-value-8c7b", "ftp.example"]],
    ["a telling flag's value starting with -", "node", ["server.js", "--token", "-pw-value-8c7b"]],
  ])("masks %s", (_form, command, args) => {
    const value =
      args.find((arg) => arg.includes("pw-value-8c7b")) === "-pw-value-8c7b"
        ? "-pw-value-8c7b"
        : "pw-value-8c7b";
    expect(masked(stdio(command, args), value)).toBe(true);
  });

  it.each([
    [
      "ssh's port after sshpass's password",
      "sshpass",
      ["-p", "pw-value-8c7b", "ssh", "-p", "2222", "host"],
      "2222",
    ],
    ["mongosh's -p before a flag (it prompts)", "mongosh", ["-p", "--quiet"], "--quiet"],
    ["another program's -p", "server", ["-p", "8080x"], "8080x"],
    ["a telling flag before a flag of its own", "node", ["server.js", "--token", "--verbose"], "--verbose"],
    ["a server named like a client", "mysql-mcp-server", ["-pkeep-me-42x9"], "keep-me-42x9"],
  ])("leaves %s alone", (_form, command, args, kept) => {
    expect(secretsOf(stdio(command, args))).not.toContain(kept);
  });
});

// A server's own tool name went into every message about a call to it as the server wrote it: a
// name of 5,000 characters made each error that long (an error is a tool result the model is sent
// again on every later step), and terminal escapes, a line break, a NUL or a right-to-left
// override in it reached the model and any log or terminal that shows the error. The model never
// saw that name: `tools()` offers it legal and cut (`names__xxx…_<hash>`). Against the raw server
// with HOSTILE_NAMES.
describe("a server whose tool names are hostile", () => {
  const LONG = "x".repeat(5000);
  const CONTROL = "wipe\u001b[2J\u001b[31mred\nnext line\u0000nul\u202eevil";
  /** C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional controls. */
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

  const connected = async () => {
    const pool = createMcpPool([{ name: "names", command: NODE, args: [RAW], env: { HOSTILE_NAMES: "1" } }]);
    pools.push(pool);
    await pool.connect();
    const tools = (await pool.tools()).map((tool) => tool.function.name);
    /** The name the model is offered for the server's tool `name` (or `hang` and `name`, which never answers). */
    const offered = (name: string, hang: boolean) =>
      tools.find((shown) => shown.startsWith(`names__${hang ? "hang" : ""}${name.slice(0, 4)}`)) as string;
    return { pool, offered };
  };
  const failure = async (run: () => Promise<unknown>): Promise<McpPoolError> => {
    const error = await run().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(McpPoolError.isInstance(error)).toBe(true);
    return error as McpPoolError;
  };

  it("names the tool cut to 60 characters, with its length, when the server refuses a call or it times out", async () => {
    const { pool, offered } = await connected();
    const refused = await failure(() => pool.call(offered(LONG, false), {}));
    expect(refused.code).toBe("call-failed");
    expect(refused.message).toBe(
      `${"x".repeat(60)}… (5000 characters) on MCP server "names" failed: MCP error -32603: refused`,
    );
    // The error's own field keeps the server's name whole, for a host that looks the tool up.
    expect(refused.tool).toBe(LONG);
    const late = await failure(() => pool.callTool(offered(LONG, true), {}, { timeoutMs: 200 }));
    expect(late.code).toBe("timeout");
    expect(late.message.length).toBeLessThan(200);
    expect(late.message).toContain("… (5004 characters) on MCP server");
    expect(late.message.startsWith(`hang${"x".repeat(56)}…`)).toBe(true);
  });

  it("writes the control characters of a tool's name as escapes in what the error says", async () => {
    const { pool, offered } = await connected();
    const refused = await failure(() => pool.call(offered(CONTROL, false), {}));
    expect(refused.message).not.toMatch(CONTROLS);
    expect(refused.message).toBe(
      'wipe\\u001b[2J\\u001b[31mred\\u000anext line\\u0000nul\\u202eevil on MCP server "names" failed: MCP error -32603: refused',
    );
    expect(refused.tool).toBe(CONTROL);
    const stopped = new AbortController();
    const aborted = failure(() => pool.call(offered(CONTROL, true), {}, stopped.signal));
    setTimeout(() => stopped.abort(), 100);
    const error = await aborted;
    expect(error.code).toBe("aborted");
    expect(error.message).not.toMatch(CONTROLS);
    expect(error.message).toContain("\\u202eevil on MCP server");
  });
});

// A server that listed two tools by one name had both offered, the second as `names__twice_2`:
// a tool the server cannot be asked for (a call to it reaches the first), with a schema and
// annotations of its own (read-only here, so its calls ran beside the server's writes).
describe("a server that lists two tools by one name", () => {
  it("is offered the first only, and onNotice is told", async () => {
    const notices: string[] = [];
    const pool = createMcpPool([{ name: "names", command: NODE, args: [RAW], env: { HOSTILE_NAMES: "1" } }], {
      onNotice: (text) => notices.push(text),
    });
    pools.push(pool);
    await pool.connect();
    const twice = (await pool.tools()).filter((tool) => tool.function.name.startsWith("names__twice"));
    expect(twice.map((tool) => [tool.function.name, tool.function.description])).toEqual([
      ["names__twice", "The first."],
    ]);
    expect(pool.policy("names__twice")?.readOnly).toBe(false);
    expect(
      (await pool.servers())[0]?.tools.filter((tool) => tool.name.startsWith("names__twice")),
    ).toHaveLength(1);
    expect(notices).toContain(
      'MCP server "names" listed 2 tools named "twice"; only the first of each name is offered.',
    );
  });
});

// A server that never answers `initialize` failed with the SDK's words alone — "could not be
// started: MCP error -32001: Request timed out." — naming neither what it waited for nor the
// option that bounds it, where a listing that runs out names connectTimeoutMs.
describe("a server that never answers", () => {
  it("fails its start naming initialize and connectTimeoutMs", async () => {
    // A real process that reads nothing and writes nothing.
    const pool = createMcpPool(
      [{ name: "mute", command: NODE, args: ["-e", "setInterval(() => {}, 1 << 30)"] }],
      {
        connectTimeoutMs: 500,
      },
    );
    pools.push(pool);
    const [status] = await pool.connect();
    expect(status?.state).toBe("failed");
    expect(status?.error?.code).toBe("connect-failed");
    expect(status?.error?.message).toMatch(
      /^MCP server "mute" \(.*\) could not be started: it did not answer the initialize request within connectTimeoutMs \(0\.5 s\)\. It wrote nothing to stderr\./,
    );
  });
});

// What a server answered that was no tool result went to the model as the SDK's whole validation
// report, JSON over many lines: 10,000 content parts of a type MCP has not (`video`; since r103d
// such a part is described, so text parts with no text here) made a `call-failed` message of 35
// MB, sent again on every later step. A server's own error message of
// any length went in whole too.
describe("a server whose answer cannot be read", () => {
  const raw = () => {
    const pool = createMcpPool([{ name: "raw", command: NODE, args: [RAW] }]);
    pools.push(pool);
    return pool;
  };
  const refusal = async (pool: McpPool, tool: string, args: Record<string, unknown>) => {
    const error = await pool.call(tool, args).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(McpPoolError.isInstance(error)).toBe(true);
    return error as McpPoolError;
  };

  it("names the first problems of a result that is no tool result, one line, and counts the rest", async () => {
    const pool = raw();
    const error = await refusal(pool, "raw__odd_content", { count: 10_000, type: "text" });
    expect(error.code).toBe("call-failed");
    expect(error.message).toBe(
      'odd_content on MCP server "raw" failed: its answer is not an MCP tool result (content[0]: Invalid input; content[1]: Invalid input; content[2]: Invalid input; and 9,997 more)',
    );
    // The server runs on.
    expect(await pool.call("raw__echo", { text: "still here" })).toBe("still here");
  });

  it("cuts a server's error message of a megabyte to 2,000 characters, saying how long it was", async () => {
    const error = await refusal(raw(), "raw__long_error", { bytes: 1_000_000 });
    expect(error.code).toBe("call-failed");
    expect(error.message.length).toBeLessThan(2_200);
    expect(error.message).toMatch(
      /^long_error on MCP server "raw" failed: MCP error -32603: e+… \(1,000,\d{3} characters\)$/,
    );
  });
});

// A server's stderr is often coloured (pino-pretty, chalk, debug): its terminal escapes went into
// the quoted tail as written, so the model read `[31merror[0m` and a terminal showing the error
// was recoloured, or retitled by an OSC sequence.
describe("a server whose stderr is coloured", () => {
  it("is quoted without its terminal escapes, other control characters written as escapes", async () => {
    const script = [
      'process.stderr.write("\\u001b[1;31merror\\u001b[0m: cannot open \\u001b]0;pwned\\u0007db\\n");',
      'process.stderr.write("bell\\u0007 and cursor\\u001b[2J home\\n");',
      "process.exit(3);",
    ].join(" ");
    const pool = createMcpPool([{ name: "colour", command: NODE, args: ["-e", script] }]);
    pools.push(pool);
    const [status] = await pool.connect();
    const message = status?.error?.message ?? "";
    expect(message).toContain(
      " Its stderr ended with:\n  error: cannot open db\n  bell\\u0007 and cursor home",
    );
    expect(message).not.toMatch(CONTROL_CHARACTERS);
  });
});

describe("tools-mcp's set of controls", () => {
  it("escapes exactly the characters @loopwright/tools escapes in what it echoes", () => {
    // tools-mcp does not depend on tools: its copy is held to the one tools keeps. Each character
    // between two letters; the surrogate halves skipped (a lone one is written U+FFFD).
    expect(controlsMismatch((char) => echoedName(`x${char}y`).slice(1, -1), true)).toBeUndefined();
  });
});
