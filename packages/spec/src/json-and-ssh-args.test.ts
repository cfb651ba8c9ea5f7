// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { growth } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, reference, withoutArgSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { SecretSign } from "./secret-signs.js";
import type { AgentSpec } from "./types.js";
import { withoutCommandLineSecrets } from "./without-command-line-secrets.js";

// Review r42a #2: a one-line JSON argument (`--config '{"apiKey":"X"}'`, Smithery's shape) reached
// the export in clear. #1: ssh's remote command given as separate words (`ssh db mysql -pX`) did.

function specWith(command: string, args: readonly string[]): AgentSpec {
  return { spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: "gh", command, args: [...args] }] } };
}

function exportedArgs(command: string, args: readonly string[]): string[] {
  return exportSpec(specWith(command, args)).bundle?.mcpServers?.[0]?.args ?? [];
}

/** `args` without their secrets, with what each reference stands for (as a host's environment would hold it). */
function hidden(args: readonly string[]): { out: string[]; env: Record<string, string> } {
  const env: Record<string, string> = {};
  const out = withoutArgSecrets(args, (secret, name) => {
    const ref = reference(name ?? "");
    const key = ref.slice(2, -1);
    expect(env[key] === undefined || env[key] === secret, `one name, one value: ${key}`).toBe(true);
    env[key] = secret;
    return ref;
  });
  return { out, env };
}

/** Each `${NAME}` filled from `env`, as tools-mcp's expansion does (a name not in `env` is kept). */
function filled(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (ref, name: string) => env[name] ?? ref);
}

const UUID = "3f2b8c1e-9a4d-4e7f-b6c2-1d5e8f9a0b3c";
const PASS = "S3cretPass99";

describe("a one-line JSON argument is read by its keys", () => {
  const rows: [string, string, readonly string[], readonly string[]][] = [
    [
      "Smithery's --config",
      "npx",
      ["-y", "@smithery/cli@latest", "run", "@upstash/context7-mcp", "--config", `{"apiKey":"${UUID}"}`],
      ["-y", "@smithery/cli@latest", "run", "@upstash/context7-mcp", "--config", '{"apiKey":"${APIKEY}"}'],
    ],
    [
      "a password beside other pairs",
      "npx",
      ["-y", "some-db-mcp", "--config", `{"host":"db","password":"${PASS}"}`],
      ["-y", "some-db-mcp", "--config", '{"host":"db","password":"${PASSWORD}"}'],
    ],
    ["the argument alone", "srv", ['{"token":"9f8e7d6c5b4a3210fedc"}'], ['{"token":"${TOKEN}"}']],
    [
      "spaced as JSON.stringify(…, null, 1) would on one line",
      "srv",
      ["--config", `{ "host": "db", "password": "${PASS}", "port": 5432 }`],
      ["--config", '{ "host": "db", "password": "${PASSWORD}", "port": 5432 }'],
    ],
    [
      "after cmd /c",
      "cmd",
      ["/c", "npx", "-y", "@smithery/cli@latest", "run", "@x/y", "--config", `{"password":"${PASS}"}`],
      ["/c", "npx", "-y", "@smithery/cli@latest", "run", "@x/y", "--config", '{"password":"${PASSWORD}"}'],
    ],
    [
      "docker's -e NAME=",
      "docker",
      ["run", "-e", `MCP_CONFIG={"password":"${PASS}"}`, "img"],
      ["run", "-e", 'MCP_CONFIG={"password":"${PASSWORD}"}', "img"],
    ],
    ["after --flag=", "srv", ['--config={"apiKey":"Hx7kP2mQ9vL4abcd"}'], ['--config={"apiKey":"${APIKEY}"}']],
    [
      "nested, in an array",
      "srv",
      [`[{"name":"a","auth":{"client_secret":"${PASS}"}}]`],
      ['[{"name":"a","auth":{"client_secret":"${CLIENT_SECRET}"}}]'],
    ],
    // r43 #2: an args array read as argv, a command line in a string, and everything under a telling key.
    [
      "an args array inside the JSON",
      "srv",
      ["--config", '{"command":"gh-mcp","args":["--api-key","X-plain-secret"]}'],
      ["--config", '{"command":"gh-mcp","args":["--api-key","${API_KEY}"]}'],
    ],
    [
      "a command line in a string",
      "srv",
      ["--config", '{"cmd":"mysql -uroot -pHunter2x db"}'],
      ["--config", '{"cmd":"mysql -uroot -p${PASSWORD} db"}'],
    ],
    [
      "a telling flag in a string",
      "srv",
      ["--config", '{"token":"Xsecret1","run":"srv --api-key Ysecret2"}'],
      ["--config", '{"token":"${TOKEN}","run":"srv --api-key ${API_KEY}"}'],
    ],
    [
      "a telling key over an array",
      "srv",
      ["--config", '{"password":["X"]}'],
      ["--config", '{"password":["${PASSWORD}"]}'],
    ],
    [
      "a telling key over an object",
      "srv",
      ["--config", '{"auth":{"user":"a","pass":"X"},"port":1}'],
      ["--config", '{"auth":{"user":"${AUTH_USER}","pass":"${PASS}"},"port":1}'],
    ],
    [
      "argv after a number and an object",
      "srv",
      ['{"argv":["--token",5,{"a":1},"--password","Hunter2x",true]}'],
      ['{"argv":["--token",5,{"a":1},"--password","${PASSWORD}",true]}'],
    ],
    ["JSON all of a telling flag's value", "srv", ["--token", '{"token":"Y"}'], ["--token", "${TOKEN}"]],
    ["JSON all of a telling --name= value", "srv", ['--token={"token":"Y"}'], ["--token=${TOKEN}"]],
  ];

  it.each(rows)("%s: the value becomes a reference inside its quotes", (_label, command, args, want) => {
    const spec = specWith(command, args);
    const hints = findSpecSecrets(spec);
    expect(hints.map((hint) => [hint.path, hint.sign])).toEqual([
      [`bundle.mcpServers[0].args[${want.findIndex((arg, i) => arg !== args[i])}]`, SecretSign.Flag],
    ]);
    const out = exportedArgs(command, args);
    expect(out).toEqual(want);
    // The export is a fixed point (exported again, it is the same), and its JSON still parses.
    expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
    expect(exportSpec(exportSpec(spec))).toEqual(exportSpec(spec));
    for (const arg of out) {
      const json = /^(?:--?[A-Za-z][\w.-]*=|[A-Za-z_][\w.-]*=)?([{[][\s\S]*)$/.exec(arg)?.[1];
      if (json !== undefined) expect(() => JSON.parse(json)).not.toThrow();
    }
    // Filled back, it is the argument again.
    const { out: safe, env } = hidden(args);
    expect(safe).toEqual(want);
    expect(safe.map((arg) => filled(arg, env))).toEqual(args);
  });

  it("a key shape under any key is a Value; escapes inside a value fill back byte for byte", () => {
    const key = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    expect(findSpecSecrets(specWith("srv", [`{"note":"${key}"}`])).map((hint) => hint.sign)).toEqual([
      SecretSign.Value,
    ]);
    expect(exportedArgs("srv", [`{"note":"${key}"}`])).toEqual(['{"note":"${SECRET}"}']);
    const escaped = '{"password":"a\\"b\\\\c\\u0041d9"}';
    const { out, env } = hidden([escaped]);
    expect(out).toEqual(['{"password":"${PASSWORD}"}']);
    expect(filled(out[0] as string, env)).toBe(escaped);
    expect(JSON.parse(filled(out[0] as string, env))).toEqual({ password: 'a"b\\cAd9' });
  });

  // Review r45 F4: a later export round read the `${SECRET}` the first had written as a telling
  // key and replaced "admin" with a `${SECRET_2}` no hint listed.
  it("a key shape used as a key: its value is kept, and the hints list every reference the export writes", () => {
    const key = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    const config = JSON.stringify({ users: { [key]: "admin" } });
    for (const spec of [specWith("srv", ["--config", config]), specWith(`srv --config '${config}'`, [])]) {
      const server = exportSpec(spec).bundle?.mcpServers?.[0];
      const written = JSON.stringify([server?.command, ...(server?.args ?? [])]);
      expect(written).toContain('{\\"users\\":{\\"${SECRET}\\":\\"admin\\"}}');
      const listed = findSpecSecrets(spec).flatMap((hint) => hint.references ?? []);
      expect(listed).toEqual([...new Set(written.match(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g))]);
    }
  });

  it("JSON with nothing telling is kept as written; a reference stays; two lines are still one script", () => {
    for (const arg of ['{"host":"db","port":5432,"tls":true}', '{"apiKey":"${SMITHERY_KEY}"}', "[1,2,3]"])
      expect(exportedArgs("srv", ["--config", arg])).toEqual(["--config", arg]);
    expect(exportedArgs("srv", ["--config", `{\n"password":"${PASS}"\n}`])).toEqual([
      "--config",
      "${GH_COMMAND}",
    ]);
  });

  it("reads a long JSON argument in linear time", async () => {
    const config = (count: number) =>
      `{${Array.from({ length: count }, (_, i) => `"k${i}": "v ${i} \\" x"`).join(", ")}, "password": "${PASS}"}`;
    // Against an eighth of its pairs, the best of three each in the same run (one timing against
    // one, under 8 times plus 500 ms, left a loaded machine little room): against a sixteenth,
    // linear is about 16 times that, quadratic 256, the bound four times from each.
    const args = new Map([250, 4_000].map((n) => [n, config(n)]));
    expect(await growth((n) => withoutArgSecrets(["--config", args.get(n) as string]), 250, 16)).toBeLessThan(
      64,
    );
    const out = withoutArgSecrets(["--config", args.get(4_000) as string]);
    expect(out[1]?.endsWith('"password": "${PASSWORD}"}')).toBe(true);
  });
});

describe("ssh's remote command given as words is read as one command", () => {
  const rows: [string, readonly string[], SecretSign | undefined][] = [
    ["mysql -p", ["db.example", "mysql", "-uroot", "-phunter2x9", "app"], undefined],
    ["redis-cli -a", ["h", "redis-cli", "-a", "hunter2x9"], undefined],
    ["sshpass -p", ["h", "sshpass", "-p", "hunter2x9", "ssh", "inner"], undefined],
    ["sudo -S", ["h", "sudo", "-S", "run"], SecretSign.Script],
    ["after ssh's options", ["-p", "2222", "-i", "/k/id", "h", "mysql", "-phunter2x9"], undefined],
  ];

  it.each(rows)("%s: each remote word becomes its own reference, and fills back", (_label, args, sign) => {
    const spec = specWith("ssh", args);
    const first = args.indexOf("h") >= 0 ? args.indexOf("h") + 1 : 1;
    const hints = findSpecSecrets(spec);
    expect(hints.map((hint) => hint.path)).toEqual(
      args.slice(first).map((_, i) => `bundle.mcpServers[0].args[${first + i}]`),
    );
    if (sign !== undefined) expect(new Set(hints.map((hint) => hint.sign))).toEqual(new Set([sign]));
    const out = exportedArgs("ssh", args);
    expect(out.slice(0, first)).toEqual(args.slice(0, first));
    expect(out.slice(first)).toEqual(
      args.slice(first).map((_, i) => (i === 0 ? "${GH_COMMAND}" : `\${GH_COMMAND_${i + 1}}`)),
    );
    expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
    // The args keep their count; filled back, each is the word it was.
    const { out: safe, env } = hidden(args);
    expect(safe).toHaveLength(args.length);
    expect(safe.map((arg) => filled(arg, env))).toEqual(args);
  });

  it("a remote command saying nothing is kept byte for byte; an empty word and a reference stay", () => {
    expect(exportedArgs("ssh", ["h", "ls", "-la", "/srv"])).toEqual(["h", "ls", "-la", "/srv"]);
    expect(exportedArgs("ssh", ["h", "ls", "${DIR}", ""])).toEqual(["h", "ls", "${DIR}", ""]);
    expect(exportedArgs("ssh", ["h", "mysql", "-phunter2x9", "${DB}", ""])).toEqual([
      "h",
      "${GH_COMMAND}",
      "${GH_COMMAND_2}",
      "${DB}",
      "",
    ]);
  });

  it("the same words as one argument are still one reference", () => {
    expect(exportedArgs("ssh", ["db.example", "mysql -uroot -phunter2x9 app"])).toEqual([
      "db.example",
      "${GH_COMMAND}",
    ]);
  });
});

// Review r43 #1, #4: a client's password given by its own flag (`sshpass -pX`, `sshpass -p X`,
// `mysql -pX`) stayed in clear, and sshpass's `-pX` was read as a flag whose name holds "pass",
// so the program after it (`ssh`) was replaced instead.
describe("a database or ssh client's password flag is read where its program is named", () => {
  const SSHPASS = "S3cret-pass-123";
  const rows: [string, string, readonly string[], readonly string[]][] = [
    [
      "sshpass -pX",
      "sshpass",
      ["-pS3cret-pass-123", "ssh", "db", "uptime"],
      ["-p${SSHPASS_PASSWORD}", "ssh", "db", "uptime"],
    ],
    [
      "sshpass -p X",
      "sshpass",
      ["-p", SSHPASS, "ssh", "db", "uptime"],
      ["-p", "${SSHPASS_PASSWORD}", "ssh", "db", "uptime"],
    ],
    [
      "sshpass's other options, clustered",
      "/usr/bin/sshpass",
      ["-v", "-P", "assword", "-vp", SSHPASS, "ssh", "db"],
      ["-v", "-P", "assword", "-vp", "${SSHPASS_PASSWORD}", "ssh", "db"],
    ],
    [
      "sshpass named in args, then ssh's remote command read as before",
      "env",
      ["sshpass", "-pS3cret-pass-123", "ssh", "db", "mysql", "-phunter2x9"],
      ["sshpass", "-p${SSHPASS_PASSWORD}", "ssh", "db", "${GH_COMMAND}", "${GH_COMMAND_2}"],
    ],
    ["mysql -pX", "mysql", ["-uroot", "-pHunter2x", "app"], ["-uroot", "-p${PASSWORD}", "app"]],
    ["mysqldump -pX", "mysqldump", ["-h", "db", "-pHunter2x", "app"], ["-h", "db", "-p${PASSWORD}", "app"]],
    ["mariadb -pX", "mariadb", ["-pHunter2x"], ["-p${PASSWORD}"]],
    ["mysqladmin -pX", "mysqladmin", ["-pHunter2x", "status"], ["-p${PASSWORD}", "status"]],
    // Review r45 F1: the rest of MySQL's and MariaDB's tools, and a clustered `-vpX`.
    [
      "mariadb-admin -pX",
      "mariadb-admin",
      ["-uroot", "-pHunter2x", "status"],
      ["-uroot", "-p${PASSWORD}", "status"],
    ],
    ["mysqlcheck -pX", "mysqlcheck", ["-uroot", "-pHunter2x", "app"], ["-uroot", "-p${PASSWORD}", "app"]],
    ["mysqlsh -pX", "mysqlsh", ["-uroot", "-pHunter2x"], ["-uroot", "-p${PASSWORD}"]],
    ["mysqlbinlog -pX", "mysqlbinlog", ["-pHunter2x", "binlog.000001"], ["-p${PASSWORD}", "binlog.000001"]],
    ["mysqlpump -pX", "mysqlpump", ["-uroot", "-pHunter2x"], ["-uroot", "-p${PASSWORD}"]],
    ["mariadb-check -pX", "mariadb-check", ["-pHunter2x", "app"], ["-p${PASSWORD}", "app"]],
    [
      "mariadb-import -pX",
      "mariadb-import",
      ["-pHunter2x", "app", "t.csv"],
      ["-p${PASSWORD}", "app", "t.csv"],
    ],
    ["mariadb-show -pX", "mariadb-show", ["-pHunter2x"], ["-p${PASSWORD}"]],
    ["mysql -vpX, clustered", "mysql", ["-uroot", "-vpHunter2x", "app"], ["-uroot", "-vp${PASSWORD}", "app"]],
    // Review r45 F2: the client is the program a runner runs.
    [
      "mysql run by docker exec",
      "docker",
      ["exec", "-i", "db", "mysql", "-uroot", "-pHunter2x"],
      ["exec", "-i", "db", "mysql", "-uroot", "-p${PASSWORD}"],
    ],
    [
      "mysql run by sudo -u",
      "sudo",
      ["-u", "root", "mysql", "-pHunter2x"],
      ["-u", "root", "mysql", "-p${PASSWORD}"],
    ],
  ];

  it.each(rows)("%s: the password becomes a reference, the rest kept", (_label, command, args, want) => {
    const spec = specWith(command, args);
    expect(findSpecSecrets(spec).length).toBeGreaterThan(0);
    expect(exportedArgs(command, args)).toEqual(want);
    expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
    // withoutArgSecrets knows no server: a remote command's references are SHELL_COMMAND's.
    const { out, env } = hidden([command, ...args]);
    expect(out.slice(1)).toEqual(want.map((arg) => arg.replace("GH_COMMAND", "SHELL_COMMAND")));
    expect(out.map((arg) => filled(arg, env))).toEqual([command, ...args]);
  });

  it.each([
    ["sshpass -pX ssh db uptime", "sshpass -p${SSHPASS_PASSWORD} ssh db uptime"],
    ["sshpass -p X ssh db uptime", "sshpass -p ${SSHPASS_PASSWORD} ssh db uptime"],
    ["mysql -uroot -pHunter2x db", "mysql -uroot -p${PASSWORD} db"],
    ["mysql -uroot -p'Hunter2x' db && exec srv", "mysql -uroot -p'${PASSWORD}' db && exec srv"],
    [
      "docker exec db mariadb-dump -pHunter2x app > out.sql",
      "docker exec db mariadb-dump -p${PASSWORD} app > out.sql",
    ],
  ])("the command-line reader finds %j", (line, shown) => {
    expect(
      withoutCommandLineSecrets(line.replace(/ X /, ` ${SSHPASS} `).replace("-pX", `-p${SSHPASS}`)),
    ).toBe(shown);
  });

  it("a pasted command holding ssh's remote command is still replaced whole", () => {
    const spec = specWith(`sshpass -p${SSHPASS} ssh db uptime`, []);
    expect(findSpecSecrets(spec).map((hint) => hint.sign)).toEqual([SecretSign.Flag]);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.command).toBe("${GH_COMMAND}");
  });

  it("keeps another program's -p (a port), sshpass's -f file and -d n, and mysql's -p alone (a prompt)", () => {
    for (const [command, args] of [
      ["srv", ["-p8080", "--host", "db"]],
      ["redis-server", ["-p", "6380"]],
      ["sshpass", ["-f", "/run/pw", "ssh", "db", "uptime"]],
      ["sshpass", ["-d", "3", "-e", "ssh", "db"]],
      ["mysql", ["-uroot", "-p", "app"]],
      ["mysql", ["-p${DB_PASSWORD}", "app"]],
      // Review r45 F2: `mysql` as a flag's value or an image's name names no client.
      ["docker", ["run", "--name", "mysql", "-p3306:3306", "mysql:8"]],
      ["npx", ["-y", "db-mcp", "--driver", "mysql", "-p8080"]],
      ["mysql-mcp-server", ["-p8080"]],
      ["docker", ["run", "--rm", "-e", "MYSQL_DATABASE=app", "mysql:8", "mysqld", "-p3306"]],
    ] as const) {
      expect(findSpecSecrets(specWith(command, args))).toEqual([]);
      expect(exportedArgs(command, args)).toEqual(args);
    }
    for (const line of [
      "srv -p8080 --host db",
      "sshpass -f /run/pw ssh db uptime",
      "mysql -uroot -p app",
      "docker run --name mysql -p3306:3306 mysql:8",
      "npx -y db-mcp --driver mysql -p8080",
      "mysql -uroot -p app; srv -p8080",
    ]) {
      expect(withoutCommandLineSecrets(line)).toBe(line);
      if (!line.includes("ssh"))
        expect(exportSpec(specWith(line, [])).bundle?.mcpServers?.[0]?.command).toBe(line);
    }
  });

  // Review r45 F2: the client read from one command is not read into the next.
  it.each([
    ["docker run --name mysql -p3306:3306 mysql:8 && mysql -uroot -pHunter2x db"],
    ["cd /srv && mysql -uroot -pHunter2x db"],
    ["env MYSQL_HOST=db mysql -uroot -pHunter2x db | tee out"],
    ["MYSQL_HOST=db exec mysql -uroot -pHunter2x db"],
  ])("after a command that only names mysql, %j still reads mysql's own -pX", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line.replace("-pHunter2x", "-p${PASSWORD}"));
    expect(withoutCommandLineSecrets(`${line}; srv -p8080`)).toBe(
      `${line.replace("-pHunter2x", "-p${PASSWORD}")}; srv -p8080`,
    );
  });
});

// Review r43 #3: Smithery's JSON pasted inside one `command` line went through the command-line
// reader, which did not read it as JSON, so a value that is no key shape stayed in clear.
describe("a JSON word in a pasted command line is read as a JSON argument is", () => {
  const SMITHERY = "npx -y @smithery/cli@latest run @upstash/context7-mcp --config";
  it.each([
    [`${SMITHERY} '{"apiKey":"${UUID}"}'`, `${SMITHERY} '{"apiKey":"\${APIKEY}"}'`],
    [`${SMITHERY} '{"apiKey":"plain-value-x"}'`, `${SMITHERY} '{"apiKey":"\${APIKEY}"}'`],
    [`${SMITHERY} "{\\"password\\":\\"${PASS}\\"}"`, `${SMITHERY} "{\\"password\\":\\"\${PASSWORD}\\"}"`],
    [
      `srv --config='{"host":"db","args":["--api-key","${PASS}"]}' --port 80`,
      `srv --config='{"host":"db","args":["--api-key","\${API_KEY}"]}' --port 80`,
    ],
    [`srv -e MCP_CONFIG='{"auth":{"user":"a"}}'`, `srv -e MCP_CONFIG='{"auth":{"user":"\${AUTH_USER}"}}'`],
  ])("%s", (command, want) => {
    const spec = specWith(command, []);
    expect(findSpecSecrets(spec).map((hint) => [hint.path, hint.sign])).toEqual([
      ["bundle.mcpServers[0].command", SecretSign.Flag],
    ]);
    const out = exportSpec(spec).bundle?.mcpServers?.[0]?.command;
    expect(out).toBe(want);
    expect(findSpecSecrets(specWith(out as string, []))).toEqual([]);
    expect(withoutCommandLineSecrets(command)).toBe(want);
  });

  it("a replacement holding a quote rewrites the word in single quotes; JSON all of a --token value is taken whole", () => {
    expect(withoutCommandLineSecrets(`srv --config '{"apiKey":"${PASS}"}'`, () => "it's")).toBe(
      `srv --config '{"apiKey":"it'\\''s"}'`,
    );
    expect(withoutCommandLineSecrets(`srv --token '{"a":"b"}'`)).toBe("srv --token '${TOKEN}'");
    expect(withoutCommandLineSecrets(`srv --config '{"host":"db"}'`)).toBe(`srv --config '{"host":"db"}'`);
  });
});

// Review r45 F3: a value holding `'` in args and the same value in a pasted line (written again
// inside '…', where it fills back as `'\''`) shared one reference no fill text could serve.
describe("one reference, one fill text", () => {
  it("a password with an apostrophe in args and in a pasted line: each place fills back byte for byte", () => {
    const spec: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          { name: "a", command: "srv", args: ["--password", "it's9x"] },
          { name: "b", command: "srv --password 'it'\\''s9x'" },
        ],
      },
    };
    const servers = exportSpec(spec).bundle?.mcpServers ?? [];
    const hints = findSpecSecrets(spec);
    const fills: Record<string, string> = {};
    // Each reference's fill text, read where the export writes it against the original.
    const learn = (exported: string, original: string) => {
      const [head, tail] = exported.split(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/) as [string, string];
      const name = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(exported)?.[1] as string;
      const value = original.slice(head.length, original.length - tail.length);
      expect(fills[name] === undefined || fills[name] === value, `one name, one value: ${name}`).toBe(true);
      fills[name] = value;
    };
    learn(servers[0]?.args?.[1] as string, "it's9x");
    learn(servers[1]?.command as string, "srv --password 'it'\\''s9x'");
    expect(hints.flatMap((hint) => hint.references ?? [])).toEqual(["${PASSWORD}", "${PASSWORD_2}"]);
    expect(filled(servers[0]?.args?.[1] as string, fills)).toBe("it's9x");
    expect(filled(servers[1]?.command as string, fills)).toBe("srv --password 'it'\\''s9x'");
  });
});

describe("sshpass's own variable, SSHPASS (r45 F6)", () => {
  it("is hidden in args, in a pasted line's display, and in the export", () => {
    expect(withoutArgSecrets(["env", "SSHPASS=S3cretpw99", "sshpass", "-e", "ssh", "db"])).toEqual([
      "env",
      "SSHPASS=${SSHPASS}",
      "sshpass",
      "-e",
      "ssh",
      "db",
    ]);
    expect(withoutCommandLineSecrets("SSHPASS=S3cretpw99 sshpass -e ssh db uptime")).toBe(
      "SSHPASS=${SSHPASS} sshpass -e ssh db uptime",
    );
    expect(withoutCommandLineSecrets("BYPASS_CACHE=1 srv")).toBe("BYPASS_CACHE=1 srv");
  });
});

describe("mysql's -pX behind a secret manager, an env loader or another launcher (r46 R2)", () => {
  it.each([
    "op run --env-file .env -- mysql -uroot -pHunter2pw db",
    "doppler run -- mysql -pHunter2pw",
    "dotenv -e .env -- mysql -pHunter2pw",
    "cross-env A=1 mysql -pHunter2pw",
    "uv run mysql -pHunter2pw",
    "xargs mysql -pHunter2pw",
    "watch -n 5 mysql -pHunter2pw",
    "setsid mysql -pHunter2pw",
    "chroot /jail mysql -pHunter2pw",
    "flock /tmp/l mysql -pHunter2pw",
    "strace -o x mysql -pHunter2pw",
    "runuser -u app -- mysql -pHunter2pw",
  ])("%s: the password hidden in the display and in args", (line) => {
    expect(withoutCommandLineSecrets(line)).toBe(line.replace("Hunter2pw", "${PASSWORD}"));
    const words = line.split(" ");
    expect(withoutArgSecrets(words)).toEqual(words.map((word) => word.replace("Hunter2pw", "${PASSWORD}")));
  });

  it("keeps a port behind them", () => {
    for (const line of ["op run -- docker run -p3306:3306 mysql:8", "uv run srv -p8080"])
      expect(withoutCommandLineSecrets(line)).toBe(line);
  });
});

// Review r46 O1/O2 (fix138): a password written tight after a short flag. `-pmy-secret-42` was
// read as a flag named `pmy-secret-42`, so the next word (`mydb`) was replaced in its place; and a
// key shape tight after a short flag (`-pghp_…`) was kept in clear for any program but mysql.
describe("a password tight after a short flag (fix138)", () => {
  const GHP = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";

  it("mysql -pX db: the password replaced, the database kept, in the export and the display", () => {
    for (const line of ["mysql -pmy-secret-42 mydb", `mysql -h db -u root -p${GHP} mydb`]) {
      const secret = line.includes(GHP) ? GHP : "my-secret-42";
      const words = line.split(" ");
      const expected = words.slice(1).map((word) => word.replace(secret, "${PASSWORD}"));
      expect(exportedArgs(words[0] as string, words.slice(1))).toEqual(expected);
      expect(withoutCommandLineSecrets(line)).toBe(line.replace(secret, "${PASSWORD}"));
      const pasted = exportSpec({
        spec: SPEC_TOKEN,
        bundle: { mcpServers: [{ name: "gh", command: line }] },
      });
      expect(pasted.bundle?.mcpServers?.[0]?.command).toBe(line.replace(secret, "${PASSWORD}"));
    }
  });

  it("another program's -pX db: the word after it is no password", () => {
    expect(exportedArgs("srv", ["-pmy-secret-42", "mydb"])).toEqual(["-pmy-secret-42", "mydb"]);
    expect(withoutCommandLineSecrets("srv -pmy-secret-42 mydb")).toBe("srv -pmy-secret-42 mydb");
    // A telling single-dash flag with no digit still names the next word (`-api-key X`, Go's style).
    expect(exportedArgs("srv", ["-api-key", "Hunter2pw"])).toEqual(["-api-key", "${API_KEY}"]);
  });

  it.each(["srv", "psql", "redis-cli"])("%s -pghp_… db: the key is never in clear", (program) => {
    for (const flag of ["-p", "-k"]) {
      expect(exportedArgs(program, [`${flag}${GHP}`, "mydb"])).toEqual([`${flag}\${SECRET}`, "mydb"]);
      const line = `${program} ${flag}${GHP} mydb`;
      expect(withoutCommandLineSecrets(line)).toBe(`${program} ${flag}\${SECRET} mydb`);
      const pasted = exportSpec({
        spec: SPEC_TOKEN,
        bundle: { mcpServers: [{ name: "gh", command: line }] },
      });
      expect(JSON.stringify(pasted)).not.toContain(GHP);
      expect(findSpecSecrets(specWith(program, [`${flag}${GHP}`]))).toHaveLength(1);
    }
  });
});

// Review r45 F6: a number under a telling key (`{"password":98765432}`) was kept in clear in the
// display, the export and findSpecSecrets, where the same digits in quotes were hidden.
describe("a number under a telling JSON key is hidden, and fills back to the same number", () => {
  const rows: [string, readonly string[], readonly string[]][] = [
    ["the argument alone", ['{"password":98765432}'], ['{"password":${PASSWORD}}']],
    [
      "spaced, after --config",
      ["--config", '{"api_key": 1234567890123}'],
      ["--config", '{"api_key": ${API_KEY}}'],
    ],
    ["after --flag=", ['--config={"token":12345678}'], ['--config={"token":${TOKEN}}']],
    [
      "a four-digit PIN beside kept settings and a float (r52 F2: a float is no PIN)",
      ['{"port":5432,"pin_password":1234,"password_min_length":8,"token_limit":4096,"apiKey":-1.5e3}'],
      [
        '{"port":5432,"pin_password":${PIN_PASSWORD},"password_min_length":8,"token_limit":4096,"apiKey":-1.5e3}',
      ],
    ],
    // A number in an array under the telling key was kept, where a string there was hidden.
    ["in an array under the telling key", ['{"password":[1234]}'], ['{"password":[${PASSWORD}]}']],
    [
      "in arrays under a plural key, nested, beside a setting's array",
      ['{"api_keys":[12345678],"secrets":[[55554444]],"max_tokens":[4096]}'],
      ['{"api_keys":[${API_KEYS}],"secrets":[[${SECRETS}]],"max_tokens":[4096]}'],
    ],
    [
      "beside a string under a telling key, nested",
      ['{"db":{"password":12345678,"user":"app"},"token":"Xsecret1"}'],
      ['{"db":{"password":${PASSWORD},"user":"app"},"token":"${TOKEN}"}'],
    ],
  ];

  it.each(rows)("%s", (_label, args, want) => {
    const spec = specWith("srv", args);
    const index = want.findIndex((arg, i) => arg !== args[i]);
    expect(findSpecSecrets(spec).map((hint) => [hint.path, hint.sign])).toEqual([
      [`bundle.mcpServers[0].args[${index}]`, SecretSign.Flag],
    ]);
    expect(exportedArgs("srv", args)).toEqual(want);
    expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
    expect(exportSpec(exportSpec(spec))).toEqual(exportSpec(spec));
    // The display, and filled back byte for byte: a number again, not a string.
    const { out, env } = hidden(args);
    expect(out).toEqual(want);
    const back = out.map((arg) => filled(arg, env));
    expect(back).toEqual(args);
    const json = (back[index] as string).replace(/^--config=/, "");
    expect(JSON.parse(json)).toEqual(JSON.parse((args[index] as string).replace(/^--config=/, "")));
  });

  it("in a pasted command line, the number's word is written again with its reference", () => {
    const command = `npx -y @smithery/cli run x --config '{"password":98765432,"port":5432}'`;
    const spec = specWith(command, []);
    expect(findSpecSecrets(spec).map((hint) => [hint.path, hint.references])).toEqual([
      ["bundle.mcpServers[0].command", ["${PASSWORD}"]],
    ]);
    const out = exportSpec(spec).bundle?.mcpServers?.[0]?.command;
    expect(out).toBe(`npx -y @smithery/cli run x --config '{"password":\${PASSWORD},"port":5432}'`);
    expect(filled(out ?? "", { PASSWORD: "98765432" })).toBe(command);
    expect(withoutCommandLineSecrets(command)).toBe(out);
  });

  it("numbers in one array under a telling key are exported as a reference each, beside a string", () => {
    const arg = '{"passwords":[12345678,87654321,"Xsecret1"]}';
    const spec = specWith("srv", [arg]);
    const out = exportSpec(spec);
    expect(out.bundle?.mcpServers?.[0]?.args).toEqual([
      '{"passwords":[${PASSWORDS},${PASSWORDS_2},"${PASSWORDS_3}"]}',
    ]);
    expect(findSpecSecrets(spec).map((hint) => hint.references)).toEqual([
      ["${PASSWORDS}", "${PASSWORDS_2}", "${PASSWORDS_3}"],
    ]);
    expect(findSpecSecrets(out)).toEqual([]);
  });

  it("a number under a plain key, only inside a telling object or in a setting's array stays; so do true and null", () => {
    for (const arg of [
      '{"port":5432,"max_tokens":4096,"token_limit":4096,"password_min_length":8}',
      '{"auth":{"timeout":30}}',
      '{"max_tokens":[4096,8192],"ports":[12345678],"args":["--port",12345678]}',
      '{"password":[true,null,1.5,-1]}',
      '{"password":true,"token":null}',
      '{"password":${DB_PASSWORD}}',
    ])
      expect(exportedArgs("srv", ["--config", arg])).toEqual(["--config", arg]);
  });
});

// Review r52 F2: settings whose key ends in a credential's word (`max_token`, `rsa_key`, `no_auth`)
// and flags written as 0, 1 or -1 were hidden as credentials, and shared one reference by value.
describe("a number that is a setting stays under a key ending in a credential's word", () => {
  it.each([
    '{"max_token":4096}',
    '{"max_completion_token":4096,"prompt_token":10,"num_token":5}',
    '{"rsa_key":2048}',
    '{"no_auth":1,"use_auth":1,"basic_auth":0,"pass":1}',
    '{"cookie":1,"csrf_token":1,"token":-1,"api_key":0}',
    '{"maxToken":100000,"rsaKey":4096,"keyBits":4096,"noAuth":1000,"enable_auth":1}',
    '{"api_key":-1.5e3,"password":12.5,"token":1e9}',
  ])("%s", (arg) => {
    const spec = specWith("srv", ["--config", arg]);
    expect(findSpecSecrets(spec)).toEqual([]);
    expect(exportedArgs("srv", ["--config", arg])).toEqual(["--config", arg]);
    expect(withoutCommandLineSecrets(`srv --config '${arg}'`)).toBe(`srv --config '${arg}'`);
  });

  it("a whole number of four digits or more under the credential's own key is still hidden beside them", () => {
    expect(
      exportedArgs("srv", ['{"max_token":4096,"db_password":1234,"api_key":0,"auth_token":12345678}']),
    ).toEqual(['{"max_token":4096,"db_password":${DB_PASSWORD},"api_key":0,"auth_token":${AUTH_TOKEN}}']);
  });
  // r54 G3: the first setting-word rule read every word before the last, so a password's own key
  // that begins with a toggle or kind word kept its number in clear.
  it.each([
    ['{"basic_auth_password":12345678}', '{"basic_auth_password":${BASIC_AUTH_PASSWORD}}'],
    ['{"BASIC_AUTH_PASSWORD":12345678}', '{"BASIC_AUTH_PASSWORD":${BASIC_AUTH_PASSWORD}}'],
    ['{"enable_password":12345678}', '{"enable_password":${ENABLE_PASSWORD}}'],
    ['{"enable_secret":12345678}', '{"enable_secret":${ENABLE_SECRET}}'],
    ['{"EC2_PASSWORD":12345678}', '{"EC2_PASSWORD":${EC2_PASSWORD}}'],
    ['{"input_password":12345678}', '{"input_password":${INPUT_PASSWORD}}'],
    ['{"context_api_key":12345678}', '{"context_api_key":${CONTEXT_API_KEY}}'],
  ])("%s, a password's or secret's own key, is hidden as %s (r54 G3)", (arg, want) => {
    expect(exportedArgs("srv", [arg])).toEqual([want]);
    expect(findSpecSecrets(specWith("srv", [arg]))).not.toEqual([]);
  });
});

describe("pw names a password as a word of its own", () => {
  const rows: [string, string, readonly string[], readonly string[]][] = [
    ["--pw", "srv", ["--pw", "hunter2"], ["--pw", "${PW}"]],
    ["PW= after env", "env", ["PW=hunter2", "srv"], ["PW=${PW}", "srv"]],
    ["DB_PW=", "env", ["DB_PW=hunter2", "srv"], ["DB_PW=${DB_PW}", "srv"]],
    ["a JSON pw", "srv", ['{"pw":"hunter2"}'], ['{"pw":"${PW}"}']],
  ];

  it.each(rows)("%s", (_label, command, args, want) => {
    const spec = specWith(command, args);
    expect(findSpecSecrets(spec).map((hint) => hint.sign)).toEqual([SecretSign.Flag]);
    expect(exportedArgs(command, args)).toEqual(want);
    const { out, env } = hidden(args);
    expect(out.map((arg) => filled(arg, env))).toEqual(args);
  });

  it("in a pasted command line", () => {
    expect(withoutCommandLineSecrets("PW=hunter2 srv --pw hunter2")).toBe("PW=${PW} srv --pw ${PW}");
  });

  it("not inside another word: the working directory's PWD keeps its own reference, pwsh and npx stay", () => {
    expect(exportedArgs("env", ["PWD=/home/x", "srv"])).toEqual(["PWD=${PWD_SECRET}", "srv"]);
    for (const args of [
      ["-NoProfile", "-File", "a.ps1"],
      ["--pwsh", "pwsh"],
      ["--npw", "x"],
    ])
      expect(exportedArgs("srv", args)).toEqual(args);
  });
});
