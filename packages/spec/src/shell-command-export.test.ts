// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} references, meant literally.
import { growth } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets, reference, withoutArgSecrets } from "./find-spec-secrets.js";
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
const CMD = ["cmd", "/c"];
const PWSH = ["pwsh", "-Command"];

/** As one argument, a line starting `NAME=` or `--flag=` is read as that one value, not as a command line. */
const ONE_VALUE = /^(?:[A-Za-z_][\w.-]*|--?[A-Za-z][\w.-]*)=/;

/**
 * `line`, pasted as a server's command or given as a plain argument (`--run "<line>"`, unless it
 * starts as `ONE_VALUE` says), is read by the command-line reader: kept as it is, not reported.
 */
function expectKeptAsLine(line: string): void {
  const spec: AgentSpec = { spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: "srv", command: line }] } };
  expect(exportSpec(spec).bundle?.mcpServers?.[0]?.command).toBe(line);
  expect(findSpecSecrets(spec)).toEqual([]);
  if (!ONE_VALUE.test(line)) expect(withoutArgSecrets(["--run", line])).toEqual(["--run", line]);
}

/** A script rather than one command line: a line break, or a heredoc's `<<` (not a here-string's `<<<`). */
const SCRIPT = /[\n\r]|(?:^|[^<])<<(?!<)/;

/**
 * `line`, a script (see `SCRIPT`) pasted as a server's command or given as a plain argument, is
 * read as a shell's own command is (fix113): exported whole, as one reference, and reported once.
 */
function expectWholeAsLine(line: string): void {
  const spec: AgentSpec = { spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: "srv", command: line }] } };
  expect(exportSpec(spec).bundle?.mcpServers?.[0]?.command).toBe("${SRV_COMMAND}");
  expect(findSpecSecrets(spec).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
  expect(findSpecSecrets(exportSpec(spec))).toEqual([]);
  if (!ONE_VALUE.test(line))
    expect(withoutArgSecrets(["--run", line])).toEqual(["--run", "${SHELL_COMMAND}"]);
}

/**
 * `script` after `shell` is exported as one reference and, filled back, is the original byte for
 * byte; it is reported once, at its place, never with its text; withoutArgSecrets writes
 * `${SHELL_COMMAND}` for it (and leaves that as it is) and gives `hide` the whole script once,
 * under that name.
 */
function expectWhole(shell: readonly string[], script: string): void {
  const { out, path, spec } = exported(shell, script);
  expect(out).toBe("${SRV_COMMAND}");
  expect(findSpecSecrets(spec)).toEqual([]);
  expect(out.replace("${SRV_COMMAND}", () => script)).toBe(script);
  const hints = findSpecSecrets(specWith(shell, script));
  expect(hints.map((hint) => hint.path)).toEqual([path]);
  expect(JSON.stringify(hints)).not.toContain(script);
  const once = withoutArgSecrets([...shell.slice(1), script]);
  expect(once).toEqual([...shell.slice(1), "${SHELL_COMMAND}"]);
  expect(withoutArgSecrets(once)).toEqual(once);
  const hidden: [string, string | undefined][] = [];
  const args = withoutArgSecrets([...shell.slice(1), script], (secret, name) => {
    hidden.push([secret, name]);
    return `<${hidden.length - 1}>`;
  });
  expect(args[args.length - 1]).toBe("<0>");
  expect(hidden).toEqual([[script, "SHELL_COMMAND"]]);
}

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

// Commands the command-line reader rewrote inside before a shell's own command was exported whole,
// by the review and rule each stood for. In find-spec-secrets.test.ts the same lines, pasted as a
// server's command or given as a plain argument, are still rewritten in place (but for a heredoc
// body's `name: X`, JSON and TOML lines, which the reader no longer reads). Lines with no secret in
// them are below, in TELLING_NO_SECRET.
const READ_INSIDE: [string, readonly string[], string[]][] = [
  [
    "su -c's assignment",
    SH,
    [
      'su app -c "DB_PASSWORD=Tr0ub4dor3xQ9 exec srv"',
      "su app -c 'DB_PASSWORD=Tr0ub4dor3xQ9 exec srv --token Tr0ub4dor3xQ9'",
      'DB_PASSWORD="correct horse battery" exec srv',
    ],
  ],
  [
    "r32 a flag's value",
    SH,
    [
      "exec server --password hunter2x9;echo done",
      "exec server --password hunter2x9|tee log",
      "exec server --password hunter2x9>log",
      "exec server --password 'hunter 2x9'",
      "exec x --api-key=\"abc 123\" -H 'X-Api-Key: abcdef123'",
      "exec x -u admin:S3cretPass99 -uroot:S3cretPass99",
      'exec pg --url "postgres://app:Sup3rS3cret@db/app" | tee x',
    ],
  ],
  [
    // These stood in TELLING_NO_SECRET as "read at run time" (r32), but `Passw0rd`, `x…y` and
    // `hunter2` are literal text the shell passes as written beside `$1`, `$!`, `$?`, `$#`: the
    // secret is the whole value, hidden whole wherever the line is read (r49 F3).
    "r49 F3 a flag's value with literal text beside run-time text",
    SH,
    [
      'db --password "Passw0rd$1" --token "x$!y" --api-key $"$API_KEY"',
      "db --password Passw0rd$? --token hunter2$#",
    ],
  ],
  [
    "r32 #8 an assignment first",
    SH,
    [
      "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 exec gh-mcp --stdio",
      "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 && exec gh-mcp --api-key -u",
    ],
  ],
  [
    "a URL in a connection string's word",
    SH,
    [
      '\' Server=db;Password=S3cret99; "a b" postgres://u:p4ssw0rd@h/d',
      'exec x --conn "Server=postgres://u:p4ssw0rd@h;Password=S3cret99"',
    ],
  ],
  [
    "r34 #5 $'…'",
    SH,
    [
      "printf $'it\\'s' && deploy --token hunter2",
      "deploy --token $'hunter2' --x",
      "app --password=$'hunter2'",
      "echo $'a\\\\' ; app --token hunter2",
      "echo $'tab\\there' --api-key $'hunter2x9'",
      "deploy --token $'hun\\'ter2'",
      "echo $$'a\\' ; app --token hunter2",
    ],
  ],
  [
    'r35 quotes, comments, heredocs, $"…", ${NAME:-word}',
    SH,
    [
      "V=$(echo \"$V\" | sed 's/)$//') && exec srv --api-key sk0abc9XYZ12",
      "X=$(printf '%s' ')') && deploy --token hunter2",
      "X=`echo '\\`'` ; deploy --token hunter2",
      "echo ${GREETING:-'}'} && deploy --token hunter2",
      'X=$(echo ")" $\'\\\')\' \\) $(echo "(")) ; deploy --token hunter2',
      'X="$(echo "\')")" ; deploy --token hunter2',
      'X=${Y:-"}"} ; deploy --token hunter2',
      "# don't log the token\nexec srv --token hunter2",
      "cd /srv # it's here\nexec srv --token hunter2",
      "cd /srv;# it's here\nexec srv --token hunter2",
      "X=$(echo a # it's (\n) && deploy --token hunter2",
      "cat > /tmp/motd <<EOF\nit's up\nEOF\nexec srv --token hunter2",
      "cat > /tmp/motd <<'EOF'\nit's up\nEOF\nexec srv --token hunter2",
      'cat <<"EOF" >a; cat <<-END >b # two\nit\'s\nEOF\n\t"quoted\n\tEND\nexec srv --token hunter2',
      "cat <<- EOF\n\tit's\n\tEOF\nexec srv --token hunter2",
      'deploy --token $"hunter2"',
      'app --password=$"hunter2"',
      'db --password "Passw0rd$"',
      "db --password Passw0rd$",
      'db --password "x9$%Qz7!k"',
      "deploy --token \\\nhunter2",
      "exec srv --password ${DB_PASSWORD:-Tr0ub4dor3x}",
      'exec srv --password="${DB_PASSWORD:-Tr0ub4dor3x}"',
      "DB_PASSWORD=${DB_PASSWORD:-Tr0ub4dor3x} exec srv",
      "DB_PASSWORD=${DB_PASSWORD:-dev} exec db-mcp",
      "exec srv ${DB_PASSWORD-Tr0ub4dor3x}",
      "exec srv --token ${T:=hunter2} --port 80",
      "exec srv --api-key=${K=hunter2}",
      "exec srv --password ${PW:-'Tr0ub4 dor3x'}",
      "exec srv --password \"${PW:-'Tr0ub4dor3x'}\"",
      'exec srv ${DB_PASSWORD:-"a}b9"} --x',
      "X=$(cat <<EOF\nit's up (soon\nEOF\n) ; deploy --token hunter2",
    ],
  ],
  [
    "r35 #6 a shift, a here-string, a # after a word",
    SH,
    [
      'X=$(echo $((1<<2))\necho "it\'s") ; deploy --token hunter2',
      "X=$(( (1<<2) + 3 ))\ndeploy --token hunter2",
      'X=$(cat <<<"it\'s"\necho "(") ; deploy --token hunter2',
      "exec srv --token hunter2 # it's the prod one",
    ],
  ],
  ["cmd.exe's #", CMD, ["srv --channel #general --token hunter2"]],
  [
    "r35 #6 a key or URL in a comment or heredoc",
    SH,
    [
      "# old key: ghp_abcdefghijklmnopqrstuvwxyz0123\nexec gh-mcp",
      "cat > .env <<'EOF'\nDB_URL=postgres://app:Sup3rS3cret@db/app it's\nEOF\nexec srv",
      "exec srv # see postgres://app:Sup3rS3cret@db/app, it's there\n",
    ],
  ],
  [
    "r37 #8 a -token word",
    SH,
    [
      "gh-token --verbose",
      "get-token --password Tr0ub4dor3xQ9",
      "exec get_token --refresh-all --port 8080",
      "cat <<EOF\nrun get-token --password Tr0ub4dor3xQ9\nEOF\nexec srv",
    ],
  ],
  [
    "r37 #1 #7 #2 #5",
    SH,
    [
      "cat > /dev/null <<EOF\r\nport=80\r\nEOF\r\nexec srv --password Tr0ub4dor3xQ9\r\n",
      "X=$(cat <<EOF\r\nport=80\r\nEOF\r\n)\r\nexec srv --password Tr0ub4dor3xQ9\r\n",
      "cat <<\\EOF > /dev/null\nport=80\nEOF\nexec srv --password Tr0ub4dor3xQ9\n",
      "X=$(cat <<\\EOF\nport=80\nEOF\n)\nexec srv --password Tr0ub4dor3xQ9",
      "((n = 1 << 4))\nexec srv --password Tr0ub4dor3xQ9",
      "echo $[1<<2]\nexec srv --password Tr0ub4dor3xQ9",
      "(( n <<= 2 ))\nexec srv --password Tr0ub4dor3xQ9",
      "for ((i=1; i < 1<<3; i<<=1)); do :; done\nexec srv --password Tr0ub4dor3xQ9",
      "if (( (1<<4) > 8 )); then :; fi\nexec srv --password Tr0ub4dor3xQ9",
      "cat > /etc/app.conf <<EOF\nDB_PASSWORD=Tr0ub4dor3xQ9\nport=80\nEOF\nexec srv --config /etc/app.conf",
      "cat > /app/.env <<'EOF'\nAPI_KEY=Tr0ub4dor3xQ9\nEOF\nexec node server.js",
      "cat > /etc/app.conf <<EOF\ntoken=$(get-token --password Tr0ub4dor3xQ9)\nEOF\nexec srv",
      "cat > app.yaml <<EOF\ndb:\n  password: Tr0ub4dor3xQ9\n  note: |\nEOF\nexec srv",
      'cat > app.json <<EOF\n{"password": "Tr0ub4dor3xQ9", "port": 80}\nEOF\nexec srv',
      'cat > a.toml <<EOF\npassword = "Tr0ub4dor3xQ9"\nEOF\nexec srv',
      "cat > a <<EOF\nDB_PASSWORD=${DB_PASSWORD:-Tr0ub4dor3xQ9}\nEOF\nexec srv",
      "# it's here: DB_PASSWORD=Tr0ub4dor3xQ9\nexec srv",
      "#exec srv --password Tr0ub4dor3xQ9\nexec srv",
      "exec srv --password ${DB_PASSWORD:-${DB_PASS:-Tr0ub4dor3xQ9}}",
      'exec srv --password "${DB_PASSWORD:-${DB_PASS:-Tr0ub4dor3xQ9}}"',
      "DB_PASSWORD=${A:-${B:-${C:-Tr0ub4dor3xQ9}}} exec srv",
      "exec srv ${PGPASSWORD:-${POSTGRES_PASSWORD:-Tr0ub4dor3xQ9}}",
      "echo don't; exec srv --password Tr0ub4dor3xQ9",
      "X=$(echo a; exec srv --password Tr0ub4dor3xQ9",
    ],
  ],
  ["r37 #5 PowerShell's escaped quote", PWSH, ['Write-Host `"starting`"; & srv --password Tr0ub4dor3xQ9']],
  [
    "r37 the words inside a quote",
    SH,
    [
      "bash -c 'srv --api-key Tr0ub4dor3xQ9'",
      "bash -c 'exec srv --token Tr0ub4dor3xQ9'",
      "X=$(get-token --password Tr0ub4dor3xQ9)\nexec srv",
      'su app -c "exec srv --password=Tr0ub4dor3xQ9 --port 80"',
    ],
  ],
  [
    "r37 a heredoc's body",
    SH,
    ["cat > a <<EOF\nit's: up\nport=80 user=app\napi_key: 'Tr0ub4dor3xQ9'\nEOF\nexec srv"],
  ],
];

// Commands that say a telling word but hold no secret the command-line reader finds: values read
// at run time, references, YAML's empty values, placeholders, a comment's prose (r32, r37). As a
// shell's own command each is exported whole; pasted as a server's command or given as a plain
// argument, kept as it is — but a script (a line break, a heredoc), exported whole there too (fix113).
const TELLING_NO_SECRET: [string, string[]][] = [
  [
    "r32 a value read at run time",
    [
      "exec server --secret $(pass show db) && echo ok",
      "exec server --token `gh auth token`",
      'exec server --token "$(gh auth token)"',
      'exec server --password-stdin <<< "$PW"',
      "exec gh-mcp --password-stdin < /run/pw",
      "exec llama-mcp --token-budget 2000 --tokenizer llama3 --keyword search --token-limit 4096",
      "exec srv --auth-type oauth2 --token-encoding cl100k_base --password-file /run/secrets/db",
      "exec srv --key-file ~/.ssh/id_ed25519 --secret-name prod/db",
      'exec srv --password "${DB_PASSWORD:-$(cat /run/pw)}"',
      "exec srv --password ${DB_PASSWORD:-`cat /run/pw`}",
      'db --api-key $"$API_KEY" --token "$1" --password $?',
    ],
  ],
  [
    "r37 a reference, a placeholder, a telling word",
    [
      'cat > run.sh <<\'EOF\'\nexec srv --token "${TOKEN}" --password "$1"\nEOF\nexec sh run.sh',
      'cat > .env <<EOF\nDB_PASSWORD="${DB_PASSWORD}"\nAPI_KEY=$API_KEY\ntoken: ${TOKEN}\n"api_key": "${K}",\nEOF\nexec srv',
      "cat > a.yaml <<EOF\npassword: |\n  multi\ntoken: ~\npassword: null\napi_key: <your key>\nEOF\nexec srv",
      "# usage: srv --password <pw>\n# password: see the vault\nexec srv",
      'exec srv --token "$(cat /run/t)" # token: from file',
      "cat > a.yaml <<'EOF'\nfoo: 'it's --verbose\nEOF\nexec srv --port 80",
      'echo "pass --token when ready" && echo "Usage: srv --password <pw>"',
      'X="$(vault read -field=password secret/db)" && exec srv --password "$X"',
      'git commit -m "rotate the token: done"',
    ],
  ],
];

// Commands that say nothing of a credential: kept byte for byte.
const PLAIN: [string, readonly string[], string][] = [
  ["a plain exec", SH, "cd /app && exec node server.js --port 8080"],
  ["npx with a folder", ["bash", "-lc"], "exec npx -y @modelcontextprotocol/server-filesystem /data /tmp"],
  ["a comment and quotes", ["zsh", "-c"], "# start it\nexec srv --name 'my server' --verbose"],
  ["cmd.exe", ["cmd", "/c"], "cd C:\\srv && srv.exe --port 80"],
  ["a here-string (not a heredoc)", SH, 'read -r x <<< "hello world"; exec srv "$x"'],
  [
    "literal defaults under names that do not tell",
    SH,
    "exec srv --port ${PORT:-8080} --name ${GREETING:-hello2x9}",
  ],
];

describe("a shell's own command in the export", () => {
  it.each(R39A)(
    "%s: exported as one reference, filled back the original byte for byte",
    (_what, shell, script) => expectWhole(shell, script),
  );

  it.each(
    READ_INSIDE.flatMap(([what, shell, scripts]) => scripts.map((script) => [what, shell, script] as const)),
  )("%s, %j: exported as one reference, filled back the original byte for byte", (_what, shell, script) =>
    expectWhole(shell, script),
  );

  it.each(TELLING_NO_SECRET.flatMap(([what, lines]) => lines.map((line) => [what, line] as const)))(
    "%s, %j: exported whole after sh -c; pasted as a command or given as a plain argument, kept as it is unless a script",
    (_what, line) => {
      expectWhole(SH, line);
      // A script (a line break, a heredoc) is exported whole wherever it is written (fix113).
      if (SCRIPT.test(line)) expectWholeAsLine(line);
      else expectKeptAsLine(line);
    },
  );

  it.each(PLAIN)("%s: kept byte for byte, not reported", (_what, shell, script) => {
    const { out, spec } = exported(shell, script);
    expect(out).toBe(script);
    expect(findSpecSecrets(specWith(shell, script))).toEqual([]);
    expect(findSpecSecrets(spec)).toEqual([]);
    expect(withoutArgSecrets([...shell.slice(1), script])).toEqual([...shell.slice(1), script]);
    expectKeptAsLine(script);
  });

  it("says why: the sign the command-line reader found, a key shape, else `script`", () => {
    const sign = (script: string) => findSpecSecrets(specWith(SH, script))[0]?.sign;
    expect(sign(`exec srv --api-key ${S}`)).toBe(SecretSign.Flag);
    expect(sign("exec srv --url postgres://app:hunter2x9@db/app")).toBe(SecretSign.Userinfo);
    expect(sign("exec srv ghp_abcdefghijklmnopqrstuvwxyz0123")).toBe(SecretSign.Value);
    expect(sign("cat > /tmp/x <<EOF\nhello\nEOF\nexec srv")).toBe(SecretSign.Script);
    expect(sign('exec srv --token "$(cat /run/t)"')).toBe(SecretSign.Script);
    expect(sign("exec srv --cookie-jar /tmp/jar")).toBe(SecretSign.Script);
  });

  it("numbers the commands withoutArgSecrets exports whole: ${SHELL_COMMAND}, then _2, _3, …", () => {
    const key = "ghp_abcdefghijklmnopqrstuvwxyz0123";
    expect(
      withoutArgSecrets([
        "-c",
        "exec pg-mcp --url postgres://app:Sup3rS3cret@db/app",
        "-c",
        "exec mcp-server  --api-key abc123def456ghi789 --port 80",
        "-lc",
        "exec mcp --token=abc123def456ghi789",
        "-c",
        "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 exec gh-mcp --verbose",
        "-c",
        "exec srv --password 'two words' --name \"my server\"",
      ]),
    ).toEqual([
      "-c",
      "${SHELL_COMMAND}",
      "-c",
      "${SHELL_COMMAND_2}",
      "-lc",
      "${SHELL_COMMAND_3}",
      "-c",
      "${SHELL_COMMAND_4}",
      "-c",
      "${SHELL_COMMAND_5}",
    ]);
    expect(
      withoutArgSecrets([
        "-c",
        `exec db-mcp --conn Server=db;Password=S3cret99; && GITHUB_TOKEN=${key} exec gh`,
        "-c",
        'exec db-mcp --conn "Server=db;Password=S3cret99;" --port 80',
        "-c",
        `exec db-mcp --conn 'Server=db;Password=S3cret99;' --gh ${key}`,
      ]),
    ).toEqual(["-c", "${SHELL_COMMAND}", "-c", "${SHELL_COMMAND_2}", "-c", "${SHELL_COMMAND_3}"]);
  });

  it("says the sign the reader found for the whole command: a URL's credentials", () => {
    const spec = specWith(SH, "exec pg-mcp --url postgres://app:Sup3rS3cret@db/app");
    // Reported with the reference the export writes for the whole command.
    expect(findSpecSecrets(spec)).toEqual([
      {
        path: "bundle.mcpServers[0].args[1]",
        server: "srv",
        sign: SecretSign.Userinfo,
        references: ["${SRV_COMMAND}"],
      },
    ]);
    expect(exportSpec(spec).bundle?.mcpServers?.[0]?.args).toEqual(["-c", "${SRV_COMMAND}"]);
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
    "${GITHUB_TOKEN}",
    "$API_KEY",
    "$env:TOKEN",
    "%TOKEN%",
    "=",
    "pw",
    "pwd",
    "sudo -S",
    "-P",
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
  ["pwsh", "-command"],
  ["bash", "-ce"],
  ["bash", "-c", "--"],
  ["node", "-e"],
  ["perl", "-e"],
  ["ssh", "app@db"],
);

describe("a shell's own command, generated", () => {
  it("exports byte for byte or as exactly one reference; the export has no hint; filled back it is the original", () => {
    fc.assert(
      fc.property(shells, script, (shell, text) => {
        const { out, spec } = exported(shell, text);
        expect(out === text || out === "${SRV_COMMAND}").toBe(true);
        expect(findSpecSecrets(spec)).toEqual([]);
        expect(exportSpec(spec)).toEqual(spec);
        expect(out.replace("${SRV_COMMAND}", () => text)).toBe(text);
        // Kept only when nothing in it is reported.
        if (out === text) expect(findSpecSecrets(specWith(shell, text))).toEqual([]);
      }),
      propertyRuns(400),
    );
  });

  it("a pasted command holding one: exported as it is or as exactly one reference; the export has no hint and is a fixed point", () => {
    fc.assert(
      fc.property(shells, script, (shell, text) => {
        const command = `${shell.join(" ")} '${text.replace(/'/g, "'\\''")}'`;
        const doc: AgentSpec = { spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: "srv", command }] } };
        const out = exportSpec(doc);
        const written = out.bundle?.mcpServers?.[0]?.command;
        expect(written === command || written === "${SRV_COMMAND}").toBe(true);
        expect(findSpecSecrets(out)).toEqual([]);
        expect(exportSpec(out)).toEqual(out);
        if (written === command) expect(findSpecSecrets(doc)).toEqual([]);
      }),
      propertyRuns(400),
    );
  });
});

// Review r41: a reference is not a credential (#1); the shell's flag spelt otherwise (#3); a
// pasted command or ssh's remote command (#2); a program's text (#5); more telling fragments (#4);
// reference names that are valid and cheap to make (#14, #6).

/** A spec with one bundled server `srv`: `command` and `args` as given. */
function server(command: string, args?: string[]): AgentSpec {
  return { spec: SPEC_TOKEN, bundle: { mcpServers: [{ name: "srv", command, ...(args ? { args } : {}) }] } };
}

/** The last of `words` (a command, its flags, the script) is exported whole, once, as `${SRV_COMMAND}`; withoutArgSecrets of all of them writes `${SHELL_COMMAND}`. */
function expectScriptWhole(words: readonly string[]): void {
  const doc = server(words[0] as string, words.slice(1));
  const hints = findSpecSecrets(doc);
  expect(hints.map((hint) => hint.path)).toEqual([`bundle.mcpServers[0].args[${words.length - 2}]`]);
  const out = exportSpec(doc);
  expect(out.bundle?.mcpServers?.[0]?.args).toEqual([...words.slice(1, -1), "${SRV_COMMAND}"]);
  expect(findSpecSecrets(out)).toEqual([]);
  expect(exportSpec(out)).toEqual(out);
  expect(withoutArgSecrets(words)).toEqual([...words.slice(0, -1), "${SHELL_COMMAND}"]);
}

/** `words` are exported and read back as written: nothing reported. */
function expectScriptKept(words: readonly string[]): void {
  const doc = server(words[0] as string, words.slice(1));
  expect(findSpecSecrets(doc)).toEqual([]);
  expect(exportSpec(doc)).toEqual(doc);
  expect(withoutArgSecrets(words)).toEqual(words);
}

describe("a shell's own command that names its credential by a reference (r41 #1)", () => {
  it.each<readonly string[]>([
    ["bash", "-c", "exec srv --token ${GITHUB_TOKEN}"],
    ["bash", "-c", 'echo "srv started with token=[${GITHUB_TOKEN}]"'],
    ["bash", "-c", 'exec srv --token "$GITHUB_TOKEN" --api-key=${API_KEY}'],
    ["sh", "-c", "GITHUB_TOKEN=${GITHUB_TOKEN} exec gh-mcp --stdio"],
    ["sh", "-c", 'GITHUB_TOKEN="$GITHUB_TOKEN" exec gh-mcp --stdio'],
    ["sh", "-c", 'exec server --api-key "$API_KEY"'],
    ["sh", "-c", "DB_PASSWORD=${DB_PASSWORD:-} exec db-mcp"],
    ["sh", "-c", "DB_PASSWORD=${DB_PASSWORD:-$FALLBACK} exec db-mcp"],
    ["sh", "-c", "exec srv --password ${DB_PASSWORD:?is unset} --token ${TOKEN:+given}"],
    // fix179: `${T:-'a'b}` and `"${K:-a\b}"` were kept here too, but bash uses `ab` and `a\b`
    // while T and K are unset, as it uses `${T:-ab}`'s word: literal credentials (see below).
    ["sh", "-c", 'exec srv --password ${PW:-"$X"} --api-key "${K:-$KEY}"'],
    ["sh", "-c", 'exec curl -H "Authorization: Bearer $GH_TOKEN" http://api/x'],
    ["sh", "-c", "echo started with $GITHUB_TOKEN_FILE; exec srv"],
    ["cmd", "/c", "echo %GITHUB_TOKEN_FILE%&& srv.exe --port 80"],
    ["pwsh", "-Command", "srv --token $env:GITHUB_TOKEN --port 80"],
    ["sh", "-c", "cd /srv && pwd && exec srv --dir /srv/upward"],
  ])("%j is kept byte for byte, not reported", (...words) => expectScriptKept(words));

  it.each<readonly string[]>([
    ["pwsh", "-Command", `$env:API_KEY='${S}'; srv`],
    ["pwsh", "-Command", `$env:API_KEY = '${S}'; srv --token $env:API_KEY`],
    ["bash", "-c", "exec srv --token ${GITHUB_TOKEN} --password hunter2x9"],
    ["bash", "-c", "export GITHUB_TOKEN; exec srv"],
    ["bash", "-c", "exec srv --token $(cat /run/token)"],
    ["bash", "-c", "exec srv --token-file /run/t ${PORT}"],
    ["sh", "-c", "exec srv --token ${T:-'a'b}"],
    ["sh", "-c", 'exec srv --api-key "${K:-a\\b}"'],
  ])("%j still says a telling word besides its references: exported whole", (...words) =>
    expectScriptWhole(words),
  );
});

describe("a reference given a value by a compound assignment (r42a #8)", () => {
  it.each<readonly string[]>([
    ["pwsh", "-c", `$env:API_KEY ??= '${S}'; ./s.ps1`],
    ["pwsh", "-c", `$password ??= '${S}'; ./s.ps1 -Password $password`],
    ["perl", "-e", `my $token; $token ||= '${S}'; exec('srv', $token)`],
    ["php", "-r", `$apiKey ??= '${S}'; run($apiKey);`],
    ["php", "-r", `$apiKey .= '${S}'; run($apiKey);`],
    ["pwsh", "-c", `$env:API_KEY += '${S}'; ./s.ps1`],
  ])("%j: still tells, exported whole", (...words) => expectScriptWhole(words));

  it("keeps a comparison with a reference, and a reference followed by other operators", () => {
    expectScriptKept(["pwsh", "-c", "if ($env:GITHUB_TOKEN == '') { exit 1 }; ./s.ps1"]);
    expectScriptKept(["sh", "-c", 'test "$GITHUB_TOKEN" != "" && exec srv']);
  });
});

describe("a shell's flag spelt otherwise (r41 #3)", () => {
  const enc = Buffer.from(`$env:API_KEY='${S}'; srv`, "utf16le").toString("base64");
  const plainEnc = Buffer.from("Write-Host hi; srv", "utf16le").toString("base64");
  it.each<readonly string[]>([
    ["pwsh", "-NoProfile", "-command", `$env:API_KEY='${S}'; srv`],
    ["powershell", "-Com", `$env:GITHUB_TOKEN='${S}'; srv`],
    ["PowerShell.exe", "-c", `$env:GITHUB_TOKEN='${S}'; srv`],
    ["pwsh", "-EncodedCommand", enc],
    ["pwsh", "-e", enc],
    ["pwsh", "-enc", plainEnc],
    ["cmd", "/k", `set DB_PASSWORD=${S}&& srv.exe`],
    ["bash", "-ce", `API_KEY=${S} exec srv --port 80`],
    ["bash", "-ec", `API_KEY=${S} exec srv --port 80`],
    ["/bin/bash", "-xc", `API_KEY=${S} exec srv --port 80`],
    ["bash", "-c", "--", `API_KEY=${S} exec srv --port 80`],
  ])("%j: the command is exported whole", (...words) => expectScriptWhole(words));

  it("keeps what follows a flag that is no command flag, and a secret-free command after -ce", () => {
    expectScriptKept(["bash", "-ce", "exec srv --port 80"]);
    expectScriptKept(["bash", "-c", "--", "exec srv --port 80"]);
    expectScriptKept(["pwsh", "-NoProfile", "-command", "srv --port 80"]);
    expect(withoutArgSecrets(["bash", "-e", "--token abc123 --port 80"])).toEqual([
      "bash",
      "-e",
      "--token ${TOKEN} --port 80",
    ]);
  });
});

describe("a program's own command in a pasted command or ssh's remote command (r41 #2)", () => {
  it.each([
    `sh -c 'printf "[%s]\\n" '\\''{"username": "admin", "password": "${S}"}'\\'' ok'`,
    `sh -c 'printf "[%s]\\n" --password \\"${S}\\" --port 80'`,
    `sh -c 'ARGS="--api-key ${S} --port 8080"; printf "[%s]\\n" $ARGS'`,
    `sh -c 'echo '\\''{"api_key": "${S}"}'\\'''`,
    `/usr/bin/env bash -lc "exec srv --token ${S}"`,
    `ssh app@db "OPTS='--token ${S}'; printf '[%s]\\n' $OPTS"`,
    `node -e 'const cfg = { password: "${S}" }; console.log(cfg)'`,
  ])("pasted %j: the whole command is one reference", (command) => {
    const doc = server(command);
    expect(findSpecSecrets(doc).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].command"]);
    const out = exportSpec(doc);
    expect(out.bundle?.mcpServers?.[0]?.command).toBe("${SRV_COMMAND}");
    expect(findSpecSecrets(out)).toEqual([]);
    expect(exportSpec(out)).toEqual(out);
  });

  it("keeps a pasted shell command that says nothing telling, or names its credential by a reference", () => {
    for (const command of ["sh -c 'exec srv --port 80'", 'bash -c "exec srv --token ${GITHUB_TOKEN}"']) {
      expect(findSpecSecrets(server(command))).toEqual([]);
      expect(exportSpec(server(command))).toEqual(server(command));
    }
  });

  it.each<string[]>([
    ["-T", "app@db", `printf '[%s]\\n' --password "${S}" --port 80`],
    ["app@db", `printf '[%s]\\n' --token ${S}|tee /dev/null`],
    ["-p", "2222", "-i", "/k/id", "app@db", `OPTS='--token ${S}'; printf '[%s]\\n' $OPTS`],
  ])("ssh %j: the remote command is exported whole", (...args) => expectScriptWhole(["ssh", ...args]));
});

describe("a program's text (r41 #5)", () => {
  it.each<readonly string[]>([
    ["node", "-e", `const token = process.env.GITHUB_TOKEN || "none"; console.log("token", token)`],
    ["node", "-e", `const cfg = { password: "${S}", port: 80 }; console.log(JSON.stringify(cfg))`],
    ["node", "-p", `({"api_key": "${S}"}).api_key.length`],
    ["node", "--eval", `console.log(["--api-key", "${S}"].join(" "))`],
    ["perl", "-e", `my $password = "${S}"; print length($password), "\\n"`],
    ["perl", "-E", `say "secret: ${S}"`],
    ["ruby", "-e", `token = "${S}"; puts token.size`],
    ["python3", "-c", `password = "${S}"; print(len(password))`],
    ["deno", "eval", `const apiKey = "${S}"; console.log(apiKey.length)`],
    ["bun", "-e", `const token = "${S}"; console.log(token.length)`],
    ["php", "-r", `$pass = "${S}"; echo strlen($pass);`],
    ["osascript", "-e", `set pwd to "${S}"`],
  ])("%j: exported whole", (...words) => expectScriptWhole(words));

  it("keeps a program that says nothing telling, byte for byte (not rewritten as a command line)", () => {
    expectScriptKept(["node", "-e", 'console.log("a b", 1 + 2)']);
    expectScriptKept(["perl", "-e", 'print "hello world\\n"']);
  });
});

describe("a shell's command or program text with no whitespace, or tight to its flag (r42a #5)", () => {
  it.each<readonly string[]>([
    ["node", "-e", `require('./s')({password:'${S}'})`],
    ["pwsh", "-Command", `$env:DB_PASSWORD='${S}';./start.ps1`],
    ["pwsh", "-c", `$password='${S}';./start.ps1`],
    ["bash", "-c", `mysql\${IFS}-p${S}`],
    ["cmd", "/c", `set"DB_PASSWORD=${S}"&&node`],
    // Read as an argument these were rewritten inside, `PGPASSWORD=${PGPASSWORD}`: psql never ran.
    ["bash", "-c", `PGPASSWORD=${S};psql`],
    ["node", "-e", `process.env.API_KEY='${S}';require('./s')`],
  ])("%j: exported whole", (...words) => expectScriptWhole(words));

  it.each<readonly string[]>([
    ["node", `--eval=const password = '${S}'; require('./s')(password)`, "--eval="],
    ["node", `--print=({api_key:'${S}'}).api_key.length`, "--print="],
    ["python3", `-cimport s; s.run(password='${S}')`, "-c"],
    ["python3", `-Icimport s; s.run(password='${S}')`, "-Ic"],
    ["perl", `-leprint my $token = '${S}'`, "-le"],
    ["ruby", `-etoken = '${S}'; puts token.size`, "-e"],
    ["php", `-r$pass = '${S}'; echo strlen($pass);`, "-r"],
    ["cmd", `/cset DB_PASSWORD=${S}&& srv.exe`, "/c"],
    ["fish", `--command=set -x API_KEY ${S}; exec srv`, "--command="],
    ["pwsh", `-Command:$env:DB_PASSWORD = '${S}'; ./s.ps1`, "-Command:"],
  ])("%j: the text after the flag exported whole, the flag kept", (command, arg, flag) => {
    const doc = server(command as string, [arg as string]);
    expect(findSpecSecrets(doc).map((hint) => hint.path)).toEqual(["bundle.mcpServers[0].args[0]"]);
    const out = exportSpec(doc);
    expect(out.bundle?.mcpServers?.[0]?.args).toEqual([`${flag}\${SRV_COMMAND}`]);
    expect(findSpecSecrets(out)).toEqual([]);
    expect(exportSpec(out)).toEqual(out);
    expect(withoutArgSecrets([command as string, arg as string])).toEqual([
      command,
      `${flag}\${SHELL_COMMAND}`,
    ]);
  });

  it("keeps a one-word script or text that says nothing telling, and a reference, byte for byte", () => {
    expectScriptKept(["bash", "-c", "./run.sh"]);
    expectScriptKept(["bash", "-c", "GITHUB_TOKEN=${GITHUB_TOKEN}"]);
    expectScriptKept(["bash", "-c", "${SRV_COMMAND}"]);
    expectScriptKept(["node", "-e", "require('./s')()"]);
    expectScriptKept(["node", "--eval=require('./s')()"]);
    expectScriptKept(["node", "--eval=${SRV_COMMAND}"]);
    expectScriptKept(["python3", "-cimport s; s.main()"]);
    expectScriptKept(["perl", "-le", "print 1"]);
  });

  it("reads ssh's remote command given as one word with no whitespace the same way", () => {
    expectScriptWhole(["ssh", "app@db", `PGPASSWORD=${S};psql`]);
    expectScriptKept(["ssh", "app@db", "./run.sh"]);
  });
});

describe("PowerShell's -EncodedCommand written with a colon (r43 #5)", () => {
  const plainEnc = Buffer.from("Write-Host hi; srv", "utf16le").toString("base64");
  it.each<readonly string[]>([
    ["pwsh", "-EncodedCommand:"],
    ["pwsh", "-e:"],
    ["powershell", "-enc:"],
    ["PowerShell.exe", "-EC:"],
    ["pwsh", "-ENCODEDCOMMAND:"],
    ["pwsh", "/encodedcommand:"],
  ])("%s %s<base64>: the base64 always replaced whole, the flag kept", (command, flag) => {
    const arg = `${flag}${plainEnc}`;
    const doc = server(command as string, ["-NoProfile", arg]);
    expect(findSpecSecrets(doc).map((hint) => [hint.path, hint.sign])).toEqual([
      ["bundle.mcpServers[0].args[1]", SecretSign.Script],
    ]);
    const out = exportSpec(doc);
    expect(out.bundle?.mcpServers?.[0]?.args).toEqual(["-NoProfile", `${flag}\${SRV_COMMAND}`]);
    expect(findSpecSecrets(out)).toEqual([]);
    expect(withoutArgSecrets([command as string, arg])).toEqual([command, `${flag}\${SHELL_COMMAND}`]);
    // Pasted as one command line, the line is replaced whole.
    const pasted = server(`${command} -NoProfile ${arg}`, []);
    expect(findSpecSecrets(pasted).map((hint) => hint.sign)).toEqual([SecretSign.Script]);
    expect(exportSpec(pasted).bundle?.mcpServers?.[0]?.command).toBe("${SRV_COMMAND}");
  });

  it.each<readonly string[]>([
    ["cmd", "/c", "powershell -NoProfile -EncodedCommand "],
    ["cmd", "/c", "pwsh.exe -e:"],
    ["sh", "-c", "exec pwsh -enc "],
    ["bash", "-lc", "cd /srv && PowerShell -EC:"],
  ])(
    "%s %s %s<base64>: PowerShell's encoded command reached through a shell replaces the script whole (r45 F5)",
    (shell, flag, script) => {
      const command = `${script}${plainEnc}`;
      const doc = server(shell as string, [flag as string, command]);
      expect(findSpecSecrets(doc).map((hint) => [hint.path, hint.sign])).toEqual([
        ["bundle.mcpServers[0].args[1]", SecretSign.Script],
      ]);
      expect(exportSpec(doc).bundle?.mcpServers?.[0]?.args).toEqual([flag, "${SRV_COMMAND}"]);
      // Pasted as one command line, the line is replaced whole.
      const pasted = server(`${shell} ${flag} '${command}'`, []);
      expect(exportSpec(pasted).bundle?.mcpServers?.[0]?.command).toBe("${SRV_COMMAND}");
    },
  );

  it("keeps a script that runs PowerShell without an encoded command, or with -e after -File, another program's -e, or -e $VAR (r46 R3)", () => {
    expectScriptKept(["cmd", "/c", "powershell -NoProfile -File C:\\mcp\\start.ps1"]);
    expectScriptKept(["sh", "-c", "exec pwsh -NoProfile -File s.ps1"]);
    expectScriptKept(["sh", "-c", "pwsh -File srv.ps1 -e dev"]);
    expectScriptKept(["cmd", "/c", "pwsh -File C:\\mcp\\srv.ps1 -e dev"]);
    expectScriptKept(["bash", "-c", "which pwsh; grep -e foo log"]);
    expectScriptKept(["sh", "-c", "pwsh -e $ENC"]);
  });

  it.each<readonly string[]>([
    ["powershell", "-EncodedCommand:"],
    ["pwsh", "-ec:"],
  ])(
    "cmd /c %s %s<base64> as separate words: the base64 replaced, the words kept (r46 N1)",
    (program, flag) => {
      const doc = server("cmd", ["/c", program as string, `${flag}${plainEnc}`]);
      expect(findSpecSecrets(doc).map((hint) => hint.sign)).toEqual([SecretSign.Script]);
      expect(exportSpec(doc).bundle?.mcpServers?.[0]?.args).toEqual([
        "/c",
        program,
        `${flag}\${SRV_COMMAND}`,
      ]);
      const spaced = server("cmd.exe", ["/C", program as string, "-EncodedCommand", plainEnc]);
      expect(exportSpec(spaced).bundle?.mcpServers?.[0]?.args).toEqual([
        "/C",
        program,
        "-EncodedCommand",
        "${SRV_COMMAND}",
      ]);
    },
  );

  it("keeps -ExecutionPolicy:Bypass, and a reference after the colon", () => {
    expectScriptKept(["pwsh", "-ExecutionPolicy:Bypass", "-File", "s.ps1"]);
    expectScriptKept(["pwsh", "-EncodedCommand:${SRV_COMMAND}"]);
  });
});

describe("more telling fragments and shapes (r41 #4)", () => {
  it.each([
    `DB_PW=${S} exec srv`,
    `exec srv --pw ${S}`,
    `export DB_CREDS=admin:${S}; exec srv`,
    `exec srv --creds admin:${S}`,
    `sqlcmd -S db -U sa -P ${S} -i init.sql && exec srv`,
    `mongosh -u admin -p ${S} --eval 1 && exec srv`,
    `echo ${S} | sudo -S true && exec srv`,
    `smbclient //h/s -U admin%${S} -c ls && exec srv`,
    `HMAC=${S} exec srv`,
  ])("%j: exported whole", (script) => expectScriptWhole(["bash", "-c", script]));

  it.each([
    `smbclient //h/s --user admin%${S} -c ls && exec srv`,
    `smbclient //h/s --user=admin%${S} -c ls && exec srv`,
    `smbclient //h/s -U\t admin%${S} -c ls && exec srv`,
    `smbclient //h/s -Uadmin%${S} -c ls && exec srv`,
  ])("%j: a user%password shape spelt otherwise, exported whole (r42a #3)", (script) =>
    expectScriptWhole(["bash", "-c", script]),
  );

  it("reads --user or -U before a long run of spaces in linear time (r42a #3)", async () => {
    const read = (n: number) => {
      const gap = " ".repeat(n);
      for (const script of [`exec srv --user${gap}x`, `exec srv -U${gap}x`, `exec srv --user=${gap}x`])
        expectScriptKept(["bash", "-c", script]);
    };
    // Quadratic, 65,536 spaces took about 20 s here; linear, well under 100 ms. Against a sixteenth
    // of them in the same run (a fixed 3 s failed under load; a factor of 8 against a bound of 30
    // left linear work little room when a ratio of two timings moved 3 to 4 times on a loaded CI
    // host): linear about 16, quadratic 256, the bound four times from each.
    expect(await growth(read, 4_096, 16)).toBeLessThan(64);
  }, 60_000);

  it("does not take `pwd` as a command, or `pw` inside a word, for a telling word", () => {
    expectScriptKept(["bash", "-c", "cd /x && pwd"]);
    expectScriptKept(["bash", "-c", "echo $(pwd) upward; exec srv"]);
    expectScriptKept(["bash", "-c", "printf '%s\\n' 100% done; exec srv -p 8080"]);
    expectScriptWhole(["bash", "-c", "exec srv --pwd-file /run/x"]);
  });
});

describe("reference names (r41 #14, #6)", () => {
  it("never starts a name with a digit, and keeps names apart", () => {
    const doc: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: [
          { name: "1password", command: "sh", args: ["-c", "exec op-mcp --token x1y2z3w4"] },
          { name: "_1password", command: "sh", args: ["-c", "exec op-mcp --token x9y8z7w6"] },
          { name: "2fa-mcp", command: "bash", args: ["-lc", "exec srv --token x1y2z3w4"] },
          // The same script as the first server's: the same reference, filled once (r42a #9).
          { name: "op-again", command: "sh", args: ["-c", "exec op-mcp --token x1y2z3w4"] },
        ],
      },
    };
    const out = exportSpec(doc);
    expect(out.bundle?.mcpServers?.map((entry) => entry.args?.at(-1))).toEqual([
      "${_1PASSWORD_COMMAND}",
      "${_1PASSWORD_COMMAND_2}",
      "${_2FA_MCP_COMMAND}",
      "${_1PASSWORD_COMMAND}",
    ]);
    expect(reference("2fa-token")).toBe("${_2FA_TOKEN}");
  });

  it("counts on from the last suffix a base was given, past names the document writes", () => {
    const names = ["a-b", "a_b", "A B", "a.b", "x", "a b"];
    const doc: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: names.map((name, i) => ({
          name,
          command: "sh",
          // A different script in each: one reference each.
          args: ["-c", `exec srv --token t0k3nv4lue${i}`, ...(i === 0 ? ["--note", "${A_B_COMMAND_3}"] : [])],
        })),
      },
    };
    expect(exportSpec(doc).bundle?.mcpServers?.map((entry) => entry.args?.[1])).toEqual([
      "${A_B_COMMAND}",
      "${A_B_COMMAND_2}",
      "${A_B_COMMAND_4}",
      "${A_B_COMMAND_5}",
      "${X_COMMAND}",
      "${A_B_COMMAND_6}",
    ]);
  });

  // Its time is the fuzz ladder's to judge ("servers whose names all give the same reference
  // base"): quadratic, 10 000 servers took about 20 s here; linear, about 1-2 s.
  it("names 10 000 servers sharing a base, each its own number", () => {
    const doc: AgentSpec = {
      spec: SPEC_TOKEN,
      bundle: {
        mcpServers: Array.from({ length: 10000 }, (_, i) => ({
          // Each name a different CJK letter: every one gives the base `COMMAND`.
          name: String.fromCharCode(0x4e00 + i),
          command: "sh",
          // A different script in each (the same script would be one reference for all).
          args: ["-c", `exec srv --token-file /run/t${i}`],
        })),
      },
    };
    const hints = findSpecSecrets(doc);
    expect(hints).toHaveLength(10000);
    expect(new Set(hints.map((hint) => (hint.references ?? []).join())).size).toBe(10000);
    expect(hints.at(-1)?.references).toEqual(["${COMMAND_10000}"]);
  }, 30_000);
});
