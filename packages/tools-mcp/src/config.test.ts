// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are .mcp.json ${VAR} references, meant literally.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createMcpPool, McpPoolError, mcpServers, readMcpJson } from "./index.js";

function refusal(fn: () => unknown): McpPoolError {
  try {
    fn();
  } catch (error) {
    if (McpPoolError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a McpPoolError");
}

describe("mcpServers", () => {
  it("reads a .mcp.json document: stdio, Streamable HTTP and SSE entries, disabled ones left out", () => {
    expect(
      mcpServers({
        mcpServers: {
          files: {
            command: "npx",
            args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
            env: { A: "1" },
            cwd: "/tmp",
          },
          web: {
            type: "streamable-http",
            url: "https://mcp.example.com/mcp",
            headers: { authorization: "Bearer x" },
          },
          old: { type: "sse", url: "http://127.0.0.1:3001/sse" },
          bare: { url: "http://127.0.0.1:3002/mcp" },
          off: { command: "x", enabled: false },
        },
      }),
    ).toEqual([
      {
        name: "files",
        type: "stdio",
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
        env: { A: "1" },
        cwd: "/tmp",
      },
      {
        name: "web",
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { authorization: "Bearer x" },
      },
      { name: "old", type: "sse", url: "http://127.0.0.1:3001/sse" },
      { name: "bare", type: "http", url: "http://127.0.0.1:3002/mcp" },
    ]);
  });

  it("reads a spec's bundle.mcpServers list", () => {
    expect(mcpServers([{ name: "git", type: "stdio", command: "uvx", args: ["mcp-server-git"] }])).toEqual([
      { name: "git", type: "stdio", command: "uvx", args: ["mcp-server-git"] },
    ]);
  });

  it("names the place of a bad entry, never a value that may be a credential", () => {
    // @ts-expect-error: a number is no env value; what the check at run time says is what is tested.
    const secret = refusal(() => mcpServers({ mcpServers: { gh: { command: "x", env: { TOKEN: 42 } } } }));
    expect(secret.code).toBe("invalid-config");
    expect(secret.message).toBe("mcpServers.gh.env.TOKEN: expected a string, got number.");
    expect(refusal(() => mcpServers([{ name: "a", url: "ftp://x" }])).message).toBe(
      "[0].url: expected http: or https:, got ftp:",
    );
    expect(refusal(() => mcpServers([{ name: "a" }])).message).toBe(
      "[0]: a server needs either a command (stdio) or a url (HTTP).",
    );
    expect(refusal(() => mcpServers([{ name: "a", type: "ws", url: "http://x" }])).message).toContain(
      'unknown server type "ws"',
    );
    expect(
      refusal(() =>
        mcpServers([
          { name: "a", command: "x" },
          { name: "a", command: "y" },
        ]),
      ).message,
    ).toBe("a: two servers have this name; each needs its own.");
    expect(refusal(() => mcpServers("nope" as never)).message).toContain("got a string");
  });

  it("createMcpPool refuses a bad option before starting anything", () => {
    expect(refusal(() => createMcpPool([], { timeoutMs: 0 })).message).toBe(
      "timeoutMs must be a positive number of milliseconds; got the number 0.",
    );
    expect(refusal(() => createMcpPool([], { toolNames: "short" as never })).code).toBe("invalid-config");
  });

  it("createMcpPool refuses a bad count, enum, flag, clientInfo or listener, naming the option", () => {
    const refused = (options: Record<string, unknown>) => {
      const error = refusal(() => createMcpPool([], options as never));
      expect(error.code).toBe("invalid-config");
      return error.message;
    };
    // Each refusal says what it was given.
    for (const [bad, got] of [
      [-1, "the number -1"],
      [Number.NaN, "NaN"],
      ["lots", 'the string "lots"'],
      [1.5, "the number 1.5"],
      [Number.POSITIVE_INFINITY, "Infinity"],
    ] as const)
      expect(refused({ maxRestarts: bad })).toBe(`maxRestarts must be a non-negative integer; got ${got}.`);
    for (const [bad, got] of [
      [-3, "the number -3"],
      ["20", 'the string "20"'],
    ] as const)
      expect(refused({ stderrLines: bad })).toBe(`stderrLines must be a non-negative integer; got ${got}.`);
    for (const [bad, got] of [
      [0, "the number 0"],
      [1e3 + 0.5, "the number 1000.5"],
      ["10MB", 'the string "10MB"'],
    ] as const)
      expect(refused({ maxMessageBytes: bad })).toBe(
        `maxMessageBytes must be a positive integer; got ${got}.`,
      );
    expect(refused({ timeoutMs: "60s" })).toBe(
      'timeoutMs must be a positive number of milliseconds; got the string "60s".',
    );
    expect(refused({ images: "bogus" })).toBe(
      'images must be "describe" or "parts"; got the string "bogus".',
    );
    expect(refused({ toolNames: 7 })).toBe('toolNames must be "prefixed" or "plain"; got the number 7.');
    expect(refused({ serializeWrites: "no" })).toBe(
      'serializeWrites must be true or false; got the string "no".',
    );
    expect(refused({ reaper: "off" })).toBe('reaper must be true or false; got the string "off".');
    expect(refused({ reaper: 0 })).toBe("reaper must be true or false; got the number 0.");
    for (const [bad, got] of [
      [42, "the number 42"],
      [{ name: "x" }, "an object"],
      [{ name: "x", version: 1 }, "an object"],
    ] as const)
      expect(refused({ clientInfo: bad })).toBe(
        `clientInfo must be { name, version }, both strings; got ${got}.`,
      );
    expect(refused({ hooks: "h" })).toBe('hooks must be an array; got the string "h".');
    expect(refused({ onNotice: "log" })).toBe('onNotice must be a function; got the string "log".');
    expect(refused({ elicit: true })).toBe("elicit must be a function; got true.");
    expect(refusal(() => createMcpPool([], "fast" as never)).message).toBe(
      'options must be an object; got the string "fast".',
    );
    // A long string is not quoted whole.
    expect(refused({ images: "x".repeat(100) })).toBe(
      'images must be "describe" or "parts"; got a string of 100 characters.',
    );
    // The edges that are allowed.
    for (const good of [
      { maxRestarts: 0, stderrLines: 0, maxMessageBytes: 1 },
      { images: "parts", serializeWrites: false, clientInfo: { name: "host", version: "2" } },
      { reaper: false },
      { reaper: true },
    ])
      expect(() => createMcpPool([], good as never)).not.toThrow();
  });

  // Options from JSON or a database row hold null for "not set": null is absent for every option,
  // as @loopwright/agent reads its own (and passes mcpOptions on as given).
  const OPTION_NAMES = [
    "timeoutMs",
    "connectTimeoutMs",
    "toolNames",
    "images",
    "maxRestarts",
    "stderrLines",
    "maxMessageBytes",
    "serializeWrites",
    "reaper",
    "hooks",
    "hookTimeoutMs",
    "onNotice",
    "onToolsChanged",
    "elicit",
    "clientInfo",
  ] as const;

  it.each(OPTION_NAMES)("createMcpPool reads %s: null as absent", (name) => {
    expect(() => createMcpPool([], { [name]: null })).not.toThrow();
  });

  it("reads an option that is inherited or a getter, as any property read would, and checks it", () => {
    const inherited = Object.create({ timeoutMs: -5 }) as object;
    expect(() => createMcpPool([], inherited as never)).toThrow(/timeoutMs must be a positive number/);
    class Settings {
      get maxRestarts(): unknown {
        return "lots";
      }
    }
    expect(() => createMcpPool([], new Settings() as never)).toThrow(/maxRestarts must be/);
    const throwing = {
      get hooks(): never {
        throw new Error("not loaded yet");
      },
    };
    expect(() => createMcpPool([], throwing as never)).toThrow(
      /options\.hooks could not be read: not loaded yet/,
    );
    const good = Object.create({ timeoutMs: 5000, toolNames: "plain" }) as object;
    expect(() => createMcpPool([], good as never)).not.toThrow();
  });

  it("a pool with every option null (and null options) runs on the defaults", async () => {
    const { FIXTURE, NODE } = await import("../test/support.js");
    expect(() => createMcpPool([], null)).not.toThrow();
    const nulls = Object.fromEntries(OPTION_NAMES.map((name) => [name, null]));
    const pool = createMcpPool([{ name: "fx", command: NODE, args: [FIXTURE] }], nulls as never);
    try {
      const [status] = await pool.connect();
      expect(status?.error).toBeUndefined();
      // toolNames defaults to prefixed, images to text.
      const names = (await pool.tools()).map((t) => t.function.name);
      expect(names).toContain("fx__whoami");
      expect(typeof (await pool.call("fx__whoami", {}))).toBe("string");
      expect(pool.policy("fx__write_note")?.parallel).toBe(false);
    } finally {
      await pool.close();
    }
  });
});

describe("${VAR} in a .mcp.json", () => {
  const env = { GITHUB_TOKEN: "ghp-secret-1", EMPTY: "" };

  it("is expanded from the given environment, with :-defaults, only when asked", () => {
    const document = {
      mcpServers: {
        gh: {
          command: "npx",
          args: ["server-github", "--token=${GITHUB_TOKEN}", "--org=${ORG:-acme}"],
          env: { TOKEN: "${GITHUB_TOKEN}", MODE: "${EMPTY:-fast}" },
        },
        web: {
          url: "https://${HOST:-mcp.example.com}/mcp",
          headers: { authorization: "Bearer ${GITHUB_TOKEN}" },
        },
      },
    };
    expect(mcpServers(document, { env })).toEqual([
      {
        name: "gh",
        type: "stdio",
        command: "npx",
        args: ["server-github", "--token=ghp-secret-1", "--org=acme"],
        env: { TOKEN: "ghp-secret-1", MODE: "fast" },
        masked: ["ghp-secret-1", "ghp-secret-1"],
      },
      {
        name: "web",
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { authorization: "Bearer ghp-secret-1" },
        masked: ["ghp-secret-1"],
      },
    ]);
    // Without an environment the references stay the literals they are.
    expect(mcpServers({ mcpServers: { gh: document.mcpServers.gh } })[0]).toMatchObject({
      args: ["server-github", "--token=${GITHUB_TOKEN}", "--org=${ORG:-acme}"],
    });
  });

  it("a reference to an unset variable with no default is refused, naming the place and the variable", () => {
    const error = refusal(() =>
      mcpServers({ mcpServers: { gh: { command: "x", args: ["${NOPE}"] } } }, { env }),
    );
    expect(error.message).toBe(
      "mcpServers.gh.args[0]: ${NOPE} is not set in the environment, and has no default (${NOPE:-default}).",
    );
  });

  it("refuses a spec's exported --pwd reference while it is unset, though PWD (the working directory) is set", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    const exported = exportSpec({
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [{ name: "db", command: "db-mcp", args: ["--user", "admin", "--pwd", "hunter2"] }],
      },
    });
    const servers = exported.bundle?.mcpServers ?? [];
    const error = refusal(() => mcpServers(servers, { env: { PWD: "/work/main", HOME: "/home/me" } }));
    expect(error.message).toBe(
      "[0].args[3]: ${PWD_SECRET} is not set in the environment, and has no default (${PWD_SECRET:-default}).",
    );
    // Set, it is what the server gets.
    const [db] = mcpServers(servers, { env: { PWD: "/work/main", PWD_SECRET: "hunter2" } });
    expect(db).toMatchObject({ args: ["--user", "admin", "--pwd", "hunter2"] });
  });

  it("gives back a shell's own command whole after spec's export replaced it by one reference", async () => {
    const { exportSpec, findSpecSecrets, SPEC_TOKEN } = await import("@loopwright/spec");
    const script = [
      "cat > /tmp/app.json <<'EOF'",
      '{"headers": {"Authorization": "Bearer Xy7pQ2rT9vKm"}, "note": "it\'s $HOME, ${USER} and $$"}',
      "EOF",
      'exec srv --config /tmp/app.json --password "two words" | tee log',
    ].join("\n");
    const original = [
      { name: "db", command: "bash", args: ["-lc", script] },
      { name: "plain", command: "sh", args: ["-c", "exec srv --port 80"] },
    ];
    const exported = exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } });
    const servers = exported.bundle?.mcpServers ?? [];
    expect(servers.map((server) => server.args)).toEqual([
      ["-lc", "${DB_COMMAND}"],
      ["-c", "exec srv --port 80"],
    ]);
    expect(findSpecSecrets(exported)).toEqual([]);
    // The host supplies the script from its environment: the server's args come back as written.
    const [db, plain] = mcpServers(servers, { env: { DB_COMMAND: script } });
    expect(db).toMatchObject({ args: ["-lc", script], masked: [script] });
    expect(plain).toMatchObject({ args: ["-c", "exec srv --port 80"] });
    expect(refusal(() => mcpServers(servers, { env: {} })).message).toBe(
      "[0].args[1]: ${DB_COMMAND} is not set in the environment, and has no default (${DB_COMMAND:-default}).",
    );
  });

  it("gives back a pasted command holding a shell's own command whole, and keeps a script that names its credential by a reference (r41 #1, #2)", async () => {
    const { exportSpec, findSpecSecrets, SPEC_TOKEN } = await import("@loopwright/spec");
    const pasted = `sh -c 'ARGS="--api-key Xy7pQ2rT9vKm --port 8080"; exec srv $ARGS'`;
    const byReference = 'exec srv --token "${GITHUB_TOKEN}" --port 80';
    const exported = exportSpec({
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          { name: "db", command: pasted },
          { name: "gh", command: "bash", args: ["-c", byReference] },
        ],
      },
    });
    const servers = exported.bundle?.mcpServers ?? [];
    expect(servers.map((server) => [server.command, server.args])).toEqual([
      ["${DB_COMMAND}", undefined],
      ["bash", ["-c", byReference]],
    ]);
    expect(findSpecSecrets(exported)).toEqual([]);
    // The host fills the command from its environment, and the script's own reference as it did before the export.
    const [db, gh] = mcpServers(servers, { env: { DB_COMMAND: pasted, GITHUB_TOKEN: "ghtok" } });
    expect(db).toMatchObject({ command: pasted, masked: [pasted] });
    expect(gh).toMatchObject({ command: "bash", args: ["-c", 'exec srv --token "ghtok" --port 80'] });
    expect(refusal(() => mcpServers(servers, { env: { GITHUB_TOKEN: "ghtok" } })).message).toBe(
      "[0].command: ${DB_COMMAND} is not set in the environment, and has no default (${DB_COMMAND:-default}).",
    );
  });

  it("reads a default holding a reference of its own, as spec's export writes a literal default it took out of an argument holding spaces", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // (A shell's own command is exported whole: the test above. An argument merely holding
    // spaces is still rewritten in place.)
    const exported = exportSpec({
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          { name: "db", command: "srv", args: ["--run", "exec srv --password ${DB_PASSWORD:-Tr0ub4dor3x}"] },
        ],
      },
    });
    const servers = exported.bundle?.mcpServers ?? [];
    const script = servers[0]?.args?.[1] ?? "";
    expect(script).not.toContain("Tr0ub4dor3x");
    expect(script).toMatch(/^exec srv --password \$\{DB_PASSWORD:-\$\{[A-Z_]+\}\}$/);
    const inner = /:-\$\{([A-Z_]+)\}/.exec(script)?.[1] ?? "";
    // Before: the first `}` closed the reference, so the importer got `${PASSWORD}` or `dbpw}`.
    expect(mcpServers(servers, { env: { [inner]: "realpw" } })[0]).toMatchObject({
      args: ["--run", "exec srv --password realpw"],
      masked: ["realpw"],
    });
    expect(mcpServers(servers, { env: { [inner]: "realpw", DB_PASSWORD: "dbpw" } })[0]).toMatchObject({
      args: ["--run", "exec srv --password dbpw"],
      masked: ["dbpw"],
    });
    // Neither set: refused naming the default's own reference, not run with a literal `${…}`.
    expect(refusal(() => mcpServers(servers, { env: {} })).message).toBe(
      `[0].args[1]: \${${inner}} is not set in the environment, and has no default (\${${inner}:-default}).`,
    );
  });

  it("fills a default's word spec's export took out where literal text follows its `}` (fix182)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // fix181's export hid `QJ}\` whole (`${V:-TOKEN=${TOKEN}`): the default left open, kept as
    // written here, the server given the literal `${TOKEN}`.
    for (const run of ["exec srv ${V:-TOKEN=QJ}\\", "exec srv ${V:-TOKEN=QJ}x --port 80"]) {
      const original = [{ name: "db", command: "srv", args: ["--run", run] }];
      const servers =
        exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
      expect(JSON.stringify(servers)).not.toContain("QJ");
      const names = [...(servers[0]?.args?.[1] ?? "").matchAll(/\$\{(TOKEN(?:_\d+)?)\}/g)].map(
        (m) => m[1] ?? "",
      );
      // Each reference given back the text it took out: the server gets what the original gives.
      const env = Object.fromEntries(names.map((name, i) => [name, i === 0 ? "QJ" : "x"]));
      const argsOf = (server: unknown) => (server as { args?: string[] } | undefined)?.args;
      expect(argsOf(mcpServers(servers, { env })[0])).toEqual(argsOf(mcpServers(original, { env: {} })[0]));
    }
  });

  it("fills a plain argument's default spec's export took out with its quote, backslash or operator (fix185)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // Here a default's word is text to its first `}`, a quote or a backslash in it too: the export
    // hides the value with them, so each reference, given back the text it took out, gives the
    // server what the original gave.
    const cases: [string, string, Record<string, string>][] = [
      ["${V:-TOKEN=Q&J}", "${V:-TOKEN=${TOKEN}}", { TOKEN: "Q&J" }],
      ['${V:-TOKEN=Q"J}', "${V:-TOKEN=${TOKEN}}", { TOKEN: 'Q"J' }],
      ["${V:-TOKEN=Q\\J}", "${V:-TOKEN=${TOKEN}}", { TOKEN: "Q\\J" }],
      ["${V:-TOKEN=Q\\}J}", "${V:-TOKEN=${TOKEN}}${TOKEN_2}", { TOKEN: "Q\\", TOKEN_2: "J}" }],
    ];
    for (const [arg, exported, env] of cases) {
      const original = [{ name: "db", command: "srv", args: [arg] }];
      const servers =
        exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
      expect(servers[0]?.args).toEqual([exported]);
      const argsOf = (server: unknown) => (server as { args?: string[] } | undefined)?.args;
      expect(argsOf(mcpServers(servers, { env })[0])).toEqual(argsOf(mcpServers(original, { env: {} })[0]));
    }
  });

  it("fills a plain argument's default whose word mixes literal text and references, piece by piece (fix186)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // spec's export takes out each literal piece of the default's word and keeps `${X}` between
    // them: each reference given back its piece, the server is given what the original gave.
    const arg = "${V:-TOKEN=Q${X}J}";
    const original = [{ name: "db", command: "srv", args: [arg] }];
    const servers =
      exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
    expect(servers[0]?.args).toEqual(["${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"]);
    const argsOf = (server: unknown) => (server as { args?: string[] } | undefined)?.args;
    const filled = argsOf(mcpServers(servers, { env: { X: "x1", TOKEN: "Q", TOKEN_2: "J" } })[0]);
    expect(filled).toEqual(["TOKEN=Qx1J"]);
    expect(filled).toEqual(argsOf(mcpServers(original, { env: { X: "x1" } })[0]));
  });

  it("fills a plain argument's default whose word holds a backtick or `$(`, closed as the original is (fix186)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // spec's export keeps the `}` that closes the default here: a default left open is kept as
    // written, and the value filled back would never reach the server.
    for (const [arg, value] of [
      ["${V:-TOKEN=Q`J}", "Q`J"],
      ["${V:-TOKEN=Q$(J}", "Q$(J"],
    ]) {
      const original = [{ name: "db", command: "srv", args: [arg as string] }];
      const servers =
        exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
      expect(servers[0]?.args).toEqual(["${V:-TOKEN=${TOKEN}}"]);
      const argsOf = (server: unknown) => (server as { args?: string[] } | undefined)?.args;
      const filled = argsOf(mcpServers(servers, { env: { TOKEN: value as string } })[0]);
      expect(filled).toEqual([`TOKEN=${value}`]);
      expect(filled).toEqual(argsOf(mcpServers(original, { env: {} })[0]));
    }
  });

  it("fills an argument in literal quotes back to what the original gives, quotes and all (fix187)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    for (const [arg, exported, env] of [
      ['"TOKEN=QJ"', '"TOKEN=${TOKEN}"', { TOKEN: "QJ" }],
      ['"${V:-TOKEN=Q${X}J}"', '"${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}"', { TOKEN: "Q", TOKEN_2: "J" }],
    ] as const) {
      const original = [{ name: "db", command: "srv", args: [arg] }];
      const servers =
        exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
      expect(servers[0]?.args).toEqual([exported]);
      const argsOf = (server: unknown) => (server as { args?: string[] } | undefined)?.args;
      const filled = argsOf(mcpServers(servers, { env: { ...env, X: "x1" } })[0]);
      expect(filled).toEqual(argsOf(mcpServers(original, { env: { X: "x1" } })[0]));
      expect(filled?.[0]).toMatch(/^"TOKEN=Q(x1)?J"$/);
    }
  });

  it("fills a value spec's export took out of a refused line around a reference it keeps, as the original fills it (r74d)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // The export keeps `${X}` out of what `${TOKEN}` stands for: a value it fills is not read again,
    // so `${X}` inside it would reach the server as written where the original gives X's value.
    const original = [{ name: "db", command: 'srv ${V:-TOKEN=Q"${X}J}' }];
    const servers =
      exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
    expect(servers[0]?.command).toBe("srv ${V:-TOKEN=${TOKEN}${X}${TOKEN_2}}");
    const commandOf = (server: unknown) => (server as { command?: string } | undefined)?.command;
    const filled = commandOf(mcpServers(servers, { env: { X: "x1", TOKEN: 'Q"', TOKEN_2: "J" } })[0]);
    expect(filled).toBe('srv TOKEN=Q"x1J');
    expect(filled).toBe(commandOf(mcpServers(original, { env: { X: "x1" } })[0]));
  });

  it("fills a telling value spec's export took out around a reference it keeps, no default around it, as the original fills it (r75c)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // `${X}` is kept out of what `${TOKEN}` stands for, on a line the shell refuses and in an argument.
    const original = [
      { name: "db", command: 'srv TOKEN=Q"${X}J' },
      { name: "api", command: "srv", args: ['TOKEN=Q"${X}J', "--token", "Q${X}J"] },
    ];
    const servers =
      exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
    expect(servers[0]?.command).toBe("srv TOKEN=${TOKEN}${X}${TOKEN_2}");
    expect(servers[1]?.args).toEqual(["TOKEN=${TOKEN}${X}${TOKEN_2}", "--token", "${TOKEN_3}${X}${TOKEN_2}"]);
    const shape = (list: unknown[]) =>
      list.map((server) => {
        const { command, args } = server as { command?: string; args?: string[] };
        return { command, args };
      });
    const filled = shape(mcpServers(servers, { env: { X: "x1", TOKEN: 'Q"', TOKEN_2: "J", TOKEN_3: "Q" } }));
    expect(filled[0]?.command).toBe('srv TOKEN=Q"x1J');
    expect(filled[1]?.args).toEqual(['TOKEN=Q"x1J', "--token", "Qx1J"]);
    expect(filled).toEqual(shape(mcpServers(original, { env: { X: "x1" } })));
  });

  it("fills an argument starting with an empty default after spec's export took the rest's value out, as the original fills it (r75c)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // X unset, tools-mcp gives the server `TOKEN=QJ`: the export keeps `${X:-}` and takes out `QJ`.
    const original = [{ name: "db", command: "srv", args: ["${X:-}TOKEN=QJ", "--token", "${X:-}QJ"] }];
    const servers =
      exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
    expect(servers[0]?.args).toEqual(["${X:-}TOKEN=${TOKEN}", "--token", "${X:-}${TOKEN}"]);
    const argsOf = (server: unknown) => (server as { args?: string[] } | undefined)?.args;
    for (const env of [{}, { X: "x1" }]) {
      const filled = argsOf(mcpServers(servers, { env: { ...env, TOKEN: "QJ" } })[0]);
      expect(filled).toEqual(argsOf(mcpServers(original, { env })[0]));
    }
    expect(argsOf(mcpServers(servers, { env: { TOKEN: "QJ" } })[0])).toEqual(["TOKEN=QJ", "--token", "QJ"]);
  });

  it("fills a pasted command line's word starting with an empty default after spec's export took the rest's value out, as the original fills it (r76a)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // X unset, tools-mcp gives the server `srv TOKEN=QJ --token QJ`: the export keeps `${X:-}` and takes out `QJ`.
    // In "…" too: the server gets `srv "TOKEN=QJ"`.
    const original = [
      { name: "db", command: "srv ${X:-}TOKEN=QJ --token ${X:-}QJ" },
      { name: "api", command: 'srv "${X:-}TOKEN=QJ"' },
    ];
    const servers =
      exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
    expect(servers[0]?.command).toBe("srv ${X:-}TOKEN=${TOKEN} --token ${X:-}${TOKEN}");
    expect(servers[1]?.command).toBe('srv "${X:-}TOKEN=${TOKEN}"');
    const commands = (list: unknown[]) => list.map((server) => (server as { command?: string }).command);
    for (const env of [{}, { X: "x1" }]) {
      const filled = commands(mcpServers(servers, { env: { ...env, TOKEN: "QJ" } }));
      expect(filled).toEqual(commands(mcpServers(original, { env })));
    }
    expect(commands(mcpServers(servers, { env: { TOKEN: "QJ" } }))).toEqual([
      "srv TOKEN=QJ --token QJ",
      'srv "TOKEN=QJ"',
    ]);
  });

  it("fills a plain argument's default whose word holds `$(…)` or a backtick, which it passes as text (r74d)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    // Here `$(id)` in a default's word is text, part of the value: spec's export takes it out with
    // the value, and the reference given back that text gives the server what the original gave.
    for (const [arg, value] of [
      ["${V:-TOKEN=Q$(id)J}", "Q$(id)J"],
      ["${V:-TOKEN=Q`id`J}", "Q`id`J"],
    ] as const) {
      const original = [{ name: "db", command: "srv", args: [arg] }];
      const servers =
        exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } }).bundle?.mcpServers ?? [];
      expect(servers[0]?.args).toEqual(["${V:-TOKEN=${TOKEN}}"]);
      const argsOf = (server: unknown) => (server as { args?: string[] } | undefined)?.args;
      const filled = argsOf(mcpServers(servers, { env: { TOKEN: value } })[0]);
      expect(filled).toEqual([`TOKEN=${value}`]);
      expect(filled).toEqual(argsOf(mcpServers(original, { env: {} })[0]));
    }
  });

  it("gives back a plain argument's literal default after spec's export took it out (env and headers it removes)", async () => {
    const { exportSpec, SPEC_TOKEN } = await import("@loopwright/spec");
    const original = [
      {
        name: "db",
        command: "db-mcp",
        args: ["--password", "${DB_PASSWORD:-Tr0ub4dor3x}", "--api-key=${K:-sk0abc9XYZ12def}"],
      },
    ];
    const exported = exportSpec({ spec: SPEC_TOKEN, bundle: { mcpServers: original } });
    const servers = exported.bundle?.mcpServers ?? [];
    expect(JSON.stringify(servers)).not.toMatch(/Tr0ub4dor3x|sk0abc9XYZ12def/);
    // The placeholders the export wrote, each inside the default it replaced.
    const placeholders = [...JSON.stringify(servers).matchAll(/:-\$\{([A-Z_]+)\}\}/g)].map(
      (m) => m[1] as string,
    );
    expect(placeholders).toEqual(["PASSWORD", "API_KEY"]);
    const env: Record<string, string> = {};
    for (const name of placeholders) env[name] = name === "API_KEY" ? "sk0abc9XYZ12def" : "Tr0ub4dor3x";
    const [db] = mcpServers(servers, { env });
    const [plain] = mcpServers(original, { env: {} });
    expect(db).toMatchObject({
      args: plain?.type === "stdio" ? plain.args : [],
    });
    expect((db as { args: string[] }).args).toEqual([
      "--password",
      "Tr0ub4dor3x",
      "--api-key=sk0abc9XYZ12def",
    ]);
  });

  it("gives back a JSON argument's number under a telling key as the same number after spec's export hid it (r45 F6)", async () => {
    const { exportSpec, findSpecSecrets, SPEC_TOKEN } = await import("@loopwright/spec");
    const config = '{"host":"db","password":98765432,"port":5432}';
    const exported = exportSpec({
      spec: SPEC_TOKEN,
      bundle: { mcpServers: [{ name: "db", command: "db-mcp", args: ["--config", config] }] },
    });
    const servers = exported.bundle?.mcpServers ?? [];
    expect(servers[0]?.args).toEqual(["--config", '{"host":"db","password":${PASSWORD},"port":5432}']);
    expect(findSpecSecrets(exported)).toEqual([]);
    const [db] = mcpServers(servers, { env: { PASSWORD: "98765432" } });
    const args = (db as { args: string[] }).args;
    expect(args).toEqual(["--config", config]);
    expect(JSON.parse(args[1] as string)).toEqual({ host: "db", password: 98765432, port: 5432 });
  });

  it("fills each server with its own credential after spec's export named two different ones apart (r42a #9)", async () => {
    const { exportSpec, findSpecSecrets, SPEC_TOKEN } = await import("@loopwright/spec");
    const original = [
      { name: "github", command: "gh-mcp", args: ["--password", "aaa111", "--token", "tok-shared-9x"] },
      { name: "gitlab", command: "gl-mcp", args: ["--password", "bbb222", "--token", "tok-shared-9x"] },
      { name: "vault", command: "vault-mcp", args: ["--password", "${PASSWORD}"] },
    ];
    const spec = { spec: SPEC_TOKEN, bundle: { mcpServers: original } };
    const exported = exportSpec(spec);
    const servers = exported.bundle?.mcpServers ?? [];
    expect(JSON.stringify(servers)).not.toMatch(/aaa111|bbb222|tok-shared-9x/);
    // The host fills each reference findSpecSecrets reports with what was written at its place.
    const env: Record<string, string> = { PASSWORD: "the-vault-password" };
    for (const { path, references = [] } of findSpecSecrets(spec)) {
      const [, server, arg] = /^bundle\.mcpServers\[(\d+)\]\.args\[(\d+)\]$/.exec(path) ?? [];
      const value = original[Number(server)]?.args[Number(arg)] ?? "";
      for (const reference of references) env[reference.slice(2, -1)] = value;
    }
    expect(env).toEqual({
      PASSWORD: "the-vault-password",
      PASSWORD_2: "aaa111",
      PASSWORD_3: "bbb222",
      TOKEN: "tok-shared-9x",
    });
    // Before, both passwords were `${PASSWORD}`: one environment gave gitlab github's password,
    // and the vault's own `${PASSWORD}` too.
    const filled = mcpServers(servers, { env });
    expect(filled.map((server) => (server.type === "stdio" ? server.args : []))).toEqual([
      ["--password", "aaa111", "--token", "tok-shared-9x"],
      ["--password", "bbb222", "--token", "tok-shared-9x"],
      ["--password", "the-vault-password"],
    ]);
  });

  it("fills a nested default only when it is used, keeps an unclosed one as written, and takes deep nesting in one pass", () => {
    const args = (arg: string, vars: Record<string, string>) =>
      (mcpServers([{ name: "x", command: "x", args: [arg] }], { env: vars })[0] as { args: string[] })
        .args[0];
    expect(args("${A:-${NOPE}}!", { A: "a" })).toBe("a!");
    expect(args("${A:-${B:-${C:-deep}}}-${A:-x}", {})).toBe("deep-x");
    expect(args("${A:-${B:-${C:-deep}}}", { B: "b" })).toBe("b");
    expect(args("pre ${A:-open ${B} and", { B: "b" })).toBe("pre ${A:-open ${B} and");
    expect(args("${A:-x} ${A:-open", { A: "a" })).toBe("a ${A:-open");
    expect(args("${1} ${A} }", { A: "a" })).toBe("${1} a }");
    // 100,000 levels: no stack overflow (a spec file is anyone's text).
    const depth = 100_000;
    expect(args(`${"${A:-".repeat(depth)}end${"}".repeat(depth)}`, {})).toBe("end");
  });

  it("on text without nested defaults, fills exactly as a flat ${NAME} / ${NAME:-default} reading does (property)", () => {
    const names = ["A", "B", "EMPTY", "UNSET"];
    const vars: Record<string, string> = { A: "va", B: "v}b", EMPTY: "" };
    const piece = fc.oneof(
      fc.stringMatching(/^[a-z :\-}{]{0,6}$/),
      fc.constantFrom(...names).map((n) => `\${${n}:-`),
      fc
        .tuple(fc.constantFrom(...names), fc.stringMatching(/^[a-z :-]{0,5}$/))
        .map(([n, d]) => `\${${n}:-${d}}`),
      fc.constantFrom("A", "B").map((n) => `\${${n}}`),
      fc.constant("$"),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const text = pieces.join("");
        // A flat reading applies only where no default holds a `${` of its own.
        fc.pre(!/\$\{[A-Za-z_]\w*:-[^}]*\$\{/.test(text));
        let unset = false;
        const flat = text.replace(
          /\$\{([A-Za-z_]\w*)(?::-([^}]*))?\}/g,
          (whole, name: string, fallback?: string) => {
            const value = vars[name];
            if (value !== undefined && value !== "") return value;
            if (fallback === undefined) unset = true;
            return fallback ?? whole;
          },
        );
        if (unset) expect(() => args(text)).toThrow(/is not set in the environment, and has no default/);
        else expect(args(text)).toBe(flat);
      }),
      propertyRuns(500),
    );
    function args(text: string): string | undefined {
      return (mcpServers([{ name: "x", command: "x", args: [text] }], { env: vars })[0] as { args: string[] })
        .args[0];
    }
  });

  it("what an expansion put into the args is masked in the failure message", async () => {
    const { FIXTURE, NODE } = await import("../test/support.js");
    const servers = mcpServers(
      [{ name: "broken", command: NODE, args: [FIXTURE, "--fail", "--token=${SECRET}"] }],
      {
        env: { SECRET: "expanded-secret-42" },
      },
    );
    const pool = createMcpPool(servers);
    try {
      const [status] = await pool.connect();
      expect(status?.error?.message).toContain("fixture: started with --fail --token=***");
      expect(status?.error?.message).not.toContain("expanded-secret-42");
    } finally {
      await pool.close();
    }
  });
});

describe("readMcpJson", () => {
  it("reads a file, and refuses one that is not JSON without quoting it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tools-mcp-config-"));
    try {
      const good = join(dir, ".mcp.json");
      await writeFile(good, JSON.stringify({ mcpServers: { a: { command: "node", args: ["server.js"] } } }));
      expect(await readMcpJson(good)).toEqual([
        { name: "a", type: "stdio", command: "node", args: ["server.js"] },
      ]);
      const bad = join(dir, "bad.json");
      await writeFile(bad, '{ "mcpServers": { "a": { "env": { "KEY": "sk-secret-value" ');
      const error = await readMcpJson(bad).then(
        () => undefined,
        (e: unknown) => e as McpPoolError,
      );
      expect(error?.message).toBe(`${bad} is not JSON.`);
      const wrong = join(dir, "wrong.json");
      await writeFile(wrong, JSON.stringify({ mcpServers: { a: { args: ["x"] } } }));
      expect(
        (
          await readMcpJson(wrong).then(
            () => undefined,
            (e: unknown) => e as McpPoolError,
          )
        )?.message,
      ).toBe(`${wrong}: mcpServers.a: a server needs either a command (stdio) or a url (HTTP).`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
