// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, withoutArgSecrets } from "./find-spec-secrets.js";
import { SPEC_TOKEN } from "./schema.js";
import { SecretSign } from "./secret-signs.js";
import type { AgentSpec } from "./types.js";

// A shell's own command (the argument after `sh -c`, `bash -lc`, `cmd /c`, `pwsh -Command`, …) is
// exported byte for byte, or — when it may hold a credential — whole, as one `${NAME}` reference.
// The rows are review r39a's repros (#1–#15): each a command the old reader rewrote inside and so
// broke, or left a credential in.

const S = "Xy7pQ2rT9vKm";

/** A spec with one bundled server `srv` running `shell` with `script`. */
function specWith(shell: readonly string[], script: string): AgentSpec {
  return {
    spec: SPEC_TOKEN,
    bundle: { mcpServers: [{ name: "srv", command: shell[0] as string, args: [...shell.slice(1), script] }] },
  };
}

/** The script's place, and what the export wrote there. */
function exported(shell: readonly string[], script: string): { path: string; out: string; spec: AgentSpec } {
  const spec = exportSpec(specWith(shell, script));
  const args = spec.bundle?.mcpServers?.[0]?.args ?? [];
  return {
    path: `bundle.mcpServers[0].args[${args.length - 1}]`,
    out: args[args.length - 1] as string,
    spec,
  };
}

const BASH = ["bash", "-c"];
const SH = ["sh", "-c"];

// [what it is, the shell and its flag, the script]
const R39A: [string, readonly string[], string][] = [
  [
    "#1 a JSON body's closing quote and brace after the value",
    BASH,
    `curl -s -H 'Content-Type: application/json' -d '{"username": "admin", "password": "${S}"}' http://127.0.0.1:9/login; printf 'ok\\n'`,
  ],
  [
    "#1 JSON written by a heredoc",
    BASH,
    `cat > /tmp/x.json <<'EOF'\n{"password": "Abcdefg123"}\nEOF\ncat /tmp/x.json`,
  ],
  [
    "#1 a YAML flow map in a heredoc",
    BASH,
    `cat > /tmp/x.yaml <<'EOF'\ndb: {password: ${S}}\nEOF\ncat /tmp/x.yaml`,
  ],
  [
    "#1 a nested bash -c with the value in single quotes",
    BASH,
    `bash -c "echo started; printf '[%s]\\n' --token '${S}'"`,
  ],
  [
    "#2 tight JSON in a single-quoted echo",
    BASH,
    `echo '{"api_key": "${S}"}' > /etc/app/config.json && exec srv`,
  ],
  [
    "#2 a JSON login body",
    BASH,
    `curl -s -d '{"password": "${S}", "user": "admin"}' http://auth/login && exec srv`,
  ],
  ["#2 a quoted word starting with the flag", SH, `ARGS="--api-key ${S} --port 8080"; exec srv $ARGS`],
  ["#2 a single-quoted word starting with the flag", SH, `OPTS='--token ${S}'; exec srv $OPTS`],
  [
    "#2 JSON with escaped quotes in a double-quoted word",
    SH,
    `curl -s -d "{\\"password\\": \\"${S}\\"}" http://auth/login && exec srv`,
  ],
  [
    "#3 a python program in a heredoc",
    BASH,
    `python3 - <<'PY'\nimport os\nos.environ.setdefault("DB_PASSWORD", "pw")\npassword = os.environ["DB_PASSWORD"]\nprint("ok", len(password) > 0)\nPY`,
  ],
  [
    "#3 a node program in a heredoc",
    BASH,
    `node - <<'JS'\nprocess.env.API_KEY ??= "k";\nconst apiKey = process.env.API_KEY;\nconsole.log("ok", Boolean(apiKey))\nJS`,
  ],
  [
    "#3 a k8s secretKeyRef",
    BASH,
    `cat > /tmp/pod.yaml <<EOF\n        secretKeyRef:\n          name: db-secret\n          key: password\nEOF\ncat /tmp/pod.yaml`,
  ],
  [
    "#3 another tool's env: reference",
    BASH,
    `cat > /tmp/s.toml <<'EOF'\ntoken = "env:GITHUB_TOKEN"\nEOF\ncat /tmp/s.toml`,
  ],
  [
    "#4 node -e code",
    BASH,
    `node -e "const token = process.env.GITHUB_TOKEN || 'x'; console.log('ok', !!token)"`,
  ],
  ["#4 ruby -e code", BASH, `ruby -e 'token = ENV.fetch("HOME"); puts token.size > 0'`],
  [
    "#4 a printf header format",
    BASH,
    `printf 'Authorization: Bearer %s\\n' "abc" > /tmp/h.txt; cat /tmp/h.txt`,
  ],
  ["#5 a quoted substitution's --password", BASH, `TOKEN="$(printf '%s' --password ${S})" printenv TOKEN`],
  [
    "#6 a quoted assignment whose value holds a space",
    BASH,
    `bash -c "DB_PASSWORD='two words' printenv DB_PASSWORD"`,
  ],
  ["#6 JS assignment to process.env", SH, `node -e "process.env.API_KEY='${S}'; require('srv')"`],
  [
    "#7 a Bearer header in a heredoc's JSON",
    SH,
    `cat > /srv/config.json <<EOF\n{\n  "headers": {\n    "Authorization": "Bearer ${S}",\n    "Accept": "application/json"\n  }\n}\nEOF\nexec srv --config /srv/config.json`,
  ],
  [
    "#7 a quoted Bearer in a heredoc's YAML",
    SH,
    `cat > /srv/c.yaml <<EOF\nheaders:\n  Authorization: "Bearer ${S}"\nEOF\nexec srv`,
  ],
  [
    "#8 a $ in a quoted heredoc's password",
    SH,
    `cat > /tmp/db.yaml <<'EOF'\ndatabase:\n  password: S3cr$tPass99\nEOF\ncat /tmp/db.yaml`,
  ],
  ["#8 a .env body", SH, `cat > /tmp/.env <<'EOF'\nDB_PASSWORD=Pa$$w0rd2024!\nEOF\ncat /tmp/.env`],
  ["#9 an escaped quote in a nested command", SH, `bash -c "printf '[%s]' --password \\"${S}\\" --port 80"`],
  ["#9 a pipe in a nested command", SH, `bash -c "printf '[%s]' --token ${S}|tr a-z A-Z"`],
  ["#9 && in a nested command", SH, `bash -c "printf '[%s]' --token=${S}&&echo ok"`],
  ["#10 mysql -pX", SH, `mysql -uroot -p${S} -e 'select 1' && exec srv`],
  [
    "#10 mysql -p'X' in docker exec",
    SH,
    `docker exec db sh -c "mysql -uroot -p'${S}' app < /seed.sql"; exec srv`,
  ],
  ["#10 redis-cli -a X", SH, `redis-cli -a ${S} ping && exec srv`],
  ["#10 docker login -p X", SH, `docker login -u me -p ${S} ghcr.io && exec srv`],
  [
    "#10 a .netrc line",
    SH,
    `printf 'machine api.example.com login app password ${S}\\n' > ~/.netrc; exec srv`,
  ],
  [
    "#11 kubectl create token",
    SH,
    `TOKEN=$(kubectl create token mcp-server-sa --duration=1h) exec srv --token "$TOKEN"`,
  ],
  ["#11 vault token lookup-self", SH, "vault token lookup-self >/dev/null && exec srv"],
  ["#12 a commit message", SH, `git commit -m "auth: fix login redirect" && exec srv`],
  ["#12 echo token: rotated", SH, `echo "token: rotated"`],
  ["#12 a real header", SH, `curl -H "X-Api-Key: ${S}" https://api`],
  [
    "#13 an .mcp.json's args in a heredoc",
    SH,
    `cat > .mcp.json <<EOF\n{"mcpServers": {"search": {"command": "npx", "args": ["-y", "search-mcp", "--api-key", "${S}"]}}}\nEOF\nexec claude`,
  ],
  ["#13 k8s args", SH, `kubectl apply -f - <<EOF\n        args: ["--api-key=${S}", "--port=8080"]\nEOF`],
  [
    "#13 compose environment",
    SH,
    `cat > compose.yml <<EOF\n    environment:\n      - "API_KEY=${S}"\nEOF\ndocker compose up`,
  ],
  [
    "#14 a usage heredoc",
    SH,
    `usage() { cat >&2 <<EOF\nUsage: srv.sh --api-key KEY [--password PASS]\nerror: --token required\nEOF\n}; [ -n "$API_KEY" ] || { usage; exit 1; }; exec srv --api-key "$API_KEY"`,
  ],
  [
    "#15 PowerShell's $env: assignment",
    ["powershell", "-Command"],
    `$env:BRAVE_API_KEY='${S}'; npx -y @modelcontextprotocol/server-brave-search`,
  ],
  ["#15 pwsh's spaced $env: assignment", ["pwsh", "-Command"], `$env:API_KEY = "${S}"; & srv.exe`],
  ["#15 cmd.exe's set", ["cmd", "/c"], `set API_KEY=${S} && srv.exe`],
];

// Commands that say nothing of a credential: kept byte for byte.
const PLAIN: [string, readonly string[], string][] = [
  ["a plain exec", SH, "cd /app && exec node server.js --port 8080"],
  ["npx with a folder", ["bash", "-lc"], "exec npx -y @modelcontextprotocol/server-filesystem /data /tmp"],
  ["a comment and quotes", ["zsh", "-c"], "# start it\nexec srv --name 'my server' --verbose"],
  ["cmd.exe", ["cmd", "/c"], "cd C:\\srv && srv.exe --port 80"],
  ["a here-string (not a heredoc)", SH, 'read -r x <<< "hello world"; exec srv "$x"'],
];

describe("a shell's own command in the export", () => {
  it.each(R39A)(
    "%s: exported as one reference, filled back the original byte for byte",
    (_what, shell, script) => {
      const { out, path, spec } = exported(shell, script);
      expect(out).toBe("${SRV_COMMAND}");
      expect(findSpecSecrets(spec)).toEqual([]);
      expect(out.replace("${SRV_COMMAND}", () => script)).toBe(script);
      // Reported once, at the script's place, never with its text.
      const hints = findSpecSecrets(specWith(shell, script));
      expect(hints.filter((hint) => hint.path === path)).toHaveLength(1);
      expect(JSON.stringify(hints)).not.toContain(script);
      // withoutArgSecrets gives `hide` the whole script once, under the name it writes.
      const hidden: [string, string | undefined][] = [];
      const args = withoutArgSecrets([...shell.slice(1), script], (secret, name) => {
        hidden.push([secret, name]);
        return `<${hidden.length - 1}>`;
      });
      expect(args[args.length - 1]).toBe("<0>");
      expect(hidden).toEqual([[script, "SHELL_COMMAND"]]);
    },
  );

  it.each(PLAIN)("%s: kept byte for byte, not reported", (_what, shell, script) => {
    const { out, spec } = exported(shell, script);
    expect(out).toBe(script);
    expect(findSpecSecrets(specWith(shell, script))).toEqual([]);
    expect(findSpecSecrets(spec)).toEqual([]);
  });

  it("says why: the sign the command-line reader found, a key shape, else `script`", () => {
    const sign = (script: string) => findSpecSecrets(specWith(SH, script))[0]?.sign;
    expect(sign(`exec srv --api-key ${S}`)).toBe(SecretSign.Flag);
    expect(sign("exec srv --url postgres://app:hunter2x9@db/app")).toBe(SecretSign.Userinfo);
    expect(sign("exec srv ghp_abcdefghijklmnopqrstuvwxyz0123")).toBe(SecretSign.Value);
    expect(sign("cat > /tmp/x <<EOF\nhello\nEOF\nexec srv")).toBe(SecretSign.Script);
    expect(sign('exec srv --token "$GITHUB_TOKEN"')).toBe(SecretSign.Script);
    expect(sign("exec srv --cookie-jar /tmp/jar")).toBe(SecretSign.Script);
  });

  it("names each reference apart: after its server, never one the document already writes", () => {
    const spec = exportSpec({
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          {
            name: "gh",
            command: "sh",
            args: ["-c", "exec gh-mcp --token x1y2z3w4", "--home", "${GH_COMMAND}"],
          },
          { name: "db", command: "bash", args: ["-c", "exec db --password p4ssw0rd9", "-c", "echo key: v"] },
          { name: "plain", command: "sh", args: ["-c", "exec srv --port 80"] },
        ],
      },
    });
    expect(spec.bundle?.mcpServers?.map((server) => server.args)).toEqual([
      ["-c", "${GH_COMMAND_2}", "--home", "${GH_COMMAND}"],
      ["-c", "${DB_COMMAND}", "-c", "${DB_COMMAND_2}"],
      ["-c", "exec srv --port 80"],
    ]);
    expect(findSpecSecrets(spec)).toEqual([]);
    // The export is already safe: a second export changes nothing.
    expect(exportSpec(spec)).toEqual(spec);
  });

  it("keeps a plain argument, a pasted command line and an argument merely holding spaces as before", () => {
    // Not a shell's own command: still rewritten in place.
    expect(withoutArgSecrets(["--opts", "--token abc123 --port 80"])).toEqual([
      "--opts",
      "--token ${TOKEN} --port 80",
    ]);
    expect(withoutArgSecrets(["--token", "abc123"])).toEqual(["--token", "${TOKEN}"]);
    expect(withoutArgSecrets(["host=db user=app password=hunter2"])).toEqual([
      "host=db user=app password=${PASSWORD}",
    ]);
    const pasted = exportSpec({
      spec: SPEC_TOKEN,
      bundle: { mcpServers: [{ name: "p", command: "srv --api-key abc123 --port 80" }] },
    });
    expect(pasted.bundle?.mcpServers?.[0]?.command).toBe("srv --api-key ${API_KEY} --port 80");
  });
});

// Generated scripts: words that tell and words that do not, secrets, quotes, operators, heredocs,
// comments and substitutions, joined by blanks and newlines.
const piece = fc.oneof(
  fc.constantFrom(
    "exec",
    "srv",
    "echo",
    "cat",
    "node",
    "--port",
    "80",
    "--name",
    "--token",
    "--api-key",
    "--password=",
    "DB_PASSWORD=",
    "Authorization: Bearer",
    S,
    "ghp_abcdefghijklmnopqrstuvwxyz0123",
    "postgres://app:hunter2x9@db/app",
    "'",
    '"',
    "\\",
    "$(",
    ")",
    "${",
    "}",
    "`",
    "#",
    "|",
    "&&",
    ";",
    "<<EOF",
    "<<'EOF'",
    "EOF",
    "<<<",
    "{",
    '"password":',
    "$HOME",
    "${A:-x1y2z3w4}",
  ),
  fc.stringMatching(/^[a-z0-9./_-]{1,8}$/),
  fc.string({ maxLength: 6 }),
);
const script = fc
  .array(fc.tuple(piece, fc.constantFrom(" ", "\n", "\t", "")), { minLength: 1, maxLength: 14 })
  .map((parts) => `${parts.map(([text, gap]) => text + gap).join("")} x`);
const shells = fc.constantFrom<readonly string[]>(
  SH,
  BASH,
  ["bash", "-lc"],
  ["zsh", "-c"],
  ["cmd", "/c"],
  ["pwsh", "-Command"],
);

describe("a shell's own command, generated", () => {
  it("exports byte for byte or as exactly one reference; the export has no hint; filled back it is the original", () => {
    fc.assert(
      fc.property(shells, script, (shell, text) => {
        const { out, spec } = exported(shell, text);
        expect(out === text || out === "${SRV_COMMAND}").toBe(true);
        expect(findSpecSecrets(spec)).toEqual([]);
        expect(out.replace("${SRV_COMMAND}", () => text)).toBe(text);
        // Kept only when nothing in it is reported.
        if (out === text) expect(findSpecSecrets(specWith(shell, text))).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });
});
